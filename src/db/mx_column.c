// SPDX-License-Identifier: Apache-2.0
/*
 * mx_column.c -- the column-compaction threads of the matrix container:
 * the compactor (the oldest rows) drains into L1 column by column, each
 * column a key range of the rows merged with the L1 files it overlaps
 * (matrix/column.h); up to column_threads columns run at once on
 * consecutive key ranges and commit in order (mx_int.h, invariant 5) --
 * beyond the first only while a CPU is idle (column_gate) or clients wait
 * for the drain; failed columns are retried with backoff; and
 * tkv_compact_range's wait for every row to drain (mx.h).
 *
 * Persist order of a column:
 *   (1) output SSTs written, synced, directory synced (cmp_merge);
 *   (2) MANIFEST edit {L1 inputs deleted, outputs added, each compactor
 *       row's cursor set -- or the row removed when drained}, synced -- the
 *       commit point;
 *   (3) mx_collect: release bits of the pages below the new floors, slot
 *       removal of drained rows. A crash before (3) is finished by mx_open
 *       (re-applied cursors, dropped rows).
 */
#include "db/mx_int.h"

#include <stdlib.h>
#include <string.h>

#include "db/compact_merge.h"
#include "db/files.h"
#include "db/silk.h"
#include "db/silk_pmem.h"
#include "db/superversion.h"
#include "matrix/column.h"
#include "sched/clock.h"
#include "util/status.h"
#include "util/thread.h"

/* merge_column -- step (1): the column's row ranges (newest first) and its
 * L1 files merged into new L1 files (*done, pending). mu NOT held. */
static int merge_column(tkv_db *db, column_job *j, file_meta ***done, size_t *ndone)
{
    /* the rows' range tombstones of [start, E) (mx_colrd.c) */
    rd_list rd = {0};
    tkv_slice end = row_key_slice(j->rd_to);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < j->k; i++)
        rc = mx_rd_clip(j->rows[i], row_key_slice(j->rd_from[i]), j->rd_to ? &end : NULL, &rd);
    cmp_inputs in;
    if (rc == 0) rc = cmp_inputs_new(db, &in, j->k + j->nl1, "a column compaction");
    if (rc < 0) {
        rd_list_free(&rd);
        return rc;
    }
    /* rows newest first, then L1: internal keys are unique, so the order
     * only matters for equal keys, which cannot occur */
    for (size_t i = 0; i < j->k; i++) {
        /* the rows' bytes are charged to the scheduler's pmem tier as read;
         * pages not resident (after a restart) are read ahead, not faulted in
         * one by one */
        rowtable_willneed(j->rows[i], j->from[i], j->to[i]);
        in.kids[i] = silk_pmem_meter(db, rowtable_iter_range(j->rows[i], j->from[i], j->to[i]), IO_COMPACT_L0, 0, 1);
        if (!in.kids[i]) in.kids[i] = error_iter_new(TKV_NO_MEMORY);
    }
    for (size_t i = 0; i < j->nl1; i++)
        in.kids[j->k + i] = cmp_open_input(db, &in, j->l1[i], IO_COMPACT_L0, &in.tables[j->k + i]);
    in.rd = rd;
    return cmp_merge_inputs(db, &in, 1, IO_COMPACT_L0, j->v, j->smallest_snapshot, done, ndone);
}

/* rows_still_listed -- the current rowset without the rows the current
 * version no longer lists (drained); NULL on out of memory. Caller holds mu. */
static rowset *rows_still_listed(tkv_db *db)
{
    rowset *cur = db->sv->rows;
    rowtable **tmp = calloc(cur->n ? cur->n : 1, sizeof *tmp);
    size_t m = 0;
    for (size_t i = 0; tmp && i < cur->n; i++) {
        uint64_t c;
        if (version_row_cursor(vset_current(db->vs), rowtable_id(cur->rows[i]), &c)) tmp[m++] = cur->rows[i];
    }
    rowset *nrs = tmp ? rowset_new(tmp, m) : NULL;
    free(tmp);
    return nrs;
}

/* wait_turn -- columns commit in pick order: waits (mu held) until every
 * column picked before j is done. 0, or TKV_BUSY when j was cancelled
 * because one of them failed (j's cursors assumed its). */
static int wait_turn(tkv_db *db, column_job *j)
{
    while (db->mx->inflight != j && !j->cancelled) pthread_cond_wait(&db->bg_cv, &db->mu);
    return j->cancelled ? TKV_BUSY : 0;
}

/* run_column -- merges the column (mu NOT held), then commits it (step (2),
 * takes mu; returns holding it). Returns 0 or the error; on error the
 * outputs are gone and the cursors untouched. */
static int run_column(tkv_db *db, column_job *j)
{
    struct mx_state *mx = db->mx;
    uint64_t l1_bytes = 0;
    for (size_t i = 0; i < j->nl1; i++) l1_bytes += j->l1[i]->size;
    file_meta **done = NULL;
    size_t ndone = 0;
    int rc = merge_column(db, j, &done, &ndone);
    if (rc == 0) cmp_preload_outputs(db, done, ndone, IO_COMPACT_L0); /* before install: see compact_merge.h */

    version_edit e;
    edit_init(&e);
    uint64_t written = 0;
    size_t removed = 0;
    for (size_t i = 0; rc == 0 && i < j->nl1; i++) rc = edit_delete_file(&e, 1, j->l1[i]->number);
    for (size_t i = 0; rc == 0 && i < ndone; i++) {
        rc = edit_add_file(&e, 1, done[i]);
        written += done[i]->size;
    }
    for (size_t i = 0; rc == 0 && i < j->k; i++)
        rc = mx_rd_edit_row(j->rows[i], j->from[i], j->to[i], j->rd_from[i], j->rd_to, &e, &removed);
    pthread_mutex_lock(&db->mu);
    if (rc == 0) rc = wait_turn(db, j);
    int install_failed = 0;
    if (rc == 0) {
        rc = files_install(db, &e); /* step (2): the commit point */
        install_failed = rc < 0;
    }
    if (rc == 0 && removed) {
        /* invariant 1: the rowset without the drained rows, in the same
         * critical section as the version that removed them */
        rowset *nrs = rows_still_listed(db);
        rc = nrs ? sv_replace(db, 0, nrs) : tkv_err(TKV_NO_MEMORY, "out of memory after a column compaction");
        rowset_unref(nrs);
        if (rc < 0) install_failed = 1; /* the version is installed: this cannot be undone, stop */
    }
    edit_free(&e);
    if (rc == 0) {
        j->read_bytes = l1_bytes + j->plan.row_bytes;
        j->written_bytes = written;
        ctr_add(&mx->ctr.columns, 1);
        ctr_add(&mx->ctr.column_row_bytes, j->plan.row_bytes);
        ctr_add(&mx->ctr.column_row_entries, j->plan.row_entries);
        ctr_add(&mx->ctr.column_l1_read_bytes, l1_bytes);
        ctr_add(&mx->ctr.column_l1_merged_files, j->plan.l1_merged);
        ctr_add(&mx->ctr.column_l1_merged_bytes, j->plan.l1_merged_bytes);
        ctr_add(&mx->ctr.column_write_bytes, written);
        ctr_add(&db->ctr.compactions[IO_COMPACT_L0], 1);
        ctr_add(&db->ctr.compaction_read_bytes[IO_COMPACT_L0], l1_bytes + j->plan.row_bytes);
        ctr_add(&db->ctr.compaction_write_bytes[IO_COMPACT_L0], written);
    }
    pthread_mutex_unlock(&db->mu);
    cmp_discard_outputs(db, done, ndone, rc < 0 && !install_failed);
    pthread_mutex_lock(&db->mu);
    for (size_t i = 0; i < j->nl1; i++) j->l1[i]->being_compacted = 0;
    if (install_failed) db_set_bg_error(db, rc);
    return rc;
}

/* writer_units -- row bytes of the pool in the units writers are charged
 * in (their batch bytes), by the ratio of the two over every flush so far
 * (1:1 before the first). */
static uint64_t writer_units(const struct mx_state *mx, uint64_t row_bytes)
{
    uint64_t data = ctr_get(&mx->ctr.flush_data_bytes), batch = ctr_get(&mx->ctr.flush_batch_bytes);
    if (!data || !batch) return row_bytes;
    return (uint64_t)((double)row_bytes * (double)batch / (double)data);
}

/* drain_since -- when the pool began draining the bytes of column j: its
 * start, or the commit of the column before it if that came later (with
 * columns in parallel, each commit drains its bytes in the time since the
 * previous one, so the samples add up to the pool's combined rate). */
static uint64_t drain_since(const struct mx_state *mx, const column_job *j)
{
    return mx->last_commit_us > j->started_us ? mx->last_commit_us : j->started_us;
}

int mx_drain_rate(tkv_db *db, uint64_t *rate)
{
    struct mx_state *mx = db->mx;
    *rate = 0;
    if (!mx) return 0;
    const column_job *head = mx->inflight; /* the next column to commit */
    uint64_t us = head ? sched_mono_us() - drain_since(mx, head) : 0;
    return dm_rate(&mx->drain, head != NULL, head ? head->drains : 0, us, MX_FIRST_DRAIN_US, rate);
}

/* boosted -- 1 while clients wait for column compaction: a write slept at
 * the container ramp's pace in the last MX_BOOST_HOLD_US, the flush waits
 * for room, or tkv_compact_range waits for the rows. Caller holds mu. */
static int boosted(tkv_db *db, uint64_t now)
{
    struct mx_state *mx = db->mx;
    if (__atomic_load_n(&db->flush_blocked, __ATOMIC_RELAXED) || mx->drain_waiters) return 1;
    uint64_t at = __atomic_load_n(&mx->drain_wait_us, __ATOMIC_RELAXED);
    return at && now - at < MX_BOOST_HOLD_US;
}

void mx_note_drain_wait(tkv_db *db, uint64_t now_us)
{
    struct mx_state *mx = db->mx;
    if (!mx) return;
    uint64_t prev = __atomic_exchange_n(&mx->drain_wait_us, now_us ? now_us : 1, __ATOMIC_RELAXED);
    if (!prev || now_us - prev >= MX_BOOST_HOLD_US) db_bg_signal(db); /* the boost thread's turn */
}

/* may_start -- 1 if this thread may pick a column now (caller holds mu).
 * At most column_threads columns in flight. The first one: while boosted on
 * the boost thread (or on a background thread once the boost thread has been
 * busy MX_BOOST_HANDOFF_US with the work after a commit, or if it does not
 * run), otherwise on a background thread. One beside a running column: on
 * either thread the boost allows, while boosted (a client waiting for the
 * drain leaves its CPU to it: writers were held back 30 % less in a 4M x
 * 1 KiB fill), when the process leaves a CPU idle (column_gate=idle), or
 * always (column_gate=always). */
static int may_start(tkv_db *db, int boost, uint64_t now)
{
    struct mx_state *mx = db->mx;
    if (mx->ncolumns >= (unsigned)mx->max_columns) return 0;
    int urgent = mx->boost_started && boosted(db, now);
    if (boost && !urgent) return 0;
    if (mx->ncolumns == 0)
        return boost || !urgent || (mx->boost_busy_us && now - mx->boost_busy_us >= MX_BOOST_HANDOFF_US);
    if (db->opts.column_gate == COLUMN_GATE_ALWAYS || urgent) return 1;
    return cpuload_idle_cpus(&mx->load, now) >= 0.9;
}

/* column_begin -- j joins the columns in flight (at the end: pick order). */
static void column_begin(struct mx_state *mx, column_job *j, uint64_t row_bytes)
{
    j->started_us = sched_mono_us();
    j->drains = writer_units(mx, row_bytes);
    column_job **pp = &mx->inflight;
    while (*pp) pp = &(*pp)->next;
    *pp = j;
    if (mx->ncolumns) ctr_add(&mx->ctr.columns_parallel, 1);
    mx->ncolumns++;
    if (mx->ncolumns > ctr_get(&mx->ctr.max_in_flight))
        __atomic_store_n(&mx->ctr.max_in_flight, mx->ncolumns, __ATOMIC_RELAXED);
}

/* column_end -- j (committed, failed or cancelled: rc) leaves the columns
 * in flight; a failure cancels every column picked after it. Wakes the
 * columns waiting for their turn. Caller holds mu. */
static void column_end(tkv_db *db, column_job *j, int rc)
{
    struct mx_state *mx = db->mx;
    column_job **pp = &mx->inflight;
    while (*pp != j) pp = &(*pp)->next;
    *pp = j->next;
    mx->ncolumns--;
    if (rc < 0)
        for (column_job *l = j->next; l; l = l->next) l->cancelled = 1;
    if (rc == 0) {
        uint64_t now = sched_mono_us();
        dm_note(&mx->drain, j->drains, now - drain_since(mx, j));
        mx->last_commit_us = now;
    }
    db_bg_signal(db);
}

/* column_failed -- the bookkeeping of a column that did not commit (mu held):
 * cancelled ones are only counted; a failure is retried later, backing off;
 * it blocks nothing else (MatrixKV stopped compacting for good). */
static void column_failed(tkv_db *db, int rc, int cancelled)
{
    struct mx_state *mx = db->mx;
    if (rc == CMP_STOPPED) return; /* tkv_close stopped it: no failure, nothing to retry */
    if (cancelled) {
        ctr_add(&mx->ctr.column_cancels, 1);
        return;
    }
    ctr_add(&mx->ctr.column_failures, 1);
    if (rc == TKV_CORRUPTION) db_set_bg_error(db, rc); /* retrying cannot help */
    mx->failures++;
    uint64_t wait = MX_RETRY_MIN_US;
    for (int i = 1; i < mx->failures && wait < MX_RETRY_MAX_US; i++) wait *= 2;
    mx->retry_at_us = sched_mono_us() + (wait < MX_RETRY_MAX_US ? wait : MX_RETRY_MAX_US);
    if (db->shutting_down && mx->failures >= MX_SHUTDOWN_GIVE_UP) mx->gave_up = 1;
}

/* idle_trim -- an idle column thread's pool_trim, at most every
 * MX_TRIM_EVERY_US, only if the pool was written or gave pages back since
 * the last one, and once no page has been allocated for MX_TRIM_IDLE_US.
 * Called with mu held; released during the trim. */
static void idle_trim(tkv_db *db)
{
    struct mx_state *mx = db->mx;
    uint64_t now = sched_mono_us();
    if (now - mx->trim_at_us < MX_TRIM_EVERY_US) return;
    pm_stats st;
    pm_get_stats(pool_region(mx->pool), &st);
    uint64_t mark = st.persist_calls + st.discarded_bytes;
    if (mark == mx->trim_mark) return;
    mx->trim_at_us = now;
    pthread_mutex_unlock(&db->mu);
    uint64_t done = pool_trim(mx->pool, MX_TRIM_IDLE_US); /* (its punches change the mark: one more, finding nothing) */
    pthread_mutex_lock(&db->mu);
    if (done != UINT64_MAX) mx->trim_mark = mark; /* else still busy: again later */
}

/* column_step -- one turn of a column thread (mu held; released while a
 * column runs): picks a column when it may (may_start), runs and commits it
 * in turn, and collects what the commit freed. BG_DONE when the loop ends
 * (shutting down, with no flush waiting for room or columns given up),
 * BG_IDLE to wait *wait_us, else BG_AGAIN. */
static int column_step(tkv_db *db, int boost, uint64_t *wait_us)
{
    struct mx_state *mx = db->mx;
    *wait_us = 0;
    if (db->shutting_down && (!__atomic_load_n(&db->flush_blocked, __ATOMIC_RELAXED) || mx->gave_up)) return BG_DONE;
    if (db->bg_error) {
        if (db->shutting_down) return BG_DONE;
        *wait_us = MX_IDLE_WAIT_US;
        return BG_IDLE;
    }
    uint64_t now = sched_mono_us();
    if (now < mx->retry_at_us) {
        *wait_us = mx->retry_at_us - now;
        return BG_IDLE;
    }
    int busy = 0, err = 0;
    if (boost) mx->boost_busy_us = 0; /* at its pick */
    column_job *j = may_start(db, boost, now) ? mx_pick_column(db, &busy, &err) : NULL;
    if (!j) {
        if (err < 0) {
            db_set_bg_error(db, err);
            return BG_AGAIN;
        }
        /* Idle: views that readers released since the last flush or
         * column may let pages and rows go now. */
        if (mx->ncolumns == 0) {
            if (boost) mx->boost_busy_us = now; /* (both may release mu) */
            mx_collect(db);
            idle_trim(db);
            if (boost) mx->boost_busy_us = 0;
        }
        *wait_us = mx->ncolumns ? CPULOAD_WINDOW_US : MX_IDLE_WAIT_US;
        return BG_IDLE;
    }
    column_begin(mx, j, j->plan.row_bytes);
    uint64_t job = db_event_job(db);
    db_event(db, TKV_EVENT_COLUMN_BEGIN, job, 1, 0, 0, 0, 0);
    pthread_mutex_unlock(&db->mu);
    int rc = run_column(db, j); /* returns holding mu */
    int cancelled = j->cancelled;
    uint64_t us = sched_mono_us() - j->started_us;
    if (rc == 0) db_hist_add_us(db, TKV_HIST_COLUMN, us);
    db_event(db, TKV_EVENT_COLUMN_END, job, 1, rc < 0 ? rc : 0, us, j->read_bytes, j->written_bytes);
    column_end(db, j, rc);
    if (boost) mx->boost_busy_us = sched_mono_us(); /* the work after the commit */
    mx_job_free(j); /* unpins its version before mx_collect looks for the oldest live cursors */
    if (rc == 0) {
        if (boost) ctr_add(&mx->ctr.columns_boosted, 1);
        mx->failures = 0;
        mx->retry_at_us = 0;
        mx_pick_forget(mx); /* its version is not current now: it would hold back mx_collect */
        mx_collect(db);
        files_delete_obsolete(db);
    } else {
        if (!db->bg_error) column_failed(db, rc, cancelled);
        /* the job's version may have held files a job beside it made obsolete (files_unpin) */
        if (__atomic_load_n(&db->obsolete_kept, __ATOMIC_ACQUIRE)) files_delete_obsolete(db);
    }
    db_bg_signal(db);
    return BG_AGAIN;
}

/* column_done -- a column thread's loop has ended (mu held). */
static void column_done(tkv_db *db, int boost)
{
    struct mx_state *mx = db->mx;
    if (boost) mx->boost_busy_us = 1; /* gone: the others take every column */
    mx->gave_up = 1;                  /* no more columns: a waiting flush must not wait for one */
    db_bg_signal(db);
}

/* column_loop -- one column thread: column_step in a loop. The boost
 * thread (boost = 1) keeps the process's CPU priority, the others run at
 * background_nice: a thread cannot take back a priority it gave up without
 * privileges, so the two kinds are separate threads. */
static void *column_loop(tkv_db *db, int boost)
{
    thread_background("tkv-column", boost ? 0 : db->opts.background_nice, (unsigned)db->opts.background_slice);
    pthread_mutex_lock(&db->mu);
    uint64_t wait;
    for (int st; (st = column_step(db, boost, &wait)) != BG_DONE;)
        if (st == BG_IDLE) db_wait_us(db, wait);
    column_done(db, boost);
    pthread_mutex_unlock(&db->mu);
    return NULL;
}

static void *column_main(void *arg) { return column_loop(arg, 0); }
static void *boost_main(void *arg) { return column_loop(arg, 1); }

/* column_task -- a column thread as a task of the env's pool (no boost:
 * the pool's threads share one CPU priority). */
static int column_task(void *arg, uint64_t *wait_us)
{
    tkv_db *db = arg;
    pthread_mutex_lock(&db->mu);
    int st = column_step(db, 0, wait_us);
    if (st == BG_DONE) column_done(db, 0);
    pthread_mutex_unlock(&db->mu);
    return st;
}

/* tasks_add -- with an env: column_threads column tasks (priority 1) in its
 * pool. Caller holds nothing. */
static int tasks_add(tkv_db *db, int n)
{
    struct mx_state *mx = db->mx;
    mx->tasks = calloc((size_t)n, sizeof *mx->tasks);
    if (!mx->tasks) return tkv_err(TKV_NO_MEMORY, "out of memory starting the column compactions");
    cpuload_init(&mx->load, sched_mono_us());
    pthread_mutex_lock(&db->mu);
    mx->max_columns = n;
    mx->boost_busy_us = 1; /* no boost thread */
    mx->thread_started = 1;
    pthread_mutex_unlock(&db->mu);
    for (int i = 0; i < n; i++) {
        TKV_TRY(bg_task_add(db->bg, 1, column_task, db, &mx->tasks[i]));
        mx->ntasks++;
    }
    return 0;
}

int mx_start(tkv_db *db)
{
    struct mx_state *mx = db->mx;
    if (!mx) return 0;
    int n = db->opts.column_threads > 0 ? db->opts.column_threads : 1;
    if (db->bg) return tasks_add(db, n);
    mx->threads = calloc((size_t)n + 1, sizeof *mx->threads);
    if (!mx->threads) return tkv_err(TKV_NO_MEMORY, "out of memory starting the column-compaction threads");
    cpuload_init(&mx->load, sched_mono_us());
    mx->boost_busy_us = 1; /* the boost thread is not at its pick yet */
    int started = 0, rc = TKV_NO_MEMORY;
    while (started < n &&
           (rc = thread_create(&mx->threads[started], column_main, db, "a column-compaction thread")) == 0)
        started++;
    int boost = started > 0 && thread_create(&mx->threads[started], boost_main, db, "the column boost thread") == 0;
    pthread_mutex_lock(&db->mu); /* the flush thread reads it (mx_flush_blocked); may_start reads the rest */
    mx->nthreads = started + boost;
    mx->max_columns = started;
    mx->boost_started = boost;
    db->mx->thread_started = started > 0;
    db_bg_signal(db); /* threads that looked before max_columns was set */
    pthread_mutex_unlock(&db->mu);
    if (started == 0) {
        free(mx->threads); /* (mx_stop frees it only once a thread runs) */
        mx->threads = NULL;
        return rc; /* thread_create said why */
    }
    return 0; /* fewer threads than asked: fewer columns at once, nothing else changes */
}

void mx_stop(tkv_db *db)
{
    struct mx_state *mx = db->mx;
    if (!mx || !mx->thread_started) return;
    /* the flush thread has ended: no one waits for room any more, so a
     * column in flight is dropped (CMP_STOPPED) rather than finished -- it
     * held tkv_close for up to a column's time (0.5 s after a 1M x 1 KiB
     * load); the next open drains its rows */
    __atomic_store_n(&db->columns_stop, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&db->mu);
    db_bg_signal(db);
    pthread_mutex_unlock(&db->mu);
    for (int i = 0; i < mx->ntasks; i++) bg_task_join(mx->tasks[i]);
    free(mx->tasks);
    mx->tasks = NULL;
    mx->ntasks = 0;
    for (int i = 0; i < mx->nthreads; i++) pthread_join(mx->threads[i], NULL);
    mx_pick_forget(mx); /* (its version reference) */
    free(mx->threads);
    mx->threads = NULL;
    mx->nthreads = 0;
    mx->thread_started = 0;
}

int mx_drain(tkv_db *db)
{
    struct mx_state *mx = db->mx;
    if (!mx) return 0;
    rowset *rs = db->sv->rows;
    if (rs->n == 0) return 0;
    uint64_t target = rowtable_id(rs->rows[0]);
    mx->drain_waiters++;
    db_bg_signal(db);
    int rc = 0;
    for (;;) {
        if (db->bg_error) {
            rc = db_bg_error(db);
            break;
        }
        rs = db->sv->rows;
        if (rs->n == 0 || rowtable_id(rs->rows[rs->n - 1]) > target) break; /* the oldest row left is newer */
        db_wait_us(db, MX_IDLE_WAIT_US);
    }
    mx->drain_waiters--;
    return rc;
}
