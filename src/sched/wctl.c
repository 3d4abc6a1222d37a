// SPDX-License-Identifier: Apache-2.0
/*
 * wctl.c -- the write controller of wctl.h.
 *
 * Invariants (under w->mu):
 *   (W1) samples[] holds the last nsamples (<= WCTL_SAMPLES) accepted flush
 *        bandwidths, newest at pos - 1; all > 0.
 *   (W2) a ticket is charged (WT_CHARGED) at most once: its bytes enter vt
 *        the first time it is evaluated in a paced SLOWDOWN.
 *   (W3) stall_us == sum of every nonzero value wctl_delay_us returned.
 *   (W4) a paced write that sleeps at all (WT_STALLED) owed at least its
 *        step, min_step_us x (1 + min(queued, 3)), when it began, and is
 *        released only when it owes nothing: under exact sleeps it waits
 *        >= its step. With stall_every, the step is at least
 *        min(stall_every x accrual_ns, step_cap_us) (W5).
 *   (W5) accrual_ns is 0 until the first stall, then an average (weight
 *        1/4 for the newest) of owed / writes at each stall's start: the
 *        debt the stall's write owed over the tickets started since the
 *        stall before (writes_at_stall). It is a property of the pace
 *        (cost per write less the time between writes), not of the step,
 *        so step = stall_every x accrual_ns spaces stalls ~stall_every
 *        tickets apart.
 *   (W6) late_ns is 0 until a ticket comes back after a pacing delay,
 *        then an average (weight 1/8 for the newest) of how much later
 *        than the delay it came back, each sample capped at max_sleep_us.
 *        With late_comp, a stall's first sleep is owed - late (at least
 *        owed / 4), later ones owed - late, and it ends once owed <= late:
 *        the rest stays in vt, so the sum of sleeps is still ~ bytes / rate
 *        (W3, W4 with late 0).
 */
#include "sched/wctl.h"

#include <pthread.h>
#include <stdlib.h>

#include "tierkv.h"
#include "util/num.h"

enum {
    WT_STARTED = 1u, /* the ticket belongs to a write in progress */
    WT_CHARGED = 2u, /* its bytes are in vt (W2) */
    WT_STALLED = 4u, /* counted in stalled_writes */
    WT_STOPPED = 8u, /* counted in stopped_writes */
};

struct wctl {
    pthread_mutex_t mu;
    wctl_options o;
    uint64_t samples[WCTL_SAMPLES];
    unsigned nsamples, pos;
    uint64_t vt_ns;           /* pacing virtual clock, NANOseconds (a 100-byte write
                               * at 40 MiB/s costs 2.38 us: microseconds would
                               * lose 16% to truncation) */
    int last_paced;           /* the last call paced (SLOWDOWN at a rate > 0): a
                               * paced call after one that was not resets vt */
    uint64_t writes_at_stall; /* st.writes when the last stall began (W5) */
    double late_ns;           /* average lateness of pacing sleeps (W6) */
    uint64_t late_samples;    /* lateness samples taken (W6) */
    wctl_stats st;
};

/* WCTL_FLOOR_DIV -- the ramp, the debt and the flush deadline never pace
 * below min_rate / WCTL_FLOOR_DIV: far below min_rate, because a drain
 * slower than min_rate must still hold writers below it (wctl.h). */
#define WCTL_FLOOR_DIV 16

/* rate_floor -- min_rate / WCTL_FLOOR_DIV, and at least 1 B/s (a rate of 0
 * would read as "not paced"). */
static uint64_t rate_floor(const wctl *w)
{
    uint64_t f = w->o.min_rate / WCTL_FLOOR_DIV;
    return f ? f : 1;
}

/* wctl_options_default -- see wctl.h. */
void wctl_options_default(wctl_options *o)
{
    o->mode = WCTL_PRL;
    o->near_full = 0.9;
    o->classic_rate = 16ull << 20;
    o->initial_rate = 16ull << 20;
    o->min_rate = 1ull << 20;
    o->min_sample_bytes = 1ull << 20;
    o->max_step_us = 1000;
    o->max_sleep_us = 8000;
    o->min_step_us = 2000;
    o->stall_every = 4000;
    o->step_cap_us = 4000;
    o->ramp_lo = 0.5;
    o->ramp_gain = 3.0;
    o->pace_margin = 0;
    o->debt_soft = 2.0;
    o->debt_hard = 4.0;
    o->late_comp = 1;
}

/* wctl_create -- see wctl.h. */
int wctl_create(const wctl_options *o, wctl **out)
{
    if (!o || !out || (unsigned)o->mode > WCTL_OFF || o->classic_rate == 0 || o->initial_rate == 0 ||
        o->max_step_us < 1 || o->max_step_us > 1000 || o->min_step_us > 100000 || o->step_cap_us < 1 ||
        o->step_cap_us > 100000 || o->max_sleep_us < 1 || o->max_sleep_us > 100000 || !(o->near_full > 0) ||
        !(o->pace_margin >= 0 && o->pace_margin <= 0.5) || !(o->ramp_lo >= 0 && o->ramp_lo < o->near_full) ||
        !(o->ramp_gain >= 0) || !(o->debt_soft <= 0 || o->debt_hard > o->debt_soft))
        return TKV_INVALID;
    wctl *w = calloc(1, sizeof *w);
    if (!w) return TKV_NO_MEMORY;
    if (pthread_mutex_init(&w->mu, NULL) != 0) {
        free(w);
        return TKV_NO_MEMORY;
    }
    w->o = *o;
    w->st.mode = o->mode;
    *out = w;
    return TKV_OK;
}

/* wctl_free -- see wctl.h. */
void wctl_free(wctl *w)
{
    if (!w) return;
    pthread_mutex_destroy(&w->mu);
    free(w);
}

/* wctl_set_mode -- see wctl.h. */
int wctl_set_mode(wctl *w, wctl_mode mode)
{
    if ((unsigned)mode > WCTL_OFF) return TKV_INVALID;
    pthread_mutex_lock(&w->mu);
    w->o.mode = mode;
    w->st.mode = mode;
    pthread_mutex_unlock(&w->mu);
    return TKV_OK;
}

/* min_sample_locked -- min of samples[] (0 if none). */
static uint64_t min_sample_locked(const wctl *w)
{
    uint64_t m = 0;
    for (unsigned i = 0; i < w->nsamples; i++)
        if (m == 0 || w->samples[i] < m) m = w->samples[i];
    return m;
}

/* pace_rate_locked -- the flush pace for the current mode (0 = none). */
static uint64_t pace_rate_locked(const wctl *w)
{
    switch (w->o.mode) {
    case WCTL_OFF:
        return 0;
    case WCTL_CLASSIC:
        return w->o.classic_rate;
    case WCTL_PRL:
    default: {
        uint64_t r = w->nsamples ? min_sample_locked(w) : w->o.initial_rate;
        r -= (uint64_t)((double)r * w->o.pace_margin);
        return r < w->o.min_rate ? w->o.min_rate : r;
    }
    }
}

/* wctl_flush_sample -- see wctl.h (W1). */
int wctl_flush_sample(wctl *w, uint64_t bytes, uint64_t duration_us)
{
    if (bytes == 0 || bytes < w->o.min_sample_bytes) return 0;
    if (duration_us == 0) duration_us = 1;
    double bw = (double)bytes * 1e6 / (double)duration_us;
    uint64_t b = sat_u64(bw);
    if (b == 0) b = 1;
    pthread_mutex_lock(&w->mu);
    w->samples[w->pos] = b;
    w->pos = (w->pos + 1) % WCTL_SAMPLES;
    if (w->nsamples < WCTL_SAMPLES) w->nsamples++;
    w->st.samples_total++;
    pthread_mutex_unlock(&w->mu);
    return 1;
}

/* ramp_on -- 1 if the container ramp paces this input (PRL, a drain
 * measured or expected, fill inside or past the band). */
static int ramp_on(const wctl *w, const wctl_input *in)
{
    return w->o.mode == WCTL_PRL && (in->drain_known || in->drain_expected) && in->container_fill >= w->o.ramp_lo;
}

/* ramp_drain -- the drain the ramp runs on: the measurement, or before
 * the first one the flush pace (wctl.h). */
static uint64_t ramp_drain(const wctl *w, const wctl_input *in)
{
    return in->drain_known ? in->drain_rate : pace_rate_locked(w);
}

/* ramp_rate -- the container ramp of wctl.h at in's fill and drain rate. */
static uint64_t ramp_rate(const wctl *w, const wctl_input *in)
{
    double f = in->container_fill, hi = w->o.near_full, lo = w->o.ramp_lo, k;
    if (f <= hi) {
        k = 1.0 + w->o.ramp_gain * (hi - f) / (hi - lo);
    } else {
        double past = hi < 1.0 ? (f - hi) / (1.0 - hi) : 1.0; /* 0 at near_full, 1 when full */
        k = 1.0 - (past > 1.0 ? 1.0 : past);
    }
    double r = (double)ramp_drain(w, in) * k;
    return sat_u64(r);
}

/* debt_on -- 1 if the deep-compaction debt paces this input (any mode but
 * OFF, the debt pacing enabled, the deepest backlog at debt_soft or more). */
static int debt_on(const wctl *w, const wctl_input *in)
{
    return w->o.mode != WCTL_OFF && w->o.debt_soft > 0 && in->deep_score >= w->o.debt_soft;
}

/* debt_rate -- the debt's pace of wctl.h: `pace` at debt_soft, falling
 * linearly to 0 at debt_hard (the caller applies the floor). */
static uint64_t debt_rate(const wctl *w, const wctl_input *in, uint64_t pace)
{
    double k = (w->o.debt_hard - in->deep_score) / (w->o.debt_hard - w->o.debt_soft);
    if (k > 1.0) k = 1.0;
    if (!(k > 0.0)) return 0;
    return (uint64_t)((double)pace * k);
}

/* wctl_classify -- the state table of wctl.h. */
wctl_state wctl_classify(const wctl *w, const wctl_input *in)
{
    if (in->mutable_left == 0) return WCTL_STOP;
    if (in->mutable_left == 1 || in->container_fill >= w->o.near_full || ramp_on(w, in) || debt_on(w, in))
        return WCTL_SLOWDOWN;
    return WCTL_NORMAL;
}

/* deadline_on -- 1 if the running flush's deadline paces this input (PRL,
 * one memtable left, the flush's ETA known). */
static int deadline_on(const wctl *w, const wctl_input *in)
{
    return w->o.mode == WCTL_PRL && in->mutable_left == 1 && in->flush_eta_known;
}

/* deadline_rate -- the deadline of wctl.h: active_room / flush_eta, less
 * pace_margin, at least min_rate / 16; UINT64_MAX (no limit) at an ETA of 0. */
static uint64_t deadline_rate(const wctl *w, const wctl_input *in)
{
    if (in->flush_eta_us == 0) return UINT64_MAX;
    double r = (double)in->active_room * 1e6 / (double)in->flush_eta_us * (1.0 - w->o.pace_margin);
    uint64_t floor = rate_floor(w);
    return r < (double)floor ? floor : sat_u64(r);
}

/* stage_rate_locked -- the pace of the memtable and container stages of a
 * write with inputs `in` in SLOWDOWN (wctl.h), before the debt's; 0 = OFF.
 * *ramp and *deadline get the ramp's and the flush deadline's rates (0 when
 * they do not apply). */
static uint64_t stage_rate_locked(const wctl *w, const wctl_input *in, uint64_t *ramp, uint64_t *deadline)
{
    *ramp = *deadline = 0;
    uint64_t flush = pace_rate_locked(w);
    if (flush == 0) return 0; /* OFF */
    /* the memtable stage while a memtable is the limit: the flush pace, or
     * the running flush's deadline when its ETA is known and that is slower */
    uint64_t mem = flush;
    /* before any flush sample and ETA the pace is initial_rate's guess: it
     * binds only in the active memtable's second half (wctl.h) */
    if (w->o.mode == WCTL_PRL && w->nsamples == 0 && !deadline_on(w, in) && in->active_capacity &&
        in->active_room > in->active_capacity / 2)
        mem = UINT64_MAX;
    if (deadline_on(w, in)) {
        *deadline = deadline_rate(w, in);
        /* a flush behind slows writers; one ahead does not speed them up --
         * except before any flush was measured, when the flush pace is only
         * initial_rate's guess and the running flush's own progress is the
         * one measurement there is (an ETA of 0 sets no limit: the pace
         * stays) */
        if (*deadline < mem || (w->nsamples == 0 && *deadline != UINT64_MAX)) mem = *deadline;
    }
    if (!ramp_on(w, in)) {
        if (in->mutable_left == 1 && in->container_fill < w->o.near_full) return mem;
        return mem < flush ? mem : flush; /* near full, drain unknown; or the debt alone */
    }
    *ramp = ramp_rate(w, in);
    /* the memtable limits too while it is the limit; a near-full container
     * with a measured drain is paced by the ramp alone */
    if (in->mutable_left == 1 && mem < *ramp) return mem;
    /* the ramp's own floor is far lower: a drain slower than min_rate must
     * still hold writers below it, or they overrun the container */
    uint64_t floor = rate_floor(w);
    return *ramp < floor ? floor : *ramp;
}

/* target_rate_locked -- the pace of a write with inputs `in` in state s:
 * the slowest applicable stage (wctl.h); 0 = not paced. *ramp and *debt get
 * the container ramp's and the debt's rates (0 when they do not apply). */
static uint64_t target_rate_locked(const wctl *w, const wctl_input *in, wctl_state s, uint64_t *ramp, uint64_t *debt,
                                   uint64_t *deadline)
{
    *ramp = *debt = *deadline = 0;
    if (s != WCTL_SLOWDOWN) return 0;
    uint64_t r = stage_rate_locked(w, in, ramp, deadline);
    if (r == 0) return 0;
    if (debt_on(w, in)) {
        uint64_t floor = rate_floor(w);
        *debt = debt_rate(w, in, pace_rate_locked(w));
        if (*debt < floor) *debt = floor;
        if (*debt < r) r = *debt;
    }
    return r == UINT64_MAX ? 0 : r; /* no stage sets a limit (a guess that does not bind yet) */
}

/* wctl_target_rate -- see wctl.h. */
uint64_t wctl_target_rate(wctl *w, const wctl_input *in)
{
    pthread_mutex_lock(&w->mu);
    uint64_t ramp, debt, deadline;
    uint64_t r = target_rate_locked(w, in, wctl_classify(w, in), &ramp, &debt, &deadline);
    pthread_mutex_unlock(&w->mu);
    return r;
}

/* stall_step -- the debt at which a write begins to sleep (W4, W5). */
static uint64_t stall_step(const wctl *w, unsigned queued)
{
    uint64_t step = w->o.min_step_us * (1u + (queued < 3 ? queued : 3));
    if (w->o.stall_every && w->st.accrual_ns) {
        /* Capped even where the capped step stalls more than one write in
         * stall_every: the p99.9 is over the whole run, and the heavily
         * paced stretches, where fewer and longer stalls matter most, hold
         * few of its writes. */
        double s = (double)w->st.accrual_ns * (double)w->o.stall_every / 1000.0;
        uint64_t grown = s >= (double)w->o.step_cap_us ? w->o.step_cap_us : (uint64_t)s;
        if (grown > step) step = grown;
    }
    return step;
}

/* note_stall -- a stall begins owing owed_us: updates accrual_ns (W5). */
static void note_stall(wctl *w, uint64_t owed_us)
{
    uint64_t n = w->st.writes - w->writes_at_stall;
    w->writes_at_stall = w->st.writes;
    if (n == 0) return;
    uint64_t a = owed_us * 1000u / n;
    if (!w->st.accrual_ns) w->st.accrual_ns = a ? a : 1;
    else w->st.accrual_ns = (uint64_t)((3.0 * (double)w->st.accrual_ns + (double)a) / 4.0);
}

/* sleep_for -- what a stall that owes owed_us sleeps now (W6): owed less
 * the average lateness of sleeps, at least a quarter of owed on its first
 * sleep (0: it may go on), at most max_sleep_us. */
static uint64_t sleep_for(const wctl *w, uint64_t owed_us, int first)
{
    uint64_t late = w->o.late_comp ? (uint64_t)(w->late_ns / 1000.0) : 0;
    uint64_t d = owed_us > late ? owed_us - late : 0;
    if (first && d < owed_us / 4) d = owed_us / 4;
    if (first && d == 0) d = owed_us; /* (owed_us < 4) */
    return d < w->o.max_sleep_us ? d : w->o.max_sleep_us;
}

/* note_late -- t comes back at now_us after a pacing delay: its lateness
 * enters the average (W6). */
static void note_late(wctl *w, wctl_write *t, uint64_t now_us)
{
    uint64_t due = t->slept_at_us + t->slept_us, late = now_us > due ? now_us - due : 0;
    t->slept_us = 0;
    if (late > w->o.max_sleep_us) late = w->o.max_sleep_us;
    double ns = (double)late * 1000.0;
    w->late_ns = w->late_samples++ ? (7.0 * w->late_ns + ns) / 8.0 : ns;
    w->st.late_us = (uint64_t)(w->late_ns / 1000.0);
}

/* wctl_delay_us -- see wctl.h. */
uint64_t wctl_delay_us(wctl *w, wctl_write *t, const wctl_input *in, uint64_t bytes, uint64_t now_us)
{
    pthread_mutex_lock(&w->mu);
    if (!(t->flags & WT_STARTED)) {
        t->flags = WT_STARTED;
        t->bytes = bytes;
        t->until_ns = 0;
        t->ramp_paced = 0;
        t->slept_us = 0;
        w->st.writes++;
    }
    if (t->slept_us) note_late(w, t, now_us);
    wctl_state s = wctl_classify(w, in);
    uint64_t ramp, debt, deadline;
    uint64_t rate = target_rate_locked(w, in, s, &ramp, &debt, &deadline);
    uint64_t d = 0;
    if (s == WCTL_STOP) {
        if (!(t->flags & WT_STOPPED)) {
            t->flags |= WT_STOPPED;
            w->st.stopped_writes++;
        }
        d = w->o.max_step_us; /* poll / wait for a flush, then re-evaluate */
    } else if (s == WCTL_SLOWDOWN && rate > 0) {
        uint64_t now_ns = now_us * 1000u;
        if (!w->last_paced) w->vt_ns = now_ns; /* a new pacing episode: no debt carried over */
        if (!(t->flags & WT_CHARGED)) {        /* (W2) */
            uint64_t slack_ns = w->o.max_step_us * 1000u;
            uint64_t base = now_ns > slack_ns && w->vt_ns < now_ns - slack_ns ? now_ns - slack_ns : w->vt_ns;
            double cost = (double)t->bytes * 1e9 / (double)rate;
            w->vt_ns = base + (cost >= 1e18 ? (uint64_t)1e18 : (uint64_t)cost);
            t->until_ns = w->vt_ns;
            t->flags |= WT_CHARGED;
            if (ramp) w->st.ramp_writes++;
            t->ramp_paced = ramp && ramp <= rate;
            if (debt && debt <= rate) w->st.debt_writes++;
            if (deadline && deadline <= rate) w->st.deadline_writes++;
        }
        uint64_t owed = t->until_ns > now_ns ? (t->until_ns - now_ns) / 1000u : 0;
        /* (W4) a write sleeps once it owes a step, then until it owes
         * nothing; the writers queued behind it wait as long, so the step
         * grows with them (up to 4x) to keep the share of writes that wait,
         * and with the pace's pressure (W5) */
        uint64_t step = 1; /* once sleeping, any debt */
        if (!(t->flags & WT_STALLED)) {
            w->st.step_us = stall_step(w, in->queued);
            if (w->st.step_us > step) step = w->st.step_us;
        }
        if (owed >= step) { /* else carried in vt for later writes */
            d = sleep_for(w, owed, !(t->flags & WT_STALLED));
            t->slept_at_us = now_us;
            t->slept_us = d;
            if (d && !(t->flags & WT_STALLED)) {
                t->flags |= WT_STALLED;
                w->st.stalled_writes++;
                note_stall(w, owed);
                w->st.step_us = stall_step(w, in->queued); /* as the new average sets it */
            }
        }
    }
    w->last_paced = s == WCTL_SLOWDOWN && rate > 0;
    w->st.state = s;
    w->st.target_rate = rate;
    w->st.ramp_rate = ramp;
    w->st.debt_rate = debt;
    w->st.deadline_rate = deadline == UINT64_MAX ? 0 : deadline;
    w->st.flush_eta_us = in->flush_eta_known ? in->flush_eta_us : 0;
    w->st.deep_score = in->deep_score;
    w->st.drain_rate = in->drain_known ? in->drain_rate : 0;
    w->st.container_fill = in->container_fill;
    w->st.stall_us += d; /* (W3) */
    t->state = s;
    if (d == 0) t->flags = 0; /* finished: the ticket may start a new write */
    pthread_mutex_unlock(&w->mu);
    return d;
}

/* wctl_pace_rate -- see wctl.h. */
uint64_t wctl_pace_rate(wctl *w)
{
    pthread_mutex_lock(&w->mu);
    uint64_t r = pace_rate_locked(w);
    pthread_mutex_unlock(&w->mu);
    return r;
}

/* wctl_get_stats -- snapshot. */
void wctl_get_stats(wctl *w, wctl_stats *st)
{
    pthread_mutex_lock(&w->mu);
    *st = w->st;
    st->pace_rate = pace_rate_locked(w);
    st->min_sample = min_sample_locked(w);
    st->nsamples = w->nsamples;
    pthread_mutex_unlock(&w->mu);
}
