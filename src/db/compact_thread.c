// SPDX-License-Identifier: Apache-2.0
/*
 * compact_thread.c -- the compaction pools: the L0 worker and the deep
 * workers, each picking and running leveled compactions (compact_thread.h).
 */
#include "db/compact_thread.h"

#include <stdlib.h>

#include "db/compact_run.h"
#include "db/silk.h"
#include "util/status.h"
#include "util/thread.h"

/* l0_preempt -- the L0 worker's pick found busy L1 files (mu held): the
 * deep jobs that hold the L1 files it needs -- and only those -- are asked
 * to yield (silk_yield_l1; scheduler=fifo: none, it waits for them). */
static void l0_preempt(tkv_db *db)
{
    file_meta **need;
    size_t n;
    if (cmp_l0_needs(vset_current(db->vs), &need, &n) < 0) return; /* out of memory: wait and pick again */
    if (n) silk_yield_l1(db, need, n);
    free(need);
}

/* run_deep -- runs deep compaction c on this thread as a registered SILK
 * job (pause points, yields) and tells the scheduler how it ended. */
static void run_deep(tkv_db *db, compaction *c)
{
    silk_job job;
    silk_job_begin(db, &job, c->level, c->inputs[0], c->ninputs[0]);
    int rc = cmp_run(db, c); /* errors become bg_error; a stop does not */
    silk_outcome how = rc == SILK_ABORTED ? SILK_JOB_STOPPED
                       : rc < 0           ? SILK_JOB_FAILED
                       : c->partial       ? SILK_JOB_PARTIAL
                                          : SILK_JOB_DONE;
    silk_job_end(db, &job, how, c->kept_bytes);
}

/* A compaction worker: the L0 worker (deep = 0) or a deep one (deep = 1). */
typedef struct cmp_worker {
    tkv_db *db;
    int deep;
} cmp_worker;

/* cmp_step -- one turn of a compaction worker (mu held; released while a
 * compaction runs). The high pool's L0 worker (deep = 0) takes only L0 SST
 * -> L1 compactions; the low pool's workers (deep = 1) only L1+ (SILK: the
 * high pool never runs deep work). With scheduler=silk an L0 pick blocked
 * by L1 files a deep job holds asks that job to yield (l0_preempt), and
 * asks again while it waits. In the env's pool a deep worker picks nothing
 * while deep work is paused (silk_deep_held): a paused job would hold a
 * shared thread. BG_DONE at shutdown, BG_IDLE with nothing to do
 * (*wait_us: 0 until signalled), else BG_AGAIN. */
static int cmp_step(cmp_worker *w, uint64_t *wait_us)
{
    tkv_db *db = w->db;
    int deep = w->deep;
    *wait_us = 0;
    if (db->shutting_down) return BG_DONE;
    compaction *c = NULL;
    int busy = 0;
    if (deep && db->bg && silk_deep_held(db)) {
        *wait_us = SILK_HELD_RETRY_US;
        return BG_SLEEP;
    }
    if (!db->bg_error && !db->manual_waiting)
        c = cmp_pick_in(db, vset_current(db->vs), deep ? 1 : 0, deep ? VERSION_LEVELS - 2 : 0, &busy);
    if (!c) {
        if (busy && !deep) {
            l0_preempt(db);
            *wait_us = SILK_WANTED_US / 4; /* woken when a job lets go; else ask again */
        } else if (busy) {
            *wait_us = SILK_WANTED_US; /* passed over wanted files: their marks expire by then */
        }
        return BG_IDLE;
    }
    /* pool discipline: never a deep job in the high pool (cmp_pick_in
     * picks only from the levels it is given) */
    db->compactions_running++;
    pthread_mutex_unlock(&db->mu);
    if (deep) run_deep(db, c);
    else cmp_run(db, c);
    cmp_free(c);
    pthread_mutex_lock(&db->mu);
    db->compactions_running--;
    db_bg_signal(db);
    return BG_AGAIN;
}

/* compact_worker -- one thread of a compaction pool: cmp_step in a loop. */
static void compact_worker(tkv_db *db, int deep)
{
    cmp_worker w = {.db = db, .deep = deep};
    pthread_mutex_lock(&db->mu);
    uint64_t wait;
    for (int st; (st = cmp_step(&w, &wait)) != BG_DONE;)
        if (st != BG_AGAIN) db_step_wait(db, wait);
    pthread_mutex_unlock(&db->mu);
}

static void *l0_main(void *arg)
{
    tkv_db *db = arg;
    thread_background("tkv-l0", db->opts.background_nice, (unsigned)db->opts.background_slice);
    compact_worker(db, 0);
    return NULL;
}

static void *deep_main(void *arg)
{
    tkv_db *db = arg;
    thread_background("tkv-deep", db->opts.background_nice, (unsigned)db->opts.background_slice);
    compact_worker(db, 1);
    return NULL;
}

/* cmp_task -- a compaction worker as a task of the env's pool. */
static int cmp_task(void *arg, uint64_t *wait_us)
{
    cmp_worker *w = arg;
    pthread_mutex_lock(&w->db->mu);
    int st = cmp_step(w, wait_us);
    pthread_mutex_unlock(&w->db->mu);
    return st;
}

/* workers_add -- with an env: the L0 worker (priority 1) and the deep
 * workers (priority 2) as tasks of its pool. */
static int workers_add(tkv_db *db)
{
    int n = 1 + db->opts.compaction_threads;
    db->cmp_tasks = calloc((size_t)n, sizeof *db->cmp_tasks);
    if (!db->cmp_tasks) return tkv_err(TKV_NO_MEMORY, "out of memory starting %d compaction workers", n);
    for (int i = 0; i < n; i++) {
        cmp_worker *w = calloc(1, sizeof *w);
        if (!w) return tkv_err(TKV_NO_MEMORY, "out of memory starting %d compaction workers", n);
        w->db = db;
        w->deep = i > 0;
        int rc = bg_task_add(db->bg, w->deep ? 2 : 1, cmp_task, w, &db->cmp_tasks[i]);
        if (rc < 0) {
            free(w);
            return rc;
        }
        db->ncmp_tasks++;
    }
    return 0;
}

int cmp_workers_start(tkv_db *db)
{
    if (db->bg) return workers_add(db);
    TKV_TRY(thread_create(&db->l0_thread, l0_main, db, "the L0 compaction thread"));
    db->workers_started = 1;
    int n = db->opts.compaction_threads;
    db->deep_threads = calloc((size_t)n, sizeof *db->deep_threads);
    if (!db->deep_threads) return tkv_err(TKV_NO_MEMORY, "out of memory starting %d compaction threads", n);
    for (int i = 0; i < n; i++) {
        TKV_TRY(thread_create(&db->deep_threads[i], deep_main, db, "a deep compaction thread"));
        db->ndeep_threads++;
    }
    return 0;
}

void cmp_workers_stop(tkv_db *db)
{
    db_shut_down(db);
    if (db->cmp_tasks) {
        silk_abort_all(db); /* running deep compactions stop at their next pause point (keeping their cuts) */
        for (int i = 0; i < db->ncmp_tasks; i++) {
            void *w = bg_task_arg(db->cmp_tasks[i]);
            bg_task_join(db->cmp_tasks[i]);
            free(w);
        }
        free(db->cmp_tasks);
        db->cmp_tasks = NULL;
        db->ncmp_tasks = 0;
    }
    if (!db->workers_started) return;
    silk_abort_all(db); /* running deep compactions stop at their next pause point (keeping their cuts) */
    for (int i = 0; i < db->ndeep_threads; i++) pthread_join(db->deep_threads[i], NULL);
    free(db->deep_threads);
    db->deep_threads = NULL;
    db->ndeep_threads = 0;
    pthread_join(db->l0_thread, NULL);
    db->workers_started = 0;
}
