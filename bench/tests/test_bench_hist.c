// SPDX-License-Identifier: Apache-2.0
/*
 * test_bench_hist.c -- the tkv_bench latency histogram (bench/hist.c):
 * bucket layout (every value maps into its bucket's range, ranges contiguous,
 * relative width <= 1/64), percentiles against exact order statistics of
 * sorted samples for several distributions (within the documented 1/128
 * relative error, stronger than hist.h's 1/64), merge == histogram of the
 * concatenation, empty/reset/memset-zeroed histograms, mean, clamping of huge
 * values. Deterministic for a given TKV_TEST_SEED.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "bench/hist.h"
#include "tests/testutil.h"

#define LIMIT (UINT64_C(1) << HIST_MAX_MAG)

/* ---------------------------------------------------------------- helpers */

static hist *hist_new(void)
{
    hist *h = malloc(sizeof *h);
    assert_non_null(h);
    hist_reset(h);
    return h;
}

/* uniform double in (0, 1) */
static double unit(tu_rng *r) { return ((double)(tu_rng_next(r) >> 11) + 0.5) * 0x1p-53; }

static double gauss(tu_rng *r) { return sqrt(-2.0 * log(unit(r))) * cos(2 * M_PI * unit(r)); }

static uint64_t to_ns(double x)
{
    if (x < 0) return 0;
    if (x > 1e18) return UINT64_C(1000000000000000000);
    return (uint64_t)llround(x);
}

/* ---------------------------------------------------------------- (a) buckets */

static void test_bucket_layout(void **state)
{
    (void)state;
    tu_rng r;
    tu_rng_init(&r, tu_seed());
    uint64_t expect_lo = 0;
    for (unsigned b = 0; b < HIST_NBUCKETS; b++) {
        uint64_t lo, hi;
        hist_bucket_range(b, &lo, &hi);
        assert_int_equal(lo, expect_lo); /* contiguous, starting at 0 */
        assert_true(hi >= lo);
        uint64_t width = hi - lo + 1;
        if (lo < 64) assert_int_equal(width, 1); /* exact below 64 */
        else assert_true(width * 64 <= lo);      /* relative width <= 1/64 */
        if (width <= 4096) {
            for (uint64_t v = lo;; v++) {
                assert_int_equal(hist_bucket_of(v), b);
                if (v == hi) break;
            }
        } else {
            assert_int_equal(hist_bucket_of(lo), b);
            assert_int_equal(hist_bucket_of(hi), b);
            assert_int_equal(hist_bucket_of(lo + width / 2), b);
            for (int i = 0; i < 64; i++) assert_int_equal(hist_bucket_of(lo + tu_rng_below(&r, width)), b);
        }
        expect_lo = hi + 1;
    }
    /* the buckets cover [0, 2^HIST_MAX_MAG) exactly; beyond clamps to the last */
    assert_int_equal(expect_lo, LIMIT);
    assert_int_equal(hist_bucket_of(LIMIT), HIST_NBUCKETS - 1);
    assert_int_equal(hist_bucket_of(UINT64_MAX), HIST_NBUCKETS - 1);
    /* random values (log-uniform) fall inside their bucket's range */
    for (int i = 0; i < 100000; i++) {
        uint64_t v = tu_rng_next(&r) >> tu_rng_below(&r, 64);
        if (v >= LIMIT) v >>= 64 - HIST_MAX_MAG;
        unsigned b = hist_bucket_of(v);
        uint64_t lo, hi;
        hist_bucket_range(b, &lo, &hi);
        assert_true(lo <= v && v <= hi);
    }
}

/* ---------------------------------------------------------------- (b) percentiles */

/* The tested percentiles, in hundredths of a percent so that the exact rank
 * ceil(p/100 * n) is computed in integers (independently of hist.c's double
 * arithmetic). */
static const uint64_t pct_x100[] = {0, 100, 5000, 9000, 9900, 9990, 9999, 10000};
#define NPCT (sizeof pct_x100 / sizeof pct_x100[0])

/* check_percentiles -- records v[0..n) and compares every tested percentile
 * with the exact order statistic: |got - x| <= x/128 (hist.c's documented
 * bound; implies the brief's x/64 + 1). Sorts v. */
static void check_percentiles(const char *name, uint64_t *v, size_t n)
{
    hist *h = hist_new();
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        hist_add(h, v[i]);
        sum += v[i];
    }
    qsort(v, n, sizeof *v, tu_cmp_u64);
    assert_int_equal(h->count, n);
    assert_int_equal(h->min, v[0]);
    assert_int_equal(h->max, v[n - 1]);
    assert_int_equal(h->sum, sum);
    for (size_t k = 0; k < NPCT; k++) {
        uint64_t rank = (pct_x100[k] * n + 9999) / 10000; /* ceil */
        if (rank < 1) rank = 1;
        uint64_t x = v[rank - 1];
        uint64_t got = hist_percentile(h, (double)pct_x100[k] / 100.0);
        uint64_t err = got > x ? got - x : x - got;
        if (pct_x100[k] == 0 || pct_x100[k] == 10000 || x < 128) {
            if (got != x)
                fail_msg("%s n=%zu p=%.2f: got %" PRIu64 ", exact %" PRIu64 " (must be exact)", name, n,
                         pct_x100[k] / 100.0, got, x);
        } else if (err * 128 > x) {
            fail_msg("%s n=%zu p=%.2f: got %" PRIu64 ", exact %" PRIu64 " (error %" PRIu64 " > x/128)", name, n,
                     pct_x100[k] / 100.0, got, x, err);
        }
    }
    free(h);
}

enum { NS = 200000 };

static void test_percentiles_distributions(void **state)
{
    (void)state;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0xb1);
    uint64_t *v = malloc(NS * sizeof *v);
    assert_non_null(v);

    for (size_t i = 0; i < NS; i++) v[i] = tu_rng_range(&r, 1, 1000000);
    check_percentiles("uniform 1..1e6", v, NS);

    for (size_t i = 0; i < NS; i++) v[i] = to_ns(-50000.0 * log(unit(&r)));
    check_percentiles("exponential 50us", v, NS);

    /* lognormal: median 20 us, sigma 2 (p99.99 ~ 35 ms, max ~ 0.3 s) */
    for (size_t i = 0; i < NS; i++) v[i] = to_ns(exp(log(20000.0) + 2.0 * gauss(&r)));
    check_percentiles("lognormal", v, NS);

    /* bimodal: 99 % around 3 us, 1 % around 5 ms (10 % jitter) */
    for (size_t i = 0; i < NS; i++) {
        double mode = tu_rng_below(&r, 100) == 0 ? 5e6 : 3000.0;
        v[i] = to_ns(mode * (1.0 + 0.1 * gauss(&r)));
    }
    check_percentiles("bimodal", v, NS);

    for (size_t i = 0; i < NS; i++) v[i] = 123457;
    check_percentiles("constant", v, NS);

    v[0] = 98765;
    check_percentiles("single", v, 1);
    v[0] = 0;
    check_percentiles("single zero", v, 1);

    /* log-uniform over 1 ns .. 1 h */
    for (size_t i = 0; i < NS; i++) v[i] = to_ns(exp(log(3.6e12) * unit(&r)));
    v[0] = 1;
    v[1] = UINT64_C(3600000000000);
    check_percentiles("1ns..1h", v, NS);

    /* small n, where rank rounding matters */
    for (size_t n = 2; n <= 1000; n = n * 3 + 1) {
        for (size_t i = 0; i < n; i++) v[i] = tu_rng_range(&r, 1, 100000000);
        check_percentiles("small n", v, n);
    }
    free(v);
}

/* Percentiles that fall exactly on rank boundaries, with exact (< 128 ns)
 * values: `each` samples of each of 1..100 ns (n = 100 * each). p = j/100
 * (inexact in binary: e.g. 7/100 * 100 = 7.000000000000001 in double) must
 * select rank exactly ceil(j * n / 10000). */
static void test_percentile_rank_rounding(void **state)
{
    (void)state;
    for (uint64_t each = 1; each <= 10; each *= 10) {
        hist *h = hist_new();
        uint64_t n = 100 * each;
        for (uint64_t v = 1; v <= 100; v++)
            for (uint64_t k = 0; k < each; k++) hist_add(h, v);
        for (uint64_t j = 1; j <= 10000; j++) {
            uint64_t rank = (j * n + 9999) / 10000, want = (rank + each - 1) / each;
            uint64_t got = hist_percentile(h, (double)j / 100.0);
            if (got != want) fail_msg("n=%" PRIu64 " p=%.2f: got %" PRIu64 ", want %" PRIu64, n, j / 100.0, got, want);
        }
        assert_int_equal(hist_percentile(h, 0.001), 1);
        assert_int_equal(hist_percentile(h, 0), 1);
        assert_int_equal(hist_percentile(h, -5), 1);
        assert_int_equal(hist_percentile(h, 150), 100);
        free(h);
    }
}

/* ---------------------------------------------------------------- (c) merge */

static void test_merge(void **state)
{
    (void)state;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0xc3);
    hist *a = hist_new(), *b = hist_new(), *all = hist_new(), *m = hist_new();
    for (int i = 0; i < 100000; i++) {
        uint64_t x = to_ns(exp(log(1e10) * unit(&r)));
        if (i % 1000 == 0) x = tu_rng_next(&r); /* some huge, clamped values */
        hist_add(tu_rng_below(&r, 3) ? a : b, x);
        hist_add(all, x);
    }
    /* m = empty + a + empty + b */
    hist *empty = hist_new();
    hist_merge(m, empty);
    hist_merge(m, a);
    hist_merge(m, empty);
    hist_merge(m, b);
    assert_memory_equal(m, all, sizeof *m);
    /* merging into a memset-zeroed histogram */
    memset(m, 0, sizeof *m);
    hist_merge(m, b);
    hist_merge(m, a);
    assert_memory_equal(m, all, sizeof *m);
    /* empty into empty stays empty */
    hist_merge(empty, empty);
    assert_int_equal(empty->count, 0);
    assert_int_equal(empty->min, UINT64_MAX);
    free(a);
    free(b);
    free(all);
    free(m);
    free(empty);
}

/* ---------------------------------------------------------------- (d) empty, reset, mean */

static void test_empty_reset_mean(void **state)
{
    (void)state;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0xd4);
    hist *h = hist_new(), *fresh = hist_new();
    for (size_t k = 0; k < NPCT; k++) assert_int_equal(hist_percentile(h, pct_x100[k] / 100.0), 0);
    assert_true(hist_mean(h) == 0.0);
    assert_int_equal(h->count, 0);
    assert_int_equal(h->min, UINT64_MAX);

    long double exact = 0;
    for (int i = 0; i < 100000; i++) {
        uint64_t x = tu_rng_below(&r, UINT64_C(10000000000));
        hist_add(h, x);
        exact += x;
    }
    exact /= 100000;
    assert_true(fabsl((long double)hist_mean(h) - exact) <= exact * 1e-12L);

    hist_reset(h);
    assert_memory_equal(h, fresh, sizeof *h);
    assert_int_equal(hist_percentile(h, 50), 0);

    /* a memset-zeroed histogram works like a reset one */
    memset(h, 0, sizeof *h);
    hist_add(h, 777);
    hist_add(h, 555);
    assert_int_equal(h->min, 555);
    assert_int_equal(h->max, 777);
    assert_int_equal(hist_percentile(h, 0), 555);
    assert_int_equal(hist_percentile(h, 50), 555);
    assert_int_equal(hist_percentile(h, 100), 777);
    assert_true(hist_mean(h) == 666.0);

    /* huge values clamp to the last bucket; max and p100 stay exact, and the
     * percentile stays within [min, max] */
    hist_reset(h);
    hist_add(h, UINT64_MAX / 3);
    hist_add(h, LIMIT + 5);
    assert_int_equal(h->buckets[HIST_NBUCKETS - 1], 2);
    assert_int_equal(hist_percentile(h, 100), UINT64_MAX / 3);
    assert_int_equal(hist_percentile(h, 0), LIMIT + 5);
    uint64_t p50 = hist_percentile(h, 50);
    assert_true(p50 >= LIMIT + 5 && p50 <= UINT64_MAX / 3);
    free(h);
    free(fresh);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bucket_layout),
        cmocka_unit_test(test_percentiles_distributions),
        cmocka_unit_test(test_percentile_rank_rounding),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_empty_reset_mean),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
