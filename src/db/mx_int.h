// SPDX-License-Identifier: Apache-2.0
/*
 * mx_int.h -- private to the matrix container's files (mx_*.c): its state,
 * its constants, the registry of row handles, and the rules that keep it
 * safe. The rest of the engine sees only mx.h.
 *
 * Files: mx_open.c (open, reconcile with the MANIFEST, close, the registry),
 * mx_reclaim.c (release floors, dead pages, dropped rows; how full the pool
 * is), mx_read.c (point lookups and iterators over rows), mx_flush.c
 * (memtable -> RowTable, waiting for room), mx_colrd.c (the range
 * tombstones of a column), mx_column.c (the column compaction thread),
 * mx_props.c (tkv.matrix, tkv.pmem). Each calls only the
 * ones before it in this list (src/db/LAYERS).
 *
 * Invariants:
 *  (1) A view is a superversion and the version pinned with it, both taken
 *      under db->mu (sv_get_view). The rows a view reads are the rowset of
 *      its superversion, at the cursors its version records. Every edit that
 *      changes which rows exist (a flush adds one; a column removes the rows
 *      it drains) is logged and its version installed in the same mu
 *      critical section as the superversion with the matching rowset, so a
 *      pinned pair always agrees: a reader holding the old pair sees a
 *      column's entries in the rows, one holding the new pair sees them in
 *      L1 -- never neither.
 *  (2) A row's own cursor (rowtable_set_cursor) is the smallest cursor any
 *      live version has for it (vset_row_floor); readers pass their view's
 *      cursor, which is never below it. Pages below the own cursor are
 *      released only when it rises -- after the MANIFEST edit carrying the
 *      higher cursor is synced (vset_log_and_apply syncs before it installs)
 *      -- so a crash never finds a released page that its MANIFEST cursor
 *      still covers.
 *  (3) A row is dropped (slot cleared, then its pages freed) once no live
 *      version lists it; until then its handle stays open.
 *  (4) The compactor is the oldest rows (ids <= compactor_max_id; row ids
 *      grow with age). Moving their entries to L1 never leaves an older
 *      version of a key in L0 above a newer one in L1.
 *  (5) Each column ends every compactor row on a user-key change
 *      (matrix/column.h), so cursors stay aligned. Up to column_threads
 *      columns run at once: each next one is picked from the cursors the
 *      one before it will leave, so they cover disjoint, consecutive key
 *      ranges and (columns align to L1 file boundaries) disjoint L1 files;
 *      they commit in pick order, and when one fails, every later one is
 *      discarded (its cursors assumed the failed one's). mx_column.c.
 *
 * The persist orders of a flush and of a column are written at the top of
 * mx_flush.c and mx_column.c.
 */
#ifndef TKV_DB_MX_INT_H
#define TKV_DB_MX_INT_H

#include "db/mx.h"
#include "matrix/column.h"
#include "matrix/pool.h"
#include "sched/cpuload.h"
#include "sched/drainmeter.h"

/* Bytes a media access of the pool is charged as (a cache line), for the
 * scheduler's pmem tier (mx_read.c). */
#define MX_PMEM_LINE         64u
#define MX_DEFAULT_POOL_SIZE (UINT64_C(1) << 30)
/* The pool must hold this many memtables, so that a compactor and a
 * receiver fit (and a single row always fits in an empty pool). */
#define MX_MIN_MEMTABLES_PER_POOL 4
#define MX_RETRY_MIN_US           10000u
#define MX_RETRY_MAX_US           2000000u
#define MX_IDLE_WAIT_US           100000u
/* An idle column thread gives back the blocks of free pages (pool_trim) at
 * most this often, while the pool changes, once no page has been allocated
 * for MX_TRIM_IDLE_US. */
#define MX_TRIM_EVERY_US 1000000u
#define MX_TRIM_IDLE_US  1000000u
/* The first column's pace counts as the drain rate once it has run this long. */
#define MX_FIRST_DRAIN_US 20000u
/* After a write slept at the container ramp's pace, columns start on the
 * boost thread for this long (mx_note_drain_wait). */
#define MX_BOOST_HOLD_US 250000u
/* While boosted, a background thread starts the first column once the boost
 * thread has been busy this long with the work after its commit (collecting
 * rows, deleting files) -- not at once: that work follows every commit. */
#define MX_BOOST_HANDOFF_US 20000u
/* Column failures after which a shutdown stops waiting for room. */
#define MX_SHUTDOWN_GIVE_UP 3

/* Counters of the matrix container (atomic, relaxed), for tkv.matrix. */
typedef struct mx_counters {
    uint64_t rows_flushed, flush_entries, flush_data_bytes; /* rows built by flushes */
    uint64_t flush_value_bytes, flush_lz4_values;           /* their values' own bytes; values stored as lz4 */
    uint64_t flush_batch_bytes;                             /* the same flushes in writer units (batch bytes) */
    uint64_t full_flush_batch_bytes, full_flush_pages;      /* flushes of full memtables: batch bytes and the
                                                   * pool pages their rows took (mx_fill's estimate) */
    uint64_t flush_no_space, flush_wait_micros;             /* flushes that found the pool full, time waited */
    uint64_t lookups, rows_searched, rows_filtered, hints_used, hints_rejected, comparisons;
    row_seek_stats seeks; /* iterator seeks over the rows (rowtable_iters_at) */
    uint64_t columns, column_row_bytes, column_row_entries, column_l1_read_bytes, column_write_bytes;
    uint64_t column_l1_merged_files, column_l1_merged_bytes; /* small L1 neighbours taken in (column.h step 5) */
    uint64_t column_failures, compactors;                    /* failed (retried) columns, compactors formed */
    uint64_t picks_planned, picks_blocked_kept;              /* columns planned; picks that a remembered blocked
                                                             * pick answered without planning (mx_pick.c) */
    uint64_t columns_parallel, column_cancels; /* columns started beside another; discarded after an earlier failed */
    uint64_t max_in_flight;                    /* most columns in flight at once */
    uint64_t columns_boosted;                  /* columns run on the boost thread */
    uint64_t rows_dropped, pages_released;
    uint64_t pinned_switches; /* memtables queued in DRAM while views pinned a full pool */
} mx_counters;

/* The matrix container's state (db->mx, l0=matrix only). Fields guarded
 * by db->mu unless noted. */
struct mx_state {
    pool *pool;
    char *path;
    rowtable **rows; /* every open row handle, oldest (smallest id) first */
    size_t nrows, cap;
    size_t dram_bytes;           /* the DRAM of every open row handle (rowtable_props.dram_bytes); atomic writes */
    uint64_t column_bytes;       /* effective column size */
    uint64_t compactor_max_id;   /* rows with id <= this form the compactor; 0 = no compactor */
    uint64_t compactor_entries;  /* entries of the compactor's rows when it formed */
    struct column_job *inflight; /* columns in flight, in pick (= key) order: mx_column.c */
    unsigned ncolumns;           /* how many */
    struct {                     /* the last pick, if L1 files busy in a deep compaction blocked it (mx_pick.c) */
        version *v;              /* the version it was planned in (a ref); NULL: none remembered */
        const struct column_job *tail; /* the column in flight it was to follow (NULL: none) */
        unsigned ncolumns;             /* columns in flight then */
        size_t l1_first, l1_end;       /* the L1 files of v it needs */
    } blocked;
    uint64_t last_commit_us;   /* when the last column committed */
    size_t rows_at_flush;      /* open rows when the last flush attempt started */
    int flush_building;        /* mx_flush_one runs on sv->imm[0] ... */
    uint64_t flush_alloc_mark; /* ... and the pool had handed out this many pages when it began: once
                                * pool_stats.pages_allocated differs, imm[0]'s row holds its pages
                                * (only flushes allocate pool pages) and mx_fill stops counting it */
    char no_space_msg[320];    /* why the last flush found no room: the pool's pages, or the disk under it */
    uint64_t blocked_since;    /* when the flush began waiting for room (db->flush_blocked) */
    int drain_waiters;         /* tkv_compact_range calls waiting for every row to drain */
    int failures;              /* consecutive failed columns (backoff) */
    int gave_up;               /* shutting down and columns keep failing: flush stops waiting */
    uint64_t retry_at_us;      /* after a failure, no column before this time */
    uint64_t trim_at_us;       /* the last pool_trim (column thread only) */
    uint64_t trim_mark;        /* the pool's persists + discards at that trim (column thread only) */
    drainmeter drain;          /* the committed columns' drains (writer units) and times (drain_since) */
    pthread_t *threads;        /* column_threads column-compaction threads, then the boost thread */
    int nthreads;              /* threads started (to join) */
    struct bg_task **tasks;    /* with an env: column_threads tasks of its pool instead of threads */
    int ntasks;
    int max_columns;        /* columns in flight at most: column_threads */
    int boost_started;      /* the boost thread runs (the last of threads[]) */
    uint64_t boost_busy_us; /* 0 while the boost thread is at its pick (or waiting there); else when it
                              * began the work after its last commit, or an idle collect */
    uint64_t drain_wait_us; /* the last mx_note_drain_wait (atomic); 0: none */
    int thread_started;     /* 1 once they run (mx_flush.c reads it) */
    cpuload load;           /* the process's idle CPUs: the gate for a second column */
    mx_counters ctr;
};

/* mx_reg_add -- registers an open row handle in id order and counts its
 * DRAM. (mx_open.c) */
int mx_reg_add(struct mx_state *mx, rowtable *r);

/* mx_row_dram -- the DRAM of row r's handle (fixed once it is built or
 * opened: the key filter is not shrunk as the cursor rises). (mx_open.c) */
size_t mx_row_dram(const rowtable *r);

/* mx_cursor_in -- row r's cursor in version v (TKV_CORRUPTION if v does not
 * list it: invariant 1 broken). (mx_open.c) */
int mx_cursor_in(const version *v, const rowtable *r, uint32_t *c);

/* Range tombstones of a column compaction (mx_colrd.c; the rules at its top).
 * mx_rd_clip -- appends row r's tombstones cut to [start, end) (start empty:
 * no lower cut; end NULL: no upper cut) to out.
 * mx_rd_extent -- *have = 1 if rows[0..k) hold tombstones inside [starts[i],
 * end), and then their smallest begin and the largest key they may cover
 * (rd_key_prev_incl of the largest end) in lo and hi.
 * mx_rd_keeps -- 1 if row r holds a tombstone ending past end (never with
 * end NULL: the column takes everything). Also mx_rd_left and
 * mx_rd_edit_row below.
 * mx_rd_widen -- widens the run of L1 files [*first, *end) (of n, by their
 * user-key ranges) over the files that meet [lo, hi], keeping it
 * contiguous. */
int mx_rd_clip(const rowtable *r, tkv_slice start, const tkv_slice *end, rd_list *out);
int mx_rd_extent(rowtable *const *rows, const tkv_slice *starts, size_t k, const tkv_slice *end, tkv_buf *lo,
                 tkv_buf *hi, int *have);
int mx_rd_keeps(const rowtable *r, const tkv_slice *end);
/* mx_rd_left -- 1 if a row of rows[0..k) holds tombstones at or past its
 * start starts[i] (NULL: all its own). */
int mx_rd_left(rowtable *const *rows, row_key *const *starts, size_t k);
/* mx_rd_edit_row -- compactor row r in the edit of a column that moves its
 * cursor from `from` to `to` and its range tombstone start from rd_from to
 * the column's end rd_to (NULL: no end): removed (*removed counts it) once it
 * holds no entry and no tombstone past rd_to; else its cursor and start
 * (rd_to, for a row with tombstones) set, if either changed; nothing for a
 * row an earlier column drained (that one removes it). */
int mx_rd_edit_row(rowtable *r, uint32_t from, uint32_t to, row_key *rd_from, row_key *rd_to, version_edit *e,
                   size_t *removed);
void mx_rd_widen(const tkv_slice *smallest, const tkv_slice *largest, size_t n, tkv_slice lo, tkv_slice hi,
                 size_t *first, size_t *end);

/* mx_collect -- for every row: raises its own cursor to the smallest cursor
 * any live version has for it and releases the pages below (invariant 2);
 * drops rows no live version lists (invariant 3). Errors become bg_error,
 * and so does a failed persist into the pool (pool_error: the pool's
 * durability is lost, the database turns read-only). Caller holds mu.
 * (mx_reclaim.c) */
void mx_collect(tkv_db *db);

/* A picked column: the compactor rows with their cursors before and after,
 * the L1 files it rewrites, and the version it was picked in (pinned). */
typedef struct column_job {
    version *v;
    size_t k;
    rowtable **rows;     /* compactor rows, newest first */
    uint32_t *from, *to; /* cursors before / after the column */
    file_meta **l1;      /* L1 inputs (ref'd, being_compacted) */
    size_t nl1;
    uint64_t smallest_snapshot;
    column_plan plan;
    struct column_job *next;            /* the next column in flight (mx->inflight), picked after this one */
    uint64_t started_us;                /* when it was picked */
    uint64_t read_bytes, written_bytes; /* set by a commit: the end event reports them */
    uint64_t drains;                    /* its row bytes in writer units */
    int cancelled;                      /* an earlier column failed: discard, do not commit */
    row_key **rd_from;                  /* each row's range tombstone start before the column (ref'd; NULL: none) */
    row_key *rd_to;                     /* the column's end E, each row's start after it (NULL: no end) */
} column_job;

/* mx_job_free -- frees a column job: drops its references (version, L1
 * files, range tombstone keys). NULL-safe. (mx_pick.c) */
void mx_job_free(column_job *j);

/* mx_pick_column -- the next column of the compactor (forming one if
 * wanted), or NULL: nothing to do, L0 SST files must go first, or an L1
 * file it needs is busy in a deep compaction (*busy; the pick is remembered
 * in mx->blocked and not planned again while it stands). With columns in
 * flight, the next one starts where the last of them ends (its cursors),
 * and none is picked after one that takes the rest of the compactor or was
 * cancelled. *err < 0 on failure. Caller holds mu. (mx_pick.c) */
column_job *mx_pick_column(tkv_db *db, int *busy, int *err);

/* mx_pick_forget -- drops the remembered blocked pick (its version
 * reference). Caller holds mu, or no column thread runs. (mx_pick.c) */
void mx_pick_forget(struct mx_state *mx);

#endif
