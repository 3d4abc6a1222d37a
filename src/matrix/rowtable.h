// SPDX-License-Identifier: Apache-2.0
/*
 * rowtable.h -- a RowTable: one immutable memtable stored as one row of the
 * matrix container, in pages of a pool (matrix/pool.h). MatrixKV's L0 row,
 * with a header, checksums, sequence numbers and tombstones honoured, and
 * forward pointers that make a lookup, or a seek, over k rows cost about
 * log2(n) + c*k key comparisons instead of k*log2(n).
 * On-media format: docs/format-matrix.md section 5 onwards.
 *
 * Lifecycle (what the engine calls):
 *
 *   flush:     rowtable_build(pool, row_id, memtable_iter(imm), newest_row, &r)
 *                  steps (1) data + metadata persisted, (2) header persisted
 *              rowtable_commit(r)            step (3): the directory slot -- the commit point
 *              (or rowtable_abandon(r) if the flush is given up; a crash before
 *              (3) leaves no row and leaks no page)
 *   recovery:  pool_rows() -> for each: rowtable_open(pool, slot, &r),
 *              rowtable_set_cursor(r, cursor from the MANIFEST),
 *              rowtable_release_dead_pages(r) (idempotent)
 *   read:      rowtable_rows_get(rows newest..oldest, k, ukey, snapshot_seq,
 *                                &res, &value)
 *              rowtable_iters_at(rows, cursors, k, ...) for the merging
 *              iterator (hinted seeks over the rows)
 *   column compaction: after the version edit that installs the L1 files and
 *              the new cursor, and once no reader of an older version remains:
 *              rowtable_set_cursor(r, c); later, once no reader that started
 *              before set_cursor remains AND the edit is durable (MANIFEST
 *              synced -- a release bit persisted before the cursor would make
 *              the row fail to open with the older cursor after a crash):
 *              rowtable_release_dead_pages(r)
 *   drained:   rowtable_drop(r) (slot cleared, then every page freed) once no
 *              reader holds the row
 *
 * Row ids: assigned by the caller, nonzero, unique for the pool's lifetime,
 * larger = newer (the engine draws them from the MANIFEST's next_file
 * counter). Rows passed to rowtable_rows_get must be ordered newest first,
 * with sequence ranges that do not overlap (each row's min_seq > the next's
 * max_seq, as flushes of successive memtables give); rowtable_rows_get stays
 * correct if they overlap, it just searches further.
 *
 * The drain cursor: entries [0, cursor) have moved to L1. Lookups and
 * iterators see only entries [cursor, n) -- the cursor is read once per
 * rowtable_get / per iterator seek. The persisted cursor lives in the
 * MANIFEST (the engine's job); the row only accepts it.
 *
 * Thread safety: after build/open returns, any number of threads may call
 * rowtable_get, rowtable_rows_get, rowtable_iter (each iterator belongs to
 * one thread), rowtable_fwd and the getters concurrently. rowtable_commit, set_cursor,
 * release_dead_pages, drop, abandon and close are called by one thread at a
 * time (the engine's flush/compaction owner); set_cursor may run concurrently
 * with readers. release/drop/abandon/close must not race with readers of the
 * pages they give back (the pool does not track readers).
 *
 * DRAM: no key is copied to DRAM. A row handle costs about 200 bytes plus 13
 * bytes per page (page index, mapped address, released flag) plus its key
 * filter, 10 bits (1.25 bytes) per entry, rounded up to 64 bytes (e.g. a
 * 64 MiB row of 60,000 1 KiB entries in 32 x 2 MiB pages: ~75 KiB).
 *
 * Errors: TKV_* codes; tkv_errmsg() names the pool file and the row id.
 *
 * Files (each names its job in its first comment):
 *   rowtable_int.h     private to the files below: byte layout (named
 *                      offsets), struct rowtable, invariants, rt_* helpers
 *   rowtable_media.c   reading a row's bytes: data access, entry decoding,
 *                      key comparison and binary search
 *   rowtable_handle.c  the DRAM handle (alloc, close, getters, props) and
 *                      the key filter
 *   rowtable_build.c   build (persist order), commit, abandon, write-back
 *   rowtable_open.c    open and verify
 *   rowtable_read.c    point lookups (rowtable_get, rowtable_rows_get), the
 *                      lookups column compaction sizes columns with
 *   rowtable_iter.c    iterators (whole row, a view's, a range)
 *   rowtable_seek.c    hinted seeks: the plan the iterators of a view's rows
 *                      share (rowtable_iters_at)
 *   rowtable_drain.c   drain cursor, dead pages and their release, drop
 */
#ifndef TKV_MATRIX_ROWTABLE_H
#define TKV_MATRIX_ROWTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "matrix/pool.h"
#include "util/ikey.h"
#include "util/coding.h"
#include "util/iter.h"
#include "util/rangedel.h"

#define ROWTABLE_FORMAT_VERSION    1
#define ROWTABLE_FORMAT_VERSION_RD 2 /* a row with range tombstones (docs/format-matrix.md 5.2) */
/* A flag in the body's version word, beside 1 or 2: each entry's value field
 * says whether its value is stored as is or as an lz4 block (5.1). Rows are
 * built with it while pool_set_row_compression is on. */
#define ROWTABLE_FLAG_LZ4        0x100u
#define ROWTABLE_META_ENTRY_SIZE 32u
#define ROWTABLE_NO_FWD          UINT32_MAX /* forward pointer of a row built with no older row */
#define ROWTABLE_MAX_ENTRIES     (UINT32_MAX - 1)

typedef struct rowtable rowtable;

/* ---------------------------------------------------------------- build / commit */

/* rowtable_build -- writes the entries of `src` (an internal iterator in
 * strictly increasing ikey_cmp order, e.g. memtable_iter of an immutable
 * memtable; it is read twice, from seek_first, and must yield the same
 * entries both times; not destroyed) as row `row_id` into newly allocated
 * pages of `p`, with forward pointers into `older` (the next-older row, the
 * newest row already in the container; NULL if none). `older` must stay
 * readable during the build (no page of it released: the builder is a reader).
 * Persists data and metadata, then the header; does NOT commit: *out is an
 * uncommitted row, readable at once, which rowtable_commit makes durable.
 * Returns 0 and *out, or TKV_INVALID (keys out of order, oversized key or
 * value, row_id 0, more than ROWTABLE_MAX_ENTRIES entries, `older` of another
 * pool; nothing allocated), TKV_NO_SPACE (the pool has too few free pages,
 * or the file system under it no room for their blocks; the message gives
 * the numbers; nothing allocated -- the engine's back-pressure signal), the source's error, TKV_NO_MEMORY. On error no page
 * stays allocated and *out is NULL. */
int rowtable_build(pool *p, uint64_t row_id, tkv_it *src, const rowtable *older, rowtable **out);
/* rowtable_build_at -- rowtable_build with the forward pointers computed from
 * entry `older_cursor` of `older` on (the cursor of the reader's view the
 * builder belongs to: the engine pins a version whose cursor for `older` is
 * older_cursor, so pages from there on cannot be released under the build).
 * Raised to the older row's own cursor if below it. */
int rowtable_build_at(pool *p, uint64_t row_id, tkv_it *src, const rowtable *older, uint32_t older_cursor,
                      rowtable **out);
/* rowtable_build_rd -- rowtable_build_at for a memtable that also holds
 * range tombstones rd (NULL or empty: none): they are written after the
 * entries, sorted by begin, in a block of the data stream (format version 2),
 * and widen the row's sequence range. A row may hold tombstones and no
 * entry. TKV_INVALID also for a malformed tombstone. */
int rowtable_build_rd(pool *p, uint64_t row_id, tkv_it *src, const rd_list *rd, const rowtable *older,
                      uint32_t older_cursor, rowtable **out);
/* rowtable_commit -- step (3): stores the row's directory slot (pool_commit_row,
 * which on a file system syncs the row's pages before the slot and the slot
 * after it: pool.h invariant 8).
 * 0, TKV_NO_SPACE (directory full; the row stays uncommitted), TKV_INVALID
 * (already committed), TKV_IO_ERROR (a failed sync: the pool's sticky error). */
int rowtable_commit(rowtable *r);
/* rowtable_queue_writeback -- queues every page of the row for the pool's
 * paced write-back (pm_writeback_enqueue; a no-op unless it was started). */
void rowtable_queue_writeback(const rowtable *r);
/* rowtable_writeout_header -- starts writing the row header back now
 * (pm_writeout), so that the commit's sync finds it under way. Where the
 * pool syncs, the build already started each data and metadata page as it
 * finished it; the header is written last. */
void rowtable_writeout_header(const rowtable *r);
/* rowtable_abandon -- for an uncommitted row: frees its pages and the
 * handle. (On a committed row it only closes the handle.) NULL ok. */
void rowtable_abandon(rowtable *r);

/* ---------------------------------------------------------------- open / close */

/* rowtable_open -- opens the committed row in directory slot `slot`:
 * verifies the header checksum, every field against the pool geometry, the
 * checksum of every page not yet released, and the metadata array (offsets in
 * range and increasing, lengths, sequence numbers, forward pointers). The
 * cursor starts at the first entry whose pages were not released.
 * Returns 0 and *out, TKV_INVALID (empty slot), TKV_CORRUPTION (message names
 * the pool file, row id, slot and what failed), TKV_NO_MEMORY. Never reads
 * outside the pool on garbage. */
int rowtable_open(pool *p, uint32_t slot, rowtable **out);
/* rowtable_close -- frees the DRAM handle only. NULL ok. */
void rowtable_close(rowtable *r);
/* rowtable_drop -- a fully drained row goes away: (1) its directory slot is
 * cleared and persisted (pool_remove_row), (2) every page it still holds is
 * freed, (3) the handle is closed. Call once no reader holds the row. On
 * error (slot already empty) nothing is freed and the handle is still closed.
 * NULL ok (returns 0). */
int rowtable_drop(rowtable *r);

/* ---------------------------------------------------------------- properties */

typedef struct rowtable_props {
    uint64_t row_id;
    uint64_t older_row_id; /* the row the forward pointers point into (0: none) */
    uint32_t slot;         /* UINT32_MAX while uncommitted */
    uint32_t entries;
    uint32_t cursor;     /* current drain cursor */
    uint32_t min_cursor; /* lowest cursor the released pages allow */
    uint64_t deletions, min_seq, max_seq;
    uint64_t key_bytes, value_bytes; /* sums of user key / value lengths */
    uint64_t data_bytes;             /* data region (entries + page-end padding) */
    uint64_t meta_bytes;             /* entries x ROWTABLE_META_ENTRY_SIZE */
    uint64_t meta_off;               /* offset of metadata entry 0 in the row's first page (after the header) */
    uint32_t pages, meta_pages, data_pages, pages_released;
    size_t dram_bytes;       /* the handle's DRAM footprint */
    uint64_t num_range_dels; /* range tombstones (format version 2) */
    int lz4;                 /* built with ROWTABLE_FLAG_LZ4 */
    uint64_t lz4_values;     /* values stored as lz4 blocks (counted by the build; 0 for a row opened) */
} rowtable_props;
void rowtable_get_props(const rowtable *r, rowtable_props *out);
uint64_t rowtable_id(const rowtable *r);
uint32_t rowtable_count(const rowtable *r);
uint32_t rowtable_cursor(const rowtable *r);
uint64_t rowtable_max_seq(const rowtable *r);
uint64_t rowtable_min_seq(const rowtable *r);
/* rowtable_range_del_list / rowtable_range_dels -- the row's range
 * tombstones, kept in DRAM from the build or the open (which verified their
 * block): sorted by begin, then seq descending (empty without any), and as
 * fragments (NULL without any). They do not drain with the cursor: which of
 * them still belong to the row is the engine's business (a floor key per
 * row in its MANIFEST). Valid while the handle is. */
const rd_list *rowtable_range_del_list(const rowtable *r);
const rd_frags *rowtable_range_dels(const rowtable *r);
/* rowtable_fwd -- the forward pointer of entry i (cursor <= i < count): the
 * index of the first entry of the older row whose internal key is >= entry
 * i's (clamped up to the older row's cursor at build time); ROWTABLE_NO_FWD
 * for a row built without an older row, or for i outside [cursor, count). */
uint32_t rowtable_fwd(const rowtable *r, uint32_t i);

/* ---------------------------------------------------------------- lookups */

/* A search window for one row, produced from the next-newer row's forward
 * pointers: the lower bound of the target lies in [lo, hi] of the row whose
 * id is row_id (hi may be the entry count; UINT32_MAX means "the end").
 * Entries lo..hi-1 are searched, entry hi only bounds the search. A hint for
 * another row (a broken chain: a row in between was dropped) is ignored. A
 * zeroed row_hint means "no hint". */
typedef struct row_hint {
    uint64_t row_id;
    uint32_t lo, hi;
} row_hint;

/* Lookup outcome and counters. Zero it before the first call: rowtable_get
 * overwrites type/seq/row_index and ADDS to the counters, so one struct
 * passed through rowtable_rows_get totals them over the rows. */
typedef struct row_get_result {
    ikey_type type;        /* IKEY_VALUE or IKEY_DELETION when found */
    uint64_t seq;          /* sequence number of the entry found */
    size_t row_index;      /* rowtable_rows_get: index in rows[] of the row that answered */
    uint64_t comparisons;  /* key comparisons (target vs an entry), always counted */
    uint64_t media_probes; /* pm_read_delay accesses charged (metadata + data reads) */
    uint32_t rows_searched, hints_used, hints_rejected;
    uint32_t rows_filtered; /* with ROWTABLE_ROWS_GET_FILTER: rows the key filter ruled out */
} row_get_result;

/* rowtable_get -- the newest entry of user key `ukey` with seq <= `snap`
 * (values above IKEY_MAX_SEQ mean "newest") among entries [cursor, n).
 * hint_in (may be NULL) narrows the search: it is clamped to the live entries
 * and its edges are verified (entry lo-1 < target <= entry hi); if they do
 * not hold, the row is binary-searched in full (hints_rejected counts it).
 * hint_out (may be NULL) receives the window for the next-older row, from the
 * forward pointers around the lower bound found here. Returns 1 if an entry
 * was found (res->type tells a value from a deletion; the value is copied into
 * *value -- value->len set, memory reused -- unless value is NULL; a deletion
 * leaves value->len 0), 0 if none, <0 on error (TKV_CORRUPTION naming the row,
 * TKV_NO_MEMORY). */
int rowtable_get(const rowtable *r, tkv_slice ukey, uint64_t snap, const row_hint *hint_in, row_get_result *res,
                 tkv_buf *value, row_hint *hint_out);

/* rowtable_get_at -- rowtable_get for a reader whose view has drain cursor
 * `cursor` for this row: entries [max(cursor, row cursor), n) are searched.
 * The engine keeps each row's own cursor (rowtable_set_cursor) at the
 * smallest cursor of any live view, so that pages a view can reach are never
 * released, and passes the view's cursor here. */
int rowtable_get_at(const rowtable *r, uint32_t cursor, tkv_slice ukey, uint64_t snap, const row_hint *hint_in,
                    row_get_result *res, tkv_buf *value, row_hint *hint_out);

/* rowtable_rows_get -- looks ukey up in rows[0..k) (newest first; NULL
 * entries are skipped), passing each row's hint to the next; stops at the
 * first row that has a visible entry (unless an older row's max_seq is above
 * that entry's seq, which flushes never produce). A row whose min_seq is
 * above snap is skipped unsearched. Same returns as rowtable_get;
 * res->row_index names the row that answered. */
int rowtable_rows_get(rowtable *const *rows, size_t k, tkv_slice ukey, uint64_t snap, row_get_result *res,
                      tkv_buf *value);
/* rowtable_rows_get_at -- rowtable_rows_get with a view cursor per row
 * (cursors[i] for rows[i], as rowtable_get_at; cursors NULL = each row's own
 * cursor). A row with no live entry in the view is skipped. With
 * ROWTABLE_ROWS_GET_FILTER a row whose key filter rules ukey out is skipped
 * too (res->rows_filtered); the next row searched then starts without a
 * window. */
#define ROWTABLE_ROWS_GET_FILTER 1u
int rowtable_rows_get_at(rowtable *const *rows, const uint32_t *cursors, size_t k, tkv_slice ukey, uint64_t snap,
                         unsigned flags, row_get_result *res, tkv_buf *value);

/* rowtable_key_hash -- the hash the key filter uses for a user key. */
uint64_t rowtable_key_hash(tkv_slice ukey);
/* rowtable_may_contain -- 0 if the row's DRAM key filter says the user key
 * with this hash is in none of its entries (built over every entry at build,
 * over the live ones at open; ~1.2 % false positives at 10 bits per key, one
 * cache miss), 1 if it may be. */
int rowtable_may_contain(const rowtable *r, uint64_t key_hash);

/* rowtable_iter -- an internal iterator (util/iter.h) over entries [cursor,
 * n) in ikey order: seek_first/seek_last/seek/next/prev. key()/value() point
 * into the pool when the entry lies in one page, else into the iterator's
 * scratch; valid until it moves. Seek targets must be internal keys (shorter
 * than IKEY_TRAILER: status TKV_INVALID). The cursor is read at each seek.
 * The row must outlive the iterator. NULL on out of memory. */
tkv_it *rowtable_iter(const rowtable *r);
/* rowtable_iter_at -- an iterator over entries [max(cursor, row cursor), n):
 * a view's iterator (see rowtable_get_at). */
tkv_it *rowtable_iter_at(const rowtable *r, uint32_t cursor);
/* rowtable_willneed -- starts reading the pages of entries [from, to) into
 * the page cache in the background (rowtable_read.c); best effort. */
void rowtable_willneed(const rowtable *r, uint32_t from, uint32_t to);
/* rowtable_iter_range -- an iterator over entries [max(from, row cursor),
 * min(to, n)) only: one row's share of a column compaction. */
tkv_it *rowtable_iter_range(const rowtable *r, uint32_t from, uint32_t to);

/* Seek counters of rowtable_iters_at. Added to with relaxed atomics, so one
 * struct may total the iterators of many threads. */
typedef struct row_seek_stats {
    uint64_t seeks;                      /* rounds: the rows sought to one target, in order (a merging
                              * iterator's seek, or its re-seek at a change of direction) */
    uint64_t rows_searched;              /* rows searched for a round */
    uint64_t comparisons;                /* key comparisons (target vs an entry) */
    uint64_t hints_used, hints_rejected; /* windows whose edges held / did not (then a binary search) */
} row_seek_stats;

/* rowtable_iters_at -- out[i] = an iterator over rows[i] as
 * rowtable_iter_at(rows[i], cursors[i]) (rows newest first, as for
 * rowtable_rows_get_at; cursors NULL = each row's own), for a merging
 * iterator. Their seeks share a plan: a seek of out[i] finds the same entry
 * as rowtable_iter_at's, but with ROWTABLE_SEEK_HINTS in flags, when the
 * iterators are sought to one target in increasing i (as a merging
 * iterator seeks its children), only the first row is binary-searched; each
 * further row is searched inside the window the forward pointers around the
 * answer in the row before it give (docs/format-matrix.md section 5.4), and
 * binary-searched if the window's edges do not hold, the chain is broken (a
 * row between them was dropped) or the row before it has no live entry.
 * Without the flag every row is binary-searched. Counters go to *stats
 * (may be NULL). The k iterators belong to one thread together; rows must
 * outlive them. 0, or TKV_NO_MEMORY (out[] all NULL). */
#define ROWTABLE_SEEK_HINTS 1u
int rowtable_iters_at(rowtable *const *rows, const uint32_t *cursors, size_t k, unsigned flags, row_seek_stats *stats,
                      tkv_it **out);

/* ---------------------------------------------------------------- column compaction support */

/* rowtable_upper_bound -- *out = the first index in [max(from, row cursor), n)
 * whose user key is > ukey (n if none): the row's new cursor after a column
 * that ends at ukey. 0 or TKV_CORRUPTION. */
int rowtable_upper_bound(const rowtable *r, uint32_t from, tkv_slice ukey, uint32_t *out);
/* rowtable_lower_bound -- *out = the first index in [max(from, row cursor),
 * n) whose user key is >= ukey (n if none). 0 or TKV_CORRUPTION. */
int rowtable_lower_bound(const rowtable *r, uint32_t from, tkv_slice ukey, uint32_t *out);
/* rowtable_data_offset -- data-stream offset of entry i (data_bytes for
 * i == n), for sizing columns: entries [i, j) occupy offset(j) - offset(i)
 * bytes (padding included). i must be >= the row's cursor (TKV_INVALID). */
int rowtable_data_offset(const rowtable *r, uint32_t i, uint64_t *off);
/* rowtable_user_key -- copies the user key of entry i (row cursor <= i < n)
 * into *out (out->len set). 0, TKV_INVALID, TKV_CORRUPTION, TKV_NO_MEMORY. */
int rowtable_user_key(const rowtable *r, uint32_t i, tkv_buf *out);

/* ---------------------------------------------------------------- drain cursor */

/* rowtable_set_cursor -- entries [0, cursor) have moved to L1 and no reader
 * needs them any more. The cursor only moves forward. Returns 0, TKV_INVALID
 * (cursor > count or below the current cursor), TKV_CORRUPTION (below the
 * entries whose pages were already released -- the MANIFEST and the pool
 * disagree; the message names the row). */
int rowtable_set_cursor(rowtable *r, uint32_t cursor);
/* rowtable_dead_pages -- the row's pages lying entirely below the cursor and
 * not yet released (metadata pages after the header page, and data pages),
 * as page-list indexes into list[0..cap); returns how many there are (may
 * exceed cap). The header page is never dead. */
size_t rowtable_dead_pages(const rowtable *r, uint32_t *list, size_t cap);
/* rowtable_release_dead_pages -- gives every dead page back to the pool
 * (pool_row_release: persisted release bit, then free). Committed rows only.
 * Call once no reader that could have read the old cursor remains. Returns 0
 * (and *released, may be NULL) or an error of pool_row_release. */
int rowtable_release_dead_pages(rowtable *r, uint32_t *released);

#endif
