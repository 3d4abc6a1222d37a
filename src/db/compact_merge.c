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

/* range_below -- 1 if a level deeper than out_level has a file whose
 * user-key range meets [lo, hi). */
static int range_below(const version *v, int out_level, tkv_slice lo, tkv_slice hi)
{
    for (int l = out_level + 1; l < VERSION_LEVELS; l++) {
        size_t i = version_find_file(v, l, lo);
        if (i < v->nfiles[l] && ukey_cmp(ikey_user(fm_small(v->files[l][i])), hi) < 0) return 1;
    }
    return 0;
}

/* The state of one merge (cmp_merge). */
typedef struct merge {
    tkv_db *db;
    int out_level;
    io_class cls;
    const version *v;
    uint64_t snap;      /* the smallest snapshot */
    const rd_frags *rd; /* the inputs' range tombstones (NULL: none) */
    size_t rd_at;       /* rd_frags_covering_at's place */
    output cur;         /* the output being written, if have_out */
    int have_out;
    tkv_buf cut; /* where the last output's range tombstones ended (has_cut), the next one's begin */
    int has_cut;
    tkv_buf last_ukey; /* the last user key written to cur */
    file_meta **done;
    size_t ndone, cap;
} merge;

/* keep_tomb -- rd_frags_emit's filter for an output, the rules of point
 * entries applied to range tombstones: one hidden by a newer tombstone of
 * the same fragment that every reader sees is dropped, and so is one every
 * reader sees with no level below the output's for it to hide anything in. */
static int keep_tomb(void *arg, const rd_frag *fr, size_t j)
{
    const merge *m = arg;
    if (j > 0 && fr->seqs[j - 1] <= m->snap) return 0;
    return !(fr->seqs[j] <= m->snap && !range_below(m->v, m->out_level, fr->lo, fr->hi));
}

/* finish_output -- the output's range tombstones, those of [cut, hi) (no
 * bound where NULL), then the file finished and added to done[]. The next
 * output's tombstones begin at hi. */
static int finish_output(merge *m, const tkv_slice *hi)
{
    int rc = 0;
    if (m->rd) {
        rd_list l = {0};
        tkv_slice lo = slice(m->cut.data, m->cut.len);
        rc = rd_frags_emit(m->rd, m->has_cut ? &lo : NULL, hi, keep_tomb, m, &l);
        if (rc == 0) rc = output_add_range_dels(&m->cur, l.t, l.n);
        rd_list_free(&l);
        m->cut.len = 0;
        if (rc == 0 && hi) rc = buf_append(&m->cut, hi->p, hi->n);
        m->has_cut = 1;
    }
    if (rc == 0 && output_empty(&m->cur)) { /* only tombstones, all dropped */
        output_discard(m->db, &m->cur);
        m->have_out = 0;
        return 0;
    }
    if (rc == 0) rc = output_finish(&m->cur);
    if (rc == 0) rc = push_output(&m->done, &m->ndone, &m->cap, m->cur.f);
    if (rc == 0) {
        (void)output_take(&m->cur); /* kept: now in done[] */
        m->have_out = 0;
    }
    return rc;
}

/* cut_output -- ends the current output before a new user key: its range
 * tombstones end right after its last user key p (at p + 0x00, the next key
 * there is), so the next output's begin above everything this one holds. */
static int cut_output(merge *m)
{
    TKV_TRY(buf_reserve(&m->last_ukey, 1));
    m->last_ukey.data[m->last_ukey.len] = 0;
    tkv_slice hi = slice(m->last_ukey.data, m->last_ukey.len + 1);
    return finish_output(m, &hi);
}

/* covered -- entry `key` (seq s) lies under a range tombstone newer than it
 * that every reader sees: hidden for good. */
static int covered(merge *m, tkv_slice key)
{
    return m->rd && rd_frags_covering_at(m->rd, &m->rd_at, ikey_user(key), m->snap) > ikey_seq(key);
}

/* Long because it is the merge loop: per user key the stop check and the
 * cut decision, per entry the drop rules, then writing it. */
int cmp_merge(tkv_db *db, tkv_it *in, const rd_frags *rd, int out_level, io_class cls, const version *v,
              uint64_t smallest_snapshot, file_meta ***out, size_t *nout)
{
    merge m = {.db = db, .out_level = out_level, .cls = cls, .v = v, .snap = smallest_snapshot};
    m.rd = rd && rd_frags_count(rd) ? rd : NULL;
    int rc = 0;
    tkv_buf cur_ukey = {0};
    int has_cur = 0, cut = 0, key_written = 0;
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
            uint64_t size = m.have_out ? table_builder_file_size(m.cur.tb) : 0;
            cut = m.have_out && (size >= db->opts.sst_size || (crossed && size >= db->opts.sst_size / 2));
            cur_ukey.len = 0;
            rc = buf_append(&cur_ukey, ukey.p, ukey.n);
            has_cur = 1;
            key_written = 0;
            last_seq_for_key = UINT64_MAX;
        }
        uint64_t seq = ikey_seq(key);
        int drop = 0;
        if (last_seq_for_key <= smallest_snapshot) {
            drop = 1; /* a newer version visible to every reader hides it */
        } else if (tombstone_droppable(v, out_level, key, smallest_snapshot)) {
            drop = 1; /* tombstone with nothing below it to hide */
        } else if (covered(&m, key)) {
            drop = 1; /* a range tombstone visible to every reader hides it */
        }
        last_seq_for_key = seq;
        if (drop || rc < 0) continue;
        /* Split outputs by size, or from half of it at a grandparent
         * boundary, never between versions of one user key. */
        if (m.have_out && new_key && cut && (rc = cut_output(&m)) < 0) break;
        if (!m.have_out) {
            m.have_out = 1;
            rc = output_open(db, &m.cur, cls, out_level);
            if (rc < 0) break;
        }
        rc = output_add(&m.cur, key, val);
        if (rc == 0 && !key_written) { /* the output's last user key so far */
            m.last_ukey.len = 0;
            rc = buf_append(&m.last_ukey, ukey.p, ukey.n);
            key_written = 1;
        }
    }
    if (rc == 0) rc = it_status(in);
    if (rc == 0 && !m.have_out && m.rd) { /* tombstones after the last entry, or no entry at all */
        m.have_out = 1;
        rc = output_open(db, &m.cur, cls, out_level);
    }
    if (rc == 0 && m.have_out) rc = finish_output(&m, NULL);
    if (m.have_out) output_discard(db, &m.cur);
    buf_free(&cur_ukey);
    buf_free(&m.cut);
    buf_free(&m.last_ukey);
    if (rc == 0) rc = io_sync_dir(db->dir); /* (2) */
    if (rc < 0) {
        cmp_discard_outputs(db, m.done, m.ndone, 1);
        return rc;
    }
    *out = m.done;
    *nout = m.ndone;
    return 0;
}

int cmp_inputs_new(tkv_db *db, cmp_inputs *in, size_t n, const char *what)
{
    in->n = n;
    in->ring = NULL;
    memset(&in->rd, 0, sizeof in->rd);
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

/* inputs_range_dels -- the fragments of in's range tombstones: in->rd and
 * every input table's; NULL with 0 when there are none. */
static int inputs_range_dels(cmp_inputs *in, rd_frags **out)
{
    *out = NULL;
    for (size_t i = 0; i < in->n; i++) {
        const rd_list *l = in->tables[i] ? table_range_del_list(in->tables[i]) : NULL;
        if (l && l->n) TKV_TRY(rd_list_append(&in->rd, l->t, l->n));
    }
    if (in->rd.n == 0) return 0;
    *out = rd_frags_new(in->rd.t, in->rd.n, UINT64_MAX);
    return *out ? 0 : TKV_NO_MEMORY;
}

int cmp_merge_inputs(tkv_db *db, cmp_inputs *in, int out_level, io_class cls, const version *v,
                     uint64_t smallest_snapshot, file_meta ***out, size_t *nout)
{
    rd_frags *rd = NULL;
    int rc = inputs_range_dels(in, &rd);
    tkv_it *it = merging_iter_new(in->kids, in->n); /* takes the children and the array */
    if (rc == 0)
        rc = it ? cmp_merge(db, it, rd, out_level, cls, v, smallest_snapshot, out, nout)
                : tkv_err(TKV_NO_MEMORY, "out of memory merging");
    it_destroy(it);
    rd_frags_unref(rd);
    rd_list_free(&in->rd);
    for (size_t i = 0; i < in->n; i++) table_close(in->tables[i]);
    free(in->tables);
    io_ring_release(db->rings, in->ring); /* after the iterators gave their reads back */
    return rc;
}

void cmp_discard_outputs(tkv_db *db, file_meta **done, size_t ndone, int remove_files)
{
    tkv_errmsg_saved saved; /* a failed remove must not replace the failure being reported */
    tkv_errmsg_save(&saved);
    /* Removed before mu is taken (files_remove): a writer that needs mu
     * waited 44-58 ms behind an aborted deep compaction's unlinks. Still
     * pending meanwhile, so files_delete_obsolete leaves them alone. */
    for (size_t i = 0; remove_files && i < ndone; i++) {
        char path[4096];
        sst_path(db->dir, done[i]->number, path, sizeof path);
        table_cache_evict(db->tc, done[i]->number); /* a preloaded table must not outlive its file */
        files_remove(db, path);
    }
    pthread_mutex_lock(&db->mu);
    for (size_t i = 0; i < ndone; i++) {
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
