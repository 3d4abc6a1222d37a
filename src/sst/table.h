// SPDX-License-Identifier: Apache-2.0
/*
 * table.h -- SSTables of the SSD tier: an immutable sorted file of internal keys
 * and values, written once by a table_builder and read by a table.
 * Format: sst/format.h and docs/format-sst.md.
 *
 * Thread safety: a table_builder belongs to one thread. A table is safe for
 * concurrent table_get/table_may_contain/table_iter/table_properties calls from
 * any number of threads after table_open returns; table_close must not race
 * with them and every iterator of the table must be destroyed before it.
 * An iterator belongs to one thread (src/util/iter.h).
 */
#ifndef TKV_SST_TABLE_H
#define TKV_SST_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "io/io.h"
#include "io/uring.h"
#include "util/ikey.h"
#include "sst/cache.h"
#include "sst/format.h"
#include "util/coding.h"
#include "util/iter.h"
#include "util/rangedel.h"

/* ---------------------------------------------------------------- options */

typedef struct table_options {
    size_t block_size;      /* target uncompressed data block size; default 4096, 256..1 GiB */
    int restart_interval;   /* entries per restart run; default 16, 1..65536 */
    int bloom_bits_per_key; /* default 10; 0 = no filter; max 64 */
    int compression;        /* SST_COMPRESS_NONE (0, default) or SST_COMPRESS_LZ4 (1) */
} table_options;

/* table_options_default -- block_size 4096, restart_interval 16,
 * bloom_bits_per_key 10, compression 0. */
void table_options_default(table_options *o);

/* ---------------------------------------------------------------- builder */

typedef struct table_builder table_builder;

/* table_builder_new -- a builder appending to `f` (opened with io_open_append;
 * not owned: the caller syncs and closes it). Block offsets are file offsets,
 * so the table normally starts at offset 0 of an empty file. `o` NULL means
 * defaults. Returns 0, TKV_INVALID (option out of range; tkv_errmsg names it)
 * or TKV_NO_MEMORY. */
int table_builder_new(io_file *f, const table_options *o, table_builder **out);
/* table_builder_add -- appends an entry. Keys (>= IKEY_TRAILER bytes, user key
 * <= TKV_MAX_KEY_SIZE, value <= TKV_MAX_VALUE_SIZE) must be strictly increasing
 * in ikey_cmp order: otherwise TKV_INVALID and nothing changes. I/O errors
 * (TKV_IO_ERROR, TKV_NO_SPACE) are sticky: every later call returns them. */
int table_builder_add(table_builder *b, tkv_slice ikey, tkv_slice value);
/* table_builder_add_range_dels -- adds range tombstones t[0..n) (copied;
 * keys of 1..RD_MAX_KEY bytes, begin < end), at any time before finish: they
 * go into the range deletion block, sorted by begin (docs/format-sst.md), and
 * make the table format version 2. TKV_INVALID for a malformed tombstone,
 * TKV_NO_MEMORY. */
int table_builder_add_range_dels(table_builder *b, const rd_tomb *t, size_t n);
/* table_builder_finish -- writes the last data block, the filter, properties
 * and index blocks and the footer. Does NOT sync or close f. Afterwards only
 * table_builder_file_size/num_entries/free may be called. A table with no
 * entries is valid. */
int table_builder_finish(table_builder *b);
/* table_builder_abandon -- frees the builder without finishing (the partial
 * file is the caller's to remove). Same as table_builder_free. NULL ok. */
void table_builder_abandon(table_builder *b);
/* table_builder_file_size -- bytes written so far plus the current data block's
 * size estimate; after finish, the exact table size. */
uint64_t table_builder_file_size(const table_builder *b);
/* table_builder_num_entries -- entries added so far. */
uint64_t table_builder_num_entries(const table_builder *b);
/* table_builder_free -- frees the builder (not f). NULL ok. */
void table_builder_free(table_builder *b);

/* ---------------------------------------------------------------- reader */

typedef struct table_props {
    uint64_t num_entries, num_deletions, min_seq, max_seq, raw_key_bytes, raw_value_bytes, data_bytes, num_data_blocks;
    tkv_buf smallest, largest;      /* internal keys; empty for an empty table */
    uint64_t compression;           /* the builder's table_options.compression */
    uint64_t num_compressed_blocks; /* data blocks stored lz4-compressed */
    uint64_t num_range_dels;        /* range tombstones (format version 2; 0 in version 1) */
} table_props;

typedef struct table table;

/* table_open -- opens the table stored in the first file_size bytes of f
 * (file_size: the size the table was written with, e.g. from the MANIFEST).
 * `f` is owned by the table afterwards (closed by table_close, or by
 * table_open itself if it fails). `cache` (may be NULL) caches uncompressed
 * data blocks and must outlive the table. Reads and verifies the footer, index,
 * filter and properties blocks. Returns 0 and *out, or TKV_CORRUPTION (tkv_errmsg
 * names the file and offset; includes truncated files), TKV_IO_ERROR,
 * TKV_NO_MEMORY; *out is NULL on error. */
int table_open(io_file *f, uint64_t file_size, tkv_cache *cache, table **out);
/* table_memory -- the DRAM an open table keeps: its struct, index and
 * filter blocks and properties (data blocks live in the block cache). */
size_t table_memory(const table *t);
/* table_close -- frees the table and closes its file. NULL ok. */
void table_close(table *t);
/* table_properties -- the table's properties (valid until table_close). */
const table_props *table_properties(const table *t);
/* table_range_del_list / table_range_dels -- the table's range tombstones,
 * read and verified at open (kept in DRAM like the index): as stored
 * (sorted by begin, then seq descending; empty without any) and as
 * fragments (NULL without any). Valid until table_close. */
const rd_list *table_range_del_list(const table *t);
const rd_frags *table_range_dels(const table *t);
/* table_file -- the table's file (for its path in messages). */
io_file *table_file(const table *t);

/* table_get -- finds the newest entry for user key `ukey` with seq <= `seq`
 * (seq > IKEY_MAX_SEQ is taken as IKEY_MAX_SEQ). Consults the bloom filter
 * first. Returns 1 and fills *type and *val (value copied into val: val->len
 * is set to the value size, val's memory is reused; the caller owns it) if
 * found -- a deletion is found too (type IKEY_DELETION, empty value); 0 if the
 * table holds no such entry; <0 on error (TKV_CORRUPTION naming the file and
 * block offset, TKV_IO_ERROR, TKV_NO_MEMORY). */
int table_get(table *t, tkv_slice ukey, uint64_t seq, ikey_type *type, tkv_buf *val);
/* table_get_seq -- table_get that also gives the entry's sequence number
 * (*found_seq, when not NULL). */
int table_get_seq(table *t, tkv_slice ukey, uint64_t seq, ikey_type *type, tkv_buf *val, uint64_t *found_seq);
/* Read flags of the calling thread, for the client read in progress
 * (tkv_read_options), set around it by the caller and read by every data
 * block read on this thread: TABLE_READ_NO_FILL: blocks read from the file
 * are not inserted into the block cache (the reader frees them when done);
 * TABLE_READ_NO_VERIFY: their trailer checksum is not checked (and they are
 * not cached either, so no other read meets an unverified block). Index,
 * filter and footer blocks are always verified. Background work never sets
 * them. table_read_flags_set returns the previous flags, to restore. */
#define TABLE_READ_NO_FILL   1u
#define TABLE_READ_NO_VERIFY 2u
unsigned table_read_flags_set(unsigned flags);

/* table_may_contain -- the bloom filter's answer alone: 0 if ukey is certainly
 * absent, 1 if it may be present. */
int table_may_contain(table *t, tkv_slice ukey);
/* table_iter -- an internal iterator over every entry (src/util/iter.h) with
 * seek/seek_first/seek_last/next/prev; errors via status(). Seek targets must
 * be internal keys (>= IKEY_TRAILER bytes; shorter ones give TKV_INVALID).
 * The table must outlive the iterator. NULL on out of memory. */
tkv_it *table_iter(table *t);

/* Counters of the iterators' asynchronous reads (relaxed atomics). */
typedef struct table_prefetch_stats {
    uint64_t reads;      /* readahead reads queued */
    uint64_t blocks;     /* blocks served from readahead buffers */
    uint64_t seek_reads; /* first-block reads queued by table_iter_prefetch_seek */
} table_prefetch_stats;

/* table_iter_async -- table_iter whose block reads go through `ring` (held
 * by the caller until the iterator is destroyed; NULL: table_iter), with
 * adaptive readahead (table_iter.c) counted in *st (may be NULL). Same
 * entries, errors and checks as table_iter. */
tkv_it *table_iter_async(table *t, io_ring *ring, table_prefetch_stats *st);
/* table_iter_sequential -- table_iter_async for a reader that walks the
 * table front to back (a compaction): a readahead run starts with the first
 * block read, and every readahead covers about ra_bytes of whole blocks, two
 * in flight, so the device reads the next while the caller works on one.
 * With no ring or ra_bytes 0: table_iter. */
tkv_it *table_iter_sequential(table *t, io_ring *ring, size_t ra_bytes, table_prefetch_stats *st);
/* table_iter_prefetch_seek -- for an iterator of table_iter_async about to
 * seek to `target`: queues the read of the data block the seek will need
 * (unless it is cached, loaded or already on its way), so that the seeks of
 * several iterators read in parallel. 1 if a read was queued (it is
 * submitted by the next wait on the ring, or io_ring_submit), else 0; never
 * an error (the seek reports it). Any other iterator: 0. */
int table_iter_prefetch_seek(tkv_it *it, tkv_slice target);

/* ---------------------------------------------------------------- whole-table walk */

/* Where the footer puts the metadata blocks, and the filter's geometry. */
typedef struct table_layout {
    block_handle index, filter, props;
    block_handle range_dels; /* the range deletion block (size 0: none, format version 1) */
    uint32_t version;        /* the footer's format version */
    uint64_t data_end;       /* data blocks (with trailers) end at or before this offset */
    uint64_t index_entries;  /* = data blocks */
    size_t filter_bytes;     /* the filter block's size; 0: no filter */
    unsigned filter_probes;  /* k (0 without a filter) */
} table_layout;
/* table_get_layout -- the layout of an open table (for dumps). */
void table_get_layout(const table *t, table_layout *out);

/* What table_check found. */
typedef struct table_check_stats {
    uint64_t data_blocks;       /* index entries walked */
    uint64_t bad_blocks;        /* of those, unreadable (checksum, lz4, structure) */
    uint64_t compressed_blocks; /* stored lz4-compressed */
    uint64_t entries, deletions;
    uint64_t problems; /* problems reported (at most one per data block, plus the table's own) */
} table_check_stats;

/* Callbacks of table_check; each may be NULL. block and entry return 0 to
 * go on, or a positive value that stops the walk and becomes table_check's
 * return value. */
typedef struct table_check_fns {
    /* a problem was found: its code is rc, its message (naming the file,
     * the block offset and what is wrong) is tkv_errmsg() */
    void (*problem)(void *arg, int rc);
    /* data block i (index order) at h was read and decoded: raw_size bytes
     * uncompressed, `separator` its index key */
    int (*block)(void *arg, uint64_t i, block_handle h, tkv_slice separator, size_t raw_size, int compressed);
    /* each entry of the block just announced, in order */
    int (*entry)(void *arg, tkv_slice ikey, tkv_slice value);
} table_check_fns;

/* table_check -- reads every data block of an open table (table_open has
 * already verified the footer, filter, properties and index blocks) without
 * the block cache, and checks each block's checksum and structure, that
 * every key is a valid internal key in strictly increasing order, that each
 * block lies between its index separator and the previous one, that the
 * filter contains every user key, and that the properties (entries,
 * deletions, sequence range, key and value bytes, smallest and largest key,
 * data bytes, compressed blocks) match what the blocks hold. A bad block is
 * reported and the walk goes on with the next one. st (may be NULL) gets
 * the counts. Returns 0 if the table is intact, else the first problem's
 * code (TKV_CORRUPTION, or TKV_IO_ERROR / TKV_NO_MEMORY), with tkv_errmsg()
 * holding that problem's message; or a callback's positive value. */
int table_check(table *t, const table_check_fns *fns, void *arg, table_check_stats *st);

/* ---------------------------------------------------------------- point reads in steps */

/* For readers that batch the block reads of many lookups (sst/multiget.h):
 * table_get is table_locate, then the data block from the cache
 * (table_block_cached) or from bytes the caller read (table_block_parse),
 * then table_block_find. Same answers, errors and counters as table_get. */

/* A data block in use: pinned in the block cache (h != NULL) or owned
 * (h == NULL). */
typedef struct table_block {
    struct cached_block *blk;
    cache_handle *h;
} table_block;

/* table_locate -- the bloom filter, then the index: 1 and *h, the one data
 * block that can hold (ukey, seq); 0 if the table holds no such entry; < 0
 * on error (TKV_INVALID for a key over TKV_MAX_KEY_SIZE, TKV_CORRUPTION). */
int table_locate(table *t, tkv_slice ukey, uint64_t seq, block_handle *h);
/* table_block_cached -- 1 and *b pinned if data block h is in the block
 * cache (a hit is counted), else 0. */
int table_block_cached(table *t, block_handle h, table_block *b);
/* table_block_parse -- data block h from the h.size + SST_TRAILER_SIZE bytes
 * at p (got of them were read: fewer is a truncated file): length, checksum
 * and decompression checked as for a block table_get reads; then cached.
 * 0 and *b, or TKV_CORRUPTION naming the file and offset, TKV_NO_MEMORY. */
int table_block_parse(table *t, block_handle h, const uint8_t *p, size_t got, table_block *b);
/* table_block_find -- table_get's answer for (ukey, seq) in data block h:
 * 1 (type, value copied into val, the entry's sequence in *found_seq when
 * not NULL), 0, < 0. */
int table_block_find(table *t, block_handle h, const table_block *b, tkv_slice ukey, uint64_t seq, ikey_type *type,
                     tkv_buf *val, uint64_t *found_seq);
/* table_block_release -- unpins or frees b (NULL blk ok). */
void table_block_release(table *t, table_block *b);

typedef struct table_read_stats {
    uint64_t bloom_checks, bloom_negatives, block_reads, block_cache_hits;
} table_read_stats;
/* table_get_read_stats -- counters since open: bloom filter consultations and
 * negative answers (table_get + table_may_contain), data blocks read from the
 * file, data blocks found in the cache. */
void table_get_read_stats(table *t, table_read_stats *out);

#endif
