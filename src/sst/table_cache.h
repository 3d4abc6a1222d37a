// SPDX-License-Identifier: Apache-2.0
/*
 * table_cache.h -- open SST tables by file number, bounded by a count, or
 * by bytes of DRAM and a count.
 *
 * Built on the sharded LRU cache (sst/cache.h) with one entry per open table.
 * Without a byte bound each table is charged 1 against a capacity of
 * max_open_files. With one (max_bytes, a DRAM budget's share), a table is
 * charged its DRAM (table_memory: the index and filter blocks it keeps), but
 * at least max_bytes / max_open_files, so that no more than max_open_files
 * tables (and file descriptors) stay open either. A lookup pins the table; iterators keep
 * their table pinned until destroyed, so eviction never closes a table in use.
 * Reads through the table cache are client reads (IO_USER_READ); compactions
 * open their inputs directly with their own I/O class and no block cache.
 * Thread-safe; concurrent misses on one table open it once (the others wait
 * for that open).
 */
#ifndef TKV_SST_TABLE_CACHE_H
#define TKV_SST_TABLE_CACHE_H

#include "sst/cache.h"
#include "sst/table.h"
#include "sst/version.h"

typedef struct table_cache table_cache;

/* table_cache_new -- NULL on out of memory. max_bytes 0: bounded by the
 * count alone. block_cache may be NULL. */
table_cache *table_cache_new(const char *dir, size_t max_open_files, size_t max_bytes, tkv_cache *block_cache,
                             io_stats *st, unsigned io_flags);
void table_cache_free(table_cache *tc); /* NULL ok; every handle must be released */

/* sst_path -- "<dir>/<number>.sst". */
void sst_path(const char *dir, uint64_t number, char *buf, size_t len);

/* table_cache_get -- table_get on file f (opening it if needed). Same returns. */
int table_cache_get(table_cache *tc, const file_meta *f, tkv_slice ukey, uint64_t seq, ikey_type *type, tkv_buf *val);

/* table_cache_find -- file f's table pinned in *h (opened if needed, as
 * table_cache_get does); table_cache_table gives the table, valid until
 * table_cache_release(h). */
int table_cache_find(table_cache *tc, const file_meta *f, cache_handle **h);
table *table_cache_table(cache_handle *h);
void table_cache_release(table_cache *tc, cache_handle *h);

/* table_cache_iter -- an iterator over file f that pins the table; on error an
 * iterator that is never valid and reports the error in status(). NULL only
 * on out of memory. With a ring (held by the caller for the iterator's life)
 * its reads are asynchronous (table_iter_async; counters in *st, may be
 * NULL); NULL ring: synchronous. */
tkv_it *table_cache_iter(table_cache *tc, const file_meta *f, io_ring *ring, table_prefetch_stats *st);

/* table_cache_prefetch_seek -- table_iter_prefetch_seek for an iterator of
 * table_cache_iter or level_iter_new (a level opens the file the seek will
 * land in); 0 for any other iterator. */
int table_cache_prefetch_seek(tkv_it *it, tkv_slice target);

/* table_cache_preload -- opens file f's table into the cache unless it is
 * there, so the first client read of f does not pay for reading its index
 * and filter (RocksDB does the same at open with max_open_files = -1). The
 * open's reads are charged to `cls` (the flush or compaction that made the
 * file, or IO_META at open); the table then serves client reads as
 * IO_USER_READ like any other. 0 on success or if already open; an error
 * leaves nothing cached (a reader that needs f meets the error itself). */
int table_cache_preload(table_cache *tc, const file_meta *f, io_class cls);

/* table_cache_full -- 1 if a byte-bounded cache has no room for one more
 * table without evicting (preloading stops there); 0 without a byte bound. */
int table_cache_full(table_cache *tc);

/* table_cache_evict -- drops a deleted file's table from the cache. */
void table_cache_evict(table_cache *tc, uint64_t number);

/* Counters (relaxed atomics): tables open now, tables a client read had to
 * open itself (it paid for the index and filter), tables opened ahead by
 * table_cache_preload, and lookups that missed while another thread was
 * opening the same table and waited for it instead of opening it again.
 * bytes: the DRAM of the tables open now; charged and capacity: the cache's
 * usage and capacity (in tables, or in bytes with a byte bound). */
typedef struct table_cache_stats {
    size_t open, bytes, charged, capacity;
    uint64_t client_opens, preloads, load_waits;
} table_cache_stats;
void table_cache_get_stats(table_cache *tc, table_cache_stats *out);

/* table_cache_block_cache -- the block cache the tables use (may be NULL). */
tkv_cache *table_cache_block_cache(table_cache *tc);

/* error_iter_new -- an iterator that is never valid and whose status is code. */
tkv_it *error_iter_new(int code);

/* level_iter_new -- concatenates the tables of files[0..n) (sorted, disjoint:
 * an L1+ level) opening each lazily through the table cache. The files array
 * is borrowed: the caller keeps the version that owns it pinned for the
 * iterator's life. ring and st: as table_cache_iter. NULL on out of memory. */
tkv_it *level_iter_new(table_cache *tc, file_meta *const *files, size_t n, io_ring *ring, table_prefetch_stats *st);

#endif
