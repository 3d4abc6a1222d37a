/*
 * column.h -- picking the next column of a column compaction (MatrixKV's
 * fine-grained L0 -> L1 compaction).
 *
 * The compactor is the oldest rows of the container. Their drain cursors
 * are aligned: every key below the last column's end has left every
 * compactor row. The next column is a key range [lo, hi] that covers a
 * prefix of every compactor row (entries [cursor_r, new_cursor_r) of row r):
 *
 *  1. lo is the smallest user key left in the compactor rows.
 *  2. The range grows sub-range by sub-range -- candidate end keys sampled
 *     from every row, tried in key order by binary search -- until the
 *     rows' bytes in it reach `target_bytes` (all that is left if less).
 *  3. The end is aligned to an L1 file boundary, so the L1 files the column
 *     rewrites are rewritten whole and no L1 file straddles the end: an end
 *     key K inside L1 file f moves to f's largest key, or back to just
 *     before f when the column keeps at least half its target that way;
 *     a K between files stays.
 *  4. The end never separates versions of one user key: each row's new
 *     cursor is the first entry whose user key is past the end (or, for
 *     "just before f", the first whose user key is >= f's smallest).
 *
 * Inputs are read-only; the caller pins the rows (a version whose cursors
 * these are) for the duration. Thread safety: none needed (pure function).
 */
#ifndef TKV_MATRIX_COLUMN_H
#define TKV_MATRIX_COLUMN_H

#include <stddef.h>
#include <stdint.h>

#include "matrix/rowtable.h"
#include "util/coding.h"

typedef struct column_input {
    rowtable *const *rows;     /* the compactor rows (any order) */
    const uint32_t *cursors;   /* each row's drain cursor in the caller's view */
    size_t nrows;
    const tkv_slice *l1_smallest, *l1_largest; /* user-key ranges of the L1 files, sorted, disjoint */
    size_t nl1;
    uint64_t target_bytes;     /* row bytes per column (> 0) */
} column_input;

typedef struct column_plan {
    int empty;                 /* the compactor rows hold nothing: no column */
    int to_end;                /* the column takes everything left in the compactor rows */
    uint32_t *new_cursors;     /* per input row (malloc'd; column_plan_free) */
    uint64_t row_bytes;        /* data bytes of the rows inside the column */
    uint64_t row_entries;      /* entries of the rows inside the column */
    size_t l1_first, l1_end;   /* L1 files [l1_first, l1_end) overlap the column: rewrite them */
    tkv_buf lo, hi;            /* the column's user-key range (smallest and largest row key in it) */
} column_plan;

/* column_pick -- the next column (see the header comment). Returns 0 and
 * *plan (plan->empty if there is nothing left), or a rowtable error
 * (TKV_CORRUPTION), TKV_INVALID (target 0), TKV_NO_MEMORY. */
int column_pick(const column_input *in, column_plan *plan);
void column_plan_free(column_plan *plan);

#endif
