// SPDX-License-Identifier: Apache-2.0
/*
 * compact_thread.h -- the compaction pools: the high pool's L0 worker (L0
 * SST -> L1 compactions; with l0=matrix the matrix container's column
 * thread is the L0->L1 worker) and the low pool (compaction_threads
 * workers, leveled L1+ compactions only). silk.h decides how fast each may
 * do I/O and pauses deep work or makes it yield; here is only which job
 * runs where.
 */
#ifndef TKV_DB_COMPACT_THREAD_H
#define TKV_DB_COMPACT_THREAD_H

#include "db/db_impl.h"

/* cmp_workers_start -- starts the L0 worker and the deep pool. On failure
 * the threads already started keep running until cmp_workers_stop. */
int cmp_workers_start(tkv_db *db);
/* cmp_workers_stop -- sets shutting_down, tells running deep compactions to
 * stop at their next pause point (each installs its work up to its last cut
 * point; the rest is redone after reopen), and joins every worker that was
 * started. */
void cmp_workers_stop(tkv_db *db);

#endif
