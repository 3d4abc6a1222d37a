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

/* compact_worker -- one thread of a compaction pool. The high pool's L0
 * worker (deep = 0) takes only L0 SST -> L1 compactions; the low pool's
 * workers (deep = 1) only L1+ (SILK: the high pool never runs deep work).
 * With scheduler=silk an L0 pick blocked by L1 files a deep job holds asks
 * that job to yield (l0_preempt), and asks again while it waits. */
static void compact_worker(tkv_db *db, int deep)
{
    pthread_mutex_lock(&db->mu);
    while (!db->shutting_down) {
        compaction *c = NULL;
        int busy = 0;
        if (!db->bg_error && !db->manual_waiting)
            c = cmp_pick_in(db, vset_current(db->vs), deep ? 1 : 0, deep ? VERSION_LEVELS - 2 : 0, &busy);
        if (!c) {
            if (busy && !deep) {
                l0_preempt(db);
                db_wait_us(db, SILK_WANTED_US / 4); /* woken when a job lets go; else ask again */
            } else if (busy) {
                db_wait_us(db, SILK_WANTED_US); /* passed over wanted files: their marks expire by then */
            } else {
                pthread_cond_wait(&db->bg_cv, &db->mu);
            }
            continue;
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
        pthread_cond_broadcast(&db->bg_cv);
    }
    pthread_mutex_unlock(&db->mu);
}

static void *l0_main(void *arg)
{
    tkv_db *db = arg;
    thread_background("tkv-l0", db->opts.background_nice);
    compact_worker(db, 0);
    return NULL;
}

static void *deep_main(void *arg)
{
    tkv_db *db = arg;
    thread_background("tkv-deep", db->opts.background_nice);
    compact_worker(db, 1);
    return NULL;
}

int cmp_workers_start(tkv_db *db)
{
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
    if (!db->workers_started) return;
    silk_abort_all(db); /* running deep compactions stop at their next pause point (keeping their cuts) */
    for (int i = 0; i < db->ndeep_threads; i++) pthread_join(db->deep_threads[i], NULL);
    free(db->deep_threads);
    db->deep_threads = NULL;
    db->ndeep_threads = 0;
    pthread_join(db->l0_thread, NULL);
    db->workers_started = 0;
}
