// SPDX-License-Identifier: Apache-2.0
/*
 * test_skiplist.c -- the memtable's skiplist seen through its iterator:
 * ordering against a sorted model, forward/backward iteration, seeks at and
 * beyond both ends, the user key order against memcmp, and one writer racing two lock-free readers ("concurrent",
 * also run under TSan by `make tsan`).
 *
 * Environment: TKV_TEST_FILTER=pattern runs only the matching tests (a pattern
 * without '*' matches as a substring); TKV_TEST_SCALE=n multiplies the sizes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <cmocka.h>

#include "util/ikey.h"
#include "mem/memtable.h"
#include "testutil.h"
#include "util/iter.h"

static int g_scale = 1;

/* ---------------------------------------------------------------- helpers */

/* An entry of the model: its internal key and value, owned. */
typedef struct model_ent {
    uint8_t *ik;
    size_t iklen;
    uint8_t *val;
    size_t vlen;
} model_ent;

/* ref_ukey_cmp -- the user key order, written independently of ukey_cmp
 * (which compares inline by words): memcmp, then the shorter first. */
static int ref_ukey_cmp(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    if (c) return c < 0 ? -1 : 1;
    return an < bn ? -1 : an > bn ? 1 : 0;
}

static int model_cmp(const void *a, const void *b)
{
    const model_ent *x = a, *y = b;
    int c = ref_ukey_cmp(x->ik, x->iklen - IKEY_TRAILER, y->ik, y->iklen - IKEY_TRAILER);
    if (c) return c;
    uint64_t tx = ikey_trailer(slice(x->ik, x->iklen)), ty = ikey_trailer(slice(y->ik, y->iklen));
    return tx > ty ? -1 : tx < ty ? 1 : 0;
}

static int sign(int c) { return (c > 0) - (c < 0); }

/* ukey_cmp against the memcmp order: keys of 0..100 bytes sharing a prefix of
 * any length (so the first difference falls in every word and tail position,
 * and past a long common prefix), bytes of both halves of the
 * range (an unsigned compare), one key a prefix of the other, equal keys. */
static void test_ukey_cmp(void **state)
{
    (void)state;
    uint64_t s = 7;
    uint8_t a[100], b[100];
    for (int i = 0; i < 200000; i++) {
        size_t an = tu_splitmix64(&s) % 101, bn = tu_splitmix64(&s) % 101;
        size_t common = tu_splitmix64(&s) % 101;
        for (size_t j = 0; j < 100; j++) a[j] = b[j] = (uint8_t)tu_splitmix64(&s);
        uint64_t r = tu_splitmix64(&s);
        if (common < 100 && (r & 3)) {
            /* first difference at `common`, 0x00..0xff on either side */
            a[common] = (uint8_t)(r >> 8);
            b[common] = (uint8_t)(r >> 16);
        } else if (r & 4) {
            bn = an; /* equal */
        }
        int want = ref_ukey_cmp(a, an, b, bn);
        int got = sign(ukey_cmp(slice(a, an), slice(b, bn)));
        if (got != want)
            fail_msg("ukey_cmp(len %zu, len %zu, common %zu) = %d, memcmp order %d", an, bn, common, got, want);
        assert_int_equal(sign(ukey_cmp(slice(b, bn), slice(a, an))), -want);
    }
}

static void model_free(model_ent *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(e[i].ik);
        free(e[i].val);
    }
    free(e);
}

static void assert_slice_eq(tkv_slice s, const void *p, size_t n)
{
    assert_int_equal(s.n, n);
    if (n) assert_memory_equal(s.p, p, n);
}

/* add_model -- inserts into m and records the entry in e[*n]. */
static void add_model(memtable *m, model_ent *e, size_t *n, const void *key, size_t klen, uint64_t seq, ikey_type t,
                      const void *val, size_t vlen)
{
    assert_int_equal(memtable_add(m, seq, t, key, klen, val, vlen), 0);
    model_ent *x = &e[(*n)++];
    x->iklen = klen + IKEY_TRAILER;
    x->ik = malloc(x->iklen);
    assert_non_null(x->ik);
    ikey_encode(x->ik, key, klen, seq, t);
    x->vlen = vlen;
    x->val = malloc(vlen ? vlen : 1);
    assert_non_null(x->val);
    if (vlen) memcpy(x->val, val, vlen);
}

/* build_random -- n random entries: user keys from a pool of npool random byte
 * strings (length 0..12, bytes biased to 0x00/0xff so prefixes and extreme
 * bytes occur), unique random sequences, random types. The model is sorted. */
static model_ent *build_random(memtable *m, size_t n, size_t npool, uint64_t seed)
{
    uint8_t(*pool)[12] = malloc(npool * sizeof *pool);
    size_t *plen = malloc(npool * sizeof *plen);
    model_ent *e = calloc(n, sizeof *e);
    assert_true(pool && plen && e);
    for (size_t i = 0; i < npool; i++) {
        plen[i] = tu_splitmix64(&seed) % 13;
        for (size_t j = 0; j < plen[i]; j++) {
            uint64_t r = tu_splitmix64(&seed) % 4;
            pool[i][j] = r == 0 ? 0x00 : r == 1 ? 0xff : (uint8_t)tu_splitmix64(&seed);
        }
    }
    size_t cnt = 0;
    for (size_t i = 0; i < n; i++) {
        size_t p = tu_splitmix64(&seed) % npool;
        /* unique sequence numbers in random order: a bijection of i */
        uint64_t seq = 1 + ((i * 7919) % n);
        ikey_type t = tu_splitmix64(&seed) % 5 == 0 ? IKEY_DELETION : IKEY_VALUE;
        char val[32];
        int vlen = t == IKEY_VALUE ? snprintf(val, sizeof val, "v%zu-%llu", p, (unsigned long long)seq) : 0;
        add_model(m, e, &cnt, pool[p], plen[p], seq, t, val, (size_t)vlen);
    }
    qsort(e, cnt, sizeof *e, model_cmp);
    free(pool);
    free(plen);
    return e;
}

/* ---------------------------------------------------------------- tests */

/* Random inserts come back in ikey order, forwards and backwards. */
static void test_random_order(void **state)
{
    (void)state;
    size_t n = 20000 * (size_t)g_scale;
    memtable *m = memtable_new();
    assert_non_null(m);
    model_ent *e = build_random(m, n, 1500, 42);
    for (size_t i = 1; i < n; i++) /* the model itself: distinct keys */
        assert_true(model_cmp(&e[i - 1], &e[i]) < 0);

    tkv_it *it = memtable_iter(m);
    assert_non_null(it);
    assert_false(it_valid(it)); /* starts unpositioned */
    size_t i = 0;
    for (it_seek_first(it); it_valid(it); it_next(it), i++) {
        assert_true(i < n);
        assert_slice_eq(it_key(it), e[i].ik, e[i].iklen);
        assert_slice_eq(it_value(it), e[i].val, e[i].vlen);
    }
    assert_int_equal(i, n);
    assert_int_equal(it_status(it), 0);

    i = n;
    for (it_seek_last(it); it_valid(it); it_prev(it)) {
        assert_true(i > 0);
        i--;
        assert_slice_eq(it_key(it), e[i].ik, e[i].iklen);
        assert_slice_eq(it_value(it), e[i].val, e[i].vlen);
    }
    assert_int_equal(i, 0);
    it_destroy(it);
    assert_int_equal(memtable_num_entries(m), n);
    memtable_unref(m);
    model_free(e, n);
}

/* Versions of one user key come newest first; shorter keys before longer ones
 * with the same prefix; the empty key before everything. */
static void test_equal_user_keys(void **state)
{
    (void)state;
    memtable *m = memtable_new();
    assert_non_null(m);
    const uint64_t seqs[] = {5, 1, 9, 3, 7};
    for (size_t i = 0; i < 5; i++) assert_int_equal(memtable_add(m, seqs[i], IKEY_VALUE, "k", 1, "x", 1), 0);
    assert_int_equal(memtable_add(m, 4, IKEY_DELETION, "k\0", 2, NULL, 0), 0);
    assert_int_equal(memtable_add(m, 2, IKEY_VALUE, "j", 1, "y", 1), 0);
    assert_int_equal(memtable_add(m, 8, IKEY_VALUE, NULL, 0, "empty", 5), 0);
    assert_int_equal(memtable_add(m, 6, IKEY_DELETION, NULL, 0, NULL, 0), 0);

    struct {
        const char *k;
        size_t klen;
        uint64_t seq;
        ikey_type t;
    } want[] = {{"", 0, 8, IKEY_VALUE},  {"", 0, 6, IKEY_DELETION}, {"j", 1, 2, IKEY_VALUE},
                {"k", 1, 9, IKEY_VALUE}, {"k", 1, 7, IKEY_VALUE},   {"k", 1, 5, IKEY_VALUE},
                {"k", 1, 3, IKEY_VALUE}, {"k", 1, 1, IKEY_VALUE},   {"k\0", 2, 4, IKEY_DELETION}};
    size_t nw = sizeof want / sizeof want[0];
    tkv_it *it = memtable_iter(m);
    assert_non_null(it);
    size_t i = 0;
    for (it_seek_first(it); it_valid(it); it_next(it), i++) {
        assert_true(i < nw);
        tkv_slice k = it_key(it);
        assert_slice_eq(ikey_user(k), want[i].k, want[i].klen);
        assert_int_equal(ikey_seq(k), want[i].seq);
        assert_int_equal(ikey_get_type(k), want[i].t);
        if (want[i].t == IKEY_DELETION) assert_int_equal(it_value(it).n, 0);
    }
    assert_int_equal(i, nw);
    /* and backwards */
    for (it_seek_last(it); it_valid(it); it_prev(it)) {
        i--;
        assert_int_equal(ikey_seq(it_key(it)), want[i].seq);
    }
    assert_int_equal(i, 0);
    it_destroy(it);
    memtable_unref(m);
}

/* seek: exact hits, gaps, before the first and past the last entry, bare user
 * keys; next/prev off both ends. */
static void test_seek(void **state)
{
    (void)state;
    size_t n = 5000;
    memtable *m = memtable_new();
    assert_non_null(m);
    model_ent *e = build_random(m, n, 400, 7);
    tkv_it *it = memtable_iter(m);
    assert_non_null(it);

    /* every entry by its own key, and the step back from it */
    for (size_t i = 0; i < n; i++) {
        it_seek(it, slice(e[i].ik, e[i].iklen));
        assert_true(it_valid(it));
        assert_slice_eq(it_key(it), e[i].ik, e[i].iklen);
        it_prev(it);
        if (i == 0) {
            assert_false(it_valid(it));
        } else {
            assert_true(it_valid(it));
            assert_slice_eq(it_key(it), e[i - 1].ik, e[i - 1].iklen);
        }
    }

    /* a target between two entries: same user key, sequence one below */
    for (size_t i = 0; i + 1 < n; i++) {
        tkv_slice k = slice(e[i].ik, e[i].iklen);
        uint64_t seq = ikey_seq(k);
        if (seq <= 1 || ikey_get_type(k) != IKEY_DELETION) continue;
        uint8_t buf[32];
        tkv_slice u = ikey_user(k);
        ikey_encode(buf, u.p, u.n, seq - 1, IKEY_VALUE); /* > (seq, DELETION) in ikey order */
        it_seek(it, slice(buf, u.n + IKEY_TRAILER));
        assert_true(it_valid(it));
        assert_slice_eq(it_key(it), e[i + 1].ik, e[i + 1].iklen);
    }

    /* before the start: the smallest possible internal key */
    uint8_t lo[IKEY_TRAILER];
    ikey_encode(lo, NULL, 0, IKEY_MAX_SEQ, IKEY_VALUE);
    it_seek(it, slice(lo, sizeof lo));
    assert_true(it_valid(it));
    assert_slice_eq(it_key(it), e[0].ik, e[0].iklen);
    it_prev(it);
    assert_false(it_valid(it));

    /* past the end: a user key above every pool key (they are <= 12 bytes) */
    uint8_t hi[13 + IKEY_TRAILER];
    memset(hi, 0xff, 13);
    enc_u64(hi + 13, ikey_pack(0, IKEY_DELETION));
    it_seek(it, slice(hi, sizeof hi));
    assert_false(it_valid(it));
    it_seek_last(it);
    assert_true(it_valid(it));
    assert_slice_eq(it_key(it), e[n - 1].ik, e[n - 1].iklen);
    it_next(it);
    assert_false(it_valid(it));
    it_seek(it, slice(e[n - 1].ik, e[n - 1].iklen));
    it_next(it);
    assert_false(it_valid(it));

    /* a bare user key (shorter than a trailer) positions before all its versions */
    for (size_t i = 0; i < n; i++) {
        tkv_slice u = ikey_user(slice(e[i].ik, e[i].iklen));
        if (u.n >= IKEY_TRAILER) continue;
        if (i > 0 && ukey_cmp(ikey_user(slice(e[i - 1].ik, e[i - 1].iklen)), u) == 0) continue;
        it_seek(it, u);
        assert_true(it_valid(it));
        assert_slice_eq(it_key(it), e[i].ik, e[i].iklen);
    }

    /* a visibility seek: (K, S, SEEK_TYPE) finds the newest version <= S */
    for (size_t i = 0; i < n; i++) {
        tkv_slice k = slice(e[i].ik, e[i].iklen);
        tkv_slice u = ikey_user(k);
        uint8_t buf[32];
        ikey_encode(buf, u.p, u.n, ikey_seq(k), IKEY_SEEK_TYPE);
        it_seek(it, slice(buf, u.n + IKEY_TRAILER));
        assert_true(it_valid(it));
        assert_slice_eq(it_key(it), e[i].ik, e[i].iklen);
    }

    it_destroy(it);
    memtable_unref(m);
    model_free(e, n);
}

/* An empty memtable: every positioning gives an invalid iterator. */
static void test_empty(void **state)
{
    (void)state;
    memtable *m = memtable_new();
    assert_non_null(m);
    tkv_it *it = memtable_iter(m);
    assert_non_null(it);
    it_seek_first(it);
    assert_false(it_valid(it));
    it_seek_last(it);
    assert_false(it_valid(it));
    it_seek(it, slice("abcdefghij", 10));
    assert_false(it_valid(it));
    it_seek(it, slice(NULL, 0));
    assert_false(it_valid(it));
    assert_int_equal(it_status(it), 0);
    assert_int_equal(memtable_num_entries(m), 0);
    it_destroy(it);
    memtable_unref(m);
}

/* The iterator keeps the memtable alive after the creator's unref. */
static void test_iter_holds_ref(void **state)
{
    (void)state;
    memtable *m = memtable_new();
    assert_non_null(m);
    assert_int_equal(memtable_add(m, 1, IKEY_VALUE, "key", 3, "value", 5), 0);
    tkv_it *it = memtable_iter(m);
    assert_non_null(it);
    memtable_unref(m); /* the iterator's reference is the last one */
    it_seek_first(it);
    assert_true(it_valid(it));
    assert_slice_eq(ikey_user(it_key(it)), "key", 3);
    assert_slice_eq(it_value(it), "value", 5);
    it_destroy(it); /* frees m (ASan would report a leak or a use after free) */
}

/* ---------------------------------------------------------------- concurrent */

#define CONC_READERS 2

typedef struct conc {
    memtable *m;
    uint64_t n;         /* entries the writer inserts */
    uint64_t nuser;     /* distinct user keys: seq s uses key number s % nuser */
    uint64_t published; /* atomic: every seq <= published is inserted */
    int done;           /* atomic: the writer has finished */
    int errors;         /* atomic: failed reader checks */
    uint64_t passes[CONC_READERS];
    uint64_t gets[CONC_READERS];
    char first_error[256];
} conc;

/* conc_key -- the 16-byte user key of key number u (hex of a hash: random order). */
static void conc_key(uint64_t u, char out[16])
{
    static const char hex[] = "0123456789abcdef";
    uint64_t h = tu_mix64(u);
    for (int i = 0; i < 16; i++) out[i] = hex[(h >> (60 - 4 * i)) & 15];
}

static ikey_type conc_type(uint64_t seq) { return seq % 7 == 0 ? IKEY_DELETION : IKEY_VALUE; }

static void conc_fail(conc *c, const char *what, uint64_t a, uint64_t b)
{
    if (__atomic_fetch_add(&c->errors, 1, __ATOMIC_RELAXED) == 0)
        snprintf(c->first_error, sizeof c->first_error, "%s (%llu, %llu)", what, (unsigned long long)a,
                 (unsigned long long)b);
}

static void *conc_writer(void *arg)
{
    conc *c = arg;
    for (uint64_t s = 1; s <= c->n; s++) {
        char key[16];
        uint8_t val[24];
        conc_key(s % c->nuser, key);
        enc_u64(val, s);
        memset(val + 8, (int)(s & 0xff), sizeof val - 8);
        if (memtable_add(c->m, s, conc_type(s), key, sizeof key, val, sizeof val) != 0) {
            conc_fail(c, "memtable_add failed", s, 0);
            break;
        }
        __atomic_store_n(&c->published, s, __ATOMIC_RELEASE);
    }
    __atomic_store_n(&c->done, 1, __ATOMIC_RELEASE);
    return NULL;
}

/* check_value -- the value of entry seq has the writer's pattern. */
static int check_value(tkv_slice v, uint64_t seq)
{
    if (v.n != 24 || dec_u64(v.p) != seq) return 0;
    for (size_t i = 8; i < 24; i++)
        if (v.p[i] != (uint8_t)(seq & 0xff)) return 0;
    return 1;
}

typedef struct reader_arg {
    conc *c;
    int id;
} reader_arg;

static void *conc_reader(void *arg)
{
    reader_arg *ra = arg;
    conc *c = ra->c;
    uint64_t rnd = 1000 + (uint64_t)ra->id;
    tkv_it *it = memtable_iter(c->m);
    if (!it) {
        conc_fail(c, "memtable_iter failed", 0, 0);
        return NULL;
    }
    int last_round = 0;
    while (!last_round && __atomic_load_n(&c->errors, __ATOMIC_RELAXED) == 0) {
        last_round = __atomic_load_n(&c->done, __ATOMIC_ACQUIRE);
        uint64_t p = __atomic_load_n(&c->published, __ATOMIC_ACQUIRE);
        if (p == 0 && !last_round) { /* the writer has not started: leave it the CPU */
            sched_yield();
            continue;
        }

        /* 1. A full forward scan: strictly increasing, and every published
         * entry (and only seqs <= p among those counted) is present. */
        uint64_t seen = 0;
        uint8_t prev[16 + IKEY_TRAILER];
        size_t prevn = 0;
        for (it_seek_first(it); it_valid(it); it_next(it)) {
            tkv_slice k = it_key(it);
            if (k.n != sizeof prev) {
                conc_fail(c, "bad key length", k.n, 0);
                break;
            }
            if (prevn && ikey_cmp(slice(prev, prevn), k) >= 0) {
                conc_fail(c, "forward order broken at seq", ikey_seq(k), 0);
                break;
            }
            memcpy(prev, k.p, k.n);
            prevn = k.n;
            uint64_t s = ikey_seq(k);
            if (s > c->n || ikey_get_type(k) != conc_type(s)) {
                conc_fail(c, "bad trailer", s, ikey_get_type(k));
                break;
            }
            if (ikey_get_type(k) == IKEY_VALUE && !check_value(it_value(it), s)) {
                conc_fail(c, "bad value for seq", s, 0);
                break;
            }
            if (s <= p) seen++;
        }
        if (seen != p) conc_fail(c, "scan missed published entries", seen, p);

        /* 2. A backward walk from the end: strictly decreasing. */
        prevn = 0;
        it_seek_last(it);
        for (int i = 0; i < 200 && it_valid(it); i++, it_prev(it)) {
            tkv_slice k = it_key(it);
            if (prevn && ikey_cmp(k, slice(prev, prevn)) >= 0) {
                conc_fail(c, "backward order broken at seq", ikey_seq(k), 0);
                break;
            }
            memcpy(prev, k.p, k.n);
            prevn = k.n;
        }

        /* 3. Random seeks to (published key, p): each lands on a version of
         * that key <= p, and a short walk from there is strictly increasing. */
        for (int i = 0; i < 500 && p > 0; i++) {
            uint64_t s = 1 + tu_splitmix64(&rnd) % p;
            uint8_t target[16 + IKEY_TRAILER];
            conc_key(s % c->nuser, (char *)target);
            enc_u64(target + 16, ikey_pack(p, IKEY_SEEK_TYPE));
            it_seek(it, slice(target, sizeof target));
            if (!it_valid(it) || ukey_cmp(ikey_user(it_key(it)), slice(target, 16)) != 0 || ikey_seq(it_key(it)) > p) {
                conc_fail(c, "seek missed published seq", s, p);
                break;
            }
            prevn = 0;
            for (int j = 0; j < 20 && it_valid(it); j++, it_next(it)) {
                tkv_slice k = it_key(it);
                if (prevn && ikey_cmp(slice(prev, prevn), k) >= 0) {
                    conc_fail(c, "order broken after seek at seq", ikey_seq(k), 0);
                    break;
                }
                memcpy(prev, k.p, k.n);
                prevn = k.n;
            }
        }

        /* 4. Gets of published keys at sequence p find exactly the newest
         * version <= p: seq s2 = the largest s + j*nuser <= p. */
        for (int i = 0; i < 2000 && p > 0; i++) {
            uint64_t s = 1 + tu_splitmix64(&rnd) % p;
            uint64_t s2 = s + (p - s) / c->nuser * c->nuser;
            char key[16];
            conc_key(s % c->nuser, key);
            ikey_type t;
            tkv_slice v;
            if (!memtable_get(c->m, key, sizeof key, p, &t, &v)) {
                conc_fail(c, "get missed published seq", s, p);
                break;
            }
            if (t != conc_type(s2) || (t == IKEY_VALUE && !check_value(v, s2))) {
                conc_fail(c, "get returned the wrong version", s2, p);
                break;
            }
            c->gets[ra->id]++;
        }
        c->passes[ra->id]++;
    }
    it_destroy(it);
    return NULL;
}

/* One writer inserts with increasing seqs (random key order, 4 versions per
 * user key) while two readers scan, walk backwards and get, lock-free. */
static void test_concurrent(void **state)
{
    (void)state;
    conc *c = calloc(1, sizeof *c);
    assert_non_null(c);
    c->n = 200000 * (uint64_t)g_scale;
    c->nuser = c->n / 4;
    c->m = memtable_new();
    assert_non_null(c->m);

    pthread_t w, r[CONC_READERS];
    reader_arg ra[CONC_READERS];
    for (int i = 0; i < CONC_READERS; i++) {
        ra[i] = (reader_arg){c, i};
        assert_int_equal(pthread_create(&r[i], NULL, conc_reader, &ra[i]), 0);
    }
    assert_int_equal(pthread_create(&w, NULL, conc_writer, c), 0);
    assert_int_equal(pthread_join(w, NULL), 0);
    for (int i = 0; i < CONC_READERS; i++) assert_int_equal(pthread_join(r[i], NULL), 0);

    if (c->errors) fail_msg("%d reader/writer check(s) failed; first: %s", c->errors, c->first_error);
    assert_int_equal(memtable_num_entries(c->m), c->n);
    for (int i = 0; i < CONC_READERS; i++) {
        print_message("reader %d: %llu passes, %llu gets\n", i, (unsigned long long)c->passes[i],
                      (unsigned long long)c->gets[i]);
        assert_true(c->passes[i] >= 1);
        assert_true(c->gets[i] >= 1);
    }
    memtable_unref(c->m);
    free(c);
}

int main(void)
{
    const char *scale = getenv("TKV_TEST_SCALE");
    if (scale && atoi(scale) > 0) g_scale = atoi(scale);
    const char *filter = getenv("TKV_TEST_FILTER");
    char pattern[256];
    if (filter && *filter) {
        if (strchr(filter, '*')) snprintf(pattern, sizeof pattern, "%s", filter);
        else snprintf(pattern, sizeof pattern, "*%s*", filter);
        cmocka_set_test_filter(pattern);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ukey_cmp),   cmocka_unit_test(test_random_order), cmocka_unit_test(test_equal_user_keys),
        cmocka_unit_test(test_seek),       cmocka_unit_test(test_empty),        cmocka_unit_test(test_iter_holds_ref),
        cmocka_unit_test(test_concurrent),
    };
    return cmocka_run_group_tests_name("skiplist", tests, NULL, NULL);
}
