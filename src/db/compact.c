/*
 * compact.c -- flush (memtable -> L0 SST), leveled compaction (pick, merge,
 * install) and obsolete-file deletion for the SSD tier.
 *
 * Persistence order of every flush/compaction (crash-safe at every step):
 *  (1) write each output SST fully, fdatasync it, close it;
 *  (2) fsync the directory so the new names are durable;
 *  (3) log the version edit (outputs added, inputs removed, log number) to
 *      the MANIFEST and sync it -- the commit point;
 *  (4) install the new version; only then delete inputs / old WALs that no
 *      live version or pending job needs.
 * A crash before (3) leaves orphan outputs, deleted at the next open (they
 * are in no version); a crash after (3) recovers the new state.
 */
#include "db/compact.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sst/table.h"
#include "util/status.h"

uint64_t level_target_bytes(const struct tkv_options *o, int level)
{
    uint64_t t = o->l1_size;
    for (int l = 1; l < level; l++) t = t > UINT64_MAX / (uint64_t)o->level_multiplier ? UINT64_MAX
                                                                                        : t * (uint64_t)o->level_multiplier;
    return t;
}

void compaction_free(compaction *c)
{
    if (!c) return;
    for (int w = 0; w < 2; w++) {
        for (size_t i = 0; i < c->ninputs[w]; i++) file_meta_unref(c->inputs[w][i]);
        free(c->inputs[w]);
    }
    free(c);
}

double compaction_score(const version *v, const struct tkv_options *o, int *level)
{
    return compaction_score_in(v, o, 0, VERSION_LEVELS - 2, level);
}

double compaction_score_in(const version *v, const struct tkv_options *o, int lo, int hi, int *level)
{
    double best = -1.0;
    *level = lo;
    if (lo == 0) {
        best = (double)v->nfiles[0] / (double)o->l0_compaction_trigger;
        /* l0=matrix: L0 SST files are left from an l0=sst past and go to L1
         * before any column may (mx.c invariant 4) */
        if (o->l0 == L0_MATRIX && v->nfiles[0] > 0 && best < 1.0) best = 1.0;
    }
    for (int l = lo > 1 ? lo : 1; l <= hi && l < VERSION_LEVELS - 1; l++) {
        double s = (double)version_level_bytes(v, l) / (double)level_target_bytes(o, l);
        if (s > best) {
            best = s;
            *level = l;
        }
    }
    return best;
}

static tkv_slice fm_small(const file_meta *f) { return slice(f->smallest.data, f->smallest.len); }
static tkv_slice fm_large(const file_meta *f) { return slice(f->largest.data, f->largest.len); }

/* any_busy -- 1 if a file of the list is being compacted. */
static int any_busy(file_meta **f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (f[i]->being_compacted) return 1;
    return 0;
}

/* range_of -- smallest and largest user key over files. */
static void range_of(file_meta **f, size_t n, tkv_slice *lo, tkv_slice *hi)
{
    *lo = ikey_user(fm_small(f[0]));
    *hi = ikey_user(fm_large(f[0]));
    for (size_t i = 1; i < n; i++) {
        tkv_slice a = ikey_user(fm_small(f[i])), b = ikey_user(fm_large(f[i]));
        if (ukey_cmp(a, *lo) < 0) *lo = a;
        if (ukey_cmp(b, *hi) > 0) *hi = b;
    }
}

/* finish_pick -- adds the overlapping files of level+1, checks nothing is
 * busy, marks and refs everything. Takes ownership of in0. */
static compaction *finish_pick(tkv_db *db, version *v, int level, file_meta **in0, size_t n0, int *busy)
{
    compaction *c = calloc(1, sizeof *c);
    if (!c) {
        free(in0);
        return NULL;
    }
    c->level = level;
    c->out_level = level + 1;
    c->cls = level == 0 ? IO_COMPACT_L0 : IO_COMPACT_DEEP;
    c->inputs[0] = in0;
    c->ninputs[0] = n0;
    if (level == 0) {
        /* L0 files overlap each other: widen the range until it is closed
         * under overlap, so no older version of a key stays behind. */
        tkv_slice lo, hi;
        range_of(in0, n0, &lo, &hi);
        free(c->inputs[0]);
        c->inputs[0] = NULL;
        if (version_overlapping(v, 0, &lo, &hi, &c->inputs[0], &c->ninputs[0]) < 0) { free(c); return NULL; }
    }
    tkv_slice lo, hi;
    range_of(c->inputs[0], c->ninputs[0], &lo, &hi);
    if (version_overlapping(v, c->out_level, &lo, &hi, &c->inputs[1], &c->ninputs[1]) < 0) {
        free(c->inputs[0]);
        free(c);
        return NULL;
    }
    if (any_busy(c->inputs[0], c->ninputs[0]) || any_busy(c->inputs[1], c->ninputs[1])) {
        if (busy) *busy = 1;
        free(c->inputs[0]);
        free(c->inputs[1]);
        free(c);
        return NULL;
    }
    for (int w = 0; w < 2; w++)
        for (size_t i = 0; i < c->ninputs[w]; i++) {
            file_meta_ref(c->inputs[w][i]);
            c->inputs[w][i]->being_compacted = 1;
            c->est_bytes += c->inputs[w][i]->size;
        }
    c->trivial_move = level > 0 && c->ninputs[0] == 1 && c->ninputs[1] == 0;
    (void)db;
    return c;
}

compaction *pick_compaction(tkv_db *db, version *v) { return pick_compaction_in(db, v, 0, VERSION_LEVELS - 2, NULL); }

compaction *pick_compaction_in(tkv_db *db, version *v, int lo, int hi, int *busy)
{
    int level;
    if (compaction_score_in(v, &db->opts, lo, hi, &level) < 1.0) return NULL;
    if (level == 0) {
        file_meta **in = malloc(v->nfiles[0] * sizeof *in);
        if (!in) return NULL;
        memcpy(in, v->files[0], v->nfiles[0] * sizeof *in);
        return finish_pick(db, v, 0, in, v->nfiles[0], busy);
    }
    /* Leveled: the first non-busy file after the level's compaction cursor
     * (round robin over the key space, as LevelDB's compact pointer). */
    size_t n = v->nfiles[level];
    size_t start = (size_t)db->compact_cursor[level] % (n ? n : 1);
    for (size_t k = 0; k < n; k++) {
        size_t i = (start + k) % n;
        if (v->files[level][i]->being_compacted) continue;
        file_meta **in = malloc(sizeof *in);
        if (!in) return NULL;
        in[0] = v->files[level][i];
        int file_busy = 0;
        compaction *c = finish_pick(db, v, level, in, 1, &file_busy);
        if (c) {
            db->compact_cursor[level] = i + 1;
            return c;
        }
    }
    return NULL;
}

compaction *pick_range_compaction(tkv_db *db, version *v, int level, const tkv_slice *lo, const tkv_slice *hi,
                                  int *busy)
{
    file_meta **in;
    size_t n;
    if (version_overlapping(v, level, lo, hi, &in, &n) < 0) return NULL;
    if (n == 0) {
        free(in);
        return NULL;
    }
    compaction *c = finish_pick(db, v, level, in, n, busy);
    if (c) {
        c->manual = 1;
        c->trivial_move = 0; /* a manual compaction rewrites (drops tombstones) */
    }
    return c;
}

/* ------------------------------------------------------------ table output */

/* An output being built. */
typedef struct output {
    file_meta *f;
    io_file *file;
    table_builder *tb;
    char path[4096];
} output;

static int output_open(tkv_db *db, output *o, io_class cls)
{
    memset(o, 0, sizeof *o);
    pthread_mutex_lock(&db->mu);
    uint64_t number = vset_new_file_number(db->vs);
    int rc = db_add_pending(db, number);
    pthread_mutex_unlock(&db->mu);
    TKV_TRY(rc);
    o->f = file_meta_new();
    if (!o->f) return tkv_err(TKV_NO_MEMORY, "out of memory");
    o->f->number = number;
    sst_path(db->dir, number, o->path, sizeof o->path);
    TKV_TRY(io_open_append_ex(o->path, 0, db->opts.direct_io ? IO_DIRECT : 0, cls, &db->io, &o->file));
    table_options to;
    table_options_default(&to);
    to.block_size = db->opts.block_size;
    to.bloom_bits_per_key = db->opts.bloom_bits_per_key;
    to.compression = db->opts.compression;
    return table_builder_new(o->file, &to, &o->tb);
}

/* output_add -- appends an entry and tracks the file's key and sequence range. */
static int output_add(output *o, tkv_slice k, tkv_slice v)
{
    TKV_TRY(table_builder_add(o->tb, k, v));
    file_meta *f = o->f;
    if (f->smallest.len == 0) TKV_TRY(buf_append(&f->smallest, k.p, k.n));
    f->largest.len = 0;
    TKV_TRY(buf_append(&f->largest, k.p, k.n));
    uint64_t seq = ikey_seq(k);
    if (f->num_entries == 0 || seq < f->min_seq) f->min_seq = seq;
    if (seq > f->max_seq) f->max_seq = seq;
    f->num_entries++;
    return 0;
}

/* output_finish -- step (1): finish, sync, close. */
static int output_finish(output *o)
{
    int rc = table_builder_finish(o->tb);
    if (rc == 0) o->f->size = table_builder_file_size(o->tb);
    if (rc == 0) rc = io_sync(o->file);
    table_builder_free(o->tb);
    o->tb = NULL;
    int crc = io_close(o->file);
    o->file = NULL;
    return rc ? rc : crc;
}

/* output_discard -- removes a failed/unused output. */
static void output_discard(tkv_db *db, output *o)
{
    table_builder_free(o->tb);
    io_close(o->file);
    if (o->path[0]) io_remove(o->path);
    if (o->f) {
        pthread_mutex_lock(&db->mu);
        db_remove_pending(db, o->f->number);
        pthread_mutex_unlock(&db->mu);
        file_meta_unref(o->f);
    }
    memset(o, 0, sizeof *o);
}

/* ------------------------------------------------------------ flush */

int flush_memtable(tkv_db *db, memtable *m, file_meta **out)
{
    *out = NULL;
    tkv_it *it = memtable_iter(m);
    if (!it) return tkv_err(TKV_NO_MEMORY, "out of memory flushing");
    output o;
    int rc = output_open(db, &o, IO_FLUSH);
    for (it_seek_first(it); rc == 0 && it_valid(it); it_next(it)) rc = output_add(&o, it_key(it), it_value(it));
    if (rc == 0) rc = it_status(it);
    it_destroy(it);
    if (rc == 0) rc = output_finish(&o);
    if (rc == 0) rc = io_sync_dir(db->dir); /* (2) */
    if (rc < 0 || o.f->num_entries == 0) {
        output_discard(db, &o);
        return rc;
    }
    ctr_add(&db->ctr.flushes, 1);
    ctr_add(&db->ctr.flush_bytes, o.f->size);
    *out = o.f; /* still pending: the caller removes it from pending after install */
    return 0;
}

/* ------------------------------------------------------------ compaction */

/* is_base_level -- 1 if no level deeper than out_level can hold ukey, so a
 * tombstone for it at out_level shadows nothing and may be dropped. */
int is_base_level(const version *v, int out_level, tkv_slice ukey)
{
    for (int l = out_level + 1; l < VERSION_LEVELS; l++) {
        size_t i = version_find_file(v, l, ukey);
        if (i < v->nfiles[l] && ukey_cmp(ikey_user(fm_small(v->files[l][i])), ukey) <= 0) return 0;
    }
    return 1;
}

/* open_input -- an iterator over one input file, read with the job's I/O
 * class and without the block cache (compaction must not evict hot blocks). */
tkv_it *open_input(tkv_db *db, const file_meta *f, io_class cls, table **t_out)
{
    char path[4096];
    sst_path(db->dir, f->number, path, sizeof path);
    io_file *file;
    *t_out = NULL;
    int rc = io_open_read_ex(path, db->opts.direct_io ? IO_DIRECT : 0, cls, &db->io, &file);
    /* a compaction reads its inputs front to back: large reads, not one I/O
     * per 4 KiB block (O_DIRECT has no kernel readahead) */
    if (rc == 0 && db->opts.compaction_readahead) {
        rc = io_set_readahead(file, (size_t)db->opts.compaction_readahead);
        if (rc < 0) io_close(file);
    }
    if (rc == 0) rc = table_open(file, f->size, NULL, t_out);
    if (rc < 0) return error_iter_new(rc);
    tkv_it *it = table_iter(*t_out);
    return it ? it : error_iter_new(TKV_NO_MEMORY);
}

/* install -- steps (3) and (4) for a finished job. Caller holds mu; it is
 * released while the MANIFEST record is written and synced (readers and
 * writers go on), and held again when the new version is installed. */
int install(tkv_db *db, version_edit *e)
{
    vset_set_last_seq(db->vs, __atomic_load_n(&db->last_seq, __ATOMIC_ACQUIRE));
    return vset_log_and_apply_unlocking(db->vs, e, &db->mu);
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

int compact_merge(tkv_db *db, tkv_it *in, int out_level, io_class cls, const version *v, uint64_t smallest_snapshot,
                  file_meta ***out, size_t *nout)
{
    output cur;
    file_meta **done = NULL;
    size_t ndone = 0, cap = 0;
    int have_out = 0, rc = 0;
    tkv_buf cur_ukey = {0};
    int has_cur = 0;
    uint64_t last_seq_for_key = UINT64_MAX;
    *out = NULL;
    *nout = 0;
    for (it_seek_first(in); rc == 0 && it_valid(in); it_next(in)) {
        tkv_slice key = it_key(in), val = it_value(in);
        tkv_slice ukey = ikey_user(key);
        int new_key = !has_cur || ukey_cmp(ukey, slice(cur_ukey.data, cur_ukey.len)) != 0;
        if (new_key) {
            cur_ukey.len = 0;
            rc = buf_append(&cur_ukey, ukey.p, ukey.n);
            has_cur = 1;
            last_seq_for_key = UINT64_MAX;
        }
        uint64_t seq = ikey_seq(key);
        int drop = 0;
        if (last_seq_for_key <= smallest_snapshot) {
            drop = 1; /* a newer version visible to every reader hides it */
        } else if (ikey_get_type(key) == IKEY_DELETION && seq <= smallest_snapshot && is_base_level(v, out_level, ukey)) {
            drop = 1; /* tombstone with nothing below it to hide */
        }
        last_seq_for_key = seq;
        if (drop || rc < 0) continue;
        /* Split outputs by size, never between versions of one user key. */
        if (have_out && new_key && table_builder_file_size(cur.tb) >= db->opts.sst_size) {
            rc = output_finish(&cur);
            if (rc == 0) rc = push_output(&done, &ndone, &cap, cur.f);
            if (rc < 0) break;
            cur.f = NULL;
            cur.path[0] = '\0'; /* keep the finished file */
            output_discard(db, &cur);
            have_out = 0;
        }
        if (!have_out) {
            have_out = 1;
            rc = output_open(db, &cur, cls);
            if (rc < 0) break;
        }
        rc = output_add(&cur, key, val);
    }
    if (rc == 0) rc = it_status(in);
    if (rc == 0 && have_out) {
        rc = output_finish(&cur);
        if (rc == 0) rc = push_output(&done, &ndone, &cap, cur.f);
        if (rc == 0) {
            cur.f = NULL;
            cur.path[0] = '\0';
            output_discard(db, &cur);
            have_out = 0;
        }
    }
    if (have_out) output_discard(db, &cur);
    buf_free(&cur_ukey);
    if (rc == 0) rc = io_sync_dir(db->dir); /* (2) */
    if (rc < 0) {
        compact_discard_outputs(db, done, ndone, 1);
        return rc;
    }
    *out = done;
    *nout = ndone;
    return 0;
}

void compact_discard_outputs(tkv_db *db, file_meta **done, size_t ndone, int remove_files)
{
    pthread_mutex_lock(&db->mu);
    for (size_t i = 0; i < ndone; i++) {
        if (remove_files) {
            char path[4096];
            sst_path(db->dir, done[i]->number, path, sizeof path);
            table_cache_evict(db->tc, done[i]->number); /* a preloaded table must not outlive its file */
            io_remove(path);
        }
        db_remove_pending(db, done[i]->number);
        file_meta_unref(done[i]);
    }
    pthread_mutex_unlock(&db->mu);
    free(done);
}

void compact_preload_outputs(tkv_db *db, file_meta *const *files, size_t n, io_class cls)
{
    if (!db->opts.preload_tables) return;
    for (size_t i = 0; i < n; i++) (void)table_cache_preload(db->tc, files[i], cls);
}

void db_preload_tables(tkv_db *db)
{
    if (!db->opts.preload_tables) return;
    pthread_mutex_lock(&db->mu);
    version *v = vset_current(db->vs);
    version_ref_files(v);
    pthread_mutex_unlock(&db->mu);
    size_t budget = (size_t)db->opts.max_open_files;
    for (int level = 0; level < VERSION_LEVELS && budget; level++) {
        size_t n = v->nfiles[level] < budget ? v->nfiles[level] : budget;
        compact_preload_outputs(db, v->files[level], n, IO_META);
        budget -= n;
    }
    version_unref_files(v);
}

int run_compaction(tkv_db *db, compaction *c)
{
    version_edit e;
    edit_init(&e);
    int rc = 0;
    if (c->trivial_move) {
        file_meta *f = c->inputs[0][0];
        rc = edit_delete_file(&e, c->level, f->number);
        if (rc == 0) rc = edit_add_file(&e, c->out_level, f);
        pthread_mutex_lock(&db->mu);
        if (rc == 0) rc = install(db, &e);
        if (rc == 0) ctr_add(&db->ctr.trivial_moves, 1);
        goto done_locked;
    }

    /* Merge every input; L0 files first (newest first), then the level below. */
    size_t n = c->ninputs[0] + c->ninputs[1];
    tkv_it **kids = calloc(n ? n : 1, sizeof *kids);
    table **tables = calloc(n ? n : 1, sizeof *tables);
    if (!kids || !tables) {
        free(kids);
        free(tables);
        rc = tkv_err(TKV_NO_MEMORY, "out of memory starting a compaction");
        pthread_mutex_lock(&db->mu);
        goto done_locked;
    }
    size_t k = 0;
    for (int w = 0; w < 2; w++)
        for (size_t i = 0; i < c->ninputs[w]; i++, k++) kids[k] = open_input(db, c->inputs[w][i], c->cls, &tables[k]);
    tkv_it *in = merging_iter_new(kids, n);
    pthread_mutex_lock(&db->mu);
    uint64_t smallest_snapshot = db_smallest_snapshot(db);
    version *v = vset_current(db->vs);
    version_ref_files(v); /* SST levels only: pins no matrix rows while it runs (or is paused) */
    pthread_mutex_unlock(&db->mu);

    file_meta **done = NULL;
    size_t ndone = 0;
    if (!in) rc = tkv_err(TKV_NO_MEMORY, "out of memory merging");
    else rc = compact_merge(db, in, c->out_level, c->cls, v, smallest_snapshot, &done, &ndone);
    it_destroy(in);
    for (size_t i = 0; i < n; i++) table_close(tables[i]);
    free(tables);
    version_unref_files(v);

    uint64_t written = 0;
    for (size_t i = 0; i < ndone; i++) written += done[i]->size;
    if (rc == 0 && c->cls == IO_COMPACT_DEEP) silk_job_committing(db); /* no abort of a finished merge */
    if (rc == 0) compact_preload_outputs(db, done, ndone, c->cls); /* before install: see compact.h */
    for (int w = 0; rc == 0 && w < 2; w++)
        for (size_t i = 0; rc == 0 && i < c->ninputs[w]; i++)
            rc = edit_delete_file(&e, w == 0 ? c->level : c->out_level, c->inputs[w][i]->number);
    for (size_t i = 0; rc == 0 && i < ndone; i++) rc = edit_add_file(&e, c->out_level, done[i]);
    pthread_mutex_lock(&db->mu);
    int install_failed = 0;
    if (rc == 0) {
        rc = install(db, &e);
        install_failed = rc < 0;
    }
    if (rc == 0) {
        ctr_add(&db->ctr.compactions[c->cls], 1);
        ctr_add(&db->ctr.compaction_read_bytes[c->cls], c->est_bytes);
        ctr_add(&db->ctr.compaction_write_bytes[c->cls], written);
    }
    /* On failure the outputs are in no version: remove them; inputs stay as
     * they were. (If the MANIFEST write/sync itself failed, the edit may
     * still be recovered at the next open, so its outputs must stay; if it
     * is not, they are orphans that the next open deletes.) */
    pthread_mutex_unlock(&db->mu);
    compact_discard_outputs(db, done, ndone, rc < 0 && !install_failed);
    pthread_mutex_lock(&db->mu);

done_locked:
    /* Holding mu. */
    for (int w = 0; w < 2; w++)
        for (size_t i = 0; i < c->ninputs[w]; i++) c->inputs[w][i]->being_compacted = 0;
    /* An abort (silk.h) is no error: the inputs are untouched and the
     * compaction is picked again later. */
    if (rc < 0 && rc != SILK_ABORTED) db_set_bg_error(db, rc);
    else if (rc == 0) delete_obsolete_files(db);
    pthread_cond_broadcast(&db->bg_cv);
    pthread_mutex_unlock(&db->mu);
    edit_free(&e);
    return rc;
}

/* ------------------------------------------------------------ obsolete files */

static int contains(const uint64_t *a, size_t n, uint64_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && a[lo] == x;
}

void delete_obsolete_files(tkv_db *db)
{
    uint64_t *live;
    size_t nlive;
    if (vset_live_files(db->vs, &live, &nlive) < 0) return; /* try again next time */
    uint64_t log_number = vset_log_number(db->vs);
    uint64_t manifest = vset_manifest_number(db->vs);
    char **doomed = NULL; /* paths to unlink once mu is released */
    size_t ndoomed = 0, cap = 0;
    DIR *d = opendir(db->dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char *end;
        unsigned long long num = strtoull(e->d_name, &end, 10);
        int remove = 0;
        if (end != e->d_name && !strcmp(end, ".sst")) {
            int pending = 0;
            for (size_t i = 0; i < db->npending; i++) pending |= db->pending[i] == num;
            remove = !pending && !contains(live, nlive, num);
            if (remove) table_cache_evict(db->tc, num);
        } else if (end != e->d_name && !strcmp(end, ".wal")) {
            remove = num < log_number && num != db->wal_number;
        } else if (!strncmp(e->d_name, "MANIFEST-", 9)) {
            remove = strtoull(e->d_name + 9, NULL, 10) != manifest;
        } else if (end != e->d_name && (!strcmp(end, ".sst.trash") || !strcmp(end, ".wal.trash"))) {
            remove = 1; /* left by a crash or by a remover that raced us: the trash thread sees ENOENT */
        }
        if (!remove) continue;
        if (ndoomed == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            char **nd = realloc(doomed, ncap * sizeof *nd);
            if (!nd) break; /* out of memory: the rest go next time */
            doomed = nd;
            cap = ncap;
        }
        size_t len = strlen(db->dir) + 1 + strlen(e->d_name) + 1;
        if (!(doomed[ndoomed] = malloc(len))) break;
        snprintf(doomed[ndoomed++], len, "%s/%s", db->dir, e->d_name);
    }
    if (d) closedir(d);
    free(live);
    if (!ndoomed) {
        free(doomed);
        return;
    }
    pthread_mutex_unlock(&db->mu);
    for (size_t i = 0; i < ndoomed; i++) {
        /* SSTs and WALs (large) go to the trash thread under a name that is
         * visibly no longer the database's; MANIFESTs (small) at once */
        size_t n = strlen(doomed[i]);
        int big = n > 4 && (!strcmp(doomed[i] + n - 4, ".sst") || !strcmp(doomed[i] + n - 4, ".wal"));
        char tpath[4200];
        if (!big) {
            if (n > 6 && !strcmp(doomed[i] + n - 6, ".trash")) trash_add(db->trash, doomed[i]);
            else io_remove(doomed[i]);
        } else if (snprintf(tpath, sizeof tpath, "%s.trash", doomed[i]) < (int)sizeof tpath &&
                   io_rename(doomed[i], tpath) == 0) {
            trash_add(db->trash, tpath);
        } else {
            io_remove(doomed[i]); /* (ENOENT: another remover was first) */
        }
        free(doomed[i]);
    }
    free(doomed);
    pthread_mutex_lock(&db->mu);
}
