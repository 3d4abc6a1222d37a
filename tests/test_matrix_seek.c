// SPDX-License-Identifier: Apache-2.0
/*
 * test_matrix_seek.c -- hinted seeks over the matrix container's rows
 * (rowtable_iters_at, src/matrix/rowtable_seek.c) and through the DB
 * iterator:
 *
 *  seek_model        up to 24 rows of random keys (versions, a hot key,
 *                    tombstones), view cursors and rows' own cursors, rows
 *                    whose forward pointers are overwritten with random
 *                    values, a row built without an older row and a dropped
 *                    middle row (broken chains); targets before the first
 *                    key, after the last, on entries, between versions and
 *                    between keys. Every row iterator's seek -- in merge
 *                    order, out of order, hinted or not -- lands where a
 *                    binary search of the row's live entries does, and the
 *                    merged rows, with next/prev around each seek (the
 *                    re-seeks of direction changes), walk the model.
 *  seek_corrupt      a middle row whose metadata points past its data:
 *                    TKV_CORRUPTION on its seeks and on the merged rows'
 *                    (never an entry); the rows after it are still found.
 *  seek_comparisons  16 rows of 20,000 entries: every hinted seek of the
 *                    merged rows costs at most log2(n) + C_PER_ROW * k
 *                    comparisons, and all of them together less than half
 *                    of the same seeks without hints.
 *  seek_db           l0=matrix with 18 rows in the pool: seeks, nexts and
 *                    prevs with seek_hints=1 and 0 against the model;
 *                    tkv.matrix counts the seeks, and the hinted ones cost
 *                    fewer comparisons.
 *
 * Replay a failure with the printed TKV_TEST_SEED.
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

#include "matrix/pool.h"
#include "matrix/rowtable.h"
#include "testutil.h"
#include "util/coding.h"
#include "util/status.h"
#include "util/vec_iter.h"

/* The c of the bound log2(n) + c*k on the comparisons of one seek over k
 * rows (the same c test_matrix_rowtable asserts for lookups). */
#define C_PER_ROW 5
/* Where a metadata entry keeps its forward pointer (docs/format-matrix.md 5.1). */
#define META_FWD 24
#define MAX_ROWS 24

/* ---------------------------------------------------------------- rows of random entries */

typedef struct ent {
    uint8_t *k; /* internal key */
    size_t kn;
    uint8_t *v;
    size_t vn;
} ent;

typedef struct row_data {
    ent *e; /* sorted by ikey_cmp */
    size_t n;
} row_data;

static tkv_slice ekey(const ent *e) { return slice(e->k, e->kn); }

static int ent_cmp(const void *a, const void *b) { return ikey_cmp(ekey(a), ekey(b)); }

/* ukey_of -- user key number u: 0 is the empty key; every 5th is short (the
 * metadata prefix decides); the others share the prefix "key00000" and carry
 * 0..9 letters (comparisons read the data). */
static size_t ukey_of(uint64_t u, char *out)
{
    if (u == 0) return 0;
    if (u % 5 == 0) return (size_t)sprintf(out, "s%06llu", (unsigned long long)(u % 1000000));
    int n = sprintf(out, "key%010llu", (unsigned long long)u);
    unsigned sl = (unsigned)(tu_mix64(u) % 10);
    for (unsigned i = 0; i < sl; i++) out[n + (int)i] = (char)('a' + tu_mix64(u * 31u + i) % 26);
    return (size_t)n + sl;
}

/* absent_key_of -- never generated: sorts right after ukey_of(u). */
static size_t absent_key_of(uint64_t u, char *out)
{
    size_t n = ukey_of(u, out);
    out[n] = '0';
    return n + 1;
}

/* add_ent -- appends (ukey u, next seq, type) with a small random value. */
static void add_ent(tu_rng *r, row_data *d, uint64_t u, uint64_t *seq)
{
    char uk[40];
    size_t un = ukey_of(u, uk);
    ent *e = &d->e[d->n++];
    ikey_type t = tu_rng_below(r, 100) < 15 ? IKEY_DELETION : IKEY_VALUE;
    e->kn = un + IKEY_TRAILER;
    e->k = malloc(e->kn);
    assert_non_null(e->k);
    ikey_encode(e->k, uk, un, ++*seq, t);
    e->vn = t == IKEY_VALUE ? tu_rng_below(r, 24) : 0;
    e->v = malloc(e->vn + 1);
    assert_non_null(e->v);
    tu_rng_fill(r, e->v, e->vn);
}

/* gen_row -- n entries over user keys [1, universe) (now and then the empty
 * key): 1..3 versions per pick, and a hot key (number 1) with up to 30. */
static row_data gen_row(tu_rng *r, size_t n, uint64_t universe, uint64_t *seq)
{
    row_data d = {calloc(n ? n : 1, sizeof(ent)), 0};
    assert_non_null(d.e);
    while (d.n < n) {
        uint64_t u = tu_rng_range(r, 1, universe - 1);
        if (tu_rng_below(r, 500) == 0) u = 0;
        size_t versions = tu_rng_below(r, 4) == 0 ? 1 + tu_rng_below(r, 3) : 1;
        if (tu_rng_below(r, 200) == 0) {
            u = 1;
            versions = 1 + tu_rng_below(r, 30);
        }
        for (size_t i = 0; i < versions && d.n < n; i++) add_ent(r, &d, u, seq);
    }
    qsort(d.e, d.n, sizeof *d.e, ent_cmp);
    return d;
}

static void free_row(row_data *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->e[i].k);
        free(d->e[i].v);
    }
    free(d->e);
    *d = (row_data){NULL, 0};
}

/* build_row -- row `id` of d with forward pointers into `older`, committed. */
static rowtable *build_row(pool *p, uint64_t id, const row_data *d, const rowtable *older)
{
    tkv_slice *ks = malloc((d->n + 1) * sizeof *ks), *vs = malloc((d->n + 1) * sizeof *vs);
    assert_non_null(ks);
    assert_non_null(vs);
    for (size_t i = 0; i < d->n; i++) {
        ks[i] = ekey(&d->e[i]);
        vs[i] = slice(d->e[i].v, d->e[i].vn);
    }
    tkv_it *it = vec_iter_new(ks, vs, d->n);
    assert_non_null(it);
    free(ks);
    free(vs);
    rowtable *r = NULL;
    int rc = rowtable_build(p, id, it, older, &r);
    if (rc) fail_msg("rowtable_build row %llu: %d %s", (unsigned long long)id, rc, tkv_errmsg());
    it_destroy(it);
    rc = rowtable_commit(r);
    if (rc) fail_msg("rowtable_commit: %d %s", rc, tkv_errmsg());
    return r;
}

/* key_boundary -- the first cursor >= c that does not split a user key's versions. */
static uint32_t key_boundary(const row_data *d, size_t c)
{
    while (c > 0 && c < d->n && ukey_cmp(ikey_user(ekey(&d->e[c - 1])), ikey_user(ekey(&d->e[c]))) == 0) c++;
    return (uint32_t)c;
}

/* lower_bound -- first index of e[lo, hi) whose key is >= t. */
static size_t lower_bound(const ent *e, size_t lo, size_t hi, tkv_slice t)
{
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ikey_cmp(ekey(&e[mid]), t) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* randomize_fwd -- overwrites the forward pointers of r's entries in the
 * pool (after open: nothing verifies them again) with random values: mode 0
 * garbage, 1 sorted but random, 2 the true value off by one now and then. */
static void randomize_fwd(tu_rng *rng, pool *p, rowtable *r, uint32_t older_n, int mode)
{
    rowtable_props pr;
    rowtable_get_props(r, &pr);
    pool_row row;
    assert_int_equal(pool_row_read(p, pr.slot, &row), 0);
    uint32_t ps = pool_page_size(p), prev = 0;
    for (uint32_t i = 0; i < pr.entries; i++) {
        uint64_t off = pr.meta_off + (uint64_t)ROWTABLE_META_ENTRY_SIZE * i;
        uint8_t *a = pool_page_addr(p, pool_row_page(&row, (uint32_t)(off / ps))) + off % ps + META_FWD;
        uint32_t v = dec_u32(a);
        switch (mode) {
        case 0:
            v = (uint32_t)tu_rng_below(rng, older_n + 3);
            break;
        case 1:
            v = prev = prev + (uint32_t)(tu_rng_below(rng, 4) == 0 ? tu_rng_below(rng, 3) : 0);
            break;
        default:
            if (tu_rng_below(rng, 3) == 0) v = tu_rng_below(rng, 2) ? v + 1 : v - (v > 0);
            break;
        }
        enc_u32(a, v);
    }
}

/* ---------------------------------------------------------------- checks */

/* A view of k rows: handles, their entries, and each row's first live entry. */
typedef struct view {
    size_t k;
    rowtable *rt[MAX_ROWS];
    row_data *d[MAX_ROWS];
    uint32_t cur[MAX_ROWS];  /* the view's cursors, passed to rowtable_iters_at */
    uint32_t live[MAX_ROWS]; /* max(view cursor, row's own cursor) */
    ent *all;                /* the merged live entries, sorted */
    size_t nall;
} view;

static void view_merge(view *v)
{
    size_t total = 0;
    for (size_t i = 0; i < v->k; i++) {
        uint32_t own = rowtable_cursor(v->rt[i]);
        v->live[i] = v->cur[i] > own ? v->cur[i] : own;
        if (v->live[i] > v->d[i]->n) v->live[i] = (uint32_t)v->d[i]->n;
        total += v->d[i]->n;
    }
    free(v->all);
    v->all = malloc((total + 1) * sizeof *v->all);
    assert_non_null(v->all);
    v->nall = 0;
    for (size_t i = 0; i < v->k; i++)
        for (size_t j = v->live[i]; j < v->d[i]->n; j++) v->all[v->nall++] = v->d[i]->e[j];
    qsort(v->all, v->nall, sizeof *v->all, ent_cmp);
}

/* pick_target -- a seek target into t[]: before the first key, after the
 * last, an entry's own key, a version between a user key's entries, a key
 * between keys, or any key number at any sequence. */
static tkv_slice pick_target(tu_rng *rng, const view *v, uint64_t universe, uint64_t max_seq, uint8_t *t)
{
    char u[48];
    size_t un;
    uint64_t seq = tu_rng_below(rng, max_seq + 2);
    int kind = (int)tu_rng_below(rng, 6);
    const row_data *d = v->d[tu_rng_below(rng, v->k)];
    if ((kind == 2 || kind == 3) && d->n == 0) kind = 5;
    switch (kind) {
    case 0:
        un = 0;
        seq = IKEY_MAX_SEQ;
        break; /* the smallest internal key there is */
    case 1:
        un = (size_t)sprintf(u, "zzz");
        break;
    case 2: { /* an entry of any row, also below a cursor */
        const ent *e = &d->e[tu_rng_below(rng, d->n)];
        memcpy(t, e->k, e->kn);
        return slice(t, e->kn);
    }
    case 3: { /* one of its user key's versions, one above or below it */
        const ent *e = &d->e[tu_rng_below(rng, d->n)];
        un = e->kn - IKEY_TRAILER;
        memcpy(u, e->k, un);
        seq = ikey_seq(ekey(e)) + (tu_rng_below(rng, 2) ? 1 : 0) - (tu_rng_below(rng, 2) ? 1 : 0);
        break;
    }
    case 4:
        un = absent_key_of(tu_rng_below(rng, universe), u);
        break;
    default:
        un = ukey_of(tu_rng_below(rng, universe + 10), u);
        break;
    }
    if (seq > IKEY_MAX_SEQ) seq = IKEY_MAX_SEQ;
    ikey_encode(t, u, un, seq, (ikey_type)tu_rng_below(rng, 2));
    return slice(t, un + IKEY_TRAILER);
}

/* expect_at -- iterator `it` is at entry e (or not valid when e is NULL). */
static void expect_at(tkv_it *it, const ent *e, const char *what, size_t q)
{
    if (!e) {
        if (it_valid(it)) fail_msg("%s (seek %zu): at %s, want the end", what, q, tu_hex(it_key(it).p, it_key(it).n));
        assert_int_equal(it_status(it), 0);
        return;
    }
    if (!it_valid(it))
        fail_msg("%s (seek %zu): not valid (status %d %s), want %s", what, q, it_status(it), tkv_errmsg(),
                 tu_hex(e->k, e->kn));
    tkv_slice k = it_key(it), val = it_value(it);
    if (k.n != e->kn || memcmp(k.p, e->k, k.n))
        fail_msg("%s (seek %zu): at %s, want %s", what, q, tu_hex(k.p, k.n), tu_hex(e->k, e->kn));
    if (val.n != e->vn || (val.n && memcmp(val.p, e->v, val.n))) fail_msg("%s (seek %zu): value differs", what, q);
}

/* check_row_seek -- row i's iterator was sought to t: where a binary search
 * of the row's live entries lands. */
static void check_row_seek(const view *v, tkv_it **its, size_t i, tkv_slice t, const char *what, size_t q)
{
    const row_data *d = v->d[i];
    size_t want = lower_bound(d->e, v->live[i], d->n, t);
    expect_at(its[i], want < d->n ? &d->e[want] : NULL, what, q);
}

/* seek_rows -- the k row iterators sought to t one by one: in merge order,
 * in a random order, or a random subset in order (a direction change that
 * skips the current row), each checked. */
static void seek_rows(tu_rng *rng, const view *v, tkv_it **its, tkv_slice t, const char *what, size_t q)
{
    size_t order[MAX_ROWS];
    for (size_t i = 0; i < v->k; i++) order[i] = i;
    int how = (int)tu_rng_below(rng, 4);
    if (how == 1)
        for (size_t i = v->k; i > 1; i--) {
            size_t j = tu_rng_below(rng, i), x = order[i - 1];
            order[i - 1] = order[j];
            order[j] = x;
        }
    size_t skip = how == 2 ? tu_rng_below(rng, v->k) : SIZE_MAX;
    for (size_t n = 0; n < v->k; n++) {
        size_t i = order[n];
        if (i == skip) continue;
        it_seek(its[i], t);
        check_row_seek(v, its, i, t, what, q);
    }
}

/* walk_merged -- the merged rows sought to t, then a few steps either way
 * (a change of direction re-seeks every other row), against the model. */
static void walk_merged(tu_rng *rng, const view *v, tkv_it *m, tkv_slice t, const char *what, size_t q)
{
    size_t pos = lower_bound(v->all, 0, v->nall, t);
    it_seek(m, t);
    expect_at(m, pos < v->nall ? &v->all[pos] : NULL, what, q);
    for (int s = 0; s < 6 && pos < v->nall; s++) {
        if (tu_rng_below(rng, 2)) {
            pos++;
            it_next(m);
        } else {
            if (pos == 0) break;
            pos--;
            it_prev(m);
        }
        expect_at(m, pos < v->nall ? &v->all[pos] : NULL, what, q);
    }
}

/* chained -- whether two neighbouring rows with live entries are linked by
 * forward pointers (the newer one's point into the older one). */
static int chained(const view *v)
{
    for (size_t i = 0; i + 1 < v->k; i++) {
        rowtable_props pr;
        rowtable_get_props(v->rt[i], &pr);
        if (pr.older_row_id == rowtable_id(v->rt[i + 1]) && v->live[i] < v->d[i]->n && v->live[i + 1] < v->d[i + 1]->n)
            return 1;
    }
    return 0;
}

/* check_view -- nq random targets through row iterators and merged rows,
 * with and without hints. */
static void check_view(tu_rng *rng, const view *v, uint64_t universe, uint64_t max_seq, size_t nq, const char *what)
{
    uint8_t t[96];
    for (unsigned flags = 0; flags <= ROWTABLE_SEEK_HINTS; flags++) {
        row_seek_stats st = {0};
        tkv_it *its[MAX_ROWS], **kids = calloc(v->k, sizeof *kids);
        assert_non_null(kids);
        assert_int_equal(rowtable_iters_at(v->rt, v->cur, v->k, flags, &st, its), 0);
        assert_int_equal(rowtable_iters_at(v->rt, v->cur, v->k, flags, &st, kids), 0);
        tkv_it *m = merging_iter_new(kids, v->k);
        assert_non_null(m);
        for (size_t q = 0; q < nq; q++) {
            tkv_slice ts = pick_target(rng, v, universe, max_seq, t);
            seek_rows(rng, v, its, ts, what, q);
            walk_merged(rng, v, m, ts, what, q);
        }
        if (!flags) assert_int_equal(st.hints_used + st.hints_rejected, 0);
        else if (chained(v)) assert_true(st.hints_used + st.hints_rejected > 0);
        assert_true(st.seeks >= nq);
        for (size_t i = 0; i < v->k; i++) it_destroy(its[i]);
        it_destroy(m);
    }
}

/* ---------------------------------------------------------------- the model test */

static void test_seek_model(void **state)
{
    (void)state;
    tu_rng rng;
    tu_rng_init(&rng, tu_seed() + 101);
    for (int round = 0; round < 3; round++) {
        char *dir = tu_tmpdir("seek-model");
        char *path = tu_path(dir, "matrix.pmem");
        pool_options o = {.page_size = round == 1 ? 4096 : 0};
        pool *p = NULL;
        int rc = pool_open(path, round == 1 ? 1u << 20 : 32u << 20, PM_EMULATED, PM_PROFILE_NONE, &o, &p, NULL);
        if (rc) fail_msg("pool_open: %d %s", rc, tkv_errmsg());
        size_t k = 2 + (size_t)tu_rng_below(&rng, MAX_ROWS - 3); /* one more is built, then dropped */
        if (round == 2) k = MAX_ROWS - 1;
        row_data rows[MAX_ROWS];
        rowtable *rt[MAX_ROWS];
        uint64_t seq = 0, universe = 2000 + tu_rng_below(&rng, 4000);
        size_t dropped = 1 + tu_rng_below(&rng, k - 1), nobuilt = tu_rng_below(&rng, k + 1);
        for (size_t b = 0; b <= k; b++) { /* oldest first: built b goes to index k - b */
            size_t i = k - b;
            size_t n = tu_rng_below(&rng, 8) == 0 ? 1 + tu_rng_below(&rng, 5)
                                                  : 20 + tu_rng_below(&rng, round == 1 ? 120 : 700);
            rows[i] = gen_row(&rng, n, universe, &seq);
            rt[i] = build_row(p, b + 1, &rows[i], b && i != nobuilt ? rt[i + 1] : NULL);
        }
        view v = {.k = k};
        /* rows[dropped] goes (its newer row's hints now name a row that is gone) */
        assert_int_equal(rowtable_set_cursor(rt[dropped], (uint32_t)rows[dropped].n), 0);
        assert_int_equal(rowtable_drop(rt[dropped]), 0);
        free_row(&rows[dropped]);
        for (size_t i = 0, j = 0; i <= k; i++) {
            if (i == dropped) continue;
            v.rt[j] = rt[i];
            v.d[j] = &rows[i];
            j++;
        }
        view_merge(&v);
        check_view(&rng, &v, universe, seq, 1500, "built");
        /* cursors: a view's (anything up to the end), and rows' own (on key boundaries) */
        for (size_t i = 0; i < k; i++) {
            size_t n = v.d[i]->n;
            if (tu_rng_below(&rng, 3) == 0) v.cur[i] = (uint32_t)tu_rng_below(&rng, n + 1);
            if (tu_rng_below(&rng, 8) == 0) v.cur[i] = (uint32_t)n; /* no live entry in the view */
            if (tu_rng_below(&rng, 4) == 0)
                assert_int_equal(rowtable_set_cursor(v.rt[i], key_boundary(v.d[i], tu_rng_below(&rng, n + 1))), 0);
        }
        view_merge(&v);
        check_view(&rng, &v, universe, seq, 1500, "cursors");
        /* forward pointers overwritten with random values in some rows */
        for (size_t i = 0; i + 1 < k; i++)
            if (tu_rng_below(&rng, 2))
                randomize_fwd(&rng, p, v.rt[i], rowtable_count(v.rt[i + 1]), (int)tu_rng_below(&rng, 3));
        check_view(&rng, &v, universe, seq, 1500, "random forward pointers");
        for (size_t i = 0; i < k; i++) {
            rowtable_close(v.rt[i]);
            free_row(v.d[i]);
        }
        free(v.all);
        pool_close(p);
        free(path);
        tu_tmpdir_free(dir);
    }
}

/* ---------------------------------------------------------------- a damaged row */

/* test_seek_corrupt -- a middle row whose metadata points past its data: a
 * seek that compares its keys reports TKV_CORRUPTION, on that row's iterator
 * and on the merged rows, never an entry; the rows after it, whose windows
 * came from it, are still found by a binary search. */
static void test_seek_corrupt(void **state)
{
    (void)state;
    tu_rng rng;
    tu_rng_init(&rng, tu_seed() + 104);
    char *dir = tu_tmpdir("seek-corrupt");
    char *path = tu_path(dir, "matrix.pmem");
    pool *p = NULL;
    assert_int_equal(pool_open(path, 16u << 20, PM_EMULATED, PM_PROFILE_NONE, NULL, &p, NULL), 0);
    enum { K = 4 };
    row_data rows[K];
    view v = {.k = K};
    uint64_t seq = 0, universe = 3000;
    for (size_t b = 0; b < K; b++) {
        size_t i = K - 1 - b;
        rows[i] = gen_row(&rng, 400, universe, &seq);
        v.rt[i] = build_row(p, b + 1, &rows[i], b ? v.rt[i + 1] : NULL);
        v.d[i] = &rows[i];
    }
    view_merge(&v);
    /* row 1: every data offset past the data */
    rowtable_props pr;
    rowtable_get_props(v.rt[1], &pr);
    pool_row row;
    assert_int_equal(pool_row_read(p, pr.slot, &row), 0);
    for (uint32_t i = 0; i < pr.entries; i++) {
        uint64_t off = pr.meta_off + (uint64_t)ROWTABLE_META_ENTRY_SIZE * i, ps = pool_page_size(p);
        enc_u64(pool_page_addr(p, pool_row_page(&row, (uint32_t)(off / ps))) + off % ps + 16, UINT64_C(1) << 40);
    }
    uint8_t t[96];
    char u[48];
    row_seek_stats st = {0};
    for (int q = 0; q < 200; q++) {
        size_t un = ukey_of(tu_rng_range(&rng, 1, universe), u);
        if (un <= 8) continue; /* decided by the metadata prefix alone: row 1's data is never read */
        ikey_encode(t, u, un, IKEY_MAX_SEQ, IKEY_SEEK_TYPE);
        tkv_slice ts = slice(t, un + IKEY_TRAILER);
        tkv_it *its[K], **kids = calloc(K, sizeof *kids);
        assert_non_null(kids);
        assert_int_equal(rowtable_iters_at(v.rt, NULL, K, ROWTABLE_SEEK_HINTS, &st, its), 0);
        assert_int_equal(rowtable_iters_at(v.rt, NULL, K, ROWTABLE_SEEK_HINTS, &st, kids), 0);
        for (size_t i = 0; i < K; i++) {
            if (i == 1 && q % 2) continue; /* the chain goes through row 1 without seeking it */
            it_seek(its[i], ts);
            if (i == 1) {
                assert_false(it_valid(its[i]));
                assert_int_equal(it_status(its[i]), TKV_CORRUPTION);
                assert_non_null(strstr(tkv_errmsg(), "row 3"));
            } else {
                check_row_seek(&v, its, i, ts, "corrupt row 1", (size_t)q);
            }
        }
        tkv_it *m = merging_iter_new(kids, K);
        assert_non_null(m);
        it_seek(m, ts);
        assert_false(it_valid(m));
        assert_int_equal(it_status(m), TKV_CORRUPTION);
        for (size_t i = 0; i < K; i++) it_destroy(its[i]);
        it_destroy(m);
    }
    for (size_t i = 0; i < K; i++) {
        rowtable_close(v.rt[i]);
        free_row(&rows[i]);
    }
    free(v.all);
    pool_close(p);
    free(path);
    tu_tmpdir_free(dir);
}

/* ---------------------------------------------------------------- comparisons per seek */

/* seek_costs -- nq seeks of the merged rows (flags), each to a key
 * number or one between keys; returns the comparisons summed, *max the
 * largest, and fails a seek over `bound`. */
static uint64_t seek_costs(const view *v, unsigned flags, uint64_t seed, size_t nq, uint64_t universe, double bound,
                           uint64_t *max, row_seek_stats *st)
{
    tu_rng rng;
    tu_rng_init(&rng, seed);
    tkv_it **kids = calloc(v->k, sizeof *kids);
    assert_non_null(kids);
    memset(st, 0, sizeof *st);
    assert_int_equal(rowtable_iters_at(v->rt, NULL, v->k, flags, st, kids), 0);
    tkv_it *m = merging_iter_new(kids, v->k);
    assert_non_null(m);
    uint8_t t[96];
    char u[48];
    *max = 0;
    for (size_t q = 0; q < nq; q++) {
        uint64_t x = tu_rng_below(&rng, universe);
        size_t un = q % 2 ? absent_key_of(x, u) : ukey_of(x, u);
        ikey_encode(t, u, un, IKEY_MAX_SEQ, IKEY_SEEK_TYPE);
        uint64_t before = st->comparisons;
        it_seek(m, slice(t, un + IKEY_TRAILER));
        uint64_t c = st->comparisons - before;
        if (c > *max) *max = c;
        if (bound > 0 && (double)c > bound)
            fail_msg("seek %s: %llu comparisons over %zu rows > %.1f", tu_hex(u, un), (unsigned long long)c, v->k,
                     bound);
    }
    assert_int_equal(st->seeks, nq);
    it_destroy(m);
    return st->comparisons;
}

static void test_seek_comparisons(void **state)
{
    (void)state;
    tu_rng rng;
    uint64_t seed = tu_seed() + 102;
    tu_rng_init(&rng, seed);
    enum { K = 16 };
    size_t n = 20000, nq = 4000;
    char *dir = tu_tmpdir("seek-cmp");
    char *path = tu_path(dir, "matrix.pmem");
    pool *p = NULL;
    assert_int_equal(pool_open(path, 96u << 20, PM_EMULATED, PM_PROFILE_NONE, NULL, &p, NULL), 0);
    row_data rows[K];
    view v = {.k = K};
    uint64_t seq = 0, universe = 1000000;
    for (size_t b = 0; b < K; b++) {
        size_t i = K - 1 - b;
        rows[i] = gen_row(&rng, n, universe, &seq);
        v.rt[i] = build_row(p, b + 1, &rows[i], b ? v.rt[i + 1] : NULL);
        v.d[i] = &rows[i];
    }
    double bound = log2((double)n) + C_PER_ROW * K;
    row_seek_stats hs, ps;
    uint64_t hmax, pmax;
    uint64_t hinted = seek_costs(&v, ROWTABLE_SEEK_HINTS, seed, nq, universe, bound, &hmax, &hs);
    uint64_t plain = seek_costs(&v, 0, seed, nq, universe, 0, &pmax, &ps);
    print_message("# seeks over k=%d rows of n=%zu: with hints %.1f comparisons per seek (max %llu, bound log2(n)+%d*k "
                  "= %.1f), without %.1f (max %llu); windows used %llu rejected %llu\n",
                  K, n, (double)hinted / (double)nq, (unsigned long long)hmax, C_PER_ROW, bound,
                  (double)plain / (double)nq, (unsigned long long)pmax, (unsigned long long)hs.hints_used,
                  (unsigned long long)hs.hints_rejected);
    assert_int_equal(hs.rows_searched, (uint64_t)K * nq);
    assert_int_equal(ps.rows_searched, (uint64_t)K * nq);
    assert_int_equal(hs.hints_used, (uint64_t)(K - 1) * nq); /* true pointers: every window holds */
    assert_int_equal(hs.hints_rejected, 0);
    assert_true(hinted * 2 < plain);
    for (size_t i = 0; i < K; i++) {
        rowtable_close(v.rt[i]);
        free_row(&rows[i]);
    }
    free(v.all);
    pool_close(p);
    free(path);
    tu_tmpdir_free(dir);
}

/* ---------------------------------------------------------------- through the DB */

/* db_seeks -- nq seeks to random keys with 0..4 nexts and now and then a
 * prev, against the model. */
static void db_seeks(tkv_db *db, const tu_model *m, uint64_t seed, size_t nq, const char *what)
{
    tu_rng rng;
    tu_rng_init(&rng, seed);
    tkv_iter *it = NULL;
    assert_int_equal(tkv_iter_new(db, NULL, &it), TKV_OK);
    char key[32];
    for (size_t q = 0; q < nq; q++) {
        int kn = sprintf(key, "k%06llu", (unsigned long long)tu_rng_below(&rng, 12000));
        if (q % 50 == 0) kn = sprintf(key, "%s", q % 100 ? "a" : "z"); /* before the first key, after the last */
        size_t pos = tu_model_lower_bound(m, key, (size_t)kn);
        tkv_iter_seek(it, key, (size_t)kn);
        for (int s = 0; s < 5; s++) {
            if (pos >= tu_model_count(m)) {
                if (tkv_iter_valid(it)) fail_msg("%s: seek %s step %d: valid past the model's end", what, key, s);
                break;
            }
            const void *mk, *mv;
            size_t mkn, mvn, ikn, ivn;
            tu_model_at(m, pos, &mk, &mkn, &mv, &mvn);
            if (!tkv_iter_valid(it))
                fail_msg("%s: seek %s step %d: not valid, model has %s", what, key, s, tu_hex(mk, mkn));
            const void *ik = tkv_iter_key(it, &ikn), *iv = tkv_iter_value(it, &ivn);
            if (tu_keycmp(ik, ikn, mk, mkn) || ivn != mvn || memcmp(iv, mv, mvn))
                fail_msg("%s: seek %s step %d: at %s, model %s", what, key, s, tu_hex(ik, ikn), tu_hex(mk, mkn));
            if (pos > 0 && tu_rng_below(&rng, 4) == 0) {
                tkv_iter_prev(it);
                pos--;
            } else {
                tkv_iter_next(it);
                pos++;
            }
        }
        assert_int_equal(tkv_iter_status(it), TKV_OK);
    }
    tkv_iter_free(it);
}

/* seeks_field -- a field of tkv.matrix's seeks line. */
static uint64_t seeks_field(tkv_db *db, const char *field)
{
    char *p = tkv_property(db, "tkv.matrix");
    assert_non_null(p);
    const char *line = strstr(p, "\nseeks: "), *at = line ? strstr(line, field) : NULL;
    if (!at || strchr(line + 1, '\n') < at) fail_msg("tkv.matrix has no seeks line with %s:\n%s", field, p);
    uint64_t v = strtoull(at + strlen(field), NULL, 10);
    tkv_free(p);
    return v;
}

static void test_seek_db(void **state)
{
    (void)state;
    tu_rng rng;
    uint64_t seed = tu_seed() + 103;
    tu_rng_init(&rng, seed);
    char *dir = tu_tmpdir("seek-db");
    tkv_options *o = tu_small_options();
    assert_int_equal(tkv_options_set(o, "l0", "matrix"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "pmem_size", "64M"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "matrix_trigger", "100"), TKV_OK); /* the rows stay in the pool */
    tkv_db *db = tu_open_ok(dir, o);
    tu_model *m = tu_model_new();
    enum { ROWS = 18 };
    char key[32], val[64];
    for (int r = 0; r < ROWS; r++) {
        for (int i = 0; i < 400; i++) {
            int kn = sprintf(key, "k%06llu", (unsigned long long)tu_rng_below(&rng, 12000));
            if (tu_rng_below(&rng, 10) == 0) {
                assert_int_equal(tkv_delete(db, key, (size_t)kn, 0), TKV_OK);
                tu_model_del(m, key, (size_t)kn);
            } else {
                int vn = sprintf(val, "v%d.%d.%llu", r, i, (unsigned long long)tu_rng_next(&rng));
                assert_int_equal(tkv_put(db, key, (size_t)kn, val, (size_t)vn, 0), TKV_OK);
                tu_model_put(m, key, (size_t)kn, val, (size_t)vn);
            }
        }
        assert_int_equal(tkv_flush(db), TKV_OK);
    }
    uint64_t rows = tu_prop_u64(db, "tkv.stats", "matrix: rows=");
    assert_true(rows >= 16);
    tu_close_ok(db);
    uint64_t seeks[2], cmp[2];
    for (int hints = 1; hints >= 0; hints--) {
        assert_int_equal(tkv_options_set(o, "seek_hints", hints ? "1" : "0"), TKV_OK);
        db = tu_open_ok(dir, o);
        assert_int_equal(tu_prop_u64(db, "tkv.stats", "matrix: rows="), rows);
        db_seeks(db, m, seed + 1, 1500, hints ? "hinted" : "unhinted");
        seeks[hints] = seeks_field(db, "count=");
        cmp[hints] = seeks_field(db, " comparisons=");
        uint64_t used = seeks_field(db, "hinted=");
        if (hints) assert_true(used > 0);
        else assert_int_equal(used, 0);
        tu_close_ok(db);
    }
    print_message("# DB with %llu rows: %llu seeks (with the re-seeks of direction changes); comparisons per seek "
                  "%.1f with hints, %.1f without\n",
                  (unsigned long long)rows, (unsigned long long)seeks[1], (double)cmp[1] / (double)seeks[1],
                  (double)cmp[0] / (double)seeks[0]);
    assert_int_equal(seeks[0], seeks[1]);
    assert_true(seeks[1] >= 1500);
    assert_true(cmp[1] * 2 < cmp[0]);
    tu_model_free(m);
    tkv_options_free(o);
    tu_tmpdir_free(dir);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_seek_model),
        cmocka_unit_test(test_seek_corrupt),
        cmocka_unit_test(test_seek_comparisons),
        cmocka_unit_test(test_seek_db),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
