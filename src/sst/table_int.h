// SPDX-License-Identifier: Apache-2.0
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

/* A block's contents in one allocation (the value stored in the cache),
 * made by block_mem_alloc and released by block_mem_free (block_mem.c). */
typedef struct cached_block {
    size_t size; /* bytes of data in use */
    size_t cap;  /* bytes allocated for data */
    uint8_t data[];
} cached_block;

/* block_mem_alloc -- a block with room for at least `size` bytes (b->size =
 * size), reusing a buffer the calling thread freed when one fits; NULL when
 * out of memory. */
cached_block *block_mem_alloc(size_t size);
/* block_mem_free -- releases b (NULL is a no-op); the calling thread may keep
 * it for its next block_mem_alloc. */
void block_mem_free(cached_block *b);

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
    uint32_t version;   /* the footer's format version */
    block_handle rd_h;  /* the range deletion block (version 2; else 0, 0) */
    rd_list rd;         /* its tombstones, sorted by begin (empty without) */
    rd_frags *rd_frags; /* and their fragments (NULL without) */
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
/* The three handles of a footer, and its format version. */
typedef struct table_footer {
    block_handle index, filter, props;
    uint32_t version;
} table_footer;

/* The decoders table_open and the block reads run on bytes already in memory
 * (the fuzz targets in fuzz/ call them too). `path` names the file in
 * messages; every malformed input is TKV_CORRUPTION (TKV_NO_MEMORY aside),
 * never a read outside the bytes given. */

/* table_decode_footer -- the SST_FOOTER_SIZE bytes of a footer found at
 * foot_off: magic, checksum and format version (1 or 2), then the three
 * handles (not range-checked: table_open does that as it reads each block). */
int table_decode_footer(const char *path, uint64_t foot_off, const uint8_t foot[SST_FOOTER_SIZE], table_footer *out);
/* table_decode_block -- the h.size + SST_TRAILER_SIZE bytes of block h at p
 * (got of them were read: fewer is a truncated file): checks the trailer
 * checksum, then decompresses; *out holds the contents. With `raw` (the
 * allocation p lives in, p == raw->data) an uncompressed block is returned in
 * it and raw is otherwise freed; without (NULL), the bytes are copied. `what`
 * names the kind of block in messages. The caller frees *out. */
int table_decode_block(const char *path, block_handle h, const uint8_t *p, size_t got, const char *what,
                       cached_block *raw, cached_block **out);
/* table_check_index -- walks t->index once (table_open does, after the
 * properties): every handle decodes and lies inside the data area
 * (t->data_end), blocks follow each other in file order, and their number is
 * t->props.num_data_blocks. */
int table_check_index(table *t);
/* table_index_handle -- decodes and range-checks the data block handle stored
 * as the value of the index entry at `ix`. */
int table_index_handle(table *t, const block_iter *ix, block_handle *h);

#endif
