// SPDX-License-Identifier: Apache-2.0
/*
 * test_block.c -- SSTable blocks (src/sst/block.c) and the bloom filter
 * (src/sst/bloom.c): round trips with several restart intervals, every kind of
 * seek, next/prev walks, malformed blocks (error status, never a crash or an
 * out-of-block read under ASan), bloom false negatives and false-positive rate.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sst/block.h"
#include "sst/bloom.h"
#include "testutil.h"
#include "util/status.h"

/* ---------------------------------------------------------------- a model block */

typedef struct ent {
    uint8_t k[40];
    size_t kn;
    uint8_t *v;
    size_t vn;
} ent;

/* mk_ikey -- "u%08u" user key (user number ux) + trailer. */
static size_t mk_ikey(uint8_t *dst, unsigned ux, uint64_t seq, ikey_type t)
{
    char u[16];
    int n = snprintf(u, sizeof u, "u%08u", ux);
    ikey_encode(dst, u, (size_t)n, seq, t);
    return (size_t)n + IKEY_TRAILER;
}

/* gen_entries -- n entries in ikey order: user keys 2, 4, 6 ... (odd ones are
 * absent), 1..3 versions each, values of 0..60 bytes. */
static ent *gen_entries(size_t n, tu_rng *r)
{
    ent *e = calloc(n, sizeof *e);
    assert_non_null(e);
    size_t i = 0;
    unsigned ux = 2;
    while (i < n) {
        unsigned versions = 1 + (unsigned)tu_rng_below(r, 3);
        uint64_t seq = 1000000 + tu_rng_below(r, 1000);
        for (unsigned v = 0; v < versions && i < n; v++, i++) {
            ikey_type t = tu_rng_chance(r, 100000) ? IKEY_DELETION : IKEY_VALUE;
            e[i].kn = mk_ikey(e[i].k, ux, seq, t);
            seq -= 1 + tu_rng_below(r, 5);
            e[i].vn = t == IKEY_DELETION ? 0 : (size_t)tu_rng_below(r, 61);
            e[i].v = malloc(e[i].vn + 1);
            assert_non_null(e[i].v);
            tu_rng_fill(r, e[i].v, e[i].vn);
        }
        ux += 2;
    }
    return e;
}

static void free_entries(ent *e, size_t n)
{
    for (size_t i = 0; i < n; i++) free(e[i].v);
    free(e);
}

/* build -- a block of the entries, returned in an exact-size heap copy (so ASan
 * flags any read past its end). */
static uint8_t *build(const ent *e, size_t n, int interval, size_t *size)
{
    block_builder b;
    block_builder_init(&b, interval);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(block_builder_add(&b, slice(e[i].k, e[i].kn), slice(e[i].v, e[i].vn)), 0);
    size_t est = block_builder_size(&b);
    tkv_slice c;
    assert_int_equal(block_builder_finish(&b, &c), 0);
    assert_int_equal(c.n, est);
    uint8_t *copy = malloc(c.n ? c.n : 1);
    assert_non_null(copy);
    memcpy(copy, c.p, c.n);
    *size = c.n;
    block_builder_free(&b);
    return copy;
}

static void expect_at(block_iter *it, const ent *e, size_t i, const char *what)
{
    if (!block_iter_valid(it)) fail_msg("%s: expected entry %zu, iterator not valid (status %d)", what, i, it->status);
    tkv_slice k = block_iter_key(it), v = block_iter_value(it);
    if (k.n != e[i].kn || memcmp(k.p, e[i].k, k.n) != 0)
        fail_msg("%s: entry %zu key %s, want %s", what, i, tu_hex(k.p, k.n), tu_hex(e[i].k, e[i].kn));
    if (v.n != e[i].vn || (v.n && memcmp(v.p, e[i].v, v.n) != 0)) fail_msg("%s: entry %zu value differs", what, i);
}

/* lower_bound -- index of the first entry >= target. */
static size_t lower_bound(const ent *e, size_t n, tkv_slice target)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ikey_cmp(slice(e[mid].k, e[mid].kn), target) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* check_block -- forward and backward walks, a seek to every key, between
 * keys, before the first and after the last, and next/prev around seeks. */
static void check_block(const uint8_t *data, size_t size, const ent *e, size_t n, tu_rng *r, const char *what)
{
    block_iter it = {0};
    assert_int_equal(block_iter_init(&it, data, size, "test.blk", 0), 0);
    assert_false(block_iter_valid(&it));

    size_t i = 0;
    for (block_iter_seek_first(&it); block_iter_valid(&it); block_iter_next(&it), i++) expect_at(&it, e, i, what);
    assert_int_equal(i, n);
    assert_int_equal(it.status, 0);
    i = n;
    for (block_iter_seek_last(&it); block_iter_valid(&it); block_iter_prev(&it)) expect_at(&it, e, --i, what);
    assert_int_equal(i, 0);
    assert_int_equal(it.status, 0);

    uint8_t t[40];
    for (size_t j = 0; j < n; j++) {
        /* exact key */
        block_iter_seek(&it, slice(e[j].k, e[j].kn));
        expect_at(&it, e, j, "seek exact");
        /* same user key, sequence just above: lands on the entry too (or on a
         * newer version of the same key, which is the lower bound) */
        tkv_slice k = slice(e[j].k, e[j].kn);
        memcpy(t, k.p, k.n);
        enc_u64(t + k.n - 8, ikey_pack(ikey_seq(k) + 1, IKEY_VALUE));
        block_iter_seek(&it, slice(t, k.n));
        size_t lb = lower_bound(e, n, slice(t, k.n));
        expect_at(&it, e, lb, "seek seq+1");
        /* just below: the next entry */
        enc_u64(t + k.n - 8, ikey_trailer(k) - 1);
        lb = lower_bound(e, n, slice(t, k.n));
        block_iter_seek(&it, slice(t, k.n));
        if (lb < n) expect_at(&it, e, lb, "seek trailer-1");
        else assert_false(block_iter_valid(&it));
    }
    /* between user keys (odd numbers are absent), before first, after last */
    for (unsigned ux = 0; ux < 2 * (unsigned)n + 6; ux += 1) {
        size_t kn = mk_ikey(t, ux, IKEY_MAX_SEQ, IKEY_SEEK_TYPE);
        size_t lb = lower_bound(e, n, slice(t, kn));
        block_iter_seek(&it, slice(t, kn));
        if (lb < n) expect_at(&it, e, lb, "seek between");
        else assert_false(block_iter_valid(&it));
        assert_int_equal(it.status, 0);
    }
    ikey_encode(t, "a", 1, 5, IKEY_VALUE);
    block_iter_seek(&it, slice(t, 9));
    if (n) expect_at(&it, e, 0, "seek before first");
    ikey_encode(t, "zz", 2, 5, IKEY_VALUE);
    block_iter_seek(&it, slice(t, 10));
    assert_false(block_iter_valid(&it));
    assert_int_equal(it.status, 0);

    /* random walks: seek somewhere, then a run of next/prev steps */
    for (int w = 0; w < 200 && n; w++) {
        size_t pos = (size_t)tu_rng_below(r, n);
        block_iter_seek(&it, slice(e[pos].k, e[pos].kn));
        for (int s = 0; s < 40; s++) {
            if (tu_rng_below(r, 2)) {
                block_iter_next(&it);
                pos++;
            } else {
                block_iter_prev(&it);
                if (pos == 0) {
                    assert_false(block_iter_valid(&it));
                    break;
                }
                pos--;
            }
            if (pos == n) {
                assert_false(block_iter_valid(&it));
                break;
            }
            expect_at(&it, e, pos, "walk");
        }
    }
    assert_int_equal(it.status, 0);
    block_iter_clear(&it);
}

static void test_block_roundtrip(void **state)
{
    (void)state;
    tu_rng r;
    tu_rng_init(&r, tu_seed());
    const int intervals[] = {1, 2, 16};
    const size_t sizes[] = {0, 1, 2, 3, 15, 16, 17, 33, 500};
    for (size_t ii = 0; ii < 3; ii++) {
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            size_t n = sizes[si], size;
            ent *e = gen_entries(n, &r);
            uint8_t *blk = build(e, n, intervals[ii], &size);
            /* restart count: ceil(n / interval) */
            size_t want = (n + (size_t)intervals[ii] - 1) / (size_t)intervals[ii];
            assert_int_equal(dec_u32(blk + size - 4), want);
            char what[64];
            snprintf(what, sizeof what, "interval %d, %zu entries", intervals[ii], n);
            check_block(blk, size, e, n, &r, what);
            /* the same through the allocated tkv_it interface */
            tkv_it *it = block_iter_new(blk, size, "test.blk", 0, free, blk);
            assert_non_null(it);
            size_t i = 0;
            for (it_seek_first(it); it_valid(it); it_next(it), i++) assert_memory_equal(it_key(it).p, e[i].k, e[i].kn);
            assert_int_equal(i, n);
            assert_int_equal(it_status(it), 0);
            it_destroy(it); /* frees blk through the release callback */
            free_entries(e, n);
        }
    }
}

/* Builder reuse: reset keeps producing identical blocks. */
static void test_block_builder_reset(void **state)
{
    (void)state;
    tu_rng r;
    tu_rng_init(&r, tu_seed() + 1);
    ent *e = gen_entries(100, &r);
    block_builder b;
    block_builder_init(&b, 4);
    tkv_slice c1, c2;
    for (size_t i = 0; i < 100; i++)
        assert_int_equal(block_builder_add(&b, slice(e[i].k, e[i].kn), slice(e[i].v, e[i].vn)), 0);
    assert_int_equal(block_builder_finish(&b, &c1), 0);
    uint8_t *copy = malloc(c1.n);
    memcpy(copy, c1.p, c1.n);
    size_t n1 = c1.n;
    block_builder_reset(&b);
    assert_true(block_builder_empty(&b));
    for (size_t i = 0; i < 100; i++)
        assert_int_equal(block_builder_add(&b, slice(e[i].k, e[i].kn), slice(e[i].v, e[i].vn)), 0);
    assert_int_equal(block_builder_finish(&b, &c2), 0);
    assert_int_equal(c2.n, n1);
    assert_memory_equal(c2.p, copy, n1);
    free(copy);
    block_builder_free(&b);
    free_entries(e, 100);
}

/* walk_all -- exercises every operation on a (possibly malformed) block;
 * returns 1 if any error status was seen. Never returns keys outside the
 * block's bytes (ASan checks that). */
static int walk_all(const uint8_t *data, size_t size, const ent *e, size_t n)
{
    block_iter it = {0};
    int err = block_iter_init(&it, data, size, "bad.blk", 4096) != 0;
    size_t steps = 0;
    for (block_iter_seek_first(&it); block_iter_valid(&it) && steps < 10000; block_iter_next(&it)) steps++;
    err |= it.status != 0;
    block_iter_clear(&it);
    memset(&it, 0, sizeof it);
    block_iter_init(&it, data, size, "bad.blk", 4096);
    for (block_iter_seek_last(&it); block_iter_valid(&it) && steps < 20000; block_iter_prev(&it)) steps++;
    err |= it.status != 0;
    for (size_t j = 0; j < n; j += 7) {
        block_iter_seek(&it, slice(e[j].k, e[j].kn));
        if (block_iter_valid(&it)) {
            block_iter_prev(&it);
            block_iter_next(&it);
        }
    }
    err |= it.status != 0;
    block_iter_clear(&it);
    return err;
}

static void expect_corrupt(const uint8_t *data, size_t size, const ent *e, size_t n, const char *what)
{
    tkv_err_clear();
    if (!walk_all(data, size, e, n)) fail_msg("%s: malformed block not reported", what);
    if (!strstr(tkv_errmsg(), "bad.blk") || !strstr(tkv_errmsg(), "4096"))
        fail_msg("%s: message does not name the file and offset: %s", what, tkv_errmsg());
}

static void test_block_corrupt(void **state)
{
    (void)state;
    tu_rng r;
    tu_rng_init(&r, tu_seed() + 2);
    size_t n = 200, size;
    ent *e = gen_entries(n, &r);
    uint8_t *good = build(e, n, 16, &size);
    uint32_t nr = dec_u32(good + size - 4);
    size_t roff = size - 4 - 4 * (size_t)nr;
    assert_false(walk_all(good, size, e, n));

    uint8_t *bad = malloc(size);
    /* restart count too large for the block */
    memcpy(bad, good, size);
    enc_u32(bad + size - 4, (uint32_t)size);
    expect_corrupt(bad, size, e, n, "huge restart count");
    enc_u32(bad + size - 4, 0xffffffffu);
    expect_corrupt(bad, size, e, n, "restart count 2^32-1");
    /* restart count 0 with entries present */
    enc_u32(bad + size - 4, 0);
    expect_corrupt(bad, size, e, n, "zero restarts");
    /* a restart offset beyond the entries */
    memcpy(bad, good, size);
    enc_u32(bad + roff + 4, (uint32_t)roff + 100);
    expect_corrupt(bad, size, e, n, "restart beyond entries");
    /* restart offsets out of order */
    memcpy(bad, good, size);
    enc_u32(bad + roff + 8, dec_u32(good + roff + 4));
    expect_corrupt(bad, size, e, n, "restarts not increasing");
    /* first restart not 0 */
    memcpy(bad, good, size);
    enc_u32(bad + roff, 1);
    expect_corrupt(bad, size, e, n, "restart[0] != 0");
    /* a restart point in the middle of an entry */
    memcpy(bad, good, size);
    enc_u32(bad + roff + 4, dec_u32(good + roff + 4) + 1);
    expect_corrupt(bad, size, e, n, "misaligned restart");
    /* an entry whose lengths run past the entry area (first entry header) */
    memcpy(bad, good, size);
    memcpy(bad + 1, "\xff\xff\xff\x0f", 4); /* non_shared ~ 2^28: past the block */
    expect_corrupt(bad, size, e, n, "entry overrun");
    free(bad);

    /* truncations: every length, each in an exact-size allocation */
    int errors = 0;
    for (size_t len = 0; len < size; len++) {
        uint8_t *t = malloc(len ? len : 1);
        memcpy(t, good, len);
        errors += walk_all(t, len, e, n);
        free(t);
    }
    /* cutting the tail always breaks the count/restart array: it must be
     * caught for the vast majority of lengths (a few may decode by chance) */
    assert_true(errors >= (int)(size * 9 / 10));
    for (size_t cut = 1; cut <= 8; cut++) {
        uint8_t *t = malloc(size - cut);
        memcpy(t, good, size - cut);
        expect_corrupt(t, size - cut, e, n, "truncated tail");
        free(t);
    }

    /* random damage anywhere: never a crash (ASan) or an endless walk */
    for (int trial = 0; trial < 3000; trial++) {
        uint8_t *t = malloc(size);
        memcpy(t, good, size);
        int flips = 1 + (int)tu_rng_below(&r, 4);
        for (int f = 0; f < flips; f++) t[tu_rng_below(&r, size)] ^= (uint8_t)(1u << tu_rng_below(&r, 8));
        walk_all(t, size, e, n);
        free(t);
    }
    free(good);
    free_entries(e, n);
}

/* ---------------------------------------------------------------- bloom */

static void test_bloom_no_false_negatives_and_fp_rate(void **state)
{
    (void)state;
    const size_t n = 100000;
    bloom_builder bb;
    bloom_builder_init(&bb, 10);
    char k[32];
    for (size_t i = 0; i < n; i++) {
        int kn = snprintf(k, sizeof k, "present-%zu", i * 7919);
        assert_int_equal(bloom_builder_add(&bb, slice(k, (size_t)kn)), 0);
    }
    tkv_buf f = {0};
    assert_int_equal(bloom_builder_finish(&bb, &f), 0);
    assert_true(bloom_filter_valid(f.data, f.len));
    int kprobes = f.data[f.len - 1];
    assert_int_equal(kprobes, 7); /* round(10 * ln 2) */
    double m = (double)(f.len - 1) * 8;
    assert_true(m >= 10.0 * n);
    for (size_t i = 0; i < n; i++) {
        int kn = snprintf(k, sizeof k, "present-%zu", i * 7919);
        if (!bloom_may_contain(f.data, f.len, slice(k, (size_t)kn))) fail_msg("false negative for %s", k);
    }
    size_t fp = 0;
    for (size_t i = 0; i < n; i++) {
        int kn = snprintf(k, sizeof k, "absent-%zu", i);
        fp += (size_t)bloom_may_contain(f.data, f.len, slice(k, (size_t)kn));
    }
    double rate = (double)fp / (double)n;
    double theory = pow(1.0 - exp(-(double)kprobes * (double)n / m), kprobes);
    print_message("bloom: k=%d m/n=%.2f fp rate %.5f, theory %.5f\n", kprobes, m / (double)n, rate, theory);
    assert_true(rate <= 2 * theory);
    assert_true(rate >= theory / 2);
    buf_free(&f);
    bloom_builder_free(&bb);
}

static void test_bloom_edges(void **state)
{
    (void)state;
    assert_int_equal(bloom_probes(1), 1);
    assert_int_equal(bloom_probes(0), 1);
    assert_int_equal(bloom_probes(10), 7);
    assert_int_equal(bloom_probes(64), 30);
    /* bits_per_key 0: an empty filter that says "maybe" to everything */
    bloom_builder bb;
    bloom_builder_init(&bb, 0);
    assert_int_equal(bloom_builder_add(&bb, slice("x", 1)), 0);
    tkv_buf f = {0};
    assert_int_equal(bloom_builder_finish(&bb, &f), 0);
    assert_int_equal(f.len, 0);
    assert_true(bloom_filter_valid(f.data, 0));
    assert_true(bloom_may_contain(f.data, 0, slice("anything", 8)));
    bloom_builder_free(&bb);
    /* no keys: a minimal filter that rejects everything */
    bloom_builder_init(&bb, 10);
    assert_int_equal(bloom_builder_finish(&bb, &f), 0);
    assert_int_equal(f.len, 9);
    assert_false(bloom_may_contain(f.data, f.len, slice("k", 1)));
    /* malformed probe counts */
    f.data[f.len - 1] = 0;
    assert_false(bloom_filter_valid(f.data, f.len));
    f.data[f.len - 1] = 31;
    assert_false(bloom_filter_valid(f.data, f.len));
    assert_false(bloom_filter_valid(f.data, 1));
    bloom_builder_free(&bb);
    /* a single key, and high bits per key: still no false negative */
    bloom_builder_init(&bb, 64);
    f.len = 0;
    assert_int_equal(bloom_builder_add(&bb, slice("", 0)), 0);
    assert_int_equal(bloom_builder_add(&bb, slice("only", 4)), 0);
    assert_int_equal(bloom_builder_finish(&bb, &f), 0);
    assert_int_equal(f.data[f.len - 1], 30);
    assert_true(bloom_may_contain(f.data, f.len, slice("only", 4)));
    assert_true(bloom_may_contain(f.data, f.len, slice("", 0)));
    bloom_builder_free(&bb);
    buf_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_roundtrip), cmocka_unit_test(test_block_builder_reset),
        cmocka_unit_test(test_block_corrupt),   cmocka_unit_test(test_bloom_no_false_negatives_and_fp_rate),
        cmocka_unit_test(test_bloom_edges),
    };
    return cmocka_run_group_tests_name("block", tests, NULL, NULL);
}
