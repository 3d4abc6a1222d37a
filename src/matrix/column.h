// SPDX-License-Identifier: Apache-2.0
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
 *     After steps 3 and 4, a column that would leave less than
 *     target_bytes / 4 behind takes that rest too: a tail on its own is a
 *     column of a few bytes that still rewrites whole L1 files.
 *  3. The end is aligned to an L1 file boundary, so the L1 files the column
 *     rewrites are rewritten whole and no L1 file straddles the end: an end
 *     key K inside L1 file f moves to f's largest key, or back to just
 *     before f when the column keeps at least half its target that way;
 *     a K between files stays.
 *  4. The end never separates versions of one user key: each row's new
 *     cursor is the first entry whose user key is past the end (or, for
 *     "just before f", the first whose user key is >= f's smallest).
 *  5. Small L1 neighbours are merged too (when the caller gives the L1
 *     files' sizes and sst_size s). A column's output is sized by its rows'
 *     raw bytes, so with compressible values or a small pool it is a small
 *     fraction of s, and columns that land next to L1 rather than on it
 *     (ascending inserts append at one end) would each leave one small
 *     file. A file is small below s/2 bytes. out starts as the column's
 *     estimated output: the bytes of the L1 files it overlaps plus its row
 *     entries at L1's average bytes per entry. scale is out, or for the
 *     compactor's last column (to_end) at least the whole compactor's
 *     estimated output (compactor_entries at that rate), so that a
 *     compactor leaves its own small outputs merged. Walking outward from
 *     the overlapped files (or the gap the column falls in), left first,
 *     the adjacent file f is merged -- rewritten with the column -- and
 *     out += f, while
 *       (a) f is not busy (held by a deep compaction), and f is small or
 *           out + f <= s (the merge still fits one output file);
 *       (b) f <= 2 * scale: a file is merged only into one about 1.5 times
 *           its size or more, so the bytes of a file are rewritten this way
 *           about log1.5(s / 2m) times (m: the size of the file they were
 *           first written to) -- a counter that carries, not one rewrite
 *           of the small file per column;
 *       (c) the files merged hold at most s bytes, and there are at most
 *           COLUMN_MAX_MERGED of them: a column reads at most one target
 *           file's worth of L1 beyond the files it overlaps, so its latency
 *           stays bounded by its row bytes plus one file;
 *       (d) on the right only: no compactor entry is left at or below f's
 *           largest key, so no later column of this compactor overlaps the
 *           merged output and rewrites it again.
 *     The files merged hold no key of the column's rows, so merging them
 *     changes no key's newest version; [l1_first, l1_end) stays a run of
 *     whole adjacent files, and no L1 file straddles the column's end.
 *     The bound this keeps: after a column, every L1 file next to its
 *     outputs is big (>= s/2), busy, more than twice its scale, or over
 *     the caps. For columns that append at one end of L1 (ascending keys),
 *     with an exact estimate, every L1 file is big but for a trailing run
 *     of small files at the appending end, each more than twice its
 *     neighbour towards that end, so the run holds fewer than
 *     log2(s / 2m) + 1 files (m: the smallest of them).
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
    rowtable *const *rows;   /* the compactor rows (any order) */
    const uint32_t *cursors; /* each row's drain cursor in the caller's view */
    size_t nrows;
    const tkv_slice *l1_smallest, *l1_largest; /* user-key ranges of the L1 files, sorted, disjoint */
    size_t nl1;
    uint64_t target_bytes; /* row bytes per column (> 0) */
    /* Step 5 (small L1 neighbours); with l1_bytes NULL or sst_size 0 none
     * are taken in. */
    const uint64_t *l1_bytes;   /* each L1 file's size */
    const uint64_t *l1_entries; /* each L1 file's entry count (NULL: the estimate uses raw row bytes) */
    const uint8_t *l1_busy;     /* 1: the file may not be taken in (a deep compaction holds it); NULL: none */
    uint64_t sst_size;          /* the target L1 file size */
    uint64_t compactor_entries; /* entries of the compactor's rows when it formed (0: unknown) */
} column_input;

typedef struct column_plan {
    int empty;                /* the compactor rows hold nothing: no column */
    int to_end;               /* the column takes everything left in the compactor rows */
    uint32_t *new_cursors;    /* per input row (malloc'd; column_plan_free) */
    uint64_t row_bytes;       /* data bytes of the rows inside the column */
    uint64_t row_entries;     /* entries of the rows inside the column */
    size_t l1_first, l1_end;  /* L1 files [l1_first, l1_end) to rewrite: those the column overlaps and
                                * the small neighbours it takes in (step 5) */
    size_t l1_merged;         /* how many of them are small neighbours taken in */
    uint64_t l1_merged_bytes; /* and their bytes */
    tkv_buf lo, hi;           /* the column's user-key range (smallest and largest row key in it) */
} column_plan;

/* column_pick -- the next column (see the header comment). Returns 0 and
 * *plan (plan->empty if there is nothing left), or a rowtable error
 * (TKV_CORRUPTION), TKV_INVALID (target 0), TKV_NO_MEMORY. */
int column_pick(const column_input *in, column_plan *plan);
void column_plan_free(column_plan *plan);

#endif
