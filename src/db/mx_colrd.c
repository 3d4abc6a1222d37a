// SPDX-License-Identifier: Apache-2.0
/*
 * mx_colrd.c -- matrix container: the range tombstones of the compactor rows
 * in a column compaction (mx_column.c runs the columns).
 *
 * A row's range tombstones drain to L1 key range by key range, as its
 * entries do, so that for every key the tiers stay in sequence order --
 * what lets a point lookup stop at the first tier with a covering tombstone.
 * Each row records in the MANIFEST (with its cursor, tag 10) its range
 * tombstone start S: the part of its tombstones below S is in L1, the part
 * from S on is still the row's (no start: all of it). A column of the
 * compactor ends at E: the smallest key after everything its output can
 * hold (its largest row or L1 key, with 0x00 appended), or no end for the
 * column that takes the rest of the compactor. The column takes each row's
 * tombstones cut to [S, E) into its merge, and afterwards each row's start
 * is E. Columns cover consecutive key ranges, so the next column's [S, E)
 * starts where this one's ended.
 *
 * The L1 files the column rewrites must cover those tombstones (L1 stays
 * disjoint): the column's run of L1 files is widened over the files they
 * overlap. Below the column's first row key only files above the previous
 * column's end can be met (it took every file up to its end); past its last
 * row key none can be, because E is right after the largest key of the files
 * the column merges and the next file starts after it -- but for the column
 * that takes the rest, whose tombstones run to their ends.
 *
 * A row whose entries are all drained but that still holds tombstones past
 * E stays (its cursor at its end) until a later column takes them; a
 * compactor whose rows hold no entry but such tombstones (after a reopen,
 * or rows of range deletions only) gets a column of tombstones only.
 */
#include "db/mx_int.h"

#include "util/status.h"

int mx_rd_clip(const rowtable *r, tkv_slice start, const tkv_slice *end, rd_list *out)
{
    const rd_frags *f = rowtable_range_dels(r);
    if (!f) return 0;
    return rd_frags_emit(f, start.n ? &start : NULL, end, NULL, NULL, out);
}

int mx_rd_extent(rowtable *const *rows, const tkv_slice *starts, size_t k, const tkv_slice *end, tkv_buf *lo,
                 tkv_buf *hi, int *have)
{
    rd_list l = {0};
    int rc = 0;
    for (size_t i = 0; i < k && rc == 0; i++) rc = mx_rd_clip(rows[i], starts[i], end, &l);
    *have = rc == 0 && l.n > 0;
    if (*have) {
        tkv_slice a, b;
        rd_extent(l.t, l.n, &a, &b);
        b = rd_key_prev_incl(b); /* the last key they may cover, as file ranges count it */
        lo->len = hi->len = 0;
        rc = buf_append(lo, a.p, a.n);
        if (rc == 0) rc = buf_append(hi, b.p, b.n);
    }
    rd_list_free(&l);
    return rc;
}

int mx_rd_keeps(const rowtable *r, const tkv_slice *end)
{
    const rd_list *l = rowtable_range_del_list(r);
    for (size_t i = 0; end && i < l->n; i++)
        if (ukey_cmp(l->t[i].end, *end) > 0) return 1;
    return 0;
}

void mx_rd_widen(const tkv_slice *smallest, const tkv_slice *largest, size_t n, tkv_slice lo, tkv_slice hi,
                 size_t *first, size_t *end)
{
    size_t f = 0, e;
    while (f < n && ukey_cmp(largest[f], lo) < 0) f++;
    e = f;
    while (e < n && ukey_cmp(smallest[e], hi) <= 0) e++;
    if (f == e) return;         /* no file meets [lo, hi] */
    if (f < *first) *first = f; /* the run stays contiguous: it spans both */
    if (e > *end) *end = e;
}

int mx_rd_left(rowtable *const *rows, row_key *const *starts, size_t k)
{
    for (size_t i = 0; i < k; i++) {
        tkv_slice s = row_key_slice(starts[i]);
        if (rowtable_range_dels(rows[i]) && (s.n == 0 || mx_rd_keeps(rows[i], &s))) return 1;
    }
    return 0;
}

int mx_rd_edit_row(rowtable *r, uint32_t from, uint32_t to, row_key *rd_from, row_key *rd_to, version_edit *e,
                   size_t *removed)
{
    int has_rd = rowtable_range_dels(r) != NULL;
    tkv_slice end = row_key_slice(rd_to), start = row_key_slice(rd_from);
    if (from == rowtable_count(r) && (!has_rd || (rd_from && !mx_rd_keeps(r, &start))))
        return 0; /* drained by a column before this one, which removes it */
    if (to == rowtable_count(r) && (!has_rd || !mx_rd_keeps(r, rd_to ? &end : NULL))) {
        (*removed)++;
        return edit_remove_row(e, rowtable_id(r)); /* drained: leaves the version */
    }
    row_key *next = rd_from;
    if (has_rd && rd_to && (!rd_from || ukey_cmp(end, start) > 0)) next = rd_to;
    if (to == from && next == rd_from) return 0;
    return edit_set_row_cursor_rd(e, rowtable_id(r), to, next);
}
