// SPDX-License-Identifier: Apache-2.0
/*
 * tadapt.c -- the adaptation of T to the device's observed throughput
 * (control law and reasons in tadapt.h).
 *
 * Invariants (under a->mu):
 *   (A1) t_min <= T <= t_max.
 *   (A2) up_run > 0 implies down_run == 0 and the reverse: an interval is at
 *        most one of the two kinds, and any other interval clears both.
 *   (A3) run_lo / run_hi are the lowest / highest D of the current run.
 *   (A4) bytes / busy_ns hold the windows of the interval that began at
 *        start_us.
 */
#include "sched/tadapt.h"

#include <pthread.h>
#include <stdlib.h>

#include "tierkv.h"

struct tadapt {
    pthread_mutex_t mu;
    tadapt_options o;
    uint64_t start_us; /* start of the current interval */
    uint64_t bytes, busy_ns;
    double run_lo, run_hi; /* (A3) */
    tadapt_stats st;
};

void tadapt_options_default(tadapt_options *o, uint64_t t0)
{
    o->t0 = t0;
    o->t_min = 0;
    o->t_max = 0;
    o->interval_us = 1000000;
    o->intervals = 3;
    o->up_pct = 10;
    o->down_pct = 20;
    o->sat_queue = 1.0;
    o->pinned = 0;
}

int tadapt_create(const tadapt_options *o, uint64_t now_us, tadapt **out)
{
    if (!o || !out || o->t0 == 0 || o->interval_us == 0 || o->intervals == 0 || o->down_pct < 1 || o->down_pct > 99)
        return TKV_INVALID;
    uint64_t lo = o->t_min ? o->t_min : o->t0 / 8, hi = o->t_max ? o->t_max : o->t0 * 8;
    if (lo == 0) lo = 1;
    if (lo > o->t0 || hi < o->t0) return TKV_INVALID;
    tadapt *a = calloc(1, sizeof *a);
    if (!a) return TKV_NO_MEMORY;
    if (pthread_mutex_init(&a->mu, NULL) != 0) {
        free(a);
        return TKV_NO_MEMORY;
    }
    a->o = *o;
    a->o.t_min = lo;
    a->o.t_max = hi;
    a->start_us = now_us;
    a->st.t = o->t0;
    a->st.t_min = lo;
    a->st.t_max = hi;
    a->st.pinned = o->pinned;
    *out = a;
    return TKV_OK;
}

void tadapt_free(tadapt *a)
{
    if (!a) return;
    pthread_mutex_destroy(&a->mu);
    free(a);
}

/* move -- sets T to v within (A1) and the factor-2 step; clears the runs.
 * Returns 1 if T changed. */
static int move(tadapt *a, double v)
{
    double t = (double)a->st.t;
    if (v > 2 * t) v = 2 * t;
    if (v < t / 2) v = t / 2;
    if (v > (double)a->o.t_max) v = (double)a->o.t_max;
    if (v < (double)a->o.t_min) v = (double)a->o.t_min;
    uint64_t nt = (uint64_t)v;
    a->st.up_run = a->st.down_run = 0;
    if (nt == a->st.t) return 0;
    if (nt > a->st.t) a->st.raises++;
    else a->st.lowers++;
    a->st.t = nt;
    return 1;
}

/* interval -- the decision at the end of an interval of d_us (tadapt.h). */
static int interval(tadapt *a, uint64_t d_us)
{
    double d = (double)a->bytes * 1e6 / (double)d_us;
    double q = (double)a->busy_ns / ((double)d_us * 1e3);
    double t = (double)a->st.t;
    a->st.delivered = (uint64_t)d;
    a->st.queue = q;
    a->st.intervals++;
    int up = d > t * (100.0 + a->o.up_pct) / 100.0;
    int down = !up && q >= a->o.sat_queue && d < t * (100.0 - a->o.down_pct) / 100.0;
    if (up) {
        if (a->st.up_run++ == 0 || d < a->run_lo) a->run_lo = d;
        a->st.down_run = 0;
    } else if (down) {
        if (a->st.down_run++ == 0 || d > a->run_hi) a->run_hi = d;
        a->st.up_run = 0;
    } else {
        a->st.up_run = a->st.down_run = 0;
    }
    if (a->o.pinned) {
        a->st.up_run = a->st.down_run = 0;
        return 0;
    }
    if ((unsigned)a->st.up_run >= a->o.intervals) return move(a, a->run_lo);
    if ((unsigned)a->st.down_run >= a->o.intervals) return move(a, a->run_hi);
    return 0;
}

int tadapt_sample(tadapt *a, uint64_t bytes, uint64_t busy_ns, uint64_t now_us)
{
    pthread_mutex_lock(&a->mu);
    a->bytes += bytes;
    a->busy_ns += busy_ns;
    int changed = 0;
    if (now_us > a->start_us && now_us - a->start_us >= a->o.interval_us) {
        changed = interval(a, now_us - a->start_us);
        a->start_us = now_us;
        a->bytes = a->busy_ns = 0; /* (A4) */
    }
    pthread_mutex_unlock(&a->mu);
    return changed;
}

uint64_t tadapt_t(tadapt *a)
{
    pthread_mutex_lock(&a->mu);
    uint64_t t = a->st.t;
    pthread_mutex_unlock(&a->mu);
    return t;
}

void tadapt_get_stats(tadapt *a, tadapt_stats *st)
{
    pthread_mutex_lock(&a->mu);
    *st = a->st;
    pthread_mutex_unlock(&a->mu);
}
