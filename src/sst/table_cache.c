// SPDX-License-Identifier: Apache-2.0
/*
 * table_cache.c -- open tables by file number, table-pinning iterators, and the
 * level (concatenating) iterator.
 */
#include "sst/table_cache.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/status.h"

/* One table being opened (on the opening thread's stack): other threads that
 * miss the same file wait for it instead of reading its footer, filter and
 * index again (single flight). */
typedef struct table_load {
    uint64_t number;
    struct table_load *next;
} table_load;

/* The value of a table's cache entry: the table, and its DRAM counted in
 * its cache's `bytes` until the entry is deleted. */
typedef struct table_entry {
    table *t;
    table_cache *tc;
    size_t bytes;
} table_entry;

struct table_cache {
    char *dir;
    tkv_cache *tables; /* key: 8-byte file number, value: table_entry* */
    size_t max_bytes;  /* 0: at most max_open_files tables (charge 1 each); else the byte capacity */
    size_t min_charge; /* with max_bytes: the least a table is charged (max_bytes / max_open_files) */
    size_t bytes;      /* atomic: DRAM of the tables open now (table_memory) */
    size_t nopen;      /* atomic: tables open now (in the cache, or out of it but still pinned) */
    tkv_cache *blocks; /* shared block cache (may be NULL) */
    io_stats *stats;
    unsigned io_flags;                           /* IO_DIRECT when direct_io=1 */
    uint64_t client_opens, preloads, load_waits; /* atomic (relaxed) */
    /* Loads in flight. Invariant: a file number is in `loading` iff exactly
     * one thread is opening it and has not yet inserted (or given up);
     * load_cv is broadcast whenever an entry leaves. load_mu is never held
     * across I/O and is taken after no other lock. */
    pthread_mutex_t load_mu;
    pthread_cond_t load_cv;
    table_load *loading;
};

void sst_path(const char *dir, uint64_t number, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%06llu.sst", dir, (unsigned long long)number);
}

static void close_table(const void *key, size_t klen, void *value)
{
    (void)key;
    (void)klen;
    table_entry *e = value;
    __atomic_fetch_sub(&e->tc->bytes, e->bytes, __ATOMIC_RELAXED);
    __atomic_fetch_sub(&e->tc->nopen, 1, __ATOMIC_RELAXED);
    table_close(e->t);
    free(e);
}

table_cache *table_cache_new(const char *dir, size_t max_open_files, size_t max_bytes, tkv_cache *block_cache,
                             io_stats *st, unsigned io_flags)
{
    table_cache *tc = calloc(1, sizeof *tc);
    if (!tc) return NULL;
    tc->dir = strdup(dir);
    tc->max_bytes = max_bytes;
    tc->min_charge = max_bytes && max_open_files ? max_bytes / max_open_files : 1;
    tc->tables = cache_new(max_bytes ? max_bytes : max_open_files, 2);
    tc->blocks = block_cache;
    tc->stats = st;
    tc->io_flags = io_flags;
    pthread_mutex_init(&tc->load_mu, NULL);
    pthread_cond_init(&tc->load_cv, NULL);
    if (!tc->dir || !tc->tables) {
        table_cache_free(tc);
        return NULL;
    }
    return tc;
}

void table_cache_free(table_cache *tc)
{
    if (!tc) return;
    cache_free(tc->tables);
    pthread_cond_destroy(&tc->load_cv);
    pthread_mutex_destroy(&tc->load_mu);
    free(tc->dir);
    free(tc);
}

tkv_cache *table_cache_block_cache(table_cache *tc) { return tc->blocks; }

void table_cache_get_stats(table_cache *tc, table_cache_stats *out)
{
    cache_stats cs;
    cache_get_stats(tc->tables, &cs);
    out->open = __atomic_load_n(&tc->nopen, __ATOMIC_RELAXED);
    out->bytes = __atomic_load_n(&tc->bytes, __ATOMIC_RELAXED);
    out->charged = cs.usage;
    out->capacity = cs.capacity;
    out->client_opens = __atomic_load_n(&tc->client_opens, __ATOMIC_RELAXED);
    out->preloads = __atomic_load_n(&tc->preloads, __ATOMIC_RELAXED);
    out->load_waits = __atomic_load_n(&tc->load_waits, __ATOMIC_RELAXED);
}

/* load_claim -- for a miss on file mine->number: waits while another thread
 * is opening it, then looks again. Returns the handle if that load
 * succeeded, or NULL with `mine` (the caller's, on its stack) linked into
 * the in-flight list: the caller opens the table, then calls load_release.
 * If the other load failed, the caller claims and tries itself (it then
 * meets the error, or the condition has passed). */
static cache_handle *load_claim(table_cache *tc, table_load *mine, const uint8_t *key, size_t klen)
{
    pthread_mutex_lock(&tc->load_mu);
    int waited = 0;
    for (;;) {
        table_load *l = tc->loading;
        while (l && l->number != mine->number) l = l->next;
        if (!l) break;
        waited = 1;
        pthread_cond_wait(&tc->load_cv, &tc->load_mu);
    }
    if (waited) __atomic_fetch_add(&tc->load_waits, 1, __ATOMIC_RELAXED);
    /* No load of this file is in flight: either one finished (look again) or
     * none started since the caller's miss. */
    cache_handle *h = cache_lookup(tc->tables, key, klen);
    if (!h) {
        mine->next = tc->loading;
        tc->loading = mine;
    }
    pthread_mutex_unlock(&tc->load_mu);
    return h;
}

/* load_release -- unlinks the caller's claim and wakes the threads waiting
 * for it. */
static void load_release(table_cache *tc, table_load *mine)
{
    pthread_mutex_lock(&tc->load_mu);
    for (table_load **p = &tc->loading; *p; p = &(*p)->next)
        if (*p == mine) {
            *p = mine->next;
            break;
        }
    pthread_cond_broadcast(&tc->load_cv);
    pthread_mutex_unlock(&tc->load_mu);
}

/* open_table -- opens file f's table and inserts it; *out is the pinned
 * handle. The caller holds the load claim on f. */
static int open_table(table_cache *tc, const file_meta *f, io_class open_cls, const uint8_t *key, size_t klen,
                      cache_handle **out)
{
    char path[4096];
    sst_path(tc->dir, f->number, path, sizeof path);
    io_file *file;
    int rc = io_open_read_ex(path, tc->io_flags, open_cls, tc->stats, &file);
    if (rc < 0) {
        /* A file the MANIFEST lists but that does not exist is corruption;
         * any other failure (EIO, EMFILE...) keeps the OS error and code. */
        if (access(path, F_OK) != 0 && errno == ENOENT)
            rc = tkv_err(TKV_CORRUPTION, "%s is listed in the MANIFEST but does not exist", path);
        return rc;
    }
    table *t;
    TKV_TRY(table_open(file, f->size, tc->blocks, &t));
    file->cls = IO_USER_READ; /* from here on it serves clients; no other thread has seen it yet */
    table_entry *e = malloc(sizeof *e);
    cache_handle *h = NULL;
    if (e) {
        *e = (table_entry){t, tc, table_memory(t) + sizeof *e};
        size_t charge = !tc->max_bytes ? 1 : e->bytes > tc->min_charge ? e->bytes : tc->min_charge;
        h = cache_insert(tc->tables, key, klen, e, charge, close_table);
    }
    if (!h) {
        table_close(t);
        free(e);
        return tkv_err(TKV_NO_MEMORY, "out of memory caching table %s", path);
    }
    __atomic_fetch_add(&tc->bytes, e->bytes, __ATOMIC_RELAXED);
    __atomic_fetch_add(&tc->nopen, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(open_cls == IO_USER_READ ? &tc->client_opens : &tc->preloads, 1, __ATOMIC_RELAXED);
    *out = h;
    return 0;
}

/* find_table_cls -- the pinned cache handle of file f's table, opening it on
 * a miss with its reads charged to open_cls. Concurrent misses on one file
 * open it once: right after a compaction installs its outputs, every client
 * read that lands in them would otherwise read the same index and filter
 * (hundreds of KiB each) at the same moment. */
static int find_table_cls(table_cache *tc, const file_meta *f, io_class open_cls, cache_handle **out)
{
    uint8_t key[8];
    enc_u64(key, f->number);
    cache_handle *h = cache_lookup(tc->tables, key, sizeof key);
    if (h) {
        *out = h;
        return 0;
    }
    table_load mine = {f->number, NULL};
    h = load_claim(tc, &mine, key, sizeof key);
    if (h) {
        *out = h;
        return 0;
    }
    int rc = open_table(tc, f, open_cls, key, sizeof key, out);
    load_release(tc, &mine);
    return rc;
}

static int find_table(table_cache *tc, const file_meta *f, cache_handle **out)
{
    return find_table_cls(tc, f, IO_USER_READ, out);
}

int table_cache_find(table_cache *tc, const file_meta *f, cache_handle **h) { return find_table(tc, f, h); }

table *table_cache_table(cache_handle *h) { return ((table_entry *)cache_value(h))->t; }

int table_cache_full(table_cache *tc)
{
    cache_stats cs;
    cache_get_stats(tc->tables, &cs);
    return tc->max_bytes && cs.usage + tc->min_charge > cs.capacity;
}

void table_cache_release(table_cache *tc, cache_handle *h) { cache_release(tc->tables, h); }

int table_cache_preload(table_cache *tc, const file_meta *f, io_class cls)
{
    cache_handle *h;
    TKV_TRY(find_table_cls(tc, f, cls, &h));
    cache_release(tc->tables, h);
    return 0;
}

int table_cache_get(table_cache *tc, const file_meta *f, tkv_slice ukey, uint64_t seq, ikey_type *type, tkv_buf *val)
{
    cache_handle *h;
    TKV_TRY(find_table(tc, f, &h));
    int rc = table_get(table_cache_table(h), ukey, seq, type, val);
    cache_release(tc->tables, h);
    return rc;
}

void table_cache_evict(table_cache *tc, uint64_t number)
{
    uint8_t key[8];
    enc_u64(key, number);
    cache_erase(tc->tables, key, sizeof key);
}

/* ------------------------------------------------------------ error iterator */

typedef struct error_iter {
    tkv_it base;
    int code;
} error_iter;

static int ei_valid(tkv_it *it)
{
    (void)it;
    return 0;
}
static void ei_nop(tkv_it *it) { (void)it; }
static void ei_seek(tkv_it *it, tkv_slice t)
{
    (void)it;
    (void)t;
}
static tkv_slice ei_empty(tkv_it *it)
{
    (void)it;
    return slice(NULL, 0);
}
static int ei_status(tkv_it *it) { return ((error_iter *)it)->code; }
static void ei_destroy(tkv_it *it) { free(it); }
static const tkv_it_ops error_ops = {ei_valid, ei_nop,   ei_nop,   ei_seek,   ei_nop,
                                     ei_nop,   ei_empty, ei_empty, ei_status, ei_destroy};

tkv_it *error_iter_new(int code)
{
    error_iter *e = malloc(sizeof *e);
    if (!e) return NULL;
    e->base.ops = &error_ops;
    e->code = code;
    return &e->base;
}

/* ------------------------------------------------------------ pinned table iterator */

typedef struct pinned_iter {
    tkv_it base;
    tkv_it *inner;
    table_cache *tc;
    cache_handle *h;
} pinned_iter;

static int pi_valid(tkv_it *it) { return it_valid(((pinned_iter *)it)->inner); }
static void pi_first(tkv_it *it) { it_seek_first(((pinned_iter *)it)->inner); }
static void pi_last(tkv_it *it) { it_seek_last(((pinned_iter *)it)->inner); }
static void pi_seek(tkv_it *it, tkv_slice t) { it_seek(((pinned_iter *)it)->inner, t); }
static void pi_next(tkv_it *it) { it_next(((pinned_iter *)it)->inner); }
static void pi_prev(tkv_it *it) { it_prev(((pinned_iter *)it)->inner); }
static tkv_slice pi_key(tkv_it *it) { return it_key(((pinned_iter *)it)->inner); }
static tkv_slice pi_value(tkv_it *it) { return it_value(((pinned_iter *)it)->inner); }
static int pi_status(tkv_it *it) { return it_status(((pinned_iter *)it)->inner); }
static void pi_destroy(tkv_it *it)
{
    pinned_iter *p = (pinned_iter *)it;
    it_destroy(p->inner); /* before the table can be closed */
    cache_release(p->tc->tables, p->h);
    free(p);
}
static const tkv_it_ops pinned_ops = {pi_valid, pi_first, pi_last,  pi_seek,   pi_next,
                                      pi_prev,  pi_key,   pi_value, pi_status, pi_destroy};

tkv_it *table_cache_iter(table_cache *tc, const file_meta *f, io_ring *ring, table_prefetch_stats *st)
{
    cache_handle *h;
    int rc = find_table(tc, f, &h);
    if (rc < 0) return error_iter_new(rc);
    pinned_iter *p = malloc(sizeof *p);
    tkv_it *inner = p ? table_iter_async(table_cache_table(h), ring, st) : NULL;
    if (!inner) {
        free(p);
        cache_release(tc->tables, h);
        return error_iter_new(tkv_err(TKV_NO_MEMORY, "out of memory creating a table iterator"));
    }
    p->base.ops = &pinned_ops;
    p->inner = inner;
    p->tc = tc;
    p->h = h;
    return &p->base;
}

/* ------------------------------------------------------------ level iterator */

/* Invariant: when `cur` is non-NULL it iterates files[idx]; moving off either
 * end of a file opens the neighbour (skipping empty files). A seek within
 * the file `cur` iterates keeps it (and its readahead and seek prefetch). */
typedef struct level_iter {
    tkv_it base;
    table_cache *tc;
    file_meta *const *files;
    size_t n;
    size_t idx;
    tkv_it *cur;
    int status; /* error from opening a file */
    io_ring *ring;
    table_prefetch_stats *pst;
} level_iter;

static void li_open(level_iter *li, size_t idx)
{
    if (li->cur && li->idx == idx) return;
    it_destroy(li->cur);
    li->cur = NULL;
    li->idx = idx;
    if (idx >= li->n) return;
    li->cur = table_cache_iter(li->tc, li->files[idx], li->ring, li->pst);
    if (!li->cur) li->status = tkv_err(TKV_NO_MEMORY, "out of memory opening a level iterator");
    else if (it_status(li->cur) < 0 && !li->status) li->status = it_status(li->cur);
}

static int li_valid(tkv_it *it)
{
    level_iter *li = (level_iter *)it;
    return li->status == 0 && li->cur && it_valid(li->cur);
}

/* li_skip_forward -- while the current file is exhausted, go to the next. */
static void li_skip_forward(level_iter *li)
{
    while (li->status == 0 && li->cur && !it_valid(li->cur)) {
        if (it_status(li->cur) < 0) {
            li->status = it_status(li->cur);
            return;
        }
        if (li->idx + 1 >= li->n) return;
        li_open(li, li->idx + 1);
        if (li->cur) it_seek_first(li->cur);
    }
}

static void li_skip_backward(level_iter *li)
{
    while (li->status == 0 && li->cur && !it_valid(li->cur)) {
        if (it_status(li->cur) < 0) {
            li->status = it_status(li->cur);
            return;
        }
        if (li->idx == 0) return;
        li_open(li, li->idx - 1);
        if (li->cur) it_seek_last(li->cur);
    }
}

static void li_first(tkv_it *it)
{
    level_iter *li = (level_iter *)it;
    li_open(li, 0);
    if (li->cur) it_seek_first(li->cur);
    li_skip_forward(li);
}

static void li_last(tkv_it *it)
{
    level_iter *li = (level_iter *)it;
    li_open(li, li->n ? li->n - 1 : 0);
    if (li->cur) it_seek_last(li->cur);
    li_skip_backward(li);
}

/* li_find -- the first file whose largest key >= target (n if none). */
static size_t li_find(const level_iter *li, tkv_slice target)
{
    size_t lo = 0, hi = li->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const tkv_buf *lg = &li->files[mid]->largest;
        if (ikey_cmp(slice(lg->data, lg->len), target) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static void li_seek(tkv_it *it, tkv_slice target)
{
    level_iter *li = (level_iter *)it;
    li_open(li, li_find(li, target));
    if (li->cur) it_seek(li->cur, target);
    li_skip_forward(li);
}

static void li_next(tkv_it *it)
{
    level_iter *li = (level_iter *)it;
    if (!li_valid(it)) return;
    it_next(li->cur);
    li_skip_forward(li);
}

static void li_prev(tkv_it *it)
{
    level_iter *li = (level_iter *)it;
    if (!li_valid(it)) return;
    it_prev(li->cur);
    li_skip_backward(li);
}

static tkv_slice li_key(tkv_it *it) { return it_key(((level_iter *)it)->cur); }
static tkv_slice li_value(tkv_it *it) { return it_value(((level_iter *)it)->cur); }
static int li_status(tkv_it *it)
{
    level_iter *li = (level_iter *)it;
    if (li->status) return li->status;
    return li->cur ? it_status(li->cur) : 0;
}
static void li_destroy(tkv_it *it)
{
    level_iter *li = (level_iter *)it;
    it_destroy(li->cur);
    free(li);
}
static const tkv_it_ops level_ops = {li_valid, li_first, li_last,  li_seek,   li_next,
                                     li_prev,  li_key,   li_value, li_status, li_destroy};

static const tkv_it_ops level_ops;

int table_cache_prefetch_seek(tkv_it *it, tkv_slice target)
{
    if (it->ops == &pinned_ops) return table_iter_prefetch_seek(((pinned_iter *)it)->inner, target);
    if (it->ops != &level_ops) return 0;
    level_iter *li = (level_iter *)it;
    size_t idx = li_find(li, target);
    if (idx >= li->n || li->status) return 0;
    li_open(li, idx); /* the seek keeps it */
    return li->cur ? table_cache_prefetch_seek(li->cur, target) : 0;
}

tkv_it *level_iter_new(table_cache *tc, file_meta *const *files, size_t n, io_ring *ring, table_prefetch_stats *st)
{
    level_iter *li = calloc(1, sizeof *li);
    if (!li) return NULL;
    li->ring = ring;
    li->pst = st;
    li->base.ops = &level_ops;
    li->tc = tc;
    li->files = files;
    li->n = n;
    li->idx = n;
    return &li->base;
}
