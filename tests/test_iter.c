// SPDX-License-Identifier: Apache-2.0
/*
 * test_iter.c -- the iterator stack: vec_iter, the merging iterator against a
 * sorted reference, and db_iter against a brute-force multi-version model
 * (snapshots, deletions, direction changes, seeks), plus error propagation.
 *
 * Randomized cases print their seed; rerun one with TKV_TEST_SEED=<seed>.
 * TKV_TEST_SCALE=<n> multiplies the number of random rounds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "db/db_iter.h"
#include "util/iter.h"
#include "testutil.h"
#include "util/status.h"
#include "util/vec_iter.h"

/* ------------------------------------------------------------ helpers */

static uint64_t rng_state;

static uint64_t rnd(void) { return tu_splitmix64(&rng_state); }

static size_t rndn(size_t n) { return n ? (size_t)(rnd() % n) : 0; }

static uint64_t seed_rng(const char *test)
{
    const char *s = getenv("TKV_TEST_SEED");
    uint64_t seed = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL) ^ (uint64_t)clock();
    rng_state = seed;
    print_message("%s: seed %llu\n", test, (unsigned long long)seed);
    return seed;
}

static int scale(void)
{
    const char *s = getenv("TKV_TEST_SCALE");
    int n = s ? atoi(s) : 1;
    return n > 0 ? n : 1;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    assert_non_null(p);
    return p;
}

/* A random byte string over a small alphabet (so that prefixes and equal keys
 * are common), including 0x00 and 0xff. */
static size_t rand_bytes(uint8_t *dst, size_t maxlen, size_t minlen)
{
    static const uint8_t alpha[] = {0x00, 'a', 'b', 0xff};
    size_t n = minlen + rndn(maxlen - minlen + 1);
    for (size_t i = 0; i < n; i++) dst[i] = alpha[rndn(sizeof alpha)];
    return n;
}

static tkv_slice mk_ikey(const void *ukey, size_t klen, uint64_t seq, ikey_type t)
{
    uint8_t *p = xmalloc(klen + IKEY_TRAILER);
    ikey_encode(p, ukey, klen, seq, t);
    return slice(p, klen + IKEY_TRAILER);
}

static int slice_eq(tkv_slice a, const void *p, size_t n) { return a.n == n && (n == 0 || memcmp(a.p, p, n) == 0); }

/* ------------------------------------------------------------ vec_iter */

static void test_vec_iter_basic(void **state)
{
    (void)state;
    tkv_slice k[4] = {mk_ikey("b", 1, 5, IKEY_VALUE), mk_ikey("a", 1, 1, IKEY_VALUE), mk_ikey("b", 1, 9, IKEY_DELETION),
                      mk_ikey("ab", 2, 3, IKEY_VALUE)};
    tkv_slice v[4] = {slice("b5", 2), slice("a1", 2), slice("", 0), slice("ab3", 3)};
    tkv_it *it = vec_iter_new(k, v, 4);
    assert_non_null(it);
    for (int i = 0; i < 4; i++) free((void *)k[i].p); /* copied */
    /* expected order: a@1, ab@3, b@9(del), b@5 */
    static const char *const vals[] = {"a1", "ab3", "", "b5"};
    assert_false(it_valid(it));
    it_seek_first(it);
    for (int i = 0; i < 4; i++, it_next(it)) {
        assert_true(it_valid(it));
        assert_true(slice_eq(it_value(it), vals[i], strlen(vals[i])));
    }
    assert_false(it_valid(it));
    it_seek_last(it);
    for (int i = 3; i >= 0; i--, it_prev(it)) {
        assert_true(it_valid(it));
        assert_true(slice_eq(it_value(it), vals[i], strlen(vals[i])));
    }
    assert_false(it_valid(it));
    tkv_slice t = mk_ikey("b", 1, 7, IKEY_VALUE);
    it_seek(it, t);
    assert_true(it_valid(it));
    assert_true(slice_eq(it_value(it), "b5", 2));
    free((void *)t.p);
    t = mk_ikey("c", 1, 7, IKEY_VALUE);
    it_seek(it, t);
    assert_false(it_valid(it));
    free((void *)t.p);
    assert_int_equal(it_status(it), 0);

    vec_iter_set_error(it, TKV_IO_ERROR);
    assert_false(it_valid(it));
    it_seek_first(it);
    assert_false(it_valid(it));
    assert_int_equal(it_status(it), TKV_IO_ERROR);
    vec_iter_set_error(it, 0);
    vec_iter_fail_after(it, 2, TKV_CORRUPTION);
    it_seek_first(it); /* 1 */
    it_next(it);       /* 2 */
    assert_true(it_valid(it));
    assert_true(slice_eq(it_value(it), "ab3", 3));
    it_next(it); /* strikes */
    assert_false(it_valid(it));
    assert_int_equal(it_status(it), TKV_CORRUPTION);
    it_destroy(it);

    /* empty, and a too-short internal key */
    it = vec_iter_new(NULL, NULL, 0);
    assert_non_null(it);
    it_seek_first(it);
    assert_false(it_valid(it));
    it_seek_last(it);
    assert_false(it_valid(it));
    it_destroy(it);
    tkv_slice shortk = slice("abc", 3);
    assert_null(vec_iter_new(&shortk, v, 1));
}

/* ------------------------------------------------------------ merging iterator */

typedef struct ment {
    tkv_slice k;
    uint8_t v[16]; /* (child, ord): identifies the entry */
    size_t child, ord;
} ment;

static int ment_cmp(const void *a, const void *b)
{
    const ment *x = *(const ment *const *)a, *y = *(const ment *const *)b;
    int c = ikey_cmp(x->k, y->k);
    if (c) return c;
    if (x->child != y->child) return x->child < y->child ? -1 : 1;
    return x->ord < y->ord ? -1 : x->ord > y->ord ? 1 : 0;
}

/* A random merge case: children, the entries, and the reference order. */
typedef struct mcase {
    size_t nchild, nent;
    ment *ents;
    ment **ref; /* sorted by (ikey, child, ord) */
    uint8_t pool[16][8];
    size_t pool_len[16], npool;
} mcase;

static void mcase_gen(mcase *c)
{
    memset(c, 0, sizeof *c);
    c->nchild = 1 + rndn(rndn(3) ? 6 : 20);
    c->npool = 1 + rndn(16);
    for (size_t i = 0; i < c->npool; i++) c->pool_len[i] = rand_bytes(c->pool[i], 5, 0);
    size_t maxper = rndn(4) ? 40 : 4;
    size_t *per = xmalloc(c->nchild * sizeof *per);
    for (size_t i = 0; i < c->nchild; i++) {
        per[i] = rndn(5) == 0 ? 0 : rndn(maxper + 1); /* empty children are common */
        c->nent += per[i];
    }
    c->ents = xmalloc(c->nent * sizeof *c->ents);
    c->ref = xmalloc(c->nent * sizeof *c->ref);
    size_t e = 0;
    for (size_t ch = 0; ch < c->nchild; ch++) {
        for (size_t o = 0; o < per[ch]; o++, e++) {
            ment *m = &c->ents[e];
            size_t pk = rndn(c->npool);
            /* small seq range: equal internal keys across (and sometimes within) children */
            m->k = mk_ikey(c->pool[pk], c->pool_len[pk], rndn(4), (ikey_type)rndn(2));
            m->child = ch;
            m->ord = o;
            enc_u64(m->v, ch);
            enc_u64(m->v + 8, o);
            c->ref[e] = m;
        }
    }
    free(per);
    qsort(c->ref, c->nent, sizeof *c->ref, ment_cmp);
}

/* mcase_kids -- fresh vec_iter children for the case (a malloc'd array). */
static tkv_it **mcase_kids(const mcase *c)
{
    tkv_it **kids = xmalloc(c->nchild * sizeof *kids);
    size_t e = 0;
    for (size_t ch = 0; ch < c->nchild; ch++) {
        size_t start = e;
        while (e < c->nent && c->ents[e].child == ch) e++;
        tkv_slice *ks = xmalloc((e - start) * sizeof *ks), *vs = xmalloc((e - start) * sizeof *vs);
        for (size_t i = start; i < e; i++) {
            ks[i - start] = c->ents[i].k;
            vs[i - start] = slice(c->ents[i].v, sizeof c->ents[i].v);
        }
        kids[ch] = vec_iter_new(ks, vs, e - start);
        assert_non_null(kids[ch]);
        free(ks);
        free(vs);
    }
    return kids;
}

/* mcase_iter -- a fresh merging iterator over the case's children. */
static tkv_it *mcase_iter(const mcase *c)
{
    tkv_it *m = merging_iter_new(mcase_kids(c), c->nchild);
    assert_non_null(m);
    return m;
}

static void mcase_free(mcase *c)
{
    for (size_t i = 0; i < c->nent; i++) free((void *)c->ents[i].k.p);
    free(c->ents);
    free(c->ref);
}

/* check_at -- the merging iterator shows reference entry pos (or is not valid if pos < 0). */
static void check_at(tkv_it *m, const mcase *c, long pos)
{
    if (pos < 0) {
        assert_false(it_valid(m));
        return;
    }
    assert_true(it_valid(m));
    const ment *r = c->ref[pos];
    tkv_slice k = it_key(m), v = it_value(m);
    assert_true(slice_eq(k, r->k.p, r->k.n));
    assert_true(slice_eq(v, r->v, sizeof r->v));
}

static long ref_lower_bound(const mcase *c, tkv_slice target)
{
    size_t i = 0;
    while (i < c->nent && ikey_cmp(c->ref[i]->k, target) < 0) i++;
    return i < c->nent ? (long)i : -1;
}

static void test_merge_random(void **state)
{
    (void)state;
    seed_rng(__func__);
    int rounds = 3000 * scale();
    for (int round = 0; round < rounds; round++) {
        mcase c;
        mcase_gen(&c);
        tkv_it *m = mcase_iter(&c);
        long n = (long)c.nent;

        /* full forward and reverse scans */
        assert_false(it_valid(m));
        it_seek_first(m);
        for (long i = 0; i < n; i++, it_next(m)) check_at(m, &c, i);
        check_at(m, &c, -1);
        it_next(m); /* no-op when not valid */
        check_at(m, &c, -1);
        it_seek_last(m);
        for (long i = n - 1; i >= 0; i--, it_prev(m)) check_at(m, &c, i);
        check_at(m, &c, -1);
        it_prev(m);
        check_at(m, &c, -1);

        /* random mix of seeks and moves, with direction changes */
        long pos = -1;
        for (int step = 0; step < 200; step++) {
            size_t op = rndn(10);
            if (op == 0) {
                it_seek_first(m);
                pos = n ? 0 : -1;
            } else if (op == 1) {
                it_seek_last(m);
                pos = n - 1;
            } else if (op == 2) {
                uint8_t buf[8];
                size_t bl;
                if (rndn(2) && c.npool) {
                    size_t pk = rndn(c.npool);
                    bl = c.pool_len[pk];
                    memcpy(buf, c.pool[pk], bl);
                } else {
                    bl = rand_bytes(buf, 6, 0);
                }
                tkv_slice t = mk_ikey(buf, bl, rndn(5), (ikey_type)rndn(2));
                it_seek(m, t);
                pos = ref_lower_bound(&c, t);
                free((void *)t.p);
            } else if (op < 6) {
                it_next(m);
                if (pos >= 0) pos = pos + 1 < n ? pos + 1 : -1;
            } else {
                it_prev(m);
                if (pos >= 0) pos = pos - 1;
            }
            check_at(m, &c, pos);
        }
        assert_int_equal(it_status(m), 0);
        it_destroy(m);
        mcase_free(&c);
    }
}

static void test_merge_empty_and_dups(void **state)
{
    (void)state;
    /* no children at all */
    tkv_it *m = merging_iter_new(NULL, 0);
    assert_non_null(m);
    it_seek_first(m);
    assert_false(it_valid(m));
    it_seek_last(m);
    assert_false(it_valid(m));
    it_next(m);
    it_prev(m);
    assert_false(it_valid(m));
    assert_int_equal(it_status(m), 0);
    it_destroy(m);

    /* three empty children */
    tkv_it **kids = xmalloc(3 * sizeof *kids);
    for (int i = 0; i < 3; i++) kids[i] = vec_iter_new(NULL, NULL, 0);
    m = merging_iter_new(kids, 3);
    it_seek_first(m);
    assert_false(it_valid(m));
    it_seek_last(m);
    assert_false(it_valid(m));
    it_destroy(m);

    /* the same internal key in three children: child 0, 1, 2 forward and 2, 1, 0
     * backward, also across direction changes in the middle of the run */
    tkv_slice k[3] = {mk_ikey("k", 1, 7, IKEY_VALUE), mk_ikey("j", 1, 1, IKEY_VALUE), mk_ikey("l", 1, 1, IKEY_VALUE)};
    kids = xmalloc(3 * sizeof *kids);
    for (int i = 0; i < 3; i++) {
        char v = (char)('0' + i);
        tkv_slice ks[2] = {k[0], k[1 + (i % 2)]}, vs[2] = {slice(&v, 1), slice("x", 1)};
        kids[i] = vec_iter_new(ks, vs, 2);
    }
    m = merging_iter_new(kids, 3);
    it_seek(m, k[0]);
    assert_true(slice_eq(it_value(m), "0", 1));
    it_next(m);
    assert_true(slice_eq(it_value(m), "1", 1));
    it_prev(m); /* switch to reverse on an equal key */
    assert_true(slice_eq(it_value(m), "0", 1));
    it_next(m); /* and back */
    assert_true(slice_eq(it_value(m), "1", 1));
    it_next(m);
    assert_true(slice_eq(it_value(m), "2", 1));
    it_prev(m);
    assert_true(slice_eq(it_value(m), "1", 1));
    it_prev(m);
    assert_true(slice_eq(it_value(m), "0", 1));
    it_prev(m);
    assert_true(it_valid(m));
    assert_true(slice_eq(ikey_user(it_key(m)), "j", 1));
    it_destroy(m);
    for (int i = 0; i < 3; i++) free((void *)k[i].p);
}

static void test_merge_error(void **state)
{
    (void)state;
    seed_rng(__func__);
    for (int round = 0; round < 2000 * scale(); round++) {
        mcase c;
        do {
            mcase_gen(&c);
            if (c.nchild >= 2 && c.nent > 0) break;
            mcase_free(&c);
        } while (1);
        tkv_it **kids = mcase_kids(&c);
        size_t bad = rndn(c.nchild);
        int code = rndn(2) ? TKV_IO_ERROR : TKV_CORRUPTION;
        vec_iter_fail_after(kids[bad], rndn(c.nent + 2), code);
        tkv_it *m = merging_iter_new(kids, c.nchild);
        int reverse = (int)rndn(2);
        long n = (long)c.nent, i;
        /* the entries seen before the error are exactly a prefix of the reference */
        if (!reverse) {
            it_seek_first(m);
            for (i = 0; i < n && it_valid(m); i++, it_next(m)) check_at(m, &c, i);
        } else {
            it_seek_last(m);
            for (i = n - 1; i >= 0 && it_valid(m); i--, it_prev(m)) check_at(m, &c, i);
        }
        if (it_status(m)) {
            assert_int_equal(it_status(m), code);
            assert_false(it_valid(m));
            it_next(m);
            it_prev(m);
            assert_false(it_valid(m));
            it_seek_first(m); /* the child's error is sticky */
            assert_false(it_valid(m));
            assert_int_equal(it_status(m), code);
        } else {
            /* the error struck after the last move: the whole run was seen */
            assert_int_equal(i, reverse ? -1 : n);
        }
        it_destroy(m);
        mcase_free(&c);
    }

    /* status() is the first failing child by index */
    tkv_it **kids = xmalloc(3 * sizeof *kids);
    tkv_slice k = mk_ikey("a", 1, 1, IKEY_VALUE), v = slice("v", 1);
    for (int i = 0; i < 3; i++) kids[i] = vec_iter_new(&k, &v, 1);
    vec_iter_set_error(kids[2], TKV_IO_ERROR);
    tkv_it *m = merging_iter_new(kids, 3);
    it_seek_first(m);
    assert_false(it_valid(m));
    assert_int_equal(it_status(m), TKV_IO_ERROR);
    vec_iter_set_error(kids[1], TKV_CORRUPTION);
    assert_int_equal(it_status(m), TKV_CORRUPTION);
    it_destroy(m);
    free((void *)k.p);
}

/* ------------------------------------------------------------ db_iter */

/* One write in the model: user key `key` (index into the sorted universe), at
 * sequence `seq`, a put of val[0..vn) or a deletion. */
typedef struct wop {
    size_t key;
    uint64_t seq;
    int del;
    uint8_t val[48];
    size_t vn;
} wop;

typedef struct dcase {
    uint8_t keys[40][8]; /* sorted, distinct user keys */
    size_t klen[40], nkeys;
    wop *ops;
    size_t nops;
    const wop **vis; /* visible entries at the current snapshot, by key */
    long nvis;
} dcase;

static int ukey_qcmp(const void *a, const void *b)
{
    const uint8_t *x = a, *y = b; /* rows of 9 bytes: [len][bytes] */
    return ukey_cmp(slice(x + 1, x[0]), slice(y + 1, y[0]));
}

static void dcase_gen(dcase *c)
{
    memset(c, 0, sizeof *c);
    uint8_t rows[40][9];
    size_t n = 1 + rndn(40);
    for (size_t i = 0; i < n; i++) rows[i][0] = (uint8_t)rand_bytes(rows[i] + 1, 6, 1);
    qsort(rows, n, sizeof rows[0], ukey_qcmp);
    for (size_t i = 0; i < n; i++) {
        if (c->nkeys && ukey_qcmp(rows[i], rows[i - 1]) == 0) continue;
        c->klen[c->nkeys] = rows[i][0];
        memcpy(c->keys[c->nkeys], rows[i] + 1, rows[i][0]);
        c->nkeys++;
    }
    c->nops = rndn(rndn(4) ? 300 : 10);
    c->ops = xmalloc(c->nops * sizeof *c->ops);
    for (size_t i = 0; i < c->nops; i++) {
        wop *o = &c->ops[i];
        o->key = rndn(c->nkeys);
        o->seq = i + 1; /* sequence numbers are unique, as the write path assigns them */
        o->del = rndn(3) == 0;
        o->vn = o->del ? 0 : rndn(5) == 0 ? 0 : 1 + rndn(sizeof o->val - 1);
        for (size_t j = 0; j < o->vn; j++) o->val[j] = (uint8_t)rnd();
    }
    c->vis = xmalloc(c->nkeys * sizeof *c->vis);
}

/* dcase_snapshot -- the model: for each user key, its newest write with
 * seq <= snap, kept if it is a put. */
static void dcase_snapshot(dcase *c, uint64_t snap)
{
    c->nvis = 0;
    for (size_t k = 0; k < c->nkeys; k++) {
        const wop *best = NULL;
        for (size_t i = 0; i < c->nops; i++)
            if (c->ops[i].key == k && c->ops[i].seq <= snap && (!best || c->ops[i].seq > best->seq)) best = &c->ops[i];
        if (best && !best->del) c->vis[c->nvis++] = best;
    }
}

/* dcase_iter -- the writes spread over 1..5 vec_iter children (a few written
 * twice to two children), merged, under a db_iter at `snap`. */
static db_iter *dcase_iter(const dcase *c, uint64_t snap, size_t *nchild_out, tkv_it ***kids_out)
{
    size_t nchild = 1 + rndn(5);
    tkv_slice *ks = xmalloc((2 * c->nops) * sizeof *ks), *vs = xmalloc((2 * c->nops) * sizeof *vs);
    size_t *owner = xmalloc((2 * c->nops) * sizeof *owner);
    size_t n = 0;
    for (size_t i = 0; i < c->nops; i++) {
        const wop *o = &c->ops[i];
        int copies = nchild > 1 && rndn(20) == 0 ? 2 : 1;
        size_t first = rndn(nchild);
        for (int cp = 0; cp < copies; cp++, n++) { /* a second copy goes to another child */
            ks[n] = mk_ikey(c->keys[o->key], c->klen[o->key], o->seq, o->del ? IKEY_DELETION : IKEY_VALUE);
            vs[n] = slice(o->val, o->vn);
            owner[n] = (first + (size_t)cp) % nchild;
        }
    }
    tkv_it **kids = xmalloc(nchild * sizeof *kids);
    tkv_slice *cks = xmalloc((n ? n : 1) * sizeof *cks), *cvs = xmalloc((n ? n : 1) * sizeof *cvs);
    for (size_t ch = 0; ch < nchild; ch++) {
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (owner[i] == ch) {
                cks[m] = ks[i];
                cvs[m++] = vs[i];
            }
        kids[ch] = vec_iter_new(cks, cvs, m);
        assert_non_null(kids[ch]);
    }
    for (size_t i = 0; i < n; i++) free((void *)ks[i].p);
    free(ks);
    free(vs);
    free(cks);
    free(cvs);
    free(owner);
    if (nchild_out) *nchild_out = nchild;
    if (kids_out) { /* the caller wants the children (for error injection) */
        tkv_it **copy = xmalloc(nchild * sizeof *copy);
        memcpy(copy, kids, nchild * sizeof *copy);
        *kids_out = copy;
    }
    tkv_it *m = merging_iter_new(kids, nchild);
    assert_non_null(m);
    db_iter *it = db_iter_new(m, snap);
    assert_non_null(it);
    return it;
}

static void dcase_free(dcase *c)
{
    free(c->ops);
    free(c->vis);
}

/* dcheck -- the db_iter shows model entry pos (or is not valid if pos < 0). */
static void dcheck(const db_iter *it, const dcase *c, long pos)
{
    size_t kl, vl;
    if (pos < 0) {
        assert_false(db_iter_valid(it));
        return;
    }
    assert_true(db_iter_valid(it));
    const wop *o = c->vis[pos];
    const void *k = db_iter_key(it, &kl), *v = db_iter_value(it, &vl);
    assert_non_null(k);
    assert_non_null(v);
    assert_int_equal(kl, c->klen[o->key]);
    assert_memory_equal(k, c->keys[o->key], kl);
    assert_int_equal(vl, o->vn);
    if (vl) assert_memory_equal(v, o->val, vl);
}

static long model_lower_bound(const dcase *c, const uint8_t *t, size_t tn)
{
    for (long i = 0; i < c->nvis; i++) {
        const wop *o = c->vis[i];
        if (ukey_cmp(slice(c->keys[o->key], c->klen[o->key]), slice(t, tn)) >= 0) return i;
    }
    return -1;
}

static uint64_t pick_snapshot(const dcase *c)
{
    switch (rndn(6)) {
    case 0:
        return 0;
    case 1:
        return c->nops;
    case 2: { /* at and beyond the 56-bit limit: clamped, so seeks still see the newest versions */
        static const uint64_t big[] = {IKEY_MAX_SEQ, IKEY_MAX_SEQ + 1, UINT64_MAX};
        return big[rndn(3)];
    }
    default:
        return rndn(c->nops + 2);
    }
}

/* vis_key -- the user key of model entry i. */
static tkv_slice vis_key(const dcase *c, long i) { return slice(c->keys[c->vis[i]->key], c->klen[c->vis[i]->key]); }

/* model_floor -- the last model entry with key <= t, or -1. */
static long model_floor(const dcase *c, const uint8_t *t, size_t tn)
{
    long r = -1;
    for (long i = 0; i < c->nvis; i++)
        if (ukey_cmp(vis_key(c, i), slice(t, tn)) <= 0) r = i;
    return r;
}

/* random_walks -- 12 times: a seek (seek_first, seek_last, seek to a key of
 * the case or a random string, and with `for_prev` seek_for_prev on odd
 * draws), then up to 24 random steps; every position checked against the
 * model's visible entries. */
static void random_walks(db_iter *it, const dcase *c, int for_prev)
{
    long n = c->nvis;
    for (int walk = 0; walk < 12; walk++) {
        long pos;
        size_t op = rndn(8);
        if (op == 0) {
            db_iter_seek_first(it);
            pos = n ? 0 : -1;
        } else if (op == 1) {
            db_iter_seek_last(it);
            pos = n - 1;
        } else {
            uint8_t t[8];
            size_t tn;
            if (rndn(2)) {
                size_t k = rndn(c->nkeys);
                tn = c->klen[k];
                memcpy(t, c->keys[k], tn);
            } else {
                tn = rand_bytes(t, 7, 0);
            }
            if (for_prev && (op & 1)) {
                db_iter_seek_for_prev(it, t, tn);
                pos = model_floor(c, t, tn);
            } else {
                db_iter_seek(it, t, tn);
                pos = model_lower_bound(c, t, tn);
            }
        }
        dcheck(it, c, pos);
        size_t steps = rndn(25);
        for (size_t st = 0; st < steps; st++) {
            if (rndn(2)) {
                db_iter_next(it);
                if (pos >= 0) pos = pos + 1 < n ? pos + 1 : -1;
            } else {
                db_iter_prev(it);
                if (pos >= 0) pos--;
            }
            dcheck(it, c, pos);
        }
    }
}

static void test_db_iter_model(void **state)
{
    (void)state;
    seed_rng(__func__);
    int rounds = 1500 * scale();
    for (int round = 0; round < rounds; round++) {
        dcase c;
        dcase_gen(&c);
        for (int s = 0; s < 4; s++) {
            uint64_t snap = pick_snapshot(&c);
            dcase_snapshot(&c, snap);
            db_iter *it = dcase_iter(&c, snap, NULL, NULL);
            long n = c.nvis;

            assert_false(db_iter_valid(it));
            db_iter_seek_first(it);
            for (long i = 0; i < n; i++, db_iter_next(it)) dcheck(it, &c, i);
            dcheck(it, &c, -1);
            db_iter_seek_last(it);
            for (long i = n - 1; i >= 0; i--, db_iter_prev(it)) dcheck(it, &c, i);
            dcheck(it, &c, -1);
            db_iter_prev(it); /* no-ops when not valid */
            db_iter_next(it);
            dcheck(it, &c, -1);

            random_walks(it, &c, 0); /* seeks followed by random walks */
            assert_int_equal(db_iter_status(it), 0);
            db_iter_free(it);
        }
        dcase_free(&c);
    }
}

/* A random bound: absent (NULL) a third of the time, else a key of the case
 * or a random string (possibly empty). */
static const uint8_t *pick_bound(const dcase *c, uint8_t buf[8], size_t *n)
{
    size_t r = rndn(3);
    if (r == 0) {
        *n = 0;
        return NULL;
    }
    if (r == 1) {
        size_t k = rndn(c->nkeys);
        *n = c->klen[k];
        memcpy(buf, c->keys[k], *n);
    } else {
        *n = rand_bytes(buf, 7, 0);
    }
    return buf;
}

/* bounds_filter -- keeps the model entries inside [lo, hi) (NULL: open). */
static void bounds_filter(dcase *c, const uint8_t *lo, size_t ln, const uint8_t *hi, size_t hn)
{
    long m = 0;
    for (long i = 0; i < c->nvis; i++) {
        tkv_slice k = vis_key(c, i);
        if (lo && ukey_cmp(k, slice(lo, ln)) < 0) continue;
        if (hi && ukey_cmp(k, slice(hi, hn)) >= 0) continue;
        c->vis[m++] = c->vis[i];
    }
    c->nvis = m;
}

/* db_iter with bounds, against the model restricted to them: every seek
 * (seek_first, seek_last, seek, seek_for_prev, targets inside and outside the
 * bounds) and random walks in both directions, at random snapshots. */
static void test_db_iter_bounds_model(void **state)
{
    (void)state;
    seed_rng(__func__);
    int rounds = 1500 * scale();
    for (int round = 0; round < rounds; round++) {
        dcase c;
        dcase_gen(&c);
        for (int s = 0; s < 4; s++) {
            uint64_t snap = pick_snapshot(&c);
            dcase_snapshot(&c, snap);
            uint8_t lb[8], hb[8];
            size_t ln, hn;
            const uint8_t *lo = pick_bound(&c, lb, &ln), *hi = pick_bound(&c, hb, &hn);
            if (lo && hi && ukey_cmp(slice(lo, ln), slice(hi, hn)) > 0) { /* keep lo <= hi */
                const uint8_t *t = lo;
                size_t tn = ln;
                lo = hi, ln = hn, hi = t, hn = tn;
            }
            db_iter *it = dcase_iter(&c, snap, NULL, NULL);
            assert_int_equal(db_iter_set_bounds(it, lo, ln, hi, hn), 0);
            bounds_filter(&c, lo, ln, hi, hn);
            long n = c.nvis;

            db_iter_seek_first(it);
            for (long i = 0; i < n; i++, db_iter_next(it)) dcheck(it, &c, i);
            dcheck(it, &c, -1);
            db_iter_seek_last(it);
            for (long i = n - 1; i >= 0; i--, db_iter_prev(it)) dcheck(it, &c, i);
            dcheck(it, &c, -1);

            random_walks(it, &c, 1);
            assert_int_equal(db_iter_status(it), 0);
            db_iter_free(it);
        }
        dcase_free(&c);
    }
}

/* append_key -- appends the iterator's (short) key to s. */
static void append_key(char *s, const db_iter *it)
{
    size_t kl;
    const char *k = db_iter_key(it, &kl);
    strncat(s, k, kl);
}

/* A scan stops at the first entry past a bound and reads no further: the
 * entries beyond the bounds have an unknown type, which db_iter reports as
 * TKV_CORRUPTION if it parses them (as the unbounded iterator does). */
static void test_db_iter_bounds_stop(void **state)
{
    (void)state;
    const char *keys[] = {"a", "b", "c", "d", "e", "f"};
    tkv_slice ks[6], vs[6];
    for (size_t i = 0; i < 6; i++) {
        int outside = i == 0 || i >= 4; /* a, e, f: outside [b, e) */
        ks[i] = mk_ikey(keys[i], 1, 1, IKEY_VALUE);
        if (outside) ((uint8_t *)ks[i].p)[1] = 0x7f; /* the trailer's type byte */
        vs[i] = slice("v", 1);
    }
    size_t kl;
    for (int bounded = 0; bounded < 2; bounded++) {
        db_iter *it = db_iter_new(vec_iter_new(ks, vs, 6), 10);
        assert_non_null(it);
        if (bounded) assert_int_equal(db_iter_set_bounds(it, "b", 1, "e", 1), 0);
        char got[16] = "";
        for (db_iter_seek_first(it); db_iter_valid(it); db_iter_next(it)) append_key(got, it);
        if (!bounded) { /* the unbounded scan meets "a" first and fails */
            assert_string_equal(got, "");
            assert_int_equal(db_iter_status(it), TKV_CORRUPTION);
            db_iter_free(it);
            continue;
        }
        assert_string_equal(got, "bcd");
        assert_int_equal(db_iter_status(it), 0);
        got[0] = '\0';
        for (db_iter_seek_last(it); db_iter_valid(it); db_iter_prev(it)) append_key(got, it);
        assert_string_equal(got, "dcb");
        assert_int_equal(db_iter_status(it), 0);
        db_iter_seek_for_prev(it, "z", 1); /* above the upper bound: the last key below it */
        assert_true(db_iter_valid(it));
        assert_memory_equal(db_iter_key(it, &kl), "d", 1);
        db_iter_seek(it, "", 0); /* below the lower bound: the first key at it */
        assert_true(db_iter_valid(it));
        assert_memory_equal(db_iter_key(it, &kl), "b", 1);
        db_iter_seek_for_prev(it, "a", 1); /* below the lower bound: nothing */
        assert_false(db_iter_valid(it));
        assert_int_equal(db_iter_status(it), 0);
        db_iter_free(it);
    }
    for (size_t i = 0; i < 6; i++) free((void *)ks[i].p);
}

/* A fixed case with hand-computed answers. */
static void test_db_iter_fixed(void **state)
{
    (void)state;
    /* a: v1@1 v2@3 del@5 v6@6;  b: del@2;  c: v4@4;  d: del@7 (never written before) */
    struct {
        const char *k;
        uint64_t seq;
        int del;
        const char *v;
    } w[] = {{"a", 1, 0, "v1"}, {"a", 3, 0, "v2"}, {"a", 5, 1, ""}, {"a", 6, 0, "v6"},
             {"b", 2, 1, ""},   {"c", 4, 0, "v4"}, {"d", 7, 1, ""}};
    size_t nw = sizeof w / sizeof w[0];
    tkv_slice ks[7], vs[7];
    for (size_t i = 0; i < nw; i++) {
        ks[i] = mk_ikey(w[i].k, 1, w[i].seq, w[i].del ? IKEY_DELETION : IKEY_VALUE);
        vs[i] = slice(w[i].v, strlen(w[i].v));
    }
    struct {
        uint64_t snap;
        const char *expect; /* "key=value;..." in order */
    } cases[] = {{0, ""},      {1, "a=v1;"},      {2, "a=v1;"},       {4, "a=v2;c=v4;"},
                 {5, "c=v4;"}, {6, "a=v6;c=v4;"}, {100, "a=v6;c=v4;"}};
    for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        db_iter *it = db_iter_new(vec_iter_new(ks, vs, nw), cases[ci].snap);
        assert_non_null(it);
        char fwd[64] = "", rev[64] = "";
        size_t kl, vl;
        for (db_iter_seek_first(it); db_iter_valid(it); db_iter_next(it)) {
            const char *k = db_iter_key(it, &kl), *v = db_iter_value(it, &vl);
            snprintf(fwd + strlen(fwd), sizeof fwd - strlen(fwd), "%.*s=%.*s;", (int)kl, k, (int)vl, v);
        }
        for (db_iter_seek_last(it); db_iter_valid(it); db_iter_prev(it)) {
            const char *k = db_iter_key(it, &kl), *v = db_iter_value(it, &vl);
            char one[16];
            snprintf(one, sizeof one, "%.*s=%.*s;", (int)kl, k, (int)vl, v);
            memmove(rev + strlen(one), rev, strlen(rev) + 1); /* prepend: rev ends in forward order */
            memcpy(rev, one, strlen(one));
        }
        assert_string_equal(fwd, cases[ci].expect);
        assert_string_equal(rev, cases[ci].expect);
        /* seek lands on the first visible key >= target */
        db_iter_seek(it, "b", 1);
        if (cases[ci].snap >= 4) {
            assert_true(db_iter_valid(it));
            assert_memory_equal(db_iter_key(it, &kl), "c", 1);
            db_iter_prev(it); /* back over the hidden b */
            if (cases[ci].snap == 5) {
                assert_false(db_iter_valid(it));
            } else {
                assert_true(db_iter_valid(it));
                assert_memory_equal(db_iter_key(it, &kl), "a", 1);
                const char *v = db_iter_value(it, &vl);
                assert_int_equal(vl, 2);
                assert_memory_equal(v, cases[ci].snap == 4 ? "v2" : "v6", 2);
            }
        } else {
            assert_false(db_iter_valid(it));
        }
        assert_int_equal(db_iter_status(it), 0);
        db_iter_free(it);
    }
    for (size_t i = 0; i < nw; i++) free((void *)ks[i].p);
    db_iter_free(NULL);
    assert_null(db_iter_new(NULL, 1));
}

static void test_db_iter_error(void **state)
{
    (void)state;
    seed_rng(__func__);
    for (int round = 0; round < 2000 * scale(); round++) {
        dcase c;
        dcase_gen(&c);
        uint64_t snap = pick_snapshot(&c);
        dcase_snapshot(&c, snap);
        size_t nchild;
        tkv_it **kids;
        db_iter *it = dcase_iter(&c, snap, &nchild, &kids);
        int code = rndn(2) ? TKV_IO_ERROR : TKV_CORRUPTION;
        tkv_it *bad = kids[rndn(nchild)];
        free(kids);
        vec_iter_fail_after(bad, rndn(2 * c.nops + 2), code);
        long n = c.nvis, i;
        int reverse = (int)rndn(2);
        /* until the error, the entries are exactly the model's */
        if (!reverse) {
            db_iter_seek_first(it);
            for (i = 0; i < n && db_iter_valid(it); i++, db_iter_next(it)) dcheck(it, &c, i);
        } else {
            db_iter_seek_last(it);
            for (i = n - 1; i >= 0 && db_iter_valid(it); i--, db_iter_prev(it)) dcheck(it, &c, i);
        }
        assert_false(db_iter_valid(it));
        if (db_iter_status(it)) {
            assert_int_equal(db_iter_status(it), code);
            db_iter_next(it);
            db_iter_prev(it);
            assert_false(db_iter_valid(it));
            db_iter_seek_first(it); /* sticky */
            assert_false(db_iter_valid(it));
            db_iter_seek(it, "a", 1);
            assert_false(db_iter_valid(it));
            assert_int_equal(db_iter_status(it), code);
            vec_iter_set_error(bad, 0); /* even if the source recovers, the db_iter keeps its error */
            db_iter_seek_last(it);
            assert_false(db_iter_valid(it));
            assert_int_equal(db_iter_status(it), code);
        } else {
            assert_int_equal(i, reverse ? -1 : n);
        }
        db_iter_free(it);
        dcase_free(&c);
    }

    /* an entry with an unknown type is corruption, never returned */
    tkv_slice ks[3] = {mk_ikey("a", 1, 1, IKEY_VALUE), mk_ikey("b", 1, 2, IKEY_VALUE), mk_ikey("c", 1, 3, IKEY_VALUE)};
    ((uint8_t *)ks[1].p)[1] = 7; /* the type byte of b's trailer */
    tkv_slice vs[3] = {slice("1", 1), slice("2", 1), slice("3", 1)};
    db_iter *it = db_iter_new(vec_iter_new(ks, vs, 3), 10);
    size_t kl;
    db_iter_seek_first(it);
    assert_true(db_iter_valid(it));
    assert_memory_equal(db_iter_key(it, &kl), "a", 1);
    db_iter_next(it);
    assert_false(db_iter_valid(it));
    assert_int_equal(db_iter_status(it), TKV_CORRUPTION);
    db_iter_free(it);
    it = db_iter_new(vec_iter_new(ks, vs, 3), 10);
    db_iter_seek_last(it); /* c is complete only once the entry before it is read: b */
    assert_false(db_iter_valid(it));
    assert_int_equal(db_iter_status(it), TKV_CORRUPTION);
    db_iter_free(it);
    for (int j = 0; j < 3; j++) free((void *)ks[j].p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vec_iter_basic),       cmocka_unit_test(test_merge_empty_and_dups),
        cmocka_unit_test(test_merge_random),         cmocka_unit_test(test_merge_error),
        cmocka_unit_test(test_db_iter_fixed),        cmocka_unit_test(test_db_iter_model),
        cmocka_unit_test(test_db_iter_bounds_model), cmocka_unit_test(test_db_iter_bounds_stop),
        cmocka_unit_test(test_db_iter_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
