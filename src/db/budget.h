// SPDX-License-Identifier: Apache-2.0
/*
 * budget.h -- the DRAM budget: how `dram_budget` is split into the parts
 * that hold the engine's sizeable DRAM, and the parts' names and shares.
 *
 * Parts (docs/options.md, "DRAM budget"):
 *   memtables    memtable_size x memtables (arena blocks of every live memtable)
 *   block_cache  block_cache_size (uncompressed data blocks)
 *   tables       the index and filter blocks of the SSTs the table cache holds open
 *   rows         the matrix container's row handles (key filters, page arrays)
 *   rings        the io_uring rings of the async read path (max_rings of them)
 *   other        a reserve for working memory no part counts (write groups,
 *                compaction buffers, iterators); not measured
 *
 * With dram_budget = B (budget_split, at tkv_open, on tkv_open's copy of
 * the options): an option the user set (memtable_size, memtables,
 * block_cache_size) keeps its value; the others are derived:
 *   memtables    B/4 over `memtables` memtables, each at most its default
 *                (and at most pmem_size/8 with l0=matrix and a set pmem_size)
 *   tables       B/8
 *   rows         B/16 with l0=matrix, 0 with l0=sst
 *   rings        as many rings as fit in B/16, 1..64 (0 with async_io=off)
 *   other        B/16
 *   block_cache  what is left
 * If the parts do not fit in B, tkv_open fails with TKV_INVALID naming each
 * part, its size and whether the user set it. Without a budget the shares
 * are the configured sizes; tables and rows are then unbounded (share 0).
 *
 * How each part keeps to its share is the owner's job: the memtable count
 * (write.c), the block cache's LRU capacity, the table cache's byte
 * capacity (sst/table_cache.h), the rows' fill (mx.h: an earlier compactor,
 * paced writers, a flush that waits), max_rings (io/uring.h).
 */
#ifndef TKV_DB_BUDGET_H
#define TKV_DB_BUDGET_H

#include <stdint.h>

#include "db/options.h"

typedef enum budget_part {
    BUDGET_MEMTABLES,
    BUDGET_BLOCK_CACHE,
    BUDGET_TABLES,
    BUDGET_ROWS,
    BUDGET_RINGS,
    BUDGET_OTHER,
    BUDGET_NPARTS
} budget_part;

/* The async read path's rings (io/uring.h): reads in flight per ring, and
 * the most rings without a budget. */
#define BUDGET_RING_DEPTH 256
#define BUDGET_MAX_RINGS  64

typedef struct dram_split {
    uint64_t total;                /* dram_budget; 0 = no budget */
    uint64_t share[BUDGET_NPARTS]; /* bytes each part may hold; 0 for tables and rows = unbounded */
    int user_set[BUDGET_NPARTS];   /* the part's size came from options the user set */
    unsigned max_rings;            /* rings the async read path may set up (0 with async_io=off) */
} dram_split;

/* budget_part_name -- "memtables", "block_cache", ... */
const char *budget_part_name(budget_part p);

/* budget_split -- fills *out from o; with a budget, first derives
 * memtable_size and block_cache_size in o where the user did not set them.
 * Returns 0, or TKV_INVALID when the parts exceed the budget (tkv_errmsg
 * names each part). o is unchanged on error. */
int budget_split(struct tkv_options *o, dram_split *out);

#endif
