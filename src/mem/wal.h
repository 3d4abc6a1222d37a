// SPDX-License-Identifier: Apache-2.0
/*
 * wal.h -- the write-ahead log: an append-only file of checksummed records, one
 * record per group-commit batch (the payload is opaque to the WAL).
 *
 * On-media format and recovery rules: docs/format-wal.md. In short:
 *   file   = header | record*
 *   header, version 2 (64 bytes; the database's WALs, wal_writer_open):
 *            magic "TKVWAL\0\1" (8) | u32 version (2) | u32 checksum(bytes 0..11)
 *            | u64 own log number | u64 predecessor's number | u64 predecessor's size
 *            | u32 checksum(bytes 0..39) | u32 0
 *            | u64 synced frontier | u32 checksum(bytes 48..55) | u32 0
 *   header, version 3 (a recycled log, wal_writer_recycle): version 2's
 *            layout with version 3; each record's checksum is seeded with
 *            the log's number, and replay ends the log at the first record
 *            that is not intact past the frontier (what follows may be an
 *            older log's records)
 *   header, version 1 (16 bytes; the MANIFEST, wal_writer_open_v1):
 *            magic (8) | u32 version (1) | u32 checksum(bytes 0..11)
 *   record = u32 checksum | u32 length | payload[length]
 *            checksum = tkv_checksum(length bytes || payload), little-endian
 * Replay delivers every intact record in order, drops a torn tail (a crash
 * mid-append) silently but counts it, and reports a checksum failure followed
 * by non-zero data as TKV_CORRUPTION (offset and file name in tkv_errmsg())
 * -- in a version-2 log only below the synced frontier: past it, that is
 * unsynced pages written back out of order, a torn tail ("torn hole").
 *
 * Thread safety: a wal_writer belongs to one thread at a time (the group-commit
 * leader); the caller serialises wal_add_record/wal_sync/wal_size/close.
 * wal_replay keeps no shared state: concurrent replays of different (or the
 * same, unchanging) files are safe.
 */
#ifndef TKV_MEM_WAL_H
#define TKV_MEM_WAL_H

#include <stddef.h>
#include <stdint.h>

#include "io/io.h"

#define WAL_HEADER_SIZE     16 /* version 1 (the MANIFEST's): records start here */
#define WAL_V2_HEADER_SIZE  64 /* version 2 (the database's WALs): records start here */
#define WAL_V2_FRONTIER_OFF 48 /* version 2: the synced-frontier slot (u64 + u32 checksum) */
#define WAL_RECORD_HEADER   8  /* u32 checksum + u32 length */
#define WAL_V1              1u
#define WAL_V2              2u
#define WAL_V3              3u /* a recycled log: the version-2 header, record checksums seeded with the log number */
#define WAL_MAX_PAYLOAD     (UINT32_C(1) << 30) /* 1 GiB, inclusive */
/* Version 2: wal_sync rewrites the frontier slot once the synced size has
 * passed the value the slot holds by this much (and wal_writer_close does
 * whenever it has passed it at all). Each rewrite dirties the header's page
 * again, so the next fdatasync writes two places: rewritten after every
 * sync it cost about 15 % of the rate of small TKV_SYNC writes (ext4 on the
 * project's VM: 165 -> 190 us a put). A frontier that lags only makes
 * replay more lenient (docs/format-wal.md). */
#define WAL_FRONTIER_STEP (UINT64_C(1) << 20)

typedef struct wal_writer wal_writer;

/* wal_writer_open -- creates (truncating) the WAL file at path and writes the
 * 64-byte version-2 header: the log's own file number, its predecessor's
 * number and the predecessor's final size in bytes (both 0: none), and a
 * synced frontier of 0. The header becomes durable with the first wal_sync.
 * Writes are accounted to IO_WAL in st (may be NULL).
 * Returns 0 and *out, or TKV_INVALID (NULL argument), TKV_IO_ERROR,
 * TKV_NO_SPACE, TKV_NO_MEMORY (*out = NULL). */
int wal_writer_open(const char *path, io_stats *st, uint64_t number, uint64_t prev_number, uint64_t prev_size,
                    wal_writer **out);

/* wal_writer_recycle -- renames the obsolete WAL old_path to path and
 * writes it as log `number` from its start (the version-3 header, then
 * records over the old ones), keeping its disk blocks: an fdatasync of
 * appends into blocks that are already written is a data write, while one
 * into fresh (or fallocated) blocks also writes the file's block map (ext4:
 * 64 KiB synced appends 230 against 370-400 us on the project's VM). The
 * header and the new name become durable with the first wal_sync, as with
 * wal_writer_open. Until then a crash may leave the new name on the old
 * header (recovery reads a log whose header names an older number as an
 * empty log: nothing in it was synced). At close, the bytes past what this
 * log wrote are cut off (kept with wal_writer_keep_reserved). The caller guarantees nobody else has old_path
 * open or queued for write-back. Returns as wal_writer_open, plus the
 * rename's errors (old_path stays where it was when the rename failed). */
int wal_writer_recycle(const char *old_path, const char *path, io_stats *st, uint64_t number, uint64_t prev_number,
                       uint64_t prev_size, wal_writer **out);

/* wal_writer_open_v1 -- the same with the 16-byte version-1 header: no chain
 * and no synced frontier. For the MANIFEST (docs/format-manifest.md), which
 * is synced after every record and has its own chain (CURRENT). */
int wal_writer_open_v1(const char *path, io_stats *st, wal_writer **out);

/* wal_writer_reserve -- reserves disk blocks for the next `bytes` of the log
 * without changing its size (io_preallocate), so that appends do not wait
 * for the block-map lock that write-back of the same file holds. With stats
 * that have a wmap (wal_mmap), the reserved part is then mapped and appends
 * into it become stores (io_map_appends; the file is as long as the
 * reservation until the writer is closed; so is a version 2 or 3 log's
 * without a mapping, io_extend_reserved). Best effort:
 * a failure (a file system without fallocate, no space yet) is ignored and
 * leaves the calling thread's error message as it was. */
void wal_writer_reserve(wal_writer *w, uint64_t bytes);

/* wal_writer_keep_reserved -- keep 1: at close, the file keeps the length
 * of its reservation (io_keep_reserved) instead of being cut back to what
 * the log wrote: for a log whose file may be recycled (wal_writer_recycle),
 * so that the next log's wal_writer_reserve finds the blocks there and
 * neither fallocates nor frees, extends, discards anything. Past the last
 * record the file then holds zeros or an older log's records, which replay
 * reads as the log's end (docs/format-wal.md, R3', R4) as after a crash.
 * keep 0 (the default): cut back at close. */
void wal_writer_keep_reserved(wal_writer *w, int keep);

/* wal_add_record -- appends one record holding payload[0..n) (n may be 0;
 * payload may then be NULL). Not durable until wal_sync.
 * Payloads up to 256 KiB are framed in an internal buffer and written with one
 * write(); larger ones are written as header then payload (two writes) to avoid
 * copying them. Either way a crash leaves at worst a torn tail that fails its
 * checksum or extends past end of file: never a short record that passes.
 * Returns 0, TKV_INVALID (n > WAL_MAX_PAYLOAD, or NULL payload with n > 0;
 * nothing written), TKV_NO_SPACE, TKV_IO_ERROR, TKV_NO_MEMORY.
 * Failure semantics: if the failed call wrote nothing the writer stays usable
 * (e.g. an ENOSPC that a retry after freeing space may cure). If it left part of
 * a record in the file, the writer is poisoned: every later wal_add_record and
 * wal_sync returns the same code without touching the file (appending after a
 * partial record would turn a torn tail into mid-log corruption); the caller
 * must switch to a new WAL file. */
int wal_add_record(wal_writer *w, const void *payload, size_t n);

/* wal_sync -- fdatasync: every record added so far (and the header) becomes
 * durable. A failed sync poisons the writer (after a failed fdatasync the state
 * of the dirty pages is unknown, so nothing later may be acknowledged on this
 * file). Version 2, after a successful fdatasync: the first one also fsyncs
 * the directory (the log's name is durable before any of its records is
 * acknowledged as synced: a later log names it as its predecessor), and one
 * that took the synced size WAL_FRONTIER_STEP (wal_set_frontier_step) past
 * the stored frontier writes the new synced frontier (the file's size) into
 * the header slot with a 12-byte pwrite -- not synced itself: it becomes
 * durable with the next fdatasync (or write-back). So on disk the frontier
 * lags what was synced: by less than the step, plus one sync. That pwrite
 * is best effort (a failure leaves the old frontier: replay is then only
 * more lenient) and is not counted in io_stats. Returns 0, TKV_IO_ERROR,
 * TKV_NO_SPACE, or the poisoning code. */
int wal_sync(wal_writer *w);

/* wal_set_frontier_step -- tests only: the frontier step of the writers
 * opened from now on, process-wide (0: the slot is rewritten after every
 * sync, so that it is exactly the size the last wal_sync covered); the
 * default is WAL_FRONTIER_STEP. */
void wal_set_frontier_step(uint64_t bytes);

/* wal_unsynced -- 1 if the log was never synced (its header, its name in
 * the directory may not be durable) or records were appended since the last
 * successful wal_sync, i.e. a crash of the OS could lose something a later
 * log depends on. */
int wal_unsynced(const wal_writer *w);

/* wal_size -- bytes in the file so far, header included (after a partial write,
 * the bytes that did reach the file). */
uint64_t wal_size(const wal_writer *w);

/* wal_writer_close -- closes the file and frees w. No implicit sync: records
 * added since the last wal_sync are durable only if the OS writes them back.
 * Version 2: a frontier behind the last sync is written first (not synced;
 * best effort).
 * NULL is a no-op returning 0. Returns close()'s error, if any (w is freed
 * regardless). */
int wal_writer_close(wal_writer *w);

/* What wal_replay found. Filled in even when replay fails (counts up to the
 * failure point). */
typedef struct wal_replay_stats {
    uint64_t records;           /* intact records delivered to fn */
    uint64_t payload_bytes;     /* sum of their payload lengths */
    uint64_t torn_tail_records; /* 0 or 1: the dropped torn (or zero-filled) tail record */
    uint64_t torn_tail_bytes;   /* bytes ignored at the end of the file (file size - end of last intact record) */
    uint64_t torn_hole;         /* 0 or 1 (version 2): that torn tail is a bad record at or past the synced
                                 * frontier followed by non-zero data -- pages written back out of order;
                                 * the records after the hole are not delivered */
    uint32_t torn_zero;         /* 1: every ignored byte is zero (or none is ignored) */
    uint32_t version;           /* 1, 2 or 3; 0: an empty log (no header, rule H1) */
    uint64_t log_number;        /* version 2 and 3 headers: the log's own file number (else 0) */
    uint64_t prev_number;       /* version 2: the predecessor log's number; 0: none */
    uint64_t prev_size;         /* version 2: the predecessor's size in bytes when this log was started */
    uint64_t frontier;          /* version 2: the synced frontier (0: nothing synced yet, or a bad slot) */
    uint32_t frontier_ok;       /* version 2: the frontier slot passed its checksum */
    uint64_t end;               /* where the intact records end (the header's size if there are none;
                                 * 0 for an empty log); at a TKV_CORRUPTION, the bad record's offset */
    uint64_t file_size;         /* the file's size when replay opened it */
} wal_replay_stats;

/* Called once per intact record, in file order. payload is valid only during
 * the call (it points into replay's read buffer). offset = file offset of the
 * record's first byte (its checksum field). Return 0 to continue; any non-zero
 * value stops replay and becomes wal_replay's return value. */
typedef int (*wal_record_fn)(void *arg, const uint8_t *payload, size_t n, uint64_t offset);

/* wal_replay -- reads the WAL at path (class IO_META, accounted in st, which may
 * be NULL) in chunks and calls fn (may be NULL: validate and count only) for
 * each intact record. out may be NULL.
 * Returns 0 (including an empty log and a dropped torn tail or torn hole), fn's
 * non-zero value, TKV_CORRUPTION (bad header; a failed record followed by
 * non-zero data in a version-1 log; in a version-2 log a record that is not
 * intact below the synced frontier, or a file that ends below it; fn has
 * already seen the records before it), TKV_INVALID (NULL path), TKV_IO_ERROR
 * (including a missing file), TKV_NO_MEMORY. */
int wal_replay(const char *path, io_stats *st, wal_record_fn fn, void *arg, wal_replay_stats *out);

/* wal_read_header -- only the header of the WAL at path: out's version,
 * log_number, prev_number, prev_size, frontier, frontier_ok and file_size
 * (the rest 0). Returns 0 (also for an empty log: version 0), TKV_CORRUPTION
 * (as wal_replay for a bad header), TKV_INVALID, TKV_IO_ERROR, TKV_NO_MEMORY. */
int wal_read_header(const char *path, io_stats *st, wal_replay_stats *out);

#endif
