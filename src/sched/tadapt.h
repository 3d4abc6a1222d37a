// SPDX-License-Identifier: Apache-2.0
/*
 * tadapt.h -- adapting T, the device bandwidth the monitor (monitor.h)
 * divides up, to the throughput the device is observed to deliver.
 *
 * T is first a guess (an option's default, or a short probe at open); a
 * device that is slower than T makes I too large (internal work takes more
 * than clients leave of it), one that is faster makes I too small. The
 * owner feeds one sample per monitor window (tadapt_sample): the bytes the
 * device moved in the window (every class, reads and writes), and the time
 * the engine's threads spent inside device calls (pread, pwrite,
 * fdatasync), summed over threads. Windows are pooled into intervals of
 * `interval_us` (default 1 s). Per interval of duration d:
 *
 *   D = bytes / d                 what the device delivered
 *   Q = busy_ns / (d * 1000)      the mean number of device calls in flight:
 *                                 Q >= sat_queue (default 1.0) means a
 *                                 request was waiting on the device all the
 *                                 time -- the device, not the demand, set D
 *
 *   up   interval: D > T * (100 + up_pct) / 100                (default +10 %)
 *   down interval: Q >= sat_queue and D < T * (100 - down_pct) / 100  (-20 %)
 *
 * A run of `intervals` (default 3) consecutive up intervals sets
 *   T = min(t_max, 2 T, the lowest D of the run)
 * (the device sustained at least that for the whole run); a run of down
 * intervals sets
 *   T = max(t_min, T / 2, the highest D of the run)
 * (with requests queued, the device delivered no more than that). Any other
 * interval breaks both runs, and a change of T starts them afresh.
 *
 * Why it does not oscillate: a move puts T at an envelope of the very
 * observations that caused it, so the same load then lies inside the dead
 * zone [T (1 - down_pct), T (1 + up_pct)] -- noise of less than +-up_pct / 2
 * around a steady level cannot start a run in either direction, and a run
 * needs `intervals` intervals in a row on the same side. A light load (the
 * device not saturated) never lowers T: it says nothing about what the
 * device could do. Steps are at most a factor 2, and T stays in
 * [t_min, t_max].
 *
 * Pinned (tadapt_options.pinned): T never changes; the statistics are kept.
 *
 * The core is deterministic (no clock, no thread); one mutex makes it safe
 * to read the statistics from another thread.
 */
#ifndef TKV_SCHED_TADAPT_H
#define TKV_SCHED_TADAPT_H

#include <stdint.h>

typedef struct tadapt_options {
    uint64_t t0;           /* the starting T, bytes/s (> 0) */
    uint64_t t_min, t_max; /* bounds of T; 0 = t0 / 8, resp. t0 * 8 */
    uint64_t interval_us;  /* windows pooled per decision. Default 1000000 */
    unsigned intervals;    /* consecutive intervals a move needs, >= 1. Default 3 */
    unsigned up_pct;       /* up interval: D above T by more than this percent. Default 10 */
    unsigned down_pct;     /* down interval: D below T by more than this percent, 1..99. Default 20 */
    double sat_queue;      /* Q at or above this: saturated. Default 1.0 */
    int pinned;            /* 1: T never changes. Default 0 */
} tadapt_options;

typedef struct tadapt_stats {
    uint64_t t; /* T now */
    uint64_t t_min, t_max;
    uint64_t delivered;      /* the last interval's D, bytes/s */
    double queue;            /* the last interval's Q */
    int up_run, down_run;    /* the current runs, in intervals */
    uint64_t intervals;      /* intervals evaluated */
    uint64_t raises, lowers; /* moves of T */
    int pinned;
} tadapt_stats;

typedef struct tadapt tadapt;

/* tadapt_options_default -- the defaults above, for a starting T of t0. */
void tadapt_options_default(tadapt_options *o, uint64_t t0);

/* tadapt_create -- the first interval starts at now_us. TKV_OK and *out,
 * TKV_INVALID (NULL, t0 == 0, t_min > t0 or t_max < t0, interval_us == 0,
 * intervals == 0, down_pct not in 1..99), or TKV_NO_MEMORY. */
int tadapt_create(const tadapt_options *o, uint64_t now_us, tadapt **out);

/* tadapt_free -- NULL is a no-op. */
void tadapt_free(tadapt *a);

/* tadapt_sample -- one window ending at now_us: the device's bytes and the
 * summed time of device calls in it. Returns 1 when T changed (read it with
 * tadapt_t; the owner passes it to monitor_set_device_bw), else 0. */
int tadapt_sample(tadapt *a, uint64_t bytes, uint64_t busy_ns, uint64_t now_us);

/* tadapt_t -- T now. */
uint64_t tadapt_t(tadapt *a);

/* tadapt_get_stats -- a consistent snapshot. */
void tadapt_get_stats(tadapt *a, tadapt_stats *st);

#endif
