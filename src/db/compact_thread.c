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

/* compact_worker -- one thread of a compaction pool. The high pool's L0
 * worker (deep = 0) takes only L0 SST -> L1 compactions; the low pool's
 * workers (deep = 1) only L1+ (SILK: the high pool never runs deep work).
 * With scheduler=silk an L0 pick blocked by L1 files a deep job holds
 * aborts that job (silk_abort_l1). */
static void compact_worker(tkv_db *db, int deep)
{
    pthread_mutex_lock(&db->mu);
    while (!db->shutting_down) {
        compaction *c = NULL;
        int busy = 0;
        if (!db->bg_error && !db->manual_waiting)
            c = deep ? cmp_pick_in(db, vset_current(db->vs), 1, VERSION_LEVELS - 2, NULL)
                     : cmp_pick_in(db, vset_current(db->vs), 0, 0, &busy);
        if (!c) {
            if (busy) {
                version *v = vset_current(db->vs);
                silk_abort_l1(db, v->files[1], v->nfiles[1]);
            }
            pthread_cond_wait(&db->bg_cv, &db->mu);
            continue;
        }
        /* pool discipline: never a deep job in the high pool (cmp_pick_in
         * picks only from the levels it is given) */
        db->compactions_running++;
        pthread_mutex_unlock(&db->mu);
        if (deep) {
            silk_job job;
            silk_job_begin(db, &job, c->level, c->inputs[0], c->ninputs[0]);
            cmp_run(db, c); /* errors become bg_error; an abort does not */
            silk_job_end(db, &job);
        } else {
            cmp_run(db, c);
        }
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
    silk_abort_all(db); /* running deep compactions stop at their next pause point (redone after reopen) */
    for (int i = 0; i < db->ndeep_threads; i++) pthread_join(db->deep_threads[i], NULL);
    free(db->deep_threads);
    db->deep_threads = NULL;
    db->ndeep_threads = 0;
    pthread_join(db->l0_thread, NULL);
    db->workers_started = 0;
}
