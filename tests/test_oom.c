// SPDX-License-Identifier: Apache-2.0
/*
 * test_oom.c -- allocation failures become errors, never a crash (issue 23):
 * this test defines malloc, calloc, realloc, free and the aligned
 * allocators itself (forwarding to glibc's __libc_* functions), which
 * replaces them for the whole process -- the library and the C library's
 * own callers included -- and makes the n-th allocation after arming fail.
 *
 *  oom_sweep  a workload (open, puts, gets, a scan, a flush, a property,
 *             close) runs once per injected failure: every allocation of
 *             tkv_open in turn, then every allocation of the rest at a
 *             stride. Each call returns TKV_OK or an error (the failure may
 *             also land in a background thread: a background error), never
 *             crashes; then, without faults, the database reopens and holds
 *             every acknowledged write.
 *
 *  get_into_no_alloc  tkv_get_into of a value that fits the caller's buffer
 *             allocates nothing on the calling thread, from a memtable, a
 *             row or an SST (blocks cached), where tkv_get allocates.
 *
 * The workload keeps its expectations in static arrays: nothing of the test
 * allocates while a failure is armed. Sanitizer builds replace malloc
 * themselves: there the test is skipped with a message.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define OOM_INTERPOSE 0
#else
#define OOM_INTERPOSE 1
#endif

/* ---------------------------------------------------------------- the allocator */

static int g_countdown = -1;            /* allocations left before the armed failure; -1: none armed */
static uint64_t g_allocs;               /* allocations since the last oom_arm (relaxed) */
static _Thread_local uint64_t t_allocs; /* allocations by this thread, ever */

#if OOM_INTERPOSE
void *__libc_malloc(size_t n);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *p, size_t n);
void __libc_free(void *p);
void *__libc_memalign(size_t align, size_t n);

/* fail_now -- counts an allocation; 1 if it is the armed failure. */
static int fail_now(void)
{
    __atomic_fetch_add(&g_allocs, 1, __ATOMIC_RELAXED);
    t_allocs++;
    int left = __atomic_load_n(&g_countdown, __ATOMIC_ACQUIRE);
    while (left >= 0)
        if (__atomic_compare_exchange_n(&g_countdown, &left, left - 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return left == 0;
    return 0;
}

void *malloc(size_t n)
{
    if (fail_now()) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    if (fail_now()) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    if (n && fail_now()) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_realloc(p, n);
}

void free(void *p) { __libc_free(p); }

void *aligned_alloc(size_t align, size_t n)
{
    if (fail_now()) {
        errno = ENOMEM;
        return NULL;
    }
    return __libc_memalign(align, n);
}

void *memalign(size_t align, size_t n);
void *memalign(size_t align, size_t n) { return aligned_alloc(align, n); }

int posix_memalign(void **out, size_t align, size_t n)
{
    if (fail_now()) return ENOMEM;
    void *p = __libc_memalign(align, n);
    if (!p) return ENOMEM;
    *out = p;
    return 0;
}
#endif

/* oom_arm -- the allocation after n more fails (n < 0: none); counting restarts. */
static void oom_arm(int n)
{
    __atomic_store_n(&g_allocs, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&g_countdown, n, __ATOMIC_RELEASE);
}

/* oom_disarm -- 1 if the armed failure happened. */
static int oom_disarm(void) { return __atomic_exchange_n(&g_countdown, -1, __ATOMIC_ACQ_REL) < 0; }

/* ---------------------------------------------------------------- the workload */

#define NKEYS 400

static uint64_t g_open_allocs; /* allocations of the workload's tkv_open in the last run that opened */
static int g_acked[NKEYS];     /* the round whose value each key holds for sure, -1: never written */
static int g_maybe[NKEYS];     /* a put of this round returned an error: it may or may not have landed */

static int key_of(int i, char *k) { return snprintf(k, 16, "key%05d", i); }
static int value_of(int i, int round, char *v)
{
    return snprintf(v, 64, "value-%d-%d-%040d", i, round, i * 31 + round);
}

/* workload -- what a host does; every failure is a returned status. 0 if
 * tkv_open failed (nothing else ran). Allocates nothing itself. */
static int workload(const char *dir, const tkv_options *o, int round)
{
    tkv_db *db = NULL;
    if (tkv_open(dir, o, &db) != TKV_OK) return 0;
    g_open_allocs = __atomic_load_n(&g_allocs, __ATOMIC_RELAXED);
    char k[16], v[64];
    for (int i = 0; i < NKEYS; i++) {
        int kl = key_of(i, k), vl = value_of(i, round, v);
        int rc = tkv_put(db, k, (size_t)kl, v, (size_t)vl, i % 50 == 0 ? TKV_SYNC : 0);
        if (rc == TKV_OK) g_acked[i] = round, g_maybe[i] = -1;
        else g_maybe[i] = round;
    }
    for (int i = 0; i < NKEYS; i += 7) {
        void *got = NULL;
        size_t gl = 0;
        int kl = key_of(i, k);
        if (tkv_get(db, NULL, k, (size_t)kl, &got, &gl) == TKV_OK) tkv_free(got);
    }
    tkv_iter *it = NULL;
    if (tkv_iter_new(db, NULL, &it) == TKV_OK) {
        for (tkv_iter_seek_first(it); tkv_iter_valid(it); tkv_iter_next(it)) {}
        tkv_iter_free(it);
    }
    tkv_flush(db);
    tkv_free(tkv_property(db, "tkv.stats"));
    tkv_close(db);
    return 1;
}

/* verify -- without faults: every key holds its acknowledged round's value
 * (or the round of a failed put, which may have landed). */
static void verify(const char *dir, const tkv_options *o, int k)
{
    tkv_db *db = NULL;
    int rc = tkv_open(dir, o, &db);
    if (rc != TKV_OK) fail_msg("failure %d: reopen: %s: %s", k, tkv_strerror(rc), tkv_errmsg());
    char key[16], want[64], maybe[64];
    for (int i = 0; i < NKEYS; i++) {
        int kl = key_of(i, key);
        void *got = NULL;
        size_t gl = 0;
        rc = tkv_get(db, NULL, key, (size_t)kl, &got, &gl);
        int wl = g_acked[i] >= 0 ? value_of(i, g_acked[i], want) : 0;
        int ml = g_maybe[i] >= 0 ? value_of(i, g_maybe[i], maybe) : 0;
        int is_acked = rc == TKV_OK && wl && gl == (size_t)wl && !memcmp(got, want, gl);
        int is_maybe = rc == TKV_OK && ml && gl == (size_t)ml && !memcmp(got, maybe, gl);
        tkv_free(got);
        if (!is_acked && !is_maybe && !(rc == TKV_NOT_FOUND && !wl))
            fail_msg("failure %d: key %d: tkv_get = %s, acknowledged round %d, maybe round %d", k, i, tkv_strerror(rc),
                     g_acked[i], g_maybe[i]);
        if (is_maybe) g_acked[i] = g_maybe[i]; /* what is there now is what the next round builds on */
        g_maybe[i] = -1;
    }
    tu_close_ok(db);
}

static void oom_sweep(void **state)
{
    (void)state;
    if (!OOM_INTERPOSE) {
        print_message("skipped: the sanitizer runtime owns malloc in this build\n");
        skip();
    }
    char *dir = tu_tmpdir("oom");
    tkv_options *o = tu_small_options();
    for (int i = 0; i < NKEYS; i++) g_acked[i] = g_maybe[i] = -1;
    /* clean runs count the allocations of open (of an existing database: it
     * replays a WAL) and of the whole workload */
    oom_arm(1 << 30);
    assert_true(workload(dir, o, 0));
    oom_disarm();
    verify(dir, o, -1);
    oom_arm(1 << 30);
    assert_true(workload(dir, o, 0));
    uint64_t all = __atomic_load_n(&g_allocs, __ATOMIC_RELAXED), open_allocs = g_open_allocs;
    oom_disarm();
    verify(dir, o, -1);
    print_message("allocations: %llu in tkv_open, %llu in the whole workload\n", (unsigned long long)open_allocs,
                  (unsigned long long)all);
    assert_true(open_allocs > 10 && all > open_allocs);
    /* every allocation of open, then 150 spread over the rest */
    uint64_t stride = (all - open_allocs) / 150 + 1, runs = 0, hit = 0, opens_failed = 0;
    for (uint64_t k = 0; k < all + 50; k += k < open_allocs + 10 ? 1 : stride) {
        oom_arm((int)k);
        int opened = workload(dir, o, (int)(k % 1000) + 1);
        int failed = oom_disarm();
        runs++;
        hit += (uint64_t)failed;
        opens_failed += (uint64_t)!opened;
        verify(dir, o, (int)k);
    }
    print_message("%llu runs, %llu with a failed allocation, %llu of them refused by tkv_open\n",
                  (unsigned long long)runs, (unsigned long long)hit, (unsigned long long)opens_failed);
    assert_true(hit >= runs / 2);
    assert_true(opens_failed >= 10);
    tkv_options_free(o);
    tu_tmpdir_free(dir);
}

static void get_into_no_alloc(void **state)
{
    (void)state;
    if (!OOM_INTERPOSE) {
        print_message("skipped: the sanitizer runtime owns malloc in this build\n");
        skip();
    }
    char *dir = tu_tmpdir("oom-get-into");
    tkv_options *o = tu_small_options();
    tkv_db *db = tu_open_ok(dir, o);
    static char val[3000];
    memset(val, 'v', sizeof val);
    const char *keys[] = {"in-sst", "in-row", "in-mem"};
    for (int t = 0; t < 3; t++) {
        assert_int_equal(tkv_put(db, keys[t], strlen(keys[t]), val, sizeof val, 0), TKV_OK);
        if (t == 0) assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK);
        if (t == 1) assert_int_equal(tkv_flush(db), TKV_OK);
    }
    static char buf[4096];
    for (int t = 0; t < 3; t++) {
        size_t vl;
        assert_int_equal(tkv_get_into(db, NULL, keys[t], strlen(keys[t]), buf, sizeof buf, &vl), TKV_OK); /* warm */
        uint64_t before = t_allocs;
        for (int i = 0; i < 10; i++) {
            assert_int_equal(tkv_get_into(db, NULL, keys[t], strlen(keys[t]), buf, sizeof buf, &vl), TKV_OK);
            assert_int_equal(vl, sizeof val);
        }
        uint64_t into = t_allocs - before;
        void *v;
        before = t_allocs;
        assert_int_equal(tkv_get(db, NULL, keys[t], strlen(keys[t]), &v, &vl), TKV_OK);
        uint64_t get = t_allocs - before;
        tkv_free(v);
        print_message("%s: %llu allocations in 10 tkv_get_into, %llu in one tkv_get\n", keys[t],
                      (unsigned long long)into, (unsigned long long)get);
        assert_int_equal(into, 0);
        assert_true(get >= 1); /* the counter counts */
    }
    tu_close_ok(db);
    tkv_options_free(o);
    tu_tmpdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(get_into_no_alloc),
        cmocka_unit_test(oom_sweep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
