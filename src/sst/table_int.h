/*
 * table_int.h -- the inside of an open SSTable, shared by the files that
 * implement sst/table.h: table_reader.c (open, blocks, point lookups),
 * table_iter.c (the iterator and its prefetch) and table_check.c (the
 * whole-table walk of verification and dumps). Not for other modules.
 *
 * Block lifetime: a data block lives in a `cached_block` allocation. With a
 * cache, the block is inserted (charge = its uncompressed size) and the reader
 * holds a pinned handle while it reads it; without one (or if the insert fails)
 * the reader owns the allocation and frees it when done.
 */
#ifndef TKV_SST_TABLE_INT_H
#define TKV_SST_TABLE_INT_H

#include "sst/block.h"
#include "sst/format.h"
#include "sst/table.h"

/* A block's contents in one allocation (the value stored in the cache). */
typedef struct cached_block {
    size_t size;
    uint8_t data[];
} cached_block;

struct table {
    io_file *f;
    uint64_t file_size;
    uint64_t data_end; /* data blocks (with trailers) end at or before this offset */
    tkv_cache *cache;
    uint64_t cache_id;
    cached_block *index;
    block_handle index_h;
    block_handle filter_h, props_h; /* from the footer (table_get_layout) */
    cached_block *filter;
    table_props props;
    uint64_t st_bloom_checks, st_bloom_negatives, st_block_reads, st_cache_hits; /* atomic, relaxed */
};

static inline void table_stat_add(uint64_t *c) { __atomic_fetch_add(c, 1, __ATOMIC_RELAXED); }

/* table_corrupt -- TKV_CORRUPTION naming the table's file, the offset and
 * what was wrong. */
int table_corrupt(const table *t, uint64_t off, const char *what, const char *detail);
/* table_data_block -- data block h from the cache, or read with io_pread
 * (and cached). */
int table_data_block(table *t, block_handle h, table_block *r);
/* table_index_handle -- decodes and range-checks the data block handle stored
 * as the value of the index entry at `ix`. */
int table_index_handle(table *t, const block_iter *ix, block_handle *h);

#endif
