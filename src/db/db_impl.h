/*
 * db_impl.h -- the tkv_db handle: state shared by the write path (db.c) and the
 * read path (db_read.c).
 *
 * Locking (one mutex, `mu`, short critical sections):
 *  - mu protects: the writer queue, `sv` (the current superversion pointer),
 *    the WAL writer and file numbers, the snapshot list, bg_error.
 *  - The active memtable is written only by the current write-group leader,
 *    outside mu (the skiplist allows one writer with lock-free readers). Only
 *    the leader switches memtables, so the memtable it inserts into cannot
 *    change under it.
 *  - last_seq is published (release) after the group's records are in the
 *    memtable; readers read it (acquire) and never look at larger sequences,
 *    so a reader never sees part of a batch.
 *  - Readers pin a superversion (refcounted: memtables + immutables) under mu
 *    and then read without any lock.
 */
#ifndef TKV_DB_IMPL_H
#define TKV_DB_IMPL_H

#include <pthread.h>
#include <stdint.h>

#include "db/options.h"
#include "io/io.h"
#include "matrix/pool.h"
#include "matrix/rowtable.h"
#include "mem/batch.h"
#include "mem/memtable.h"
#include "mem/wal.h"
#include "db/silk.h"
#include "db/trash.h"
#include "sst/cache.h"
#include "sst/table_cache.h"
#include "sst/version.h"

/* rowset -- the matrix-container rows a view reads, newest first (l0=matrix).
 * Immutable and refcounted, shared by superversions. The rowtable handles
 * belong to db->mx: a handle is closed only once no live version lists its
 * row, and a reader always pins a version that lists every row of its
 * rowset (mx.c invariant 1), so the handles outlive every reader. */
typedef struct rowset {
    uint32_t refs; /* atomic */
    size_t n;
    rowtable **rows;
} rowset;

/* rowset_new -- a rowset of rows[0..n) (copied array), refs 1; NULL on OOM. */
rowset *rowset_new(rowtable *const *rows, size_t n);
rowset *rowset_ref(rowset *rs);   /* NULL-safe */
void rowset_unref(rowset *rs);    /* NULL-safe */

/* superversion -- an immutable, refcounted view of the in-memory tier and
 * of the matrix container's row handles. */
typedef struct superversion {
    uint32_t refs;         /* atomic */
    memtable *mem;         /* active memtable (ref held) */
    memtable **imm;        /* immutable memtables, oldest first (refs held) */
    uint64_t *imm_wal;     /* the WAL file number that holds each imm's data */
    size_t nimm;
    rowset *rows;          /* l0=matrix: the rows, newest first (ref held); NULL with l0=sst */
} superversion;

/* sv_replace -- installs a new current superversion: the current one without
 * its `drop_imm` oldest immutable memtables, with `rows` (ref taken; NULL =
 * keep the current rowset). Caller holds mu. 0 or TKV_NO_MEMORY (nothing
 * changed). */
int sv_replace(struct tkv_db *db, size_t drop_imm, rowset *rows);

superversion *sv_ref(superversion *sv);
void sv_unref(superversion *sv);

/* A pending write in the group-commit queue. */
typedef struct writer {
    struct tkv_batch *batch;
    int sync;
    int no_wal;
    int done;
    int status;
    pthread_cond_t cv;
    struct writer *next;
} writer;

struct tkv_snapshot {
    uint64_t seq;
    struct tkv_snapshot *prev, *next;
};

/* Counters reported by tkv.stats (atomic, relaxed). */
typedef struct db_counters {
    uint64_t user_puts, user_deletes, user_bytes_written; /* keys + values accepted */
    uint64_t batches, groups, wal_records, wal_syncs;
    uint64_t gets, gets_found, multigets, iterators_created;
    uint64_t memtable_switches;
    uint64_t recovered_records, recovered_torn_records, recovered_torn_bytes;
    uint64_t flushes, flush_bytes;
    uint64_t compactions[IO_NCLASSES], compaction_read_bytes[IO_NCLASSES], compaction_write_bytes[IO_NCLASSES];
    uint64_t trivial_moves;
    uint64_t stall_slowdowns, stall_stops, stall_micros;
} db_counters;

/* Counters of the matrix container (atomic, relaxed), for tkv.matrix. */
typedef struct mx_counters {
    uint64_t rows_flushed, flush_entries, flush_data_bytes; /* rows built by flushes */
    uint64_t flush_no_space, flush_wait_micros;    /* flushes that found the pool full, time waited */
    uint64_t lookups, rows_searched, rows_filtered, hints_used, hints_rejected, comparisons;
    uint64_t columns, column_row_bytes, column_row_entries, column_l1_read_bytes, column_write_bytes;
    uint64_t column_failures, compactors;          /* failed (retried) columns, compactors formed */
    uint64_t rows_dropped, pages_released;
    uint64_t pinned_switches;                      /* memtables queued in DRAM while views pinned a full pool */
} mx_counters;

/* State of the matrix container (l0=matrix); see mx.h. Fields guarded by
 * db->mu unless noted. */
typedef struct matrix_state {
    pool *pool;              /* NULL with l0=sst */
    char *path;
    rowtable **rows;         /* every open row handle, oldest (smallest id) first */
    size_t nrows, cap;
    uint64_t column_bytes;   /* effective column size */
    uint64_t compactor_max_id; /* rows with id <= this form the compactor; 0 = no compactor */
    int column_running;
    int flush_blocked;       /* the flush thread waits for room in the pool */
    size_t rows_at_flush;    /* open rows when the last flush attempt started */
    int drain_waiters;       /* tkv_compact_range calls waiting for every row to drain */
    int failures;            /* consecutive failed columns (backoff) */
    int gave_up;             /* shutting down and columns keep failing: flush stops waiting */
    uint64_t retry_at_us;    /* after a failure, no column before this time */
    pthread_t thread;
    int thread_started;
    mx_counters ctr;
} matrix_state;

struct tkv_db {
    char *dir;
    struct tkv_options opts;
    int lock_fd;
    io_stats io;
    trash *trash;                /* obsolete files, deleted a chunk at a time (trash.h) */
    db_counters ctr;

    pthread_mutex_t mu;
    writer *wq_head, *wq_tail;   /* group-commit queue; head is the leader */
    superversion *sv;            /* current view (ref held by the db) */
    wal_writer *wal;             /* NULL when opts.wal == 0 */
    uint64_t wal_number;         /* file number of the active memtable's WAL */
    uint64_t last_seq;           /* atomic: last published sequence */
    struct tkv_snapshot snapshots; /* circular list head */
    uint64_t open_iterators;     /* atomic */
    int bg_error;                /* sticky write error (< 0) or 0 */
    char bg_errmsg[512];
    struct tkv_batch group;      /* scratch for merging a write group (leader only) */

    /* SSD tier */
    version_set *vs;
    table_cache *tc;
    tkv_cache *block_cache;
    uint64_t *pending;           /* file numbers being written (not yet in a version) */
    size_t npending, pending_cap;
    pthread_cond_t bg_cv;        /* signalled on every background state change */
    pthread_t flush_thread;
    int threads_started;
    int shutting_down;
    int manual_waiting;          /* a tkv_compact_range waits for every compaction to end; no new picks */
    uint64_t compact_cursor[VERSION_LEVELS]; /* round-robin file index per level */

    /* NVM tier (l0=matrix) */
    matrix_state mx;

    /* Scheduler (silk.h) and the low-priority pool */
    silk_state silk;
    int write_stopped;           /* atomic: a writer waits for a memtable (STOP) */
    pthread_t *deep_threads;     /* compaction_threads threads: deep (L1+) compactions only */
    int ndeep_threads;
    pthread_t l0_thread;         /* high pool: L0 SST -> L1 compactions */
    int compactions_running;     /* deep + L0 compactions in flight (mu) */
};

/* db_add_pending / db_remove_pending -- protect an output file number from
 * obsolete-file deletion while it is being written. Caller holds mu. */
int db_add_pending(tkv_db *db, uint64_t number);
void db_remove_pending(tkv_db *db, uint64_t number);

/* db_background_thread -- first call of every background thread of the
 * engine (flush, column, L0 and deep compactions): sets its name and lowers
 * its CPU priority to the background_nice option. */
void db_background_thread(const char *name, tkv_db *db);

/* db_smallest_snapshot -- the oldest sequence any reader can still ask for. Caller holds mu. */
uint64_t db_smallest_snapshot(tkv_db *db);

/* Background threads (bg.c). */
int db_start_background(tkv_db *db);
void db_stop_background(tkv_db *db);
/* db_wait_flushed -- caller holds mu; waits until every immutable memtable is flushed. */
int db_wait_flushed(tkv_db *db);

/* db_get_view -- like db_get_sv and also pins the current version. */
superversion *db_get_view(tkv_db *db, const tkv_snapshot *snap, uint64_t *seq, version **v);

/* db_set_bg_error -- records a sticky error (first one wins); caller holds mu. */
void db_set_bg_error(tkv_db *db, int code);

/* db_wal_path -- "<dir>/<number>.wal" into buf. */
void db_wal_path(const tkv_db *db, uint64_t number, char *buf, size_t len);

/* db_get_sv -- pins the current superversion and reads the sequence to read at. */
superversion *db_get_sv(tkv_db *db, const tkv_snapshot *snap, uint64_t *seq);

/* db_now_us -- monotonic microseconds. */
uint64_t db_now_us(void);
/* db_timed_wait -- waits on bg_cv for at most `us` microseconds. Caller holds mu. */
void db_timed_wait(tkv_db *db, uint64_t us);
/* db_appendf -- printf into a growing buffer; sets *oom on out of memory. */
void db_appendf(tkv_buf *b, int *oom, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static inline void ctr_add(uint64_t *c, uint64_t n) { __atomic_fetch_add(c, n, __ATOMIC_RELAXED); }
static inline uint64_t ctr_get(const uint64_t *c) { return __atomic_load_n(c, __ATOMIC_RELAXED); }

#endif
