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
 * batch), gets and multi_gets; then through every tier, with l0=sst and
 * l0=matrix: tiers_* flush and compact range deletions over data already in
 * the tree, with puts after them and a snapshot from before them, reopen and
 * tkv_verify, and check that once the snapshot is gone no tombstone is left;
 * space_* check that compaction gives back the space of the keys a range
 * deletion covers (SST bytes drop to a tenth after 90 % of the keys are
 * deleted in ranges), but only once a snapshot that still reads them is
 * released; random_* run puts, deletes, range deletions (alone and in
 * batches, bounds on and between keys, empty ranges) and up to three
 * snapshots against the model, with flushes, compactions and reopens, on
 * small tiers (random_full_pool: a 1M pool, two columns at a time, rows read
 * with partly drained cursors and range tombstone starts); corrupt_block
 * damages an SST's range deletion block: reads and tkv_verify report
 * TKV_CORRUPTION; checkpoint_* check that a checkpoint holds the range
 * deletions of every tier as of its sequence. Everything is read back by gets, multi_gets and
 * iterators (full scans both ways; in random_*, iterators with random bounds,
 * seeks, seek_for_prev and direction changes, at snapshots too).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "io/io.h"
#include "sst/table.h"
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

/* ---------------------------------------------------------------- through the tiers */

#define TK_N 3000 /* keys of the tier tests: "k00000" .. */

static void tk(char *b, size_t i) { snprintf(b, 16, "k%05zu", i); }

/* check_model -- tkv_get of every key 0..TK_N-1 (and a few absent ones) at
 * snap agrees with m, and so does one tkv_multi_get of them in batches. */
static void check_model(tkv_db *db, const tkv_snapshot *snap, const tu_model *m, const char *what)
{
    tu_check_db(db, snap, m, what); /* full scans both ways, and a get of every live key */
    enum { B = 50 };
    char kb[B][16];
    const void *kp[B];
    size_t kl[B], vl[B];
    void *vals[B];
    int st[B];
    for (size_t base = 0; base < TK_N + 10; base += B) {
        for (size_t i = 0; i < B; i++) {
            tk(kb[i], base + i);
            kp[i] = kb[i];
            kl[i] = strlen(kb[i]);
        }
        assert_int_equal(tkv_multi_get(db, snap, B, kp, kl, vals, vl, st), TKV_OK);
        for (size_t i = 0; i < B; i++) {
            const void *mv;
            size_t mvn;
            int present = tu_model_get(m, kb[i], kl[i], &mv, &mvn);
            void *v = NULL;
            size_t vn = 0;
            int rc = tkv_get(db, snap, kb[i], kl[i], &v, &vn);
            if (present != (rc == TKV_OK) || (present && (vn != mvn || memcmp(v, mv, vn))))
                fail_msg("%s: get %s = %d (%s), model %s", what, kb[i], rc, rc == TKV_OK ? tu_hex(v, vn) : "-",
                         present ? tu_hex(mv, mvn) : "absent");
            if (st[i] != rc || vl[i] != vn || (rc == TKV_OK && memcmp(vals[i], v, vn)))
                fail_msg("%s: multi_get %s = %d, get %d", what, kb[i], st[i], rc);
            tkv_free(v);
            tkv_free(vals[i]);
        }
    }
}

static void put_model(tkv_db *db, tu_model *m, size_t i, const char *tag)
{
    char k[16], v[48];
    tk(k, i);
    snprintf(v, sizeof v, "%s-%zu-value", tag, i);
    assert_int_equal(tu_put_model(db, m, k, strlen(k), v, strlen(v), 0), TKV_OK);
}

static void delr_model(tkv_db *db, tu_model *m, size_t a, size_t b)
{
    char ka[16], kb[16];
    tk(ka, a);
    tk(kb, b);
    delr_s(db, ka, kb);
    tu_model_del_range(m, ka, strlen(ka), kb, strlen(kb));
}

/* level_sum -- the sum of field (e.g. "range_dels=") over the L0..L6 lines of tkv.levels. */
static uint64_t level_sum(tkv_db *db, const char *field)
{
    char *p = tkv_property(db, "tkv.levels");
    assert_non_null(p);
    uint64_t sum = 0;
    for (int l = 0; l < 7; l++) {
        char name[16];
        snprintf(name, sizeof name, "L%d: ", l);
        const char *line = strstr(p, name), *f = line ? strstr(line, field) : NULL;
        if (f) sum += strtoull(f + strlen(field), NULL, 10);
    }
    tkv_free(p);
    return sum;
}

static uint64_t sst_bytes(tkv_db *db)
{
    uint64_t t[TKV_TICKER_COUNT];
    assert_int_equal(tkv_statistics(db, t, TKV_TICKER_COUNT, NULL, 0), TKV_OK);
    return t[TKV_TICKER_SST_BYTES];
}

/* tiers_opts -- small tiers (testutil), with l0 as given. */
static tkv_options *tiers_opts(const char *l0)
{
    tkv_options *o = tu_small_options();
    assert_int_equal(tkv_options_set(o, "l0", l0), TKV_OK);
    return o;
}

/* run_tiers -- range deletions flushed, compacted and reopened, checked
 * against the model at every step and at a snapshot from before them; puts
 * after a deletion survive it; once the snapshot is gone a full compaction
 * leaves no tombstone behind (dropped at the bottom level). */
static void run_tiers(const char *l0)
{
    char *dir = tu_tmpdir("rdel-tiers");
    tkv_options *o = tiers_opts(l0);
    tkv_db *db = tu_open_ok(dir, o);
    tu_model *m = tu_model_new();
    for (size_t i = 0; i < TK_N; i++) put_model(db, m, i, "a");
    assert_int_equal(tkv_flush(db), TKV_OK);
    delr_model(db, m, 100, 500); /* in the memtable, over flushed data */
    check_model(db, NULL, m, "memtable tombstone");
    const tkv_snapshot *s1 = tkv_snapshot_new(db);
    tu_model *m1 = tu_model_copy(m);
    assert_int_equal(tkv_flush(db), TKV_OK);
    check_model(db, NULL, m, "flushed tombstone");
    put_model(db, m, 200, "b"); /* a put after the deletion */
    delr_model(db, m, 1000, 1100);
    delr_model(db, m, 1050, 1200); /* overlapping */
    delr_model(db, m, 2999, 3005); /* past the last key */
    for (size_t i = 1090; i < 1110; i++) put_model(db, m, i, "c");
    delr_model(db, m, 1095, 1096);
    assert_int_equal(tkv_flush(db), TKV_OK);
    check_model(db, NULL, m, "second flush");
    check_model(db, s1, m1, "snapshot after flushes");
    assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK);
    check_model(db, NULL, m, "after compact_range");
    check_model(db, s1, m1, "snapshot after compact_range");
    tkv_snapshot_free(db, s1);
    assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK);
    check_model(db, NULL, m, "after a second compact_range");
    assert_int_equal(level_sum(db, "range_dels="), 0); /* all at the bottom, seen by every reader: dropped */
    tu_close_ok(db);
    char *report = NULL;
    int vrc = tkv_verify(dir, o, &report); /* the MANIFEST's records cover the tombstones as the tables say */
    if (vrc != TKV_OK) fail_msg("tkv_verify = %d: %s", vrc, report ? report : tkv_errmsg());
    tkv_free(report);
    db = tu_open_ok(dir, o);
    check_model(db, NULL, m, "after reopen");
    tu_close_ok(db);
    tu_model_free(m);
    tu_model_free(m1);
    tkv_options_free(o);
    assert_int_equal(tkv_destroy(dir), TKV_OK);
    tu_tmpdir_free(dir);
}

static void tiers_sst(void **state)
{
    (void)state;
    run_tiers("sst");
}

/* run_space -- compaction gives the space of range-deleted keys back: a
 * database of 20,000 keys compacted to the bottom, 90 % of them deleted in
 * 10 ranges; while a snapshot from before the deletion lives, a full
 * compaction keeps the keys (the snapshot reads them all); once it is
 * released, the next one leaves a tenth of the bytes. */
static void run_space(const char *l0)
{
    enum { N = 20000 };
    char *dir = tu_tmpdir("rdel-space");
    tkv_options *o = tiers_opts(l0);
    tkv_db *db = tu_open_ok(dir, o);
    char v[200];
    memset(v, 'v', sizeof v);
    for (size_t i = 0; i < N; i++) {
        char k[16];
        snprintf(k, sizeof k, "s%06zu", i);
        snprintf(v, sizeof v, "%06zu", i);
        v[6] = 'v';
        assert_int_equal(tkv_put(db, k, strlen(k), v, sizeof v, 0), TKV_OK);
    }
    assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK);
    uint64_t full = sst_bytes(db);
    const tkv_snapshot *snap = tkv_snapshot_new(db);
    for (size_t r = 0; r < 10; r++) { /* [2000r + 200, 2000r + 2000) */
        char a[16], b[16];
        snprintf(a, sizeof a, "s%06zu", r * 2000 + 200);
        snprintf(b, sizeof b, "s%06zu", r * 2000 + 2000);
        delr_s(db, a, b);
    }
    assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK);
    uint64_t kept = sst_bytes(db);
    for (size_t i = 0; i < N; i += 97) { /* the snapshot still reads every key */
        char k[16];
        snprintf(k, sizeof k, "s%06zu", i);
        void *val = NULL;
        size_t vn = 0;
        assert_int_equal(tkv_get(db, snap, k, strlen(k), &val, &vn), TKV_OK);
        tkv_free(val);
        int deleted = i % 2000 >= 200;
        assert_int_equal(tkv_get(db, NULL, k, strlen(k), &val, &vn), deleted ? TKV_NOT_FOUND : TKV_OK);
        tkv_free(val);
    }
    tkv_snapshot_free(db, snap);
    assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK);
    uint64_t after = sst_bytes(db);
    fprintf(stderr, "# %s: SST bytes %llu full, %llu with the snapshot, %llu after its release\n", l0,
            (unsigned long long)full, (unsigned long long)kept, (unsigned long long)after);
    assert_true(kept >= full * 9 / 10);
    assert_true(after <= full / 5);
    assert_int_equal(level_sum(db, "range_dels="), 0);
    tu_close_ok(db);
    tkv_options_free(o);
    assert_int_equal(tkv_destroy(dir), TKV_OK);
    tu_tmpdir_free(dir);
}

static void space_sst(void **state)
{
    (void)state;
    run_space("sst");
}

static void tiers_matrix(void **state)
{
    (void)state;
    run_tiers("matrix");
}

static void space_matrix(void **state)
{
    (void)state;
    run_space("matrix");
}

/* run_checkpoint -- a checkpoint holds the range deletions of every tier
 * as of its sequence: tombstones in L1 (compacted), in rows or L0 SSTs
 * (flushed, with l0=matrix some of a row's moved to L1 by columns), and in
 * the memtable, with puts after them and a deletion made after the
 * checkpoint that it must not see; the checkpoint, opened, equals the
 * model at its time, and the source goes on. */
static void run_checkpoint(const char *l0)
{
    char *dir = tu_tmpdir("rdel-ckpt");
    char *out = tu_path(dir, "ckpt");
    char *src = tu_path(dir, "db");
    tkv_options *o = tiers_opts(l0);
    tkv_db *db = tu_open_ok(src, o);
    tu_model *m = tu_model_new();
    for (size_t i = 0; i < TK_N; i++) put_model(db, m, i, "a");
    delr_model(db, m, 100, 300);
    assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK);
    delr_model(db, m, 500, 700);
    put_model(db, m, 650, "b");
    assert_int_equal(tkv_flush(db), TKV_OK);
    delr_model(db, m, 1000, 1500); /* in the memtable */
    put_model(db, m, 1200, "c");
    assert_int_equal(tkv_checkpoint(db, out), TKV_OK);
    tu_model *later = tu_model_copy(m);
    delr_model(db, later, 2000, 2500); /* after the checkpoint: in the source only */
    check_model(db, NULL, later, "source after the checkpoint");
    tu_close_ok(db);
    db = tu_open_ok(out, o);
    check_model(db, NULL, m, "the checkpoint");
    tu_close_ok(db);
    tu_model_free(m);
    tu_model_free(later);
    tkv_options_free(o);
    assert_int_equal(tkv_destroy(out), TKV_OK);
    assert_int_equal(tkv_destroy(src), TKV_OK);
    free(out);
    free(src);
    tu_tmpdir_free(dir);
}

static void checkpoint_matrix(void **state)
{
    (void)state;
    run_checkpoint("matrix");
}

static void checkpoint_sst(void **state)
{
    (void)state;
    run_checkpoint("sst");
}

/* corrupt_block -- l0=sst: an SST whose range deletion block has a flipped
 * byte. The database still opens (tables open when first read); a get of a
 * key in that table reports TKV_CORRUPTION naming the file and the block,
 * never a wrong answer, and tkv_verify reports the damage. */
static void corrupt_block(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("rdel-corrupt");
    tkv_options *o = tiers_opts("sst");
    tkv_db *db = tu_open_ok(dir, o);
    put_s(db, "a", "1");
    put_s(db, "b", "2");
    put_s(db, "c", "3");
    delr_s(db, "b", "c");
    assert_int_equal(tkv_flush(db), TKV_OK);
    tu_close_ok(db);
    uint64_t *nums;
    size_t n = tu_list_numbered(dir, ".sst", &nums), damaged = 0;
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "%06llu.sst", (unsigned long long)nums[i]);
        char *path = tu_path(dir, name);
        io_file *f;
        table *t;
        assert_int_equal(io_open_read(path, IO_META, NULL, &f), 0);
        assert_int_equal(table_open(f, tu_file_size(path), NULL, &t), 0);
        table_layout lay;
        table_get_layout(t, &lay);
        table_close(t);
        if (lay.range_dels.size) {
            FILE *fp = fopen(path, "r+b");
            assert_non_null(fp);
            uint64_t off = lay.range_dels.offset + lay.range_dels.size / 2;
            fseek(fp, (long)off, SEEK_SET);
            int ch = fgetc(fp);
            fseek(fp, (long)off, SEEK_SET);
            fputc(ch ^ 0x10, fp);
            fclose(fp);
            damaged++;
        }
        free(path);
    }
    free(nums);
    assert_int_equal(damaged, 1);
    db = tu_open_ok(dir, o);
    void *v = NULL;
    size_t vn;
    int rc = tkv_get(db, NULL, "b", 1, &v, &vn);
    if (rc != TKV_CORRUPTION) fail_msg("get over a damaged range deletion block = %d, want TKV_CORRUPTION", rc);
    assert_non_null(strstr(tkv_errmsg(), "range deletion block"));
    tu_close_ok(db);
    char *report = NULL;
    assert_int_equal(tkv_verify(dir, o, &report), TKV_CORRUPTION);
    assert_non_null(strstr(report, "range deletion block"));
    tkv_free(report);
    tkv_options_free(o);
    tu_tmpdir_free(dir);
}

/* ---------------------------------------------------------------- randomized, against the model */

#define RK_N 4000 /* keys "r0000" .. "r3999"; range bounds may be any string near them */

typedef struct rparams {
    const char *name;
    uint64_t ops;
    uint64_t reopen_every;
    const char *opts[3][2];
} rparams;

typedef struct rctx {
    const rparams *p;
    tu_rng r;
    char *dir;
    tkv_options *o;
    tkv_db *db;
    tu_model *m;
    const tkv_snapshot *snap[3];
    tu_model *sm[3];
    int nsnap;
    tkv_batch *b;
    char where[64];
    uint64_t n_rdel, n_put, n_del, n_get;
} rctx;

/* rkey -- a key of the key space, or (bounds) sometimes a string between
 * or beside them ("r0123", "r01234", "r0123\0", "r"), 0..1 in 8. */
static size_t rkey(rctx *c, char *b, int bound)
{
    unsigned i = (unsigned)tu_rng_below(&c->r, RK_N);
    int n = snprintf(b, 24, "r%04u", i);
    if (bound && tu_rng_chance(&c->r, 120000)) {
        uint64_t how = tu_rng_below(&c->r, 3);
        if (how == 0) b[n++] = (char)('0' + tu_rng_below(&c->r, 10)); /* a longer key */
        else if (how == 1) b[n++] = 0;                                /* the key right after */
        else n = 1;                                                   /* "r": before every key */
    }
    return (size_t)n;
}

/* rbounds -- a range [a, b): b up to ~300 keys after a; now and then empty
 * (a == b) or the whole key space. */
static void rbounds(rctx *c, char *a, size_t *an, char *b, size_t *bn)
{
    *an = rkey(c, a, 1);
    if (tu_rng_chance(&c->r, 30000)) {
        memcpy(b, a, *an);
        *bn = *an;
        return;
    }
    if (tu_rng_chance(&c->r, 2000)) {
        *an = 1;
        memcpy(b, "s", 1);
        *bn = 1;
        return;
    }
    unsigned i = (unsigned)strtoul(a + 1, NULL, 10);
    if (*an == 1) i = 0;
    unsigned j = i + 1 + (unsigned)tu_rng_below(&c->r, tu_rng_chance(&c->r, 100000) ? 100 : 8);
    *bn = (size_t)snprintf(b, 24, "r%04u", j);
}

/* rvalue -- 20..1000 bytes (v has RV_MAX), distinct per put. */
#define RV_MAX 1000
static void rvalue(rctx *c, char *v, size_t *vn)
{
    *vn = (size_t)tu_rng_range(&c->r, 20, RV_MAX);
    tu_rng_fill(&c->r, v, *vn);
    snprintf(v, 20, "v%llu-", (unsigned long long)c->n_put);
}

static void r_put(rctx *c)
{
    char k[24], v[RV_MAX];
    size_t kn = rkey(c, k, 0), vn;
    rvalue(c, v, &vn);
    assert_int_equal(tu_put_model(c->db, c->m, k, kn, v, vn, 0), TKV_OK);
    c->n_put++;
}

static void r_del(rctx *c)
{
    char k[24];
    size_t kn = rkey(c, k, 0);
    assert_int_equal(tkv_delete(c->db, k, kn, 0), TKV_OK);
    tu_model_del(c->m, k, kn);
    c->n_del++;
}

static void r_delrange(rctx *c)
{
    char a[24], b[24];
    size_t an, bn;
    rbounds(c, a, &an, b, &bn);
    int rc = tkv_delete_range(c->db, a, an, b, bn, tu_rng_chance(&c->r, 20000) ? TKV_SYNC : 0);
    if (rc != TKV_OK)
        fail_msg("%s: delete_range %s..%s = %d (%s)", c->where, tu_hex(a, an), tu_hex(b, bn), rc, tkv_errmsg());
    tu_model_del_range(c->m, a, an, b, bn);
    c->n_rdel++;
}

/* r_batch -- 1..10 puts, deletes and range deletions in one batch, applied
 * to the model in order. */
static void r_batch(rctx *c)
{
    tkv_batch_clear(c->b);
    tu_model *pend = tu_model_copy(c->m);
    size_t n = (size_t)tu_rng_range(&c->r, 1, 10);
    for (size_t i = 0; i < n; i++) {
        char a[24], b[24], v[RV_MAX];
        size_t an, bn, vn;
        uint64_t x = tu_rng_below(&c->r, 10);
        if (x < 7) {
            an = rkey(c, a, 0);
            rvalue(c, v, &vn);
            assert_int_equal(tkv_batch_put(c->b, a, an, v, vn), TKV_OK);
            tu_model_put(pend, a, an, v, vn);
        } else if (x < 9) {
            an = rkey(c, a, 0);
            assert_int_equal(tkv_batch_delete(c->b, a, an), TKV_OK);
            tu_model_del(pend, a, an);
        } else {
            rbounds(c, a, &an, b, &bn);
            assert_int_equal(tkv_batch_delete_range(c->b, a, an, b, bn), TKV_OK);
            tu_model_del_range(pend, a, an, b, bn);
        }
    }
    assert_int_equal(tkv_write(c->db, c->b, 0), TKV_OK);
    tu_model_free(c->m);
    c->m = pend;
}

/* r_pos_is -- the iterator stands at model position pos (valid iff 0 <=
 * pos < n, within [lo, hi) of the model when bounded). */
static void r_pos_is(rctx *c, tkv_iter *it, const tu_model *m, long long pos, long long lo, long long hi,
                     const char *how)
{
    int valid = tkv_iter_valid(it);
    if (pos < lo || pos >= hi) {
        if (valid) {
            size_t kn;
            const void *k = tkv_iter_key(it, &kn);
            fail_msg("%s: iterator after %s at %s, model past its range", c->where, how, tu_hex(k, kn));
        }
        if (tkv_iter_status(it)) fail_msg("%s: iterator status %d (%s)", c->where, tkv_iter_status(it), tkv_errmsg());
        return;
    }
    const void *mk, *mv;
    size_t mkn, mvn, kn, vn;
    tu_model_at(m, (size_t)pos, &mk, &mkn, &mv, &mvn);
    if (!valid)
        fail_msg("%s: iterator invalid after %s (status %d), model at %s", c->where, how, tkv_iter_status(it),
                 tu_hex(mk, mkn));
    const void *k = tkv_iter_key(it, &kn), *v = tkv_iter_value(it, &vn);
    if (tu_keycmp(k, kn, mk, mkn) || vn != mvn || memcmp(v, mv, vn))
        fail_msg("%s: iterator after %s at %s, model at %s", c->where, how, tu_hex(k, kn), tu_hex(mk, mkn));
}

/* r_scan -- an iterator at snap (model m), sometimes bounded, positioned by a
 * seek, seek_for_prev, seek_first or seek_last and moved up to 100 steps
 * with direction changes, each position checked. */
static void r_scan(rctx *c, const tkv_snapshot *snap, const tu_model *m)
{
    long long n = (long long)tu_model_count(m), lo = 0, hi = n;
    tkv_read_options *ro = tkv_read_options_new();
    tkv_read_options_set_snapshot(ro, snap);
    if (tu_rng_chance(&c->r, 300000)) {
        char a[24], b[24];
        size_t an, bn;
        rbounds(c, a, &an, b, &bn);
        assert_int_equal(tkv_read_options_set_bounds(ro, a, an, b, bn), TKV_OK);
        lo = (long long)tu_model_lower_bound(m, a, an);
        hi = (long long)tu_model_lower_bound(m, b, bn);
    }
    tkv_iter *it;
    assert_int_equal(tkv_iter_new_opt(c->db, ro, &it), TKV_OK);
    tkv_read_options_free(ro);
    char k[24];
    size_t kn = rkey(c, k, 1);
    long long pos;
    uint64_t how = tu_rng_below(&c->r, 4);
    if (how == 0) {
        tkv_iter_seek(it, k, kn);
        pos = (long long)tu_model_lower_bound(m, k, kn);
        if (pos < lo) pos = lo;
    } else if (how == 1) {
        tkv_iter_seek_for_prev(it, k, kn);
        pos = (long long)tu_model_lower_bound(m, k, kn);
        const void *mk;
        size_t mkn;
        if (pos < n && (tu_model_at(m, (size_t)pos, &mk, &mkn, NULL, NULL), tu_keycmp(mk, mkn, k, kn) == 0)) pos++;
        pos--; /* the last key <= k */
        if (pos >= hi) pos = hi - 1;
    } else if (how == 2) {
        tkv_iter_seek_first(it);
        pos = lo;
    } else {
        tkv_iter_seek_last(it);
        pos = hi - 1;
    }
    r_pos_is(c, it, m, pos, lo, hi, "a seek");
    int fwd = tu_rng_chance(&c->r, 500000);
    for (int i = (int)tu_rng_below(&c->r, 100); i > 0 && pos >= lo && pos < hi; i--) {
        if (tu_rng_chance(&c->r, 100000)) fwd = !fwd;
        if (fwd) tkv_iter_next(it);
        else tkv_iter_prev(it);
        pos += fwd ? 1 : -1;
        r_pos_is(c, it, m, pos, lo, hi, fwd ? "next" : "prev");
    }
    tkv_iter_free(it);
}

/* r_check_key -- tkv_get of key k at snap agrees with model m. */
static void r_check_key(rctx *c, const tkv_snapshot *snap, const tu_model *m, const char *k, size_t kn)
{
    const void *mv;
    size_t mvn, vn = 0;
    void *v = NULL;
    int present = tu_model_get(m, k, kn, &mv, &mvn);
    int rc = tkv_get(c->db, snap, k, kn, &v, &vn);
    if (present != (rc == TKV_OK) || (present && (vn != mvn || memcmp(v, mv, vn))) || (!present && rc != TKV_NOT_FOUND))
        fail_msg("%s: get %s%s = %d (%s), model %s", c->where, tu_hex(k, kn), snap ? " at a snapshot" : "", rc,
                 rc == TKV_OK ? tu_hex(v, vn) : tkv_errmsg(), present ? tu_hex(mv, mvn) : "absent");
    tkv_free(v);
    c->n_get++;
}

/* r_check_gets -- `n` random keys (every key when n == 0) at snap, by
 * tkv_get, and the same keys by one tkv_multi_get. */
static void r_check_gets(rctx *c, const tkv_snapshot *snap, const tu_model *m, size_t n)
{
    enum { B = 64 };
    size_t total = n ? n : RK_N;
    for (size_t base = 0; base < total; base += B) {
        char kb[B][24];
        const void *kp[B];
        size_t kl[B], vl[B];
        void *vals[B];
        int st[B];
        size_t cnt = total - base < B ? total - base : B;
        for (size_t i = 0; i < cnt; i++) {
            kl[i] = n ? rkey(c, kb[i], 1) : (size_t)snprintf(kb[i], 24, "r%04zu", base + i);
            kp[i] = kb[i];
            r_check_key(c, snap, m, kb[i], kl[i]);
        }
        assert_int_equal(tkv_multi_get(c->db, snap, cnt, kp, kl, vals, vl, st), TKV_OK);
        for (size_t i = 0; i < cnt; i++) {
            const void *mv;
            size_t mvn;
            int present = tu_model_get(m, kb[i], kl[i], &mv, &mvn);
            if (st[i] != (present ? TKV_OK : TKV_NOT_FOUND) || (present && (vl[i] != mvn || memcmp(vals[i], mv, mvn))))
                fail_msg("%s: multi_get %s = %d, model %s", c->where, tu_hex(kb[i], kl[i]), st[i],
                         present ? tu_hex(mv, mvn) : "absent");
            tkv_free(vals[i]);
        }
    }
}

static void r_snapshot(rctx *c)
{
    if (c->nsnap < 3 && (c->nsnap == 0 || tu_rng_chance(&c->r, 300000))) {
        c->snap[c->nsnap] = tkv_snapshot_new(c->db);
        c->sm[c->nsnap++] = tu_model_copy(c->m);
        return;
    }
    int i = (int)tu_rng_below(&c->r, (uint64_t)c->nsnap);
    if (tu_rng_chance(&c->r, 400000)) {
        r_check_gets(c, c->snap[i], c->sm[i], 32);
        return;
    }
    if (tu_rng_chance(&c->r, 500000)) {
        r_scan(c, c->snap[i], c->sm[i]);
        return;
    }
    tkv_snapshot_free(c->db, c->snap[i]);
    tu_model_free(c->sm[i]);
    c->nsnap--;
    c->snap[i] = c->snap[c->nsnap];
    c->sm[i] = c->sm[c->nsnap];
}

/* r_full -- every key, latest and at each snapshot. */
static void r_full(rctx *c, const char *when)
{
    snprintf(c->where + strlen(c->where), sizeof c->where - strlen(c->where), " (%s)", when);
    r_check_gets(c, NULL, c->m, 0);
    tu_check_db(c->db, NULL, c->m, c->where);
    for (int i = 0; i < c->nsnap; i++) {
        r_check_gets(c, c->snap[i], c->sm[i], 0);
        tu_check_db(c->db, c->snap[i], c->sm[i], c->where);
    }
}

static void r_reopen(rctx *c)
{
    r_full(c, "before reopen");
    while (c->nsnap) {
        c->nsnap--;
        tkv_snapshot_free(c->db, c->snap[c->nsnap]);
        tu_model_free(c->sm[c->nsnap]);
    }
    tu_close_ok(c->db);
    c->db = tu_open_ok(c->dir, c->o);
    r_full(c, "after reopen");
}

/* r_op -- one random operation. */
static void r_op(rctx *c)
{
    uint64_t x = tu_rng_below(&c->r, 1000);
    if (x < 450) r_put(c);
    else if (x < 480) r_del(c);
    else if (x < 500) r_delrange(c);
    else if (x < 540) r_batch(c);
    else if (x < 590) r_snapshot(c);
    else if (x < 595) assert_int_equal(tkv_flush(c->db), TKV_OK);
    else if (x < 597) {
        char a[24], b[24];
        size_t an, bn;
        rbounds(c, a, &an, b, &bn);
        int whole = tu_rng_chance(&c->r, 300000);
        assert_int_equal(tkv_compact_range(c->db, whole ? NULL : a, whole ? 0 : an, whole ? NULL : b, whole ? 0 : bn),
                         TKV_OK);
    } else if (x < 620) r_check_gets(c, NULL, c->m, 16);
    else if (x < 660) r_scan(c, NULL, c->m);
    else {
        char k[24];
        size_t kn = rkey(c, k, 1);
        r_check_key(c, NULL, c->m, k, kn);
    }
}

static void run_random(const rparams *p)
{
    rctx *c = calloc(1, sizeof *c);
    assert_non_null(c);
    c->p = p;
    tu_rng_init(&c->r, tu_seed() ^ tu_mix64(p->ops));
    c->dir = tu_tmpdir("rdel-rand");
    c->o = tu_small_options();
    for (int i = 0; i < 3 && p->opts[i][0]; i++)
        assert_int_equal(tkv_options_set(c->o, p->opts[i][0], p->opts[i][1]), 0);
    c->db = tu_open_ok(c->dir, c->o);
    c->m = tu_model_new();
    c->b = tkv_batch_new();
    uint64_t total = p->ops * tu_scale();
    for (uint64_t op = 0; op < total; op++) {
        snprintf(c->where, sizeof c->where, "%s op %llu", p->name, (unsigned long long)op);
        if (op > 0 && op % p->reopen_every == 0) r_reopen(c);
        r_op(c);
    }
    snprintf(c->where, sizeof c->where, "%s end", p->name);
    r_reopen(c);
    char *lv = tkv_property(c->db, "tkv.levels");
    fprintf(stderr, "# %s: %llu puts, %llu deletes, %llu range deletions, %llu gets checked; tkv.levels:\n%s", p->name,
            (unsigned long long)c->n_put, (unsigned long long)c->n_del, (unsigned long long)c->n_rdel,
            (unsigned long long)c->n_get, lv);
    tkv_free(lv);
    tu_close_ok(c->db);
    assert_int_equal(tkv_destroy(c->dir), TKV_OK);
    tu_tmpdir_free(c->dir);
    tkv_options_free(c->o);
    tkv_batch_free(c->b);
    tu_model_free(c->m);
    free(c);
}

static void random_sst(void **state)
{
    (void)state;
    static const rparams p = {"random_sst", 30000, 10000, {{"l0", "sst"}}};
    run_random(&p);
}

/* random_matrix -- l0=matrix (testutil's 16M pool, columns of 256K). */
static void random_matrix(void **state)
{
    (void)state;
    static const rparams p = {"random_matrix", 30000, 10000, {{"l0", "matrix"}}};
    run_random(&p);
}

/* random_full_pool -- a 1M pool, columns of 64K, two at a time: flushes wait
 * for columns, rows are read with partly drained cursors and range
 * tombstone starts, columns in flight cover consecutive ranges. */
static void random_full_pool(void **state)
{
    (void)state;
    static const rparams p = {
        "random_full_pool", 20000, 10000, {{"pmem_size", "1M"}, {"column_bytes", "64K"}, {"column_gate", "always"}}};
    run_random(&p);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(frags_random),  cmocka_unit_test(frags_edges),       cmocka_unit_test(encode_decode),
        cmocka_unit_test(api_args),      cmocka_unit_test(mem_semantics),     cmocka_unit_test(tiers_sst),
        cmocka_unit_test(space_sst),     cmocka_unit_test(random_sst),        cmocka_unit_test(tiers_matrix),
        cmocka_unit_test(space_matrix),  cmocka_unit_test(random_matrix),     cmocka_unit_test(random_full_pool),
        cmocka_unit_test(corrupt_block), cmocka_unit_test(checkpoint_matrix), cmocka_unit_test(checkpoint_sst),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
