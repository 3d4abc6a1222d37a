/*
 * db_read.c -- the read path: get, multi_get, snapshots, iterators, properties.
 *
 * Every read pins a superversion and a sequence number under db->mu and then
 * reads without locks; sources are consulted newest first (active memtable,
 * then immutable memtables newest to oldest) and the first entry found for a
 * key -- value or deletion -- decides.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_impl.h"
#include "db/compact.h"
#include "db/db_iter.h"
#include "db/mx.h"
#include "db/silk.h"
#include "io/wb.h"
#include "util/iter.h"
#include "util/status.h"

/* check_key -- validates a user key argument. */
static int check_key(const void *key, size_t klen)
{
    if (!key) return tkv_err(TKV_INVALID, "NULL key");
    if (klen == 0 || klen > TKV_MAX_KEY_SIZE)
        return tkv_err(TKV_INVALID, "key length %zu outside [1, %u]", klen, TKV_MAX_KEY_SIZE);
    return 0;
}

/* sv_lookup -- the newest entry of key visible at seq in sv. 1 found (type and
 * value set), 0 absent. */
static int sv_lookup(superversion *sv, const void *key, size_t klen, uint64_t seq, ikey_type *type, tkv_slice *val)
{
    if (memtable_get(sv->mem, key, klen, seq, type, val)) return 1;
    for (size_t i = sv->nimm; i-- > 0;)
        if (memtable_get(sv->imm[i], key, klen, seq, type, val)) return 1;
    return 0;
}

/* copy_value -- malloc'd NUL-terminated copy for the caller. */
static int copy_value(tkv_slice v, void **out, size_t *vlen)
{
    char *p = malloc(v.n + 1);
    if (!p) return tkv_err(TKV_NO_MEMORY, "out of memory copying a %zu-byte value", v.n);
    if (v.n) memcpy(p, v.p, v.n);
    p[v.n] = '\0';
    *out = p;
    *vlen = v.n;
    return TKV_OK;
}

/* version_lookup -- the newest entry of ukey visible at seq in the SSD tree:
 * L0 files newest first (each whose range holds the key), then one file per
 * deeper level. 1 found, 0 absent, < 0 error (corruption, I/O). */
static int version_lookup(tkv_db *db, version *v, tkv_slice ukey, uint64_t seq, ikey_type *type, tkv_buf *val)
{
    for (size_t i = 0; i < v->nfiles[0]; i++) {
        const file_meta *f = v->files[0][i];
        if (ukey_cmp(ukey, ikey_user(slice(f->smallest.data, f->smallest.len))) < 0 ||
            ukey_cmp(ukey, ikey_user(slice(f->largest.data, f->largest.len))) > 0)
            continue;
        int rc = table_cache_get(db->tc, f, ukey, seq, type, val);
        if (rc != 0) return rc;
    }
    for (int l = 1; l < VERSION_LEVELS; l++) {
        size_t i = version_find_file(v, l, ukey);
        if (i >= v->nfiles[l]) continue;
        const file_meta *f = v->files[l][i];
        if (ukey_cmp(ukey, ikey_user(slice(f->smallest.data, f->smallest.len))) < 0) continue;
        int rc = table_cache_get(db->tc, f, ukey, seq, type, val);
        if (rc != 0) return rc;
    }
    return 0;
}

static int get_in(tkv_db *db, superversion *sv, version *ver, uint64_t seq, const void *key, size_t klen, void **val,
                  size_t *vlen)
{
    ikey_type type;
    tkv_slice v;
    ctr_add(&db->ctr.gets, 1);
    if (sv_lookup(sv, key, klen, seq, &type, &v)) {
        if (type == IKEY_DELETION) return TKV_NOT_FOUND;
        ctr_add(&db->ctr.gets_found, 1);
        return copy_value(v, val, vlen);
    }
    tkv_buf b = {0};
    int rc = mx_get(db, sv, ver, slice(key, klen), seq, &type, &b);
    if (rc == 0) rc = version_lookup(db, ver, slice(key, klen), seq, &type, &b);
    if (rc == 1 && type == IKEY_VALUE) {
        ctr_add(&db->ctr.gets_found, 1);
        rc = copy_value(slice(b.data, b.len), val, vlen);
    } else if (rc >= 0) {
        rc = TKV_NOT_FOUND;
    }
    buf_free(&b);
    return rc;
}

int tkv_get(tkv_db *db, const tkv_snapshot *snap, const void *key, size_t klen, void **val, size_t *vlen)
{
    if (val) *val = NULL;
    if (vlen) *vlen = 0;
    if (!db || !val || !vlen) return tkv_err(TKV_INVALID, "tkv_get: NULL %s", !db ? "db" : "output pointer");
    TKV_TRY(check_key(key, klen));
    uint64_t seq;
    version *ver;
    superversion *sv = db_get_view(db, snap, &seq, &ver);
    int rc = get_in(db, sv, ver, seq, key, klen, val, vlen);
    version_unref(ver);
    sv_unref(sv);
    return rc;
}

int tkv_multi_get(tkv_db *db, const tkv_snapshot *snap, size_t n, const void *const *keys, const size_t *klens,
                  void **vals, size_t *vlens, int *statuses)
{
    if (!db || (n && (!keys || !klens || !vals || !vlens || !statuses)))
        return tkv_err(TKV_INVALID, "tkv_multi_get: NULL argument");
    uint64_t seq;
    version *ver;
    superversion *sv = db_get_view(db, snap, &seq, &ver);
    ctr_add(&db->ctr.multigets, 1);
    for (size_t i = 0; i < n; i++) {
        vals[i] = NULL;
        vlens[i] = 0;
        statuses[i] = check_key(keys[i], klens[i]);
        if (statuses[i] == 0) statuses[i] = get_in(db, sv, ver, seq, keys[i], klens[i], &vals[i], &vlens[i]);
    }
    version_unref(ver);
    sv_unref(sv);
    return TKV_OK;
}

/* ------------------------------------------------------------ snapshots */

const tkv_snapshot *tkv_snapshot_new(tkv_db *db)
{
    if (!db) {
        tkv_err(TKV_INVALID, "tkv_snapshot_new: NULL db");
        return NULL;
    }
    tkv_snapshot *s = malloc(sizeof *s);
    if (!s) {
        tkv_err(TKV_NO_MEMORY, "out of memory allocating a snapshot");
        return NULL;
    }
    pthread_mutex_lock(&db->mu);
    s->seq = __atomic_load_n(&db->last_seq, __ATOMIC_ACQUIRE);
    s->next = &db->snapshots;
    s->prev = db->snapshots.prev;
    s->prev->next = s;
    db->snapshots.prev = s;
    pthread_mutex_unlock(&db->mu);
    return s;
}

void tkv_snapshot_free(tkv_db *db, const tkv_snapshot *snap)
{
    if (!db || !snap) return;
    tkv_snapshot *s = (tkv_snapshot *)snap;
    pthread_mutex_lock(&db->mu);
    s->prev->next = s->next;
    s->next->prev = s->prev;
    pthread_mutex_unlock(&db->mu);
    free(s);
}

/* ------------------------------------------------------------ iterators */

struct tkv_iter {
    tkv_db *db;
    db_iter *it;
    version *v; /* pinned: its files stay on disk while the iterator lives */
};

int tkv_iter_new(tkv_db *db, const tkv_snapshot *snap, tkv_iter **out)
{
    if (out) *out = NULL;
    if (!db || !out) return tkv_err(TKV_INVALID, "tkv_iter_new: NULL %s", db ? "out" : "db");
    uint64_t seq;
    version *v;
    superversion *sv = db_get_view(db, snap, &seq, &v);
    /* Children, newest data first: memtables, matrix rows, L0 files, one per
     * deeper level. */
    size_t n = 1 + sv->nimm + mx_iter_count(sv) + v->nfiles[0];
    for (int l = 1; l < VERSION_LEVELS; l++) n += v->nfiles[l] > 0;
    tkv_it **children = calloc(n, sizeof *children);
    tkv_iter *ti = malloc(sizeof *ti);
    int rc = (children && ti) ? 0 : tkv_err(TKV_NO_MEMORY, "out of memory creating an iterator");
    size_t k = 0;
    /* Each memtable iterator holds its own memtable reference, so the
     * iterator does not need the superversion once built. */
    for (size_t i = 0; rc == 0 && i < 1 + sv->nimm; i++, k++)
        children[k] = memtable_iter(i == 0 ? sv->mem : sv->imm[sv->nimm - i]);
    if (rc == 0) rc = mx_add_iters(sv, v, children, &k);
    for (size_t i = 0; rc == 0 && i < v->nfiles[0]; i++, k++) children[k] = table_cache_iter(db->tc, v->files[0][i]);
    for (int l = 1; rc == 0 && l < VERSION_LEVELS; l++)
        if (v->nfiles[l]) children[k++] = level_iter_new(db->tc, v->files[l], v->nfiles[l]);
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (!children[i]) rc = tkv_err(TKV_NO_MEMORY, "out of memory creating an iterator");
    sv_unref(sv);
    if (rc < 0) {
        for (size_t i = 0; children && i < n; i++) it_destroy(children[i]);
        free(children);
        free(ti);
        version_unref(v);
        return rc;
    }
    tkv_it *merged = merging_iter_new(children, n);
    db_iter *di = merged ? db_iter_new(merged, seq) : NULL;
    if (!di) {
        free(ti);
        version_unref(v);
        return tkv_err(TKV_NO_MEMORY, "out of memory creating an iterator");
    }
    ti->db = db;
    ti->it = di;
    ti->v = v;
    __atomic_fetch_add(&db->open_iterators, 1, __ATOMIC_ACQ_REL);
    ctr_add(&db->ctr.iterators_created, 1);
    *out = ti;
    return TKV_OK;
}

void tkv_iter_free(tkv_iter *it)
{
    if (!it) return;
    db_iter_free(it->it);
    version_unref(it->v);
    __atomic_fetch_sub(&it->db->open_iterators, 1, __ATOMIC_ACQ_REL);
    free(it);
}

void tkv_iter_seek(tkv_iter *it, const void *key, size_t klen)
{
    if (!it) return;
    if (!key && klen) klen = 0;
    db_iter_seek(it->it, key, klen);
}
void tkv_iter_seek_first(tkv_iter *it) { if (it) db_iter_seek_first(it->it); }
void tkv_iter_seek_last(tkv_iter *it) { if (it) db_iter_seek_last(it->it); }
int tkv_iter_valid(const tkv_iter *it) { return it && db_iter_valid(it->it); }
void tkv_iter_next(tkv_iter *it) { if (it) db_iter_next(it->it); }
void tkv_iter_prev(tkv_iter *it) { if (it) db_iter_prev(it->it); }

const void *tkv_iter_key(const tkv_iter *it, size_t *klen)
{
    if (!it || !db_iter_valid(it->it)) {
        if (klen) *klen = 0;
        return NULL;
    }
    size_t n;
    const void *k = db_iter_key(it->it, &n);
    if (klen) *klen = n;
    return k;
}

const void *tkv_iter_value(const tkv_iter *it, size_t *vlen)
{
    if (!it || !db_iter_valid(it->it)) {
        if (vlen) *vlen = 0;
        return NULL;
    }
    size_t n;
    const void *v = db_iter_value(it->it, &n);
    if (vlen) *vlen = n;
    return v;
}

int tkv_iter_status(const tkv_iter *it)
{
    if (!it) return tkv_err(TKV_INVALID, "NULL iterator");
    return db_iter_status(it->it);
}

/* ------------------------------------------------------------ properties */

#include <stdarg.h>
void db_appendf(tkv_buf *b, int *oom, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof line) n = sizeof line - 1;
    if (buf_append(b, line, (size_t)n) < 0) *oom = 1;
}

static void stats_report(tkv_db *db, superversion *sv, tkv_buf *b, int *oom)
{
    const db_counters *c = &db->ctr;
    size_t imm_bytes = 0;
    uint64_t imm_entries = 0;
    for (size_t i = 0; i < sv->nimm; i++) {
        imm_bytes += memtable_memory_usage(sv->imm[i]);
        imm_entries += memtable_num_entries(sv->imm[i]);
    }
    db_appendf(b, oom, "tierkv %s stats\n", TKV_VERSION_STRING);
    db_appendf(b, oom, "sequence.last: %llu\n", (unsigned long long)__atomic_load_n(&db->last_seq, __ATOMIC_ACQUIRE));
    db_appendf(b, oom, "memtable.active: entries=%llu bytes=%zu\n", (unsigned long long)memtable_num_entries(sv->mem),
            memtable_memory_usage(sv->mem));
    db_appendf(b, oom, "memtable.immutable: count=%zu entries=%llu bytes=%zu\n", sv->nimm,
            (unsigned long long)imm_entries, imm_bytes);
    db_appendf(b, oom, "memtable.switches: %llu\n", (unsigned long long)ctr_get(&c->memtable_switches));
    db_appendf(b, oom, "writes: puts=%llu deletes=%llu batches=%llu groups=%llu user_bytes=%llu\n",
            (unsigned long long)ctr_get(&c->user_puts), (unsigned long long)ctr_get(&c->user_deletes),
            (unsigned long long)ctr_get(&c->batches), (unsigned long long)ctr_get(&c->groups),
            (unsigned long long)ctr_get(&c->user_bytes_written));
    db_appendf(b, oom, "wal: records=%llu syncs=%llu\n", (unsigned long long)ctr_get(&c->wal_records),
            (unsigned long long)ctr_get(&c->wal_syncs));
    db_appendf(b, oom, "reads: gets=%llu found=%llu multigets=%llu iterators=%llu\n", (unsigned long long)ctr_get(&c->gets),
            (unsigned long long)ctr_get(&c->gets_found), (unsigned long long)ctr_get(&c->multigets),
            (unsigned long long)ctr_get(&c->iterators_created));
    db_appendf(b, oom, "recovery: records=%llu torn_records=%llu torn_bytes=%llu\n",
            (unsigned long long)ctr_get(&c->recovered_records), (unsigned long long)ctr_get(&c->recovered_torn_records),
            (unsigned long long)ctr_get(&c->recovered_torn_bytes));
    version *v = vset_current(db->vs); /* caller holds mu */
    for (int l = 0; l < VERSION_LEVELS; l++) {
        if (!v->nfiles[l] && l > 1) continue;
        db_appendf(b, oom, "level.L%d: files=%zu bytes=%llu%s", l, v->nfiles[l],
                (unsigned long long)version_level_bytes(v, l), l == 0 ? "\n" : "");
        if (l > 0)
            db_appendf(b, oom, " target=%llu\n", (unsigned long long)level_target_bytes(&db->opts, l));
    }
    db_appendf(b, oom, "flush: count=%llu bytes_written=%llu\n", (unsigned long long)ctr_get(&c->flushes),
            (unsigned long long)ctr_get(&c->flush_bytes));
    for (int k = IO_COMPACT_L0; k <= IO_COMPACT_DEEP; k++)
        db_appendf(b, oom, "compaction.%s: count=%llu input_bytes=%llu output_bytes=%llu\n", io_class_name((io_class)k),
                (unsigned long long)ctr_get(&c->compactions[k]), (unsigned long long)ctr_get(&c->compaction_read_bytes[k]),
                (unsigned long long)ctr_get(&c->compaction_write_bytes[k]));
    db_appendf(b, oom, "compaction.trivial_moves: %llu\n", (unsigned long long)ctr_get(&c->trivial_moves));
    cache_stats cs;
    cache_get_stats(db->block_cache, &cs);
    db_appendf(b, oom, "block_cache: capacity=%zu usage=%zu hits=%llu misses=%llu hit_rate=%.4f\n", cs.capacity, cs.usage,
            (unsigned long long)cs.hits, (unsigned long long)cs.misses,
            cs.hits + cs.misses ? (double)cs.hits / (double)(cs.hits + cs.misses) : 0.0);
    table_cache_stats ts;
    table_cache_get_stats(db->tc, &ts);
    db_appendf(b, oom, "table_cache: open=%zu client_opens=%llu preloads=%llu load_waits=%llu\n", ts.open,
               (unsigned long long)ts.client_opens, (unsigned long long)ts.preloads,
               (unsigned long long)ts.load_waits);
    trash_stats tr;
    trash_get_stats(db->trash, &tr);
    db_appendf(b, oom, "trash: files_deleted=%llu bytes_deleted=%llu pending_files=%llu failures=%llu\n",
               (unsigned long long)tr.files_deleted, (unsigned long long)tr.bytes_deleted,
               (unsigned long long)tr.pending_files, (unsigned long long)tr.failures);
    mx_stats_line(db, b, oom);
    db_appendf(b, oom, "stalls: slowdowns=%llu stops=%llu stall_micros=%llu\n",
            (unsigned long long)ctr_get(&c->stall_slowdowns), (unsigned long long)ctr_get(&c->stall_stops),
            (unsigned long long)ctr_get(&c->stall_micros));
    uint64_t dev_written = 0;
    for (int i = 0; i < IO_NCLASSES; i++) {
        db_appendf(b, oom, "io.%s: read_bytes=%llu write_bytes=%llu syncs=%llu\n", io_class_name((io_class)i),
                (unsigned long long)ctr_get(&db->io.read_bytes[i]), (unsigned long long)ctr_get(&db->io.write_bytes[i]),
                (unsigned long long)ctr_get(&db->io.syncs[i]));
        dev_written += ctr_get(&db->io.write_bytes[i]);
    }
    if (db->io.wb) { /* after the lines above: tests read their fields by first match */
        io_wb_stats ws;
        io_wb_get_stats(db->io.wb, &ws);
        db_appendf(b, oom, "wal_writeback: ranges=%llu bytes=%llu syncs=%llu refused=%llu errors=%llu queued_now=%llu\n",
                   (unsigned long long)ws.queued, (unsigned long long)ws.bytes, (unsigned long long)ws.syncs, (unsigned long long)ws.dropped,
                   (unsigned long long)ws.failures, (unsigned long long)ws.pending);
    }
    uint64_t user = ctr_get(&c->user_bytes_written);
    db_appendf(b, oom, "write_amplification: %.3f (device bytes written / user bytes written, since open)\n",
            user ? (double)dev_written / (double)user : 0.0);
    db_appendf(b, oom, "background_error: %s\n", db->bg_error ? tkv_strerror(db->bg_error) : "none");
}

char *tkv_property(tkv_db *db, const char *name)
{
    if (!db || !name) {
        tkv_err(TKV_INVALID, "tkv_property: NULL %s", db ? "name" : "db");
        return NULL;
    }
    if (!strcmp(name, "tkv.options")) return options_describe(&db->opts);
    uint64_t seq;
    version *v;
    superversion *sv = db_get_view(db, NULL, &seq, &v);
    tkv_buf b = {0};
    int oom = 0, known = 1;
    if (!strcmp(name, "tkv.stats")) {
        pthread_mutex_lock(&db->mu);
        stats_report(db, sv, &b, &oom);
        pthread_mutex_unlock(&db->mu);
    } else if (!strcmp(name, "tkv.levels")) {
        db_appendf(&b, &oom, "mem: entries=%llu bytes=%zu\n", (unsigned long long)memtable_num_entries(sv->mem),
                memtable_memory_usage(sv->mem));
        for (size_t i = sv->nimm; i-- > 0;)
            db_appendf(&b, &oom, "imm%zu: entries=%llu bytes=%zu wal=%llu\n", sv->nimm - i,
                    (unsigned long long)memtable_num_entries(sv->imm[i]), memtable_memory_usage(sv->imm[i]),
                    (unsigned long long)sv->imm_wal[i]);
        if (sv->rows) {
            uint64_t entries = 0, live = 0, bytes = 0;
            for (size_t i = 0; i < sv->rows->n; i++) {
                rowtable_props pr;
                rowtable_get_props(sv->rows->rows[i], &pr);
                uint64_t cur = 0;
                version_row_cursor(v, pr.row_id, &cur);
                entries += pr.entries;
                live += pr.entries - cur;
                bytes += pr.data_bytes;
            }
            db_appendf(&b, &oom, "rows: count=%zu entries=%llu live_entries=%llu data_bytes=%llu\n", sv->rows->n,
                       (unsigned long long)entries, (unsigned long long)live, (unsigned long long)bytes);
        }
        for (int l = 0; l < VERSION_LEVELS; l++) {
            uint64_t entries = 0;
            for (size_t i = 0; i < v->nfiles[l]; i++) entries += v->files[l][i]->num_entries;
            db_appendf(&b, &oom, "L%d: files=%zu bytes=%llu entries=%llu\n", l, v->nfiles[l],
                    (unsigned long long)version_level_bytes(v, l), (unsigned long long)entries);
        }
    } else if (!strcmp(name, "tkv.matrix") || !strcmp(name, "tkv.pmem")) {
        pthread_mutex_lock(&db->mu);
        mx_report(db, !strcmp(name, "tkv.pmem"), &b, &oom);
        pthread_mutex_unlock(&db->mu);
    } else if (!strcmp(name, "tkv.sched")) {
        silk_report(db, &b, &oom);
    } else if (!strcmp(name, "tkv.num-entries-active-mem")) {
        db_appendf(&b, &oom, "%llu", (unsigned long long)memtable_num_entries(sv->mem));
    } else if (!strcmp(name, "tkv.num-immutable-mem")) {
        db_appendf(&b, &oom, "%zu", sv->nimm);
    } else if (!strcmp(name, "tkv.last-sequence")) {
        db_appendf(&b, &oom, "%llu", (unsigned long long)seq);
    } else {
        known = 0;
    }
    sv_unref(sv);
    version_unref(v);
    if (!known) {
        tkv_err(TKV_INVALID, "unknown property \"%s\"", name);
        return NULL;
    }
    if (oom || buf_append(&b, "", 1) < 0) {
        buf_free(&b);
        tkv_err(TKV_NO_MEMORY, "out of memory building property %s", name);
        return NULL;
    }
    return (char *)b.data;
}
