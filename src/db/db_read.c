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
#include "db/db_iter.h"
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

static int get_in(tkv_db *db, superversion *sv, uint64_t seq, const void *key, size_t klen, void **val, size_t *vlen)
{
    ikey_type type;
    tkv_slice v;
    ctr_add(&db->ctr.gets, 1);
    if (!sv_lookup(sv, key, klen, seq, &type, &v) || type == IKEY_DELETION) return TKV_NOT_FOUND;
    ctr_add(&db->ctr.gets_found, 1);
    return copy_value(v, val, vlen);
}

int tkv_get(tkv_db *db, const tkv_snapshot *snap, const void *key, size_t klen, void **val, size_t *vlen)
{
    if (val) *val = NULL;
    if (vlen) *vlen = 0;
    if (!db || !val || !vlen) return tkv_err(TKV_INVALID, "tkv_get: NULL %s", !db ? "db" : "output pointer");
    TKV_TRY(check_key(key, klen));
    uint64_t seq;
    superversion *sv = db_get_sv(db, snap, &seq);
    int rc = get_in(db, sv, seq, key, klen, val, vlen);
    sv_unref(sv);
    return rc;
}

int tkv_multi_get(tkv_db *db, const tkv_snapshot *snap, size_t n, const void *const *keys, const size_t *klens,
                  void **vals, size_t *vlens, int *statuses)
{
    if (!db || (n && (!keys || !klens || !vals || !vlens || !statuses)))
        return tkv_err(TKV_INVALID, "tkv_multi_get: NULL argument");
    uint64_t seq;
    superversion *sv = db_get_sv(db, snap, &seq);
    ctr_add(&db->ctr.multigets, 1);
    for (size_t i = 0; i < n; i++) {
        vals[i] = NULL;
        vlens[i] = 0;
        statuses[i] = check_key(keys[i], klens[i]);
        if (statuses[i] == 0) statuses[i] = get_in(db, sv, seq, keys[i], klens[i], &vals[i], &vlens[i]);
    }
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
};

int tkv_iter_new(tkv_db *db, const tkv_snapshot *snap, tkv_iter **out)
{
    if (out) *out = NULL;
    if (!db || !out) return tkv_err(TKV_INVALID, "tkv_iter_new: NULL %s", db ? "out" : "db");
    uint64_t seq;
    superversion *sv = db_get_sv(db, snap, &seq);
    size_t n = 1 + sv->nimm;
    tkv_it **children = calloc(n, sizeof *children);
    tkv_iter *ti = malloc(sizeof *ti);
    int rc = (children && ti) ? 0 : tkv_err(TKV_NO_MEMORY, "out of memory creating an iterator");
    /* Each child iterator holds its own memtable reference, so the iterator
     * does not need the superversion once built. */
    for (size_t i = 0; rc == 0 && i < n; i++) {
        children[i] = memtable_iter(i == 0 ? sv->mem : sv->imm[sv->nimm - i]);
        if (!children[i]) rc = tkv_err(TKV_NO_MEMORY, "out of memory creating an iterator");
    }
    sv_unref(sv);
    if (rc < 0) {
        for (size_t i = 0; children && i < n; i++) it_destroy(children[i]);
        free(children);
        free(ti);
        return rc;
    }
    tkv_it *merged = merging_iter_new(children, n);
    db_iter *di = merged ? db_iter_new(merged, seq) : NULL;
    if (!di) {
        free(ti);
        return tkv_err(TKV_NO_MEMORY, "out of memory creating an iterator");
    }
    ti->db = db;
    ti->it = di;
    __atomic_fetch_add(&db->open_iterators, 1, __ATOMIC_ACQ_REL);
    ctr_add(&db->ctr.iterators_created, 1);
    *out = ti;
    return TKV_OK;
}

void tkv_iter_free(tkv_iter *it)
{
    if (!it) return;
    db_iter_free(it->it);
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

/* appendf -- printf into a growing buffer; ignores out-of-memory (checked at the end). */
static void appendf(tkv_buf *b, int *oom, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#include <stdarg.h>
static void appendf(tkv_buf *b, int *oom, const char *fmt, ...)
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
    appendf(b, oom, "tierkv %s stats\n", TKV_VERSION_STRING);
    appendf(b, oom, "sequence.last: %llu\n", (unsigned long long)__atomic_load_n(&db->last_seq, __ATOMIC_ACQUIRE));
    appendf(b, oom, "memtable.active: entries=%llu bytes=%zu\n", (unsigned long long)memtable_num_entries(sv->mem),
            memtable_memory_usage(sv->mem));
    appendf(b, oom, "memtable.immutable: count=%zu entries=%llu bytes=%zu\n", sv->nimm,
            (unsigned long long)imm_entries, imm_bytes);
    appendf(b, oom, "memtable.switches: %llu\n", (unsigned long long)ctr_get(&c->memtable_switches));
    appendf(b, oom, "writes: puts=%llu deletes=%llu batches=%llu groups=%llu user_bytes=%llu\n",
            (unsigned long long)ctr_get(&c->user_puts), (unsigned long long)ctr_get(&c->user_deletes),
            (unsigned long long)ctr_get(&c->batches), (unsigned long long)ctr_get(&c->groups),
            (unsigned long long)ctr_get(&c->user_bytes_written));
    appendf(b, oom, "wal: records=%llu syncs=%llu\n", (unsigned long long)ctr_get(&c->wal_records),
            (unsigned long long)ctr_get(&c->wal_syncs));
    appendf(b, oom, "reads: gets=%llu found=%llu multigets=%llu iterators=%llu\n", (unsigned long long)ctr_get(&c->gets),
            (unsigned long long)ctr_get(&c->gets_found), (unsigned long long)ctr_get(&c->multigets),
            (unsigned long long)ctr_get(&c->iterators_created));
    appendf(b, oom, "recovery: records=%llu torn_records=%llu torn_bytes=%llu\n",
            (unsigned long long)ctr_get(&c->recovered_records), (unsigned long long)ctr_get(&c->recovered_torn_records),
            (unsigned long long)ctr_get(&c->recovered_torn_bytes));
    uint64_t dev_written = 0;
    for (int i = 0; i < IO_NCLASSES; i++) {
        appendf(b, oom, "io.%s: read_bytes=%llu write_bytes=%llu syncs=%llu\n", io_class_name((io_class)i),
                (unsigned long long)ctr_get(&db->io.read_bytes[i]), (unsigned long long)ctr_get(&db->io.write_bytes[i]),
                (unsigned long long)ctr_get(&db->io.syncs[i]));
        dev_written += ctr_get(&db->io.write_bytes[i]);
    }
    uint64_t user = ctr_get(&c->user_bytes_written);
    appendf(b, oom, "write_amplification: %.3f (device bytes written / user bytes written)\n",
            user ? (double)dev_written / (double)user : 0.0);
    appendf(b, oom, "background_error: %s\n", db->bg_error ? tkv_strerror(db->bg_error) : "none");
}

char *tkv_property(tkv_db *db, const char *name)
{
    if (!db || !name) {
        tkv_err(TKV_INVALID, "tkv_property: NULL %s", db ? "name" : "db");
        return NULL;
    }
    if (!strcmp(name, "tkv.options")) return options_describe(&db->opts);
    uint64_t seq;
    superversion *sv = db_get_sv(db, NULL, &seq);
    tkv_buf b = {0};
    int oom = 0, known = 1;
    if (!strcmp(name, "tkv.stats")) {
        stats_report(db, sv, &b, &oom);
    } else if (!strcmp(name, "tkv.levels")) {
        appendf(&b, &oom, "mem: entries=%llu bytes=%zu\n", (unsigned long long)memtable_num_entries(sv->mem),
                memtable_memory_usage(sv->mem));
        for (size_t i = sv->nimm; i-- > 0;)
            appendf(&b, &oom, "imm%zu: entries=%llu bytes=%zu wal=%llu\n", sv->nimm - i,
                    (unsigned long long)memtable_num_entries(sv->imm[i]), memtable_memory_usage(sv->imm[i]),
                    (unsigned long long)sv->imm_wal[i]);
    } else if (!strcmp(name, "tkv.num-entries-active-mem")) {
        appendf(&b, &oom, "%llu", (unsigned long long)memtable_num_entries(sv->mem));
    } else if (!strcmp(name, "tkv.num-immutable-mem")) {
        appendf(&b, &oom, "%zu", sv->nimm);
    } else if (!strcmp(name, "tkv.last-sequence")) {
        appendf(&b, &oom, "%llu", (unsigned long long)seq);
    } else {
        known = 0;
    }
    sv_unref(sv);
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
