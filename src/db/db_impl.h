// SPDX-License-Identifier: Apache-2.0
/*
 * db_impl.h -- the tkv_db handle: the state that the engine's modules share,
 * its locking rules, and the few helpers every module needs (the sticky
 * background error, timed waits on bg_cv, counters).
 *
 * The engine's files form a one-way graph, declared in src/db/LAYERS and
 * checked by `make check-structure`: a file includes and calls only files
 * below it. This header is the bottom of it. State that belongs to one
 * module is opaque here (the matrix container's `struct mx_state`, the
 * scheduler's `struct silk_state`): only that module's files see inside.
 *
 * Locking (one mutex, `mu`, short critical sections):
 *  - mu protects: the writer queue, `sv` (the current superversion pointer),
 *    the WAL writer and file numbers, the snapshot list, bg_error, the
 *    pending outputs, the compaction bookkeeping below, and the matrix
 *    container's state (mx_int.h).
 *  - The active memtable is written only by the current write-group leader,
 *    outside mu (the skiplist allows one writer with lock-free readers). Only
 *    the leader switches memtables, so the memtable it inserts into cannot
 *    change under it.
 *  - last_seq is published (release) after the group's records are in the
 *    memtable; readers read it (acquire) and never look at larger sequences,
 *    so a reader never sees part of a batch.
 *  - Readers pin a superversion (refcounted: memtables + immutables + rows)
 *    and the current version under mu (superversion.h) and then read
 *    without any lock.
 *  - Background state changes (imm list, versions, bg_error, back-pressure
 *    flags) are signalled on bg_cv.
 */
#ifndef TKV_DB_IMPL_H
#define TKV_DB_IMPL_H

#include <pthread.h>
#include <stdint.h>

#include "db/budget.h"
#include "db/events.h"
#include "db/options.h"
#include "db/trash.h"
#include "io/io.h"
#include "io/uring.h"
#include "matrix/rowset.h"
#include "mem/batch.h"
#include "mem/memtable.h"
#include "mem/wal.h"
#include "sched/bgpool.h"
#include "sched/clock.h"
#include "sst/cache.h"
#include "sst/table_cache.h"
#include "sst/version.h"
#include "util/lathist.h"

/* The file that marks a directory as a tierkv database (db_open.c), and
 * what it holds; a checkpoint writes it too (db_checkpoint.c). */
#define DB_IDENTITY_FILE "IDENTITY"
#define DB_IDENTITY_TEXT "tierkv database\nformat 1\n"
/* The file whose flock keeps read-write and read-only opens apart (db_open.c). */
#define DB_LOCK_FILE "LOCK"

struct mx_state;   /* the matrix container (mx_int.h); NULL with l0=sst */
struct silk_state; /* the scheduler (silk.c) */
struct silk_pmem;  /* the scheduler's pmem tier (silk_pmem.c) */

/* superversion -- an immutable, refcounted view of the in-memory tier and
 * of the matrix container's row handles (superversion.h). */
typedef struct superversion {
    uint32_t refs;     /* atomic */
    memtable *mem;     /* active memtable (ref held) */
    memtable **imm;    /* immutable memtables, oldest first (refs held) */
    uint64_t *imm_wal; /* the WAL file number that holds each imm's data */
    size_t nimm;
    rowset *rows; /* l0=matrix: the rows, newest first (ref held); NULL with l0=sst */
} superversion;

/* A pending write in the group-commit queue (write.c). */
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
    uint64_t user_range_deletes;                          /* range deletions accepted */
    uint64_t batches, groups, wal_records, wal_syncs;
    uint64_t wal_recycled; /* WALs written over an obsolete one's file (wal_recycle) */
    uint64_t gets, gets_found, multigets, iterators_created;
    /* async reads (async_io): keys of batched multi_gets that reached the SSD
     * tree, their block reads, lookups that shared another key's read,
     * blocks found cached, waits for a free ring slot; iterator readahead
     * reads, blocks served from them, seeks that read several levels at once */
    uint64_t mget_async_keys, mget_reads, mget_shared, mget_cache_hits, mget_full_waits;
    table_prefetch_stats prefetch;
    uint64_t seek_parallel;
    uint64_t memtable_switches;
    uint64_t recovered_records, recovered_torn_records, recovered_torn_bytes;
    /* WALs recovery did not replay at all (a broken predecessor chain, or a
     * skipped bad header: recover.c) and their bytes */
    uint64_t recovered_dropped_logs, recovered_dropped_bytes;
    uint64_t flushes, flush_bytes;
    uint64_t compactions[IO_NCLASSES], compaction_read_bytes[IO_NCLASSES], compaction_write_bytes[IO_NCLASSES];
    uint64_t trivial_moves;
    uint64_t stall_slowdowns, stall_stops, stall_micros;
} db_counters;

struct tkv_db {
    char *dir;
    struct tkv_options opts;
    dram_split dram;         /* the DRAM budget's shares (budget.h), set at open */
    size_t mem_bytes;        /* atomic: arena bytes of every live memtable (mem/arena.h accounting) */
    arena_spares mem_spares; /* flushed memtables' arena blocks kept for the next ones, and blocks the
                                  * flush thread faulted in ahead (flush.c): mem_bytes + these <= the
                                  * memtables' DRAM share; made first at open, freed last at close */
    int spares_ahead;        /* 0 until the active memtable is half full, then 1 (write.c asks the flush thread
                              * to reserve the next memtable's blocks while idle: flush.c reserve_spares_ahead),
                              * 2 once it has; 0 again at each memtable switch; mu */
    int lock_fd;
    io_stats io;
    trash *trash; /* obsolete files, deleted a chunk at a time (trash.h) */
    db_counters ctr;

    pthread_mutex_t mu;
    pthread_cond_t bg_cv;       /* signalled on every background state change (CLOCK_MONOTONIC: db_wait_us) */
    writer *wq_head, *wq_tail;  /* group-commit queue; head is the leader (write.c) */
    unsigned writers_in;        /* threads inside write_batch (under mu) */
    unsigned writers_peak;      /* most of them at once in this window, and in the one before */
    unsigned writers_prev_peak; /* (write.c writers_recent: the pacing step grows with it) */
    uint64_t writers_epoch;     /* start of this window, sched_mono_us */
    superversion *sv;           /* current view (ref held by the db) */
    wal_writer *wal;            /* NULL when opts.wal == 0 */
    uint64_t wal_number;        /* file number of the active memtable's WAL */
    /* WALs switched away from while they held appends not yet fdatasync'd,
     * kept open until the next TKV_SYNC group syncs them or a flush makes
     * them obsolete (write.c, invariant 6). Leader (or close) only, under mu. */
    struct db_old_wal {
        wal_writer *w;
        uint64_t number;
    } * wal_old;
    size_t nwal_old, wal_old_cap;
    unsigned wal_old_detached; /* a sync group's leader syncs and closes kept WALs outside mu (write.c) */
    /* Obsolete WAL files kept to be written again as new logs (wal_recycle;
     * files.c files_wal_recycled): none is open, and each is usable once
     * the write-back thread has passed its ticket (io_wb_passed). Under mu. */
    struct db_recycled_wal {
        uint64_t number;
        uint64_t wb_ticket;
    } wal_recycled[DB_WAL_RECYCLE_MAX];
    size_t nwal_recycled;
    uint64_t last_seq;             /* atomic: last published sequence */
    struct tkv_snapshot snapshots; /* circular list head, oldest first */
    uint64_t open_iterators;       /* atomic */
    int bg_error;                  /* sticky write error (< 0) or 0 */
    char bg_errmsg[512];
    struct tkv_batch group; /* scratch for merging a write group (leader only) */

    /* Async reads (io/uring.h): NULL with async_io=off, or when auto found
     * io_uring unusable at open -- then async_off says why (tkv.stats). */
    io_ring_pool *rings;
    char async_off[256];

    /* SSD tier */
    version_set *vs;
    table_cache *tc;
    tkv_cache *block_cache;
    uint64_t *pending; /* file numbers being written, not yet in a version (files.c) */
    int obsolete_kept; /* atomic: the last files_delete_obsolete kept files only older versions use */
    size_t npending, pending_cap;
    int shutting_down;
    int columns_stop;        /* atomic: set by mx_stop (after the flush thread has ended): a column merge in
                                  * flight stops at its next user key, CMP_STOPPED, and is discarded */
    int manual_waiting;      /* a tkv_compact_range waits for every compaction to end; no new picks */
    int checkpoints;         /* tkv_checkpoint calls in progress (mu): tkv_close waits for them on bg_cv */
    int compactions_running; /* deep + L0 compactions in flight */
    uint64_t compact_cursor[VERSION_LEVELS]; /* round-robin file index per level (compact_pick.c) */
    double deep_score;                       /* the current version's deep backlog (files_deep_score); mu */

    /* Background threads: flush.c, compact_thread.c (the matrix container's
     * column thread is in its own state). */
    pthread_t flush_thread;
    int flush_started;
    struct bg_task *flush_task; /* with an env: the flush as a task of its pool */
    pthread_t l0_thread;        /* high pool: L0 SST -> L1 compactions */
    pthread_t *deep_threads;    /* compaction_threads threads: deep (L1+) compactions only */
    int ndeep_threads;
    int workers_started;
    struct bg_task **cmp_tasks; /* with an env: the L0 worker, then the deep workers, as tasks of its pool */
    int ncmp_tasks;

    /* Back-pressure flags (atomic), read without mu by the scheduler's
     * monitor (silk.c) to pause deep work while writers wait. */
    int write_stopped; /* a writer waits for a memtable (STOP); written by write.c */
    int flush_blocked; /* the flush thread waits for room in the pool; written by mx_flush.c only */

    struct mx_state *mx;         /* NVM tier (l0=matrix), NULL with l0=sst */
    struct silk_state *silk;     /* the scheduler (silk.h) */
    struct silk_pmem *pmem_tier; /* its pmem tier (silk_pmem.h); NULL without a pool */

    /* Statistics (tkv_statistics): latency histograms in ns, indexed by
     * TKV_HIST_*; and the listener's queue (NULL without a listener), started
     * first at open and stopped last at close, so every event is delivered. */
    lathist hist[TKV_HIST_COUNT];
    events *events;

    /* The env whose resources this database shares (opts.env, env.h; NULL:
     * none): attached at open, detached last at close. env_pool is the pool
     * bytes counted against its pmem_budget. */
    struct tkv_env *env;
    uint64_t env_pool;
    struct bg_group *bg; /* with an env: this database's tasks in its pool (sched/bgpool.h) */
};

/* db_set_bg_error -- records a sticky error (first one wins) with the
 * thread's current error message; the database is read-only from then on.
 * Caller holds mu. */
void db_set_bg_error(tkv_db *db, int code);

/* db_bg_error -- tkv_err(bg_error) with the recorded message: the error to
 * return to a caller that found bg_error set. Caller holds mu. */
int db_bg_error(tkv_db *db);

/* db_check_writable -- 0, or TKV_READ_ONLY naming `what` (the API call)
 * and the database when db was opened with read_only=1: every call that
 * would change the database asks first, before it checks anything else.
 * No lock needed (the options never change). */
int db_check_writable(tkv_db *db, const char *what);

/* db_shut_down -- sets shutting_down and wakes every background thread
 * waiting on bg_cv (idempotent). Takes mu. */
void db_shut_down(tkv_db *db);

/* db_wait_us -- waits on bg_cv for at most `us` microseconds. Caller holds mu. */
void db_wait_us(tkv_db *db, uint64_t us);

/* db_bg_signal -- a background state change: broadcasts bg_cv and, with an
 * env, kicks the database's tasks in the shared pool (every waiter of bg_cv
 * is woken this way, never by a bare broadcast). Caller holds mu. */
void db_bg_signal(tkv_db *db);

/* Background loops (the flush, the compaction workers, the column
 * compactions) are written as steps that return BG_AGAIN, BG_IDLE or
 * BG_SLEEP (with a wait, 0: until signalled) or BG_DONE (sched/bgpool.h):
 * without an env a thread of the database runs them in a loop, waiting on
 * bg_cv after BG_IDLE or BG_SLEEP alike (db_step_wait); with one they are
 * tasks of the env's pool. */
void db_step_wait(tkv_db *db, uint64_t wait_us);

/* db_event -- posts event `type` to the listener (none: nothing) with the
 * given fields (tkv_event). Never blocks; may be called with mu held. */
void db_event(tkv_db *db, int type, uint64_t job, int level, int status, uint64_t micros, uint64_t bytes_read,
              uint64_t bytes_written);
/* db_event_job -- a job number for a begin/end pair (0 without a listener). */
static inline uint64_t db_event_job(tkv_db *db) { return events_next_job(db->events); }
/* db_hist_add_us -- one sample of histogram h, given in microseconds. */
static inline void db_hist_add_us(tkv_db *db, int h, uint64_t us) { lathist_add(&db->hist[h], us * 1000u); }

/* db_stat_start / db_stat_end -- time one API call into histogram h when
 * the statistics option is on (two clock reads), else nothing. */
static inline uint64_t db_stat_start(const tkv_db *db) { return db->opts.statistics ? sched_mono_ns() : 0; }
static inline void db_stat_end(tkv_db *db, int h, uint64_t t0)
{
    if (t0) lathist_add(&db->hist[h], sched_mono_ns() - t0);
}

static inline void ctr_add(uint64_t *c, uint64_t n) { __atomic_fetch_add(c, n, __ATOMIC_RELAXED); }
static inline uint64_t ctr_get(const uint64_t *c) { return __atomic_load_n(c, __ATOMIC_RELAXED); }

#endif
