// SPDX-License-Identifier: Apache-2.0
/*
 * test_matrix_rowtable.c -- the RowTable format (src/matrix/rowtable_*.c),
 * standalone, on a pool (matrixutil.h):
 *   - 1..6 rows of random keys with several versions and tombstones: rowtable_rows_get
 *     at random snapshots against a model (present, absent, deleted keys),
 *     before and after reopening; forward pointers against brute-force lower
 *     bounds; iterators forward/reverse/seek against the model;
 *   - key comparisons of rowtable_rows_get over k = 8 rows of 100k entries, with and
 *     without hints: every lookup <= log2(n) + C_PER_ROW * k;
 *   - a broken chain (an older row's cursor advanced, a middle row dropped):
 *     still correct; dead pages released and free after reopen;
 *   - a flipped byte in data, metadata or header -> TKV_CORRUPTION naming the row;
 *   - crash simulation: power cut at every persist of build + commit of a row,
 *     of page release and of a drop -> after reopen each row is fully there
 *     and verifies, or absent, and free pages + row pages = total;
 *   - overlapping rows, build misuse, view cursors, a cursor after a trim;
 *   - rowtable_willneed reads an evicted row's range into the page cache, and
 *     no more than that range (test_row_willneed).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "io/io.h"
#include "matrix/pool.h"
#include "matrix/rowtable.h"
#include "matrixutil.h"
#include "mem/memtable.h"
#include "testutil.h"
#include "util/checksum.h"
#include "util/status.h"
#include "util/vec_iter.h"

/* The c of the bound log2(n) + c*k on the key comparisons of one rowtable_rows_get
 * over k rows (see test_comparison_bound). */
#define C_PER_ROW 5

/* file_offset -- where page `page` of the pool starts in its file. */
static uint64_t file_offset(pool *p, uint32_t page)
{
    return (uint64_t)(pool_page_addr(p, page) - pm_base(pool_region(p)));
}

static void flip_byte(const char *path, uint64_t off)
{
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    uint8_t b;
    assert_int_equal(pread(fd, &b, 1, (off_t)off), 1);
    b ^= 0x20;
    assert_int_equal(pwrite(fd, &b, 1, (off_t)off), 1);
    close(fd);
}

/* resident_pages -- how many 4 KiB pages of [a, a+len) are in the page cache. */
static size_t resident_pages(uint8_t *a, size_t len)
{
    size_t n = len / 4096, in = 0;
    unsigned char *v = malloc(n);
    assert_non_null(v);
    assert_int_equal(mincore(a, len, v), 0);
    for (size_t i = 0; i < n; i++) in += v[i] & 1;
    free(v);
    return in;
}

/* A model of k rows: every live entry of every row, sorted (sequence numbers
 * are unique across rows, so the newest visible version of K at S is the
 * lower bound of (K, S) if it has user key K). */
typedef struct model {
    ent *e;
    size_t n;
} model;

static model model_of(row_data *rows, const uint32_t *cursors, size_t k)
{
    model m = {NULL, 0};
    size_t total = 0;
    for (size_t i = 0; i < k; i++) total += rows[i].n;
    m.e = malloc((total + 1) * sizeof *m.e);
    assert_non_null(m.e);
    for (size_t i = 0; i < k; i++)
        for (size_t j = cursors ? cursors[i] : 0; j < rows[i].n; j++) m.e[m.n++] = rows[i].e[j];
    qsort(m.e, m.n, sizeof *m.e, ent_cmp);
    return m;
}

/* check_get -- rowtable_rows_get(ukey u, snapshot s) against the model. */
static void check_get(rowtable *const *rows, size_t k, const model *m, uint64_t ux, uint64_t snap, tkv_buf *val,
                      const char *what)
{
    char u[40];
    size_t un = ukey_of(ux, u);
    uint8_t t[64];
    ikey_encode(t, u, un, snap > IKEY_MAX_SEQ ? IKEY_MAX_SEQ : snap, IKEY_SEEK_TYPE);
    size_t pos = lower_bound(m->e, 0, m->n, slice(t, un + IKEY_TRAILER));
    int want = pos < m->n && ukey_cmp(ikey_user(ekey(&m->e[pos])), slice(u, un)) == 0;
    row_get_result res;
    memset(&res, 0, sizeof res);
    val->len = 7777;
    int rc = rowtable_rows_get(rows, k, slice(u, un), snap, &res, val);
    if (rc < 0) fail_msg("%s: rowtable_rows_get(%s): %d %s", what, tu_hex(u, un), rc, tkv_errmsg());
    if (rc != want)
        fail_msg("%s: rowtable_rows_get(%s, snap %llu) = %d, model %d", what, tu_hex(u, un), (unsigned long long)snap,
                 rc, want);
    if (!want) return;
    const ent *e = &m->e[pos];
    if (res.seq != ikey_seq(ekey(e)) || res.type != ikey_get_type(ekey(e)))
        fail_msg("%s: rowtable_rows_get(%s, snap %llu): seq %llu type %d, model seq %llu type %d", what, tu_hex(u, un),
                 (unsigned long long)snap, (unsigned long long)res.seq, res.type, (unsigned long long)ikey_seq(ekey(e)),
                 ikey_get_type(ekey(e)));
    if (val->len != e->vn || (e->vn && memcmp(val->data, e->v, e->vn)))
        fail_msg("%s: rowtable_rows_get(%s): value %s, model %s", what, tu_hex(u, un), tu_hex(val->data, val->len),
                 tu_hex(e->v, e->vn));
}

/* check_gets -- n random lookups: present keys at random snapshots, absent
 * keys (numbers never generated) and every key at the latest snapshot. */
static void check_gets(tu_rng *rng, rowtable *const *rows, size_t k, const model *m, uint64_t universe,
                       uint64_t max_seq, size_t n, const char *what)
{
    tkv_buf val = {0};
    for (size_t i = 0; i < n; i++) {
        uint64_t ux = tu_rng_below(rng, universe + universe / 4); /* a fifth beyond the universe: absent */
        uint64_t snap;
        switch (tu_rng_below(rng, 4)) {
        case 0:
            snap = UINT64_MAX;
            break;
        case 1:
            snap = tu_rng_below(rng, max_seq + 2);
            break;
        case 2:
            snap = m->n ? ikey_seq(ekey(&m->e[tu_rng_below(rng, m->n)])) : 0;
            break; /* an exact sequence */
        default:
            snap = m->n ? ikey_seq(ekey(&m->e[tu_rng_below(rng, m->n)])) - 1 : 0;
            break;
        }
        check_get(rows, k, m, ux, snap, &val, what);
    }
    buf_free(&val);
}

/* check_fwd -- forward pointers against brute-force lower bounds. */
static void check_fwd(const rowtable *r, const row_data *d, const row_data *older, uint32_t older_cursor)
{
    size_t j = older_cursor;
    for (size_t i = 0; i < d->n; i++) {
        uint32_t f = rowtable_fwd(r, (uint32_t)i);
        if (!older) {
            assert_int_equal(f, ROWTABLE_NO_FWD);
            continue;
        }
        /* brute force: walk the older row from the previous answer */
        while (j < older->n && ikey_cmp(ekey(&older->e[j]), ekey(&d->e[i])) < 0) j++;
        size_t want = j;
        if (i % 97 == 0) { /* and from scratch, now and then */
            size_t w2 = older_cursor;
            while (w2 < older->n && ikey_cmp(ekey(&older->e[w2]), ekey(&d->e[i])) < 0) w2++;
            assert_int_equal(w2, want);
        }
        if (f != want)
            fail_msg("row %llu entry %zu: fwd %u, brute force %zu", (unsigned long long)rowtable_id(r), i, f, want);
    }
}

/* check_filter -- the row's key filter: never a false negative for a key it
 * holds from `from` on; few false positives (< 4 %) over absent keys. */
static void check_filter(const rowtable *r, const row_data *d, uint32_t from, uint64_t universe, const char *what)
{
    for (size_t i = from; i < d->n; i++)
        if (!rowtable_may_contain(r, rowtable_key_hash(ikey_user(ekey(&d->e[i])))))
            fail_msg("%s: key filter rules out entry %zu (%s)", what, i, tu_hex(d->e[i].k, d->e[i].kn));
    size_t fp = 0, probes = 4000;
    for (size_t q = 0; q < probes; q++) {
        char u[40];
        size_t un = absent_key_of(q % universe, u);
        fp += (size_t)rowtable_may_contain(r, rowtable_key_hash(slice(u, un)));
    }
    if (d->n - from >= 200 && fp * 25 > probes)
        fail_msg("%s: %zu false positives of %zu absent keys", what, fp, probes);
}

static uint8_t *read_file(const char *path, size_t *n)
{
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    uint8_t *b = malloc((size_t)sb.st_size);
    assert_non_null(b);
    int fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(pread(fd, b, (size_t)sb.st_size, 0), sb.st_size);
    close(fd);
    *n = (size_t)sb.st_size;
    return b;
}

static void write_file(const char *path, const uint8_t *b, size_t n)
{
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, b, n, 0), (ssize_t)n);
    close(fd);
}

/* crash_ops -- what runs under the power cut: build + commit row 2 (over
 * row 1), advance row 1's cursor and release its dead pages, then drop row 1.
 * Returns at the first failure (none expected: persists just stop). */
static void crash_ops(pool *p, const row_data *d2, uint32_t cursor1)
{
    rowtable *r1 = NULL;
    pool_row_id *rows;
    size_t n;
    assert_int_equal(pool_rows(p, &rows, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(rowtable_open(p, rows[0].slot, &r1), 0);
    free(rows);
    rowtable *r2 = build_row(p, 2, d2, r1, 1);
    assert_int_equal(rowtable_set_cursor(r1, cursor1), 0);
    assert_int_equal(rowtable_release_dead_pages(r1, NULL), 0);
    assert_int_equal(rowtable_set_cursor(r1, rowtable_count(r1)), 0);
    assert_int_equal(rowtable_drop(r1), 0);
    rowtable_close(r2);
}

/* check_row_equals -- the row verifies (rowtable_open did) and holds d from cursor on. */
static void check_row_equals(tu_rng *rng, rowtable *r, const row_data *d, uint32_t cursor, const char *what)
{
    assert_int_equal(rowtable_count(r), d->n);
    assert_int_equal(rowtable_set_cursor(r, cursor), 0);
    check_iter(rng, r, d, cursor, what);
}

static void test_rows_model(void **state)
{
    (void)state;
    tu_rng rng;
    tu_rng_init(&rng, tu_seed() + 1);
    unsigned scale = tu_scale();
    for (int round = 0; round < 4; round++) {
        fixture f = fx_new("rows-model");
        /* rounds 0-1: 64 KiB pages (16 MiB pool), round 2: 4 KiB pages with
         * values that cross page ends, round 3: from a memtable */
        pool_options o = {.page_size = round == 2 ? 4096 : 0, .dir_slots = 0};
        pool *p = open_pool(f.path, round == 2 ? 1u << 20 : 16u << 20, PM_EMULATED, &o);
        size_t k = 1 + (size_t)round + (size_t)tu_rng_below(&rng, 3);
        row_data rows[8];
        rowtable *rt[8];
        uint64_t seq = 0, universe = 4000;
        for (size_t i = 0; i < k; i++) { /* oldest first; rt[] is filled newest first below */
            size_t n = round == 2 ? 40 + tu_rng_below(&rng, 60) : 200 + tu_rng_below(&rng, 1500 * scale);
            rows[k - 1 - i] = gen_row(&rng, n, universe, &seq, round == 2 ? 100 : 300, round == 2 ? 1500 : 20000);
            const rowtable *older = i ? rt[k - i] : NULL;
            if (round == 3) { /* through a memtable and its iterator */
                memtable *mt = memtable_new();
                assert_non_null(mt);
                const row_data *d = &rows[k - 1 - i];
                for (size_t j = 0; j < d->n; j++) {
                    tkv_slice ik = ekey(&d->e[j]);
                    assert_int_equal(memtable_add(mt, ikey_seq(ik), ikey_get_type(ik), ik.p, ik.n - IKEY_TRAILER,
                                                  d->e[j].v, d->e[j].vn),
                                     0);
                }
                tkv_it *it = memtable_iter(mt);
                assert_int_equal(rowtable_build(p, i + 1, it, older, &rt[k - 1 - i]), 0);
                it_destroy(it);
                memtable_unref(mt);
                assert_int_equal(rowtable_commit(rt[k - 1 - i]), 0);
            } else {
                rt[k - 1 - i] = build_row(p, i + 1, &rows[k - 1 - i], older, 1);
            }
            check_fwd(rt[k - 1 - i], &rows[k - 1 - i], i ? &rows[k - i] : NULL, 0);
        }
        model m = model_of(rows, NULL, k);
        for (size_t i = 0; i < k; i++) check_filter(rt[i], &rows[i], 0, universe, "filter built");
        check_gets(&rng, rt, k, &m, universe, seq, 3000, "built");
        for (size_t i = 0; i < k; i++) check_iter(&rng, rt[i], &rows[i], 0, "iter built");
        check_accounting(p, "built");

        /* reopen: the same answers from what was persisted */
        for (size_t i = 0; i < k; i++) rowtable_close(rt[i]);
        pool_close(p);
        p = open_pool(f.path, 0, PM_EMULATED, NULL);
        assert_int_equal(open_all(p, rt, 8), k);
        for (size_t i = 0; i < k; i++) {
            assert_int_equal(rowtable_id(rt[i]), k - i);
            assert_int_equal(rowtable_count(rt[i]), rows[i].n);
            check_fwd(rt[i], &rows[i], i + 1 < k ? &rows[i + 1] : NULL, 0);
            check_iter(&rng, rt[i], &rows[i], 0, "iter reopened");
            check_filter(rt[i], &rows[i], 0, universe, "filter rebuilt at open");
        }
        check_gets(&rng, rt, k, &m, universe, seq, 3000, "reopened");

        /* rowtable_get alone, row by row, without hints, agrees too */
        tkv_buf v = {0};
        for (size_t i = 0; i < k; i++) {
            model mi = model_of(&rows[i], NULL, 1);
            for (int q = 0; q < 200; q++) {
                char u[40];
                uint64_t ux = tu_rng_below(&rng, universe);
                size_t un = ukey_of(ux, u);
                row_get_result res;
                memset(&res, 0, sizeof res);
                int rc = rowtable_get(rt[i], slice(u, un), UINT64_MAX, NULL, &res, &v, NULL);
                uint8_t t[64];
                ikey_encode(t, u, un, IKEY_MAX_SEQ, IKEY_SEEK_TYPE);
                size_t pos = lower_bound(mi.e, 0, mi.n, slice(t, un + IKEY_TRAILER));
                int want = pos < mi.n && ukey_cmp(ikey_user(ekey(&mi.e[pos])), slice(u, un)) == 0;
                assert_int_equal(rc, want);
                if (want) assert_int_equal(res.seq, ikey_seq(ekey(&mi.e[pos])));
            }
            free(mi.e);
        }
        buf_free(&v);
        for (size_t i = 0; i < k; i++) {
            rowtable_props pr;
            rowtable_get_props(rt[i], &pr);
            assert_int_equal(pr.entries, rows[i].n);
            /* handle + per page + the key filter (10 bits per entry, 64-byte blocks) */
            assert_true(pr.dram_bytes < 512 + 16 * (size_t)pr.pages + (size_t)pr.entries * 10 / 8 + 64);
            rowtable_close(rt[i]);
            free_row(&rows[i]);
        }
        free(m.e);
        pool_close(p);
        fx_free(&f);
    }
}

/* compressible -- rewrites d's values so that most compress: a value keeps
 * its first 1..n/4 random bytes and repeats them (like tkv_bench's values),
 * a fifth stay random, a tenth are one byte repeated. */
static void compressible(tu_rng *rng, row_data *d)
{
    for (size_t i = 0; i < d->n; i++) {
        ent *e = &d->e[i];
        unsigned kind = (unsigned)tu_rng_below(rng, 10);
        if (e->vn < 2 || kind < 2) continue; /* random */
        if (kind == 2) {
            memset(e->v, e->v[0], e->vn);
            continue;
        }
        size_t half = 1 + tu_rng_below(rng, e->vn / 4 + 1);
        for (size_t at = half; at < e->vn; at++) e->v[at] = e->v[at - half];
    }
}

/* raw_bytes -- what the entries of d would take stored as is (key and value
 * bytes; a lower bound of a row without compression's data stream). */
static uint64_t raw_bytes(const row_data *d)
{
    uint64_t n = 0;
    for (size_t i = 0; i < d->n; i++) n += d->e[i].kn + d->e[i].vn;
    return n;
}

/* find_entry -- the address of internal key k in the pool's mapping (keys
 * are unique: each carries its sequence number). */
static uint8_t *find_entry(pool *p, tkv_slice k)
{
    uint8_t *a = pm_base(pool_region(p));
    pool_stats st;
    pool_get_stats(p, &st);
    uint8_t *hit = memmem(a, st.pool_size, k.p, k.n);
    assert_non_null(hit);
    return hit;
}

static void test_value_compression(void **state)
{
    (void)state;
    tu_rng rng;
    tu_rng_init(&rng, tu_seed() + 11);
    for (int round = 0; round < 2; round++) {
        /* round 0: 64 KiB pages; round 1: 4 KiB pages, where values over 512
         * bytes cross page ends, compressed or not */
        fixture f = fx_new("rows-lz4");
        pool_options o = {.page_size = round ? 4096 : 0, .dir_slots = 0};
        pool *p = open_pool(f.path, round ? 1u << 20 : 16u << 20, PM_EMULATED, &o);
        assert_int_equal(pool_row_compression(p), 0);
        uint64_t seq = 0, universe = 3000;
        row_data rows[4];
        rowtable *rt[4];
        /* rows 1-2 compressed, row 3 with values that do not compress, row 4
         * built with compression off: one pool holds both formats */
        for (size_t i = 0; i < 4; i++) {
            size_t n = round ? 60 + tu_rng_below(&rng, 60) : 800 + tu_rng_below(&rng, 800);
            rows[3 - i] = gen_row(&rng, n, universe, &seq, round ? 1500 : 3000, round ? 3000 : 40000);
            if (i < 2) compressible(&rng, &rows[3 - i]);
            pool_set_row_compression(p, i < 3);
            rt[3 - i] = build_row(p, i + 1, &rows[3 - i], i ? rt[4 - i] : NULL, 1);
            rowtable_props pr;
            rowtable_get_props(rt[3 - i], &pr);
            assert_int_equal(pr.lz4, i < 3);
            if (i < 2) {
                assert_true(pr.lz4_values > rows[3 - i].n / 3);
                /* most values shrink to well under half */
                assert_true(pr.data_bytes < raw_bytes(&rows[3 - i]) * 2 / 3);
            } else {
                assert_int_equal(pr.lz4_values, 0); /* random values: the probe gives up */
                assert_true(pr.data_bytes >= raw_bytes(&rows[3 - i]));
            }
        }
        model m = model_of(rows, NULL, 4);
        check_gets(&rng, rt, 4, &m, universe, seq, 3000, "lz4 built");
        for (size_t i = 0; i < 4; i++) check_iter(&rng, rt[i], &rows[i], 0, "lz4 iter built");
        check_accounting(p, "lz4 built");

        /* reopened: the flag comes from the row, not from the pool's setting */
        for (size_t i = 0; i < 4; i++) rowtable_close(rt[i]);
        pool_close(p);
        p = open_pool(f.path, 0, PM_EMULATED, NULL);
        assert_int_equal(open_all(p, rt, 4), 4);
        for (size_t i = 0; i < 4; i++) {
            rowtable_props pr;
            rowtable_get_props(rt[i], &pr);
            assert_int_equal(pr.lz4, i > 0);
            check_iter(&rng, rt[i], &rows[i], 0, "lz4 iter reopened");
        }
        check_gets(&rng, rt, 4, &m, universe, seq, 3000, "lz4 reopened");

        /* a compressed value whose stored raw length is off by one is
         * reported, never returned: find a compressed value of row 1 (the
         * oldest, rt[3]) and raise its length varint's first byte */
        const row_data *d = &rows[3];
        int done = 0;
        for (size_t i = 0; i < d->n && !done; i++) {
            const ent *e = &d->e[i];
            if (e->vn < 200 || e->vn > 16383 || e->v[e->vn - 1] != e->v[e->vn - 2] || e->v[0] != e->v[1]) continue;
            uint8_t *at = find_entry(p, ekey(e)) + e->kn, *q = at;
            uint64_t vfield = 0;
            for (int sh = 0;; sh += 7) { /* the value field */
                vfield |= (uint64_t)(*q & 0x7f) << sh;
                if (!(*q++ & 0x80)) break;
            }
            if (!(vfield & 1)) continue; /* stored as is */
            q[0] ^= 1;                   /* raw length +-1 */
            tkv_buf v = {0};
            row_get_result res;
            memset(&res, 0, sizeof res);
            int rc = rowtable_get(rt[3], ikey_user(ekey(e)), ikey_seq(ekey(e)), NULL, &res, &v, NULL);
            expect_corruption(rc, "lz4", "a compressed value's raw length off by one");
            tkv_it *it = rowtable_iter(rt[3]);
            for (it_seek_first(it); it_valid(it); it_next(it)) {}
            expect_corruption(it_status(it), "lz4", "the iterator over it");
            it_destroy(it);
            buf_free(&v);
            q[0] ^= 1;
            done = 1;
        }
        assert_true(done);
        for (size_t i = 0; i < 4; i++) {
            rowtable_close(rt[i]);
            free_row(&rows[i]);
        }
        free(m.e);
        pool_close(p);
        fx_free(&f);
    }
}

static void test_comparison_bound(void **state)
{
    (void)state;
    tu_rng rng;
    tu_rng_init(&rng, tu_seed() + 2);
    enum { K = 8 };
    size_t n = 100000;
    fixture f = fx_new("rows-cmp");
    pool *p = open_pool(f.path, 128u << 20, PM_EMULATED, NULL);
    row_data rows[K];
    rowtable *rt[K];
    uint64_t seq = 0, universe = 4000000;
    double t0 = tu_now_ms();
    for (size_t i = 0; i < K; i++) {
        rows[K - 1 - i] = gen_row(&rng, n, universe, &seq, 16, 0);
        rt[K - 1 - i] = build_row(p, i + 1, &rows[K - 1 - i], i ? rt[K - i] : NULL, 1);
    }
    double t1 = tu_now_ms();
    model m = model_of(rows, NULL, K);
    double bound = log2((double)n) + C_PER_ROW * K;
    uint64_t tot_hint = 0, tot_plain = 0, max_hint = 0, rejected = 0, used = 0;
    size_t q = 20000;
    tkv_buf val = {0};
    for (size_t i = 0; i < q; i++) {
        /* half present keys, half absent: absent keys walk all K rows */
        char u[40];
        size_t un;
        if (i % 2) {
            const ent *e = &m.e[tu_rng_below(&rng, m.n)];
            un = e->kn - IKEY_TRAILER;
            memcpy(u, e->k, un);
        } else {
            un = ukey_of(tu_rng_below(&rng, universe), u);
        }
        row_get_result res;
        memset(&res, 0, sizeof res);
        assert_true(rowtable_rows_get(rt, K, slice(u, un), UINT64_MAX, &res, &val) >= 0);
        /* compare against the same lookup row by row without hints */
        row_get_result plain;
        memset(&plain, 0, sizeof plain);
        for (size_t r = 0; r < res.rows_searched; r++)
            assert_true(rowtable_get(rt[r], slice(u, un), UINT64_MAX, NULL, &plain, NULL, NULL) >= 0);
        tot_hint += res.comparisons;
        tot_plain += plain.comparisons;
        if (res.comparisons > max_hint) max_hint = res.comparisons;
        rejected += res.hints_rejected;
        used += res.hints_used;
        if ((double)res.comparisons > bound)
            fail_msg("lookup %s: %llu comparisons over %u rows > log2(%zu) + %d*%d = %.1f", tu_hex(u, un),
                     (unsigned long long)res.comparisons, res.rows_searched, n, C_PER_ROW, K, bound);
    }
    /* the full-miss case: every row searched */
    uint64_t miss_hint = 0, miss_plain = 0, miss_max = 0;
    size_t nmiss = 5000;
    for (size_t i = 0; i < nmiss; i++) {
        char u[40];
        size_t un = absent_key_of(tu_rng_below(&rng, universe), u);
        row_get_result res, plain;
        memset(&res, 0, sizeof res);
        memset(&plain, 0, sizeof plain);
        assert_int_equal(rowtable_rows_get(rt, K, slice(u, un), UINT64_MAX, &res, &val), 0);
        assert_int_equal(res.rows_searched, K);
        for (size_t r = 0; r < K; r++)
            assert_int_equal(rowtable_get(rt[r], slice(u, un), UINT64_MAX, NULL, &plain, NULL, NULL), 0);
        if ((double)res.comparisons > bound)
            fail_msg("miss %s: %llu comparisons > %.1f", tu_hex(u, un), (unsigned long long)res.comparisons, bound);
        miss_hint += res.comparisons;
        miss_plain += plain.comparisons;
        if (res.comparisons > miss_max) miss_max = res.comparisons;
    }
    buf_free(&val);
    print_message("# comparisons n=%zu k=%d, bound log2(n)+%d*k = %.1f\n"
                  "#   mixed hits/misses: with hints %.1f avg (max %llu), same rows without hints %.1f avg\n"
                  "#   misses (all %d rows): with hints %.1f avg (max %llu), without hints %.1f avg\n"
                  "#   hints used %llu rejected %llu; build %.0f ms for %d rows\n",
                  n, K, C_PER_ROW, bound, (double)tot_hint / (double)q, (unsigned long long)max_hint,
                  (double)tot_plain / (double)q, K, (double)miss_hint / (double)nmiss, (unsigned long long)miss_max,
                  (double)miss_plain / (double)nmiss, (unsigned long long)used, (unsigned long long)rejected, t1 - t0,
                  K);
    assert_int_equal(rejected, 0);
    assert_true(tot_hint * 2 < tot_plain);
    rowtable_props pr;
    rowtable_get_props(rt[0], &pr);
    print_message("# DRAM per row handle: %zu bytes for %u entries (%.4f bytes/entry), %u pages of %u KiB\n",
                  pr.dram_bytes, pr.entries, (double)pr.dram_bytes / pr.entries, pr.pages, pool_page_size(p) >> 10);
    free(m.e);
    for (size_t i = 0; i < K; i++) {
        rowtable_close(rt[i]);
        free_row(&rows[i]);
    }
    pool_close(p);
    fx_free(&f);
}

static void test_broken_chain(void **state)
{
    (void)state;
    tu_rng rng;
    tu_rng_init(&rng, tu_seed() + 3);
    fixture f = fx_new("rows-chain");
    pool_options o = {.page_size = 4096};
    pool *p = open_pool(f.path, 1u << 20, PM_EMULATED, &o);
    enum { K = 4 };
    row_data rows[K];
    rowtable *rt[K];
    uint64_t seq = 0, universe = 3000;
    for (size_t i = 0; i < K; i++) {
        rows[K - 1 - i] = gen_row(&rng, 300 + tu_rng_below(&rng, 200), universe, &seq, 60, 700);
        rt[K - 1 - i] = build_row(p, i + 1, &rows[K - 1 - i], i ? rt[K - i] : NULL, 1);
    }
    uint32_t cursors[K] = {0};

    /* (a) the cursor of the oldest and of a middle row advance: their older
     * entries left for L1 (so the model drops them) */
    cursors[3] = key_boundary(&rows[3], rows[3].n / 2);
    cursors[1] = key_boundary(&rows[1], rows[1].n / 3);
    /* a cursor between two versions of one user key is refused (it would
     * leave older versions readable after the newer ones moved to L1) */
    size_t splits = 0;
    for (size_t c = 1; c < rows[2].n; c++) {
        if (ukey_cmp(ikey_user(ekey(&rows[2].e[c - 1])), ikey_user(ekey(&rows[2].e[c]))) != 0) continue;
        assert_int_equal(rowtable_set_cursor(rt[2], (uint32_t)c), TKV_INVALID);
        assert_non_null(strstr(tkv_errmsg(), "split the versions"));
        assert_int_equal(rowtable_cursor(rt[2]), 0);
        splits++;
    }
    assert_true(splits > 0); /* ~1 key in 6 has several versions */
    assert_int_equal(rowtable_set_cursor(rt[3], cursors[3]), 0);
    assert_int_equal(rowtable_set_cursor(rt[1], cursors[1]), 0);
    assert_int_equal(rowtable_set_cursor(rt[1], cursors[1] - 1), TKV_INVALID); /* never back */
    assert_int_equal(rowtable_set_cursor(rt[1], (uint32_t)rows[1].n + 1), TKV_INVALID);
    model m = model_of(rows, cursors, K);
    check_gets(&rng, rt, K, &m, universe, seq, 4000, "cursors advanced");
    for (size_t i = 0; i < K; i++) check_iter(&rng, rt[i], &rows[i], cursors[i], "iter with cursor");
    free(m.e);

    /* (b) dead pages go back to the pool; reopen with the cursors the MANIFEST would hold */
    pool_stats st0, st1;
    pool_get_stats(p, &st0);
    uint32_t rel3 = 0, rel1 = 0;
    size_t dead3 = rowtable_dead_pages(rt[3], NULL, 0);
    assert_true(dead3 > 0);
    assert_int_equal(rowtable_release_dead_pages(rt[3], &rel3), 0);
    assert_int_equal(rel3, dead3);
    assert_int_equal(rowtable_release_dead_pages(rt[1], &rel1), 0);
    assert_int_equal(rowtable_dead_pages(rt[3], NULL, 0), 0); /* idempotent */
    pool_get_stats(p, &st1);
    assert_int_equal(st1.pages_free, st0.pages_free + rel1 + rel3);
    check_accounting(p, "after release");
    m = model_of(rows, cursors, K);
    check_gets(&rng, rt, K, &m, universe, seq, 2000, "after release");
    free(m.e);
    for (size_t i = 0; i < K; i++) rowtable_close(rt[i]);
    pool_close(p);
    p = open_pool(f.path, 0, PM_EMULATED, NULL);
    pool_get_stats(p, &st0);
    assert_int_equal(st0.pages_free, st1.pages_free);
    check_accounting(p, "reopened after release");
    assert_int_equal(open_all(p, rt, K), K);
    rowtable_props pr;
    rowtable_get_props(rt[3], &pr);
    assert_int_equal(pr.pages_released, rel3);
    assert_true(pr.min_cursor <= cursors[3]);
    /* a MANIFEST cursor below the released pages is corruption */
    if (pr.min_cursor > 0)
        expect_corruption(rowtable_set_cursor(rt[3], pr.min_cursor - 1), "row 1", "cursor below released");
    for (size_t i = 0; i < K; i++) assert_int_equal(rowtable_set_cursor(rt[i], cursors[i]), 0);
    m = model_of(rows, cursors, K);
    check_gets(&rng, rt, K, &m, universe, seq, 3000, "reopened with cursors");
    for (size_t i = 0; i < K; i++) check_iter(&rng, rt[i], &rows[i], cursors[i], "iter reopened with cursor");
    free(m.e);

    /* (b2) bogus windows for the right row: verified, rejected when wrong,
     * and the answer is always that of a search without a hint */
    {
        tkv_buf v1 = {0}, v2 = {0};
        uint64_t rej = 0;
        for (int q = 0; q < 3000; q++) {
            size_t ri = tu_rng_below(&rng, K);
            char u[40];
            size_t un = ukey_of(tu_rng_below(&rng, universe), u);
            uint32_t n = rowtable_count(rt[ri]);
            row_hint h = {rowtable_id(rt[ri]), (uint32_t)tu_rng_below(&rng, n + 2), 0};
            h.hi = tu_rng_below(&rng, 4) ? h.lo + (uint32_t)tu_rng_below(&rng, 5) : UINT32_MAX;
            uint64_t snap = tu_rng_below(&rng, 2) ? UINT64_MAX : tu_rng_below(&rng, seq + 1);
            row_get_result a, b;
            memset(&a, 0, sizeof a);
            memset(&b, 0, sizeof b);
            row_hint oa, ob;
            int ra = rowtable_get(rt[ri], slice(u, un), snap, &h, &a, &v1, &oa);
            int rb = rowtable_get(rt[ri], slice(u, un), snap, NULL, &b, &v2, &ob);
            assert_int_equal(ra, rb);
            assert_int_equal(a.hints_used + a.hints_rejected, 1);
            rej += a.hints_rejected;
            assert_memory_equal(&oa, &ob, sizeof oa); /* the same position found */
            if (ra == 1) {
                assert_int_equal(a.seq, b.seq);
                assert_int_equal(a.type, b.type);
                assert_int_equal(v1.len, v2.len);
                if (v1.len) assert_memory_equal(v1.data, v2.data, v1.len);
            }
        }
        assert_true(rej > 0);
        buf_free(&v1);
        buf_free(&v2);
    }

    /* (c) a middle row is dropped: rows[0]'s hints point into a row that is gone */
    uint32_t c2 = (uint32_t)rows[2].n;
    assert_int_equal(rowtable_set_cursor(rt[2], c2), 0); /* fully drained */
    assert_int_equal(rowtable_drop(rt[2]), 0);
    rowtable *rest[3] = {rt[0], rt[1], rt[3]};
    row_data rrest[3] = {rows[0], rows[1], rows[3]};
    uint32_t crest[3] = {cursors[0], cursors[1], cursors[3]};
    m = model_of(rrest, crest, 3);
    check_gets(&rng, rest, 3, &m, universe, seq, 3000, "middle row dropped");
    /* hints over the gap are ignored, not trusted */
    tkv_buf v = {0};
    uint64_t rejected_or_ignored = 0;
    for (size_t i = 0; i < rows[0].n; i += 7) {
        row_get_result res;
        memset(&res, 0, sizeof res);
        char u[40];
        size_t un = absent_key_of(i, u); /* absent: walks every row */
        assert_true(rowtable_rows_get(rest, 3, slice(u, un), UINT64_MAX, &res, &v) >= 0);
        rejected_or_ignored += res.rows_searched - res.hints_used - 1;
    }
    assert_true(rejected_or_ignored > 0);
    buf_free(&v);
    free(m.e);
    check_accounting(p, "after drop");
    for (size_t i = 0; i < 3; i++) rowtable_close(rest[i]);
    pool_close(p);
    p = open_pool(f.path, 0, PM_EMULATED, NULL);
    check_accounting(p, "reopened after drop");
    pool_close(p);
    for (size_t i = 0; i < K; i++) free_row(&rows[i]);
    fx_free(&f);
}

static void test_corruption(void **state)
{
    (void)state;
    tu_rng rng;
    tu_rng_init(&rng, tu_seed() + 4);
    fixture f = fx_new("rows-corrupt");
    pool_options o = {.page_size = 4096};
    uint64_t seq = 0;
    row_data d = gen_row(&rng, 400, 3000, &seq, 80, 0);
    /* where: 0 data page, 1 metadata in page 0, 2 metadata page 1, 3 header body, 4 header page list, 5 slot */
    for (int where = 0; where < 6; where++) {
        unlink(f.path);
        pool *p = open_pool(f.path, 1u << 20, PM_EMULATED, &o);
        rowtable *r = build_row(p, 42, &d, NULL, 1);
        rowtable_props pr;
        rowtable_get_props(r, &pr);
        pool_row row;
        assert_int_equal(pool_row_read(p, pr.slot, &row), 0);
        assert_true(pr.meta_pages >= 2);
        uint64_t off;
        switch (where) {
        case 0:
            off = file_offset(p, pool_row_page(&row, pr.meta_pages)) + tu_rng_below(&rng, 4096);
            break;
        case 1:
            off = file_offset(p, row.first_page) + pr.meta_off + tu_rng_below(&rng, 4096 - pr.meta_off);
            break;
        case 2:
            off = file_offset(p, pool_row_page(&row, 1)) + tu_rng_below(&rng, 4096);
            break;
        case 3:
            off = file_offset(p, row.first_page) + 32 + tu_rng_below(&rng, 96);
            break;
        case 4:
            off = (uint64_t)(row.pages - pm_base(pool_region(p))) + 4 * tu_rng_below(&rng, pr.pages);
            break;
        default:
            off = 4096 + 8 * (uint64_t)pr.slot + 4 + tu_rng_below(&rng, 4);
            break; /* the row-id check */
        }
        rowtable_close(r);
        pool_close(p);
        flip_byte(f.path, off);
        p = NULL;
        int rc = pool_open(f.path, 0, PM_EMULATED, PM_PROFILE_NONE, NULL, &p, NULL);
        if (where >= 3) { /* the pool cannot know the row's pages: the open fails */
            expect_corruption(rc, f.path, "header");
            expect_corruption(rc, where == 5 ? "directory slot" : "row 42", "header");
            continue;
        }
        assert_int_equal(rc, 0);
        pool_row_id *rows;
        size_t n;
        assert_int_equal(pool_rows(p, &rows, &n), 0);
        assert_int_equal(n, 1);
        rc = rowtable_open(p, rows[0].slot, &r);
        expect_corruption(rc, "row 42", where ? "metadata" : "data");
        expect_corruption(rc, f.path, "names the pool");
        print_message("# flipped %s byte: %s\n", where == 0 ? "data" : "metadata", tkv_errmsg());
        free(rows);
        pool_close(p);
    }
    free_row(&d);
    fx_free(&f);
}

/* rd_covering -- brute force: the newest of l's tombstones covering k. */
static uint64_t rd_covering(const rd_list *l, tkv_slice k)
{
    uint64_t best = 0;
    for (size_t i = 0; i < l->n; i++)
        if (l->t[i].seq > best && ukey_cmp(l->t[i].begin, k) <= 0 && ukey_cmp(k, l->t[i].end) < 0) best = l->t[i].seq;
    return best;
}

/* check_rd -- row r holds exactly the tombstones of l: sorted, and its
 * fragments give brute force's answer for keys across the key space. */
static void check_rd(const rowtable *r, const rd_list *l, const char *what)
{
    const rd_list *got = rowtable_range_del_list(r);
    if (got->n != l->n) fail_msg("%s: %zu tombstones, want %zu", what, got->n, l->n);
    for (size_t i = 1; i < got->n; i++) assert_true(ukey_cmp(got->t[i - 1].begin, got->t[i].begin) <= 0);
    rowtable_props pr;
    rowtable_get_props(r, &pr);
    assert_int_equal(pr.num_range_dels, l->n);
    for (uint64_t u = 1; u < 3000; u += 7) {
        char k[32];
        tkv_slice key = slice(k, ukey_of(u, k));
        if (rd_frags_covering(rowtable_range_dels(r), key, UINT64_MAX) != rd_covering(l, key))
            fail_msg("%s: key %s covered wrongly", what, tu_hex(key.p, key.n));
    }
}

/* test_range_dels -- rows with range tombstones (format version 2): built
 * with entries and with tombstones only, they read back their tombstones and
 * fragments, after a reopen too; a row drained to its end keeps the pages of
 * its tombstone block (released pages stop before it) and still opens; a
 * flipped byte of the block is TKV_CORRUPTION naming it. */
static void test_range_dels(void **state)
{
    (void)state;
    tu_rng rng;
    tu_rng_init(&rng, tu_seed() + 9);
    fixture f = fx_new("rows-rd");
    pool_options o = {.page_size = 4096};
    pool *p = open_pool(f.path, 1u << 20, PM_EMULATED, &o);
    uint64_t seq = 0;
    row_data d = gen_row(&rng, 300, 3000, &seq, 60, 0);
    rd_list l = {0};
    for (int i = 0; i < 40; i++) {
        char a[32], b[32];
        uint64_t x = tu_rng_range(&rng, 1, 2900);
        tkv_slice ka = slice(a, ukey_of(x, a)), kb = slice(b, ukey_of(x + tu_rng_range(&rng, 1, 90), b));
        if (ukey_cmp(ka, kb) == 0) continue;
        if (ukey_cmp(ka, kb) > 0) assert_int_equal(rd_list_add(&l, kb, ka, ++seq, 0), 0); /* key order is not u's */
        else assert_int_equal(rd_list_add(&l, ka, kb, ++seq, 0), 0);
    }
    rowtable *r = NULL, *t = NULL;
    tkv_it *it = iter_of(&d);
    assert_int_equal(rowtable_build_rd(p, 42, it, &l, NULL, 0, &r), 0);
    it_destroy(it);
    assert_int_equal(rowtable_commit(r), 0);
    row_data none = {NULL, 0};
    it = iter_of(&none);
    assert_int_equal(rowtable_build_rd(p, 43, it, &l, r, rowtable_cursor(r), &t), 0); /* tombstones only */
    it_destroy(it);
    assert_int_equal(rowtable_commit(t), 0);
    check_rd(r, &l, "built");
    check_rd(t, &l, "built, tombstones only");
    assert_int_equal(rowtable_count(t), 0);
    assert_int_equal(rowtable_max_seq(t), seq); /* the sequence range covers the tombstones */
    check_iter(&rng, r, &d, 0, "entries beside tombstones");
    assert_int_equal(rowtable_set_cursor(r, rowtable_count(r)), 0); /* drained: the block's pages stay */
    uint32_t released;
    assert_int_equal(rowtable_release_dead_pages(r, &released), 0);
    rowtable_props pr;
    rowtable_get_props(r, &pr);
    assert_true(released > 0 && pr.pages_released < pr.pages - 1);
    uint64_t data_bytes = pr.data_bytes, meta_pages = pr.meta_pages;
    rowtable_close(r);
    rowtable_close(t);
    rowtable *rs[4];
    assert_int_equal(open_all(p, rs, 4), 2); /* newest first */
    check_rd(rs[0], &l, "reopened, tombstones only");
    check_rd(rs[1], &l, "reopened after its drain");
    assert_int_equal(rowtable_cursor(rs[1]), rowtable_count(rs[1]));
    pool_row row;
    rowtable_get_props(rs[1], &pr);
    assert_int_equal(pool_row_read(p, pr.slot, &row), 0);
    tkv_buf enc = {0};
    rd_list sorted = {0};
    assert_int_equal(rd_list_append(&sorted, l.t, l.n), 0);
    rd_list_sort(&sorted);
    assert_int_equal(rd_encode(sorted.t, sorted.n, &enc), 0);
    uint64_t rd_off = data_bytes - enc.len + tu_rng_below(&rng, enc.len); /* a byte of the block */
    uint64_t off = file_offset(p, pool_row_page(&row, (uint32_t)(meta_pages + rd_off / 4096))) + rd_off % 4096;
    rowtable_close(rs[0]);
    rowtable_close(rs[1]);
    pool_close(p);
    flip_byte(f.path, off);
    p = open_pool(f.path, 0, PM_EMULATED, &o);
    pool_row_id *ids;
    size_t n;
    assert_int_equal(pool_rows(p, &ids, &n), 0);
    for (size_t i = 0; i < n; i++) {
        if (ids[i].row_id != 42) continue;
        int rc = rowtable_open(p, ids[i].slot, &r);
        expect_corruption(rc, "row 42", "range tombstone block");
        print_message("# flipped range tombstone byte: %s\n", tkv_errmsg());
    }
    free(ids);
    pool_close(p);
    buf_free(&enc);
    rd_list_free(&sorted);
    rd_list_free(&l);
    free_row(&d);
    fx_free(&f);
}

static void test_crash(void **state)
{
    (void)state;
    tu_rng rng;
    tu_rng_init(&rng, tu_seed() + 5);
    fixture f = fx_new("rows-crash");
    pool_options o = {.page_size = 4096};
    uint64_t seq = 0;
    row_data d1 = gen_row(&rng, 500, 4000, &seq, 60, 900), d2 = gen_row(&rng, 400, 4000, &seq, 60, 900);
    uint32_t cursor1 = key_boundary(&d1, d1.n / 2);
    /* the base state: row 1 committed */
    pool *p = open_pool(f.path, 1u << 20, PM_EMULATED, &o);
    rowtable *r1 = build_row(p, 1, &d1, NULL, 1);
    rowtable_close(r1);
    pool_close(p);
    size_t fsz;
    uint8_t *base = read_file(f.path, &fsz);

    /* count the persists of the whole sequence */
    p = open_pool(f.path, 0, PM_CRASHSIM, NULL);
    uint64_t before = pm_crashsim_persists(pool_region(p));
    crash_ops(p, &d2, cursor1);
    uint64_t total = pm_crashsim_persists(pool_region(p)) - before;
    pool_close(p);
    print_message("# crash: %llu persist points in build+commit, release, drop\n", (unsigned long long)total);
    assert_true(total > 10);

    int seen_r2_absent = 0, seen_r2 = 0, seen_r1_gone = 0, seen_released = 0;
    for (uint64_t cut = 0; cut <= total; cut++) {
        write_file(f.path, base, fsz);
        p = open_pool(f.path, 0, PM_CRASHSIM, NULL);
        pm_crashsim_cut_at(pool_region(p), cut);
        crash_ops(p, &d2, cursor1);
        pool_close(p); /* power off: only what was persisted before the cut remains */

        p = open_pool(f.path, 0, PM_EMULATED, NULL);
        char what[64];
        snprintf(what, sizeof what, "cut at persist %llu of %llu", (unsigned long long)cut, (unsigned long long)total);
        check_accounting(p, what);
        rowtable *rt[2] = {NULL, NULL};
        size_t n = open_all(p, rt, 2); /* every committed row verifies */
        int have1 = 0, have2 = 0;
        for (size_t i = 0; i < n; i++) {
            if (rowtable_id(rt[i]) == 2) {
                have2 = 1;
                check_row_equals(&rng, rt[i], &d2, 0, what);
            } else {
                assert_int_equal(rowtable_id(rt[i]), 1);
                have1 = 1;
                rowtable_props pr;
                rowtable_get_props(rt[i], &pr);
                seen_released |= pr.pages_released > 0;
                /* the MANIFEST's cursor: 0 before the release started, else cursor1 */
                check_row_equals(&rng, rt[i], &d1, pr.pages_released ? cursor1 : 0, what);
            }
        }
        if (!have2) assert_true(have1); /* row 1 is dropped only after row 2 committed */
        seen_r2_absent |= !have2;
        seen_r2 |= have2;
        seen_r1_gone |= !have1;
        /* the pool works on: a new row fits where the crash left space */
        row_data d3 = gen_row(&rng, 50, 4000, &seq, 20, 0);
        rowtable *r3 = build_row(p, 3, &d3, NULL, 1);
        check_accounting(p, what);
        rowtable_close(r3);
        free_row(&d3);
        for (size_t i = 0; i < n; i++) rowtable_close(rt[i]);
        pool_close(p);
    }
    assert_true(seen_r2_absent && seen_r2 && seen_r1_gone && seen_released);
    free(base);
    free_row(&d1);
    free_row(&d2);
    fx_free(&f);
}

/* Rows whose sequence ranges overlap (flushes never make them, but rowtable_rows_get
 * must not return an older version because a newer row came first). */
static void test_overlapping_rows(void **state)
{
    (void)state;
    fixture f = fx_new("rows-overlap");
    pool_options o = {.page_size = 4096};
    pool *p = open_pool(f.path, 1u << 20, PM_EMULATED, &o);
    uint8_t k[4][16];
    ikey_encode(k[0], "apple", 5, 10, IKEY_VALUE);  /* row 2 (newer): apple@10 */
    ikey_encode(k[1], "pear", 4, 11, IKEY_VALUE);   /* row 2: pear@11 */
    ikey_encode(k[2], "apple", 5, 20, IKEY_VALUE);  /* row 1 (older): apple@20 */
    ikey_encode(k[3], "pear", 4, 5, IKEY_DELETION); /* row 1: pear@5 deleted */
    tkv_slice k1[2] = {slice(k[2], 13), slice(k[3], 12)}, v1[2] = {slice("old-but-newer", 13), slice("", 0)};
    tkv_slice k2[2] = {slice(k[0], 13), slice(k[1], 12)}, v2[2] = {slice("a10", 3), slice("p11", 3)};
    tkv_it *it = vec_iter_new(k1, v1, 2);
    rowtable *r1, *r2;
    assert_int_equal(rowtable_build(p, 1, it, NULL, &r1), 0);
    it_destroy(it);
    it = vec_iter_new(k2, v2, 2);
    assert_int_equal(rowtable_build(p, 2, it, r1, &r2), 0);
    it_destroy(it);
    rowtable *rows[2] = {r2, r1};
    row_get_result res;
    tkv_buf v = {0};
    memset(&res, 0, sizeof res);
    assert_int_equal(rowtable_rows_get(rows, 2, slice("apple", 5), UINT64_MAX, &res, &v), 1);
    assert_int_equal(res.seq, 20);
    assert_int_equal(res.row_index, 1);
    assert_int_equal(v.len, 13);
    assert_memory_equal(v.data, "old-but-newer", 13);
    memset(&res, 0, sizeof res);
    assert_int_equal(rowtable_rows_get(rows, 2, slice("apple", 5), 15, &res, &v), 1); /* snapshot 15: apple@10 */
    assert_int_equal(res.seq, 10);
    assert_memory_equal(v.data, "a10", 3);
    memset(&res, 0, sizeof res);
    assert_int_equal(rowtable_rows_get(rows, 2, slice("pear", 4), UINT64_MAX, &res, &v), 1);
    assert_int_equal(res.seq, 11);
    assert_int_equal(res.type, IKEY_VALUE);
    memset(&res, 0, sizeof res);
    assert_int_equal(rowtable_rows_get(rows, 2, slice("pear", 4), 10, &res, &v), 1); /* the tombstone at 5 */
    assert_int_equal(res.type, IKEY_DELETION);
    assert_int_equal(v.len, 0);
    memset(&res, 0, sizeof res);
    assert_int_equal(rowtable_rows_get(rows, 2, slice("pear", 4), 4, &res, &v), 0);
    assert_int_equal(rowtable_rows_get(rows, 2, slice("zzz", 3), UINT64_MAX, &res, &v), 0);
    buf_free(&v);
    rowtable_abandon(r2);
    rowtable_abandon(r1);
    pool_stats st;
    pool_get_stats(p, &st);
    assert_int_equal(st.pages_free, st.pages_total);
    pool_close(p);
    fx_free(&f);
}

static void test_build_errors(void **state)
{
    (void)state;
    tu_rng rng;
    tu_rng_init(&rng, tu_seed() + 6);
    fixture f = fx_new("rows-errors");
    pool_options o = {.page_size = 4096};
    pool *p = open_pool(f.path, 1u << 20, PM_EMULATED, &o);
    pool_stats st0, st;
    pool_get_stats(p, &st0);
    rowtable *r = NULL;

    /* out of order: the builder refuses, nothing allocated */
    uint8_t k1[16], k2[16];
    ikey_encode(k1, "b", 1, 5, IKEY_VALUE);
    ikey_encode(k2, "a", 1, 6, IKEY_VALUE);
    tkv_slice ks[2] = {slice(k1, 9), slice(k2, 9)}, vs[2] = {slice("x", 1), slice("y", 1)};
    /* vec_iter sorts, so feed the disorder through a duplicate instead */
    tkv_slice dup[2] = {slice(k1, 9), slice(k1, 9)};
    tkv_it *it = vec_iter_new(dup, vs, 2);
    assert_int_equal(rowtable_build(p, 1, it, NULL, &r), TKV_INVALID);
    assert_null(r);
    it_destroy(it);
    /* row id 0 */
    it = vec_iter_new(ks, vs, 2);
    assert_int_equal(rowtable_build(p, 0, it, NULL, &r), TKV_INVALID);
    /* a source error is passed on */
    vec_iter_fail_after(it, 1, TKV_IO_ERROR);
    assert_int_equal(rowtable_build(p, 1, it, NULL, &r), TKV_IO_ERROR);
    it_destroy(it);
    pool_get_stats(p, &st);
    assert_int_equal(st.pages_free, st0.pages_free);

    /* a row larger than the pool: TKV_NO_SPACE, nothing allocated */
    uint64_t seq = 0;
    row_data big = gen_row(&rng, 6000, 100000, &seq, 600, 0);
    it = iter_of(&big);
    assert_int_equal(rowtable_build(p, 1, it, NULL, &r), TKV_NO_SPACE);
    assert_non_null(strstr(tkv_errmsg(), f.path));
    it_destroy(it);
    pool_get_stats(p, &st);
    assert_int_equal(st.pages_free, st0.pages_free);
    free_row(&big);

    /* an empty row is a valid row */
    it = vec_iter_new(NULL, NULL, 0);
    assert_int_equal(rowtable_build(p, 9, it, NULL, &r), 0);
    it_destroy(it);
    assert_int_equal(rowtable_commit(r), 0);
    assert_int_equal(rowtable_count(r), 0);
    row_get_result res;
    memset(&res, 0, sizeof res);
    assert_int_equal(rowtable_get(r, slice("a", 1), UINT64_MAX, NULL, &res, NULL, NULL), 0);
    tkv_it *ri = rowtable_iter(r);
    it_seek_first(ri);
    assert_false(it_valid(ri));
    it_seek_last(ri);
    assert_false(it_valid(ri));
    it_destroy(ri);
    rowtable_close(r);
    pool_close(p);
    p = open_pool(f.path, 0, PM_EMULATED, NULL);
    pool_row_id *rows;
    size_t n;
    assert_int_equal(pool_rows(p, &rows, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(rowtable_open(p, rows[0].slot, &r), 0);
    assert_int_equal(rowtable_count(r), 0);
    rowtable_close(r);
    free(rows);
    /* an empty slot */
    assert_int_equal(rowtable_open(p, 3, &r), TKV_INVALID);
    pool_close(p);
    fx_free(&f);
}

/* test_view_cursors -- the engine's reads pass the cursor of their own view
 * (rowtable_get_at / rowtable_rows_get_at / rowtable_iter_at) while the row's own
 * cursor is only the floor of what released pages allow; column compaction
 * sizes and ends columns with rowtable_upper_bound / data_offset / user_key;
 * a flush builds forward pointers from the view's cursor of the older row
 * (rowtable_build_at). All against the model. */
static void test_view_cursors(void **state)
{
    (void)state;
    tu_rng rng;
    tu_rng_init(&rng, tu_seed() + 7);
    fixture f = fx_new("rows-view");
    pool *p = open_pool(f.path, 16u << 20, PM_EMULATED, NULL);
    enum { K = 4 };
    row_data rows[K];
    rowtable *rt[K];
    uint64_t seq = 0, universe = 3000;
    /* oldest first; rows[]/rt[] newest first. Row 1 (the second oldest) is
     * built with forward pointers from a view cursor of the oldest row. */
    uint32_t oldest_view = 0;
    for (size_t i = 0; i < K; i++) {
        size_t at = K - 1 - i;
        rows[at] = gen_row(&rng, 600 + tu_rng_below(&rng, 900), universe, &seq, 200, 0);
        if (i == 1) {
            oldest_view = key_boundary(&rows[K - 1], rows[K - 1].n / 3);
            tkv_it *it = iter_of(&rows[at]);
            assert_int_equal(rowtable_build_at(p, i + 1, it, rt[at + 1], oldest_view, &rt[at]), 0);
            it_destroy(it);
            assert_int_equal(rowtable_commit(rt[at]), 0);
            check_fwd(rt[at], &rows[at], &rows[at + 1], oldest_view);
        } else {
            rt[at] = build_row(p, i + 1, &rows[at], i ? rt[at + 1] : NULL, 1);
        }
    }
    tkv_buf val = {0}, kb = {0};
    for (int round = 0; round < 6; round++) {
        /* per-view cursors at user-key boundaries; the rows' own cursors
         * (floors) at or below them */
        uint32_t view[K];
        for (size_t i = 0; i < K; i++) {
            uint32_t floor = rowtable_cursor(rt[i]);
            uint32_t room = rowtable_count(rt[i]) - floor;
            view[i] = key_boundary(&rows[i], floor + (round == 5 ? room : tu_rng_below(&rng, room / 2 + 1)));
            if (round == 5 && i == 0) view[i] = key_boundary(&rows[i], floor); /* one row fully live */
        }
        model m = model_of(rows, view, K);
        /* rowtable_rows_get_at against the model of what the view sees */
        for (int q = 0; q < 1500; q++) {
            char u[40];
            uint64_t ux = tu_rng_below(&rng, universe + 200);
            size_t un = ukey_of(ux, u);
            uint64_t snap = q % 3 ? UINT64_MAX : tu_rng_below(&rng, seq + 2);
            uint8_t t[64];
            ikey_encode(t, u, un, snap > IKEY_MAX_SEQ ? IKEY_MAX_SEQ : snap, IKEY_SEEK_TYPE);
            size_t pos = lower_bound(m.e, 0, m.n, slice(t, un + IKEY_TRAILER));
            int want = pos < m.n && ukey_cmp(ikey_user(ekey(&m.e[pos])), slice(u, un)) == 0;
            row_get_result res;
            memset(&res, 0, sizeof res);
            int rc =
                rowtable_rows_get_at(rt, view, K, slice(u, un), snap, q % 2 ? ROWTABLE_ROWS_GET_FILTER : 0, &res, &val);
            if (rc != want)
                fail_msg("round %d: rowtable_rows_get_at(%s) = %d, model %d", round, tu_hex(u, un), rc, want);
            if (want) {
                assert_int_equal(res.seq, ikey_seq(ekey(&m.e[pos])));
                assert_int_equal(val.len, m.e[pos].vn);
            }
        }
        free(m.e);
        for (size_t i = 0; i < K; i++) {
            char what[64];
            snprintf(what, sizeof what, "round %d row %zu view %u", round, i, view[i]);
            check_iter_from(rowtable_iter_at(rt[i], view[i]), &rng, &rows[i], view[i], what);
            /* a column's share of the row: [view, to) only */
            uint32_t to = view[i] + (uint32_t)tu_rng_below(&rng, rowtable_count(rt[i]) - view[i] + 1);
            row_data part = {rows[i].e, to};
            check_iter_from(rowtable_iter_range(rt[i], view[i], to), &rng, &part, view[i], what);
            /* upper bound: first entry past every version of a user key */
            for (int q = 0; q < 200; q++) {
                char u[40];
                size_t un;
                if (q % 2 && rows[i].n) {
                    const ent *e = &rows[i].e[tu_rng_below(&rng, rows[i].n)];
                    un = e->kn - IKEY_TRAILER;
                    memcpy(u, e->k, un);
                } else {
                    un = ukey_of(tu_rng_below(&rng, universe + 100), u);
                }
                uint32_t got;
                assert_int_equal(rowtable_upper_bound(rt[i], view[i], slice(u, un), &got), 0);
                size_t want = view[i];
                while (want < rows[i].n && ukey_cmp(ikey_user(ekey(&rows[i].e[want])), slice(u, un)) <= 0) want++;
                if (got != want) fail_msg("%s: upper_bound(%s) = %u, want %zu", what, tu_hex(u, un), got, want);
                assert_int_equal(rowtable_lower_bound(rt[i], view[i], slice(u, un), &got), 0);
                want = view[i];
                while (want < rows[i].n && ukey_cmp(ikey_user(ekey(&rows[i].e[want])), slice(u, un)) < 0) want++;
                if (got != want) fail_msg("%s: lower_bound(%s) = %u, want %zu", what, tu_hex(u, un), got, want);
            }
            /* data offsets grow with the index and span the data; keys read back */
            uint64_t prev = 0, off;
            for (uint32_t j = view[i]; j <= rowtable_count(rt[i]); j++) {
                assert_int_equal(rowtable_data_offset(rt[i], j, &off), 0);
                if (j > view[i]) assert_true(off > prev);
                prev = off;
                if (j < rowtable_count(rt[i])) {
                    assert_int_equal(rowtable_user_key(rt[i], j, &kb), 0);
                    tkv_slice uk = ikey_user(ekey(&rows[i].e[j]));
                    assert_int_equal(kb.len, uk.n);
                    assert_memory_equal(kb.data, uk.p, uk.n);
                }
            }
            rowtable_props pr;
            rowtable_get_props(rt[i], &pr);
            assert_int_equal(prev, pr.data_bytes);
        }
        /* the floors move up to the views' cursors (as the engine does once
         * no older view is live); reads from below a floor are raised to it */
        for (size_t i = 0; i < K; i++) {
            uint32_t below = rowtable_cursor(rt[i]);
            assert_int_equal(rowtable_set_cursor(rt[i], view[i]), 0);
            assert_int_equal(rowtable_release_dead_pages(rt[i], NULL), 0);
            uint64_t off;
            if (view[i] > below) assert_int_equal(rowtable_data_offset(rt[i], below, &off), TKV_INVALID);
            if (view[i] > 0 && view[i] < rowtable_count(rt[i]))
                assert_int_equal(rowtable_user_key(rt[i], view[i] - 1, &kb), TKV_INVALID);
            check_iter_from(rowtable_iter_at(rt[i], below), &rng, &rows[i], view[i], "raised to the floor");
        }
        check_accounting(p, "after releases");
    }
    buf_free(&val);
    buf_free(&kb);
    for (size_t i = 0; i < K; i++) {
        rowtable_close(rt[i]);
        free_row(&rows[i]);
    }
    pool_close(p);
    fx_free(&f);
}

/* test_cursor_after_trim -- a row whose cursor's previous entry begins in a
 * released data page, given back by pool_trim (zeros): the cursor set again
 * (as recovery re-applies the MANIFEST's, on the open handle and on one
 * reopened) is accepted, not reported as corruption; the entries from the
 * cursor read back. Keys share their 8-byte prefix, so the user-key check
 * would have to read the key bytes of the entry before the cursor. */
static void test_cursor_after_trim(void **state)
{
    (void)state;
    tu_rng rng;
    tu_rng_init(&rng, tu_seed() + 31);
    fixture f = fx_new("rows-trim");
    pool *p = open_pool(f.path, 16u << 20, PM_EMULATED, NULL);
    enum { N = 400 };
    row_data d = {calloc(N, sizeof(ent)), N};
    assert_non_null(d.e);
    for (size_t i = 0; i < N; i++) {
        char u[32];
        size_t un = (size_t)sprintf(u, "userkey-%06zu", i);
        d.e[i].kn = un + IKEY_TRAILER;
        d.e[i].k = malloc(d.e[i].kn);
        assert_non_null(d.e[i].k);
        ikey_encode(d.e[i].k, u, un, i + 1, IKEY_VALUE);
        d.e[i].vn = 700 + tu_rng_below(&rng, 200);
        d.e[i].v = malloc(d.e[i].vn);
        assert_non_null(d.e[i].v);
        tu_rng_fill(&rng, d.e[i].v, d.e[i].vn);
    }
    rowtable *r = build_row(p, 1, &d, NULL, 1);
    /* the cursor: the first entry past the middle whose predecessor starts in an earlier page */
    uint64_t ps = pool_page_size(p), a, b;
    uint32_t c = 0;
    for (uint32_t j = N / 2; j < N && !c; j++) {
        assert_int_equal(rowtable_data_offset(r, j - 1, &a), 0);
        assert_int_equal(rowtable_data_offset(r, j, &b), 0);
        if (a / ps < b / ps && a % ps) c = j;
    }
    assert_true(c > 0);
    assert_int_equal(rowtable_set_cursor(r, c), 0);
    uint32_t released = 0;
    assert_int_equal(rowtable_release_dead_pages(r, &released), 0);
    assert_true(released > 0);
    assert_true(pool_trim(p, 0) > 0); /* the released pages' blocks go back: they read as zeros */
    assert_int_equal(rowtable_set_cursor(r, c), 0);
    rowtable_close(r);
    pool_close(p);
    p = open_pool(f.path, 16u << 20, PM_EMULATED, NULL);
    pool_row_id *rows;
    size_t nrows;
    assert_int_equal(pool_rows(p, &rows, &nrows), 0);
    assert_int_equal(nrows, 1);
    assert_int_equal(rowtable_open(p, rows[0].slot, &r), 0);
    free(rows);
    int rc = rowtable_set_cursor(r, c); /* recovery: the MANIFEST's cursor re-applied */
    if (rc) fail_msg("cursor %u re-applied after a trim and a reopen: %s", c, tkv_errmsg());
    check_iter(&rng, r, &d, c, "after a trim and a reopen");
    rowtable_close(r);
    pool_close(p);
    free_row(&d);
    fx_free(&f);
}

/* test_row_willneed: rowtable_willneed reads a row's entry range into the
 * page cache (the pool's mapping has no readahead of its own): after the
 * pool file is evicted from the page cache, asking for a quarter of a row's
 * entries brings in about that quarter's data and metadata pages -- not
 * fewer, and not the whole row -- then the whole row when asked; empty and
 * inverted ranges read nothing; the row reads back intact. */
static void test_row_willneed(void **state)
{
    (void)state;
    tu_rng rng;
    tu_rng_init(&rng, tu_seed());
    fixture f = fx_new("row-willneed");
    if (fx_tmpfs(&f)) { /* tmpfs: nothing can be evicted */
        fx_free(&f);
        skip();
    }
    const uint64_t ps = 64u << 10;
    pool_options o = {.page_size = ps, .dir_slots = 4};
    pool *p = open_pool(f.path, 16u << 20, PM_EMULATED, &o);
    uint64_t seq = 0;
    row_data d = gen_row(&rng, 4000, 1u << 30, &seq, 1500, 0); /* ~3 MB of data: ~46 pages */
    rowtable *r = build_row(p, 1, &d, NULL, 1);
    uint32_t n = rowtable_count(r), from = n / 2, to = n / 2 + n / 4;
    uint64_t d0, d1, dend;
    assert_int_equal(rowtable_data_offset(r, from, &d0), 0);
    assert_int_equal(rowtable_data_offset(r, to, &d1), 0);
    assert_int_equal(rowtable_data_offset(r, n, &dend), 0);
    uint8_t *area = pool_page_addr(p, 0);
    pool_stats pst;
    pool_get_stats(p, &pst);
    size_t area_len = (size_t)pst.pages_total * ps;

    /* evict: drop the mapping's page tables, write the file back, drop its page cache */
    int fd = open(f.path, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(madvise(area, area_len, MADV_DONTNEED), 0);
    assert_int_equal(fdatasync(fd), 0);
    assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    size_t before = resident_pages(area, area_len);
    assert_true(before <= 2); /* at most what another reader brought back meanwhile */

    rowtable_willneed(r, to, from);  /* inverted: nothing */
    rowtable_willneed(r, n, n + 10); /* past the end: nothing */
    usleep(50000);
    assert_int_equal(resident_pages(area, area_len), before);

    rowtable_willneed(r, from, to);
    size_t want = (size_t)((d1 - d0) / 4096) + (size_t)(to - from) * ROWTABLE_META_ENTRY_SIZE / 4096;
    size_t got = 0;
    for (double t0 = tu_now_ms(); tu_now_ms() - t0 < 10000; usleep(2000))
        if ((got = resident_pages(area, area_len)) >= want) break;
    assert_true(got >= want);
    /* the range's pool pages, plus one partial page at each end of each stream */
    size_t most =
        (size_t)(((d1 - d0) / ps + 2) + ((uint64_t)(to - from) * ROWTABLE_META_ENTRY_SIZE / ps + 2)) * (ps / 4096);
    assert_true(got <= most + before);
    assert_true(got < dend / 4096); /* not the whole row */

    rowtable_willneed(r, 0, n);
    want = (size_t)(dend / 4096);
    for (double t0 = tu_now_ms(); tu_now_ms() - t0 < 10000; usleep(2000))
        if ((got = resident_pages(area, area_len)) >= want) break;
    assert_true(got >= want);

    /* the data is what was written */
    tkv_it *it = rowtable_iter(r);
    size_t i = 0;
    for (it_seek_first(it); it_valid(it); it_next(it), i++) {
        assert_true(i < d.n);
        assert_true(it_key(it).n == d.e[i].kn && memcmp(it_key(it).p, d.e[i].k, d.e[i].kn) == 0);
        assert_true(it_value(it).n == d.e[i].vn && memcmp(it_value(it).p, d.e[i].v, d.e[i].vn) == 0);
    }
    assert_int_equal(it_status(it), 0);
    assert_int_equal(i, d.n);
    it_destroy(it);
    close(fd);
    rowtable_close(r);
    free_row(&d);
    pool_close(p);
    fx_free(&f);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_model),
        cmocka_unit_test(test_comparison_bound),
        cmocka_unit_test(test_broken_chain),
        cmocka_unit_test(test_corruption),
        cmocka_unit_test(test_crash),
        cmocka_unit_test(test_overlapping_rows),
        cmocka_unit_test(test_build_errors),
        cmocka_unit_test(test_view_cursors),
        cmocka_unit_test(test_cursor_after_trim),
        cmocka_unit_test(test_row_willneed),
        cmocka_unit_test(test_range_dels),
        cmocka_unit_test(test_value_compression),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
