// SPDX-License-Identifier: Apache-2.0
/*
 * test_readopts.c -- read options through the public API (tkv_read_options):
 *
 *  bounds_model      iterators with bounds, seek and seek_for_prev, against a
 *                    model, with the data spread over memtables, rows and SSTs,
 *                    at the latest state and at snapshots taken in between
 *  get_into_tiers    tkv_get_into: a value that fits, one that does not
 *                    (TKV_TRUNCATED, its prefix and length), absent and deleted
 *                    keys, from each tier, at a snapshot
 *  fill_cache        a scan with fill_cache=0 leaves the block cache as it was
 *  verify_checksums  a flipped byte in an SST data block: reads with the
 *                    default report TKV_CORRUPTION; with verify_checksums=0 the
 *                    block's bytes come back, and are not cached for others
 *  errors            bad arguments are TKV_INVALID and change nothing
 *
 * Randomized cases print their seed; rerun one with TKV_TEST_SEED=<seed>.
 */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"
#include "tierkv.h"

#define NKEYS 600

static int key_of(unsigned i, char *k) { return snprintf(k, 16, "k%05u", i); }

/* random_target -- a seek target: a key of the key space, a prefix of one,
 * one just past it, or a string outside the key space. */
static size_t random_target(tu_rng *r, char *t)
{
    switch (tu_rng_below(r, 5)) {
    case 0:
        return (size_t)key_of((unsigned)tu_rng_below(r, NKEYS), t) - 1; /* a prefix */
    case 1: {
        size_t n = (size_t)key_of((unsigned)tu_rng_below(r, NKEYS), t);
        t[n] = '\0'; /* the key followed by a zero byte: just past it */
        return n + 1;
    }
    case 2:
        return (size_t)snprintf(t, 16, "%s", tu_rng_below(r, 2) ? "a" : "z");
    default:
        return (size_t)key_of((unsigned)tu_rng_below(r, NKEYS), t);
    }
}

/* model_index -- the model's entries inside [lo, hi) (NULL: open) as indexes
 * into m: entries first..end-1. */
static void model_range(const tu_model *m, const char *lo, size_t ln, const char *hi, size_t hn, size_t *first,
                        size_t *end)
{
    *first = lo ? tu_model_lower_bound(m, lo, ln) : 0;
    *end = hi ? tu_model_lower_bound(m, hi, hn) : tu_model_count(m);
    if (*end < *first) *end = *first;
}

/* expect_at -- the iterator is at model entry i (i == SIZE_MAX: not valid). */
static void expect_at(tkv_iter *it, const tu_model *m, size_t i, const char *what)
{
    if (i == SIZE_MAX) {
        if (tkv_iter_valid(it)) {
            size_t kl;
            const void *k = tkv_iter_key(it, &kl);
            fail_msg("%s: iterator at %s, expected the end", what, tu_hex(k, kl));
        }
        assert_int_equal(tkv_iter_status(it), TKV_OK);
        return;
    }
    const void *mk, *mv;
    size_t mkn, mvn, kl, vl;
    tu_model_at(m, i, &mk, &mkn, &mv, &mvn);
    if (!tkv_iter_valid(it))
        fail_msg("%s: iterator not valid (status %d), expected %s", what, tkv_iter_status(it), tu_hex(mk, mkn));
    const void *k = tkv_iter_key(it, &kl), *v = tkv_iter_value(it, &vl);
    if (kl != mkn || memcmp(k, mk, kl) != 0) fail_msg("%s: at %s, expected %s", what, tu_hex(k, kl), tu_hex(mk, mkn));
    assert_int_equal(vl, mvn);
    assert_memory_equal(v, mv, vl);
}

/* check_bounded -- an iterator with bounds [lo, hi) at snap against model m:
 * full scans both ways, then seeks and seek_for_prevs with short walks. */
static void check_bounded(tkv_db *db, const tkv_snapshot *snap, const tu_model *m, const char *lo, size_t ln,
                          const char *hi, size_t hn, tu_rng *r, const char *what)
{
    tkv_read_options *ro = tkv_read_options_new();
    assert_non_null(ro);
    tkv_read_options_set_snapshot(ro, snap);
    assert_int_equal(tkv_read_options_set_bounds(ro, lo, ln, hi, hn), TKV_OK);
    if (tu_rng_below(r, 2)) assert_int_equal(tkv_read_options_set(ro, "fill_cache", "0"), TKV_OK);
    tkv_iter *it;
    assert_int_equal(tkv_iter_new_opt(db, ro, &it), TKV_OK);
    tkv_read_options_free(ro); /* the iterator keeps its own copy of the bounds */
    size_t first, end;
    model_range(m, lo, ln, hi, hn, &first, &end);
    size_t i = first;
    for (tkv_iter_seek_first(it); i < end; i++, tkv_iter_next(it)) expect_at(it, m, i, what);
    expect_at(it, m, SIZE_MAX, what);
    i = end;
    for (tkv_iter_seek_last(it); i > first; i--, tkv_iter_prev(it)) expect_at(it, m, i - 1, what);
    expect_at(it, m, SIZE_MAX, what);
    for (int s = 0; s < 40; s++) {
        char t[20];
        size_t tn = random_target(r, t);
        size_t pos;
        if (tu_rng_below(r, 2)) {
            tkv_iter_seek(it, t, tn);
            pos = tu_model_lower_bound(m, t, tn);
            if (pos < first) pos = first;
            if (pos >= end) pos = SIZE_MAX;
        } else {
            tkv_iter_seek_for_prev(it, t, tn);
            size_t above = tu_model_lower_bound(m, t, tn); /* first > t, or == t */
            const void *ak;
            size_t akn;
            if (above < tu_model_count(m)) {
                tu_model_at(m, above, &ak, &akn, NULL, NULL);
                if (akn == tn && memcmp(ak, t, tn) == 0) above++; /* t itself is <= t */
            }
            if (above > end) above = end;
            pos = above > first ? above - 1 : SIZE_MAX;
        }
        expect_at(it, m, pos, what);
        for (int w = (int)tu_rng_below(r, 6); w > 0 && pos != SIZE_MAX; w--) {
            if (tu_rng_below(r, 2)) {
                tkv_iter_next(it);
                pos = pos + 1 < end ? pos + 1 : SIZE_MAX;
            } else {
                tkv_iter_prev(it);
                pos = pos > first ? pos - 1 : SIZE_MAX;
            }
            expect_at(it, m, pos, what);
        }
    }
    tkv_iter_free(it);
}

/* random_bound -- NULL (a third of the time), else a target-like string in b. */
static const char *random_bound(tu_rng *r, char *b, size_t *n)
{
    if (tu_rng_below(r, 3) == 0) {
        *n = 0;
        return NULL;
    }
    *n = random_target(r, b);
    return b;
}

static void bounds_model(void **state)
{
    (void)state;
    tu_rng r;
    tu_rng_init(&r, tu_seed());
    char *dir = tu_tmpdir("readopts-model");
    tkv_options *o = tu_small_options();
    tkv_db *db = tu_open_ok(dir, o);
    tu_model *m = tu_model_new();
    for (int phase = 0; phase < 6; phase++) {
        for (int i = 0; i < 700; i++) {
            char k[16], v[64];
            unsigned key = (unsigned)tu_rng_below(&r, NKEYS);
            int kn = key_of(key, k);
            if (tu_rng_below(&r, 5) == 0) {
                assert_int_equal(tkv_delete(db, k, (size_t)kn, 0), TKV_OK);
                tu_model_del(m, k, (size_t)kn);
            } else {
                int vn = snprintf(v, sizeof v, "v%d-%u-%llu", phase, key, (unsigned long long)tu_rng_next(&r));
                assert_int_equal(tu_put_model(db, m, k, (size_t)kn, v, (size_t)vn, 0), TKV_OK);
            }
        }
        /* spread the data: some phases end in rows, some in SSTs, the last in memtables */
        if (phase % 3 == 0) assert_int_equal(tkv_flush(db), TKV_OK);
        if (phase % 3 == 1) assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK);
        const tkv_snapshot *snap = tkv_snapshot_new(db);
        assert_non_null(snap);
        tu_model *at_snap = tu_model_copy(m);
        for (int i = 0; i < 200; i++) { /* writes after the snapshot it must not see */
            char k[16];
            int kn = key_of((unsigned)tu_rng_below(&r, NKEYS), k);
            assert_int_equal(tu_put_model(db, m, k, (size_t)kn, "later", 5, 0), TKV_OK);
        }
        for (int b = 0; b < 6; b++) {
            char lb[20], hb[20], what[64];
            size_t ln, hn;
            const char *lo = random_bound(&r, lb, &ln), *hi = random_bound(&r, hb, &hn);
            if (lo && hi && tu_keycmp(lo, ln, hi, hn) > 0) {
                const char *t = lo;
                size_t tn = ln;
                lo = hi, ln = hn, hi = t, hn = tn;
            }
            snprintf(what, sizeof what, "phase %d bounds %d (latest)", phase, b);
            check_bounded(db, NULL, m, lo, ln, hi, hn, &r, what);
            snprintf(what, sizeof what, "phase %d bounds %d (snapshot)", phase, b);
            check_bounded(db, snap, at_snap, lo, ln, hi, hn, &r, what);
        }
        tkv_snapshot_free(db, snap);
        tu_model_free(at_snap);
    }
    tu_model_free(m);
    tu_close_ok(db);
    tkv_options_free(o);
    tu_tmpdir_free(dir);
}

/* get_into_check -- tkv_get_into of key into buffers of several sizes. */
static void get_into_check(tkv_db *db, const tkv_read_options *ro, const char *key, const char *want, size_t wn)
{
    char buf[12000];
    size_t vlen = 12345;
    if (!want) {
        assert_int_equal(tkv_get_into(db, ro, key, strlen(key), buf, sizeof buf, &vlen), TKV_NOT_FOUND);
        assert_int_equal(vlen, 0);
        return;
    }
    memset(buf, '#', sizeof buf);
    assert_int_equal(tkv_get_into(db, ro, key, strlen(key), buf, sizeof buf, &vlen), TKV_OK);
    assert_int_equal(vlen, wn);
    assert_memory_equal(buf, want, wn);
    assert_int_equal(buf[wn], '#'); /* nothing written past the value */
    memset(buf, '#', sizeof buf);
    assert_int_equal(tkv_get_into(db, ro, key, strlen(key), buf, wn, &vlen), TKV_OK); /* exactly its size */
    assert_int_equal(vlen, wn);
    assert_memory_equal(buf, want, wn);
    if (wn == 0) return;
    memset(buf, '#', sizeof buf);
    size_t cap = wn / 2;
    assert_int_equal(tkv_get_into(db, ro, key, strlen(key), buf, cap, &vlen), TKV_TRUNCATED);
    assert_int_equal(vlen, wn); /* the length to ask again with */
    assert_memory_equal(buf, want, cap);
    assert_int_equal(buf[cap], '#');
    assert_int_equal(tkv_get_into(db, ro, key, strlen(key), NULL, 0, &vlen), TKV_TRUNCATED);
    assert_int_equal(vlen, wn);
}

static void get_into_tiers(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("readopts-get");
    tkv_options *o = tu_small_options();
    tkv_db *db = tu_open_ok(dir, o);
    static char big[10000];
    for (size_t i = 0; i < sizeof big; i++) big[i] = (char)('a' + i % 26);
    /* tier by tier: SSTs (compact_range), rows (flush), memtable */
    const char *tiers[] = {"sst", "row", "mem"};
    for (int t = 0; t < 3; t++) {
        char k[32];
        snprintf(k, sizeof k, "%s-small", tiers[t]);
        assert_int_equal(tkv_put(db, k, strlen(k), "abcdef", 6, 0), TKV_OK);
        snprintf(k, sizeof k, "%s-big", tiers[t]);
        assert_int_equal(tkv_put(db, k, strlen(k), big, sizeof big, 0), TKV_OK);
        snprintf(k, sizeof k, "%s-empty", tiers[t]);
        assert_int_equal(tkv_put(db, k, strlen(k), "", 0, 0), TKV_OK);
        snprintf(k, sizeof k, "%s-gone", tiers[t]);
        assert_int_equal(tkv_put(db, k, strlen(k), "x", 1, 0), TKV_OK);
        assert_int_equal(tkv_delete(db, k, strlen(k), 0), TKV_OK);
        if (t == 0) assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK);
        if (t == 1) assert_int_equal(tkv_flush(db), TKV_OK);
    }
    const tkv_snapshot *snap = tkv_snapshot_new(db);
    tkv_read_options *ro = tkv_read_options_new();
    tkv_read_options_set_snapshot(ro, snap);
    for (int t = 0; t < 3; t++) { /* overwritten after the snapshot */
        char k[32];
        snprintf(k, sizeof k, "%s-small", tiers[t]);
        assert_int_equal(tkv_put(db, k, strlen(k), "NEWER", 5, 0), TKV_OK);
    }
    for (int t = 0; t < 3; t++) {
        char k[32];
        snprintf(k, sizeof k, "%s-small", tiers[t]);
        get_into_check(db, ro, k, "abcdef", 6);
        get_into_check(db, NULL, k, "NEWER", 5);
        snprintf(k, sizeof k, "%s-big", tiers[t]);
        get_into_check(db, ro, k, big, sizeof big);
        get_into_check(db, NULL, k, big, sizeof big);
        snprintf(k, sizeof k, "%s-empty", tiers[t]);
        get_into_check(db, NULL, k, "", 0);
        snprintf(k, sizeof k, "%s-gone", tiers[t]);
        get_into_check(db, NULL, k, NULL, 0);
        snprintf(k, sizeof k, "%s-never", tiers[t]);
        get_into_check(db, ro, k, NULL, 0);
    }
    tkv_read_options_free(ro);
    tkv_snapshot_free(db, snap);
    tu_close_ok(db);
    tkv_options_free(o);
    tu_tmpdir_free(dir);
}

/* cache_used -- tkv.memory's "block_cache: ... used=N". */
static uint64_t cache_used(tkv_db *db)
{
    char *p = tkv_property(db, "tkv.memory");
    assert_non_null(p);
    const char *line = strstr(p, "block_cache:");
    assert_non_null(line);
    const char *u = strstr(line, "used=");
    assert_non_null(u);
    uint64_t v = strtoull(u + 5, NULL, 10);
    tkv_free(p);
    return v;
}

/* scan -- a full forward scan with read options ro; returns the keys seen. */
static size_t scan(tkv_db *db, const tkv_read_options *ro)
{
    tkv_iter *it;
    assert_int_equal(tkv_iter_new_opt(db, ro, &it), TKV_OK);
    size_t n = 0;
    for (tkv_iter_seek_first(it); tkv_iter_valid(it); tkv_iter_next(it)) n++;
    assert_int_equal(tkv_iter_status(it), TKV_OK);
    tkv_iter_free(it);
    return n;
}

static void fill_cache(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("readopts-cache");
    tkv_options *o = tu_small_options();
    assert_int_equal(tkv_options_set(o, "block_cache_size", "8M"), TKV_OK);
    tkv_db *db = tu_open_ok(dir, o);
    char v[200];
    memset(v, 'v', sizeof v);
    for (unsigned i = 0; i < 3000; i++) {
        char k[16];
        int kn = key_of(i, k);
        assert_int_equal(tkv_put(db, k, (size_t)kn, v, sizeof v, 0), TKV_OK);
    }
    assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK);
    tu_close_ok(db);
    db = tu_open_ok(dir, o); /* an empty block cache */
    uint64_t before = cache_used(db);
    tkv_read_options *ro = tkv_read_options_new();
    assert_int_equal(tkv_read_options_set(ro, "fill_cache", "off"), TKV_OK);
    assert_int_equal(scan(db, ro), 3000);
    char k[16], buf[256];
    size_t vl;
    int kn = key_of(1234, k);
    assert_int_equal(tkv_get_into(db, ro, k, (size_t)kn, buf, sizeof buf, &vl), TKV_OK);
    assert_int_equal(cache_used(db), before); /* ~600 KB of blocks read, none kept */
    assert_int_equal(tkv_read_options_set(ro, "fill_cache", "1"), TKV_OK);
    assert_int_equal(scan(db, ro), 3000);
    assert_true(cache_used(db) > before + 300000); /* the same scan with the default fills it */
    tkv_read_options_free(ro);
    tu_close_ok(db);
    tkv_options_free(o);
    tu_tmpdir_free(dir);
}

/* flip_in_ssts -- finds `pat` in the .sst files of dir and changes the byte
 * after it; 1 if found. */
static int flip_in_ssts(const char *dir, const char *pat)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int done = 0;
    while (!done && (e = readdir(d))) {
        if (!tu_is_sst(e->d_name)) continue;
        char *path = tu_path(dir, e->d_name);
        int fd = open(path, O_RDWR);
        assert_true(fd >= 0);
        struct stat st;
        assert_int_equal(fstat(fd, &st), 0);
        char *b = malloc((size_t)st.st_size);
        assert_non_null(b);
        assert_int_equal(pread(fd, b, (size_t)st.st_size, 0), st.st_size);
        char *hit = memmem(b, (size_t)st.st_size, pat, strlen(pat));
        if (hit) {
            char c = hit[strlen(pat)] ^ 0x20;
            assert_int_equal(pwrite(fd, &c, 1, hit - b + (off_t)strlen(pat)), 1);
            assert_int_equal(fsync(fd), 0);
            done = 1;
        }
        free(b);
        close(fd);
        free(path);
    }
    closedir(d);
    return done;
}

static void verify_checksums(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("readopts-verify");
    tkv_options *o = tu_small_options();
    assert_int_equal(tkv_options_set(o, "compression", "none"), TKV_OK); /* the value's bytes as written */
    tkv_db *db = tu_open_ok(dir, o);
    const char *val = "marker:abcdefghijklmnopqrstuvwxyz";
    assert_int_equal(tkv_put(db, "victim", 6, val, strlen(val), 0), TKV_OK);
    assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK);
    tu_close_ok(db);
    assert_true(flip_in_ssts(dir, "marker:abc")); /* 'd' becomes 'D' */
    db = tu_open_ok(dir, o);
    void *v;
    size_t vl;
    char buf[64];
    assert_int_equal(tkv_get(db, NULL, "victim", 6, &v, &vl), TKV_CORRUPTION);
    tkv_read_options *ro = tkv_read_options_new();
    assert_int_equal(tkv_get_into(db, ro, "victim", 6, buf, sizeof buf, &vl), TKV_CORRUPTION);
    assert_int_equal(tkv_read_options_set(ro, "verify_checksums", "0"), TKV_OK);
    assert_int_equal(tkv_get_into(db, ro, "victim", 6, buf, sizeof buf, &vl), TKV_OK);
    assert_int_equal(vl, strlen(val));
    assert_memory_equal(buf, "marker:abcDefg", 14); /* what the block holds, as documented */
    tkv_iter *it;
    assert_int_equal(tkv_iter_new_opt(db, ro, &it), TKV_OK);
    tkv_iter_seek_first(it);
    assert_true(tkv_iter_valid(it));
    tkv_iter_free(it);
    /* the unverified block was not cached: a default read still fails */
    assert_int_equal(tkv_get(db, NULL, "victim", 6, &v, &vl), TKV_CORRUPTION);
    assert_int_equal(tkv_iter_new(db, NULL, &it), TKV_OK);
    tkv_iter_seek_first(it);
    assert_false(tkv_iter_valid(it));
    assert_int_equal(tkv_iter_status(it), TKV_CORRUPTION);
    tkv_iter_free(it);
    tkv_read_options_free(ro);
    tkv_close(db); /* a closing report of the corruption is not this test's business */
    tkv_options_free(o);
    tu_tmpdir_free(dir);
}

static void errors(void **state)
{
    (void)state;
    tkv_read_options *ro = tkv_read_options_new();
    assert_non_null(ro);
    assert_int_equal(tkv_read_options_set_bounds(ro, "b", 1, "c", 1), TKV_OK);
    assert_int_equal(tkv_read_options_set_bounds(ro, "c", 1, "b", 1), TKV_INVALID);
    assert_non_null(strstr(tkv_errmsg(), "lower bound is above"));
    assert_int_equal(tkv_read_options_set_bounds(ro, "ab", 2, "a", 1), TKV_INVALID);
    assert_int_equal(tkv_read_options_set_bounds(ro, NULL, 3, NULL, 0), TKV_INVALID);
    static char huge[TKV_MAX_KEY_SIZE + 1];
    assert_int_equal(tkv_read_options_set_bounds(ro, NULL, 0, huge, sizeof huge), TKV_INVALID);
    assert_int_equal(tkv_read_options_set_bounds(ro, "a", 1, "a", 1), TKV_OK); /* empty range: allowed */
    assert_int_equal(tkv_read_options_set_bounds(NULL, NULL, 0, NULL, 0), TKV_INVALID);
    assert_int_equal(tkv_read_options_set(ro, "fill_cash", "1"), TKV_INVALID);
    assert_non_null(strstr(tkv_errmsg(), "fill_cash"));
    assert_int_equal(tkv_read_options_set(ro, "fill_cache", "maybe"), TKV_INVALID);
    assert_int_equal(tkv_read_options_set(ro, NULL, "1"), TKV_INVALID);
    tkv_read_options_free(NULL);

    char *dir = tu_tmpdir("readopts-errors");
    tkv_options *o = tu_small_options();
    tkv_db *db = tu_open_ok(dir, o);
    assert_int_equal(tkv_put(db, "a", 1, "1", 1, 0), TKV_OK);
    assert_int_equal(tkv_put(db, "b", 1, "2", 1, 0), TKV_OK);
    /* [a, a): nothing, whatever the seek */
    tkv_iter *it;
    assert_int_equal(tkv_iter_new_opt(db, ro, &it), TKV_OK);
    tkv_iter_seek_first(it);
    assert_false(tkv_iter_valid(it));
    tkv_iter_seek_last(it);
    assert_false(tkv_iter_valid(it));
    tkv_iter_seek_for_prev(it, "z", 1);
    assert_false(tkv_iter_valid(it));
    assert_int_equal(tkv_iter_status(it), TKV_OK);
    tkv_iter_free(it);
    /* an empty lower bound is a bound, and the NULL read options are the defaults */
    assert_int_equal(tkv_read_options_set_bounds(ro, "", 0, NULL, 0), TKV_OK);
    assert_int_equal(tkv_iter_new_opt(db, ro, &it), TKV_OK);
    tkv_iter_seek_first(it);
    assert_true(tkv_iter_valid(it));
    tkv_iter_free(it);
    assert_int_equal(tkv_iter_new_opt(db, NULL, &it), TKV_OK);
    tkv_iter_seek_for_prev(it, "az", 2);
    size_t kl;
    assert_true(tkv_iter_valid(it));
    assert_memory_equal(tkv_iter_key(it, &kl), "a", 1);
    tkv_iter_free(it);
    assert_int_equal(tkv_iter_new_opt(NULL, ro, &it), TKV_INVALID);
    assert_null(it);
    tkv_iter_seek_for_prev(NULL, "a", 1); /* a no-op */
    size_t vl = 7;
    char buf[4];
    assert_int_equal(tkv_get_into(db, NULL, "a", 1, NULL, 4, &vl), TKV_INVALID);
    assert_int_equal(tkv_get_into(db, NULL, "a", 1, buf, sizeof buf, NULL), TKV_INVALID);
    assert_int_equal(tkv_get_into(db, NULL, "", 0, buf, sizeof buf, &vl), TKV_INVALID);
    assert_int_equal(tkv_get_into(NULL, NULL, "a", 1, buf, sizeof buf, &vl), TKV_INVALID);
    assert_string_equal(tkv_strerror(TKV_TRUNCATED), "value larger than the buffer");
    tkv_read_options_free(ro);
    tu_close_ok(db);
    tkv_options_free(o);
    tu_tmpdir_free(dir);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(errors),           cmocka_unit_test(get_into_tiers), cmocka_unit_test(fill_cache),
        cmocka_unit_test(verify_checksums), cmocka_unit_test(bounds_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
