// SPDX-License-Identifier: Apache-2.0
/*
 * test_rangedel.c -- range deletions (tkv_delete_range, tkv_batch_delete_range).
 *
 * Unit tests of util/rangedel.c against brute force: fragments (the newest
 * tombstone covering a key below a snapshot), re-emitting them clipped and
 * filtered, and the tombstone block's encoding (round trip, every malformed
 * input rejected).
 *
 * Database tests (tierkv.h's contract): arguments, the semantics in the
 * memtables (bounds, snapshots, puts after a range deletion, order inside a
 * batch), gets and multi_gets.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "testutil.h"
#include "util/rangedel.h"
#include "util/status.h"

/* ---------------------------------------------------------------- util/rangedel */

/* Keys of the unit tests: 1 or 2 bytes over a small alphabet, so that
 * tombstones overlap a lot and a brute force over every key is cheap. */
#define UK_ALPHA 6
#define UK_COUNT (UK_ALPHA + UK_ALPHA * UK_ALPHA)

/* uk -- unit key i (0 <= i < UK_COUNT), in key order: "a", "aa", "ab", ... */
static tkv_slice uk(size_t i, uint8_t buf[2])
{
    size_t first = i / (UK_ALPHA + 1), rest = i % (UK_ALPHA + 1);
    buf[0] = (uint8_t)('a' + first);
    if (rest == 0) return slice(buf, 1);
    buf[1] = (uint8_t)('a' + rest - 1);
    return slice(buf, 2);
}

/* brute_cover -- the largest seq <= snap of t[0..n) covering key (0: none). */
static uint64_t brute_cover(const rd_tomb *t, size_t n, tkv_slice key, uint64_t snap)
{
    uint64_t best = 0;
    for (size_t i = 0; i < n; i++)
        if (t[i].seq <= snap && t[i].seq > best && ukey_cmp(t[i].begin, key) <= 0 && ukey_cmp(key, t[i].end) < 0)
            best = t[i].seq;
    return best;
}

/* random_tombs -- n random tombstones (distinct seqs 1..n) over the unit keys. */
static void random_tombs(tu_rng *r, rd_list *l, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint8_t ba[2], ea[2];
        size_t a = tu_rng_below(r, UK_COUNT - 1), b = tu_rng_range(r, a + 1, UK_COUNT - 1);
        assert_int_equal(rd_list_add(l, uk(a, ba), uk(b, ea), i + 1, (uint32_t)tu_rng_below(r, 4)), 0);
    }
}

/* check_frags -- f gives brute force's answer for every key and snapshot. */
static void check_frags(const rd_frags *f, const rd_tomb *t, size_t n, uint64_t max_seq)
{
    for (size_t k = 0; k < UK_COUNT; k++) {
        uint8_t kb[2];
        tkv_slice key = uk(k, kb);
        for (uint64_t snap = 0; snap <= n + 1; snap++) {
            uint64_t want = brute_cover(t, n, key, snap < max_seq ? snap : max_seq);
            uint64_t got = rd_frags_covering(f, key, snap);
            if (got != want)
                fail_msg("key %s snap %llu: fragments say %llu, brute force %llu", tu_hex(key.p, key.n),
                         (unsigned long long)snap, (unsigned long long)got, (unsigned long long)want);
        }
    }
    for (size_t i = 0; i < rd_frags_count(f); i++) { /* the invariants of rangedel.c */
        rd_frag a;
        rd_frags_get(f, i, &a);
        assert_true(ukey_cmp(a.lo, a.hi) < 0);
        assert_true(a.nseq > 0);
        for (size_t j = 1; j < a.nseq; j++) assert_true(a.seqs[j - 1] > a.seqs[j]);
        if (i > 0) {
            rd_frag b;
            rd_frags_get(f, i - 1, &b);
            assert_true(ukey_cmp(b.hi, a.lo) <= 0);
        }
    }
}

/* keep_odd -- an rd_keep_fn keeping odd seqs only. */
static int keep_odd(void *arg, const rd_frag *fr, size_t j)
{
    (void)arg;
    return fr->seqs[j] % 2 == 1;
}

/* frags_random -- random tombstone sets: fragments against brute force (all
 * of them, and those up to a max_seq), then re-emitted (whole, clipped to a
 * random range, filtered) and fragmented again, still equal to brute force
 * over what they should hold; duplicates (the same tombstone twice) count
 * once. */
static void frags_random(void **state)
{
    (void)state;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x7d);
    for (int round = 0; round < 300; round++) {
        rd_list l = {0};
        size_t n = (size_t)tu_rng_range(&r, 0, 12);
        random_tombs(&r, &l, n);
        uint64_t max_seq = tu_rng_chance(&r, 300000) ? tu_rng_below(&r, n + 1) : UINT64_MAX;
        rd_frags *f = rd_frags_new(l.t, l.n, max_seq);
        assert_non_null(f);
        assert_int_equal(rd_frags_tombs(f), n);
        check_frags(f, l.t, l.n, max_seq);

        /* emit everything: the same coverage */
        rd_list e = {0};
        assert_int_equal(rd_frags_emit(f, NULL, NULL, NULL, NULL, &e), 0);
        for (size_t i = 1; i < e.n; i++) assert_true(ukey_cmp(e.t[i - 1].begin, e.t[i].begin) <= 0);
        rd_frags *g = rd_frags_new(e.t, e.n, UINT64_MAX);
        check_frags(g, l.t, l.n, max_seq);
        assert_true(e.n <= n); /* pieces of one tombstone are joined again */
        rd_frags_unref(g);

        /* clipped to [lo, hi) and odd seqs only */
        uint8_t lb[2], hb[2];
        size_t a = tu_rng_below(&r, UK_COUNT - 1), b = tu_rng_range(&r, a + 1, UK_COUNT - 1);
        tkv_slice lo = uk(a, lb), hi = uk(b, hb);
        rd_list_clear(&e);
        assert_int_equal(rd_frags_emit(f, &lo, &hi, keep_odd, NULL, &e), 0);
        g = rd_frags_new(e.t, e.n, UINT64_MAX);
        for (size_t k = 0; k < UK_COUNT; k++) {
            uint8_t kb[2];
            tkv_slice key = uk(k, kb);
            int inside = ukey_cmp(lo, key) <= 0 && ukey_cmp(key, hi) < 0;
            uint64_t want = 0;
            for (size_t i = 0; inside && i < l.n; i++)
                if (l.t[i].seq % 2 == 1 && l.t[i].seq <= max_seq && l.t[i].seq > want &&
                    ukey_cmp(l.t[i].begin, key) <= 0 && ukey_cmp(key, l.t[i].end) < 0)
                    want = l.t[i].seq;
            assert_int_equal(rd_frags_covering(g, key, UINT64_MAX), want);
        }
        rd_frags_unref(g);

        /* every tombstone twice (another tier): the same fragments */
        assert_int_equal(rd_list_append(&l, l.t, n), 0);
        g = rd_frags_new(l.t, l.n, max_seq);
        check_frags(g, l.t, l.n, max_seq);
        for (size_t i = 0; i < rd_frags_count(g); i++) {
            rd_frag x, y;
            rd_frags_get(g, i, &x);
            rd_frags_get(f, i, &y);
            assert_int_equal(x.nseq, y.nseq);
        }
        rd_frags_unref(g);
        rd_list_free(&e);
        rd_frags_unref(f);
        rd_list_free(&l);
    }
}

/* frags_edges -- hand-made cases: no tombstone, one, keys with 0x00 (the key
 * after "a" is "a\0"), and rd_key_prev_incl. */
static void frags_edges(void **state)
{
    (void)state;
    rd_frags *f = rd_frags_new(NULL, 0, UINT64_MAX);
    assert_non_null(f);
    assert_int_equal(rd_frags_count(f), 0);
    assert_int_equal(rd_frags_covering(f, slice("a", 1), UINT64_MAX), 0);
    rd_frags_unref(f);
    assert_int_equal(rd_frags_covering(NULL, slice("a", 1), 5), 0);

    rd_list l = {0};
    assert_int_equal(rd_list_add(&l, slice("a\0", 2), slice("b", 1), 9, 0), 0);
    assert_int_equal(rd_list_add(&l, slice("a", 1), slice("a\0", 2), 4, 0), 0);
    f = rd_frags_new(l.t, l.n, UINT64_MAX);
    assert_int_equal(rd_frags_count(f), 2);
    assert_int_equal(rd_frags_covering(f, slice("a", 1), 100), 4);
    assert_int_equal(rd_frags_covering(f, slice("a\0", 2), 100), 9);
    assert_int_equal(rd_frags_covering(f, slice("a\0", 2), 8), 0);
    assert_int_equal(rd_frags_covering(f, slice("azzz", 4), 100), 9);
    assert_int_equal(rd_frags_covering(f, slice("b", 1), 100), 0);
    rd_frags_unref(f);
    rd_list_free(&l);

    tkv_slice p = rd_key_prev_incl(slice("ab\0", 3));
    assert_int_equal(p.n, 2);
    p = rd_key_prev_incl(slice("ab", 2));
    assert_int_equal(p.n, 2);
    p = rd_key_prev_incl(slice("\0", 1)); /* the smallest key has no predecessor: itself */
    assert_int_equal(p.n, 1);
}

/* encode_decode -- a random set round-trips through the block encoding; every
 * truncation and each hand-made malformation is rejected with a reason. */
static void encode_decode(void **state)
{
    (void)state;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0xe4);
    rd_list l = {0}, d = {0};
    random_tombs(&r, &l, 20);
    tkv_buf b = {0};
    assert_int_equal(rd_encode(l.t, l.n, &b), 0);
    const char *why = NULL;
    assert_int_equal(rd_decode(b.data, b.len, &d, &why), 0);
    assert_int_equal(d.n, l.n);
    for (size_t i = 0; i < l.n; i++) {
        assert_int_equal(ukey_cmp(d.t[i].begin, l.t[i].begin), 0);
        assert_int_equal(ukey_cmp(d.t[i].end, l.t[i].end), 0);
        assert_int_equal(d.t[i].seq, l.t[i].seq);
    }
    for (size_t cut = 0; cut < b.len; cut++) {
        rd_list_clear(&d);
        why = NULL;
        assert_int_equal(rd_decode(b.data, cut, &d, &why), 1);
        assert_non_null(why);
    }
    /* one tombstone "b".."a": begin not below end; seq 0; a trailing byte */
    static const uint8_t bad_order[] = {1, 1, 'b', 1, 'a', 5};
    static const uint8_t bad_seq[] = {1, 1, 'a', 1, 'b', 0};
    static const uint8_t trailing[] = {1, 1, 'a', 1, 'b', 5, 0};
    static const uint8_t empty_key[] = {1, 0, 1, 'b', 5};
    const uint8_t *bad[] = {bad_order, bad_seq, trailing, empty_key};
    size_t badn[] = {sizeof bad_order, sizeof bad_seq, sizeof trailing, sizeof empty_key};
    for (int i = 0; i < 4; i++) {
        rd_list_clear(&d);
        assert_int_equal(rd_decode(bad[i], badn[i], &d, &why), 1);
    }
    rd_list_clear(&d);
    assert_int_equal(rd_decode(trailing, sizeof trailing - 1, &d, &why), 0);
    assert_int_equal(d.n, 1);
    buf_free(&b);
    rd_list_free(&l);
    rd_list_free(&d);
}

/* ---------------------------------------------------------------- the database */

/* get_is -- tkv_get(key) at snap is want (a value) or not found (want NULL). */
static void get_is(tkv_db *db, const tkv_snapshot *snap, const char *key, const char *want)
{
    void *v = NULL;
    size_t vn = 0;
    int rc = tkv_get(db, snap, key, strlen(key), &v, &vn);
    if (!want) {
        if (rc != TKV_NOT_FOUND) fail_msg("get %s = %d (%s), expected not found", key, rc, rc == 0 ? (char *)v : "");
        return;
    }
    if (rc != TKV_OK) fail_msg("get %s = %d (%s), expected %s", key, rc, tkv_errmsg(), want);
    if (vn != strlen(want) || memcmp(v, want, vn))
        fail_msg("get %s = %.*s, expected %s", key, (int)vn, (char *)v, want);
    tkv_free(v);
}

static void put_s(tkv_db *db, const char *k, const char *v)
{
    assert_int_equal(tkv_put(db, k, strlen(k), v, strlen(v), 0), TKV_OK);
}

static void delr_s(tkv_db *db, const char *b, const char *e)
{
    int rc = tkv_delete_range(db, b, strlen(b), e, strlen(e), 0);
    if (rc != TKV_OK) fail_msg("delete_range %s..%s = %d (%s)", b, e, rc, tkv_errmsg());
}

/* api_args -- the argument rules of tierkv.h: NULLs, empty and oversized
 * keys, begin > end are TKV_INVALID and write nothing; begin == end writes
 * nothing and is TKV_OK; flags as tkv_put. */
static void api_args(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("rdel-args");
    tkv_db *db = tu_open_ok(dir, NULL);
    put_s(db, "b", "1");
    assert_int_equal(tkv_delete_range(NULL, "a", 1, "c", 1, 0), TKV_INVALID);
    assert_int_equal(tkv_delete_range(db, NULL, 0, "c", 1, 0), TKV_INVALID);
    assert_int_equal(tkv_delete_range(db, "a", 1, NULL, 1, 0), TKV_INVALID);
    assert_int_equal(tkv_delete_range(db, "", 0, "c", 1, 0), TKV_INVALID);
    assert_int_equal(tkv_delete_range(db, "a", 1, "c", TKV_MAX_KEY_SIZE + 1, 0), TKV_INVALID);
    assert_int_equal(tkv_delete_range(db, "c", 1, "a", 1, 0), TKV_INVALID);
    assert_non_null(strstr(tkv_errmsg(), "begin > end"));
    assert_int_equal(tkv_delete_range(db, "a", 1, "c", 1, 4), TKV_INVALID);
    assert_int_equal(tkv_delete_range(db, "a", 1, "c", 1, TKV_SYNC | TKV_NO_WAL), TKV_INVALID);
    assert_int_equal(tkv_delete_range(db, "b", 1, "b", 1, 0), TKV_OK); /* empty */
    get_is(db, NULL, "b", "1");
    uint64_t t[TKV_TICKER_COUNT];
    assert_int_equal(tkv_statistics(db, t, TKV_TICKER_COUNT, NULL, 0), TKV_OK);
    assert_int_equal(t[TKV_TICKER_RANGE_DELETES], 0);
    assert_string_equal(tkv_ticker_name(TKV_TICKER_RANGE_DELETES), "range_deletes");
    assert_int_equal(tkv_delete_range(db, "a", 1, "c", 1, TKV_SYNC), TKV_OK);
    get_is(db, NULL, "b", NULL);
    assert_int_equal(tkv_statistics(db, t, TKV_TICKER_COUNT, NULL, 0), TKV_OK);
    assert_int_equal(t[TKV_TICKER_RANGE_DELETES], 1);
    tu_close_ok(db);
    tu_tmpdir_free(dir);
}

/* mem_semantics -- in the memtable: [begin, end) exactly (begin deleted,
 * end kept, keys sharing a prefix), a snapshot from before sees everything,
 * a put after the deletion is visible, overlapping deletions, and the order
 * inside one batch; multi_get agrees with get. */
static void mem_semantics(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("rdel-mem");
    tkv_db *db = tu_open_ok(dir, NULL);
    const char *keys[] = {"a", "b", "ba", "b\xff", "c", "ca", "d", "e"};
    for (size_t i = 0; i < 8; i++) put_s(db, keys[i], keys[i]);
    const tkv_snapshot *s0 = tkv_snapshot_new(db);
    delr_s(db, "b", "ca"); /* b ba b\xff c */
    get_is(db, NULL, "a", "a");
    get_is(db, NULL, "b", NULL);
    get_is(db, NULL, "ba", NULL);
    get_is(db, NULL, "b\xff", NULL);
    get_is(db, NULL, "c", NULL);
    get_is(db, NULL, "ca", "ca");
    for (size_t i = 0; i < 8; i++) get_is(db, s0, keys[i], keys[i]);
    put_s(db, "ba", "again");
    const tkv_snapshot *s1 = tkv_snapshot_new(db);
    get_is(db, NULL, "ba", "again");
    delr_s(db, "a", "bb"); /* a, and ba once more */
    get_is(db, NULL, "a", NULL);
    get_is(db, NULL, "ba", NULL);
    get_is(db, s1, "ba", "again");
    get_is(db, s1, "a", "a");
    get_is(db, s1, "b", NULL);

    tkv_batch *b = tkv_batch_new();
    assert_int_equal(tkv_batch_put(b, "d1", 2, "x", 1), 0);
    assert_int_equal(tkv_batch_delete_range(b, "d", 1, "e", 1), 0);
    assert_int_equal(tkv_batch_put(b, "d2", 2, "y", 1), 0);
    assert_int_equal(tkv_write(db, b, 0), TKV_OK);
    get_is(db, NULL, "d", NULL);
    get_is(db, NULL, "d1", NULL);
    get_is(db, NULL, "d2", "y");
    get_is(db, NULL, "e", "e");

    const char *mk[] = {"a", "b", "ba", "ca", "d2", "d1", "e", "zz"};
    const char *want[] = {NULL, NULL, NULL, "ca", "y", NULL, "e", NULL};
    const void *kp[8];
    size_t kl[8], vl[8];
    void *vals[8];
    int st[8];
    for (int i = 0; i < 8; i++) {
        kp[i] = mk[i];
        kl[i] = strlen(mk[i]);
    }
    assert_int_equal(tkv_multi_get(db, NULL, 8, kp, kl, vals, vl, st), TKV_OK);
    for (int i = 0; i < 8; i++) {
        if (!want[i]) {
            assert_int_equal(st[i], TKV_NOT_FOUND);
            continue;
        }
        assert_int_equal(st[i], TKV_OK);
        assert_memory_equal(vals[i], want[i], strlen(want[i]));
        tkv_free(vals[i]);
    }
    tkv_batch_free(b);
    tkv_snapshot_free(db, s0);
    tkv_snapshot_free(db, s1);
    tu_close_ok(db);
    tu_tmpdir_free(dir);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(frags_random), cmocka_unit_test(frags_edges),   cmocka_unit_test(encode_decode),
        cmocka_unit_test(api_args),     cmocka_unit_test(mem_semantics),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
