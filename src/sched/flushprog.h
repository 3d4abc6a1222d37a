// SPDX-License-Identifier: Apache-2.0
/*
 * flushprog.h -- the running flush's progress and its time to finish: the
 * write controller's deadline input (sched/wctl.h, wctl_input.flush_eta_us).
 *
 * A flush turns one immutable memtable into a row (or an L0 SST) in three
 * phases: waits (for pool room), the build (one metered pass over the
 * memtable: `work` bytes of keys and values), and a tail (commit, MANIFEST,
 * swapping the memtable out of the view). The writer that fills the active
 * memtable meanwhile stops if the flush has not freed its memtable by then,
 * so the controller wants to know when that will be:
 *
 *   build running, at least 1/16 of `work` counted:
 *       eta = (work - done) / rate + tail
 *       rate = bytes counted since the first report / time since it (the
 *              build's own speed, not an older flush's: it slows when the
 *              flush threads lose the CPU and speeds up when writers yield it)
 *   build finished, tail running (t = time since the build ended):
 *       eta = tail - t while that is more than t, else t (a tail that has
 *             run half as long as the last one or more -- an fsync behind
 *             a busy disk -- is expected to take as long again as it has)
 *   tail = the last flush's tail (build end -> flush end), 0 before one
 *   otherwise (no flush, a flush still waiting, the first 1/16): unknown
 *
 * Protocol (the flush thread): fp_begin(work) before the build's pass,
 * fp_add(bytes) as it counts (from a meter_iter callback), fp_built() after
 * the pass, fp_end() when the memtable has left the view (or the flush
 * failed). Readers call fp_eta at any time.
 *
 * Thread safety: one mutex; every function may be called from any thread.
 */
#ifndef TKV_SCHED_FLUSHPROG_H
#define TKV_SCHED_FLUSHPROG_H

#include <stdint.h>

typedef struct flushprog flushprog;

/* fp_new -- NULL on out of memory (TKV_NO_MEMORY recorded). */
flushprog *fp_new(void);
/* fp_free -- NULL is a no-op. */
void fp_free(flushprog *p);

/* fp_begin -- a build of `work` bytes starts (a flush in progress is
 * forgotten, its tail not measured). work 0: the ETA stays unknown. */
void fp_begin(flushprog *p, uint64_t work);
/* fp_add -- the build counted `bytes` more. The first call starts the rate's
 * clock (its own bytes are not part of the rate). */
void fp_add(flushprog *p, uint64_t bytes, uint64_t now_us);
/* fp_built -- the build's pass is over; the tail begins. */
void fp_built(flushprog *p, uint64_t now_us);
/* fp_end -- the flush is over: its tail (if fp_built was called) becomes the
 * tail of the next ETAs; nothing runs until the next fp_begin. */
void fp_end(flushprog *p, uint64_t now_us);

/* fp_eta -- 1 and *eta_us (microseconds until the running flush frees its
 * memtable) when known (flushprog.h's table), else 0. */
int fp_eta(flushprog *p, uint64_t now_us, uint64_t *eta_us);

/* fp_tail_us -- the last measured tail (0 before any). */
uint64_t fp_tail_us(flushprog *p);

#endif
