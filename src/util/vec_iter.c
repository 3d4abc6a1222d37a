// SPDX-License-Identifier: Apache-2.0
/*
 * vec_iter.c -- an internal iterator over a sorted in-memory array of
 * (internal key, value) pairs; used by tests and by modules that need to feed a
 * small set of entries into the iterator stack.
 */
#include "util/vec_iter.h"

#include <stdlib.h>
#include <string.h>

#include "util/status.h"

typedef struct vec_ent {
    tkv_slice k, v;
    size_t ord; /* input position: makes the sort stable */
} vec_ent;

typedef struct vec_iter {
    tkv_it base;
    vec_ent *e; /* sorted by (ikey_cmp, ord); key/value bytes live in `data` */
    size_t n;
    size_t pos;       /* current entry; pos == n means not positioned */
    int status;       /* 0 or the injected error; nonzero implies pos == n */
    int fail_code;    /* armed delayed error (0: none) */
    size_t fail_left; /* positioning calls left before fail_code strikes */
    uint8_t *data;
} vec_iter;

/* ent_cmp -- qsort order: internal key, then input position. */
static int ent_cmp(const void *a, const void *b)
{
    const vec_ent *x = a, *y = b;
    int c = ikey_cmp(x->k, y->k);
    if (c) return c;
    return x->ord < y->ord ? -1 : x->ord > y->ord ? 1 : 0;
}

/* vi_move -- bookkeeping before every positioning call: returns 1 if the
 * iterator must stay unpositioned (an error is set or strikes now). */
static int vi_move(vec_iter *v)
{
    if (v->fail_code) {
        if (v->fail_left == 0) {
            v->status = v->fail_code;
            v->fail_code = 0;
        } else {
            v->fail_left--;
        }
    }
    if (v->status) {
        v->pos = v->n;
        return 1;
    }
    return 0;
}

static int vi_valid(tkv_it *it)
{
    vec_iter *v = (vec_iter *)it;
    return v->pos < v->n;
}

static void vi_seek_first(tkv_it *it)
{
    vec_iter *v = (vec_iter *)it;
    if (vi_move(v)) return;
    v->pos = 0;
}

static void vi_seek_last(tkv_it *it)
{
    vec_iter *v = (vec_iter *)it;
    if (vi_move(v)) return;
    v->pos = v->n ? v->n - 1 : 0;
}

/* vi_seek -- binary search for the first entry >= target. */
static void vi_seek(tkv_it *it, tkv_slice target)
{
    vec_iter *v = (vec_iter *)it;
    if (vi_move(v)) return;
    size_t lo = 0, hi = v->n; /* invariant: e[<lo] < target <= e[>=hi] */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ikey_cmp(v->e[mid].k, target) < 0) lo = mid + 1;
        else hi = mid;
    }
    v->pos = lo;
}

static void vi_next(tkv_it *it)
{
    vec_iter *v = (vec_iter *)it;
    if (vi_move(v) || v->pos >= v->n) return;
    v->pos++;
}

static void vi_prev(tkv_it *it)
{
    vec_iter *v = (vec_iter *)it;
    if (vi_move(v) || v->pos >= v->n) return;
    v->pos = v->pos ? v->pos - 1 : v->n;
}

static tkv_slice vi_key(tkv_it *it)
{
    vec_iter *v = (vec_iter *)it;
    return v->pos < v->n ? v->e[v->pos].k : slice(NULL, 0);
}

static tkv_slice vi_value(tkv_it *it)
{
    vec_iter *v = (vec_iter *)it;
    return v->pos < v->n ? v->e[v->pos].v : slice(NULL, 0);
}

static int vi_status(tkv_it *it) { return ((vec_iter *)it)->status; }

static void vi_destroy(tkv_it *it)
{
    vec_iter *v = (vec_iter *)it;
    free(v->e);
    free(v->data);
    free(v);
}

static const tkv_it_ops vec_iter_ops = {
    .valid = vi_valid,
    .seek_first = vi_seek_first,
    .seek_last = vi_seek_last,
    .seek = vi_seek,
    .next = vi_next,
    .prev = vi_prev,
    .key = vi_key,
    .value = vi_value,
    .status = vi_status,
    .destroy = vi_destroy,
};

/* vec_iter_new -- copies the pairs into one allocation and sorts them (stable). */
tkv_it *vec_iter_new(const tkv_slice *ikeys, const tkv_slice *vals, size_t n)
{
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ikeys[i].n < IKEY_TRAILER) {
            tkv_err(TKV_INVALID, "vec_iter: internal key %zu is %zu bytes, shorter than its trailer", i, ikeys[i].n);
            return NULL;
        }
        total += ikeys[i].n + vals[i].n;
    }
    vec_iter *v = calloc(1, sizeof *v);
    if (!v) goto oom;
    v->base.ops = &vec_iter_ops;
    v->n = n;
    v->pos = n;
    if (n) {
        v->e = malloc(n * sizeof *v->e);
        v->data = malloc(total ? total : 1);
        if (!v->e || !v->data) goto oom;
    }
    uint8_t *p = v->data;
    for (size_t i = 0; i < n; i++) {
        memcpy(p, ikeys[i].p, ikeys[i].n);
        v->e[i].k = slice(p, ikeys[i].n);
        p += ikeys[i].n;
        if (vals[i].n) memcpy(p, vals[i].p, vals[i].n);
        v->e[i].v = slice(p, vals[i].n);
        p += vals[i].n;
        v->e[i].ord = i;
    }
    if (n > 1) qsort(v->e, n, sizeof *v->e, ent_cmp);
    return &v->base;
oom:
    if (v) vi_destroy(&v->base);
    tkv_err(TKV_NO_MEMORY, "vec_iter: out of memory copying %zu entries (%zu bytes)", n, total);
    return NULL;
}

void vec_iter_set_error(tkv_it *it, int code)
{
    vec_iter *v = (vec_iter *)it;
    v->status = code;
    v->fail_code = 0;
    v->pos = v->n;
}

void vec_iter_fail_after(tkv_it *it, size_t moves, int code)
{
    vec_iter *v = (vec_iter *)it;
    v->fail_code = code;
    v->fail_left = moves;
}
