// SPDX-License-Identifier: Apache-2.0
/*
 * wctl.h -- the write controller: how long a client write waits so that the
 * memtables never all fill up while a flush can still drain them (after the
 * Pliops Rate Limiter, "PRL").
 *
 * State, from the engine's memtable picture (wctl_input):
 *
 *   NORMAL    mutable_left >= 2 and the container is below near_full (and,
 *             in PRL mode with a known or expected drain, below ramp_lo)
 *   SLOWDOWN  mutable_left == 1 (only the active memtable can take writes),
 *             or container_fill >= near_full (default 0.9), or (PRL, drain
 *             rate known or expected) container_fill >= ramp_lo: the
 *             container ramp,
 *             or (PRL, CLASSIC) deep_score >= debt_soft: the deep debt
 *   STOP      mutable_left == 0: every memtable is full; writes wait until a
 *             flush frees one (physical: there is nowhere to put them)
 *
 *        NORMAL --(memtable switch leaves 1 mutable / container near full)--> SLOWDOWN
 *        SLOWDOWN --(active memtable full, no free slot)--> STOP
 *        STOP --(flush frees a memtable)--> SLOWDOWN or NORMAL
 *
 * The state depends on the inputs and, for the ramp, on the mode. What the
 * mode does in SLOWDOWN:
 *   WCTL_PRL      pace writers at the slowest stage of the pipeline:
 *                 - the flush: the MINIMUM of the last WCTL_SAMPLES flush
 *                   bandwidths (wctl_flush_sample); before any sample, at
 *                   initial_rate (16 MiB/s, conservative), less pace_margin
 *                   -- when a memtable is the limit (mutable_left == 1), or
 *                   the container is near full and its drain rate unknown;
 *                 - the running flush's deadline, when a memtable is the
 *                   limit and the flush's time to free its memtable is
 *                   known (wctl_input.flush_eta_us, sched/flushprog.h):
 *                       deadline = active_room / flush_eta x (1 - pace_margin)
 *                   the rate at which the active memtable fills just as the
 *                   flush frees the other one. It applies when it is below
 *                   the flush pace: a flush that falls behind every recent
 *                   one (starved of CPU, or waiting on the pool) slows
 *                   writers at once instead of stopping them when the
 *                   memtable fills. (Above it -- a flush ahead -- it does not
 *                   speed writers up: the ETA's error is largest at the end
 *                   of a flush, where a writer let run at room / ETA fills
 *                   the memtable a little early and stops, once per flush.)
 *                   Before any flush sample it applies whichever way it
 *                   points: the flush pace is then initial_rate, a guess,
 *                   and the running flush's ETA a measurement. At
 *                   initial_rate, the first flush of every open held a 1 KiB
 *                   writer near 14 MiB/s for the whole flush (~90 ms of a
 *                   64 MiB memtable); the price is at most that stop, once.
 *                   Until the first flush's ETA is known, the flush pace is
 *                   a guess too: with active_capacity known, it binds only
 *                   once the active memtable is half full (a 90 MB/s
 *                   open-loop writer held at 14 MiB/s in the first flush's
 *                   first pass waited 12-15 ms after every open; half a
 *                   memtable covers a flush far slower than measured ones).
 *                   Never below min_rate / 16; no limit at an ETA of 0;
 *                 - the container's drain (the rate at which column
 *                   compaction empties the pool, wctl_input.drain_rate),
 *                   on a ramp over the band of fill [ramp_lo, near_full]:
 *                       ramp(f) = drain x (1 + ramp_gain x (near_full - f)
 *                                                 / (near_full - ramp_lo))
 *                   from (1 + ramp_gain) x drain at ramp_lo down to the
 *                   drain itself at near_full, and past near_full down to
 *                   nothing (the floor below) at a full container, so that
 *                   writers settle where they put in what the background
 *                   takes out, below near_full, and a drain that turns out
 *                   slower than measured pushes them back instead of into
 *                   a full pool. Until the first measurement of a drain
 *                   that is expected (drain_expected: the first column has
 *                   not run long enough), the ramp runs on the flush pace
 *                   as the drain (initial_rate before any flush sample):
 *                   writers are not let into the band unpaced, and past
 *                   near_full the ramp still falls to the floor, but they
 *                   are not held to a guess far below what they run at --
 *                   on initial_rate (64 MiB/s at ramp_lo) the first column
 *                   of a 90 MB/s open-loop fill held writers for ~0.1 s
 *                   with half the pool free, a 20 ms p99 for that second;
 *                 - the deep compactions: when the deepest backlog
 *                   (wctl_input.deep_score, a level's bytes over its
 *                   target, the largest over L1 and below) reaches
 *                   debt_soft, at
 *                       debt(s) = flush x (debt_hard - s) / (debt_hard - debt_soft)
 *                   from the flush pace at debt_soft down to the floor at
 *                   debt_hard, so that writers leave the deep compactions
 *                   room to catch up instead of growing a backlog that
 *                   makes every later column rewrite more of L1;
 *                 the smallest of those that apply. The flush pace is
 *                 never below min_rate, the ramp and the debt never below
 *                 min_rate / 16 (a drain slower than min_rate must still
 *                 hold writers below it; a drain of 0 paces at that floor,
 *                 not a stop).
 *   WCTL_CLASSIC  pace at the fixed classic_rate (RocksDB's
 *                 delayed_write_rate, 16 MiB/s), and with a deep backlog
 *                 past debt_soft at debt(s) of that rate (RocksDB slows
 *                 writers on pending compaction bytes too).
 *   WCTL_OFF      no pacing.
 * Every mode reports STOP when mutable_left == 0.
 *
 * Pacing is a virtual clock `vt` (the time at which the bytes charged so far
 * have been "paid for" at the pace rate; nanoseconds). A write of b bytes
 * charges b/rate: vt = max(vt, now - slack) + b / rate, and the write may
 * proceed at time vt (its `until`). A debt smaller than the write's step is
 * not slept but carried in vt and paid by a later write; a write that owes a
 * step or more sleeps until it owes nothing, in one sleep (pieces of at most
 * max_sleep_us, 8 ms, re-evaluating the state between them): each wake-up
 * on a busy two-core machine overslept ~0.2 ms on average and 5 % of them
 * over 1 ms, so a 6 ms stall slept in 1 ms pieces took 8-9 ms. The sum of
 * sleeps is ~ bytes / rate however the writes are sized. The step sets how many writes wait at all: with
 * 100 us steps ~0.5 % of a paced 1 KiB fill's writes slept and that was its
 * p99.9; with 2 ms ~0.05 % do. A group commit's followers wait while its
 * leader sleeps, so the step is min_step_us (2 ms)
 * times the writes that wait with this one (1 + in->queued), at most 4x:
 * a sleep holds n writes, the debt needs 1/n as many sleeps. And the step
 * grows with the pace's pressure: the debt a paced write adds (its cost
 * less the time since the write before, averaged over the last stalls)
 * times stall_every (4000), at most step_cap_us (4 ms), so that about one
 * write in 4000 sleeps, or where the cap binds one in (cap / debt a write)
 * (a 4M x 1 KiB fill: 0.065 % of its writes slept at the 2 ms step, p99.9
 * 0.36-0.68 ms; 0.03 % at a step grown for one in 2000, p99.9 0.13-0.16
 * ms; a 16M x 1 KiB fill, paced half its time: 0.05 % at the capped step,
 * p99.9 0.45-0.62 ms, against 0.09-0.1 % and 2.1 ms when the step fell back
 * to 2 ms wherever the cap bound). A sleep ends late: the timer fires, then
 * the writer waits for a CPU the background threads hold and for the
 * engine's mutex (in a 16M x 1 KiB fill, 6 ms sleeps took 10.5 ms at the
 * median and 12.8 ms at the 90th percentile: most writes over 10 ms were
 * one 6 ms step). So with late_comp the controller measures each pacing
 * sleep's lateness from its ticket (a pacing delay returned at t, the next
 * call at t + delay + late: the caller calls again once it can go on) and
 * a stall sleeps what it owes less the average lateness, at least a quarter of it, and ends once it owes no more than
 * that lateness (W6): the debt left stays in vt and the next write pays
 * it, so the pace is unchanged and each stall takes about its step. An
 * average does not reach the tail (stalls 4-7 ms late), so the cap is 4 ms:
 * in 16M x 1 KiB fills 2-15 writes a run took over 10 ms, 15-57 at 6 ms,
 * for a p99.9 of 0.21-0.26 ms instead of 0.09-0.11 ms.
 * `slack` =
 * max_step_us lets writers that overslept catch up; a paced call after any
 * call that did not pace (NORMAL, STOP, or a SLOWDOWN whose rate is 0, "not
 * paced") starts vt at now.
 *
 * Protocol (one wctl_write ticket per write, e.g. on the writer's stack):
 *
 *     wctl_write t = WCTL_WRITE_INIT;
 *     uint64_t d = wctl_delay_us(w, &t, &in, bytes, now);
 *     while (d > 0) {
 *         if (t.state == WCTL_STOP) wait on the flush-done condvar, at most d
 *         else sleep d
 *         refresh `in`; d = wctl_delay_us(w, &t, &in, 0, now);
 *     }
 *     ... do the write ...
 *
 * Counters: writes (tickets started), stalled writes (tickets paced with
 * a delay > 0), stopped writes (tickets that saw STOP), stall_us (the sum of
 * all delays returned, pacing and STOP; a STOP wait woken early by a flush is
 * counted for the full step returned).
 *
 * Thread safety: a wctl is safe for concurrent use (one mutex). A ticket
 * belongs to one writer.
 */
#ifndef TKV_SCHED_WCTL_H
#define TKV_SCHED_WCTL_H

#include <stdint.h>

#define WCTL_SAMPLES 8 /* K: flush-bandwidth samples kept */

typedef enum wctl_mode { WCTL_PRL = 0, WCTL_CLASSIC = 1, WCTL_OFF = 2 } wctl_mode;
typedef enum wctl_state { WCTL_NORMAL = 0, WCTL_SLOWDOWN = 1, WCTL_STOP = 2 } wctl_state;

typedef struct wctl_options {
    wctl_mode mode;            /* default WCTL_PRL. Run time: wctl_set_mode */
    double near_full;          /* container fill fraction that means SLOWDOWN, (0, 1]; > 1
                                * disables. Default 0.9 */
    uint64_t classic_rate;     /* CLASSIC pace, bytes/s (> 0). Default 16 MiB/s */
    uint64_t initial_rate;     /* PRL pace before any flush sample, bytes/s (> 0). Default 16 MiB/s */
    uint64_t min_rate;         /* PRL pace floor, bytes/s. Default 1 MiB/s */
    uint64_t min_sample_bytes; /* flushes smaller than this are not sampled (their fixed
                                * costs make the bandwidth meaningless). Default 1 MiB */
    uint64_t max_step_us;      /* longest single STOP wait, and the slack of vt, 1..1000.
                                * Default 1000 */
    uint64_t max_sleep_us;     /* longest single pacing sleep, 1..100000: a write that
                                * owes more sleeps again after re-evaluating. Default
                                * 8000 (a stall is one sleep) */
    uint64_t min_step_us;      /* debts below this (times 1 + queued, queued <= 3) are
                                * carried, not slept; 0..100000. Default 2000 */
    uint64_t stall_every;      /* the step grows (up to step_cap_us) so that about one
                                * write in stall_every sleeps: step = stall_every x the
                                * debt a write adds (W5); 0: off. Default 4000 */
    uint64_t step_cap_us;      /* the largest step stall_every may set, 1..100000
                                * (a larger min_step_us x (1 + queued) still wins).
                                * Default 4000: a stall plus a late wake-up of 4-6 ms
                                * stays near 10 ms (6000 was over it) */
    double ramp_lo;            /* PRL: container fill where the drain ramp starts, [0, near_full).
                                * Default 0.5 */
    double ramp_gain;          /* PRL: at ramp_lo writers may run at (1 + ramp_gain) x the
                                * drain rate, >= 0. Default 3 */
    double pace_margin;        /* PRL paces at (1 - pace_margin) x the flush rate, 0..0.5.
                                * Default 0; the engine uses 1/8: with two memtables the
                                * pace starts when the flush does, so a flush a little
                                * slower than every recent sample would stop writers */
    double debt_soft;          /* deep_score at which the debt pacing starts; <= 0 disables.
                                * Default 2 (where the SILK scheduler stops pausing deep work) */
    double debt_hard;          /* deep_score at which the debt pace reaches the floor, > debt_soft.
                                * Default 4 */
    int late_comp;             /* 1: pacing sleeps are shortened by the lateness of recent
                                * wake-ups (W6); 0: off (still measured). Default 1 */
} wctl_options;

/* What the engine tells the controller, per call. */
typedef struct wctl_input {
    unsigned mutable_left;    /* memtables that can still take writes: the active one if
                             * not full, plus free slots (memtables - immutables) */
    unsigned max_memtables;   /* total memtables (informational; >= mutable_left) */
    double container_fill;    /* L0 container fill fraction, 0 without one; 1 = full (may pass 1:
                             * the engine counts what is promised to the container too) */
    int drain_known;          /* drain_rate is a measurement (else the ramp is off, unless
                             * drain_expected) */
    int drain_expected;       /* the container drains by a process that will be measured
                             * (l0=matrix: column compaction): while drain_known is 0, the
                             * ramp runs on the flush pace as its drain estimate */
    uint64_t drain_rate;      /* bytes/s (writer units) the container drains at; may be 0 */
    double deep_score;        /* the deep backlog: max over levels L1.. of bytes / target (0: none) */
    int flush_eta_known;      /* flush_eta_us is known (PRL's deadline; else the flush pace) */
    uint64_t flush_eta_us;    /* the running flush's time until it frees its memtable */
    uint64_t active_room;     /* bytes (writer units) the active memtable can still take */
    uint64_t active_capacity; /* what an empty active memtable takes, same units (0: unknown):
                             * before any flush sample and the running flush's ETA, the
                             * flush pace (a guess) binds only in its second half */
    unsigned queued;          /* other writes that would wait while this one sleeps (the
                             * engine: other writer threads); lengthens its step */
} wctl_input;

/* A write's ticket; initialise with WCTL_WRITE_INIT. `state` is the state at
 * the last call (the caller reads it to tell a STOP from a pacing delay);
 * `ramp_paced` is 1 once the write was charged at the container ramp's rate,
 * the ramp being its slowest stage (the caller reads it to tell that the
 * write waits for the container's drain: the engine then runs columns at a
 * higher CPU priority, db/mx.h); the other fields are the controller's. */
typedef struct wctl_write {
    wctl_state state;
    unsigned flags;
    uint64_t bytes;
    uint64_t until_ns; /* pacing: the write may proceed at this time (ns) */
    int ramp_paced;
    uint64_t slept_at_us, slept_us; /* the pacing sleep last returned, and when (W6) */
} wctl_write;
#define WCTL_WRITE_INIT                                                                                                \
    {                                                                                                                  \
        WCTL_NORMAL, 0, 0, 0, 0, 0, 0                                                                                  \
    }

typedef struct wctl_stats {
    wctl_mode mode;
    wctl_state state;         /* at the last call */
    uint64_t pace_rate;       /* bytes/s of the flush pace (0 in OFF mode) */
    uint64_t target_rate;     /* bytes/s writers were paced at in the last call (0: not paced) */
    uint64_t ramp_rate;       /* the container ramp's rate in the last call (0: off) */
    uint64_t drain_rate;      /* the drain rate of the last call (0: unknown or none) */
    double container_fill;    /* of the last call */
    uint64_t ramp_writes;     /* tickets paced by the container ramp */
    uint64_t debt_rate;       /* the debt's rate in the last call (0: off) */
    double deep_score;        /* of the last call */
    uint64_t debt_writes;     /* tickets paced by the debt (it was the slowest stage) */
    uint64_t deadline_rate;   /* the flush deadline's rate in the last call (0: off) */
    uint64_t flush_eta_us;    /* of the last call (0: unknown) */
    uint64_t deadline_writes; /* tickets paced at the flush deadline (it was the slowest stage) */
    uint64_t min_sample;      /* min of the samples (0 if none) */
    unsigned nsamples;        /* samples held, <= WCTL_SAMPLES */
    uint64_t samples_total;   /* samples accepted */
    uint64_t writes;          /* tickets started */
    uint64_t stalled_writes;  /* tickets delayed by pacing */
    uint64_t stopped_writes;  /* tickets that saw STOP */
    uint64_t stall_us;        /* sum of returned delays */
    uint64_t step_us;         /* the step of the last write evaluated in a paced SLOWDOWN (0: none yet) */
    uint64_t accrual_ns;      /* the debt a paced write adds, averaged over the last stalls (W5) */
    uint64_t late_us;         /* how late pacing sleeps ended, averaged (W6; 0: none reported) */
} wctl_stats;

typedef struct wctl wctl;

/* wctl_options_default -- fills the defaults above. */
void wctl_options_default(wctl_options *o);

/* wctl_create -- TKV_OK and *out, TKV_INVALID (NULL argument, bad mode, a
 * zero rate, steps out of range) or TKV_NO_MEMORY. */
int wctl_create(const wctl_options *o, wctl **out);

/* wctl_free -- NULL is a no-op. */
void wctl_free(wctl *w);

/* wctl_set_mode -- switches the mode (ablation); TKV_INVALID for an unknown
 * one. */
int wctl_set_mode(wctl *w, wctl_mode mode);

/* wctl_flush_sample -- a flush moved `bytes` (write-batch bytes, the unit
 * writers are charged in) in `duration_us`. Keeps the last WCTL_SAMPLES.
 * Returns 1 if the sample was kept, 0 if ignored (bytes < min_sample_bytes). */
int wctl_flush_sample(wctl *w, uint64_t bytes, uint64_t duration_us);

/* wctl_classify -- the state for `in` (a pure function of the inputs, the
 * mode and the fill band). */
wctl_state wctl_classify(const wctl *w, const wctl_input *in);

/* wctl_delay_us -- the deterministic core (never sleeps). For a new ticket
 * `bytes` is the write's size; later calls for the same ticket pass 0 (it is
 * ignored). Returns the microseconds to wait before calling again
 * (STOP: <= max_step_us; SLOWDOWN: <= max_sleep_us), or 0 when the write
 * may proceed now (the ticket is then
 * finished; a finished ticket passed again starts a new write). Sets
 * t->state. */
uint64_t wctl_delay_us(wctl *w, wctl_write *t, const wctl_input *in, uint64_t bytes, uint64_t now_us);

/* wctl_pace_rate -- the flush pace: the rate SLOWDOWN paces at now when a
 * memtable is the limit (0 = no pacing, OFF). */
uint64_t wctl_pace_rate(wctl *w);

/* wctl_target_rate -- the rate a write with inputs `in` is paced at (0 =
 * not paced: NORMAL, OFF, or STOP). A pure function of the inputs and the
 * flush samples; the unit tests of the control law read it. */
uint64_t wctl_target_rate(wctl *w, const wctl_input *in);

/* wctl_get_stats -- a consistent snapshot. */
void wctl_get_stats(wctl *w, wctl_stats *st);

#endif
