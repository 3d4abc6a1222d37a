// SPDX-License-Identifier: Apache-2.0
/*
 * matrixutil.c -- the rows, pools and checks the tests of src/matrix/ share
 * (matrixutil.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>

#include <cmocka.h>

#include "matrixutil.h"
#include "util/ikey.h"
#include "util/status.h"
#include "util/vec_iter.h"

uint32_t key_boundary(const row_data *d, size_t c)
{
    while (c > 0 && c < d->n && ukey_cmp(ikey_user(ekey(&d->e[c - 1])), ikey_user(ekey(&d->e[c]))) == 0) c++;
    return (uint32_t)c;
}

size_t ukey_of(uint64_t u, char *out)
{
    if (u == 0) return 0;
    if (u % 7 == 0) return (size_t)sprintf(out, "s%06llu", (unsigned long long)(u % 1000000));
    int n = sprintf(out, "key%010llu", (unsigned long long)u);
    unsigned sl = (unsigned)(tu_mix64(u) % 13);
    for (unsigned i = 0; i < sl; i++) out[n + (int)i] = (char)('a' + tu_mix64(u * 31u + i) % 26);
    return (size_t)n + sl;
}

size_t absent_key_of(uint64_t u, char *out)
{
    size_t n = ukey_of(u, out);
    out[n] = '0';
    return n + 1;
}

int ent_cmp(const void *a, const void *b) { return ikey_cmp(ekey(a), ekey(b)); }

row_data gen_row(tu_rng *r, size_t n, uint64_t universe, uint64_t *seq, size_t maxv, size_t big)
{
    row_data d = {calloc(n ? n : 1, sizeof(ent)), 0};
    assert_non_null(d.e);
    char u[40];
    while (d.n < n) {
        uint64_t ux = tu_rng_range(r, 1, universe - 1);
        if (tu_rng_below(r, 1000) == 0) ux = 0; /* the empty key */
        size_t un = ukey_of(ux, u);
        size_t versions = tu_rng_below(r, 4) == 0 ? 1 + tu_rng_below(r, 3) : 1;
        for (size_t i = 0; i < versions && d.n < n; i++) {
            ent *e = &d.e[d.n++];
            ikey_type t = tu_rng_below(r, 100) < 15 ? IKEY_DELETION : IKEY_VALUE;
            e->kn = un + IKEY_TRAILER;
            e->k = malloc(e->kn);
            assert_non_null(e->k);
            ikey_encode(e->k, u, un, ++*seq, t);
            e->vn = t == IKEY_VALUE ? tu_rng_below(r, maxv + 1) : 0;
            if (t == IKEY_VALUE && big && tu_rng_below(r, 50) == 0) e->vn = big + tu_rng_below(r, big);
            e->v = malloc(e->vn + 1);
            assert_non_null(e->v);
            tu_rng_fill(r, e->v, e->vn);
        }
    }
    qsort(d.e, d.n, sizeof *d.e, ent_cmp);
    return d;
}

void free_row(row_data *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->e[i].k);
        free(d->e[i].v);
    }
    free(d->e);
    d->e = NULL;
    d->n = 0;
}

tkv_it *iter_of(const row_data *d)
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
    return it;
}

size_t lower_bound(const ent *e, size_t lo, size_t hi, tkv_slice t)
{
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ikey_cmp(ekey(&e[mid]), t) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

fixture fx_new(const char *tag)
{
    fixture f;
    f.dir = tu_tmpdir(tag);
    f.path = tu_path(f.dir, "matrix.pmem");
    return f;
}

int fx_tmpfs(const fixture *f)
{
    struct statfs sf;
    assert_int_equal(statfs(f->dir, &sf), 0);
    return sf.f_type == 0x01021994;
}

void fx_free(fixture *f)
{
    free(f->path);
    tu_tmpdir_free(f->dir);
}

pool *open_pool(const char *path, uint64_t size, pm_mode mode, const pool_options *o)
{
    pool *p = NULL;
    int rc = pool_open(path, size, mode, PM_PROFILE_NONE, o, &p, NULL);
    if (rc) fail_msg("pool_open %s: %d %s", path, rc, tkv_errmsg());
    return p;
}

rowtable *build_row(pool *p, uint64_t id, const row_data *d, const rowtable *older, int commit)
{
    tkv_it *it = iter_of(d);
    rowtable *r = NULL;
    int rc = rowtable_build(p, id, it, older, &r);
    if (rc) fail_msg("rowtable_build row %llu: %d %s", (unsigned long long)id, rc, tkv_errmsg());
    it_destroy(it);
    if (commit) {
        rc = rowtable_commit(r);
        if (rc) fail_msg("rowtable_commit: %d %s", rc, tkv_errmsg());
    }
    return r;
}

/* pages_owned -- pages held by committed rows (listed and not released). */
static uint64_t pages_owned(pool *p)
{
    pool_row_id *rows;
    size_t n;
    assert_int_equal(pool_rows(p, &rows, &n), 0);
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) s += rows[i].npages - rows[i].pages_released;
    free(rows);
    return s;
}

void check_accounting(pool *p, const char *what)
{
    pool_stats st;
    pool_get_stats(p, &st);
    uint64_t owned = pages_owned(p);
    if (st.pages_free + owned != st.pages_total)
        fail_msg("%s: %u free + %llu owned by rows != %u pages", what, st.pages_free, (unsigned long long)owned,
                 st.pages_total);
}

size_t open_all(pool *p, rowtable **out, size_t cap)
{
    pool_row_id *rows;
    size_t n;
    assert_int_equal(pool_rows(p, &rows, &n), 0);
    assert_true(n <= cap);
    for (size_t i = 0; i < n; i++) {
        int rc = rowtable_open(p, rows[i].slot, &out[i]);
        if (rc) fail_msg("rowtable_open slot %u: %d %s", rows[i].slot, rc, tkv_errmsg());
    }
    free(rows);
    for (size_t i = 0; i < n; i++) /* newest (largest id) first */
        for (size_t j = i + 1; j < n; j++)
            if (rowtable_id(out[j]) > rowtable_id(out[i])) {
                rowtable *t = out[i];
                out[i] = out[j];
                out[j] = t;
            }
    return n;
}

void expect_corruption(int rc, const char *needle, const char *what)
{
    if (rc != TKV_CORRUPTION) fail_msg("%s: rc %d (%s), want TKV_CORRUPTION", what, rc, tkv_errmsg());
    if (!strstr(tkv_errmsg(), needle)) fail_msg("%s: message \"%s\" does not name \"%s\"", what, tkv_errmsg(), needle);
}

static void expect_it(tkv_it *it, const ent *e, const char *what, size_t i)
{
    if (!it_valid(it))
        fail_msg("%s: entry %zu: iterator not valid (status %d %s)", what, i, it_status(it), tkv_errmsg());
    tkv_slice k = it_key(it), v = it_value(it);
    if (k.n != e->kn || memcmp(k.p, e->k, k.n))
        fail_msg("%s: entry %zu: key %s, want %s", what, i, tu_hex(k.p, k.n), tu_hex(e->k, e->kn));
    if (v.n != e->vn || (v.n && memcmp(v.p, e->v, v.n))) fail_msg("%s: entry %zu: value differs", what, i);
}

void check_iter(tu_rng *rng, const rowtable *r, const row_data *d, uint32_t cursor, const char *what)
{
    check_iter_from(rowtable_iter(r), rng, d, cursor, what);
}

void check_iter_from(tkv_it *it, tu_rng *rng, const row_data *d, uint32_t cursor, const char *what)
{
    assert_non_null(it);
    it_seek_first(it);
    for (size_t i = cursor; i < d->n; i++, it_next(it)) expect_it(it, &d->e[i], what, i);
    assert_false(it_valid(it));
    assert_int_equal(it_status(it), 0);
    it_seek_last(it);
    for (size_t i = d->n; i-- > cursor; it_prev(it)) expect_it(it, &d->e[i], what, i);
    assert_false(it_valid(it));
    assert_int_equal(it_status(it), 0);
    char u[40];
    uint8_t t[64];
    for (int s = 0; s < 300; s++) {
        uint64_t ux = tu_rng_below(rng, 6000);
        size_t un = ukey_of(ux, u);
        if (d->n && s % 3 == 0) { /* near an existing key */
            const ent *e = &d->e[tu_rng_below(rng, d->n)];
            un = e->kn - IKEY_TRAILER;
            memcpy(u, e->k, un);
        }
        ikey_encode(t, u, un, tu_rng_below(rng, 1u << 20), (ikey_type)tu_rng_below(rng, 2));
        tkv_slice ts = slice(t, un + IKEY_TRAILER);
        size_t want = lower_bound(d->e, cursor, d->n, ts);
        it_seek(it, ts);
        if (want == d->n) {
            assert_false(it_valid(it));
            continue;
        }
        expect_it(it, &d->e[want], what, want);
        if (s % 2) { /* step back across the seek position */
            it_prev(it);
            if (want > cursor) expect_it(it, &d->e[want - 1], what, want - 1);
            else assert_false(it_valid(it));
        } else {
            it_next(it);
            if (want + 1 < d->n) expect_it(it, &d->e[want + 1], what, want + 1);
            else assert_false(it_valid(it));
        }
    }
    it_seek(it, slice(t, 3)); /* not an internal key */
    assert_false(it_valid(it));
    assert_int_equal(it_status(it), TKV_INVALID);
    it_destroy(it);
}
