// SPDX-License-Identifier: Apache-2.0
/*
 * test_cache.c -- the sharded LRU block cache (src/sst/cache.c): hits and
 * misses, LRU eviction by charge, pinning, replace/erase semantics with exact
 * deleter counts, capacity 0, stats, set_capacity, table growth, a re-entrant
 * deleter, and a multi-threaded random workload checked against its counters
 * (run it under ASan and TSan too).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include <cmocka.h>

#include "sst/cache.h"
#include "testutil.h"

/* ---------------------------------------------------------------- helpers */

/* A value for the single-threaded tests: counts its own deletions and records
 * the order in which values were deleted. */
typedef struct tval {
    int id;
    int deleted; /* deleter calls for this value: must end at exactly 1 */
} tval;

#define MAX_VALS 20000
static tval vals[MAX_VALS];
static int del_order[MAX_VALS];
static int ndel;

static void reset_vals(void)
{
    for (int i = 0; i < MAX_VALS; i++) vals[i] = (tval){.id = i, .deleted = 0};
    ndel = 0;
}

static void tval_deleter(const void *key, size_t klen, void *value)
{
    tval *v = value;
    char want[32];
    int n = snprintf(want, sizeof want, "k%d", v->id);
    /* keys of these tests are "k<id>" for value id (except replace tests,
     * which use value ids >= 1000 under key "k"); the key must be intact. */
    if (v->id < 1000) {
        assert_int_equal(klen, (size_t)n);
        assert_memory_equal(key, want, klen);
    }
    v->deleted++;
    if (ndel < MAX_VALS) del_order[ndel++] = v->id;
}

static cache_handle *ins(tkv_cache *c, int id, size_t charge)
{
    char k[32];
    int n = snprintf(k, sizeof k, "k%d", id);
    cache_handle *h = cache_insert(c, k, (size_t)n, &vals[id], charge, tval_deleter);
    assert_non_null(h);
    assert_ptr_equal(cache_value(h), &vals[id]);
    return h;
}

static void ins_rel(tkv_cache *c, int id, size_t charge) { cache_release(c, ins(c, id, charge)); }

/* look -- lookup of "k<id>" (NULL if absent). */
static cache_handle *look(tkv_cache *c, int id)
{
    char k[32];
    int n = snprintf(k, sizeof k, "k%d", id);
    return cache_lookup(c, k, (size_t)n);
}

/* present -- 1 if "k<id>" is cached (checks its value; releases the handle). */
static int present(tkv_cache *c, int id)
{
    cache_handle *h = look(c, id);
    if (!h) return 0;
    assert_ptr_equal(cache_value(h), &vals[id]);
    cache_release(c, h);
    return 1;
}

static cache_stats stats(tkv_cache *c)
{
    cache_stats s;
    cache_get_stats(c, &s);
    return s;
}

/* ---------------------------------------------------------------- basic */

static void test_hit_miss(void **state)
{
    (void)state;
    reset_vals();
    tkv_cache *c = cache_new(1000, 0);
    assert_non_null(c);
    assert_null(look(c, 1));
    ins_rel(c, 1, 10);
    assert_int_equal(vals[1].deleted, 0);
    cache_handle *h = look(c, 1);
    assert_non_null(h);
    assert_ptr_equal(cache_value(h), &vals[1]);
    cache_release(c, h);
    assert_null(look(c, 2));
    /* keys are compared by bytes, not prefix: "k1" is not "k10" */
    assert_null(look(c, 10));
    cache_stats s = stats(c);
    assert_int_equal(s.hits, 1);
    assert_int_equal(s.misses, 3);
    assert_int_equal(s.inserts, 1);
    assert_int_equal(s.evictions, 0);
    assert_int_equal(s.usage, 10);
    assert_int_equal(s.pinned, 0);
    /* an empty key is a key like any other */
    int zero = 0;
    cache_handle *e = cache_insert(c, "", 0, &zero, 1, NULL);
    assert_non_null(e);
    cache_release(c, e);
    e = cache_lookup(c, NULL, 0);
    assert_non_null(e);
    assert_ptr_equal(cache_value(e), &zero);
    cache_release(c, e);
    cache_free(c);
    assert_int_equal(vals[1].deleted, 1);
    cache_free(NULL);
}

static void test_lru_eviction_by_charge(void **state)
{
    (void)state;
    reset_vals();
    tkv_cache *c = cache_new(100, 0); /* one shard: exact LRU */
    assert_non_null(c);
    for (int i = 0; i < 10; i++) ins_rel(c, i, 10);
    assert_int_equal(stats(c).usage, 100);
    assert_int_equal(ndel, 0);
    assert_true(present(c, 0)); /* 0 becomes the most recently used */
    ins_rel(c, 10, 25);         /* 125 > 100: evicts 1, 2, 3 (the three oldest) */
    assert_int_equal(ndel, 3);
    assert_int_equal(del_order[0], 1);
    assert_int_equal(del_order[1], 2);
    assert_int_equal(del_order[2], 3);
    assert_int_equal(stats(c).usage, 95);
    assert_int_equal(stats(c).evictions, 3);
    for (int i = 1; i <= 3; i++) assert_false(present(c, i));
    /* order of use now (oldest first): 4..9, 0, 10 (the presence checks of
     * 1..3 missed and did not touch anything). Touch 4 and 5. */
    assert_true(present(c, 4));
    assert_true(present(c, 5));
    /* a 70-byte entry needs 65 bytes freed: 6,7,8,9,0,10 = 10*5 + 25 = 75 */
    ins_rel(c, 11, 70);
    int want[] = {1, 2, 3, 6, 7, 8, 9, 0, 10};
    assert_int_equal(ndel, 9);
    for (int i = 0; i < 9; i++) assert_int_equal(del_order[i], want[i]);
    assert_true(present(c, 4));
    assert_true(present(c, 5));
    assert_true(present(c, 11));
    assert_int_equal(stats(c).usage, 90);
    /* an entry larger than the whole cache is inserted, then evicted on release */
    cache_handle *big = ins(c, 12, 500); /* evicts every unpinned entry */
    assert_int_equal(vals[12].deleted, 0);
    assert_int_equal(stats(c).usage, 500);
    assert_int_equal(vals[4].deleted + vals[5].deleted + vals[11].deleted, 3);
    assert_ptr_equal(cache_value(big), &vals[12]);
    cache_release(c, big);
    assert_int_equal(vals[12].deleted, 1);
    assert_int_equal(stats(c).usage, 0);
    cache_free(c);
    for (int i = 0; i <= 12; i++) assert_int_equal(vals[i].deleted, 1);
}

static void test_pinned_survive_eviction(void **state)
{
    (void)state;
    reset_vals();
    tkv_cache *c = cache_new(100, 0);
    assert_non_null(c);
    cache_handle *a = ins(c, 1, 60); /* oldest, but pinned */
    ins_rel(c, 2, 30);
    ins_rel(c, 3, 30); /* 120 > 100: the oldest unpinned (2) goes, not 1 */
    assert_int_equal(vals[1].deleted, 0);
    assert_int_equal(vals[2].deleted, 1);
    assert_true(present(c, 1));
    cache_stats s = stats(c);
    assert_int_equal(s.usage, 90);
    assert_int_equal(s.pinned, 60);

    /* Pin everything, then overflow: usage exceeds capacity while pinned. */
    cache_handle *b = look(c, 3);
    assert_non_null(b);
    cache_handle *d = ins(c, 4, 50);
    s = stats(c);
    assert_int_equal(s.usage, 140);
    assert_int_equal(s.pinned, 140);
    assert_int_equal(s.evictions, 1);
    for (int i = 1; i <= 4; i++) assert_int_equal(vals[i].deleted, i == 2);
    assert_ptr_equal(cache_value(a), &vals[1]);
    /* Releasing 3 makes it the only evictable entry: it goes (140 > 100). */
    cache_release(c, b);
    assert_int_equal(vals[3].deleted, 1);
    assert_int_equal(stats(c).usage, 110);
    /* Releasing 1 (oldest) makes it evictable: 110 > 100, so it goes. */
    cache_release(c, a);
    assert_int_equal(vals[1].deleted, 1);
    assert_int_equal(stats(c).usage, 50);
    cache_release(c, d);
    assert_int_equal(vals[4].deleted, 0);
    assert_true(present(c, 4));
    assert_int_equal(stats(c).pinned, 0);
    /* Several handles on one entry: only the last release unpins it. */
    cache_handle *h1 = look(c, 4), *h2 = look(c, 4);
    assert_non_null(h1);
    assert_ptr_equal(h1, h2);
    assert_int_equal(stats(c).pinned, 50);
    cache_set_capacity(c, 0);
    assert_int_equal(vals[4].deleted, 0);
    cache_release(c, h1);
    assert_int_equal(vals[4].deleted, 0);
    assert_int_equal(stats(c).pinned, 50);
    cache_release(c, h2);
    assert_int_equal(vals[4].deleted, 1);
    s = stats(c);
    assert_int_equal(s.usage, 0);
    assert_int_equal(s.pinned, 0);
    cache_free(c);
    for (int i = 1; i <= 4; i++) assert_int_equal(vals[i].deleted, 1);
}

static void test_replace(void **state)
{
    (void)state;
    reset_vals();
    tkv_cache *c = cache_new(1000, 2);
    assert_non_null(c);
    cache_handle *h1 = cache_insert(c, "k", 1, &vals[1001], 10, tval_deleter);
    assert_non_null(h1);
    cache_handle *h2 = cache_insert(c, "k", 1, &vals[1002], 20, tval_deleter);
    assert_non_null(h2);
    /* the new value is visible; the old handle still sees the old value */
    cache_handle *l = cache_lookup(c, "k", 1);
    assert_ptr_equal(cache_value(l), &vals[1002]);
    assert_ptr_equal(cache_value(h1), &vals[1001]);
    assert_int_equal(vals[1001].deleted, 0);
    cache_stats s = stats(c);
    assert_int_equal(s.usage, 20);  /* the replaced entry is out of the cache */
    assert_int_equal(s.pinned, 30); /* ... but still pinned */
    cache_release(c, h1);
    assert_int_equal(vals[1001].deleted, 1);
    cache_release(c, l);
    cache_release(c, h2);
    assert_int_equal(vals[1002].deleted, 0);
    /* replacing an unpinned entry deletes the old value at once */
    cache_release(c, cache_insert(c, "k", 1, &vals[1003], 30, tval_deleter));
    assert_int_equal(vals[1002].deleted, 1);
    assert_int_equal(vals[1003].deleted, 0);
    s = stats(c);
    assert_int_equal(s.usage, 30);
    assert_int_equal(s.inserts, 3);
    assert_int_equal(s.evictions, 0);
    /* re-inserting the same value pointer is two values to the cache: the
     * deleter runs once per insert */
    cache_release(c, cache_insert(c, "k", 1, &vals[1003], 30, tval_deleter));
    assert_int_equal(vals[1003].deleted, 1);
    cache_free(c);
    assert_int_equal(vals[1001].deleted, 1);
    assert_int_equal(vals[1002].deleted, 1);
    assert_int_equal(vals[1003].deleted, 2);
}

static void test_erase(void **state)
{
    (void)state;
    reset_vals();
    tkv_cache *c = cache_new(1000, 4);
    assert_non_null(c);
    ins_rel(c, 1, 10);
    ins_rel(c, 2, 10);
    cache_erase(c, "k1", 2);
    assert_int_equal(vals[1].deleted, 1);
    assert_false(present(c, 1));
    assert_true(present(c, 2));
    assert_int_equal(stats(c).usage, 10);
    cache_erase(c, "k1", 2); /* absent: no-op */
    cache_erase(c, "nope", 4);
    assert_int_equal(vals[1].deleted, 1);
    /* erase while pinned: gone from the cache, value alive until release */
    cache_handle *h = look(c, 2);
    assert_non_null(h);
    cache_erase(c, "k2", 2);
    assert_false(present(c, 2));
    assert_int_equal(vals[2].deleted, 0);
    assert_ptr_equal(cache_value(h), &vals[2]);
    cache_stats s = stats(c);
    assert_int_equal(s.usage, 0);
    assert_int_equal(s.pinned, 10);
    /* a new entry under the erased key does not disturb the old handle */
    ins_rel(c, 3, 5);
    cache_handle *n = cache_insert(c, "k2", 2, &vals[3], 5, NULL);
    assert_non_null(n);
    cache_release(c, n);
    cache_release(c, h);
    assert_int_equal(vals[2].deleted, 1);
    cache_erase(c, "k2", 2);
    assert_int_equal(vals[3].deleted, 0); /* NULL deleter: nothing called */
    cache_free(c);
    assert_int_equal(vals[3].deleted, 1);
    assert_int_equal(ndel, 3);
}

static void test_capacity_zero(void **state)
{
    (void)state;
    reset_vals();
    tkv_cache *c = cache_new(0, 4);
    assert_non_null(c);
    cache_handle *h = ins(c, 1, 10);
    assert_ptr_equal(cache_value(h), &vals[1]);
    assert_false(present(c, 1)); /* not cached */
    cache_stats s = stats(c);
    assert_int_equal(s.usage, 0);
    assert_int_equal(s.pinned, 10);
    assert_int_equal(s.inserts, 1);
    assert_int_equal(s.capacity, 0);
    assert_int_equal(vals[1].deleted, 0);
    cache_release(c, h);
    assert_int_equal(vals[1].deleted, 1);
    assert_int_equal(stats(c).pinned, 0);
    cache_free(c);
    assert_int_equal(vals[1].deleted, 1);

    /* shrinking to 0 while an entry is pinned, then inserting its key again:
     * the new (uncached) value replaces the old one, never the reverse */
    reset_vals();
    c = cache_new(100, 0);
    assert_non_null(c);
    cache_handle *old = ins(c, 1, 10);
    cache_set_capacity(c, 0);
    assert_true(present(c, 1));
    cache_handle *nw = cache_insert(c, "k1", 2, &vals[1001], 10, tval_deleter);
    assert_non_null(nw);
    assert_false(present(c, 1));
    cache_release(c, old);
    assert_int_equal(vals[1].deleted, 1);
    cache_release(c, nw);
    assert_int_equal(vals[1001].deleted, 1);
    cache_free(c);
}

static void test_stats_and_ids(void **state)
{
    (void)state;
    reset_vals();
    tkv_cache *c = cache_new((size_t)1 << 20, -1); /* shards chosen from the capacity: 2 */
    assert_non_null(c);
    cache_stats s = stats(c);
    assert_int_equal(s.capacity, (size_t)1 << 20);
    assert_int_equal(s.usage + s.pinned + s.hits + s.misses + s.inserts + s.evictions, 0);
    for (int i = 0; i < 100; i++) ins_rel(c, i, 100 + (size_t)i);
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 50; i++) assert_true(present(c, i));
    for (int i = 100; i < 120; i++) assert_false(present(c, i));
    cache_handle *h[3] = {look(c, 7), look(c, 8), look(c, 7)};
    s = stats(c);
    assert_int_equal(s.inserts, 100);
    assert_int_equal(s.hits, 103);
    assert_int_equal(s.misses, 20);
    assert_int_equal(s.evictions, 0);
    assert_int_equal(s.usage, 100 * 100 + 99 * 100 / 2);
    assert_int_equal(s.pinned, 107 + 108);
    for (int i = 0; i < 3; i++) cache_release(c, h[i]);
    assert_int_equal(stats(c).pinned, 0);
    /* capacity is split over shards and reported as the total */
    cache_set_capacity(c, 1000003);
    assert_int_equal(stats(c).capacity, 1000003);

    uint64_t prev = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t id = cache_new_id(c);
        assert_true(id > prev);
        prev = id;
    }
    assert_int_equal(prev, 1000);
    cache_free(c);
    for (int i = 0; i < 100; i++) assert_int_equal(vals[i].deleted, 1);
}

static void test_set_capacity_shrink(void **state)
{
    (void)state;
    reset_vals();
    tkv_cache *c = cache_new(1000, 0);
    assert_non_null(c);
    for (int i = 0; i < 10; i++) ins_rel(c, i, 100);
    assert_int_equal(stats(c).usage, 1000);
    cache_set_capacity(c, 350);
    cache_stats s = stats(c);
    assert_int_equal(s.usage, 300);
    assert_int_equal(s.capacity, 350);
    assert_int_equal(s.evictions, 7);
    for (int i = 0; i < 10; i++) assert_int_equal(present(c, i), i >= 7);
    for (int i = 0; i < 7; i++) assert_int_equal(del_order[i], i);
    /* growing evicts nothing and makes room */
    cache_set_capacity(c, 2000);
    for (int i = 10; i < 20; i++) ins_rel(c, i, 100);
    assert_int_equal(stats(c).usage, 1300);
    assert_int_equal(stats(c).evictions, 7);
    cache_free(c);

    /* with shards: every shard fits its share afterwards */
    reset_vals();
    c = cache_new(100000, 3);
    assert_non_null(c);
    for (int i = 0; i < 1000; i++) ins_rel(c, i, 50);
    assert_int_equal(stats(c).usage, 50000);
    cache_set_capacity(c, 8000);
    s = stats(c);
    assert_true(s.usage <= 8000);
    assert_true(s.usage >= 8000 - 8 * 50); /* each shard is within one entry of its share */
    int live = 0;
    for (int i = 0; i < 1000; i++) live += present(c, i);
    assert_int_equal((size_t)live * 50, s.usage);
    assert_int_equal(s.evictions, (uint64_t)(1000 - live));
    assert_int_equal(ndel, 1000 - live);
    cache_free(c);
    for (int i = 0; i < 1000; i++) assert_int_equal(vals[i].deleted, 1);
}

static void test_many_keys_table_growth(void **state)
{
    (void)state;
    reset_vals();
    tkv_cache *c = cache_new((size_t)1 << 30, 1);
    assert_non_null(c);
    for (int i = 0; i < MAX_VALS; i++) ins_rel(c, i, 1);
    for (int i = 0; i < MAX_VALS; i++) assert_true(present(c, i));
    for (int i = 0; i < MAX_VALS; i += 2) {
        char k[32];
        int n = snprintf(k, sizeof k, "k%d", i);
        cache_erase(c, k, (size_t)n);
    }
    for (int i = 0; i < MAX_VALS; i++) assert_int_equal(present(c, i), i % 2);
    assert_int_equal(stats(c).usage, MAX_VALS / 2);
    cache_free(c);
    for (int i = 0; i < MAX_VALS; i++) assert_int_equal(vals[i].deleted, 1);
}

/* A deleter that calls back into the cache proves deleters run unlocked (with
 * one shard, a deleter run under the shard mutex would deadlock here). */
static tkv_cache *reentrant_cache;
static int reentrant_calls;
static void reentrant_deleter(const void *key, size_t klen, void *value)
{
    (void)value;
    reentrant_calls++;
    if (!reentrant_cache) return;
    cache_handle *h = cache_lookup(reentrant_cache, key, klen);
    assert_null(h); /* the entry left the cache before its deleter runs */
    cache_handle *o = cache_lookup(reentrant_cache, "other", 5);
    if (o) cache_release(reentrant_cache, o);
    cache_erase(reentrant_cache, "zzz", 3);
}

static void test_reentrant_deleter(void **state)
{
    (void)state;
    reset_vals();
    tkv_cache *c = cache_new(10, 0);
    assert_non_null(c);
    reentrant_cache = c;
    reentrant_calls = 0;
    int v = 0;
    cache_release(c, cache_insert(c, "a", 1, &v, 5, reentrant_deleter));
    ins_rel(c, 1, 5);
    cache_release(c, cache_insert(c, "other", 5, &v, 5, reentrant_deleter)); /* evicts "a" */
    assert_int_equal(reentrant_calls, 1);
    assert_true(present(c, 1));
    cache_handle *h = cache_insert(c, "b", 1, &v, 1, reentrant_deleter); /* evicts "other" */
    assert_int_equal(reentrant_calls, 2);
    cache_erase(c, "b", 1); /* pinned: deleter waits for the release */
    assert_int_equal(reentrant_calls, 2);
    cache_release(c, h);
    assert_int_equal(reentrant_calls, 3);
    reentrant_cache = NULL; /* no calls into a cache being freed */
    cache_free(c);
    assert_int_equal(reentrant_calls, 3);
    assert_int_equal(vals[1].deleted, 1);
}

/* ---------------------------------------------------------------- concurrency */

#define CONC_KEYS 1000
#define CONC_HELD 8

typedef struct cval {
    uint32_t key_id;
    uint32_t charge;
    _Atomic int deleted;
} cval;

static _Atomic uint64_t conc_deleted;
static _Atomic uint64_t conc_inserted;
static _Atomic uint64_t conc_errors;

static void cval_deleter(const void *key, size_t klen, void *value)
{
    cval *v = value;
    char k[16];
    int n = snprintf(k, sizeof k, "c%u", v->key_id);
    if (klen != (size_t)n || memcmp(key, k, klen) != 0) atomic_fetch_add(&conc_errors, 1);
    if (atomic_fetch_add(&v->deleted, 1) != 0) atomic_fetch_add(&conc_errors, 1);
    atomic_fetch_add(&conc_deleted, 1);
    free(v);
}

typedef struct conc_arg {
    tkv_cache *c;
    uint64_t seed;
    int ops;
    int resizer;
} conc_arg;

static void *conc_worker(void *p)
{
    conc_arg *a = p;
    tu_rng r;
    tu_rng_init(&r, a->seed);
    cache_handle *held[CONC_HELD] = {0};
    for (int op = 0; op < a->ops; op++) {
        uint32_t id = (uint32_t)tu_rng_below(&r, CONC_KEYS);
        char k[16];
        int n = snprintf(k, sizeof k, "c%u", id);
        int slot = (int)tu_rng_below(&r, CONC_HELD);
        if (held[slot]) { /* most ops release something: handles stay few */
            cval *v = cache_value(held[slot]);
            if (atomic_load(&v->deleted) != 0) atomic_fetch_add(&conc_errors, 1);
            cache_release(a->c, held[slot]);
            held[slot] = NULL;
        }
        uint64_t what = tu_rng_below(&r, 100);
        cache_handle *h = NULL;
        if (what < 30) {
            cval *v = malloc(sizeof *v);
            if (!v) abort();
            v->key_id = id;
            v->charge = (uint32_t)tu_rng_range(&r, 1, 100);
            atomic_init(&v->deleted, 0);
            h = cache_insert(a->c, k, (size_t)n, v, v->charge, cval_deleter);
            if (!h) abort();
            atomic_fetch_add(&conc_inserted, 1);
        } else if (what < 90) {
            h = cache_lookup(a->c, k, (size_t)n);
            if (h) {
                cval *v = cache_value(h);
                if (v->key_id != id || atomic_load(&v->deleted) != 0) atomic_fetch_add(&conc_errors, 1);
            }
        } else if (what < 98) {
            cache_erase(a->c, k, (size_t)n);
        } else if (a->resizer && what == 98) {
            cache_set_capacity(a->c, (size_t)tu_rng_range(&r, 5000, 40000));
        } else {
            cache_stats s;
            cache_get_stats(a->c, &s);
            (void)cache_new_id(a->c);
        }
        if (h) {
            if (tu_rng_below(&r, 2)) cache_release(a->c, h); /* release at once */
            else if (!held[slot]) held[slot] = h;
            else cache_release(a->c, h);
        }
    }
    for (int i = 0; i < CONC_HELD; i++)
        if (held[i]) cache_release(a->c, held[i]);
    return NULL;
}

static void test_concurrent(void **state)
{
    (void)state;
    enum { NTHREADS = 4 };
    /* 16 shards, ~50 bytes a key on average, 1000 keys: capacity 20000 forces
     * evictions while entries are pinned in every thread. */
    tkv_cache *c = cache_new(20000, 4);
    assert_non_null(c);
    atomic_store(&conc_deleted, 0);
    atomic_store(&conc_inserted, 0);
    atomic_store(&conc_errors, 0);
    uint64_t seed = tu_seed();
    pthread_t th[NTHREADS];
    conc_arg args[NTHREADS];
    int ops = 300000 * (int)tu_scale();
    for (int i = 0; i < NTHREADS; i++) {
        args[i] = (conc_arg){.c = c, .seed = seed + (uint64_t)i * 7919, .ops = ops, .resizer = i == 0};
        assert_int_equal(pthread_create(&th[i], NULL, conc_worker, &args[i]), 0);
    }
    for (int i = 0; i < NTHREADS; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
    assert_int_equal(atomic_load(&conc_errors), 0);

    cache_stats s = stats(c);
    assert_int_equal(s.pinned, 0);
    assert_int_equal(s.inserts, atomic_load(&conc_inserted));
    assert_true(s.evictions > 0);
    assert_true(s.hits > 0 && s.misses > 0);
    assert_true(s.usage <= s.capacity);
    /* Count what is left: lookups of every key (no eviction can happen now,
     * since usage <= capacity and nothing else runs). */
    size_t live = 0, live_charge = 0;
    for (uint32_t id = 0; id < CONC_KEYS; id++) {
        char k[16];
        int n = snprintf(k, sizeof k, "c%u", id);
        cache_handle *h = cache_lookup(c, k, (size_t)n);
        if (!h) continue;
        cval *v = cache_value(h);
        assert_int_equal(v->key_id, id);
        assert_int_equal(atomic_load(&v->deleted), 0);
        live++;
        live_charge += v->charge;
        cache_release(c, h);
    }
    assert_int_equal(stats(c).usage, live_charge);
    assert_int_equal(atomic_load(&conc_deleted), s.inserts - live);
    assert_true(live > 0);
    cache_free(c);
    assert_int_equal(atomic_load(&conc_deleted), s.inserts);
    assert_int_equal(atomic_load(&conc_errors), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hit_miss),
        cmocka_unit_test(test_lru_eviction_by_charge),
        cmocka_unit_test(test_pinned_survive_eviction),
        cmocka_unit_test(test_replace),
        cmocka_unit_test(test_erase),
        cmocka_unit_test(test_capacity_zero),
        cmocka_unit_test(test_stats_and_ids),
        cmocka_unit_test(test_set_capacity_shrink),
        cmocka_unit_test(test_many_keys_table_growth),
        cmocka_unit_test(test_reentrant_deleter),
        cmocka_unit_test(test_concurrent),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
