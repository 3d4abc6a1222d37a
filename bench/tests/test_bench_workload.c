// SPDX-License-Identifier: Apache-2.0
/*
 * test_bench_workload.c -- the tkv_bench key/value formats and YCSB choosers
 * (bench/workload.c): key format and order, value determinism and ~2:1 lz4
 * compressibility, zipfian rank frequencies (Gray's generator) and zeta,
 * scrambled zipfian spread, latest concentration on the newest records,
 * operation mixes of workloads A-F, scan lengths, uniform keys, bad letters,
 * and concurrent insert-key claims.
 *
 * Statistical checks: every tolerance is stated next to it as a multiple of
 * the standard error (>= 6 sigma everywhere, i.e. a false failure rate below
 * ~1e-9 per check), so the test is not flaky across seeds. Deterministic for
 * a given TKV_TEST_SEED.
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

#include <lz4.h>
#include <pthread.h>

#include <cmocka.h>

#include "bench/workload.h"
#include "tests/testutil.h"

#define THETA 0.99

/* ---------------------------------------------------------------- helpers */

static void rng_init(wl_rng *r, uint64_t salt) { wl_rng_seed(r, tu_seed() ^ (salt * UINT64_C(0x9e3779b97f4a7c15))); }

/* zeta_direct -- sum_{i=1..n} i^-theta, summed smallest term first. */
static double zeta_direct(uint64_t n)
{
    double s = 0;
    for (uint64_t i = n; i >= 1; i--) s += pow((double)i, -THETA);
    return s;
}

/* ---------------------------------------------------------------- rng, names */

static void test_rng_and_names(void **state)
{
    (void)state;
    wl_rng a, b;
    wl_rng_seed(&a, 42);
    wl_rng_seed(&b, 42);
    for (int i = 0; i < 100; i++) assert_int_equal(wl_rng_next(&a), wl_rng_next(&b));
    /* reference vectors: splitmix64(0) gives the state e220a8397b1dcdaf,
     * 6e789e6aa1b965f4, 06c45d188009454f, f88bb8a8724c81ec (the published
     * splitmix64 sequence); xoshiro256** outputs computed independently */
    wl_rng_seed(&a, 0);
    assert_int_equal(a.s[0], UINT64_C(0xe220a8397b1dcdaf));
    assert_int_equal(a.s[1], UINT64_C(0x6e789e6aa1b965f4));
    assert_int_equal(a.s[2], UINT64_C(0x06c45d188009454f));
    assert_int_equal(a.s[3], UINT64_C(0xf88bb8a8724c81ec));
    assert_int_equal(wl_rng_next(&a), UINT64_C(0x99ec5f36cb75f2b4));
    assert_int_equal(wl_rng_next(&a), UINT64_C(0xbf6e1f784956452a));
    assert_int_equal(wl_rng_next(&a), UINT64_C(0x1a5f849d4933e6e0));
    wl_rng_seed(&b, 43);
    assert_true(wl_rng_next(&a) != wl_rng_next(&b));

    rng_init(&a, 1);
    uint64_t c3[3] = {0};
    double dmin = 1, dmax = 0;
    for (int i = 0; i < 300000; i++) {
        double d = wl_rng_double(&a);
        assert_true(d >= 0.0 && d < 1.0);
        if (d < dmin) dmin = d;
        if (d > dmax) dmax = d;
        uint64_t k = wl_rng_below(&a, 3);
        assert_true(k < 3);
        c3[k]++;
    }
    assert_true(dmin < 1e-4 && dmax > 1 - 1e-4);
    /* each count ~ Binomial(300000, 1/3): sd 258; 2000 is ~7.7 sd */
    for (int k = 0; k < 3; k++) assert_true(llabs((long long)c3[k] - 100000) < 2000);
    assert_int_equal(wl_rng_below(&a, 0), 0);
    assert_int_equal(wl_rng_below(&a, 1), 0);
    for (int i = 0; i < 1000; i++) assert_true(wl_rng_below(&a, UINT64_MAX) < UINT64_MAX);

    assert_string_equal(wl_op_name(WL_READ), "read");
    assert_string_equal(wl_op_name(WL_UPDATE), "update");
    assert_string_equal(wl_op_name(WL_INSERT), "insert");
    assert_string_equal(wl_op_name(WL_SCAN), "scan");
    assert_string_equal(wl_op_name(WL_RMW), "rmw");
    for (int d = WL_UNIFORM; d <= WL_LATEST; d++) assert_int_equal(wl_dist_parse(wl_dist_name((wl_dist)d)), d);
    assert_string_equal(wl_dist_name(WL_ZIPFIAN), "zipfian");
    assert_int_equal(wl_dist_parse("uniform"), WL_UNIFORM);
    assert_int_equal(wl_dist_parse("latest"), WL_LATEST);
    assert_int_equal(wl_dist_parse("zipf"), -1);
    assert_int_equal(wl_dist_parse(""), -1);
    assert_int_equal(wl_dist_parse(NULL), -1);
}

/* ---------------------------------------------------------------- (a) keys */

static void test_key_format(void **state)
{
    (void)state;
    char k[40], k2[40];
    memset(k, '#', sizeof k);
    wl_format_key(k, 8, 42);
    assert_memory_equal(k, "00000042", 8);
    assert_int_equal(k[8], '#'); /* nothing written past key_size */
    wl_format_key(k, 8, 0);
    assert_memory_equal(k, "00000000", 8);
    wl_format_key(k, 8, 99999999);
    assert_memory_equal(k, "99999999", 8);
    /* too many digits for the key: the low digits are kept */
    wl_format_key(k, 8, UINT64_C(1234567890));
    assert_memory_equal(k, "34567890", 8);
    memset(k, '#', sizeof k);
    wl_format_key(k, 24, UINT64_MAX);
    assert_memory_equal(k, "000018446744073709551615", 24);
    assert_int_equal(k[24], '#');
    wl_format_key(k, 20, UINT64_MAX);
    assert_memory_equal(k, "18446744073709551615", 20);

    /* order preservation for random pairs (numbers below 10^key_size) */
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0xa1);
    static const size_t sizes[] = {8, 10, 16, 20, 24, 32};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t ks = sizes[s];
        uint64_t lim = ks >= 20 ? UINT64_MAX : 1;
        if (ks < 20)
            for (size_t d = 0; d < ks; d++) lim *= 10;
        for (int i = 0; i < 20000; i++) {
            /* mix magnitudes: random bit lengths, and near neighbours */
            uint64_t a = tu_rng_next(&r) >> tu_rng_below(&r, 64), b;
            if (a >= lim) a %= lim;
            b = tu_rng_below(&r, 2) ? a + tu_rng_below(&r, 3) - 1 : tu_rng_next(&r) >> tu_rng_below(&r, 64);
            if (b >= lim) b %= lim;
            wl_format_key(k, ks, a);
            wl_format_key(k2, ks, b);
            int c = memcmp(k, k2, ks);
            int want = (a > b) - (a < b);
            if ((c > 0) - (c < 0) != want) fail_msg("size %zu: %" PRIu64 " vs %" PRIu64 ": memcmp %d", ks, a, b, c);
            for (size_t j = 0; j < ks; j++) assert_true(k[j] >= '0' && k[j] <= '9');
        }
    }
}

/* ---------------------------------------------------------------- (b) values */

static void test_fill_value(void **state)
{
    (void)state;
    enum { MAXV = 8192 };
    char *a = malloc(MAXV + 16), *b = malloc(MAXV + 16);
    assert_non_null(a);
    assert_non_null(b);
    static const size_t sizes[] = {0, 1, 7, 8, 9, 15, 16, 17, 100, 1000, 1023, 4096, 8192};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s], half = (n + 1) / 2;
        memset(a, '#', MAXV + 16);
        memset(b, '@', MAXV + 16);
        wl_fill_value(a, n, 77, 3);
        wl_fill_value(b, n, 77, 3);
        assert_memory_equal(a, b, n);               /* deterministic */
        assert_int_equal(a[n], '#');                /* nothing written past value_size */
        assert_memory_equal(a + half, a, n - half); /* second half repeats the first */
    }
    /* distinct (key, version) give distinct values (first 16 bytes compared:
     * a collision among 4000 values has probability ~1e-31) */
    enum { NK = 1000, NVER = 4 };
    uint64_t(*heads)[2] = malloc(NK * NVER * sizeof *heads);
    assert_non_null(heads);
    for (uint64_t key = 0; key < NK; key++)
        for (uint64_t ver = 0; ver < NVER; ver++) {
            wl_fill_value(a, 32, key, ver);
            memcpy(heads[key * NVER + ver], a, 16);
        }
    qsort(heads, NK * NVER, sizeof *heads, tu_cmp_u64); /* orders by the first word */
    for (size_t i = 1; i < NK * NVER; i++)
        assert_false(heads[i][0] == heads[i - 1][0] && heads[i][1] == heads[i - 1][1]);
    free(heads);

    /* compresses ~2:1 with lz4 (random first half ~incompressible, second
     * half one match) */
    static const int csizes[] = {1000, 4096, 8192};
    char *c = malloc((size_t)LZ4_compressBound(MAXV));
    assert_non_null(c);
    for (size_t s = 0; s < sizeof csizes / sizeof csizes[0]; s++) {
        int n = csizes[s];
        wl_fill_value(a, (size_t)n, 123456789, 9);
        int cn = LZ4_compress_default(a, c, n, LZ4_compressBound(MAXV));
        assert_true(cn > 0);
        double ratio = (double)cn / n;
        if (ratio < 0.45 || ratio > 0.56) fail_msg("value %d bytes compresses to %d (%.3f)", n, cn, ratio);
    }
    /* wl_fill_value_r: 50 is wl_fill_value; lz4 keeps about random_pct % of a
     * value (the random part, then matches), nothing past value_size */
    static const unsigned pcts[] = {12, 25, 100};
    for (size_t s = 0; s < sizeof csizes / sizeof csizes[0]; s++) {
        int n = csizes[s];
        wl_fill_value_r(b, (size_t)n, 123456789, 9, 50);
        wl_fill_value(a, (size_t)n, 123456789, 9);
        assert_memory_equal(a, b, (size_t)n);
        for (size_t q = 0; q < sizeof pcts / sizeof pcts[0]; q++) {
            memset(a, '#', MAXV + 16);
            wl_fill_value_r(a, (size_t)n, 123456789, 9, pcts[q]);
            assert_int_equal(a[n], '#');
            int cn = LZ4_compress_default(a, c, n, LZ4_compressBound(MAXV));
            double ratio = (double)cn / n, want = pcts[q] / 100.0;
            if (ratio < want - 0.03 || ratio > want + 0.06)
                fail_msg("value %d bytes, %u %% random, compresses to %d (%.3f)", n, pcts[q], cn, ratio);
        }
    }
    free(c);
    free(a);
    free(b);
}

/* ---------------------------------------------------------------- (c) zipfian ranks */

static void test_zipf_ranks(void **state)
{
    (void)state;
    /* zeta: the workload's closed form against direct summation, and against
     * YCSB's ZETAN for 10^10 items (a naive double sum: ~3e-11 off) */
    static const uint64_t ns[] = {1, 2, 3, 1000, 1024, 1025, 1100, 5000, 100000, 1000000};
    wl_ycsb w;
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
        assert_int_equal(wl_ycsb_init(&w, 'd', ns[i], -1), 0);
        assert_int_equal(w.zipf_items, ns[i]);
        double z = zeta_direct(ns[i]);
        if (fabs(w.zipf_zetan - z) > 1e-11 * z)
            fail_msg("zeta(%" PRIu64 ") = %.15g, direct %.15g", ns[i], w.zipf_zetan, z);
    }
    assert_int_equal(wl_ycsb_init(&w, 'd', UINT64_C(10000000000), -1), 0);
    assert_true(fabs(w.zipf_zetan - 26.46902820178302) < 1e-9);
    assert_int_equal(wl_ycsb_init(&w, 'a', 1000, -1), 0); /* scrambled: YCSB's constant */
    assert_true(w.zipf_zetan == 26.46902820178302);
    assert_int_equal(w.zipf_items, UINT64_C(10000000000));

    /* rank frequencies over 1000 items (the 'd' workload's constants are over
     * its record count) */
    enum { ITEMS = 1000, DRAWS = 2000000 };
    assert_int_equal(wl_ycsb_init(&w, 'd', ITEMS, -1), 0);
    assert_true(fabs(w.zipf_alpha - 100.0) < 1e-9);
    assert_true(w.zipf_theta == THETA);
    wl_rng r;
    rng_init(&r, 0xc1);
    uint64_t *cnt = calloc(ITEMS, sizeof *cnt);
    assert_non_null(cnt);
    for (int i = 0; i < DRAWS; i++) {
        uint64_t k = wl_zipf_rank(&w, &r, ITEMS);
        assert_true(k < ITEMS);
        cnt[k]++;
    }
    double zn = zeta_direct(ITEMS), z10 = zeta_direct(10);
    double f0 = (double)cnt[0] / DRAWS, f1 = (double)cnt[1] / DRAWS;
    /* P(0) = 1/zeta(1000) = 0.1294 exactly; relative sd sqrt((1-p)/(pN)) =
     * 0.18 %: 3 % is 16 sd */
    if (fabs(f0 * zn - 1) > 0.03) fail_msg("freq(0) = %.5f, 1/zeta = %.5f", f0, 1 / zn);
    /* P(0)/P(1) = 2^0.99 exactly; relative sd of the ratio ~0.33 %: 5 % is
     * 15 sd */
    if (fabs(f0 / f1 / pow(2, THETA) - 1) > 0.05) fail_msg("freq(0)/freq(1) = %.4f, want %.4f", f0 / f1, pow(2, THETA));
    uint64_t top = 0;
    for (int k = 0; k < 10; k++) top += cnt[k];
    double share = (double)top / DRAWS;
    /* Gray's generator's own top-10 probability (ranks >= 2 follow his
     * continuous approximation): P(rank < 10) = 1 - (1 - (10/n)^(1-theta))
     * (1 - zeta(2)/zeta(n)) / (1 - (2/n)^(1-theta)) = 0.3983; sd 3.5e-4
     * (0.09 %): 1 % relative is 11 sd. */
    double gray =
        1 - (1 - pow(10.0 / ITEMS, 1 - THETA)) * (1 - zeta_direct(2) / zn) / (1 - pow(2.0 / ITEMS, 1 - THETA));
    if (fabs(share / gray - 1) > 0.01) fail_msg("top-10 share %.5f, generator's %.5f", share, gray);
    /* against the exact Zipf law zeta(10)/zeta(1000) = 0.3825: the
     * approximation is 1.6 points (4.2 % relative) high, so "within 3 %" holds
     * in absolute points (margin 1.4 points = 40 sd), not relative */
    if (fabs(share - z10 / zn) > 0.03) fail_msg("top-10 share %.5f, Zipf %.5f", share, z10 / zn);
    /* monotone on average: each decade of ranks is less popular than the last */
    uint64_t d1 = 0, d2 = 0;
    for (int k = 10; k < 100; k++) d1 += cnt[k];
    for (int k = 100; k < 1000; k++) d2 += cnt[k];
    assert_true(cnt[0] > cnt[1] && cnt[1] > cnt[2] && cnt[2] > cnt[5]);
    assert_true(d1 > 0 && d2 > 0 && cnt[ITEMS - 1] < cnt[ITEMS / 10]);
    assert_int_equal(wl_zipf_rank(&w, &r, 1), 0);
    free(cnt);
}

/* ---------------------------------------------------------------- (d) scrambled zipfian */

/* fnv_ref -- YCSB Utils.fnvhash64 (FNV-1a over 8 bytes, Java Math.abs). */
static uint64_t fnv_ref(uint64_t v)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (int i = 0; i < 8; i++) {
        h = (h ^ (v & 0xff)) * UINT64_C(1099511628211);
        v >>= 8;
    }
    int64_t s = (int64_t)h;
    return s < 0 ? (uint64_t)0 - h : h;
}

static void test_scrambled_zipfian(void **state)
{
    (void)state;
    enum { RECS = 100000, DRAWS = 1000000 };
    wl_ycsb w;
    assert_int_equal(wl_ycsb_init(&w, 'b', RECS, -1), 0);
    assert_int_equal(w.dist, WL_ZIPFIAN);
    wl_rng r;
    rng_init(&r, 0xd1);
    uint64_t *cnt = calloc(RECS, sizeof *cnt);
    assert_non_null(cnt);
    for (int i = 0; i < DRAWS; i++) {
        uint64_t k = wl_ycsb_next_key(&w, &r);
        assert_true(k < RECS);
        cnt[k]++;
    }
    /* the 10 hottest keys */
    uint64_t hot[10];
    for (int j = 0; j < 10; j++) {
        uint64_t best = 0;
        for (uint64_t k = 1; k < RECS; k++)
            if (cnt[k] > cnt[best]) best = k;
        hot[j] = best;
        if (j == 0) {
            /* rank 0 (p = 1/ZETAN = 3.78 %) is key fnv(0) % records; its count
             * (~37800 + a little of the tail, sd ~190) is within 10 % */
            assert_int_equal(best, fnv_ref(0) % RECS);
            double f = (double)cnt[best] / DRAWS;
            if (fabs(f * 26.46902820178302 - 1) > 0.1) fail_msg("hottest key frequency %.5f", f);
        }
        cnt[best] = 0;
    }
    qsort(hot, 10, sizeof hot[0], tu_cmp_u64);
    /* spread: not all in one 1 % range, and (hash-placed, so ~uniform) at most
     * one adjacent pair (expected number of adjacent pairs ~ 90/RECS) */
    assert_true(hot[9] - hot[0] > RECS / 100);
    int adjacent = 0;
    for (int j = 1; j < 10; j++) adjacent += hot[j] - hot[j - 1] == 1;
    assert_true(adjacent <= 1);
    free(cnt);

    /* with inserts (workload E), keys stay below next_insert */
    assert_int_equal(wl_ycsb_init(&w, 'e', 1000, -1), 0);
    for (int round = 0; round < 40; round++) {
        for (int i = 0; i < 97; i++) wl_ycsb_insert_key(&w);
        for (int i = 0; i < 2000; i++) assert_true(wl_ycsb_next_key(&w, &r) < w.next_insert);
    }
    /* and no records: key 0 */
    assert_int_equal(wl_ycsb_init(&w, 'a', 0, -1), 0);
    assert_int_equal(wl_ycsb_next_key(&w, &r), 0);
}

/* ---------------------------------------------------------------- (e) latest */

static void test_latest(void **state)
{
    (void)state;
    enum { RECS = 100000, MORE = 50000, DRAWS = 200000 };
    wl_ycsb w;
    assert_int_equal(wl_ycsb_init(&w, 'd', RECS, -1), 0);
    assert_int_equal(w.dist, WL_LATEST);
    for (uint64_t i = 0; i < MORE; i++) assert_int_equal(wl_ycsb_insert_key(&w), RECS + i);
    uint64_t n = RECS + MORE, newest = n - 1;
    wl_rng r;
    rng_init(&r, 0xe1);
    uint64_t *dist = malloc(DRAWS * sizeof *dist), at_newest = 0;
    assert_non_null(dist);
    for (int i = 0; i < DRAWS; i++) {
        uint64_t k = wl_ycsb_next_key(&w, &r);
        assert_true(k <= newest);
        dist[i] = newest - k;
        at_newest += k == newest;
    }
    qsort(dist, DRAWS, sizeof *dist, tu_cmp_u64);
    /* theory: median rank ~ 400 of 150000 (0.27 %) */
    if (dist[DRAWS / 2] >= n / 100) fail_msg("median distance from the newest: %" PRIu64, dist[DRAWS / 2]);
    /* the newest key has probability 1/zeta(n) = 7.8 %; relative sd 0.77 %:
     * 6 % is 7.8 sd */
    double f = (double)at_newest / DRAWS, z = zeta_direct(n);
    if (fabs(f * z - 1) > 0.06) fail_msg("freq(newest) %.5f, 1/zeta(n) %.5f", f, 1 / z);
    free(dist);

    /* interleaved inserts and draws: never beyond the newest claimed key */
    for (int i = 0; i < 20000; i++) {
        if (i % 7 == 0) wl_ycsb_insert_key(&w);
        uint64_t k = wl_ycsb_next_key(&w, &r);
        assert_true(k < w.next_insert);
    }
    /* tiny record counts */
    assert_int_equal(wl_ycsb_init(&w, 'd', 1, -1), 0);
    assert_int_equal(wl_ycsb_next_key(&w, &r), 0);
    wl_ycsb_insert_key(&w);
    for (int i = 0; i < 1000; i++) assert_true(wl_ycsb_next_key(&w, &r) <= 1);
}

/* ---------------------------------------------------------------- (f) mixes, scans */

static void test_workload_mixes(void **state)
{
    (void)state;
    static const struct {
        char letter;
        double p[WL_NOPS]; /* read, update, insert, scan, rmw */
        wl_dist dist;
    } defs[] = {
        {'a', {0.50, 0.50, 0, 0, 0}, WL_ZIPFIAN}, {'b', {0.95, 0.05, 0, 0, 0}, WL_ZIPFIAN},
        {'c', {1.00, 0, 0, 0, 0}, WL_ZIPFIAN},    {'d', {0.95, 0, 0.05, 0, 0}, WL_LATEST},
        {'e', {0, 0, 0.05, 0.95, 0}, WL_ZIPFIAN}, {'f', {0.50, 0, 0, 0, 0.50}, WL_ZIPFIAN},
    };
    enum { DRAWS = 200000 };
    wl_rng r;
    rng_init(&r, 0xf1);
    for (size_t d = 0; d < sizeof defs / sizeof defs[0]; d++) {
        wl_ycsb w;
        assert_int_equal(wl_ycsb_init(&w, defs[d].letter, 5000, -1), 0);
        assert_int_equal(w.letter, defs[d].letter);
        assert_int_equal(w.dist, defs[d].dist);
        assert_int_equal(w.max_scan, 100);
        assert_int_equal(w.initial_records, 5000);
        assert_int_equal(w.next_insert, 5000);
        uint64_t cnt[WL_NOPS] = {0};
        for (int i = 0; i < DRAWS; i++) {
            wl_op op = wl_ycsb_next_op(&w, &r);
            assert_true((unsigned)op < WL_NOPS);
            cnt[op]++;
        }
        /* sd <= sqrt(0.25/200000) = 0.0011: 1 % absolute is >= 8.9 sd; ops
         * with proportion 0 must never appear */
        for (int op = 0; op < WL_NOPS; op++) {
            double f = (double)cnt[op] / DRAWS;
            if (fabs(f - defs[d].p[op]) > 0.01 || (defs[d].p[op] == 0 && cnt[op] != 0))
                fail_msg("workload %c: %s %.4f, want %.2f", defs[d].letter, wl_op_name((wl_op)op), f, defs[d].p[op]);
        }
    }
    /* uppercase letters and distribution overrides */
    wl_ycsb w;
    assert_int_equal(wl_ycsb_init(&w, 'A', 10, WL_UNIFORM), 0);
    assert_int_equal(w.letter, 'a');
    assert_int_equal(w.dist, WL_UNIFORM);
    assert_int_equal(wl_ycsb_init(&w, 'd', 10, WL_ZIPFIAN), 0);
    assert_int_equal(w.dist, WL_ZIPFIAN);

    /* scan lengths: uniform 1..100; mean 50.5, sd 28.9, so the mean of 200000
     * has sd 0.065: 0.5 is 7.7 sd. Each length expected 2000 times. */
    assert_int_equal(wl_ycsb_init(&w, 'e', 5000, -1), 0);
    uint64_t lcnt[101] = {0}, sum = 0, mn = UINT64_MAX, mx = 0;
    for (int i = 0; i < DRAWS; i++) {
        uint64_t l = wl_ycsb_scan_len(&w, &r);
        assert_true(l >= 1 && l <= 100);
        lcnt[l]++;
        sum += l;
        if (l < mn) mn = l;
        if (l > mx) mx = l;
    }
    assert_int_equal(mn, 1);
    assert_int_equal(mx, 100);
    double mean = (double)sum / DRAWS;
    if (fabs(mean - 50.5) > 0.5) fail_msg("scan length mean %.3f", mean);
    /* each count ~ Binomial(200000, 0.01): sd 44.5; 400 is 9 sd */
    for (int l = 1; l <= 100; l++) assert_true(llabs((long long)lcnt[l] - 2000) < 400);
}

/* ---------------------------------------------------------------- (g) uniform */

static void test_uniform_keys(void **state)
{
    (void)state;
    enum { RECS = 100000, BINS = 100, DRAWS = 1000000 };
    wl_ycsb w;
    assert_int_equal(wl_ycsb_init(&w, 'c', RECS, WL_UNIFORM), 0);
    wl_rng r;
    rng_init(&r, 0x91);
    uint64_t bins[BINS] = {0};
    for (int i = 0; i < DRAWS; i++) {
        uint64_t k = wl_ycsb_next_key(&w, &r);
        assert_true(k < RECS);
        bins[k / (RECS / BINS)]++;
    }
    double e = (double)DRAWS / BINS, chi2 = 0;
    for (int b = 0; b < BINS; b++) chi2 += ((double)bins[b] - e) * ((double)bins[b] - e) / e;
    /* chi-square with 99 degrees of freedom: P(> 200) ~ 1e-8, P(< 40) ~ 1e-9
     * (Wilson-Hilferty) */
    if (chi2 > 200 || chi2 < 40) fail_msg("chi2 = %.1f over %d bins", chi2, BINS);
    /* keys drawn only among existing records as they grow */
    for (int i = 0; i < 1000; i++) {
        wl_ycsb_insert_key(&w);
        assert_true(wl_ycsb_next_key(&w, &r) < w.next_insert);
    }
}

/* ---------------------------------------------------------------- (h) bad input */

static void test_bad_letters(void **state)
{
    (void)state;
    wl_ycsb w;
    assert_int_equal(wl_ycsb_init(&w, 'g', 100, -1), -1);
    assert_int_equal(wl_ycsb_init(&w, 'G', 100, -1), -1);
    assert_int_equal(wl_ycsb_init(&w, '`', 100, -1), -1);
    assert_int_equal(wl_ycsb_init(&w, '\0', 100, -1), -1);
    assert_int_equal(wl_ycsb_init(&w, 'z', 100, -1), -1);
    assert_int_equal(wl_ycsb_init(&w, 'a', 100, 3), -1); /* bad distribution */
    assert_int_equal(wl_ycsb_init(&w, 'f', 100, -1), 0);
}

/* ---------------------------------------------------------------- (i) threads */

enum { NTHREADS = 4, PER_THREAD = 10000 };

typedef struct claim_arg {
    wl_ycsb *w;
    uint64_t *out;
} claim_arg;

static void *claim_thread(void *p)
{
    claim_arg *a = p;
    for (int i = 0; i < PER_THREAD; i++) a->out[i] = wl_ycsb_insert_key(a->w);
    return NULL;
}

static void test_concurrent_insert_keys(void **state)
{
    (void)state;
    enum { RECS = 777 };
    wl_ycsb w;
    assert_int_equal(wl_ycsb_init(&w, 'd', RECS, -1), 0);
    uint64_t *keys = malloc(NTHREADS * PER_THREAD * sizeof *keys);
    assert_non_null(keys);
    pthread_t th[NTHREADS];
    claim_arg args[NTHREADS];
    for (int t = 0; t < NTHREADS; t++) {
        args[t] = (claim_arg){.w = &w, .out = keys + (size_t)t * PER_THREAD};
        assert_int_equal(pthread_create(&th[t], NULL, claim_thread, &args[t]), 0);
    }
    for (int t = 0; t < NTHREADS; t++) assert_int_equal(pthread_join(th[t], NULL), 0);
    /* each thread's claims increase */
    for (int t = 0; t < NTHREADS; t++)
        for (int i = 1; i < PER_THREAD; i++) assert_true(args[t].out[i] > args[t].out[i - 1]);
    qsort(keys, NTHREADS * PER_THREAD, sizeof *keys, tu_cmp_u64);
    for (uint64_t i = 0; i < NTHREADS * PER_THREAD; i++) assert_int_equal(keys[i], RECS + i);
    assert_int_equal(w.next_insert, RECS + NTHREADS * PER_THREAD);
    free(keys);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rng_and_names),     cmocka_unit_test(test_key_format),
        cmocka_unit_test(test_fill_value),        cmocka_unit_test(test_zipf_ranks),
        cmocka_unit_test(test_scrambled_zipfian), cmocka_unit_test(test_latest),
        cmocka_unit_test(test_workload_mixes),    cmocka_unit_test(test_uniform_keys),
        cmocka_unit_test(test_bad_letters),       cmocka_unit_test(test_concurrent_insert_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
