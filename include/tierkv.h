// SPDX-License-Identifier: Apache-2.0
/*
 * tierkv.h -- the public C API of tierkv, an embedded key-value store whose LSM
 * tree is tiered across DRAM, persistent memory and SSD.
 *
 * Conventions (kept true; tests/test_c_api.c exercises each one):
 *  1. Handles (tkv_db, tkv_options, tkv_read_options, tkv_batch, tkv_iter,
 *     tkv_snapshot, tkv_env) are opaque.
 *     Every _new or _open function has a matching _free or _close; every free function
 *     accepts NULL and does nothing.
 *  2. Functions that can fail return an int status: TKV_OK (0), TKV_NOT_FOUND (1,
 *     not an error), TKV_TRUNCATED (2, tkv_get_into only, not an error) or a
 *     negative TKV_* error. tkv_strerror() names a status;
 *     tkv_errmsg() returns the calling thread's detailed message for its most
 *     recent error (file names, offsets, option names). The message stays valid
 *     until the same thread's next failing tierkv call.
 *  3. Keys are byte strings ordered by memcmp (shorter key first on a common
 *     prefix). 1 <= key length <= TKV_MAX_KEY_SIZE; value length <=
 *     TKV_MAX_VALUE_SIZE. Violations are TKV_INVALID and change nothing.
 *  4. Memory returned to the caller (values from tkv_get/tkv_multi_get, strings
 *     from tkv_property and tkv_verify) is owned by the caller and freed with tkv_free().
 *     Pointers returned by tkv_iter_key/tkv_iter_value are owned by the iterator
 *     and valid until the iterator is moved or freed.
 *  5. The library never calls exit() or abort() on bad input or bad media; it
 *     reports corruption as TKV_CORRUPTION and never returns corrupt data. A
 *     failure in the background (a flush, a compaction, a persist into the
 *     pmem pool such as a failed msync, an allocation) makes the database
 *     read-only: later writes, and tkv_close, return that error.
 *  6. The library is a good guest: it exports only the functions declared
 *     here, runs on its host's malloc (it links no allocator of its own),
 *     never writes to stdout or stderr (messages are in tkv_errmsg() and the
 *     properties), and every thread it starts ends in tkv_close().
 *
 * Thread safety:
 *  - tkv_db: safe for concurrent use by any number of threads without external
 *    locking (puts, gets, iterators, snapshots, flush, property ...). tkv_close()
 *    must not race with other calls on the same handle (a tkv_checkpoint
 *    already running when it is called is waited for).
 *  - tkv_options: not synchronized; build it in one thread, then it may be
 *    passed to tkv_open() (which copies it) from any thread.
 *  - tkv_read_options: not synchronized while being changed; once set up,
 *    any number of threads may read through it at once.
 *  - tkv_batch and tkv_iter: belong to one thread at a time. Using one handle
 *    from two threads at once needs the caller's own lock.
 *  - tkv_snapshot: immutable; may be shared between threads until freed.
 *  - tkv_strerror/tkv_errmsg/tkv_version: always safe.
 *  - tkv_verify: safe from any thread; it shares no state with handles, and
 *    several calls may check one closed database at once.
 *
 * Durability (what a crash keeps; docs/pmem.md "Modes"):
 *                          process crash     power cut / OS crash
 *   write, no flag         kept              may be lost, but only as a suffix:
 *                                            no write survives without every
 *                                            write acknowledged before it
 *   write with TKV_SYNC    kept              kept, with every write before it
 *   write with TKV_NO_WAL  kept once flushed kept once flushed
 * This holds with the defaults on any file system: pmem_mode=auto picks
 * real pmem (DAX) or, on an ordinary file, `emulated`, which syncs each
 * flushed row to the device before its WAL is released (two fdatasyncs of
 * the pool per flushed memtable). pmem_mode=volatile drops those syncs: it
 * keeps the process-crash column only, and after a power cut the database
 * may not reopen. It is opt-in, for measuring what durability costs.
 *
 * On-media formats: docs/format-wal.md (write-ahead log), docs/format-sst.md,
 * docs/format-manifest.md, docs/format-matrix.md (the persistent-memory pool of
 * the matrix container, L0 with the default l0=matrix; device modes in
 * docs/pmem.md). Options and properties: docs/options.md.
 */
#ifndef TIERKV_H
#define TIERKV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* TKV_API marks the public functions: the only symbols libtierkv.so exports
 * (the library is built with -fvisibility=hidden and the version script
 * tierkv.map; tests/check_exports.py checks the two agree). */
#if defined(__GNUC__) || defined(__clang__)
#define TKV_API __attribute__((visibility("default")))
#else
#define TKV_API
#endif

#define TKV_VERSION_MAJOR 0
#define TKV_VERSION_MINOR 1
#define TKV_VERSION_PATCH 0
/* TKV_VERSION_NUMBER = major*10000 + minor*100 + patch */
#define TKV_VERSION_NUMBER (TKV_VERSION_MAJOR * 10000 + TKV_VERSION_MINOR * 100 + TKV_VERSION_PATCH)
#define TKV_VERSION_STRING "0.1.0"

/* tkv_version -- the library's TKV_VERSION_NUMBER (may differ from the header's
 * when linked dynamically against another build). */
TKV_API int tkv_version(void);

/* Status codes. */
#define TKV_OK         0
#define TKV_NOT_FOUND  1    /* key absent (or deleted) at the read's sequence */
#define TKV_TRUNCATED  2    /* tkv_get_into: the value is larger than the caller's buffer */
#define TKV_INVALID    (-1) /* bad argument, option, or API misuse */
#define TKV_IO_ERROR   (-2) /* the operating system reported an I/O error */
#define TKV_CORRUPTION (-3) /* a checksum or structural check failed on media */
#define TKV_NO_SPACE   (-4) /* the device or a pool is full */
#define TKV_BUSY       (-5) /* the resource is in use (e.g. directory or pmem pool file locked) */
#define TKV_NO_MEMORY  (-6) /* an allocation failed */
#define TKV_READ_ONLY  (-7) /* a write call on a handle opened with read_only=1 */

/* Limits, enforced by every function that takes keys or values. */
#define TKV_MAX_KEY_SIZE   (64u * 1024u)          /* 64 KiB */
#define TKV_MAX_VALUE_SIZE (256u * 1024u * 1024u) /* 256 MiB */

/* Write flags (bitwise OR). */
#define TKV_SYNC   1u /* the write is durable (WAL fdatasync'd) before the call returns */
#define TKV_NO_WAL 2u /* skip the WAL for this write: lost on crash until flushed */

typedef struct tkv_db tkv_db;
typedef struct tkv_options tkv_options;
typedef struct tkv_batch tkv_batch;
typedef struct tkv_iter tkv_iter;
typedef struct tkv_snapshot tkv_snapshot;
typedef struct tkv_read_options tkv_read_options;
typedef struct tkv_env tkv_env;

/* tkv_strerror -- a constant string naming status `status` ("OK", "not found",
 * "invalid argument", ...). Unknown codes give "unknown status". */
TKV_API const char *tkv_strerror(int status);

/* tkv_errmsg -- the calling thread's detailed message for its last error, or ""
 * if this thread has seen none. Owned by the library (thread-local). */
TKV_API const char *tkv_errmsg(void);

/* ---------------------------------------------------------------- options */

/* tkv_options_new -- options with every default (see docs/options.md).
 * Returns NULL only if memory is exhausted. */
TKV_API tkv_options *tkv_options_new(void);

/* tkv_options_free -- frees `opts`; NULL is a no-op. */
TKV_API void tkv_options_free(tkv_options *opts);

/* tkv_options_set -- sets option `name` from string `value`.
 * Sizes accept K/M/G/T suffixes (powers of 1024: "64M"); booleans accept
 * 1/0/true/false/on/off/yes/no. Options are documented in docs/options.md.
 * Returns TKV_OK, or TKV_INVALID (unknown name, unparsable or out-of-range value;
 * tkv_errmsg() names the option and the accepted range). On error `opts` is
 * unchanged. */
TKV_API int tkv_options_set(tkv_options *opts, const char *name, const char *value);

/* ---------------------------------------------------------------- events */

/* Background events, delivered to the listener of tkv_options_set_listener.
 * Each job's begin and end carry the same `job` number. */
#define TKV_EVENT_FLUSH_BEGIN      1 /* a memtable starts going to a row (or an L0 SST) */
#define TKV_EVENT_FLUSH_END        2 /* ... done: status, micros, bytes_written */
#define TKV_EVENT_COLUMN_BEGIN     3 /* a column compaction (rows -> L1) starts */
#define TKV_EVENT_COLUMN_END       4 /* ... done: status, micros, bytes_read, bytes_written */
#define TKV_EVENT_COMPACTION_BEGIN 5 /* a leveled compaction starts; level: its output level */
#define TKV_EVENT_COMPACTION_END   6 /* ... done: status, micros, bytes_read, bytes_written */
#define TKV_EVENT_STALL_BEGIN      7 /* a writer starts waiting for the write controller */
#define TKV_EVENT_STALL_END        8 /* ... and resumes: micros */
#define TKV_EVENT_BG_ERROR         9 /* the database became read-only: status, message */

typedef struct tkv_event {
    size_t size;            /* sizeof(tkv_event) in the library that made it: fields past it are absent */
    int type;               /* TKV_EVENT_* */
    int status;             /* end events and TKV_EVENT_BG_ERROR: TKV_OK or the error that ended the job */
    uint64_t job;           /* pairs a begin with its end (0 for stalls and errors) */
    int level;              /* compactions: the output level; flushes and columns: 0 and 1 */
    uint64_t micros;        /* end events: how long the job (or stall) took */
    uint64_t bytes_read;    /* end events: bytes the job read, where known (else 0) */
    uint64_t bytes_written; /* end events: bytes the job wrote */
    const char *message;    /* TKV_EVENT_BG_ERROR: tkv_errmsg of the failure; valid during the call only */
} tkv_event;

/* tkv_event_fn -- a listener: called on the database's own "tkv-events"
 * thread, one event at a time and in the order they happened, with no lock
 * of the database held (it may call tkv_get, tkv_property, ... but not
 * tkv_close). It should return quickly: events queue behind it, and when
 * 1024 are queued newer ones are dropped and counted (TKV_TICKER_EVENTS_DROPPED).
 * Events still queued at tkv_close are delivered before it returns. */
typedef void (*tkv_event_fn)(const tkv_event *ev, void *arg);

/* tkv_options_set_listener -- the listener of databases opened with opts (fn
 * NULL: none, the default, and no thread). TKV_OK or TKV_INVALID (NULL opts). */
TKV_API int tkv_options_set_listener(tkv_options *opts, tkv_event_fn fn, void *arg);

/* ---------------------------------------------------------------- env */

/* A tkv_env shares resources between the databases of one process that are
 * opened with it (tkv_options_set_env): one device budget for their
 * schedulers, one pool of background threads, one block cache, and a budget
 * for the sum of their pmem pools
 * (docs/options.md, "Shared resources: tkv_env").
 * A database opened without an env owns all of its resources, as before.
 * Thread safety: every env function may be called from any thread; the env
 * is reference-counted by the databases open with it. */

/* tkv_env_new -- an env with every default. NULL only if memory is exhausted. */
TKV_API tkv_env *tkv_env_new(void);

/* tkv_env_set -- sets `name` to `value` (a size: K/M/G/T suffixes, at most 1T;
 * background_threads: a count):
 *  device_bandwidth  the device's bytes/s that the databases' schedulers share:
 *                    one limiter for the internal I/O of all of them (default
 *                    0: the first database's device_bandwidth or probe)
 *  block_cache_size  bytes of the one block cache of every database of the
 *                    env (default 256M; their own block_cache_size is unused)
 *  background_threads  the threads that run the background work (flushes,
 *                    compactions) of all of the env's databases together
 *                    (default 4, 2..64); they start with the first database
 *                    opened with the env and end in the tkv_close of the last
 *  pmem_budget       the pmem pools of the env's open databases may not add
 *                    up to more (default 0: no budget); an open that would
 *                    pass it fails with TKV_NO_SPACE and creates nothing
 * Settable only until the first tkv_open with the env: afterwards TKV_BUSY,
 * and nothing changes. TKV_INVALID for a NULL argument, an unknown name or a
 * bad value (nothing changes). */
TKV_API int tkv_env_set(tkv_env *env, const char *name, const char *value);

/* tkv_options_set_env -- databases opened with opts use env (NULL: none, the
 * default). The env must outlive every database opened with it. TKV_OK or
 * TKV_INVALID (NULL opts). */
TKV_API int tkv_options_set_env(tkv_options *opts, tkv_env *env);

/* tkv_env_free -- frees env and what it shares. While a database opened
 * with it is still open it returns TKV_BUSY and frees nothing. NULL is a
 * no-op returning TKV_OK. */
TKV_API int tkv_env_free(tkv_env *env);

/* ---------------------------------------------------------------- database */

/* tkv_open -- opens (or, with create_if_missing, the default, creates) the
 * database in directory `dir`, recovering any data left by a crash. `opts` may
 * be NULL for defaults; it is copied and may be freed after the call.
 * With l0=matrix (the default) it also opens, or creates, the pmem pool file
 * (pmem_path, default <dir>/matrix.pmem) and reconciles it with the MANIFEST
 * before replaying the WAL (docs/format-matrix.md section 9.3).
 *
 * With the option read_only=1 the database is opened to be read, and
 * nothing in its directory or its pool is written, created, renamed,
 * deleted, synced, reserved or punched (not even with create_if_missing=1):
 *  - it must exist (its IDENTITY, LOCK and MANIFEST files): else TKV_INVALID;
 *  - it sees what a read-write open would recover: the MANIFEST's state,
 *    the pool's rows at their cursors, and every WAL replayed into
 *    memtables held in DRAM only -- however much the logs hold, past
 *    memtables x memtable_size and dram_budget (nothing flushes them);
 *  - no new WAL or MANIFEST, no flush, compaction or column, no obsolete
 *    file deleted, no pool reconciliation: a row the MANIFEST does not
 *    list is ignored (the next read-write open drops it), no page is
 *    released; the pool is mapped PROT_READ and every file opened O_RDONLY;
 *    pmem_mode and the pool's room for 4 memtables are not checked;
 *  - no background thread (a listener gets no events: there are none), and
 *    no env: one set with tkv_options_set_env is not used (the handle has
 *    its own block cache and is not counted in the env or its pmem_budget);
 *  - it takes shared locks on <dir>/LOCK and on the pool file: read-only
 *    handles (in this or other processes) and tkv_verify share a database;
 *    a read-write open, or tkv_destroy, while one is open is TKV_BUSY, and
 *    a read-only open while a read-write handle is open is TKV_BUSY;
 *  - tkv_put, tkv_delete, tkv_write, tkv_flush and tkv_compact_range on it
 *    return TKV_READ_ONLY; every read call, snapshots, properties and
 *    tkv_checkpoint (which writes only its out_dir) work.
 *
 * Returns TKV_OK and *out, or:
 *  TKV_INVALID     NULL argument; dir missing and create_if_missing=0 (or
 *                  read_only=1); dir exists and error_if_exists=1; l0=sst
 *                  while the matrix container still holds rows; a pmem_size
 *                  other than the existing pool's; a pool too small for 4
 *                  memtables; pmem_mode=pmem on memory that is not pmem; a
 *                  dram_budget too small for the sizes set (checked before
 *                  anything is created) (docs/options.md); dir is a
 *                  checkpoint still being built or cut short by a crash
 *                  (tkv_checkpoint); read_only=1 and no LOCK file (never
 *                  opened read-write) or no MANIFEST
 *  TKV_BUSY        another handle (in this or another process) has `dir` or its
 *                  pool file open (read_only=1: open read-write)
 *  TKV_NO_SPACE    with an env: the pool would take the env's pools past its
 *                  pmem_budget (checked before anything is created)
 *  TKV_CORRUPTION  a checksum failed in the middle of a log or other file; the
 *                  pool header or a row fails to verify (the message names the
 *                  pool file and row); the MANIFEST lists rows the pool lacks
 *                  or SSTs that are missing or of the wrong size
 *  TKV_IO_ERROR, TKV_NO_SPACE, TKV_NO_MEMORY
 * On error *out is set to NULL. */
TKV_API int tkv_open(const char *dir, const tkv_options *opts, tkv_db **out);

/* tkv_close -- finishes background work (immutable memtables are flushed; with
 * l0=matrix a flush that needs room waits for column compaction, and if that
 * keeps failing the memtable's data stays in the WAL for the next open),
 * syncs the WAL, closes the pmem pool, releases the directory lock and frees `db`.
 * Every iterator of `db` must be freed first: if any is still open, close
 * returns TKV_BUSY and does nothing (the handle stays open and usable).
 * Snapshots still held are released by close (do not use them afterwards).
 * A tkv_checkpoint running on another thread is waited for.
 * NULL is a no-op returning TKV_OK. Otherwise returns the background error
 * that made the database read-only, if there was one (TKV_IO_ERROR,
 * TKV_NO_SPACE, TKV_CORRUPTION, TKV_NO_MEMORY; tkv_errmsg() says what failed,
 * even if no write was made after it), else the first error met while
 * finishing (syncing the WAL, the final msync of the pmem pool); the handle
 * is freed regardless. Data acknowledged before the error is in the WAL
 * and comes back at the next open. A read-only handle (read_only=1) has
 * nothing to finish: close frees it and releases its shared locks. */
TKV_API int tkv_close(tkv_db *db);

/* tkv_destroy -- removes the database in `dir` (all of tierkv's files, then the
 * directory if it is empty) and its pmem pool wherever it lives: at the default
 * path <dir>/matrix.pmem, or at pmem_path, which the database records in
 * <dir>/POOL with the pool's uuid (a file at that path that is no longer this
 * database's pool is left alone). Returns TKV_BUSY if the database or its
 * pool is open, read-write or read-only (nothing is removed then), TKV_OK if
 * `dir` does not exist. */
TKV_API int tkv_destroy(const char *dir);

/* tkv_put -- sets key to value. flags: TKV_SYNC, TKV_NO_WAL.
 * Durability: when the call returns, the write is in the WAL file as far as
 * the OS is concerned (it survives a crash of this process); with TKV_SYNC it
 * has also been fdatasync'd (it survives an OS crash or power loss), and so
 * has every write acknowledged before it.
 * Returns TKV_OK, TKV_INVALID (NULL/empty/oversized key, oversized value,
 * unknown flag), or a background error that made the database read-only
 * (TKV_IO_ERROR, TKV_NO_SPACE, TKV_CORRUPTION). On a handle opened with
 * read_only=1 it returns TKV_READ_ONLY, before any other check, and writes
 * nothing (tkv_errmsg() names the call and the database); so do
 * tkv_delete, tkv_write, tkv_flush and tkv_compact_range. */
TKV_API int tkv_put(tkv_db *db, const void *key, size_t klen, const void *val, size_t vlen, unsigned flags);

/* tkv_delete -- removes key (a no-op if absent). Same returns as tkv_put. */
TKV_API int tkv_delete(tkv_db *db, const void *key, size_t klen, unsigned flags);

/* tkv_delete_range -- removes every key k with begin <= k < end (memcmp
 * order, as keys are ordered), present or not: one write, atomic like
 * tkv_put, that costs the same whatever the range holds. Reads at a
 * snapshot taken before it still see the keys; a put after it (of a key in
 * the range) is visible again. Both bounds are keys (1 <= length <=
 * TKV_MAX_KEY_SIZE). An empty range, begin == end, is a no-op returning
 * TKV_OK (nothing is written), as in RocksDB; begin > end is TKV_INVALID.
 * The range is kept as one tombstone through every tier (docs/design.md,
 * "Range deletions"); the space of the keys it covers is given back as
 * compactions reach them. flags: as tkv_put. Returns as tkv_put.
 * A database that holds range deletions cannot be opened by a tierkv
 * without them (its files carry a newer format version). */
TKV_API int tkv_delete_range(tkv_db *db, const void *begin, size_t blen, const void *end, size_t elen, unsigned flags);

/* ---------------------------------------------------------------- batches */

/* tkv_batch_new -- an empty batch; NULL if memory is exhausted. */
TKV_API tkv_batch *tkv_batch_new(void);
/* tkv_batch_free -- frees `b`; NULL is a no-op. */
TKV_API void tkv_batch_free(tkv_batch *b);
/* tkv_batch_clear -- empties `b` for reuse (keeps its buffer). */
TKV_API void tkv_batch_clear(tkv_batch *b);
/* tkv_batch_put -- appends a put (copied). TKV_OK or TKV_INVALID/TKV_NO_MEMORY;
 * on error the batch is unchanged. */
TKV_API int tkv_batch_put(tkv_batch *b, const void *key, size_t klen, const void *val, size_t vlen);
/* tkv_batch_delete -- appends a delete (copied). Returns as tkv_batch_put. */
TKV_API int tkv_batch_delete(tkv_batch *b, const void *key, size_t klen);
/* tkv_batch_delete_range -- appends a range deletion of [begin, end)
 * (copied), with tkv_delete_range's meaning and argument rules: begin ==
 * end appends nothing and returns TKV_OK, begin > end is TKV_INVALID.
 * Within the batch it takes effect in order: a put of a key in the range
 * before it is deleted, one after it stays. Returns as tkv_batch_put. */
TKV_API int tkv_batch_delete_range(tkv_batch *b, const void *begin, size_t blen, const void *end, size_t elen);
/* tkv_write -- applies every operation of `b` atomically, in order (a later
 * operation on the same key wins): after a crash either all or none of it is
 * present, and no reader ever sees part of it. `b` is not modified. An empty
 * batch is TKV_OK (TKV_READ_ONLY on a read-only handle). Returns as tkv_put. */
TKV_API int tkv_write(tkv_db *db, tkv_batch *b, unsigned flags);

/* ---------------------------------------------------------------- reads */

/* tkv_get -- reads key at snapshot `snap` (NULL = latest). On TKV_OK, *val is a
 * new buffer of *vlen bytes (NUL-terminated for convenience, not counted in
 * *vlen) to be freed with tkv_free(). Returns TKV_OK, TKV_NOT_FOUND (*val=NULL,
 * *vlen=0), TKV_INVALID, TKV_CORRUPTION, TKV_IO_ERROR, TKV_NO_MEMORY. */
TKV_API int tkv_get(tkv_db *db, const tkv_snapshot *snap, const void *key, size_t klen, void **val, size_t *vlen);

/* tkv_multi_get -- n lookups at one consistent snapshot (snap, or the latest
 * state at this call when NULL). For each i, statuses[i] is what tkv_get at
 * that snapshot would return -- TKV_OK, TKV_NOT_FOUND, or the key's own error
 * (TKV_INVALID for a bad key, TKV_IO_ERROR, TKV_CORRUPTION...) -- and
 * vals[i]/vlens[i] are set as tkv_get sets them; a key repeated in the batch
 * gets its answer at each position. One key's error does not stop the others.
 * With async_io (docs/async-io.md) the block reads of all keys are in flight
 * at once; the answers are the same. Returns TKV_OK if the arguments were
 * valid (individual results are in statuses[]), else TKV_INVALID. */
TKV_API int tkv_multi_get(tkv_db *db, const tkv_snapshot *snap, size_t n, const void *const *keys, const size_t *klens,
                          void **vals, size_t *vlens, int *statuses);

/* tkv_get_into -- tkv_get into the caller's buffer, with read options ro
 * (NULL: the latest state, the defaults). A value of up to `cap` bytes is
 * copied into buf and *vlen set to its length: TKV_OK, and no memory is
 * allocated for it on any tier. A larger value: TKV_TRUNCATED, buf holds its
 * first cap bytes and *vlen its whole length (call again with a buffer that
 * large; at the same snapshot the answer is the same). buf may be NULL when
 * cap is 0. Otherwise as tkv_get: TKV_NOT_FOUND (*vlen = 0), TKV_INVALID,
 * TKV_CORRUPTION, TKV_IO_ERROR, TKV_NO_MEMORY. Iterator bounds in ro do not
 * apply to it. */
TKV_API int tkv_get_into(tkv_db *db, const tkv_read_options *ro, const void *key, size_t klen, void *buf, size_t cap,
                         size_t *vlen);

/* tkv_free -- frees memory returned by tierkv (values, property strings). */
TKV_API void tkv_free(void *p);

/* tkv_snapshot_new -- pins the current state: reads through it see exactly the
 * writes acknowledged before this call. NULL if db is NULL or memory is
 * exhausted. Free it with tkv_snapshot_free on the same db. */
TKV_API const tkv_snapshot *tkv_snapshot_new(tkv_db *db);
/* tkv_snapshot_free -- releases a snapshot; NULL is a no-op. */
TKV_API void tkv_snapshot_free(tkv_db *db, const tkv_snapshot *snap);

/* ---------------------------------------------------------------- read options */

/* tkv_read_options -- how one read or iterator reads, for tkv_get_into and
 * tkv_iter_new_opt. Defaults: the latest state, no bounds, fill_cache=1,
 * verify_checksums=1. The functions that take one copy what they need, so it
 * may be reused, changed or freed after the call. Not thread-safe while being
 * changed; reading through it from several threads at once is fine. */
/* tkv_read_options_new -- the defaults, or NULL when out of memory. */
TKV_API tkv_read_options *tkv_read_options_new(void);
/* tkv_read_options_free -- NULL is a no-op. */
TKV_API void tkv_read_options_free(tkv_read_options *ro);
/* tkv_read_options_set_snapshot -- read at snap (NULL: the latest state at
 * each call). The snapshot must outlive the reads and iterators made with it. */
TKV_API void tkv_read_options_set_snapshot(tkv_read_options *ro, const tkv_snapshot *snap);
/* tkv_read_options_set_bounds -- iterators see only keys k with
 * lower <= k < upper (memcmp order); a NULL pointer (with length 0) means no
 * bound on that side, an empty key with a non-NULL pointer is a bound. Seeks
 * outside the bounds are brought inside them, and a scan stops at the first
 * key past a bound without reading on into the next range. The bounds are
 * copied. TKV_OK, or TKV_INVALID (lower > upper, a bound longer than
 * TKV_MAX_KEY_SIZE, NULL with a length), TKV_NO_MEMORY; on an error neither
 * bound is set. */
TKV_API int tkv_read_options_set_bounds(tkv_read_options *ro, const void *lower, size_t llen, const void *upper,
                                        size_t ulen);
/* tkv_read_options_set -- a flag by name, value "0"/"1" (or false/true,
 * off/on, no/yes):
 *   fill_cache        SST blocks read from the device go into the block
 *                     cache (default 1); 0 for scans that should not evict
 *                     the working set. Blocks already cached are used either way.
 *   verify_checksums  SST data blocks read from the device have their
 *                     checksum checked (default 1). With 0 a corrupt block
 *                     can be returned as data; blocks read so are not cached.
 *                     Index and filter blocks, WAL records and the pool's
 *                     rows are checked regardless.
 * TKV_OK or TKV_INVALID (unknown name, not a boolean). */
TKV_API int tkv_read_options_set(tkv_read_options *ro, const char *name, const char *value);

/* ---------------------------------------------------------------- iterators */

/* tkv_iter_new -- an iterator over a consistent view (snap, or the latest state
 * at this call when NULL). It starts unpositioned (not valid); call a seek.
 * Returns TKV_OK, TKV_INVALID or TKV_NO_MEMORY. */
TKV_API int tkv_iter_new(tkv_db *db, const tkv_snapshot *snap, tkv_iter **out);
/* tkv_iter_new_opt -- tkv_iter_new with read options ro (NULL: as
 * tkv_iter_new): its snapshot, bounds and flags. */
TKV_API int tkv_iter_new_opt(tkv_db *db, const tkv_read_options *ro, tkv_iter **out);
/* tkv_iter_free -- frees an iterator; NULL is a no-op. */
TKV_API void tkv_iter_free(tkv_iter *it);
/* tkv_iter_seek -- positions at the first key >= key. */
TKV_API void tkv_iter_seek(tkv_iter *it, const void *key, size_t klen);
/* tkv_iter_seek_for_prev -- positions at the last key <= key. */
TKV_API void tkv_iter_seek_for_prev(tkv_iter *it, const void *key, size_t klen);
/* tkv_iter_seek_first / seek_last -- positions at the smallest / largest key
 * (within the bounds, if the iterator has them). */
TKV_API void tkv_iter_seek_first(tkv_iter *it);
TKV_API void tkv_iter_seek_last(tkv_iter *it);
/* tkv_iter_valid -- 1 if positioned on an entry, else 0 (end, or an error:
 * check tkv_iter_status). */
TKV_API int tkv_iter_valid(const tkv_iter *it);
/* tkv_iter_next / prev -- moves to the next larger / smaller key. Only when valid. */
TKV_API void tkv_iter_next(tkv_iter *it);
TKV_API void tkv_iter_prev(tkv_iter *it);
/* tkv_iter_key / value -- the current entry; only when valid. */
TKV_API const void *tkv_iter_key(const tkv_iter *it, size_t *klen);
TKV_API const void *tkv_iter_value(const tkv_iter *it, size_t *vlen);
/* tkv_iter_status -- TKV_OK, or the first error the iterator met (then it is
 * not valid). */
TKV_API int tkv_iter_status(const tkv_iter *it);

/* ---------------------------------------------------------------- statistics */

/* Counters (tickers): totals since tkv_open, and tiers' current sizes. */
#define TKV_TICKER_PUTS                   0  /* keys put (batches count each) */
#define TKV_TICKER_DELETES                1  /* keys deleted */
#define TKV_TICKER_BYTES_WRITTEN          2  /* key and value bytes accepted */
#define TKV_TICKER_WRITE_BATCHES          3  /* tkv_put/delete/write calls that succeeded */
#define TKV_TICKER_WAL_SYNCS              4  /* WAL fdatasyncs of sync writes */
#define TKV_TICKER_GETS                   5  /* point lookups (tkv_get, tkv_get_into, each key of tkv_multi_get) */
#define TKV_TICKER_GETS_FOUND             6  /* ... that found a value */
#define TKV_TICKER_ITERATORS              7  /* iterators created */
#define TKV_TICKER_STALLS                 8  /* writes that waited for the write controller */
#define TKV_TICKER_STALL_MICROS           9  /* their summed wait */
#define TKV_TICKER_FLUSHES                10 /* memtables flushed */
#define TKV_TICKER_COLUMNS                11 /* column compactions committed */
#define TKV_TICKER_COMPACTIONS            12 /* leveled compactions that merged (l0=sst L0->L1 included) */
#define TKV_TICKER_COMPACTION_READ_BYTES  13 /* bytes columns and compactions read */
#define TKV_TICKER_COMPACTION_WRITE_BYTES 14 /* bytes they wrote */
#define TKV_TICKER_MEMTABLE_BYTES         15 /* now: DRAM of the memtables */
#define TKV_TICKER_POOL_BYTES             16 /* now: bytes of pool pages in use (0 with l0=sst) */
#define TKV_TICKER_SST_BYTES              17 /* now: bytes of the live SSTs, every level */
#define TKV_TICKER_EVENTS_DROPPED         18 /* listener events dropped on a full queue */
#define TKV_TICKER_RANGE_DELETES          19 /* range deletions (tkv_delete_range, batches count each) */
#define TKV_TICKER_COUNT                  20

/* Latency histograms, in nanoseconds. GET and WRITE are measured only with
 * the option statistics=1 (two clock reads per call); the others always. */
#define TKV_HIST_GET        0 /* tkv_get, tkv_get_into, tkv_multi_get (per call) */
#define TKV_HIST_WRITE      1 /* tkv_put, tkv_delete, tkv_write, the wait for the group included */
#define TKV_HIST_STALL      2 /* each write-controller wait */
#define TKV_HIST_FLUSH      3 /* each flush */
#define TKV_HIST_COLUMN     4 /* each column compaction */
#define TKV_HIST_COMPACTION 5 /* each leveled compaction */
#define TKV_HIST_COUNT      6

typedef struct tkv_histogram_data {
    uint64_t count;               /* samples */
    uint64_t sum;                 /* their sum, ns */
    uint64_t max;                 /* the largest, ns */
    uint64_t p50, p90, p99, p999; /* percentiles, ns: within 25 % (log-linear buckets), 0 without samples */
} tkv_histogram_data;

/* tkv_statistics -- the counters into tickers[0..ntickers) and the
 * histograms into hists[0..nhists) (either may be NULL with a count of 0);
 * entries past TKV_TICKER_COUNT / TKV_HIST_COUNT of this library are set to
 * 0, so a program built with a newer header reads zeros for what this
 * library lacks. Lock-free and cheap: a daemon may poll it every second.
 * TKV_OK or TKV_INVALID. */
TKV_API int tkv_statistics(tkv_db *db, uint64_t *tickers, size_t ntickers, tkv_histogram_data *hists, size_t nhists);
/* tkv_ticker_name / tkv_histogram_name -- a constant name ("puts",
 * "get_ns", ...) for export, or NULL for an unknown id. */
TKV_API const char *tkv_ticker_name(int id);
TKV_API const char *tkv_histogram_name(int id);

/* ---------------------------------------------------------------- maintenance */

/* tkv_flush -- makes every write acknowledged so far durable in the next tier
 * (rows of the matrix container with l0=matrix, L0 SSTs with l0=sst) and waits
 * for it; with a full pool it waits for column compaction to make room.
 * Returns TKV_OK or the error that stopped it (TKV_READ_ONLY on a handle
 * opened with read_only=1). */
TKV_API int tkv_flush(tkv_db *db);

/* tkv_compact_range -- compacts the key range [begin, end] (NULL with length 0 =
 * open end; NULL with a non-zero length is TKV_INVALID)
 * down the tree and waits for it. With l0=matrix it first drains the whole
 * matrix container (every row that exists at the call, whatever the range)
 * into L1. Files of the deepest level in the range that hold range
 * tombstones (tkv_delete_range) are then rewritten, so that tombstones no
 * snapshot needs any more go, with the keys they cover.
 * Returns TKV_OK or the error that stopped it (TKV_READ_ONLY on a handle
 * opened with read_only=1). */
TKV_API int tkv_compact_range(tkv_db *db, const void *begin, size_t blen, const void *end, size_t elen);

/* tkv_checkpoint -- makes a new database in directory `out_dir` that holds
 * the contents of `db` at one moment: every write acknowledged before the
 * call began, and of the writes running beside it a prefix in sequence
 * order (as a snapshot taken during the call would see them; never part of
 * a batch). Writes, reads, flushes and compactions go on meanwhile, and
 * several checkpoints may run at once. The checkpoint is opened with
 * tkv_open like any database and is independent of `db` from then on:
 * writes to one are not seen in the other, and both may be open at once.
 * What it holds, and costs (docs/checkpoint.md):
 *  - every SST of the moment, hard-linked from `db`'s directory (no copy,
 *    no extra space while both keep the file), or copied where out_dir is
 *    on another file system;
 *  - the memtables and the matrix container's rows (l0=matrix) written as
 *    L0 SSTs: this is the part of the call that writes data, up to the
 *    memtables' and the pool's contents;
 *  - with l0=matrix, a new, empty pmem pool of the size of `db`'s at
 *    <out_dir>/matrix.pmem (the default pmem_path), with a uuid of its own
 *    that the checkpoint's MANIFEST records: opened with the default
 *    pmem_path it uses that pool, with another pmem_path it creates one
 *    there, and it refuses every existing pool but its own -- `db`'s
 *    above all;
 *  - a MANIFEST and CURRENT describing those files, IDENTITY, and an
 *    empty LOCK (so that a read-only open, which creates nothing, can lock
 *    it). No WAL: its writes are in the L0 SSTs.
 * While it runs, the call pins what it reads as an iterator does (SSTs,
 * memtables, and until they are written the rows and their pool pages).
 * Writes made without the WAL (TKV_NO_WAL, wal=0) are included too: the
 * checkpoint reads the memtables, not the log.
 * out_dir must not exist: it is built as a temporary sibling
 * ("<out_dir>.tmp-ckpt-<pid>-<n>", marked incomplete, which tkv_open
 * refuses) and renamed to out_dir as the last step, after every file and
 * directory is synced. So after a crash or power cut out_dir either does
 * not exist or is a complete checkpoint; the next checkpoint to the same
 * out_dir removes a temporary directory a crash left. `db` is only read;
 * it may be a read-only handle (read_only=1), whose database then changes
 * in nothing but the SSTs' link counts and ctimes (their hard links).
 * Returns TKV_OK, or:
 *  TKV_INVALID     NULL argument; out_dir exists (nothing is changed), is
 *                  empty, or its parent directory does not exist
 *  TKV_CORRUPTION  an SST of `db` is shorter than its MANIFEST says (when
 *                  copying)
 *  TKV_IO_ERROR, TKV_NO_SPACE, TKV_NO_MEMORY
 *  or the background error that made `db` read-only (no checkpoint is made).
 * On every error out_dir is not created, and `db` is unaffected. */
TKV_API int tkv_checkpoint(tkv_db *db, const char *out_dir);

/* tkv_property -- a text report, freed with tkv_free, or NULL for an unknown
 * name (tkv_errmsg says so). Names: "tkv.stats" (multi-line counters),
 * "tkv.levels" (one line per tier/level), "tkv.matrix" (the matrix container:
 * rows, pool space, columns, lookups), "tkv.pmem" (the pmem device: mode,
 * geometry, persists), "tkv.memory" (DRAM per part against dram_budget),
 * "tkv.options" (effective options),
 * "tkv.num-entries-active-mem" and other numeric properties documented in
 * docs/options.md. */
TKV_API char *tkv_property(tkv_db *db, const char *name);

/* ---------------------------------------------------------------- verification */

/* tkv_verify -- checks every checksum and structure of the database in
 * directory `dir`, and that its files agree, without changing anything:
 *  - CURRENT and the MANIFEST it names: every record's checksum, every edit
 *    decoded and applied;
 *  - every WAL the MANIFEST does not cover: every record's checksum, every
 *    batch decoded;
 *  - every SST the MANIFEST lists: present with the recorded size; footer,
 *    index, filter and properties blocks; every data block's checksum and
 *    every entry (valid internal keys in strictly increasing order, inside
 *    the index separators, all in the filter); the properties against the
 *    blocks and the MANIFEST's record against the properties;
 *  - the pmem pool (pmem_path of `opts`, else <dir>/matrix.pmem, else the
 *    file <dir>/POOL records): the header, every row header and that no page
 *    is owned twice, every RowTable's fields, page checksums, metadata and
 *    live entries; that the pool is this database's (its uuid), that it
 *    holds every row the MANIFEST lists and that each cursor is possible.
 * `opts` may be NULL; only pmem_path is used. Nothing is written, created,
 * renamed or deleted: files are opened read-only and the pool is mapped
 * read-only, with no recovery. The database must be closed: while a
 * read-write handle (in this or another process) has it open the call
 * returns TKV_BUSY and checks nothing; while the call runs it holds shared locks on <dir>/LOCK
 * and on the pool file, so a read-write tkv_open of the database (or of the
 * pool) returns TKV_BUSY until it ends. Read-only handles (read_only=1)
 * hold shared locks too: the call runs beside them.
 * What a crash legitimately leaves and the next open cleans up (a torn last
 * record of a log, SSTs the MANIFEST does not list, a row the MANIFEST does
 * not list, WALs older than the MANIFEST's log number) is a note, not a
 * problem. A flipped byte in the last record of a log cannot be told from a
 * torn append (docs/format-wal.md) and is a note too.
 * The report (if `report` is not NULL; freed with tkv_free) is text, one
 * item per line:
 *    verify: dir=<dir> problems=<n> notes=<n>
 *    manifest: file=<name> records=<n> ssts=<n> rows=<n> log_number=<n> last_seq=<n>
 *              (or "manifest: none read")
 *    wal: files=<n> records=<n> payload_bytes=<n>
 *    sst: files=<n> data_blocks=<n> entries=<n>
 *    pool: file=<path> rows=<n> pages=<n> entries=<n>   (or "pool: none ...")
 *    problem: <message naming the file and what is wrong>   (the first 100)
 *    note: <message>                                        (the first 100)
 * Returns:
 *  TKV_OK          no problem (the report may hold notes)
 *  TKV_CORRUPTION  at least one problem was damage or disagreement; the
 *                  report lists them, tkv_errmsg() gives the count and the
 *                  first one
 *  TKV_IO_ERROR    problems were found, none of them corruption (a file
 *                  could not be read)
 *  TKV_INVALID     NULL or empty dir; dir missing or holding no database
 *  TKV_BUSY        the database or its pool is open read-write
 *  TKV_NO_MEMORY
 * *report is set (non-NULL) exactly when the return is TKV_OK,
 * TKV_CORRUPTION or TKV_IO_ERROR. The command-line tool's `tkv check` prints
 * this report (docs/tkv.md). */
TKV_API int tkv_verify(const char *dir, const tkv_options *opts, char **report);

#ifdef __cplusplus
}
#endif
#endif /* TIERKV_H */
