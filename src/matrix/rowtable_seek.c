// SPDX-License-Identifier: Apache-2.0
/*
 * rowtable_seek.c -- hinted seeks over a view's rows: the seek plan the
 * iterators of k rows share (rowtable_iters_at). A merging iterator seeks its
 * children one after the other to one target, newest row first; the plan
 * keeps each row's lower bound of that target, so the next row is searched
 * only inside the window the forward pointers around it give (invariant (2)
 * of rowtable_int.h; the same windows, verified the same way, as
 * rowtable_rows_get's).
 *
 * A round is the seeks of one target in increasing row order. Row i's seek
 * continues the current round when i is past the row sought last and the
 * target is the same bytes; anything else starts a new round. Rows skipped
 * inside a round (a merging iterator's direction change does not re-seek its
 * current child) are searched for the plan without moving their iterator.
 * A seek of row i always searches row i itself: the plan never hands out
 * an answer found by an earlier seek, only the windows for the rows after
 * it, and those are verified (rt_search_hint). So the result of every seek
 * is the row's lower bound whatever the order of the seeks, the targets or
 * the cursors; only the cost depends on them (a row without a usable window
 * is binary-searched).
 */
#include "matrix/rowtable_int.h"

#include <stdlib.h>
#include <string.h>

#include "util/status.h"

/* POS_UNKNOWN -- a row of the plan whose search failed: no window for the next. */
#define POS_UNKNOWN UINT32_MAX

struct row_seek {
    size_t k;
    size_t refs; /* iterators alive (one thread: not atomic) */
    const rowtable **rows;
    uint32_t *from;     /* view cursors */
    uint32_t *lo, *pos; /* rows [0, done) of the round: first live entry, lower bound (or POS_UNKNOWN) */
    size_t done;
    size_t last;  /* the row sought last in the round */
    int in_round; /* 0 until the first seek, and after a target could not be kept */
    unsigned flags;
    tkv_buf target;        /* the round's target (an internal key) */
    row_seek_stats *stats; /* the caller's, or own */
    row_seek_stats own;
};

/* stat_add -- adds to a counter of the caller's stats (relaxed: they may be shared). */
static inline void stat_add(uint64_t *c, uint64_t n)
{
    if (n) __atomic_fetch_add(c, n, __ATOMIC_RELAXED);
}

/* search_row -- row j's lower bound of target t among its live entries,
 * inside window h when h is for this row and its edges hold, else by a
 * binary search; counted into the stats. 0 or TKV_CORRUPTION. */
static int search_row(row_seek *s, size_t j, const target *t, const row_hint *h, uint32_t *lo, uint32_t *pos)
{
    const rowtable *r = s->rows[j];
    probe pr = {r, t, 0, 0, 0};
    uint32_t c = live_from(r, s->from[j]), n = r->n;
    int ueq = 0, hinted = 0;
    if (h && h->row_id != 0 && h->row_id == r->row_id && c < n) {
        hinted = rt_search_hint(&pr, h, c, n, pos, &ueq);
        stat_add(hinted ? &s->stats->hints_used : &s->stats->hints_rejected, 1);
    }
    if (!hinted) *pos = rt_lower_bound(&pr, c, n, &ueq);
    *lo = c;
    stat_add(&s->stats->rows_searched, 1);
    stat_add(&s->stats->comparisons, pr.ncmp);
    return pr.err;
}

/* window_for -- the window of row j from the plan's answer in row j-1: the
 * forward pointers around it (rt_older_hint). None (0) for the first row,
 * after a failed or empty row, or when the chain is broken (the hint names
 * another row: search_row ignores it). */
static int window_for(const row_seek *s, size_t j, row_hint *h)
{
    if (j == 0) return 0;
    const rowtable *prev = s->rows[j - 1];
    if (s->pos[j - 1] == POS_UNKNOWN || s->lo[j - 1] >= prev->n) return 0;
    rt_older_hint(prev, s->lo[j - 1], s->pos[j - 1], h);
    return 1;
}

/* start_round -- a new target: forgets the plan, keeps a copy of the target. */
static void start_round(row_seek *s, tkv_slice tk)
{
    stat_add(&s->stats->seeks, 1);
    s->done = 0;
    s->target.len = 0;
    s->in_round = buf_append(&s->target, tk.p, tk.n) == 0; /* out of memory: unhinted until the next round */
}

/* rt_seek_row -- the lower bound (*pos) of internal key tk in row i of the
 * plan, and the first live entry (*lo) it was searched from. With hints,
 * extends the plan row by row up to i (rows a round skipped are searched
 * for their windows); a row that fails to search leaves the next without a
 * window. 0 or row i's error. */
int rt_seek_row(row_seek *s, size_t i, tkv_slice tk, uint32_t *lo, uint32_t *pos)
{
    target t;
    target_init(&t, ikey_user(tk), ikey_trailer(tk));
    int same = s->in_round && i > s->last && tk.n == s->target.len && memcmp(tk.p, s->target.data, tk.n) == 0;
    if (!same) start_round(s, tk);
    s->last = i;
    if (!(s->flags & ROWTABLE_SEEK_HINTS) || !s->in_round) return search_row(s, i, &t, NULL, lo, pos);
    while (s->done <= i) { /* done <= last + 1 <= i on entry: row i is searched now, last */
        size_t j = s->done++;
        row_hint h;
        int rc = search_row(s, j, &t, window_for(s, j, &h) ? &h : NULL, &s->lo[j], &s->pos[j]);
        if (rc) {
            s->pos[j] = POS_UNKNOWN;
            if (j == i) return rc;
        }
    }
    *lo = s->lo[i];
    *pos = s->pos[i];
    return 0;
}

/* rt_seek_unref -- an iterator of the plan goes; the last frees it. */
void rt_seek_unref(row_seek *s)
{
    if (!s || --s->refs > 0) return;
    buf_free(&s->target);
    free(s->rows);
    free(s->from);
    free(s->lo);
    free(s->pos);
    free(s);
}

/* plan_new -- a plan over rows[0..k) at the view's cursors, no iterator yet. */
static row_seek *plan_new(rowtable *const *rows, const uint32_t *cursors, size_t k, unsigned flags,
                          row_seek_stats *stats)
{
    row_seek *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->k = k;
    s->refs = 1; /* the builder's, until every iterator holds one */
    s->flags = flags;
    s->stats = stats ? stats : &s->own;
    s->rows = calloc(k, sizeof *s->rows);
    s->from = calloc(k, sizeof *s->from);
    s->lo = calloc(k, sizeof *s->lo);
    s->pos = calloc(k, sizeof *s->pos);
    if (!s->rows || !s->from || !s->lo || !s->pos) {
        rt_seek_unref(s);
        return NULL;
    }
    for (size_t i = 0; i < k; i++) {
        s->rows[i] = rows[i];
        s->from[i] = cursors ? cursors[i] : 0;
    }
    return s;
}

/* rowtable_iters_at -- k iterators sharing one plan. */
int rowtable_iters_at(rowtable *const *rows, const uint32_t *cursors, size_t k, unsigned flags, row_seek_stats *stats,
                      tkv_it **out)
{
    for (size_t i = 0; i < k; i++) out[i] = NULL;
    if (k == 0) return 0;
    row_seek *s = plan_new(rows, cursors, k, flags, stats);
    if (!s) return tkv_err(TKV_NO_MEMORY, "out of memory for the seek plan of %zu rows", k);
    for (size_t i = 0; i < k; i++) {
        out[i] = rt_iter_new(rows[i], s->from[i], UINT32_MAX, s, i);
        if (!out[i]) {
            for (size_t j = 0; j < i; j++) {
                it_destroy(out[j]);
                out[j] = NULL;
            }
            rt_seek_unref(s);
            return TKV_NO_MEMORY; /* rt_iter_new set the message */
        }
        s->refs++;
    }
    rt_seek_unref(s); /* the builder's reference */
    return 0;
}
