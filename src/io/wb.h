// SPDX-License-Identifier: Apache-2.0
/*
 * wb.h -- background write-back starts for buffered files written on client
 * threads (the WAL).
 *
 * wal_bytes_per_sync (io.h, off by default) makes a WAL start the write-back
 * of every that many new bytes with sync_file_range(WRITE), so the kernel
 * does not write a large dirty backlog in one burst later. That call is
 * "asynchronous" only in that it does not wait for the device: it submits the
 * whole range, and submitting 8 MiB to a busy or throttled disk took 8-20 ms
 * (strace, beside the SILK benchmark's open-loop reads). For the WAL that
 * time was spent by the write leader, so every writer queued behind it --
 * and with readers queued behind the stuck writers, every client --
 * waited. An io_wb moves the work to its own thread ("tkv-wal-wb"): the
 * writer only queues the range.
 * The same thread gives back a retired WAL's unused reserved blocks
 * (io_wb_release): done by the writer inside a memtable switch, the
 * truncate waited for the inode lock and a synchronous discard (10-15 ms).
 *
 * The thread writes each range back in IO_WB_STEP pieces, waiting for each,
 * then flushes the device's write cache with an fdatasync, and that flush is
 * the point: a cache flush holds up every read of the disk until the cache
 * has drained, for a time that grows with what was written since the last
 * flush. Left unflushed until the next MANIFEST sync,
 * the write-back made that sync stall all reads for 30-150 ms. Beside a
 * 6 MB/s WAL, reads had a per-second p99 of 14 ms with a flush every 8 MiB
 * and 2 ms with one every 1 MiB. It is not an
 * acknowledgement: a write is durable only when wal_sync (sync=1, TKV_SYNC)
 * says so. The fdatasync is of the directory given to io_wb_start (the
 * database's), not of the WAL: an fdatasync of the WAL writes back every
 * dirty page of it, the one the writer is appending to as well, and the
 * writer's next pwrite waited for that page's lock (515-693 times in a
 * 5M x 100 B fill, 67-72 ms in all; none with the directory). ext4 and XFS
 * flush the device cache on an fdatasync of a file with nothing to write.
 * For the same reason a WAL's ranges end on a multiple of IO_WB_ALIGN: the
 * piece still being appended to waits for the next range.
 *
 * Each queued range holds a dup() of the file's descriptor, so the file may
 * be closed or unlinked meanwhile (the range is then written back or skipped,
 * never applied to a reused descriptor number). A full queue drops the range
 * (counted): the kernel writes those pages back on its own, as with
 * wal_bytes_per_sync = 0. Thread-safe.
 */
#ifndef TKV_IO_WB_H
#define TKV_IO_WB_H

#include <stdint.h>

#define IO_WB_STEP  (1u << 20)  /* bytes per sync_file_range call */
#define IO_WB_ALIGN (64u << 10) /* queued WAL ranges end on a multiple of this (io.c sync_incremental) */
#define IO_WB_QUEUE 64u         /* ranges queued at most */

typedef struct io_wb io_wb;

typedef struct io_wb_stats {
    uint64_t queued;   /* ranges (and releases) accepted */
    uint64_t done;     /* ranges written back and synced, releases done (or skipped: file unlinked) */
    uint64_t bytes;    /* bytes of those ranges written back */
    uint64_t syncs;    /* device-cache flushes (one fdatasync per range written back) */
    uint64_t dropped;  /* ranges refused: queue full, or the descriptor could not be duplicated */
    uint64_t failures; /* sync_file_range / fdatasync errors (the file's next io_sync reports them too) */
    uint64_t pending;  /* ranges queued now */
} io_wb_stats;

/* io_wb_start -- starts the thread; its device-cache flushes are fdatasyncs
 * of directory flush_dir (the WALs' directory). Returns 0,
 * TKV_NO_MEMORY or TKV_IO_ERROR (flush_dir cannot be opened, or thread
 * creation failed). */
int io_wb_start(io_wb **out, const char *flush_dir);

/* io_wb_enqueue -- queues bytes [off, off + len) of fd for write-back.
 * Never blocks on I/O. Returns 0 if queued, -1 if dropped (counted). */
int io_wb_enqueue(io_wb *wb, int fd, uint64_t off, uint64_t len);

/* io_wb_release -- queues the release of fd's blocks reserved past `size`
 * up to `end` (io_release_reserved), for a file that gets no more appends:
 * on the thread, a truncate to `size` and a hole punched past it, skipped
 * if the file has been unlinked meanwhile. 0 if queued (or nothing to
 * release), -1 if dropped (counted): the caller does it itself. */
int io_wb_release(io_wb *wb, int fd, uint64_t size, uint64_t end);

/* io_release_blocks -- gives back fd's blocks reserved past `size` up to
 * `end` now (a truncate to `size` and a hole punched past it): 0, or the
 * truncate's errno. What io_wb_release does on the thread. */
int io_release_blocks(int fd, uint64_t size, uint64_t end);

/* io_wb_get_stats -- a snapshot of the counters. */
void io_wb_get_stats(io_wb *wb, io_wb_stats *out);

/* io_wb_ticket -- the count of everything queued so far; io_wb_passed --
 * 1 once the thread has finished everything queued before that ticket was
 * taken (the queue is one FIFO thread): then no descriptor duplicated for
 * that work is open any more, and no release queued then can still cut a
 * file. Neither waits. */
uint64_t io_wb_ticket(io_wb *wb);
int io_wb_passed(io_wb *wb, uint64_t ticket);

/* io_wb_drain -- waits until the queue is empty and the thread idle (tests,
 * and close paths that want the write-back done before they go on). */
void io_wb_drain(io_wb *wb);

/* io_wb_stop -- stops the thread and frees wb. Write-back ranges still
 * queued are dropped (their descriptors closed): nothing is lost, the kernel
 * writes the pages back later; releases still queued are done first. NULL is
 * a no-op. */
void io_wb_stop(io_wb *wb);

#endif
