// SPDX-License-Identifier: Apache-2.0
/*
 * test_rangedel_threads.c -- range deletions under concurrency (also run under
 * ThreadSanitizer: make tsan).
 *
 * Writer threads each own a group of keys "g<w>/<nn>" and rewrite it again and
 * again with one batch: a range deletion of the whole group, then puts of
 * generation g's keys -- count(g) of them, each valued "<g>". Reader threads
 * meanwhile read groups by a bounded iterator (at the latest state or at a
 * snapshot, forward or backward) and by one multi_get of every key the group
 * can hold, and check what a batch guarantees: they see one generation whole,
 * with exactly its keys. A maintenance thread flushes and compacts, so the
 * batches' tombstones and keys are read from every tier while columns and
 * compactions move them. Small memtables and pool (testutil) keep data moving.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

#define WRITERS   3
#define READERS   2
#define GROUP_MAX 16

typedef struct shared {
    tkv_db *db;
    unsigned gens; /* generations each writer writes */
    int writers_left;
    int errors; /* failures, counted (cmocka asserts only on the main thread) */
    char first_error[256];
} shared;

typedef struct warg {
    shared *s;
    int w;
} warg;

/* count -- how many keys generation g of a group has: 1..GROUP_MAX. */
static unsigned count(unsigned g) { return 1 + (g * 7u) % GROUP_MAX; }

static void failf(shared *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void failf(shared *s, const char *fmt, ...)
{
    if (__atomic_fetch_add(&s->errors, 1, __ATOMIC_ACQ_REL) == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(s->first_error, sizeof s->first_error, fmt, ap);
        va_end(ap);
    }
}

static size_t gkey(int w, unsigned i, char *b) { return (size_t)snprintf(b, 16, "g%d/%02u", w, i); }

static void *writer(void *p)
{
    warg *a = p;
    shared *s = a->s;
    tkv_batch *b = tkv_batch_new();
    char lo[8], hi[8], k[16], v[16];
    snprintf(lo, sizeof lo, "g%d/", a->w);
    snprintf(hi, sizeof hi, "g%d0", a->w); /* '0' follows '/': every key of the group is below */
    for (unsigned g = 1; g <= s->gens && !s->errors; g++) {
        tkv_batch_clear(b);
        int rc = tkv_batch_delete_range(b, lo, strlen(lo), hi, strlen(hi));
        for (unsigned i = 0; rc == TKV_OK && i < count(g); i++) {
            size_t vn = (size_t)snprintf(v, sizeof v, "%u", g);
            rc = tkv_batch_put(b, k, gkey(a->w, i, k), v, vn);
        }
        if (rc == TKV_OK) rc = tkv_write(s->db, b, 0);
        if (rc != TKV_OK) failf(s, "writer %d gen %u: %d %s", a->w, g, rc, tkv_errmsg());
    }
    tkv_batch_free(b);
    __atomic_fetch_sub(&s->writers_left, 1, __ATOMIC_ACQ_REL);
    return NULL;
}

/* check_scan -- a bounded iterator over group w (at snap or the latest
 * state, forward or backward): one generation g, keys 0..count(g)-1. */
static void check_scan(shared *s, int w, const tkv_snapshot *snap, int backward)
{
    char lo[8], hi[8];
    snprintf(lo, sizeof lo, "g%d/", w);
    snprintf(hi, sizeof hi, "g%d0", w);
    tkv_read_options *ro = tkv_read_options_new();
    tkv_read_options_set_snapshot(ro, snap);
    tkv_read_options_set_bounds(ro, lo, strlen(lo), hi, strlen(hi));
    tkv_iter *it = NULL;
    int rc = tkv_iter_new_opt(s->db, ro, &it);
    tkv_read_options_free(ro);
    if (rc != TKV_OK) {
        failf(s, "iter_new: %d", rc);
        return;
    }
    unsigned gen = 0, n = 0, seen[GROUP_MAX] = {0};
    if (backward) tkv_iter_seek_last(it);
    else tkv_iter_seek_first(it);
    for (; tkv_iter_valid(it); backward ? tkv_iter_prev(it) : tkv_iter_next(it)) {
        size_t kn, vn;
        const char *k = tkv_iter_key(it, &kn), *v = tkv_iter_value(it, &vn);
        char vb[16] = {0};
        memcpy(vb, v, vn < 15 ? vn : 15);
        unsigned g = (unsigned)strtoul(vb, NULL, 10), i = kn == 5 ? (unsigned)strtoul(k + 3, NULL, 10) : GROUP_MAX;
        if (n++ == 0) gen = g;
        if (g != gen || i >= GROUP_MAX || seen[i]++) {
            failf(s, "group %d: key %.*s value %s after gen %u (%u keys)", w, (int)kn, k, vb, gen, n);
            break;
        }
    }
    if (tkv_iter_status(it) != TKV_OK) failf(s, "iterator status %d", tkv_iter_status(it));
    if (n && n != count(gen)) failf(s, "group %d gen %u: %u keys, want %u", w, gen, n, count(gen));
    for (unsigned i = 0; n && i < count(gen); i++)
        if (!seen[i]) failf(s, "group %d gen %u: key %u missing", w, gen, i);
    tkv_iter_free(it);
}

/* check_mget -- every key group w can hold, by one multi_get at a snapshot:
 * keys 0..count(g)-1 of one generation g, the rest absent. */
static void check_mget(shared *s, int w)
{
    char kb[GROUP_MAX][16];
    const void *kp[GROUP_MAX];
    size_t kl[GROUP_MAX], vl[GROUP_MAX];
    void *vals[GROUP_MAX];
    int st[GROUP_MAX];
    for (unsigned i = 0; i < GROUP_MAX; i++) {
        kl[i] = gkey(w, i, kb[i]);
        kp[i] = kb[i];
    }
    if (tkv_multi_get(s->db, NULL, GROUP_MAX, kp, kl, vals, vl, st) != TKV_OK) {
        failf(s, "multi_get failed");
        return;
    }
    unsigned gen = 0, n = 0;
    for (unsigned i = 0; i < GROUP_MAX; i++) {
        if (st[i] != TKV_OK) continue;
        char vb[16] = {0};
        memcpy(vb, vals[i], vl[i] < 15 ? vl[i] : 15);
        unsigned g = (unsigned)strtoul(vb, NULL, 10);
        if (n++ == 0) gen = g;
        if (g != gen || i >= count(g)) failf(s, "multi_get group %d: key %u of gen %u beside gen %u", w, i, g, gen);
        tkv_free(vals[i]);
    }
    if (n && n != count(gen)) failf(s, "multi_get group %d gen %u: %u keys, want %u", w, gen, n, count(gen));
}

static void *reader(void *p)
{
    warg *a = p;
    shared *s = a->s;
    tu_rng r;
    tu_rng_init(&r, tu_seed() + (uint64_t)a->w);
    while (__atomic_load_n(&s->writers_left, __ATOMIC_ACQUIRE) > 0 && !s->errors) {
        int w = (int)tu_rng_below(&r, WRITERS);
        uint64_t how = tu_rng_below(&r, 3);
        if (how == 0) {
            const tkv_snapshot *snap = tkv_snapshot_new(s->db);
            check_scan(s, w, snap, (int)tu_rng_below(&r, 2));
            check_scan(s, w, snap, (int)tu_rng_below(&r, 2)); /* the same once more, later */
            tkv_snapshot_free(s->db, snap);
        } else if (how == 1) {
            check_scan(s, w, NULL, (int)tu_rng_below(&r, 2));
        } else {
            check_mget(s, w);
        }
    }
    return NULL;
}

static void *maint(void *p)
{
    shared *s = p;
    while (__atomic_load_n(&s->writers_left, __ATOMIC_ACQUIRE) > 0 && !s->errors) {
        int rc = tkv_flush(s->db);
        if (rc == TKV_OK) rc = tkv_compact_range(s->db, "g1", 2, "g2", 2);
        if (rc != TKV_OK) failf(s, "maintenance: %d %s", rc, tkv_errmsg());
    }
    return NULL;
}

static void run_threads(const char *l0)
{
    char *dir = tu_tmpdir("rdel-threads");
    tkv_options *o = tu_small_options();
    assert_int_equal(tkv_options_set(o, "l0", l0), TKV_OK);
    shared s = {.db = tu_open_ok(dir, o), .gens = 400 * tu_scale(), .writers_left = WRITERS};
    pthread_t wt[WRITERS], rt[READERS], mt;
    warg wa[WRITERS], ra[READERS];
    for (int i = 0; i < WRITERS; i++) {
        wa[i] = (warg){&s, i};
        assert_int_equal(pthread_create(&wt[i], NULL, writer, &wa[i]), 0);
    }
    for (int i = 0; i < READERS; i++) {
        ra[i] = (warg){&s, i};
        assert_int_equal(pthread_create(&rt[i], NULL, reader, &ra[i]), 0);
    }
    assert_int_equal(pthread_create(&mt, NULL, maint, &s), 0);
    for (int i = 0; i < WRITERS; i++) pthread_join(wt[i], NULL);
    for (int i = 0; i < READERS; i++) pthread_join(rt[i], NULL);
    pthread_join(mt, NULL);
    if (s.errors) fail_msg("%s: %d errors, the first: %s", l0, s.errors, s.first_error);
    for (int w = 0; w < WRITERS; w++) { /* at rest: the last generation */
        check_scan(&s, w, NULL, 0);
        check_mget(&s, w);
    }
    if (s.errors) fail_msg("%s at rest: %s", l0, s.first_error);
    char *lv = tkv_property(s.db, "tkv.levels");
    fprintf(stderr, "# %s: tkv.levels:\n%s", l0, lv);
    tkv_free(lv);
    tu_close_ok(s.db);
    tkv_options_free(o);
    assert_int_equal(tkv_destroy(dir), TKV_OK);
    tu_tmpdir_free(dir);
}

static void threads_matrix(void **state)
{
    (void)state;
    run_threads("matrix");
}

static void threads_sst(void **state)
{
    (void)state;
    run_threads("sst");
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {cmocka_unit_test(threads_matrix), cmocka_unit_test(threads_sst)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
