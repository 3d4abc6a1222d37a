// SPDX-License-Identifier: Apache-2.0
/*
 * soak_work.c -- the soak driver's worker: random puts, deletes, batches,
 * gets, multi_gets, scans (forward and reverse), snapshot reads and the
 * odd flush on its own key range, every answer checked against the model
 * and the value encoding (soak.h).
 */
#include "soak.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VAL_HDR   16
#define VAL_MAGIC 0x534bu /* "SK" */
#define MGET_MAX  16
#define SCAN_MAX  64

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s += UINT64_C(0x9E3779B97F4A7C15);
    x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

static uint64_t rng_below(uint64_t *s, uint64_t n) { return n ? rng_next(s) % n : 0; }

static int fail(soak_worker *w, const char *fmt, ...)
{
    if (!w->fail[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->fail, sizeof w->fail, fmt, ap);
        va_end(ap);
    }
    return -1;
}

size_t soak_key(int w, uint32_t i, char *buf) { return (size_t)snprintf(buf, SOAK_KEY_MAX, "s%02d-%09u", w, i); }

/* val_len -- the length of (w, i, ver)'s value: mostly 16..1K, sometimes
 * up to 16K, now and then empty of body. */
static size_t val_len(int w, uint32_t i, uint32_t ver)
{
    uint64_t s = ((uint64_t)w << 56) ^ ((uint64_t)i << 24) ^ ver;
    uint64_t r = rng_next(&s);
    if (r % 100 == 0) return VAL_HDR + 4096 + r / 100 % 12288;
    return VAL_HDR + r / 100 % 1008;
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static uint32_t get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* val_make -- (w, i, ver)'s value into buf (at least val_len bytes). */
static size_t val_make(int w, uint32_t i, uint32_t ver, uint8_t *buf)
{
    size_t n = val_len(w, i, ver);
    put32(buf, VAL_MAGIC | (uint32_t)w << 16);
    put32(buf + 4, i);
    put32(buf + 8, ver);
    put32(buf + 12, (uint32_t)n);
    uint64_t s = ((uint64_t)i << 32 | ver) ^ (uint64_t)w << 20;
    for (size_t k = VAL_HDR; k < n; k += 8) {
        uint64_t r = rng_next(&s);
        memcpy(buf + k, &r, n - k < 8 ? n - k : 8);
    }
    return n;
}

/* val_check -- the value read for key i is exactly (w, i, want)'s. */
static int val_check(soak_worker *w, uint32_t i, uint32_t want, const void *v, size_t n, const char *op)
{
    static __thread uint8_t exp[VAL_HDR + 4096 + 12288];
    const uint8_t *p = v;
    if (n < VAL_HDR || get32(p) != (VAL_MAGIC | (uint32_t)w->id << 16) || get32(p + 4) != i)
        return fail(w, "%s: key %u of worker %d: value of %zu bytes is not this key's", op, i, w->id, n);
    if (get32(p + 8) != want)
        return fail(w, "%s: key %u of worker %d: version %u, the model has %u", op, i, w->id, get32(p + 8), want);
    size_t en = val_make(w->id, i, want, exp);
    if (en != n || memcmp(exp, v, n) != 0)
        return fail(w, "%s: key %u of worker %d version %u: %zu bytes differ from the %zu written", op, i, w->id, want,
                    n, en);
    return 0;
}

int soak_worker_init(soak_worker *w, int id, uint32_t keys, uint64_t seed)
{
    memset(w, 0, sizeof *w);
    w->id = id;
    w->keys = keys;
    w->rng = seed ^ (uint64_t)id * UINT64_C(0x9E3779B97F4A7C15);
    w->ver = calloc(keys, sizeof *w->ver);
    return w->ver ? 0 : -1;
}

void soak_worker_free(soak_worker *w) { free(w->ver); }

uint64_t soak_ops_total(const soak_ops *o)
{
    return o->puts + o->deletes + o->batches + o->gets + o->multigets + o->scans + o->snapshots + o->flushes;
}

static void count(uint64_t *c) { __atomic_fetch_add(c, 1, __ATOMIC_RELAXED); }

/* op_put -- one put (1 % of them synced) or delete. */
static int op_write(soak_worker *w, int del)
{
    static __thread uint8_t buf[VAL_HDR + 4096 + 12288];
    char k[SOAK_KEY_MAX];
    uint32_t i = (uint32_t)rng_below(&w->rng, w->keys);
    size_t kn = soak_key(w->id, i, k);
    unsigned flags = rng_below(&w->rng, 100) == 0 ? TKV_SYNC : 0;
    if (del) {
        int rc = tkv_delete(w->db, k, kn, flags);
        if (rc) return fail(w, "tkv_delete %s: %s: %s", k, tkv_strerror(rc), tkv_errmsg());
        w->ver[i] = 0;
        count(&w->ops.deletes);
        return 0;
    }
    uint32_t ver = ++w->next_ver;
    size_t n = val_make(w->id, i, ver, buf);
    int rc = tkv_put(w->db, k, kn, buf, n, flags);
    if (rc) return fail(w, "tkv_put %s: %s: %s", k, tkv_strerror(rc), tkv_errmsg());
    w->ver[i] = ver;
    count(&w->ops.puts);
    return 0;
}

/* op_batch -- 2..32 puts and deletes (a key may repeat: the later wins),
 * applied atomically; the model follows only on success. */
static int op_batch(soak_worker *w)
{
    static __thread uint8_t buf[VAL_HDR + 4096 + 12288];
    uint32_t idx[32], ver[32];
    size_t n = 2 + rng_below(&w->rng, 31);
    tkv_batch *b = tkv_batch_new();
    if (!b) return fail(w, "tkv_batch_new: out of memory");
    int rc = 0;
    for (size_t j = 0; j < n && rc == 0; j++) {
        char k[SOAK_KEY_MAX];
        idx[j] = (uint32_t)rng_below(&w->rng, w->keys);
        size_t kn = soak_key(w->id, idx[j], k);
        ver[j] = rng_below(&w->rng, 4) == 0 ? 0 : ++w->next_ver;
        rc = ver[j] ? tkv_batch_put(b, k, kn, buf, val_make(w->id, idx[j], ver[j], buf)) : tkv_batch_delete(b, k, kn);
    }
    if (rc == 0) rc = tkv_write(w->db, b, 0);
    tkv_batch_free(b);
    if (rc) return fail(w, "tkv_write of a %zu-op batch: %s: %s", n, tkv_strerror(rc), tkv_errmsg());
    for (size_t j = 0; j < n; j++) w->ver[idx[j]] = ver[j];
    count(&w->ops.batches);
    return 0;
}

/* check_get -- tkv_get's answer for key i against the model. */
static int check_get(soak_worker *w, const tkv_snapshot *snap, uint32_t i, uint32_t want, const char *op)
{
    char k[SOAK_KEY_MAX];
    size_t kn = soak_key(w->id, i, k), vn = 0;
    void *v = NULL;
    int rc = tkv_get(w->db, snap, k, kn, &v, &vn);
    int r = 0;
    if (rc == TKV_NOT_FOUND) {
        if (want) r = fail(w, "%s %s: not found, the model has version %u", op, k, want);
    } else if (rc == TKV_OK) {
        r = want ? val_check(w, i, want, v, vn, op) : fail(w, "%s %s: found, the model has it deleted", op, k);
    } else {
        r = fail(w, "%s %s: %s: %s", op, k, tkv_strerror(rc), tkv_errmsg());
    }
    tkv_free(v);
    return r;
}

/* op_multiget -- up to MGET_MAX keys (repeats allowed) at once. */
static int op_multiget(soak_worker *w)
{
    char kb[MGET_MAX][SOAK_KEY_MAX];
    const void *keys[MGET_MAX];
    size_t klens[MGET_MAX], vlens[MGET_MAX];
    void *vals[MGET_MAX];
    int st[MGET_MAX];
    uint32_t idx[MGET_MAX];
    size_t n = 1 + rng_below(&w->rng, MGET_MAX);
    for (size_t j = 0; j < n; j++) {
        idx[j] = (uint32_t)rng_below(&w->rng, w->keys);
        klens[j] = soak_key(w->id, idx[j], kb[j]);
        keys[j] = kb[j];
    }
    int rc = tkv_multi_get(w->db, NULL, n, keys, klens, vals, vlens, st), r = 0;
    if (rc) return fail(w, "tkv_multi_get: %s: %s", tkv_strerror(rc), tkv_errmsg());
    for (size_t j = 0; j < n; j++) {
        uint32_t want = w->ver[idx[j]];
        if (r == 0 && st[j] == TKV_OK)
            r = want ? val_check(w, idx[j], want, vals[j], vlens[j], "tkv_multi_get")
                     : fail(w, "tkv_multi_get %s: found, the model has it deleted", kb[j]);
        else if (r == 0 && st[j] == TKV_NOT_FOUND && want)
            r = fail(w, "tkv_multi_get %s: not found, the model has version %u", kb[j], want);
        else if (r == 0 && st[j] != TKV_OK && st[j] != TKV_NOT_FOUND)
            r = fail(w, "tkv_multi_get %s: %s", kb[j], tkv_strerror(st[j]));
        tkv_free(vals[j]);
    }
    count(&w->ops.multigets);
    return r;
}

/* scan_step -- the model's next present key after `i` in direction dir
 * (+1/-1), or -1 when the range ends. */
static int64_t scan_step(const soak_worker *w, int64_t i, int dir)
{
    for (i += dir; i >= 0 && i < (int64_t)w->keys; i += dir)
        if (w->ver[i]) return i;
    return -1;
}

/* check_entry -- the iterator's entry is model key i with its version, or,
 * for i < 0 (the model's range ended), not one of this worker's keys. */
static int check_entry(soak_worker *w, tkv_iter *it, int64_t i, const char *op)
{
    char prefix[8], k[SOAK_KEY_MAX];
    size_t pn = (size_t)snprintf(prefix, sizeof prefix, "s%02d-", w->id), ikn = 0, ivn = 0;
    int valid = tkv_iter_valid(it);
    const char *ik = valid ? tkv_iter_key(it, &ikn) : "";
    int mine = valid && ikn > pn && !memcmp(ik, prefix, pn);
    if (!valid && tkv_iter_status(it))
        return fail(w, "%s: iterator error %s: %s", op, tkv_strerror(tkv_iter_status(it)), tkv_errmsg());
    if (i < 0) return mine ? fail(w, "%s: iterator at %.*s past the model's last key", op, (int)ikn, ik) : 0;
    size_t kn = soak_key(w->id, (uint32_t)i, k);
    if (!mine || ikn != kn || memcmp(ik, k, kn) != 0)
        return fail(w, "%s: expected %s (version %u), iterator %s %.*s", op, k, w->ver[i], valid ? "at" : "ended",
                    (int)ikn, ik);
    const void *v = tkv_iter_value(it, &ivn);
    return val_check(w, (uint32_t)i, w->ver[i], v, ivn, op);
}

/* op_scan -- a seek to a random key of the range and up to SCAN_MAX steps,
 * forward, or (a quarter of them) backward from the last key <= it. */
static int op_scan(soak_worker *w)
{
    tkv_iter *it;
    int rc = tkv_iter_new(w->db, NULL, &it);
    if (rc) return fail(w, "tkv_iter_new: %s", tkv_strerror(rc));
    int dir = rng_below(&w->rng, 4) == 0 ? -1 : 1, r = 0;
    uint32_t start = (uint32_t)rng_below(&w->rng, w->keys);
    char k[SOAK_KEY_MAX];
    size_t kn = soak_key(w->id, start, k);
    tkv_iter_seek(it, k, kn);
    int64_t i = w->ver[start] ? (int64_t)start : scan_step(w, start, dir);
    if (dir < 0 && !w->ver[start]) { /* at the first key > start: one back */
        if (tkv_iter_valid(it)) tkv_iter_prev(it);
        else if (tkv_iter_status(it) == TKV_OK) tkv_iter_seek_last(it);
    }
    size_t steps = 1 + rng_below(&w->rng, SCAN_MAX);
    for (size_t s = 0; s < steps && r == 0; s++) {
        r = check_entry(w, it, i, dir > 0 ? "scan" : "reverse scan");
        if (i < 0 || !tkv_iter_valid(it)) break;
        if (dir > 0) tkv_iter_next(it);
        else tkv_iter_prev(it);
        i = scan_step(w, i, dir);
    }
    tkv_iter_free(it);
    count(&w->ops.scans);
    return r;
}

/* op_snapshot -- a snapshot keeps key i's version while it is overwritten. */
static int op_snapshot(soak_worker *w)
{
    uint32_t i = (uint32_t)rng_below(&w->rng, w->keys), before = w->ver[i];
    const tkv_snapshot *snap = tkv_snapshot_new(w->db);
    if (!snap) return fail(w, "tkv_snapshot_new failed");
    static __thread uint8_t buf[VAL_HDR + 4096 + 12288];
    char k[SOAK_KEY_MAX];
    size_t kn = soak_key(w->id, i, k);
    uint32_t ver = ++w->next_ver;
    int rc = tkv_put(w->db, k, kn, buf, val_make(w->id, i, ver, buf), 0), r;
    if (rc) r = fail(w, "tkv_put %s: %s", k, tkv_strerror(rc));
    else {
        w->ver[i] = ver;
        r = check_get(w, snap, i, before, "tkv_get at a snapshot");
        if (r == 0) r = check_get(w, NULL, i, ver, "tkv_get after a snapshot");
    }
    tkv_snapshot_free(w->db, snap);
    count(&w->ops.snapshots);
    return r;
}

/* one_op -- one random operation: 35 % puts, 8 % deletes, 8 % batches,
 * 35 % gets, 6 % multi_gets, 5 % scans, 3 % snapshot reads, and one flush
 * in 20,000. */
static int one_op(soak_worker *w)
{
    uint64_t r = rng_below(&w->rng, 20000);
    if (r == 0) {
        int rc = tkv_flush(w->db);
        count(&w->ops.flushes);
        return rc ? fail(w, "tkv_flush: %s: %s", tkv_strerror(rc), tkv_errmsg()) : 0;
    }
    r %= 100;
    if (r < 35) return op_write(w, 0);
    if (r < 43) return op_write(w, 1);
    if (r < 51) return op_batch(w);
    if (r < 86) {
        uint32_t i = (uint32_t)rng_below(&w->rng, w->keys);
        count(&w->ops.gets);
        return check_get(w, NULL, i, w->ver[i], "tkv_get");
    }
    if (r < 92) return op_multiget(w);
    if (r < 97) return op_scan(w);
    return op_snapshot(w);
}

void *soak_worker_run(void *arg)
{
    soak_worker *w = arg;
    while (!__atomic_load_n(w->stop, __ATOMIC_RELAXED))
        if (one_op(w) < 0) break;
    return NULL;
}

int soak_verify_all(soak_worker *w)
{
    tkv_iter *it;
    int rc = tkv_iter_new(w->db, NULL, &it);
    if (rc) return fail(w, "tkv_iter_new: %s", tkv_strerror(rc));
    char k[SOAK_KEY_MAX];
    size_t kn = soak_key(w->id, 0, k);
    tkv_iter_seek(it, k, kn);
    int64_t i = w->ver[0] ? 0 : scan_step(w, 0, 1);
    int r = 0;
    for (;;) {
        if ((r = check_entry(w, it, i, "full scan after reopen")) < 0 || i < 0) break;
        tkv_iter_next(it);
        i = scan_step(w, i, 1);
    }
    tkv_iter_free(it);
    for (uint32_t j = 0; r == 0 && j < w->keys; j += 1 + (uint32_t)rng_below(&w->rng, 64))
        r = check_get(w, NULL, j, w->ver[j], "tkv_get after reopen");
    return r;
}
