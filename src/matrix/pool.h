// SPDX-License-Identifier: Apache-2.0
/*
 * pool.h -- the persistent-memory pool under the matrix container: one
 * pm_region (emul/pmem.h) cut into fixed-size pages, plus a directory of
 * committed *rows* (multi-page objects such as RowTables, rowtable.h).
 * On-media format: docs/format-matrix.md sections 1-4.
 *
 *   offset 0              pool header (4 KiB): magic, version, geometry, uuid, checksum
 *   4096                  row directory: dir_slots x u64
 *   pages_offset          page 0 | page 1 | ... | page page_count-1
 *
 * A row is a list of pages whose first page starts with a *row header*: a
 * pool-defined root (magic, length, row id, page count) around an
 * owner-defined body (the RowTable fields), then the page list, a checksum,
 * and a release bitmap (one bit per listed page, outside the checksum).
 *
 * Invariants (the pool keeps 1-3 and 6-8, the caller keeps 4-5):
 *  (1) A directory slot is 0 (empty) or (row_id_low32 << 32 | first_page + 1)
 *      naming the first page of a committed row whose header verifies. The
 *      8-byte persisted store of a slot is the commit point of a row (and
 *      storing 0 is the commit point of its removal).
 *  (2) Ownership, rebuilt at pool_open from committed rows only:
 *        a page is in use  <=>  some committed row lists it and has not
 *                               marked it released in its release bitmap;
 *      every other page is free. So a row whose build was interrupted before
 *      its slot was committed leaks nothing: its pages are free after reopen
 *      by construction. A page listed (unreleased) by two rows, or out of
 *      range, is TKV_CORRUPTION.
 *  (3) Geometry (page size, page count, directory size, offsets) is read from
 *      the header on reopen, never derived from options.
 *  (4) The pool does not track readers. A page may be freed or released only
 *      when no reader can reach it any more; that is the caller's decision
 *      (the engine defers it until every superversion that could see the
 *      page is gone).
 *  (5) A row's slot is cleared (pool_remove_row) before its pages are freed,
 *      so that a slot never names a page that was handed out again. (The
 *      row-id check in the slot catches a violation at the next open.)
 *  (6) Disk space follows the pages in use (a sparse pool file, pmem.h):
 *      a page's file blocks are allocated (pm_reserve) before the page is
 *      handed out; the header and directory are allocated at open. So no
 *      store of the engine lands in a hole (which on a full file system
 *      would be a SIGBUS). A freed page keeps its blocks (and its hot page
 *      cache) while the pool is busy; pool_trim gives them back once the
 *      pool has been idle a while, and at once when a reservation finds the
 *      file system full; pool_open and pool_close give back those of
 *      every free page.
 *      The prefault thread's writable population of the pages just past
 *      the highest handed out (pool_prefault_ahead; writable only where the
 *      pool does not sync, (8)) reserves their blocks too, one row's worth at most (delayed allocation; never a SIGBUS:
 *      a full file system only makes it populate readable); pool_trim
 *      gives those back with the rest.
 *  (7) A page past the high-water mark (1 + the highest page in use at
 *      open or handed out since) holds nothing anyone needs: allocation
 *      takes the lowest free index, so no such page has been handed out in
 *      this open, and at open it was free (2). The prefault thread may
 *      therefore create those pages by writing zeros (pm_prefault_zero,
 *      cheaper than faulting each 4 KiB in); pool_alloc_pages raises the
 *      thread's zero floor past every page it hands out (pm_prefault_claim,
 *      which waits for a zero write in flight below it) before it returns,
 *      so no zero lands on a page after the caller got it.
 *  (8) Sync barriers (pm_needs_sync: emulated pmem on a file system, where
 *      a persist reaches the page cache and the kernel writes pages back in
 *      any order; a power cut keeps what a pool_sync -- fdatasync -- covered
 *      and any subset of the rest). The pool keeps the DAX order with
 *      syncs where DAX has fences that matter across pages:
 *      (a) pool_commit_row syncs before the slot store: a slot on the device
 *          names a row whose pages and header are on the device;
 *      (b) and after it: the caller logs the MANIFEST edit that names the
 *          row only once the slot is on the device;
 *      (c) a page given back (a release bit, a removed row's pages, an
 *          abandoned build) waits in *limbo* -- neither free nor handed out,
 *          not punched -- until a pool_sync that began after the give-back
 *          returned: a committed row that still lists the page on the
 *          device finds its bytes unchanged after a power cut, so the row
 *          verifies (and the MANIFEST cursor above it is honoured);
 *          pool_alloc_pages syncs when it needs limbo's pages;
 *      (d) a new pool's header and directory are synced (and the file's
 *          directory entry) before pool_open returns, so the uuid the
 *          MANIFEST records next is on the device; pool_open syncs once
 *          more before it punches free pages (after a process crash the page
 *          cache may hold releases the device has not seen).
 *      Stores between syncs may reach the device in any order; every state
 *      that mixes them is one the DAX order also allows (docs/pmem.md).
 *
 * Thread safety: page allocation, freeing, release, commit and removal are
 * serialized by a mutex inside the pool and may be called from any thread.
 * pool_page_addr and the geometry getters are lock-free. pool_close must not
 * race with anything.
 *
 * Errors: TKV_* codes; tkv_errmsg() names the pool file.
 */
#ifndef TKV_MATRIX_POOL_H
#define TKV_MATRIX_POOL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "emul/pmem.h"

#define POOL_FORMAT_VERSION         1
#define POOL_HEADER_SIZE            4096u /* the header block at offset 0 */
#define POOL_DEFAULT_DIR_SLOTS      1024u /* row directory entries (8 bytes each) */
#define POOL_MAX_DIR_SLOTS          65536u
#define POOL_MIN_PAGE_SIZE          (64u << 10) /* default page size is clamped to [64 KiB, 2 MiB] */
#define POOL_MAX_PAGE_SIZE          (2u << 20)
#define POOL_MIN_PAGE_SIZE_OVERRIDE 4096u /* smallest explicit page size (tests) */
#define POOL_PAGE_NONE              UINT32_MAX

/* Options used only when the pool is created; an existing pool's geometry
 * always comes from its header. Zero-initialise for defaults. */
typedef struct pool_options {
    uint32_t page_size; /* 0: pool_size / 512 rounded down to a power of two, clamped to [64 KiB, 2 MiB];
                         * else a power of two in [4 KiB, 2 MiB] */
    uint32_t dir_slots; /* 0: 1024; else 1..65536 */
} pool_options;

typedef struct pool pool;

/* pool_default_page_size -- the page size the pool chooses for a pool of
 * `pool_size` bytes: pool_size/512 rounded down to a power of two, clamped to
 * [64 KiB, 2 MiB]. (16 MiB -> 64 KiB, 64 MiB -> 128 KiB, >= 1 GiB -> 2 MiB.) */
uint32_t pool_default_page_size(uint64_t pool_size);

/* pool_open -- opens the pool in file `path` (pm_open with mode/profile),
 * creating and formatting it with `size` bytes if the file does not exist
 * (size 0 then is TKV_INVALID). For an existing file, size 0 means "its
 * size"; any other size must equal it. A file whose header block is all zeros
 * (a creation interrupted before its header was persisted) is formatted as
 * new. Reads the directory, verifies every committed row's header and
 * rebuilds the free-page bitmap (invariant 2). `o` may be NULL (defaults;
 * ignored for an existing pool). *created (may be NULL) tells whether the pool
 * was formatted by this call.
 * Returns 0 and *out, or TKV_INVALID (bad size/options, geometry that cannot
 * hold a row spanning the whole pool), TKV_CORRUPTION (bad magic, checksum,
 * version or geometry in the header; a committed row whose header fails to
 * verify or whose pages collide -- the message names the pool file and, for a
 * row, its id and directory slot), TKV_IO_ERROR, TKV_NO_MEMORY. *out is NULL
 * on error. */
int pool_open(const char *path, uint64_t size, pm_mode mode, pm_profile profile, const pool_options *o, pool **out,
              int *created);
/* pool_open_readonly -- opens the existing pool at `path` to look at it
 * without changing anything (tkv_verify, tkv dump-matrix): a read-only
 * mapping (pm_open_readonly), a shared flock on the file, the header
 * verified and every committed row's header and page ownership checked as
 * pool_open does (invariant 2), but nothing formatted, reserved or given
 * back, and no thread started. Allocation, commit, removal and release must
 * not be called on it (a persist into it is refused: pool_error). Returns
 * 0 and *out; 1 (*out NULL) for a file whose header and directory are all
 * zero (a creation cut short, which pool_open would format); TKV_BUSY while
 * a database has the pool open (pool_open's lock is exclusive, this one is
 * shared: while it is held, pool_open gets TKV_BUSY); otherwise pool_open's
 * errors. */
int pool_open_readonly(const char *path, pool **out);
/* pool_close -- gives back the blocks of every free page (a pool opened
 * with pool_open and no error), closes the region (its msync) and frees the
 * pool. Every rowtable of the pool must be closed first. Returns 0 or the
 * region's error (pool_error, or the msync of the close); NULL is a no-op
 * returning 0. */
int pool_close(pool *p);
/* pool_sync -- invariant 8: everything stored into the pool before the call
 * is on the device when it returns 0, and the pages in limbo before it go
 * free. 0 at once where persists are durable by themselves (pmem, msync,
 * crashsim) or never (volatile). A failure is the pool's sticky error
 * (pool_error). Thread-safe; not under the pool's mutex (it takes it). */
int pool_sync(pool *p);
/* pool_error -- 0, or TKV_IO_ERROR once a persist into the pool has failed
 * (pm_error: sticky; tkv_errmsg() says which). The engine checks it before
 * each commit point that relies on the pool's earlier persists. */
int pool_error(pool *p);

/* pool_file_uuid -- the uuid in the header of the pool file at `path`,
 * read without opening the pool (no lock, no mapping: for tkv_destroy).
 * 0, TKV_CORRUPTION (no valid pool header), or the error of open/read. */
int pool_file_uuid(const char *path, uint8_t uuid[16]);

/* Geometry and identity (constant after open). */
/* pool_set_row_compression / pool_row_compression -- whether rows built from
 * now on store their values as lz4 blocks where that saves at least 1/8
 * (ROWTABLE_FLAG_LZ4, rowtable.h). Off after pool_open. Rows already built
 * keep their format: a pool holds both kinds. */
void pool_set_row_compression(pool *p, int lz4);
int pool_row_compression(const pool *p);
const char *pool_path(const pool *p);
pm_region *pool_region(pool *p);
uint32_t pool_page_size(const pool *p);
uint32_t pool_page_shift(const pool *p); /* log2(page_size) */
uint32_t pool_page_count(const pool *p);
uint32_t pool_dir_slots(const pool *p);
const uint8_t *pool_uuid(const pool *p); /* 16 bytes, random at creation */
/* pool_willneed_pages -- asks for pages[0..n) to be read into the page
 * cache in the background (pm_willneed); best effort, lock-free. */
void pool_willneed_pages(pool *p, const uint32_t *pages, uint32_t n);
/* pool_page_addr -- the mapped address of page `page` (< page_count). */
uint8_t *pool_page_addr(pool *p, uint32_t page);

/* The header's fields (docs/format-matrix.md section 2), for dumps. */
typedef struct pool_header {
    uint64_t pool_size;
    uint32_t page_size, page_count;
    uint64_t dir_offset;
    uint32_t dir_slots;
    uint64_t pages_offset;
    uint8_t uuid[16];
} pool_header;
/* pool_header_info -- the geometry and uuid of an open pool. */
void pool_header_info(const pool *p, pool_header *out);
/* pool_dir_slot -- the raw value of directory slot s (0: empty; else
 * row_id_low32 << 32 | first_page + 1), 0 past the directory; for dumps. */
uint64_t pool_dir_slot(pool *p, uint32_t s);

typedef struct pool_stats {
    uint64_t pool_size; /* bytes of the pool file */
    uint32_t page_size;
    uint32_t pages_total;
    uint32_t pages_free;  /* free pages, those in limbo included (invariant 8: free at the next pool_sync) */
    uint32_t pages_limbo; /* of those, pages whose release waits for a sync */
    uint32_t rows;        /* committed rows (non-empty directory slots) */
    uint32_t dir_slots;
    uint64_t pages_allocated; /* pages pool_alloc_pages handed out since open (monotonic: a
                               * caller can tell whether an allocation happened since) */
} pool_stats;
/* pool_get_stats -- a consistent snapshot of the counters. */
void pool_get_stats(pool *p, pool_stats *out);

typedef struct pool_space_stats {
    uint64_t used;             /* header + directory + pages in use, bytes */
    uint64_t allocated;        /* file system blocks the pool file occupies, bytes */
    uint64_t discarded;        /* bytes given back to the file system since open */
    uint64_t trimmed;          /* of those, bytes pool_trim punched again */
    uint64_t reserve_failures; /* page allocations refused for want of disk space (or an I/O error) */
} pool_space_stats;
/* pool_space -- the pool file's disk footprint against what it holds. 0 or
 * TKV_IO_ERROR (fstat). */
int pool_space(pool *p, pool_space_stats *out);
/* pool_trim -- gives back the blocks of every free page that has any
 * (found with SEEK_DATA: freed pages, which keep theirs, and a page a
 * neighbour's large page-cache folio gave blocks again, pages the prefault
 * thread populated ahead of the rows) and returns the bytes punched. The
 * prefault thread's outstanding request is cancelled first
 * (pm_prefault_cancel). The page being punched is kept from allocation
 * meanwhile.
 * With idle_us > 0 it does nothing, and returns UINT64_MAX, unless no page
 * was allocated, and no pool_prefault_ahead asked for pages, for that long
 * (the engine's idle column thread calls it so: under a stream of writes
 * freed pages are recycled hot, and the request made at open is not
 * cancelled before the first row gets its pages). pool_alloc_pages
 * calls it (idle_us 0) when a reservation finds the file system full.
 * Thread-safe. */
uint64_t pool_trim(pool *p, uint64_t idle_us);

/* ---------------------------------------------------------------- pages */

/* pool_alloc_pages -- allocates n pages (lowest free indexes first), all or
 * nothing, into pages[0..n), their file blocks allocated (invariant 6).
 * Returns 0 or TKV_NO_SPACE (fewer than n free, the message gives the
 * numbers; or the file system holding the pool has no room for their blocks,
 * the message says so) or TKV_IO_ERROR; on error nothing is allocated. The
 * pages' contents are whatever was there before (zeros for a page that was
 * given back). */
int pool_alloc_pages(pool *p, uint32_t n, uint32_t *pages);
/* pool_prefault_ahead -- keeps the pages a new row will get resident ahead
 * of it: from now on the pool asks its region (pm_prefault_upto) for every
 * page up to `bytes` past the highest page handed out so far (or, if more,
 * as many pages past it as the last allocation took). Allocation is lowest
 * free index first, so a page above that high-water mark has never been
 * written in this open; pages below it were touched by earlier rows. Where
 * the pool syncs (invariant 8) the pages are made clean and readable
 * (pm_prefault_clean), else writable and created by writing zeros. 0 (the
 * default) asks for nothing. Thread-safe. */
void pool_prefault_ahead(pool *p, uint64_t bytes);
/* pool_alloc_page -- one page. 0 or TKV_NO_SPACE. */
int pool_alloc_page(pool *p, uint32_t *page);
/* pool_free_page -- returns a page to the free list (nothing persisted; its
 * blocks stay until pool_trim). For pages of
 * an uncommitted row, or of a removed row (after pool_remove_row), once no
 * reader can reach them (invariant 4). Freeing a free or out-of-range page is
 * a bug: it is ignored (and counted in stats as nothing). */
void pool_free_page(pool *p, uint32_t page);

/* ---------------------------------------------------------------- row headers */

#define POOL_ROW_MAGIC         0x31574f52564b5454ull /* "TTKVROW1" little-endian */
#define POOL_ROW_ROOT_SIZE     32u                   /* root fields before the owner's body */
#define POOL_ROW_KIND_ROWTABLE 1u

/* pool_row_header_area -- bytes the header of a row with a body of body_len
 * bytes and npages pages occupies at the start of its first page (root + body
 * + page list + checksum, then the release bitmap, 8-aligned). The header
 * must fit in the first page. */
size_t pool_row_header_area(uint32_t body_len, uint32_t npages);

/* pool_row_write_header -- step (2) of a row's persist order (see
 * rowtable_build.c): encodes the header of row `row_id` (kind, body, page list
 * pages[0..npages), checksum, zeroed release bitmap) into the start of page
 * pages[0] and persists it (one pm_memcpy_persist). The caller has already
 * persisted every other byte of the row. Returns 0, TKV_INVALID (header
 * larger than a page, row_id 0, npages 0) or TKV_NO_MEMORY. */
int pool_row_write_header(pool *p, uint64_t row_id, uint16_t kind, const void *body, uint32_t body_len,
                          const uint32_t *pages, uint32_t npages);

/* A verified row header, pointing into the mapping (valid while the row is
 * committed and its first page not freed). */
typedef struct pool_row {
    uint32_t slot; /* directory slot (UINT32_MAX if read by page, uncommitted) */
    uint64_t row_id;
    uint16_t kind;
    uint32_t first_page;
    uint32_t npages;
    const uint8_t *body; /* body_len bytes */
    uint32_t body_len;
    const uint8_t *pages;           /* npages x u32 little-endian page indexes (pool_row_page) */
    const uint64_t *release_bitmap; /* ceil(npages/64) words; bit j = page j released */
} pool_row;

static inline uint32_t pool_row_page(const pool_row *r, uint32_t j)
{
    uint32_t v;
    memcpy(&v, r->pages + 4 * (size_t)j, 4);
    return v;
}
static inline int pool_row_released(const pool_row *r, uint32_t j)
{
    return (int)((__atomic_load_n(&r->release_bitmap[j / 64], __ATOMIC_ACQUIRE) >> (j % 64)) & 1);
}

/* pool_row_read -- reads and verifies the header of the committed row in
 * directory slot `slot` (magic, length, checksum, row-id check, page range).
 * Returns 0 and *out, TKV_INVALID if the slot is empty or out of range, or
 * TKV_CORRUPTION naming the pool file, row and slot. */
int pool_row_read(pool *p, uint32_t slot, pool_row *out);
/* pool_row_read_page -- the same for a row header at `first_page` that need
 * not be committed (for the builder, tests). */
int pool_row_read_page(pool *p, uint32_t first_page, pool_row *out);

/* pool_commit_row -- step (3): verifies the header at first_page (it must
 * name row_id), takes the lowest empty directory slot and stores
 * (row_id_low32 << 32 | first_page + 1) with pm_store8_persist: the row
 * exists from this store on. Returns 0 and *slot, TKV_NO_SPACE (directory
 * full), TKV_INVALID (row_id 0, or the row is already committed),
 * TKV_CORRUPTION (header does not verify). */
int pool_commit_row(pool *p, uint32_t first_page, uint64_t row_id, uint32_t *slot);
/* pool_remove_row -- stores 0 into `slot` and persists it: the row no longer
 * exists after a crash from here on. Does NOT free its pages (invariant 4:
 * the caller frees them once no reader holds them). 0 or TKV_INVALID. */
int pool_remove_row(pool *p, uint32_t slot);
/* pool_drop_row -- removes the committed row in `slot` without opening it
 * as its owner would (recovery of a row the engine no longer knows): (1)
 * pool_remove_row, then (2) frees every page its header lists and has not
 * released. The caller guarantees no reader holds the row. 0, TKV_INVALID
 * (empty slot), TKV_CORRUPTION (its header no longer verifies; nothing
 * changed), TKV_NO_MEMORY. */
int pool_drop_row(pool *p, uint32_t slot);
/* pool_row_release -- gives back page j (1 <= j < npages; the header page 0
 * is never released) of the committed row whose first page is first_page:
 *   (1) sets bit j of the row's release bitmap and persists that word
 *       (pm_store8_persist) -- from here the page is free after a reopen;
 *   (2) frees the page in DRAM (its blocks stay until pool_trim).
 * Idempotent (an already released page is left alone; returns 0). The
 * caller guarantees no reader can reach the page (invariant 4). 0 or
 * TKV_INVALID. */
int pool_row_release(pool *p, uint32_t first_page, uint32_t j);

/* One committed row, as listed by pool_rows. */
typedef struct pool_row_id {
    uint32_t slot;
    uint64_t row_id;
    uint32_t first_page;
    uint32_t npages;         /* pages listed by the header */
    uint32_t pages_released; /* of those, released */
} pool_row_id;

/* pool_rows -- the committed rows in directory (slot) order, for recovery.
 * *rows is malloc'd (the caller frees it; NULL when *n is 0). Row ids are
 * assigned by the caller (unique for the pool's lifetime, larger = newer), so
 * sort by row_id for newest-to-oldest order. 0 or TKV_NO_MEMORY. */
int pool_rows(pool *p, pool_row_id **rows, size_t *n);

#endif
