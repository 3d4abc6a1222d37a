/*
 * wal.h -- the write-ahead log: an append-only file of checksummed records, one
 * record per group-commit batch (the payload is opaque to the WAL).
 *
 * On-media format and recovery rules: docs/format-wal.md. In short:
 *   file   = header (16 bytes) | record*
 *   header = magic "TKVWAL\0\1" (8) | u32 version (1) | u32 checksum(bytes 0..11)
 *   record = u32 checksum | u32 length | payload[length]
 *            checksum = tkv_checksum(length bytes || payload), little-endian
 * Replay delivers every intact record in order, drops a torn tail (a crash
 * mid-append) silently but counts it, and reports a checksum failure followed
 * by non-zero data as TKV_CORRUPTION (offset and file name in tkv_errmsg()).
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

#define WAL_HEADER_SIZE 16
#define WAL_RECORD_HEADER 8 /* u32 checksum + u32 length */
#define WAL_VERSION 1u
#define WAL_MAX_PAYLOAD (UINT32_C(1) << 30) /* 1 GiB, inclusive */

typedef struct wal_writer wal_writer;

/* wal_writer_open -- creates (truncating) the WAL file at path and writes the
 * 16-byte header, which becomes durable with the first wal_sync. Writes are
 * accounted to IO_WAL in st (may be NULL).
 * Returns 0 and *out, or TKV_INVALID (NULL argument), TKV_IO_ERROR,
 * TKV_NO_SPACE, TKV_NO_MEMORY (*out = NULL). */
int wal_writer_open(const char *path, io_stats *st, wal_writer **out);

/* wal_writer_reserve -- reserves disk blocks for the next `bytes` of the log
 * without changing its size (io_preallocate), so that appends do not wait
 * for the block-map lock that write-back of the same file holds. With stats
 * that have a wmap (wal_mmap), the reserved part is then mapped and appends
 * into it become stores (io_map_appends; the file is as long as the
 * reservation until the writer is closed). Best effort:
 * a failure (a file system without fallocate, no space yet) is ignored and
 * leaves the calling thread's error message as it was. */
void wal_writer_reserve(wal_writer *w, uint64_t bytes);

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
 * file). Returns 0, TKV_IO_ERROR, TKV_NO_SPACE, or the poisoning code. */
int wal_sync(wal_writer *w);

/* wal_unsynced -- 1 if records were appended since the last successful
 * wal_sync (or since the open), i.e. a crash of the OS could lose some. */
int wal_unsynced(const wal_writer *w);

/* wal_size -- bytes in the file so far, header included (after a partial write,
 * the bytes that did reach the file). */
uint64_t wal_size(const wal_writer *w);

/* wal_writer_close -- closes the file and frees w. No implicit sync: records
 * added since the last wal_sync are durable only if the OS writes them back.
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
} wal_replay_stats;

/* Called once per intact record, in file order. payload is valid only during
 * the call (it points into replay's read buffer). offset = file offset of the
 * record's first byte (its checksum field). Return 0 to continue; any non-zero
 * value stops replay and becomes wal_replay's return value. */
typedef int (*wal_record_fn)(void *arg, const uint8_t *payload, size_t n, uint64_t offset);

/* wal_replay -- reads the WAL at path (class IO_META, accounted in st, which may
 * be NULL) in chunks and calls fn (may be NULL: validate and count only) for
 * each intact record. out may be NULL.
 * Returns 0 (including an empty log and a dropped torn tail), fn's non-zero
 * value, TKV_CORRUPTION (bad header, or a failed record followed by non-zero
 * data; fn has already seen the records before it), TKV_INVALID (NULL path),
 * TKV_IO_ERROR (including a missing file), TKV_NO_MEMORY. */
int wal_replay(const char *path, io_stats *st, wal_record_fn fn, void *arg, wal_replay_stats *out);

#endif
