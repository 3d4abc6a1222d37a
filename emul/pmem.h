// SPDX-License-Identifier: Apache-2.0
/*
 * pmem.h -- the persistent-memory device under the matrix container: one
 * file mapped into memory, and the persist primitives whose meaning depends
 * on what is underneath.
 *
 * Modes (option pmem_mode):
 *   PM_PMEM      real DAX persistent memory (pmem_is_pmem): persist = CPU
 *                cache flush + fence; survives power loss.
 *   PM_EMULATED  a file mapped with libpmem on an ordinary file system: persist =
 *                CPU cache flush + fence (pmem_persist) into the page cache,
 *                and durability at the owner's sync points (pm_sync: an
 *                fdatasync of the pool file). A persisted store survives a
 *                process crash at once and a power cut once a pm_sync that
 *                began after it has returned; before that, any subset of the
 *                dirty pages may be on the device (the kernel writes pages
 *                back in any order). The owner orders its commit points
 *                around pm_sync (matrix/pool.h, docs/pmem.md).
 *   PM_VOLATILE  the same mapping with no sync points (pm_sync does nothing):
 *                survives a process crash, not an OS crash or power cut.
 *                Opt-in only, for ablations and RAM-disk benchmarks.
 *   PM_MSYNC     the same mapping, persist = msync of the touched pages
 *                (pmem_msync): survives an OS crash; ~140 us per call here.
 *   PM_CRASHSIM  for tests: the engine works on a private volatile image; only
 *                pm_persist'ed byte ranges (widened to 64-byte cache lines) are
 *                copied to the durable file. A test can "cut power" at the
 *                N-th persist call (pm_crashsim_cut_at): from then on persists
 *                copy nothing, so reopening the file shows exactly what a power
 *                failure at that point would leave.
 *   PM_AUTO      PM_PMEM if the mapping is real pmem, else PM_EMULATED.
 * pm_sync is a no-op in PM_PMEM, PM_MSYNC and PM_CRASHSIM, where a persist is
 * durable (or, in crashsim, counted as such) when it returns.
 *
 * Profile (option emul_profile): PM_PROFILE_OPTANE adds ~300 ns per
 * pm_read_delay() access and limits pm_memcpy_persist to ~2 GB/s, so
 * benchmarks on emulated pmem are not flattered by DRAM speed. Default none.
 *
 * Persist calls are thread-safe for disjoint ranges (as the hardware is).
 * Errors: TKV_* codes with tkv_errmsg() naming the file. The persist
 * primitives return nothing: a failed one records the region's sticky error
 * (pm_error), which the caller checks before a commit point.
 *
 * Space: on a file system (every mode but PM_PMEM) the pool file is sparse.
 * Its owner reserves the blocks of a range before storing into it
 * (pm_reserve: ENOSPC there is TKV_NO_SPACE, where a store into a hole of a
 * full file system would be a SIGBUS) and gives them back when the range is
 * free again (pm_discard). On PM_PMEM the file is allocated in full.
 */
#ifndef TKV_EMUL_PMEM_H
#define TKV_EMUL_PMEM_H

#include <stddef.h>
#include <stdint.h>

typedef enum pm_mode { PM_AUTO = 0, PM_PMEM, PM_EMULATED, PM_MSYNC, PM_CRASHSIM, PM_VOLATILE } pm_mode;
typedef enum pm_profile { PM_PROFILE_NONE = 0, PM_PROFILE_OPTANE } pm_profile;

/* pm_mode_name -- "auto", "pmem", "emulated", "msync", "crashsim", "volatile". */
const char *pm_mode_name(pm_mode m);

typedef struct pm_region pm_region;

/* pm_open -- maps `path`. If the file does not exist and size > 0 it is created
 * with that size (zero-filled; sparse, except with PM_PMEM); if it exists, size 0 means "its current size"
 * and any other size must equal it (else TKV_INVALID naming both sizes: the
 * caller decides about resizing). *created tells which happened (may be NULL).
 * PM_PMEM on a non-pmem mapping is TKV_INVALID with a clear message.
 * A pool size (new or existing) must be a multiple of 4096 (TKV_INVALID); a missing file
 * with size 0 is TKV_INVALID; a pool this call created is removed again if
 * the open then fails. */
int pm_open(const char *path, uint64_t size, pm_mode mode, pm_profile profile, pm_region **out, int *created);
/* pm_open_readonly -- maps the existing pool file at `path` for reading only
 * (PROT_READ, MAP_SHARED): no file is created, no block reserved or given
 * back, no thread started, and pm_close does not msync. For looking at a
 * pool without touching it (tkv_verify, tkv dump-matrix); the caller takes
 * whatever lock it needs. The mode reads as PM_EMULATED, the profile none;
 * every persist call on the region is refused (pm_error: TKV_IO_ERROR).
 * Returns 0 and *out, or TKV_INVALID (not a regular file, empty), the error
 * of open or mmap (TKV_IO_ERROR, TKV_NO_MEMORY). */
int pm_open_readonly(const char *path, pm_region **out);
/* pm_close -- unmaps (after an msync in PM_EMULATED and PM_VOLATILE modes, so
 * a clean close survives an OS crash too) and frees r. Returns 0, or the region's error
 * (pm_error: an earlier failed persist, or the msync of this close).
 * NULL is a no-op returning 0. */
int pm_close(pm_region *r);

uint8_t *pm_base(pm_region *r);
uint64_t pm_size(pm_region *r);
pm_mode pm_mode_in_use(pm_region *r); /* never PM_AUTO */
pm_profile pm_profile_in_use(pm_region *r);
/* pm_profile_write_bw -- the write bandwidth (bytes/s) profile p paces
 * persists to (PM_PROFILE_OPTANE: 2 GB/s); 0 for none (not paced). */
uint64_t pm_profile_write_bw(pm_profile p);

/* pm_persist -- makes [addr, addr+len) durable (flush + fence, or msync).
 * No error channel: a failed msync, or a range outside the pool (skipped),
 * records the region's error (pm_error) and the call returns; the range's
 * durability is then unknown. */
void pm_persist(pm_region *r, const void *addr, size_t len);
/* pm_error -- 0, or the region's sticky error (TKV_IO_ERROR, tkv_errmsg()
 * naming the pool, the call and the system's error): the first persist of
 * the region that failed. Callers check it before a commit point that relies
 * on earlier persists. Thread-safe. */
int pm_error(pm_region *r);
/* pm_flush / pm_drain -- the two halves of pm_persist, to batch many ranges
 * behind one fence (in PM_MSYNC each pm_flush is an msync, pm_drain a no-op). */
void pm_flush(pm_region *r, const void *addr, size_t len);
void pm_drain(pm_region *r);
/* pm_sync -- PM_EMULATED: every store into the region made before the call
 * is on the device when it returns 0 (fdatasync of the pool file; the I/O
 * layer's fault hook sees it as IO_OP_SYNC). A failure records the region's
 * sticky error (pm_error) and returns it. 0 at once in every other mode
 * (PM_VOLATILE: nothing is ever made durable before pm_close).
 * pm_needs_sync -- 1 if pm_sync does anything (PM_EMULATED, writable):
 * the owner then must not reuse media whose release it has not synced.
 * Thread-safe. */
int pm_sync(pm_region *r);
int pm_needs_sync(const pm_region *r);
/* pm_memcpy_persist -- copies and persists (non-temporal stores where
 * possible); paced to the profile's write bandwidth. */
void pm_memcpy_persist(pm_region *r, void *dst, const void *src, size_t n);
/* pm_write_through -- 1 if pm_write_persist writes through the pool file
 * (PM_EMULATED and PM_VOLATILE, writable: a page-cache mapping of a file).
 * A writer that fills pages in DRAM and hands each to pm_write_persist
 * then takes no page fault for them: the file's write path creates the
 * page-cache pages in bulk, where the mapping's first store to each 4 KiB
 * page faults (a 64 MiB row: 16,384 faults).
 * pm_write_persist -- the bytes at dst (in the region) become src[0..n),
 * persisted as pm_persist would leave them: where pm_write_through, a
 * pwrite of the file (the I/O layer's fault hook sees IO_OP_WRITE); else
 * pm_memcpy_persist. A failed or short write (EIO, ENOSPC, EDQUOT)
 * records the region's sticky error (pm_error). Only for a range no other
 * thread stores to meanwhile. */
int pm_write_through(const pm_region *r);
void pm_write_persist(pm_region *r, void *dst, const void *src, size_t n);
/* pm_store8_persist -- an 8-byte aligned atomic store, persisted: the
 * commit-point primitive (a power cut leaves either the old or the new
 * value). A misaligned dst is refused (nothing stored; pm_error). */
void pm_store8_persist(pm_region *r, uint64_t *dst, uint64_t value);
/* pm_prefault_upto -- asks the region's background thread to make the
 * mapping up to end (from the start pm_prefault_from set, else from 0)
 * resident and writable ahead of use
 * (MADV_POPULATE_WRITE: page-cache pages allocated, mapped writable and
 * marked dirty, contents unchanged; on a disk file system the blocks of a
 * hole are reserved by delayed allocation), so that the first store to a
 * page takes no fault. A chunk that cannot be populated writable (a full
 * file system) is populated readable (MADV_POPULATE_READ). Requests only
 * grow the prefix; the call returns at once. Best effort: a no-op in
 * PM_CRASHSIM, when the thread could not start, or on a kernel without
 * MADV_POPULATE_READ. */
void pm_prefault_upto(pm_region *r, uint64_t end);
/* pm_prefault_from -- the thread never populates below start: a mapping
 * whose first part must stay sparse (the pool's header area, allocated only
 * where it is used) calls it before its first pm_prefault_upto. Like that
 * call, it only ever moves the point forward. If the chunk in flight starts
 * below start, it waits for that chunk first. */
void pm_prefault_from(pm_region *r, uint64_t start);
/* pm_prefault_zero -- from now on the thread creates the pages of what it
 * populates by writing zeros to the file first, in pieces of `piece` bytes
 * (a power of two, 4 KiB to 64 KiB; larger is clamped, anything else turns
 * it off) aligned to it, so that no page-cache folio it makes is larger than
 * a piece or crosses a piece boundary; the populate then finds the pages
 * there, about 2.5x cheaper per page than populating a hole (one fault per
 * 4 KiB folio). Only at or past the zero floor (pm_prefault_claim; 0 until
 * then), and only for a sparse PM_EMULATED file mapping with the thread
 * running (a no-op otherwise). It changes contents, so the owner promises
 * that nothing past the floor holds data it needs, and raises the floor
 * (pm_prefault_claim) past a range before it stores there. A write that
 * fails (a full file system) leaves the chunk to the populate alone.
 * pm_prefault_claim -- no zeros are written below `end` from now on: raises
 * the floor and waits for a zero write in flight below it (one piece at
 * most). Populating (contents unchanged) goes on as asked. */
void pm_prefault_zero(pm_region *r, uint32_t piece);
void pm_prefault_claim(pm_region *r, uint64_t end);
/* pm_prefault_clean -- from now on the thread makes the page-cache pages
 * clean, through the file (POSIX_FADV_WILLNEED; not mapped, and not under
 * the process's mmap lock), and writes no zeros (pm_prefault_zero is
 * ignored): the pages it makes stay clean, so a pm_sync does not write them
 * to the device. For an owner that syncs while pages ahead wait for their
 * first store: a dirty page ahead would go to the device as zeros at each
 * sync before it is written for real. A write to such a page allocates
 * nothing (a store through the mapping takes a fault that maps it). */
void pm_prefault_clean(pm_region *r);
/* pm_prefault_cancel -- drops what is left of the requests so far and waits
 * for the chunk being populated, if any: when it returns, the thread
 * populates nothing more until a pm_prefault_upto past where it got to, and
 * never goes back below that point. For
 * giving blocks back (pool_trim, pool_close): a hole punched after this call is not
 * populated (and so allocated) again behind the caller's back. A no-op
 * where there is no thread. */
void pm_prefault_cancel(pm_region *r);
/* pm_reserve -- allocates the file's blocks under [off, off+len) (offsets
 * in the pool), so that stores there cannot fault for lack of disk space.
 * 0, TKV_NO_SPACE (the file system is full: ENOSPC, EDQUOT; counted in
 * reserve_failures), TKV_IO_ERROR, TKV_INVALID (outside the pool). The I/O
 * layer's fault hook sees it as IO_OP_FALLOCATE. 0 at once where the file is
 * allocated in full (PM_PMEM). Thread-safe. */
int pm_reserve(pm_region *r, uint64_t off, uint64_t len);
/* pm_discard -- gives the blocks under [off, off+len) back to the file
 * system (a hole: the range reads as zeros afterwards, and must be reserved
 * again before it is stored to). Only for a range no one uses. Best effort:
 * a no-op with PM_PMEM, on a file system without hole punching, and in
 * PM_CRASHSIM after the power cut. Thread-safe. */
void pm_discard(pm_region *r, uint64_t off, uint64_t len);
/* pm_willneed -- asks the kernel to read [off, off+len) of the file into
 * the page cache now, in the background, for a reader about to walk it (a
 * sparse region has no readahead of its own, pmem_space.c). The folios it
 * makes are 4 KiB ones, like the mapping's faults. Best effort: a no-op for
 * a DAX mapping or a range outside the region; resident pages are skipped
 * by the kernel. Thread-safe. */
void pm_willneed(pm_region *r, uint64_t off, uint64_t len);
/* pm_data_after -- the offset of the first byte at or after off that has
 * blocks or dirty page-cache pages (SEEK_DATA), or UINT64_MAX if none (or
 * the region is not sparse, or the file system cannot tell). */
uint64_t pm_data_after(pm_region *r, uint64_t off);
/* pm_space -- *allocated = bytes of the file system the pool file occupies
 * (its blocks). 0 or TKV_IO_ERROR. */
int pm_space(pm_region *r, uint64_t *allocated);
/* pm_read_delay -- charges `accesses` random media reads to the profile
 * (a no-op without a profile). Readers call it per probe into the pool. */
void pm_read_delay(pm_region *r, unsigned accesses);

/*
 * Paced write-back of emulated pmem (PM_EMULATED or PM_VOLATILE with the pool
 * file on a disk; elsewhere these are no-ops). The stores of those modes sit dirty in
 * the page cache; left alone, the kernel writes back every page the pool
 * dirtied in the last ~30 s in one burst (dirty_expire: ~200 MB in one
 * second was measured), and reads of the same disk wait behind it. A thread
 * of the region instead writes queued ranges back (sync_file_range, waiting
 * for each) in chunks of at most 256 KiB, at most `rate` bytes/s, each
 * chunk first passed to admit (the engine's scheduler gate, which accounts
 * it). After every flush_every bytes written back (0: never) it flushes the
 * device's write cache with an fdatasync of the pool's directory (not of the
 * pool: that would write every dirty page of the pool at once). A
 * device-cache flush holds up every read of the disk for as long as the
 * cache takes to drain, roughly in proportion to what was written since the
 * last flush; so many small flushes are better than the one large one the
 * engine's next MANIFEST or SST sync would otherwise pay (without them,
 * every memtable flush second of the SILK benchmark had a read p99 of
 * 30-150 ms; with them, 3-9 ms). The engine passes its bytes_per_sync.
 * Durability is unchanged: the pages it writes ahead only make the next
 * pm_sync shorter (PM_EMULATED); PM_VOLATILE stays volatile.
 *
 * pm_writeback_start -- starts the thread (once): 0 (also when the region
 *   has nothing to write back to: other modes, a tmpfs pool) or TKV_NO_MEMORY
 *   (also when the thread cannot be started). rate 0 = no pause of its own; expire_ms 0 = 20 s (below).
 * pm_writeback_enqueue -- queues [addr, addr+len) (inside the pool); a full
 *   queue (4096 ranges, or 8 s of work at the rate) drops the range
 *   (counted; the kernel writes it back as before),
 *   and a range still queued expire_ms later is skipped (the kernel's dirty
 *   expiry has written it or is about to: after a bulk load faster than the
 *   rate, the thread does not spend its rate on long-clean pages).
 * pm_close stops the thread first (queued ranges are dropped: the close
 * msyncs the whole pool anyway).
 */
/* pm_writeout -- starts the write-back of [addr, addr+len) now, unpaced and
 * without waiting (sync_file_range WRITE), after dropping the range's
 * mapping entries in one batched TLB flush (as the paced thread does, so
 * that cleaning the pages costs no IPI per page). For a range the owner
 * syncs next (pm_sync). PM_EMULATED and PM_VOLATILE only; best effort. */
void pm_writeout(pm_region *r, const void *addr, size_t len);
typedef int (*pm_admit_fn)(void *arg, size_t n);
int pm_writeback_start(pm_region *r, pm_admit_fn admit, void *arg, uint64_t rate, unsigned expire_ms,
                       uint64_t flush_every);
void pm_writeback_enqueue(pm_region *r, const void *addr, size_t len);

/* Counters (relaxed atomics). */
typedef struct pm_stats {
    uint64_t persist_calls;   /* pm_persist + pm_flush + pm_store8_persist + pm_memcpy_persist */
    uint64_t bytes_persisted; /* bytes passed to those calls */
    /* paced write-back: bytes written back, failed calls, bytes dropped (queue full or admission
     * refused), bytes skipped as expired (queued > 20 s ago: the kernel wrote them), bytes queued */
    uint64_t wb_bytes, wb_failures, wb_dropped, wb_expired, wb_pending;
    uint64_t wb_device_flushes;    /* device-cache flushes made by the write-back (one per flush_every) */
    uint64_t prefault_bytes;       /* bytes of the mapping made resident ahead of use (pm_prefault_upto) */
    uint64_t prefault_write_bytes; /* of those, made writable (the rest: readable only) */
    uint64_t prefault_zero_bytes;  /* of those, whose pages were created by writing zeros (pm_prefault_zero) */
    uint64_t persist_errors;       /* persist calls that failed (the first is pm_error) */
    uint64_t reserve_failures;     /* pm_reserve calls refused (file system full, I/O error) */
    uint64_t discarded_bytes;      /* bytes given back to the file system (pm_discard) */
    uint64_t syncs, sync_ns;       /* pm_sync calls that synced (PM_EMULATED) and their time */
} pm_stats;
void pm_get_stats(pm_region *r, pm_stats *out);

/* PM_CRASHSIM only (a no-op otherwise): after `n` more persist calls (n = 0: at once) every
 * later persist is dropped, as if power failed there; UINT64_MAX disables.
 * pm_crashsim_persists returns persist calls so far (to pick cut points). */
void pm_crashsim_cut_at(pm_region *r, uint64_t n);
uint64_t pm_crashsim_persists(pm_region *r);
/* pm_crashsim_arm -- tests (process-wide): every PM_CRASHSIM region opened
 * after this call is cut after its first `n` persist calls (counted from its
 * open, creation included), and on_cut (may be NULL) runs in the thread whose
 * persist is the first one dropped -- a test's forked child passes a function
 * that calls _exit, so it dies exactly at the power cut, before anything else
 * (a file write, a MANIFEST edit) can happen after it. UINT64_MAX disarms. */
void pm_crashsim_arm(uint64_t n, void (*on_cut)(void));

#endif
