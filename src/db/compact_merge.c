// SPDX-License-Identifier: Apache-2.0
/*
 * compact_merge.c -- the merge shared by every compaction: input iterators,
 * the merge loop that writes output SSTs (dropping hidden versions and
 * tombstones), discarding or preloading finished outputs (compact_merge.h).
 * Steps (1) and (2) of the persistence order in files.h.
 */
#include "db/compact_merge.h"

#include <stdlib.h>
#include <string.h>

#include "db/files.h"
#include "db/output.h"
#include "util/status.h"

static tkv_slice fm_small(const file_meta *f) { return slice(f->smallest.data, f->smallest.len); }
static tkv_slice fm_large(const file_meta *f) { return slice(f->largest.data, f->largest.len); }

/* is_base_level -- 1 if no level deeper than out_level can hold ukey, so a
 * tombstone for it at out_level shadows nothing and may be dropped. */
static int is_base_level(const version *v, int out_level, tkv_slice ukey)
{
    for (int l = out_level + 1; l < VERSION_LEVELS; l++) {
        size_t i = version_find_file(v, l, ukey);
        if (i < v->nfiles[l] && ukey_cmp(ikey_user(fm_small(v->files[l][i])), ukey) <= 0) return 0;
    }
    return 1;
}

tkv_it *cmp_open_input(tkv_db *db, const cmp_inputs *in, const file_meta *f, io_class cls, table **t_out)
{
    char path[4096];
    sst_path(db->dir, f->number, path, sizeof path);
    io_file *file;
    *t_out = NULL;
    int rc = io_open_read_ex(path, db->opts.direct_io ? IO_DIRECT : 0, cls, &db->io, &file);
    /* a compaction reads its inputs front to back: large reads, not one I/O
     * per 4 KiB block (O_DIRECT has no kernel readahead) -- with a ring, two
     * in flight while the merge works (table_iter_sequential), else one at
     * a time, synchronously */
    size_t ra = (size_t)db->opts.compaction_readahead;
    if (rc == 0 && ra && !in->ring) {
        rc = io_set_readahead(file, ra);
        if (rc < 0) io_close(file);
    }
    if (rc == 0) rc = table_open(file, f->size, NULL, t_out);
    if (rc < 0) return error_iter_new(rc);
    tkv_it *it = in->ring ? table_iter_sequential(*t_out, in->ring, ra, NULL) : table_iter(*t_out);
    return it ? it : error_iter_new(TKV_NO_MEMORY);
}

/* push_output -- appends a finished output to *done. */
static int push_output(file_meta ***done, size_t *ndone, size_t *cap, file_meta *f)
{
    if (*ndone == *cap) {
        size_t ncap = *cap ? *cap * 2 : 8;
        file_meta **p = realloc(*done, ncap * sizeof *p);
        if (!p) return tkv_err(TKV_NO_MEMORY, "out of memory");
        *done = p;
        *cap = ncap;
    }
    (*done)[(*ndone)++] = f;
    return 0;
}

/* The files of the level below the output level (the grandparents), and
 * where the merge is among them. Once half full, an output is cut where the
 * merge crosses a grandparent boundary (the end of one grandparent or the
 * start of the next) that no grandparent spans: the boundaries of the
 * output level then fall on boundaries of the level below, which gives the
 * next compaction of these outputs cut points (compact_run.c), and each
 * output overlaps fewer grandparent bytes (RocksDB cuts at grandparent
 * boundaries for the same reason). Where the level below has no file, no
 * boundary is crossed and outputs run to sst_size. */
typedef struct grandparents {
    file_meta *const *f;
    size_t n, i; /* f[i]: the first whose largest user key is >= the current key */
} grandparents;

/* gp_crossed -- moves g from prev (the previous user key) to ukey; 1 if a
 * grandparent boundary lies between them that no grandparent spans. */
static int gp_crossed(grandparents *g, tkv_slice prev, tkv_slice ukey)
{
    size_t was = g->i;
    while (g->i < g->n && ukey_cmp(ikey_user(fm_large(g->f[g->i])), ukey) < 0) g->i++;
    if (g->i > was) return 1; /* past the end of f[was], which held keys >= prev: f[i] starts after it */
    if (g->i == g->n) return 0;
    tkv_slice s = ikey_user(fm_small(g->f[g->i]));
    return ukey_cmp(s, prev) > 0 && ukey_cmp(s, ukey) <= 0; /* into f[i] from a gap */
}

/* tombstone_droppable -- internal key `key` is a deletion every reader sees
 * (seq <= snap) with nothing below out_level for it to hide. */
static int tombstone_droppable(const version *v, int out_level, tkv_slice key, uint64_t snap)
{
    return ikey_get_type(key) == IKEY_DELETION && ikey_seq(key) <= snap && is_base_level(v, out_level, ikey_user(key));
}

int cmp_merge(tkv_db *db, tkv_it *in, int out_level, io_class cls, const version *v, uint64_t smallest_snapshot,
              file_meta ***out, size_t *nout)
{
    output cur;
    file_meta **done = NULL;
    size_t ndone = 0, cap = 0;
    int have_out = 0, rc = 0;
    tkv_buf cur_ukey = {0};
    int has_cur = 0, cut = 0;
    uint64_t last_seq_for_key = UINT64_MAX, keys = 0;
    int stoppable = cls == IO_COMPACT_L0 && db->mx != NULL; /* a column of the matrix container */
    grandparents gp = {0};
    if (out_level + 1 < VERSION_LEVELS) {
        gp.f = v->files[out_level + 1];
        gp.n = v->nfiles[out_level + 1];
    }
    *out = NULL;
    *nout = 0;
    for (it_seek_first(in); rc == 0 && it_valid(in); it_next(in)) {
        tkv_slice key = it_key(in), val = it_value(in);
        tkv_slice ukey = ikey_user(key);
        int new_key = !has_cur || ukey_cmp(ukey, slice(cur_ukey.data, cur_ukey.len)) != 0;
        if (new_key) {
            if (stoppable && ++keys % CMP_STOP_EVERY == 0 && __atomic_load_n(&db->columns_stop, __ATOMIC_RELAXED)) {
                rc = CMP_STOPPED; /* tkv_close: the column is dropped, its rows stay */
                break;
            }
            int crossed = has_cur && gp.n && gp_crossed(&gp, slice(cur_ukey.data, cur_ukey.len), ukey);
            uint64_t size = have_out ? table_builder_file_size(cur.tb) : 0;
            cut = have_out && (size >= db->opts.sst_size || (crossed && size >= db->opts.sst_size / 2));
            cur_ukey.len = 0;
            rc = buf_append(&cur_ukey, ukey.p, ukey.n);
            has_cur = 1;
            last_seq_for_key = UINT64_MAX;
        }
        uint64_t seq = ikey_seq(key);
        int drop = 0;
        if (last_seq_for_key <= smallest_snapshot) {
            drop = 1; /* a newer version visible to every reader hides it */
        } else if (tombstone_droppable(v, out_level, key, smallest_snapshot)) {
            drop = 1; /* tombstone with nothing below it to hide */
        }
        last_seq_for_key = seq;
        if (drop || rc < 0) continue;
        /* Split outputs by size, or from half of it at a grandparent
         * boundary, never between versions of one user key. */
        if (have_out && new_key && cut) {
            rc = output_finish(&cur);
            if (rc == 0) rc = push_output(&done, &ndone, &cap, cur.f);
            if (rc < 0) break;
            (void)output_take(&cur); /* kept: now in done[] */
            have_out = 0;
        }
        if (!have_out) {
            have_out = 1;
            rc = output_open(db, &cur, cls, out_level);
            if (rc < 0) break;
        }
        rc = output_add(&cur, key, val);
    }
    if (rc == 0) rc = it_status(in);
    if (rc == 0 && have_out) {
        rc = output_finish(&cur);
        if (rc == 0) rc = push_output(&done, &ndone, &cap, cur.f);
        if (rc == 0) {
            (void)output_take(&cur); /* kept: now in done[] */
            have_out = 0;
        }
    }
    if (have_out) output_discard(db, &cur);
    buf_free(&cur_ukey);
    if (rc == 0) rc = io_sync_dir(db->dir); /* (2) */
    if (rc < 0) {
        cmp_discard_outputs(db, done, ndone, 1);
        return rc;
    }
    *out = done;
    *nout = ndone;
    return 0;
}

int cmp_inputs_new(tkv_db *db, cmp_inputs *in, size_t n, const char *what)
{
    in->n = n;
    in->ring = NULL;
    in->kids = calloc(n ? n : 1, sizeof *in->kids);
    in->tables = calloc(n ? n : 1, sizeof *in->tables);
    if (!in->kids || !in->tables) {
        free(in->kids);
        free(in->tables);
        return tkv_err(TKV_NO_MEMORY, "out of memory starting %s", what);
    }
    /* NULL (no async_io, or every ring lent): synchronous readahead */
    if (db->opts.compaction_readahead) in->ring = io_ring_acquire(db->rings);
    return 0;
}

int cmp_merge_inputs(tkv_db *db, cmp_inputs *in, int out_level, io_class cls, const version *v,
                     uint64_t smallest_snapshot, file_meta ***out, size_t *nout)
{
    tkv_it *it = merging_iter_new(in->kids, in->n); /* takes the children and the array */
    int rc = it ? cmp_merge(db, it, out_level, cls, v, smallest_snapshot, out, nout)
                : tkv_err(TKV_NO_MEMORY, "out of memory merging");
    it_destroy(it);
    for (size_t i = 0; i < in->n; i++) table_close(in->tables[i]);
    free(in->tables);
    io_ring_release(db->rings, in->ring); /* after the iterators gave their reads back */
    return rc;
}

void cmp_discard_outputs(tkv_db *db, file_meta **done, size_t ndone, int remove_files)
{
    tkv_errmsg_saved saved; /* a failed remove must not replace the failure being reported */
    tkv_errmsg_save(&saved);
    pthread_mutex_lock(&db->mu);
    for (size_t i = 0; i < ndone; i++) {
        if (remove_files) {
            char path[4096];
            sst_path(db->dir, done[i]->number, path, sizeof path);
            table_cache_evict(db->tc, done[i]->number); /* a preloaded table must not outlive its file */
            io_remove(path);
        }
        files_remove_pending(db, done[i]->number);
        file_meta_unref(done[i]);
    }
    pthread_mutex_unlock(&db->mu);
    free(done);
    tkv_errmsg_restore(&saved);
}

void cmp_preload_outputs(tkv_db *db, file_meta *const *files, size_t n, io_class cls)
{
    if (!db->opts.preload_tables) return;
    for (size_t i = 0; i < n; i++) (void)table_cache_preload(db->tc, files[i], cls);
}

void cmp_preload_tables(tkv_db *db)
{
    if (!db->opts.preload_tables) return;
    pthread_mutex_lock(&db->mu);
    version *v = vset_current(db->vs);
    version_ref_files(v);
    pthread_mutex_unlock(&db->mu);
    size_t budget = (size_t)db->opts.max_open_files;
    for (int level = 0; level < VERSION_LEVELS && budget; level++) {
        size_t n = v->nfiles[level] < budget ? v->nfiles[level] : budget;
        for (size_t i = 0; i < n && !table_cache_full(db->tc); i++) /* a DRAM budget's share of tables */
            (void)table_cache_preload(db->tc, v->files[level][i], IO_META);
        budget -= n;
    }
    files_unpin(db, v, 1);
}
