// SPDX-License-Identifier: Apache-2.0
/*
 * merge_iter.c -- the merging iterator: the union of n child iterators in
 * ikey_cmp order, forward and reverse (LevelDB's MergingIterator semantics).
 *
 * Order. Entries are totally ordered by (internal key, child index, position in
 * the child): equal internal keys from several children come lowest index first
 * going forward, and in exactly the reverse order going backward.
 *
 * Invariants (kept by mi_rebuild, mi_advance and the two direction switches):
 *  1. heap[0..hn) holds exactly the valid children; keys[i] is child i's current
 *     key while i is in the heap.
 *  2. dir == DIR_FWD: every valid child is positioned at its first entry after
 *     the previous merged entry, and heap is a min-heap on the order above; the
 *     current entry is heap[0]'s.
 *     dir == DIR_REV: every valid child is positioned at its last entry before
 *     the previous merged entry, and heap is a max-heap; the current is heap[0]'s.
 *  3. err != 0 once a child that was moved reported an error: the merge is then
 *     not valid until the next seek (which re-checks every child).
 */
#include <stdlib.h>

#include "util/iter.h"
#include "util/status.h"

enum { DIR_FWD, DIR_REV };

typedef struct merging_iter {
    tkv_it base;
    tkv_it **child;
    size_t n;
    tkv_slice *keys; /* keys[i]: current key of child i (valid while i is in the heap) */
    size_t *heap;    /* child indices */
    size_t hn;
    int dir;
    int err;
} merging_iter;

/* mi_before -- 1 if child a's entry must be nearer the heap top than child b's. */
static inline int mi_before(const merging_iter *m, size_t a, size_t b)
{
    int c = ikey_cmp(m->keys[a], m->keys[b]);
    if (!c) c = a < b ? -1 : 1;
    return m->dir == DIR_FWD ? c < 0 : c > 0;
}

/* mi_sift_down -- restores the heap property below slot i. */
static void mi_sift_down(merging_iter *m, size_t i)
{
    size_t *h = m->heap;
    for (;;) {
        size_t l = 2 * i + 1, best = i;
        if (l < m->hn && mi_before(m, h[l], h[best])) best = l;
        if (l + 1 < m->hn && mi_before(m, h[l + 1], h[best])) best = l + 1;
        if (best == i) return;
        size_t t = h[i];
        h[i] = h[best];
        h[best] = t;
        i = best;
    }
}

/* mi_rebuild -- re-collects the valid children into a heap for m->dir and
 * re-derives err from every child (used after seeks and direction switches). */
static void mi_rebuild(merging_iter *m)
{
    m->hn = 0;
    m->err = 0;
    for (size_t i = 0; i < m->n; i++) {
        tkv_it *c = m->child[i];
        if (it_valid(c)) {
            m->keys[i] = it_key(c);
            m->heap[m->hn++] = i;
        } else if (it_status(c)) {
            m->err = 1;
        }
    }
    for (size_t i = m->hn / 2; i-- > 0;) mi_sift_down(m, i);
}

/* mi_advance -- moves the current child one step in m->dir and restores the heap. */
static void mi_advance(merging_iter *m)
{
    size_t top = m->heap[0];
    tkv_it *c = m->child[top];
    if (m->dir == DIR_FWD) it_next(c);
    else it_prev(c);
    if (it_valid(c)) {
        m->keys[top] = it_key(c);
    } else {
        if (it_status(c)) m->err = 1;
        m->heap[0] = m->heap[--m->hn];
    }
    mi_sift_down(m, 0);
}

/* mi_switch_to_fwd -- called when reverse: places every other child at its first
 * entry after the current one (child order breaks ties on equal keys), then
 * steps the current child forward. */
static void mi_switch_to_fwd(merging_iter *m)
{
    size_t cur = m->heap[0];
    tkv_slice k = m->keys[cur]; /* stays valid: child `cur` does not move in the loop */
    for (size_t i = 0; i < m->n; i++) {
        if (i == cur) continue;
        tkv_it *c = m->child[i];
        it_seek(c, k);
        if (i < cur) /* its entries equal to k come before the current one */
            while (it_valid(c) && ikey_cmp(it_key(c), k) == 0) it_next(c);
    }
    it_next(m->child[cur]);
    m->dir = DIR_FWD;
    mi_rebuild(m);
}

/* mi_switch_to_rev -- called when forward: places every other child at its last
 * entry before the current one, then steps the current child back. */
static void mi_switch_to_rev(merging_iter *m)
{
    size_t cur = m->heap[0];
    tkv_slice k = m->keys[cur];
    for (size_t i = 0; i < m->n; i++) {
        if (i == cur) continue;
        tkv_it *c = m->child[i];
        it_seek(c, k);
        if (i < cur) /* its entries equal to k come before the current one: keep them */
            while (it_valid(c) && ikey_cmp(it_key(c), k) == 0) it_next(c);
        if (it_valid(c)) it_prev(c);
        else if (!it_status(c)) it_seek_last(c); /* every entry of c is before the current one */
    }
    it_prev(m->child[cur]);
    m->dir = DIR_REV;
    mi_rebuild(m);
}

static int mi_valid(tkv_it *it)
{
    merging_iter *m = (merging_iter *)it;
    return m->hn > 0 && !m->err;
}

static void mi_seek_first(tkv_it *it)
{
    merging_iter *m = (merging_iter *)it;
    for (size_t i = 0; i < m->n; i++) it_seek_first(m->child[i]);
    m->dir = DIR_FWD;
    mi_rebuild(m);
}

static void mi_seek_last(tkv_it *it)
{
    merging_iter *m = (merging_iter *)it;
    for (size_t i = 0; i < m->n; i++) it_seek_last(m->child[i]);
    m->dir = DIR_REV;
    mi_rebuild(m);
}

static void mi_seek(tkv_it *it, tkv_slice target)
{
    merging_iter *m = (merging_iter *)it;
    for (size_t i = 0; i < m->n; i++) it_seek(m->child[i], target);
    m->dir = DIR_FWD;
    mi_rebuild(m);
}

static void mi_next(tkv_it *it)
{
    merging_iter *m = (merging_iter *)it;
    if (!mi_valid(it)) return;
    if (m->dir == DIR_FWD) mi_advance(m);
    else mi_switch_to_fwd(m);
}

static void mi_prev(tkv_it *it)
{
    merging_iter *m = (merging_iter *)it;
    if (!mi_valid(it)) return;
    if (m->dir == DIR_REV) mi_advance(m);
    else mi_switch_to_rev(m);
}

static tkv_slice mi_key(tkv_it *it)
{
    merging_iter *m = (merging_iter *)it;
    return mi_valid(it) ? m->keys[m->heap[0]] : slice(NULL, 0);
}

static tkv_slice mi_value(tkv_it *it)
{
    merging_iter *m = (merging_iter *)it;
    return mi_valid(it) ? it_value(m->child[m->heap[0]]) : slice(NULL, 0);
}

/* mi_status -- the first non-zero child status, by child index. */
static int mi_status(tkv_it *it)
{
    merging_iter *m = (merging_iter *)it;
    for (size_t i = 0; i < m->n; i++) {
        int s = it_status(m->child[i]);
        if (s) return s;
    }
    return 0;
}

static void mi_destroy(tkv_it *it)
{
    merging_iter *m = (merging_iter *)it;
    for (size_t i = 0; i < m->n; i++) it_destroy(m->child[i]);
    free(m->child);
    free(m->keys);
    free(m->heap);
    free(m);
}

static const tkv_it_ops merging_iter_ops = {
    .valid = mi_valid,
    .seek_first = mi_seek_first,
    .seek_last = mi_seek_last,
    .seek = mi_seek,
    .next = mi_next,
    .prev = mi_prev,
    .key = mi_key,
    .value = mi_value,
    .status = mi_status,
    .destroy = mi_destroy,
};

size_t merging_iter_current(tkv_it *it)
{
    if (it->ops != &merging_iter_ops) return 0;
    merging_iter *m = (merging_iter *)it;
    return m->hn ? m->heap[0] : 0;
}

int merging_iter_skip(tkv_it *it, size_t newest, tkv_slice target, int backward)
{
    if (it->ops != &merging_iter_ops) return 0;
    merging_iter *m = (merging_iter *)it;
    if (!mi_valid(it) || m->dir != (backward ? DIR_REV : DIR_FWD)) return 0;
    int moved = 0;
    for (size_t i = newest + 1; i < m->n; i++) {
        tkv_it *c = m->child[i];
        if (!it_valid(c)) continue;
        int c_before = ikey_cmp(it_key(c), target) < 0;
        if (backward == c_before) continue; /* already where the skip would put it */
        it_seek(c, target);
        if (backward) {
            if (it_valid(c)) it_prev(c);
            else if (!it_status(c)) it_seek_last(c);
        }
        moved = 1;
    }
    if (moved) mi_rebuild(m); /* the invariants of the direction hold again (header comment) */
    return moved;
}

/* merging_iter_new -- see util/iter.h. With one child, returns that child itself. */
tkv_it *merging_iter_new(tkv_it **children, size_t n)
{
    if (n == 1) { /* nothing to merge: the child is the union */
        tkv_it *only = children[0];
        free(children);
        return only;
    }
    merging_iter *m = calloc(1, sizeof *m);
    if (!m) goto oom;
    m->base.ops = &merging_iter_ops;
    m->child = children;
    m->n = n;
    m->keys = calloc(n ? n : 1, sizeof *m->keys);
    m->heap = calloc(n ? n : 1, sizeof *m->heap);
    if (!m->keys || !m->heap) goto oom;
    return &m->base;
oom:
    if (m) {
        mi_destroy(&m->base); /* releases the children and the array too */
    } else {
        for (size_t i = 0; i < n; i++) it_destroy(children[i]);
        free(children);
    }
    tkv_err(TKV_NO_MEMORY, "merging iterator: out of memory for %zu children", n);
    return NULL;
}
