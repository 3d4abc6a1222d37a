// SPDX-License-Identifier: Apache-2.0
/*
 * monitor.c -- the control law of monitor.h and the optional ticker thread.
 *
 * Invariants (under m->mu):
 *   (M1) floor <= published <= max(floor, T - epsilon)   (published = I)
 *   (M2) win[] holds the last min(samples, smooth) windows, newest at
 *        win_pos - 1 (mod smooth); wsum_bytes / wsum_us are their sums
 *        (wsum_us > 0 once a window was seen).
 *   (M3) diffs[] holds the last min(samples - 1, MONITOR_NOISE_WINDOWS)
 *        values |raw_k - raw_{k-1}|.
 *   (M4) latency cap on: floor <= cap <= max(floor, T); lat_* hold the reads
 *        of the interval that began at lat_start_us.
 */
#include "sched/monitor.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sched/clock.h"
#include "tierkv.h"
#include "util/thread.h"

typedef struct mon_window {
    uint64_t bytes, us;
} mon_window;

struct monitor {
    pthread_mutex_t mu;
    monitor_options o;
    uint64_t last_us;       /* end of the previous window */
    uint64_t pending_bytes; /* bytes of zero-length windows, merged forward */
    mon_window win[MONITOR_MAX_SMOOTH];
    unsigned win_pos, win_n;
    double wsum_bytes, wsum_us;
    double diffs[MONITOR_NOISE_WINDOWS];
    unsigned diff_pos, diff_n;
    double prev_raw;
    int force_publish; /* T changed: publish on the next sample */
    /* read-latency cap (M4) */
    uint64_t lat_start_us; /* start of the current interval */
    uint64_t lat_reads, lat_ns;
    double baseline_ns; /* B; 0 until the first interval with enough reads */
    uint64_t cap;
    monitor_stats st;
};

/* monitor_options_default -- see monitor.h. */
void monitor_options_default(monitor_options *o)
{
    o->device_bw = 500ull << 20;
    o->min_internal_bw = 50ull << 20;
    o->epsilon = 10ull << 20;
    o->threshold = 10ull << 20;
    o->smooth_windows = 2;
    o->noise_mult = 5;
    o->period_us = 10000;
    o->latency_factor_pct = 0;
    o->latency_target_us = 0;
    o->latency_interval_us = 100000;
    o->latency_min_reads = 16;
    o->latency_backoff_pct = 70;
    o->latency_step = 0;
    o->latency_baseline_tau_us = 30000000;
}

/* latency_on -- the read-latency cap is configured. */
static int latency_on(const monitor_options *o) { return o->latency_factor_pct > 0 || o->latency_target_us > 0; }

/* cap_max -- the cap's ceiling, max(floor, T). */
static uint64_t cap_max(const monitor_options *o)
{
    return o->device_bw > o->min_internal_bw ? o->device_bw : o->min_internal_bw;
}

/* candidate -- max(floor, T - C - epsilon) without unsigned wrap-around. */
static uint64_t candidate(const monitor_options *o, double c)
{
    double v = (double)o->device_bw - c - (double)o->epsilon;
    double fl = (double)o->min_internal_bw;
    return (uint64_t)(v > fl ? v : fl);
}

/* monitor_create -- see monitor.h. */
int monitor_create(const monitor_options *o, uint64_t now_us, monitor **out)
{
    if (!o || !out || o->device_bw == 0 || o->smooth_windows < 1 || o->smooth_windows > MONITOR_MAX_SMOOTH)
        return TKV_INVALID;
    if (latency_on(o) && (o->latency_backoff_pct < 1 || o->latency_backoff_pct > 99 || o->latency_interval_us == 0))
        return TKV_INVALID;
    monitor *m = calloc(1, sizeof *m);
    if (!m) return TKV_NO_MEMORY;
    if (pthread_mutex_init(&m->mu, NULL) != 0) {
        free(m);
        return TKV_NO_MEMORY;
    }
    m->o = *o;
    m->last_us = now_us;
    m->st.device_bw = o->device_bw;
    m->st.candidate = candidate(o, 0);
    m->st.internal_bw = m->st.candidate; /* (M1) with C = 0 */
    m->st.deadband = o->threshold;
    m->lat_start_us = now_us;
    m->cap = cap_max(o);
    if (latency_on(o)) m->st.latency_cap = m->cap;
    *out = m;
    return TKV_OK;
}

/* monitor_free -- see monitor.h. */
void monitor_free(monitor *m)
{
    if (!m) return;
    pthread_mutex_destroy(&m->mu);
    free(m);
}

/* cmp_double -- qsort order. */
static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* noise_level -- N of monitor.h: the mean of diffs[] without its largest
 * eighth (0 when empty). Dropping the top values keeps the one or two large
 * differences a step in load makes from widening the deadband; averaging the
 * rest is much steadier than a median of so few values. */
static double noise_level(const monitor *m)
{
    if (m->diff_n == 0) return 0;
    double tmp[MONITOR_NOISE_WINDOWS];
    memcpy(tmp, m->diffs, m->diff_n * sizeof tmp[0]);
    qsort(tmp, m->diff_n, sizeof tmp[0], cmp_double);
    unsigned keep = m->diff_n - m->diff_n / 8;
    double sum = 0;
    for (unsigned i = 0; i < keep; i++) sum += tmp[i];
    return sum / keep;
}

/* latency_interval -- at the end of a latency interval: the AIMD step of
 * the cap from its mean read latency (monitor.h), then a new interval. */
static void latency_interval(monitor *m, uint64_t now_us)
{
    const monitor_options *o = &m->o;
    uint64_t floor = o->min_internal_bw, top = cap_max(o);
    uint64_t step = o->latency_step ? o->latency_step : o->device_bw / 32;
    if (step == 0) step = 1;
    int high = 0;
    if (m->lat_reads >= o->latency_min_reads && m->lat_reads > 0) {
        double mean = (double)m->lat_ns / (double)m->lat_reads;
        double span = (double)(now_us - m->lat_start_us);
        if (m->baseline_ns <= 0 || mean < m->baseline_ns) {
            m->baseline_ns = mean;
        } else {
            double w = o->latency_baseline_tau_us ? span / (double)o->latency_baseline_tau_us : 1;
            m->baseline_ns += (mean - m->baseline_ns) * (w < 1 ? w : 1);
        }
        double target = o->latency_target_us ? (double)o->latency_target_us * 1e3
                                             : m->baseline_ns * (double)o->latency_factor_pct / 100.0;
        high = mean > target;
        m->st.read_latency_ns = (uint64_t)mean;
        m->st.latency_baseline_ns = (uint64_t)m->baseline_ns;
        m->st.latency_target_ns = (uint64_t)target;
        m->st.latency_intervals++;
    }
    if (high) {
        /* decrease from what is in effect, not from a cap that grew above it */
        uint64_t from = m->cap < m->st.internal_bw ? m->cap : m->st.internal_bw;
        uint64_t c = (uint64_t)((double)from * (double)o->latency_backoff_pct / 100.0);
        m->cap = c > floor ? c : floor;
        m->st.latency_backoffs++;
    } else {
        m->cap = top - m->cap > step ? m->cap + step : top;
    }
    m->st.latency_cap = m->cap;
    m->lat_start_us = now_us;
    m->lat_reads = m->lat_ns = 0;
}

/* monitor_sample -- steps 1-5 of monitor.h, without read latencies. */
int monitor_sample(monitor *m, uint64_t client_bytes, uint64_t now_us)
{
    return monitor_sample_reads(m, client_bytes, 0, 0, now_us);
}

/* monitor_sample_reads -- steps 1-5 of monitor.h and the latency cap. */
int monitor_sample_reads(monitor *m, uint64_t client_bytes, uint64_t reads, uint64_t read_ns, uint64_t now_us)
{
    pthread_mutex_lock(&m->mu);
    m->st.client_bytes += client_bytes;
    m->lat_reads += reads;
    m->lat_ns += read_ns;
    if (now_us <= m->last_us) { /* zero-length window: merge forward */
        m->pending_bytes += client_bytes;
        pthread_mutex_unlock(&m->mu);
        return 0;
    }
    int lat = latency_on(&m->o);
    if (lat && now_us - m->lat_start_us >= m->o.latency_interval_us) latency_interval(m, now_us);
    uint64_t bytes = client_bytes + m->pending_bytes;
    uint64_t dt = now_us - m->last_us;
    m->pending_bytes = 0;
    m->last_us = now_us;

    /* 1. raw bandwidth of this window */
    double raw = (double)bytes * 1e6 / (double)dt;

    /* 2. C over the last smooth_windows windows (M2); at most 8 windows, so
     * the sums are recomputed rather than maintained */
    unsigned sw = m->o.smooth_windows;
    m->win[m->win_pos] = (mon_window){bytes, dt};
    m->win_pos = (m->win_pos + 1) % sw;
    if (m->win_n < sw) m->win_n++;
    m->wsum_bytes = m->wsum_us = 0;
    for (unsigned i = 0; i < m->win_n; i++) {
        m->wsum_bytes += (double)m->win[i].bytes;
        m->wsum_us += (double)m->win[i].us;
    }
    double c = m->wsum_bytes * 1e6 / m->wsum_us;

    /* 3. candidate (and the latency cap); 4. deadband from the windows
     * before this one (plain threshold while the cap binds) */
    uint64_t cand = candidate(&m->o, c);
    uint64_t eff = cand;
    int capped = lat && m->cap < cand;
    if (capped) eff = m->cap > m->o.min_internal_bw ? m->cap : m->o.min_internal_bw;
    double d = (double)m->o.threshold;
    double nd = (double)m->o.noise_mult * noise_level(m);
    if (nd > d && !capped) d = nd;

    /* 5. publish */
    int changed = 0;
    uint64_t pub = m->st.internal_bw;
    uint64_t diff = eff > pub ? eff - pub : pub - eff;
    int to_floor = capped && eff == m->o.min_internal_bw;
    if ((double)diff > d || ((m->force_publish || to_floor) && diff > 0)) {
        m->st.internal_bw = eff;
        m->st.changes++;
        changed = 1;
    }
    m->force_publish = 0;

    /* noise history (M3) */
    if (m->st.samples > 0) {
        double dd = raw > m->prev_raw ? raw - m->prev_raw : m->prev_raw - raw;
        m->diffs[m->diff_pos] = dd;
        m->diff_pos = (m->diff_pos + 1) % MONITOR_NOISE_WINDOWS;
        if (m->diff_n < MONITOR_NOISE_WINDOWS) m->diff_n++;
    }
    m->prev_raw = raw;

    m->st.samples++;
    m->st.client_bw = (uint64_t)c;
    m->st.client_raw = (uint64_t)raw;
    m->st.candidate = cand;
    m->st.latency_capped = capped;
    m->st.deadband = (uint64_t)d;
    pthread_mutex_unlock(&m->mu);
    return changed;
}

/* monitor_internal_bw -- the published I. */
uint64_t monitor_internal_bw(monitor *m)
{
    pthread_mutex_lock(&m->mu);
    uint64_t i = m->st.internal_bw;
    pthread_mutex_unlock(&m->mu);
    return i;
}

/* monitor_set_device_bw -- new T, published at the next sample. */
void monitor_set_device_bw(monitor *m, uint64_t device_bw)
{
    if (device_bw == 0) return;
    pthread_mutex_lock(&m->mu);
    m->o.device_bw = device_bw;
    m->st.device_bw = device_bw;
    if (m->cap > cap_max(&m->o)) m->cap = cap_max(&m->o); /* (M4) */
    if (latency_on(&m->o)) m->st.latency_cap = m->cap;
    m->force_publish = 1;
    pthread_mutex_unlock(&m->mu);
}

/* monitor_get_stats -- snapshot. */
void monitor_get_stats(monitor *m, monitor_stats *st)
{
    pthread_mutex_lock(&m->mu);
    *st = m->st;
    pthread_mutex_unlock(&m->mu);
}

/* ---- the optional ticker thread ---- */

struct monitor_thread {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    uint64_t period_us;
    monitor_tick_fn fn;
    void *arg;
};

/* ticker_main -- waits for each absolute deadline (or stop), then ticks. */
static void *ticker_main(void *p)
{
    monitor_thread *t = p;
    uint64_t next = sched_mono_us() + t->period_us;
    pthread_mutex_lock(&t->mu);
    while (!t->stop) {
        uint64_t now = sched_mono_us();
        if (now < next) {
            sched_cond_wait_us(&t->cv, &t->mu, next - now);
            continue; /* re-check stop and the time */
        }
        pthread_mutex_unlock(&t->mu);
        t->fn(t->arg, now);
        pthread_mutex_lock(&t->mu);
        next += t->period_us;
        uint64_t after = sched_mono_us();
        if (next <= after) next = after + t->period_us; /* ran late: skip ticks */
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

/* monitor_thread_start -- see monitor.h. */
int monitor_thread_start(uint64_t period_us, monitor_tick_fn fn, void *arg, monitor_thread **out)
{
    if (!fn || !out || period_us == 0) return TKV_INVALID;
    monitor_thread *t = calloc(1, sizeof *t);
    if (!t) return TKV_NO_MEMORY;
    t->period_us = period_us;
    t->fn = fn;
    t->arg = arg;
    if (pthread_mutex_init(&t->mu, NULL) != 0) {
        free(t);
        return TKV_NO_MEMORY;
    }
    if (sched_cond_init(&t->cv) != 0) {
        pthread_mutex_destroy(&t->mu);
        free(t);
        return TKV_NO_MEMORY;
    }
    int rc = thread_create(&t->th, ticker_main, t, "the scheduler's monitor thread");
    if (rc < 0) {
        pthread_cond_destroy(&t->cv);
        pthread_mutex_destroy(&t->mu);
        free(t);
        return rc;
    }
    pthread_setname_np(t->th, "tkv-sched-mon");
    *out = t;
    return TKV_OK;
}

/* monitor_thread_stop -- see monitor.h. */
void monitor_thread_stop(monitor_thread *t)
{
    if (!t) return;
    pthread_mutex_lock(&t->mu);
    t->stop = 1;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    pthread_join(t->th, NULL);
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    free(t);
}
