// SPDX-License-Identifier: Apache-2.0
/*
 * db_read.c -- the public read API: tkv_get, tkv_multi_get, snapshots and
 * iterators.
 *
 * Every read pins a superversion and a sequence number under db->mu and then
 * reads without locks; sources are consulted newest first (active memtable,
 * then immutable memtables newest to oldest) and the first entry found for a
 * key -- value or deletion -- decides: memtables, the matrix container's
 * rows (mx_read.c), then the SSD tree.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_impl.h"
#include "db/db_iter.h"
#include "db/files.h"
#include "db/mx.h"
#include "db/readopts.h"
#include "db/superversion.h"
#include "sst/multiget.h"
#include "sst/table.h"
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

/* mem_lookup -- key's newest entry visible at seq in memtable m, with *rd
 * the newest range tombstone visible at seq covering key in the tiers read
 * so far (raised by m's): 1 found (type and value set; an entry older than
 * *rd reads as a deletion), 1 with a deletion when no entry but a tombstone
 * was found (no older tier can hold a newer entry of the key: tiers are in
 * sequence order for each key, tombstones too), 0 absent, < 0 error. */
static int mem_lookup(memtable *m, const void *key, size_t klen, uint64_t seq, ikey_type *type, tkv_slice *val,
                      uint64_t *rd)
{
    uint64_t t, found;
    TKV_TRY(memtable_range_del_covering(m, slice(key, klen), seq, &t));
    if (t > *rd) *rd = t;
    if (memtable_get_seq(m, key, klen, seq, type, val, &found)) {
        if (found < *rd) {
            *type = IKEY_DELETION;
            *val = slice(NULL, 0);
        }
        return 1;
    }
    if (*rd == 0) return 0;
    *type = IKEY_DELETION;
    *val = slice(NULL, 0);
    return 1;
}

/* sv_lookup -- the newest entry of key visible at seq in sv's memtables,
 * newest first (mem_lookup: same returns; *rd starts at 0). */
static int sv_lookup(superversion *sv, const void *key, size_t klen, uint64_t seq, ikey_type *type, tkv_slice *val,
                     uint64_t *rd)
{
    int rc = mem_lookup(sv->mem, key, klen, seq, type, val, rd);
    for (size_t i = sv->nimm; rc == 0 && i-- > 0;) rc = mem_lookup(sv->imm[i], key, klen, seq, type, val, rd);
    return rc;
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

/* lookup -- key's newest entry visible at seq in a pinned view: TKV_OK with
 * *v its value (in a memtable, or in b, where rows and SSTs copy it),
 * TKV_NOT_FOUND, or an error. Counts the get and, when found, gets_found. */
static int lookup(tkv_db *db, superversion *sv, version *ver, uint64_t seq, const void *key, size_t klen, tkv_buf *b,
                  tkv_slice *v)
{
    ikey_type type;
    uint64_t rd = 0;
    ctr_add(&db->ctr.gets, 1);
    int rc = sv_lookup(sv, key, klen, seq, &type, v, &rd);
    if (rc == 1) {
        rc = type == IKEY_DELETION ? TKV_NOT_FOUND : TKV_OK;
    } else if (rc == 0) {
        rc = mx_get(db, sv, ver, slice(key, klen), seq, &rd, &type, b);
        if (rc == 0) rc = multiget_one(db->tc, ver, slice(key, klen), seq, &rd, &type, b);
        rc = rc == 1 && type == IKEY_VALUE ? TKV_OK : rc >= 0 ? TKV_NOT_FOUND : rc;
        *v = slice(b->data, b->len);
    }
    if (rc == TKV_OK) ctr_add(&db->ctr.gets_found, 1);
    return rc;
}

/* get_in -- one lookup in a pinned view: a malloc'd copy of the value,
 * TKV_NOT_FOUND, or an error. */
static int get_in(tkv_db *db, superversion *sv, version *ver, uint64_t seq, const void *key, size_t klen, void **val,
                  size_t *vlen)
{
    tkv_buf b = {0};
    tkv_slice v;
    int rc = lookup(db, sv, ver, seq, key, klen, &b, &v);
    if (rc == TKV_OK) rc = copy_value(v, val, vlen);
    buf_free(&b);
    return rc;
}

int tkv_get(tkv_db *db, const tkv_snapshot *snap, const void *key, size_t klen, void **val, size_t *vlen)
{
    if (val) *val = NULL;
    if (vlen) *vlen = 0;
    if (!db || !val || !vlen) return tkv_err(TKV_INVALID, "tkv_get: NULL %s", !db ? "db" : "output pointer");
    TKV_TRY(check_key(key, klen));
    uint64_t t0 = db_stat_start(db);
    uint64_t seq;
    version *ver;
    superversion *sv = sv_get_view(db, snap, &seq, &ver);
    int rc = get_in(db, sv, ver, seq, key, klen, val, vlen);
    files_unpin(db, ver, 0);
    sv_unref(sv);
    db_stat_end(db, TKV_HIST_GET, t0);
    return rc;
}

int tkv_get_into(tkv_db *db, const tkv_read_options *ro, const void *key, size_t klen, void *buf, size_t cap,
                 size_t *vlen)
{
    if (vlen) *vlen = 0;
    if (!db || !vlen) return tkv_err(TKV_INVALID, "tkv_get_into: NULL %s", !db ? "db" : "vlen");
    if (!buf && cap) return tkv_err(TKV_INVALID, "tkv_get_into: NULL buffer with capacity %zu", cap);
    TKV_TRY(check_key(key, klen));
    uint64_t t0 = db_stat_start(db);
    uint64_t seq;
    version *ver;
    superversion *sv = sv_get_view(db, ro ? ro->snap : NULL, &seq, &ver);
    unsigned saved = table_read_flags_set(readopts_table_flags(ro));
    tkv_slice v;
    tkv_buf b;
    buf_init_fixed(&b, buf, cap); /* a value from the rows or an SST lands in buf when it fits */
    int rc = lookup(db, sv, ver, seq, key, klen, &b, &v);
    if (rc == TKV_OK) {
        *vlen = v.n;
        size_t n = v.n <= cap ? v.n : cap;
        if (n && v.p != buf) memmove(buf, v.p, n);
        if (v.n > cap) rc = TKV_TRUNCATED;
    }
    buf_free(&b);
    table_read_flags_set(saved);
    files_unpin(db, ver, 0);
    sv_unref(sv);
    db_stat_end(db, TKV_HIST_GET, t0);
    return rc;
}

/* Keys of a batch that reach the SSD tree, kept on the stack up to this. */
#define MG_STACK 32

/* mget_async -- the batch on a ring: each key's memtables and matrix rows
 * first (no I/O), then the keys left go to the SSD tree together
 * (sst/multiget.h). Same answers as get_in key by key. 0, or TKV_NO_MEMORY
 * before anything was done (the caller then loops on get_in). */
static int mget_async(tkv_db *db, superversion *sv, version *ver, uint64_t seq, io_ring *ring, size_t n,
                      const void *const *keys, const size_t *klens, void **vals, size_t *vlens, int *statuses)
{
    multiget_key mstack[MG_STACK], *mk = mstack;
    tkv_buf bstack[MG_STACK], *bufs = bstack;
    size_t wstack[MG_STACK], *which = wstack;
    if (n > MG_STACK) {
        mk = malloc(n * sizeof *mk);
        bufs = malloc(n * sizeof *bufs);
        which = malloc(n * sizeof *which);
    }
    if (!mk || !bufs || !which) {
        free(mk);
        free(bufs);
        free(which);
        return TKV_NO_MEMORY;
    }
    memset(bufs, 0, n * sizeof *bufs);
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        if (statuses[i] < 0) continue; /* a bad key */
        ikey_type type;
        tkv_slice v;
        uint64_t rd = 0;
        ctr_add(&db->ctr.gets, 1);
        int rc = sv_lookup(sv, keys[i], klens[i], seq, &type, &v, &rd);
        if (rc < 0) {
            statuses[i] = rc;
        } else if (rc == 1) {
            statuses[i] = type == IKEY_DELETION ? TKV_NOT_FOUND : copy_value(v, &vals[i], &vlens[i]);
        } else if ((rc = mx_get(db, sv, ver, slice(keys[i], klens[i]), seq, &rd, &type, &bufs[i])) != 0) {
            statuses[i] = rc < 0                  ? rc
                          : type == IKEY_DELETION ? TKV_NOT_FOUND
                                                  : copy_value(slice(bufs[i].data, bufs[i].len), &vals[i], &vlens[i]);
        } else {
            mk[m] = (multiget_key){.ukey = slice(keys[i], klens[i]), .rd = rd, .val = &bufs[i]};
            which[m++] = i;
        }
        if (rc != 0 && statuses[i] == TKV_OK) ctr_add(&db->ctr.gets_found, 1); /* keys left for the SSTs count below */
    }
    multiget_stats st = {0, 0, 0, 0};
    multiget_lookup(db->tc, ver, ring, seq, mk, m, &st);
    for (size_t j = 0; j < m; j++) {
        size_t i = which[j];
        if (mk[j].rc == 1 && mk[j].type == IKEY_VALUE)
            statuses[i] = copy_value(slice(bufs[i].data, bufs[i].len), &vals[i], &vlens[i]);
        else statuses[i] = mk[j].rc < 0 ? mk[j].rc : TKV_NOT_FOUND;
        if (statuses[i] == TKV_OK) ctr_add(&db->ctr.gets_found, 1);
    }
    ctr_add(&db->ctr.mget_async_keys, m);
    ctr_add(&db->ctr.mget_reads, st.reads);
    ctr_add(&db->ctr.mget_shared, st.shared);
    ctr_add(&db->ctr.mget_cache_hits, st.cache_hits);
    ctr_add(&db->ctr.mget_full_waits, st.full_waits);
    for (size_t i = 0; i < n; i++) buf_free(&bufs[i]);
    if (n > MG_STACK) {
        free(mk);
        free(bufs);
        free(which);
    }
    return 0;
}

int tkv_multi_get(tkv_db *db, const tkv_snapshot *snap, size_t n, const void *const *keys, const size_t *klens,
                  void **vals, size_t *vlens, int *statuses)
{
    if (!db || (n && (!keys || !klens || !vals || !vlens || !statuses)))
        return tkv_err(TKV_INVALID, "tkv_multi_get: NULL argument");
    uint64_t t0 = db_stat_start(db);
    uint64_t seq;
    version *ver;
    superversion *sv = sv_get_view(db, snap, &seq, &ver);
    ctr_add(&db->ctr.multigets, 1);
    for (size_t i = 0; i < n; i++) {
        vals[i] = NULL;
        vlens[i] = 0;
        statuses[i] = check_key(keys[i], klens[i]);
    }
    /* One key has nothing to overlap: it reads as tkv_get does. */
    io_ring *ring = n > 1 ? io_ring_acquire(db->rings) : NULL;
    if (!ring || mget_async(db, sv, ver, seq, ring, n, keys, klens, vals, vlens, statuses) < 0)
        for (size_t i = 0; i < n; i++)
            if (statuses[i] == 0) statuses[i] = get_in(db, sv, ver, seq, keys[i], klens[i], &vals[i], &vlens[i]);
    io_ring_release(db->rings, ring);
    files_unpin(db, ver, 0);
    sv_unref(sv);
    db_stat_end(db, TKV_HIST_GET, t0);
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
    version *v;    /* pinned: its files stay on disk while the iterator lives */
    io_ring *ring; /* lent for the iterator's life (async_io), or NULL */
    tkv_it **sst;  /* the SST children (L0 files, levels), owned by `it` */
    size_t nsst;
    uint64_t seq;
    unsigned rflags; /* table read flags (readopts_table_flags), set around each move */
    tkv_buf target;  /* scratch: the internal key of a seek */
};

/* add_sst_iters -- appends the SST tree's children to children[*k...]:
 * one per L0 file, one per non-empty deeper level, reading on ring. */
static void add_sst_iters(tkv_db *db, version *v, io_ring *ring, tkv_it **children, size_t *k)
{
    table_prefetch_stats *pst = &db->ctr.prefetch;
    for (size_t i = 0; i < v->nfiles[0]; i++) children[(*k)++] = table_cache_iter(db->tc, v->files[0][i], ring, pst);
    for (int l = 1; l < VERSION_LEVELS; l++)
        if (v->nfiles[l]) children[(*k)++] = level_iter_new(db->tc, v->files[l], v->nfiles[l], ring, pst);
}

static int iter_new(tkv_db *db, const tkv_snapshot *snap, const tkv_read_options *ro, tkv_iter **out);

/* add_table_range_dels -- the range tombstones of file f (its table opened
 * through the cache) into out with tier `tier`. */
static int add_table_range_dels(tkv_db *db, const file_meta *f, uint32_t tier, rd_list *out)
{
    if (!f->num_range_dels) return 0;
    cache_handle *h;
    TKV_TRY(table_cache_find(db->tc, f, &h));
    const rd_list *l = table_range_del_list(table_cache_table(h));
    size_t from = out->n;
    int rc = rd_list_append(out, l->t, l->n);
    for (size_t i = from; i < out->n; i++) out->t[i].tier = tier;
    table_cache_release(db->tc, h);
    return rc;
}

/* iter_range_dels -- the fragments of every range tombstone of the view
 * visible at seq, each tagged with the index of the iterator child that
 * holds its tier (iter_new's order: memtables newest first, rows, L0 files,
 * one per non-empty deeper level); *out NULL when there is none. */
static int iter_range_dels(tkv_db *db, superversion *sv, version *v, uint64_t seq, rd_frags **out)
{
    rd_list l = {0};
    uint32_t tier = 0;
    int rc = 0;
    *out = NULL;
    for (size_t i = 0; rc == 0 && i < 1 + sv->nimm; i++, tier++) {
        memtable *m = i == 0 ? sv->mem : sv->imm[sv->nimm - i];
        size_t from = l.n;
        if (memtable_num_range_dels(m)) rc = memtable_range_del_list(m, &l);
        for (size_t j = from; j < l.n; j++) l.t[j].tier = tier;
    }
    if (rc == 0) rc = mx_range_dels(sv, v, tier, &l);
    tier += (uint32_t)mx_iter_count(sv);
    for (size_t i = 0; rc == 0 && i < v->nfiles[0]; i++, tier++)
        rc = add_table_range_dels(db, v->files[0][i], tier, &l);
    for (int lv = 1; rc == 0 && lv < VERSION_LEVELS; lv++) {
        if (!v->nfiles[lv]) continue;
        for (size_t i = 0; rc == 0 && i < v->nfiles[lv]; i++) rc = add_table_range_dels(db, v->files[lv][i], tier, &l);
        tier++;
    }
    if (rc == 0 && l.n && !(*out = rd_frags_new(l.t, l.n, seq))) rc = TKV_NO_MEMORY;
    rd_list_free(&l);
    return rc;
}

/* bytes_of -- b's bytes, never NULL (an empty bound is still a bound). */
static const void *bytes_of(const tkv_buf *b) { return b->data ? (const void *)b->data : ""; }

int tkv_iter_new(tkv_db *db, const tkv_snapshot *snap, tkv_iter **out)
{
    if (out) *out = NULL;
    if (!db || !out) return tkv_err(TKV_INVALID, "tkv_iter_new: NULL %s", db ? "out" : "db");
    return iter_new(db, snap, NULL, out);
}

int tkv_iter_new_opt(tkv_db *db, const tkv_read_options *ro, tkv_iter **out)
{
    if (out) *out = NULL;
    if (!db || !out) return tkv_err(TKV_INVALID, "tkv_iter_new_opt: NULL %s", db ? "out" : "db");
    return iter_new(db, ro ? ro->snap : NULL, ro, out);
}

/* iter_new -- tkv_iter_new with read options ro (NULL: none; its snapshot is snap). */
static int iter_new(tkv_db *db, const tkv_snapshot *snap, const tkv_read_options *ro, tkv_iter **out)
{
    uint64_t seq;
    version *v;
    superversion *sv = sv_get_view(db, snap, &seq, &v);
    /* Children, newest data first: memtables, matrix rows, L0 files, one per
     * deeper level. */
    size_t nmem = 1 + sv->nimm + mx_iter_count(sv), n = nmem + v->nfiles[0];
    for (int l = 1; l < VERSION_LEVELS; l++) n += v->nfiles[l] > 0;
    tkv_it **children = calloc(n, sizeof *children);
    tkv_iter *ti = calloc(1, sizeof *ti);
    int rc = (children && ti) ? 0 : tkv_err(TKV_NO_MEMORY, "out of memory creating an iterator");
    size_t k = 0;
    /* Each memtable iterator holds its own memtable reference, so the
     * iterator does not need the superversion once built. */
    for (size_t i = 0; rc == 0 && i < 1 + sv->nimm; i++, k++)
        children[k] = memtable_iter(i == 0 ? sv->mem : sv->imm[sv->nimm - i]);
    if (rc == 0) rc = mx_add_iters(db, sv, v, children, &k);
    if (rc == 0 && n > nmem) ti->ring = io_ring_acquire(db->rings); /* reads only if the tree has files */
    if (rc == 0) add_sst_iters(db, v, ti->ring, children, &k);
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (!children[i]) rc = tkv_err(TKV_NO_MEMORY, "out of memory creating an iterator");
    rd_frags *rd = NULL;
    if (rc == 0) rc = iter_range_dels(db, sv, v, seq, &rd);
    sv_unref(sv);
    tkv_it *merged = rc == 0 ? merging_iter_new(children, n) : NULL;
    db_iter *di = merged ? db_iter_new(merged, seq) : NULL;
    if (di) db_iter_set_range_dels(di, rd);
    else rd_frags_unref(rd);
    if (di && ro &&
        db_iter_set_bounds(di, ro->has_lower ? bytes_of(&ro->lower) : NULL, ro->lower.len,
                           ro->has_upper ? bytes_of(&ro->upper) : NULL, ro->upper.len)) {
        db_iter_free(di); /* releases the children */
        di = NULL;
        rc = tkv_err(TKV_NO_MEMORY, "out of memory creating an iterator");
        children = NULL;
    }
    if (!di) { /* a failed merging_iter_new or db_iter_new has released the children and the array */
        if (rc == 0) {
            rc = tkv_err(TKV_NO_MEMORY, "out of memory creating an iterator");
        } else {
            for (size_t i = 0; children && i < n; i++) it_destroy(children[i]);
            free(children);
        }
        if (ti) io_ring_release(db->rings, ti->ring); /* after its children: they give their reads back */
        free(ti);
        files_unpin(db, v, 0);
        return rc;
    }
    ti->db = db;
    ti->it = di;
    ti->v = v;
    ti->nsst = n - nmem;
    ti->sst = ti->nsst ? children + nmem : NULL; /* the merging iterator keeps the array (n > 1) */
    ti->seq = seq;
    ti->rflags = readopts_table_flags(ro);
    __atomic_fetch_add(&db->open_iterators, 1, __ATOMIC_ACQ_REL);
    ctr_add(&db->ctr.iterators_created, 1);
    *out = ti;
    return TKV_OK;
}

void tkv_iter_free(tkv_iter *it)
{
    if (!it) return;
    db_iter_free(it->it);
    io_ring_release(it->db->rings, it->ring); /* after the children gave their reads back */
    buf_free(&it->target);
    files_unpin(it->db, it->v, 0); /* may delete what a compaction left to this view */
    __atomic_fetch_sub(&it->db->open_iterators, 1, __ATOMIC_ACQ_REL);
    free(it);
}

/* prefetch_seek -- before a seek with a ring: each SST child queues the read
 * of the block its seek will need, and they go to the device together, so
 * the seek waits about one read, not one per level. */
static void prefetch_seek(tkv_iter *it, const void *key, size_t klen)
{
    if (buf_reserve(&it->target, klen + IKEY_TRAILER) < 0) return; /* the seek itself will say so */
    ikey_encode(it->target.data, key, klen, it->seq, IKEY_SEEK_TYPE);
    tkv_slice t = slice(it->target.data, klen + IKEY_TRAILER);
    int issued = 0;
    for (size_t i = 0; i < it->nsst; i++) issued += table_cache_prefetch_seek(it->sst[i], t);
    if (issued == 0) return;
    io_ring_submit(it->ring);
    if (issued > 1) ctr_add(&it->db->ctr.seek_parallel, 1);
}

/* Each move runs with the iterator's table read flags set on the calling
 * thread (sst/table.h), the caller's own restored after it. */
#define ITER_MOVE(it, call)                                                                                            \
    do {                                                                                                               \
        if (!(it)) return;                                                                                             \
        unsigned saved_ = table_read_flags_set((it)->rflags);                                                          \
        call;                                                                                                          \
        table_read_flags_set(saved_);                                                                                  \
    } while (0)

void tkv_iter_seek(tkv_iter *it, const void *key, size_t klen)
{
    if (!key && klen) klen = 0;
    ITER_MOVE(it, {
        const void *k = db_iter_seek_target(it->it, key, &klen); /* what the seek reads: prefetch that */
        if (it->ring && db_iter_status(it->it) == 0) prefetch_seek(it, k, klen);
        db_iter_seek(it->it, k, klen);
    });
}
void tkv_iter_seek_for_prev(tkv_iter *it, const void *key, size_t klen)
{
    if (!key && klen) klen = 0;
    ITER_MOVE(it, db_iter_seek_for_prev(it->it, key, klen));
}
void tkv_iter_seek_first(tkv_iter *it) { ITER_MOVE(it, db_iter_seek_first(it->it)); }
void tkv_iter_seek_last(tkv_iter *it) { ITER_MOVE(it, db_iter_seek_last(it->it)); }
int tkv_iter_valid(const tkv_iter *it) { return it && db_iter_valid(it->it); }
void tkv_iter_next(tkv_iter *it) { ITER_MOVE(it, db_iter_next(it->it)); }
void tkv_iter_prev(tkv_iter *it) { ITER_MOVE(it, db_iter_prev(it->it)); }

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
