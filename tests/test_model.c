// SPDX-License-Identifier: Apache-2.0
/*
 * test_model.c -- randomized operations on tierkv compared with an in-memory
 * ordered model (testutil.h): puts, deletes, range deletions (one key, a
 * prefix, now and then a wide range; alone and in batches), batches, gets,
 * multi_gets, scans in
 * both directions with direction changes, iterators and snapshots that must not
 * see later writes, flush/compact_range, and close/reopen every ~10k operations
 * followed by a full comparison. Small memtables make data move down the tiers.
 *
 * Cases: model_random (100k ops x TKV_TEST_SCALE over ~3000 varied keys),
 * model_hot_keys (many versions and tombstones of 40 keys across tiers),
 * model_direct_io (20k ops with direct_io=1), model_l0_sst (40k ops with L0
 * as SST files) and model_full_pool (40k ops, a 1M matrix pool, no
 * compact_range), model_async (12k ops with async_io=on, direct I/O and a
 * 64 KiB block cache: multi_gets and scans read through io_uring) and
 * model_sync (the same with async_io=off). Every multi_get is compared with
 * the model and with a loop of tkv_get at the same snapshot. tu_small_options gives 64K memtables, the default l0=matrix
 * with a 16M pool whose compactor forms at 10 % and drains in 256K columns,
 * 256K SSTs and a 512K L1 growing x4 per level, so data reaches L3.
 * Replay a failure with the printed TKV_TEST_SEED.
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

#define MAX_SNAPS 4
#define BIG_VALUE (100u * 1024u)
#define VALBUF    (BIG_VALUE + 4096u)

typedef struct tkey {
    uint8_t b[80];
    size_t n;
} tkey;

typedef struct msnap {
    const tkv_snapshot *s;
    tu_model *m;
} msnap;

typedef struct params {
    const char *name;
    size_t nkeys;           /* size of the key space */
    uint64_t ops;           /* operations at scale 1 */
    uint64_t reopen_every;  /* close + reopen + full check */
    uint32_t flush_ppm;     /* tkv_flush probability per op (per million) */
    uint32_t compact_ppm;   /* tkv_compact_range probability per op */
    uint32_t big_ppm;       /* 100 KB value probability per put */
    const char *opts[3][2]; /* options on top of tu_small_options ({NULL} ends) */
    int async;              /* 1: batched multi_gets must have read through io_uring; -1: must not have */
} params;

typedef struct ctx {
    const params *p;
    tu_rng r;
    char *dir;
    tkv_db *db;
    tkv_options *opts;
    tu_model *m;
    tkey *keys;
    msnap snaps[MAX_SNAPS];
    int nsnaps;
    tkv_batch *batch;
    uint8_t *val;   /* scratch value buffer */
    uint64_t op;    /* current operation number */
    char where[96]; /* "op N" for failure messages */
    /* counters, printed at the end */
    uint64_t n_put, n_del, n_rdel, n_batch, n_get, n_mget, n_scan, n_steps, n_snap, n_flush, n_compact, n_reopen;
} ctx;

/* ---------------------------------------------------------------- keys, values */

static void random_key(tu_rng *r, tkey *k)
{
    if (tu_rng_chance(r, 500000)) { /* printable, clustered */
        k->n = (size_t)snprintf((char *)k->b, sizeof k->b, "key%06u", (unsigned)tu_rng_below(r, 1000000));
        if (tu_rng_chance(r, 300000)) { /* plus a random tail */
            size_t extra = (size_t)tu_rng_range(r, 1, 64 - k->n);
            tu_rng_fill(r, k->b + k->n, extra);
            k->n += extra;
        }
    } else { /* binary */
        k->n = tu_rng_chance(r, 500000) ? (size_t)tu_rng_range(r, 1, 16) : (size_t)tu_rng_range(r, 1, 64);
        tu_rng_fill(r, k->b, k->n);
        if (tu_rng_chance(r, 100000)) k->b[0] = 0x00;
        if (tu_rng_chance(r, 100000)) k->b[0] = 0xff;
    }
}

/* make_keys -- a key space with binary bytes, 1..64 byte keys, keys that are
 * prefixes of other keys, and all-0x00 / all-0xff keys. */
static void make_keys(tu_rng *r, tkey *ks, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        tkey *k = &ks[i];
        uint64_t kind = tu_rng_below(r, 100);
        if (i > 0 && kind < 8) { /* a proper prefix of an earlier key */
            *k = ks[tu_rng_below(r, i)];
            if (k->n > 1) k->n = (size_t)tu_rng_range(r, 1, k->n - 1);
        } else if (i > 0 && kind < 16) { /* an extension of an earlier key */
            *k = ks[tu_rng_below(r, i)];
            if (k->n < 64) {
                size_t extra = (size_t)tu_rng_range(r, 1, 64 - k->n < 8 ? 64 - k->n : 8);
                tu_rng_fill(r, k->b + k->n, extra);
                if (tu_rng_chance(r, 300000)) k->b[k->n] = 0; /* "abc" < "abc\0" */
                k->n += extra;
            }
        } else if (kind < 19) {
            k->n = (size_t)tu_rng_range(r, 1, 64);
            memset(k->b, kind == 16 ? 0x00 : kind == 17 ? 0xff : 0x80, k->n);
        } else {
            random_key(r, k);
        }
    }
}

static const tkey *pick_key(ctx *c) { return &c->keys[tu_rng_below(&c->r, c->p->nkeys)]; }

/* lookup_key -- a key from the key space, or (1 in 5) a random one that is
 * probably absent. */
static void lookup_key(ctx *c, tkey *out)
{
    if (tu_rng_chance(&c->r, 800000)) *out = *pick_key(c);
    else random_key(&c->r, out);
}

/* make_value -- fills c->val; returns the length (0..2000, rarely 100 KB). */
static size_t make_value(ctx *c)
{
    size_t n;
    if (tu_rng_chance(&c->r, c->p->big_ppm)) n = BIG_VALUE + (size_t)tu_rng_below(&c->r, 1000);
    else if (tu_rng_chance(&c->r, 50000)) n = 0;
    else n = (size_t)tu_rng_range(&c->r, 1, 2000);
    tu_rng_fill(&c->r, c->val, n);
    if (n >= 8) memcpy(c->val, &c->op, 8); /* makes overwrites distinguishable */
    return n;
}

/* ---------------------------------------------------------------- checks */

/* check_get -- tkv_get(key) at snap agrees with model m. */
static void check_get(ctx *c, const tkv_snapshot *snap, const tu_model *m, const tkey *k)
{
    const void *mv;
    size_t mvn, vn = 777;
    void *v = (void *)&vn;
    int present = tu_model_get(m, k->b, k->n, &mv, &mvn);
    int rc = tkv_get(c->db, snap, k->b, k->n, &v, &vn);
    if (!present) {
        if (rc != TKV_NOT_FOUND)
            fail_msg("%s: get %s%s = %d (%s) value %s, expected not found", c->where, tu_hex(k->b, k->n),
                     snap ? " at snapshot" : "", rc, tkv_strerror(rc), rc == TKV_OK ? tu_hex(v, vn) : "-");
        if (v != NULL || vn != 0) fail_msg("%s: get not found left val=%p vlen=%zu", c->where, v, vn);
        return;
    }
    if (rc != TKV_OK)
        fail_msg("%s: get %s%s = %d (%s; %s), expected value %s", c->where, tu_hex(k->b, k->n),
                 snap ? " at snapshot" : "", rc, tkv_strerror(rc), tkv_errmsg(), tu_hex(mv, mvn));
    if (vn != mvn || (vn && memcmp(v, mv, vn)) || ((char *)v)[vn] != 0)
        fail_msg("%s: get %s%s: value %s, expected %s", c->where, tu_hex(k->b, k->n), snap ? " at snapshot" : "",
                 tu_hex(v, vn), tu_hex(mv, mvn));
    tkv_free(v);
}

static void check_multi_get(ctx *c, const tkv_snapshot *snap, const tu_model *m)
{
    enum { MAXN = 32 };
    tkey ks[MAXN];
    const void *kp[MAXN];
    size_t kl[MAXN], vl[MAXN];
    void *vals[MAXN];
    int st[MAXN];
    size_t n = (size_t)tu_rng_range(&c->r, 1, MAXN);
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && tu_rng_chance(&c->r, 100000)) ks[i] = ks[tu_rng_below(&c->r, i)]; /* duplicate key */
        else lookup_key(c, &ks[i]);
        kp[i] = ks[i].b;
        kl[i] = ks[i].n;
        vals[i] = (void *)&st[0];
        vl[i] = 999;
        st[i] = 12345;
    }
    const tkv_snapshot *own = snap ? NULL : tkv_snapshot_new(c->db); /* so that the gets below see the same state */
    int rc = tkv_multi_get(c->db, snap ? snap : own, n, kp, kl, vals, vl, st);
    if (rc != TKV_OK) fail_msg("%s: multi_get(%zu keys) = %d (%s)", c->where, n, rc, tkv_errmsg());
    for (size_t i = 0; i < n; i++) { /* identical to a loop of tkv_get on the same snapshot */
        void *gv = NULL;
        size_t gn = 0;
        int grc = tkv_get(c->db, snap ? snap : own, ks[i].b, ks[i].n, &gv, &gn);
        if (grc != st[i] || gn != vl[i] || (grc == TKV_OK && gn && memcmp(gv, vals[i], gn)))
            fail_msg("%s: multi_get[%zu] %s: status %d value %s, but tkv_get says %d value %s", c->where, i,
                     tu_hex(ks[i].b, ks[i].n), st[i], st[i] == TKV_OK ? tu_hex(vals[i], vl[i]) : "-", grc,
                     grc == TKV_OK ? tu_hex(gv, gn) : "-");
        tkv_free(gv);
    }
    tkv_snapshot_free(c->db, own);
    for (size_t i = 0; i < n; i++) {
        const void *mv;
        size_t mvn;
        if (tu_model_get(m, ks[i].b, ks[i].n, &mv, &mvn)) {
            if (st[i] != TKV_OK)
                fail_msg("%s: multi_get[%zu] %s status %d, expected value %s", c->where, i, tu_hex(ks[i].b, ks[i].n),
                         st[i], tu_hex(mv, mvn));
            if (vl[i] != mvn || (mvn && memcmp(vals[i], mv, mvn)) || ((char *)vals[i])[mvn] != 0)
                fail_msg("%s: multi_get[%zu] %s value %s, expected %s", c->where, i, tu_hex(ks[i].b, ks[i].n),
                         tu_hex(vals[i], vl[i]), tu_hex(mv, mvn));
            tkv_free(vals[i]);
        } else {
            if (st[i] != TKV_NOT_FOUND || vals[i] != NULL || vl[i] != 0)
                fail_msg("%s: multi_get[%zu] %s status %d val %p vlen %zu, expected not found", c->where, i,
                         tu_hex(ks[i].b, ks[i].n), st[i], vals[i], vl[i]);
        }
    }
    c->n_mget++;
}

/* check_pos -- the iterator agrees with model position pos (valid iff in range). */
static void check_pos(ctx *c, tkv_iter *it, const tu_model *m, long long pos, const char *how)
{
    long long n = (long long)tu_model_count(m);
    int valid = tkv_iter_valid(it);
    if (pos < 0 || pos >= n) {
        if (valid) {
            size_t kn;
            const void *k = tkv_iter_key(it, &kn);
            fail_msg("%s: iterator after %s is at %s, model is past the %s (n=%lld)", c->where, how, tu_hex(k, kn),
                     pos < 0 ? "beginning" : "end", n);
        }
        if (tkv_iter_status(it) != TKV_OK)
            fail_msg("%s: iterator status %d after %s (%s)", c->where, tkv_iter_status(it), how, tkv_errmsg());
        return;
    }
    const void *mk, *mv;
    size_t mkn, mvn;
    tu_model_at(m, (size_t)pos, &mk, &mkn, &mv, &mvn);
    if (!valid)
        fail_msg("%s: iterator invalid after %s (status %d), model at %lld/%lld key %s", c->where, how,
                 tkv_iter_status(it), pos, n, tu_hex(mk, mkn));
    size_t kn = 0, vn = 0;
    const void *k = tkv_iter_key(it, &kn), *v = tkv_iter_value(it, &vn);
    if (tu_keycmp(k, kn, mk, mkn))
        fail_msg("%s: iterator after %s at key %s, model at %lld/%lld key %s", c->where, how, tu_hex(k, kn), pos, n,
                 tu_hex(mk, mkn));
    if (vn != mvn || (vn && memcmp(v, mv, vn)))
        fail_msg("%s: iterator after %s at key %s value %s, model value %s", c->where, how, tu_hex(k, kn),
                 tu_hex(v, vn), tu_hex(mv, mvn));
}

/* ---------------------------------------------------------------- writes */

static void put_one(ctx *c, const tkey *k)
{
    size_t vn = make_value(c);
    unsigned flags = tu_rng_chance(&c->r, 2000) ? TKV_SYNC : 0;
    int rc = tkv_put(c->db, k->b, k->n, c->val, vn, flags);
    if (rc != TKV_OK) fail_msg("%s: put %s (%zu bytes) = %d (%s)", c->where, tu_hex(k->b, k->n), vn, rc, tkv_errmsg());
    tu_model_put(c->m, k->b, k->n, c->val, vn);
    c->n_put++;
}

static void delete_one(ctx *c, const tkey *k)
{
    int rc = tkv_delete(c->db, k->b, k->n, 0);
    if (rc != TKV_OK) fail_msg("%s: delete %s = %d (%s)", c->where, tu_hex(k->b, k->n), rc, tkv_errmsg());
    tu_model_del(c->m, k->b, k->n);
    c->n_del++;
}

/* range_of -- a range deletion's bounds from key k: [k, k+0x00) (k
 * alone), [k, k with its last byte raised) (every key k is a prefix of, and
 * more), [k, k+0xff) (k and the keys it is a prefix of up to 0xff), or now
 * and then [k, another key) (a wide range). Returns 0 for an empty range. */
static int range_of(ctx *c, const tkey *k, tkey *b)
{
    *b = *k;
    uint64_t how = tu_rng_below(&c->r, 100);
    if (how < 30 && b->n < sizeof b->b) {
        b->b[b->n++] = 0;
    } else if (how < 60 && b->b[b->n - 1] < 0xff) {
        b->b[b->n - 1]++;
    } else if (how < 95 && b->n < sizeof b->b) {
        b->b[b->n++] = 0xff;
    } else {
        lookup_key(c, b);
    }
    return tu_keycmp(k->b, k->n, b->b, b->n) < 0;
}

/* delete_range_one -- a range deletion (range_of) from a key of the key space. */
static void delete_range_one(ctx *c)
{
    tkey a = *pick_key(c), b;
    if (!range_of(c, &a, &b)) return;
    int rc = tkv_delete_range(c->db, a.b, a.n, b.b, b.n, 0);
    if (rc != TKV_OK) fail_msg("%s: delete_range %s = %d (%s)", c->where, tu_hex(a.b, a.n), rc, tkv_errmsg());
    tu_model_del_range(c->m, a.b, a.n, b.b, b.n);
    c->n_rdel++;
}

/* random_write -- one put (70 %) or delete of a key-space key. */
static void random_write(ctx *c)
{
    const tkey *k = pick_key(c);
    if (tu_rng_chance(&c->r, 700000)) put_one(c, k);
    else delete_one(c, k);
}

/* op_batch -- 0..20 mixed operations, sometimes on the same key twice. */
static void op_batch(ctx *c)
{
    enum { MAXB = 20 };
    tkey ks[MAXB];
    tkv_batch_clear(c->batch);
    tu_model *pending = tu_model_copy(c->m);
    size_t n = tu_rng_chance(&c->r, 20000) ? 0 : (size_t)tu_rng_range(&c->r, 1, MAXB);
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && tu_rng_chance(&c->r, 200000)) ks[i] = ks[tu_rng_below(&c->r, i)];
        else ks[i] = *pick_key(c);
        int rc;
        tkey e;
        if (tu_rng_chance(&c->r, 30000) && range_of(c, &ks[i], &e)) {
            rc = tkv_batch_delete_range(c->batch, ks[i].b, ks[i].n, e.b, e.n);
            tu_model_del_range(pending, ks[i].b, ks[i].n, e.b, e.n);
        } else if (tu_rng_chance(&c->r, 300000)) {
            rc = tkv_batch_delete(c->batch, ks[i].b, ks[i].n);
            tu_model_del(pending, ks[i].b, ks[i].n);
        } else {
            size_t vn = make_value(c);
            rc = tkv_batch_put(c->batch, ks[i].b, ks[i].n, c->val, vn);
            tu_model_put(pending, ks[i].b, ks[i].n, c->val, vn);
        }
        if (rc != TKV_OK) fail_msg("%s: batch op %zu = %d (%s)", c->where, i, rc, tkv_errmsg());
    }
    int rc = tkv_write(c->db, c->batch, tu_rng_chance(&c->r, 5000) ? TKV_SYNC : 0);
    if (rc != TKV_OK) fail_msg("%s: tkv_write(%zu ops) = %d (%s)", c->where, n, rc, tkv_errmsg());
    tu_model_free(c->m);
    c->m = pending;
    /* every key of the batch now reads as the model says (later op wins) */
    for (size_t i = 0; i < n; i++) check_get(c, NULL, c->m, &ks[i]);
    c->n_batch++;
}

/* ---------------------------------------------------------------- scans */

/* scan -- an iterator over snap (or the latest state, then possibly with
 * writes interleaved that it must not see), positioned at a random seek point
 * and moved a random number of steps with random direction changes. */
static void scan(ctx *c, const tkv_snapshot *snap, const tu_model *view)
{
    tu_model *own = NULL;
    int interleave = !snap && tu_rng_chance(&c->r, 200000);
    if (!snap) view = own = tu_model_copy(c->m);
    tkv_iter *it = NULL;
    int rc = tkv_iter_new(c->db, snap, &it);
    if (rc != TKV_OK) fail_msg("%s: tkv_iter_new = %d (%s)", c->where, rc, tkv_errmsg());
    if (interleave)
        for (int i = 0, w = (int)tu_rng_range(&c->r, 1, 20); i < w; i++) random_write(c);

    long long n = (long long)tu_model_count(view), pos;
    int forward = 1;
    uint64_t how = tu_rng_below(&c->r, 10);
    if (how < 2) {
        tkv_iter_seek_first(it);
        pos = 0;
        check_pos(c, it, view, pos, "seek_first");
    } else if (how < 4) {
        tkv_iter_seek_last(it);
        pos = n - 1;
        forward = 0;
        check_pos(c, it, view, pos, "seek_last");
    } else {
        tkey k;
        if (n > 0 && tu_rng_chance(&c->r, 300000)) { /* exactly an existing key */
            const void *mk;
            tu_model_at(view, (size_t)tu_rng_below(&c->r, (uint64_t)n), &mk, &k.n, NULL, NULL);
            memcpy(k.b, mk, k.n);
        } else {
            lookup_key(c, &k);
        }
        tkv_iter_seek(it, k.b, k.n);
        pos = (long long)tu_model_lower_bound(view, k.b, k.n);
        forward = tu_rng_chance(&c->r, 500000);
        char how_s[200];
        snprintf(how_s, sizeof how_s, "seek(%s)", tu_hex(k.b, k.n));
        check_pos(c, it, view, pos, how_s);
    }
    uint64_t steps = tu_rng_chance(&c->r, 20000) ? (uint64_t)n + 2 : tu_rng_range(&c->r, 1, 200);
    for (uint64_t s = 0; s < steps && pos >= 0 && pos < n; s++) {
        if (tu_rng_chance(&c->r, 100000)) forward = !forward;
        if (interleave && tu_rng_chance(&c->r, 50000)) random_write(c);
        if (forward) {
            tkv_iter_next(it);
            pos++;
        } else {
            tkv_iter_prev(it);
            pos--;
        }
        check_pos(c, it, view, pos, forward ? "next" : "prev");
        c->n_steps++;
    }
    tkv_iter_free(it);
    tu_model_free(own);
    c->n_scan++;
}

/* ---------------------------------------------------------------- snapshots */

static void release_snap(ctx *c, int i)
{
    tkv_snapshot_free(c->db, c->snaps[i].s);
    tu_model_free(c->snaps[i].m);
    c->snaps[i] = c->snaps[--c->nsnaps];
}

static void op_snapshot(ctx *c)
{
    if (c->nsnaps < MAX_SNAPS && (c->nsnaps == 0 || tu_rng_chance(&c->r, 250000))) {
        msnap *s = &c->snaps[c->nsnaps];
        s->s = tkv_snapshot_new(c->db);
        if (!s->s) fail_msg("%s: tkv_snapshot_new returned NULL (%s)", c->where, tkv_errmsg());
        s->m = tu_model_copy(c->m);
        c->nsnaps++;
        c->n_snap++;
        return;
    }
    int i = (int)tu_rng_below(&c->r, (uint64_t)c->nsnaps);
    uint64_t what = tu_rng_below(&c->r, 10);
    if (what < 4) {
        for (int j = 0; j < 10; j++) {
            tkey k;
            lookup_key(c, &k);
            check_get(c, c->snaps[i].s, c->snaps[i].m, &k);
        }
    } else if (what < 6) {
        check_multi_get(c, c->snaps[i].s, c->snaps[i].m);
    } else if (what < 9) {
        scan(c, c->snaps[i].s, c->snaps[i].m);
    } else {
        release_snap(c, i);
    }
}

/* ---------------------------------------------------------------- open/close */

static void db_open(ctx *c)
{
    int rc = tkv_open(c->dir, c->opts, &c->db);
    if (rc != TKV_OK) fail_msg("%s: tkv_open(%s) = %d (%s)", c->where, c->dir, rc, tkv_errmsg());
}

/* reopen -- checks and frees every snapshot, closes, reopens, checks all. */
static void reopen(ctx *c)
{
    char what[160];
    while (c->nsnaps > 0) {
        snprintf(what, sizeof what, "%s, snapshot %d before reopen", c->where, c->nsnaps - 1);
        tu_check_db(c->db, c->snaps[c->nsnaps - 1].s, c->snaps[c->nsnaps - 1].m, what);
        release_snap(c, c->nsnaps - 1);
    }
    snprintf(what, sizeof what, "%s, before close", c->where);
    tu_check_db(c->db, NULL, c->m, what);
    int rc = tkv_close(c->db);
    c->db = NULL;
    if (rc != TKV_OK) fail_msg("%s: tkv_close = %d (%s)", c->where, rc, tkv_errmsg());
    db_open(c);
    snprintf(what, sizeof what, "%s, after reopen", c->where);
    tu_check_db(c->db, NULL, c->m, what);
    c->n_reopen++;
}

/* ---------------------------------------------------------------- driver */

static void run_model(const params *p)
{
    ctx *c = calloc(1, sizeof *c);
    assert_non_null(c);
    c->p = p;
    uint64_t seed = tu_seed() ^ tu_mix64((uint64_t)p->nkeys);
    tu_rng_init(&c->r, seed);
    c->keys = calloc(p->nkeys, sizeof *c->keys);
    c->val = malloc(VALBUF);
    c->batch = tkv_batch_new();
    c->m = tu_model_new();
    assert_non_null(c->keys);
    assert_non_null(c->val);
    assert_non_null(c->batch);
    make_keys(&c->r, c->keys, p->nkeys);
    c->dir = tu_tmpdir("model");
    c->opts = tu_small_options();
    for (int i = 0; i < 3 && p->opts[i][0]; i++)
        assert_int_equal(tkv_options_set(c->opts, p->opts[i][0], p->opts[i][1]), TKV_OK);
    snprintf(c->where, sizeof c->where, "open");
    db_open(c);

    uint64_t total = p->ops * tu_scale();
    double t0 = tu_now_ms();
    for (c->op = 0; c->op < total; c->op++) {
        snprintf(c->where, sizeof c->where, "%s op %llu", p->name, (unsigned long long)c->op);
        if (c->op > 0 && c->op % p->reopen_every == 0) reopen(c);
        if (tu_rng_chance(&c->r, p->flush_ppm)) {
            int rc = tkv_flush(c->db);
            if (rc != TKV_OK) fail_msg("%s: tkv_flush = %d (%s)", c->where, rc, tkv_errmsg());
            c->n_flush++;
        }
        if (tu_rng_chance(&c->r, p->compact_ppm)) {
            tkey a, b;
            lookup_key(c, &a);
            lookup_key(c, &b);
            if (tu_keycmp(a.b, a.n, b.b, b.n) > 0) {
                tkey t = a;
                a = b;
                b = t;
            }
            int mode = (int)tu_rng_below(&c->r, 4);
            int rc = tkv_compact_range(c->db, mode & 1 ? NULL : a.b, mode & 1 ? 0 : a.n, mode & 2 ? NULL : b.b,
                                       mode & 2 ? 0 : b.n);
            if (rc != TKV_OK) fail_msg("%s: tkv_compact_range = %d (%s)", c->where, rc, tkv_errmsg());
            c->n_compact++;
        }
        uint64_t x = tu_rng_below(&c->r, 1000);
        if (x < 350) put_one(c, pick_key(c));
        else if (x < 440) {
            tkey k;
            lookup_key(c, &k);
            delete_one(c, &k);
        } else if (x < 450) delete_range_one(c);
        else if (x < 510) op_batch(c);
        else if (x < 550) check_multi_get(c, NULL, c->m);
        else if (x < 610) scan(c, NULL, NULL);
        else if (x < 650) op_snapshot(c);
        else {
            tkey k;
            lookup_key(c, &k);
            check_get(c, NULL, c->m, &k);
            c->n_get++;
        }
    }
    snprintf(c->where, sizeof c->where, "%s end", p->name);
    char *levels = tkv_property(c->db, "tkv.levels");
    fprintf(stderr, "# %s: tkv.levels before the final reopen:\n%s", p->name, levels ? levels : "(NULL)\n");
    tkv_free(levels);
    if (p->async) { /* since the last reopen: the batched path did (or did not) read through io_uring */
        uint64_t keys = tu_prop_u64(c->db, "tkv.stats", "multiget_async: keys=");
        uint64_t reads = tu_prop_u64(c->db, "tkv.stats", " block_reads=");
        char *st = tkv_property(c->db, "tkv.stats");
        fprintf(stderr, "# %s: %s", p->name, strstr(st, "async_io:"));
        if (p->async > 0 && (keys == 0 || reads == 0))
            fail_msg("%s: no batched multi_get read through io_uring", p->name);
        if (p->async < 0 && (keys != 0 || !strstr(st, "async_io: off")))
            fail_msg("%s: async reads with async_io=off", p->name);
        tkv_free(st);
    }
    char *mx = tkv_property(c->db, "tkv.matrix"); /* since the last reopen */
    fprintf(stderr, "# %s: tkv.matrix since the last reopen:\n%s", p->name, mx ? mx : "(NULL)\n");
    tkv_free(mx);
    reopen(c);
    int rc = tkv_close(c->db);
    assert_int_equal(rc, TKV_OK);
    fprintf(stderr,
            "# %s: %llu ops in %.0f ms, %zu live keys: put %llu del %llu delete_range %llu batch %llu get %llu mget "
            "%llu scan %llu (%llu steps) snap %llu flush %llu compact %llu reopen %llu\n",
            p->name, (unsigned long long)total, tu_now_ms() - t0, tu_model_count(c->m), (unsigned long long)c->n_put,
            (unsigned long long)c->n_del, (unsigned long long)c->n_rdel, (unsigned long long)c->n_batch,
            (unsigned long long)c->n_get, (unsigned long long)c->n_mget, (unsigned long long)c->n_scan,
            (unsigned long long)c->n_steps, (unsigned long long)c->n_snap, (unsigned long long)c->n_flush,
            (unsigned long long)c->n_compact, (unsigned long long)c->n_reopen);
    assert_int_equal(tkv_destroy(c->dir), TKV_OK);
    tu_tmpdir_free(c->dir);
    tkv_options_free(c->opts);
    tkv_batch_free(c->batch);
    tu_model_free(c->m);
    free(c->val);
    free(c->keys);
    free(c);
}

/* model_random -- the main randomized test over ~3000 varied keys. */
static void model_random(void **state)
{
    (void)state;
    static const params p = {
        .name = "model_random",
        .nkeys = 3000,
        .ops = 100000,
        .reopen_every = 10000,
        .flush_ppm = 200,
        .compact_ppm = 100,
        .big_ppm = 1000,
    };
    run_model(&p);
}

/* model_hot_keys -- 40 keys overwritten and deleted over and over, with
 * frequent flushes, so each key has versions and tombstones in every tier. */
static void model_hot_keys(void **state)
{
    (void)state;
    static const params p = {
        .name = "model_hot_keys",
        .nkeys = 40,
        .ops = 30000,
        .reopen_every = 5000,
        .flush_ppm = 2000,
        .compact_ppm = 500,
        .big_ppm = 200,
    };
    run_model(&p);
}

/* model_direct_io -- model_random's mix with direct_io=1: SSTs written and
 * read with O_DIRECT through the I/O layer's aligned buffers. */
static void model_direct_io(void **state)
{
    (void)state;
    static const params p = {
        .name = "model_direct_io",
        .nkeys = 2000,
        .ops = 20000,
        .reopen_every = 5000,
        .flush_ppm = 500,
        .compact_ppm = 200,
        .big_ppm = 1000,
        .opts = {{"direct_io", "1"}},
    };
    run_model(&p);
}

/* model_l0_sst -- model_random's mix with L0 as SST files (l0=sst). */
static void model_l0_sst(void **state)
{
    (void)state;
    static const params p = {
        .name = "model_l0_sst",
        .nkeys = 3000,
        .ops = 40000,
        .reopen_every = 10000,
        .flush_ppm = 200,
        .compact_ppm = 100,
        .big_ppm = 1000,
        .opts = {{"l0", "sst"}},
    };
    run_model(&p);
}

/* model_full_pool -- l0=matrix with a 1 MiB pool and no tkv_compact_range:
 * flushes wait for columns, rows are read with partly drained cursors. */
static void model_full_pool(void **state)
{
    (void)state;
    static const params p = {
        .name = "model_full_pool",
        .nkeys = 3000,
        .ops = 40000,
        .reopen_every = 10000,
        .flush_ppm = 200,
        .compact_ppm = 0,
        .big_ppm = 200,
        .opts = {{"pmem_size", "1M"}},
    };
    run_model(&p);
}

/* model_async -- async_io=on, O_DIRECT and a 64 KiB block cache, so that
 * multi_gets and scans read through io_uring most of the time: every
 * multi_get equals the model and a loop of tkv_get at its snapshot. */
static void model_async(void **state)
{
    (void)state;
    static const params p = {
        .name = "model_async",
        .nkeys = 3000,
        .ops = 12000,
        .reopen_every = 4000,
        .flush_ppm = 300,
        .compact_ppm = 100,
        .big_ppm = 500,
        .opts = {{"async_io", "on"}, {"direct_io", "1"}, {"block_cache_size", "64K"}},
        .async = 1,
    };
    run_model(&p);
}

/* model_sync -- the same with async_io=off: the synchronous path, which the
 * async one must agree with. */
static void model_sync(void **state)
{
    (void)state;
    static const params p = {
        .name = "model_sync",
        .nkeys = 3000,
        .ops = 8000,
        .reopen_every = 4000,
        .flush_ppm = 300,
        .compact_ppm = 100,
        .big_ppm = 500,
        .opts = {{"async_io", "off"}, {"direct_io", "1"}, {"block_cache_size", "64K"}},
        .async = -1,
    };
    run_model(&p);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(model_random), cmocka_unit_test(model_hot_keys),  cmocka_unit_test(model_direct_io),
        cmocka_unit_test(model_l0_sst), cmocka_unit_test(model_full_pool), cmocka_unit_test(model_async),
        cmocka_unit_test(model_sync),
    };
    const char *only = getenv("TKV_TEST_ONLY"); /* run one case: TKV_TEST_ONLY=model_full_pool */
    if (only && *only) cmocka_set_test_filter(only);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
