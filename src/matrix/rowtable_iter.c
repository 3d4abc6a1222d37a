// SPDX-License-Identifier: Apache-2.0
/*
 * rowtable_iter.c -- iterators over a row's live entries in ikey order (the
 * merging iterator's rowtable_iter, a view's rowtable_iter_at, one row of
 * rowtable_iters_at whose seeks go through the shared plan of
 * rowtable_seek.c) and over a bounded range of them (rowtable_iter_range: one
 * row's share of a column compaction). Keys and values point into the pool,
 * or into the iterator's scratch for an entry that crosses a page end.
 */
#include "matrix/rowtable_int.h"

#include <stdlib.h>

#include "util/status.h"

/* One iterator: the window [max(from, row cursor), to) of one row. */
typedef struct row_iter {
    tkv_it base;
    const rowtable *r;
    uint32_t from;    /* the view's cursor (rowtable_iter_at), 0 for rowtable_iter */
    uint32_t to;      /* entries [to, n) are outside the iterator (rowtable_iter_range) */
    uint32_t pos, lo; /* lo: the first live entry, computed at the last seek */
    row_seek *plan;   /* rowtable_iters_at: the shared seek plan, this is its row `idx`; else NULL */
    size_t idx;
    int valid, status;
    tkv_slice k, v;
    tkv_buf kbuf, vbuf; /* entries that cross a page end are gathered here */
} row_iter;

/* ri_load -- positions on entry pos (or invalid if outside [lo, to)). */
static void ri_load(row_iter *it)
{
    const rowtable *r = it->r;
    it->valid = 0;
    if (it->status || it->pos < it->lo || it->pos >= it->to) return;
    meta m;
    ent_loc e;
    meta_load(r, it->pos, &m);
    pm_read_delay(r->reg, 2);
    int rc = rt_entry_decode(r, it->pos, &m, &e);
    if (rc < 0) {
        it->status = rc;
        return;
    }
    const uint8_t *kp = data_ptr(r, e.key_off, e.key_len);
    if (!kp) {
        it->kbuf.len = 0;
        if ((rc = buf_reserve(&it->kbuf, e.key_len)) < 0) goto fail;
        rt_data_copy(r, e.key_off, it->kbuf.data, e.key_len);
        kp = it->kbuf.data;
    }
    if ((rc = rt_value(r, it->pos, &e, &it->vbuf, &it->v)) < 0) goto fail;
    it->k = slice(kp, e.key_len);
    it->valid = 1;
    return;
fail:
    it->status = rc;
}

/* ri_valid / ri_key / ri_value / ri_status -- the tkv_it getters. */
static int ri_valid(tkv_it *i) { return ((row_iter *)i)->valid; }

/* ri_seek_first -- the first live entry (the cursor is read here). */
static void ri_seek_first(tkv_it *i)
{
    row_iter *it = (row_iter *)i;
    it->lo = it->pos = live_from(it->r, it->from);
    ri_load(it);
}

/* ri_seek_last -- the last entry of the window. */
static void ri_seek_last(tkv_it *i)
{
    row_iter *it = (row_iter *)i;
    it->lo = live_from(it->r, it->from);
    it->pos = it->to ? it->to - 1 : 0;
    ri_load(it);
}

/* ri_seek -- the first live entry >= an internal key. */
static void ri_seek(tkv_it *i, tkv_slice target_key)
{
    row_iter *it = (row_iter *)i;
    it->valid = 0;
    if (target_key.n < IKEY_TRAILER) {
        it->status = tkv_err(TKV_INVALID, "pool %s: row %llu: seek target of %zu bytes is not an internal key",
                             pool_path(it->r->pl), (unsigned long long)it->r->row_id, target_key.n);
        return;
    }
    if (it->plan) { /* its iterators span whole rows: to == n */
        int rc = rt_seek_row(it->plan, it->idx, target_key, &it->lo, &it->pos);
        if (rc) {
            it->status = rc;
            return;
        }
        ri_load(it);
        return;
    }
    target t;
    target_init(&t, ikey_user(target_key), ikey_trailer(target_key));
    probe pr = {it->r, &t, 0, 0, 0};
    int ueq = 0;
    it->lo = live_from(it->r, it->from);
    it->pos = rt_lower_bound(&pr, it->lo, it->to > it->lo ? it->to : it->lo, &ueq);
    if (pr.err) {
        it->status = pr.err;
        return;
    }
    ri_load(it);
}

/* ri_next -- the next entry (invalid past the window). */
static void ri_next(tkv_it *i)
{
    row_iter *it = (row_iter *)i;
    if (!it->valid) return;
    it->pos++;
    ri_load(it);
}

/* ri_prev -- the previous entry (invalid below the first live one). */
static void ri_prev(tkv_it *i)
{
    row_iter *it = (row_iter *)i;
    if (!it->valid) return;
    if (it->pos == it->lo) {
        it->valid = 0;
        return;
    }
    it->pos--;
    ri_load(it);
}

static tkv_slice ri_key(tkv_it *i) { return ((row_iter *)i)->k; }
static tkv_slice ri_value(tkv_it *i) { return ((row_iter *)i)->v; }
static int ri_status(tkv_it *i) { return ((row_iter *)i)->status; }

/* ri_destroy -- frees the scratch and the iterator. */
static void ri_destroy(tkv_it *i)
{
    row_iter *it = (row_iter *)i;
    buf_free(&it->kbuf);
    buf_free(&it->vbuf);
    rt_seek_unref(it->plan);
    free(it);
}

static const tkv_it_ops row_iter_ops = {
    .valid = ri_valid,
    .seek_first = ri_seek_first,
    .seek_last = ri_seek_last,
    .seek = ri_seek,
    .next = ri_next,
    .prev = ri_prev,
    .key = ri_key,
    .value = ri_value,
    .status = ri_status,
    .destroy = ri_destroy,
};

/* rowtable_iter / rowtable_iter_at -- rowtable_iter_range to the end. */
tkv_it *rowtable_iter(const rowtable *r) { return rowtable_iter_range(r, 0, UINT32_MAX); }

tkv_it *rowtable_iter_at(const rowtable *r, uint32_t cursor) { return rowtable_iter_range(r, cursor, UINT32_MAX); }

/* rowtable_iter_range -- an unpositioned iterator over [from, min(to, n)). */
tkv_it *rowtable_iter_range(const rowtable *r, uint32_t from, uint32_t to) { return rt_iter_new(r, from, to, NULL, 0); }

/* rt_iter_new -- the iterator, bound to row i of plan s if s is not NULL. */
tkv_it *rt_iter_new(const rowtable *r, uint32_t from, uint32_t to, row_seek *s, size_t i)
{
    row_iter *it = calloc(1, sizeof *it);
    if (!it) {
        tkv_err(TKV_NO_MEMORY, "pool %s: row %llu: out of memory for an iterator", pool_path(r->pl),
                (unsigned long long)r->row_id);
        return NULL;
    }
    it->base.ops = &row_iter_ops;
    it->r = r;
    it->from = from;
    it->to = to < r->n ? to : r->n;
    it->plan = s;
    it->idx = i;
    return &it->base;
}
