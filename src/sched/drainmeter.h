// SPDX-License-Identifier: Apache-2.0
/*
 * drainmeter.h -- the rate at which column compaction drains the pool, from
 * the columns that committed and the one running: the write controller's
 * drain input (sched/wctl.h, wctl_input.drain_rate).
 *
 * Each committed column is a sample: the bytes it drained (in the units
 * writers are charged in) and the time it took to drain them (the caller
 * decides: since the column started, or since the commit before it when
 * columns run side by side, so the samples add up to the pool's rate).
 *
 *   rate = sum(bytes) / sum(time) over the last DM_SAMPLES samples,
 *          and no more than (sum(bytes) + head_bytes) / (sum(time) + head_us)
 *          while a column runs: the next to commit, counted as if it
 *          committed now (head_us: its time so far)
 *
 * The second term is above the first until the running column falls behind
 * the pace of the samples, then pulls the rate down smoothly; a stalled
 * column drags it towards 0 (to about half once it has run as long as the
 * samples took).
 * Not the slowest sample: one small column (a few bytes that still rewrite
 * whole L1 files) is not the pool's pace, and a column that commits a moment
 * after its neighbour would read as infinitely fast.
 *
 * Before the first sample: the running column's own pace once it has run
 * `first_us`; before that, unknown.
 *
 * Thread safety: none; the caller serialises (the engine: db->mu).
 */
#ifndef TKV_SCHED_DRAINMETER_H
#define TKV_SCHED_DRAINMETER_H

#include <stdint.h>

#define DM_SAMPLES 4

typedef struct drainmeter {
    uint64_t bytes[DM_SAMPLES]; /* each sample's bytes, newest at pos - 1 */
    uint64_t us[DM_SAMPLES];    /* and its time (>= 1) */
    unsigned n, pos;
} drainmeter;

/* dm_note -- one more sample: `bytes` drained in `us` (0 counts as 1). */
void dm_note(drainmeter *m, uint64_t bytes, uint64_t us);
/* dm_rate -- the drain rate in bytes/s (>= 1) into *rate and 1, or 0 when
 * it is unknown (no sample, and no running column or one that has run less
 * than first_us). running: a column is in flight, the next to commit having
 * head_bytes to drain and head_us of time so far. */
int dm_rate(const drainmeter *m, int running, uint64_t head_bytes, uint64_t head_us, uint64_t first_us, uint64_t *rate);

#endif
