// SPDX-License-Identifier: Apache-2.0
/*
 * silk.c -- the SILK scheduler inside the engine: the monitor thread, the
 * I/O gate (internal rate limiter + emulated SSD throttle + deep-compaction
 * pause points), deep jobs yielding to L0->L1 work, the tkv.sched report.
 * Interface and locking: silk.h. Policy and parameters: docs/scheduler.md.
 */
#include "db/silk.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db/db_impl.h"
#include "db/env.h"
#include "db/silk_pmem.h"
#include "sched/flushprog.h"
#include "sched/monitor.h"
#include "sched/ratelimit.h"
#include "sched/tadapt.h"
#include "util/appendf.h"
#include "util/meter_iter.h"
#include "util/status.h"

#define SILK_PERIOD_US       10000u     /* monitor window */
#define SILK_URGENT_SCORE    2.0        /* a deep level this far over target is never paused */
#define SILK_URGENT_CHECK_US 100000u    /* how often the monitor recomputes the deep backlog */
#define PROBE_BYTES          (8u << 20) /* device_bandwidth=0: sequential write probe size */
#define PROBE_CACHE          16         /* file systems whose probe a process remembers */

typedef struct silk_counters {
    uint64_t pauses, resumes, pause_micros; /* deep-job pause episodes and their time */
    silk_deep_stats deep;                   /* yields, partial commits, aborts, waits (silk.h) */
    uint64_t deep_started, deep_done;
    uint64_t stalls_over_10ms, max_stall_us; /* writes that waited (pacing + stop) > 10 ms */
    /* write groups that stopped on a full set of memtables while the flush
     * thread was free to work (not waiting for room in the pool, L0 below
     * its stop trigger): the pace was faster than the flush. Should be 0. */
    uint64_t stops_flush_running;
    uint64_t window_bytes[IO_NCLASSES]; /* bytes (read + write) in the last window */
} silk_counters;

typedef struct silk_state {
    int fifo;   /* scheduler=fifo */
    uint64_t T; /* device bandwidth in use (relaxed atomic: tadapt moves it) */
    int T_probed;
    tadapt *ta;            /* T adapted to the observed throughput (pinned by device_bandwidth) */
    uint64_t last_busy_ns; /* sum of read_ns + write_ns at the previous window (monitor thread only) */
    ratelimit *rl;         /* internal budget I (silk only); with an env, the env's (shared: not ours to free) */
    struct tkv_env *env;   /* silk with an env: the shared scheduler sets rl's rate (env.h) */
    int pooled;            /* background work runs on an env's pool: a pause stops a deep job at once */
    ratelimit *ssd;        /* emulated device (ssd_bandwidth), NULL = off */
    monitor *mon;
    wctl *wc;
    flushprog *fp; /* the running flush's progress: the write controller's deadline */
    pthread_mutex_t mu;
    pthread_cond_t cv; /* pause state changes */
    int deep_paused;   /* the monitor's decision (mu) */
    int urgent;        /* deep backlog urgent: never paused (mu) */
    int stopping;
    uint64_t yield_wait_us; /* deep_yield_wait: how long a yielding job may go on to its next cut */
    silk_job *jobs;         /* running deep compactions (mu) */
    monitor_thread *thread;
    uint64_t last_bytes[IO_NCLASSES];  /* totals at the previous window (monitor thread only) */
    uint64_t last_reads, last_read_ns; /* IO_USER_READ read_ops / read_ns then (monitor thread only) */
    int latency_cap;                   /* the monitor's read-latency cap is on (sched_latency) */
    uint64_t last_urgent_check_us;
    silk_counters ctr;
} silk_state;

/* The deep job running on this thread (between silk_job_begin and _end). */
static __thread silk_job *tls_job;

/* probe_bandwidth -- T from a short O_DIRECT sequential write + fdatasync in
 * dir (falls back to buffered I/O if O_DIRECT is refused). 0 on failure. */
static uint64_t probe_bandwidth(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/bandwidth-probe.tmp", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
    if (fd < 0) fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return 0;
    void *buf = NULL;
    uint64_t bw = 0;
    if (posix_memalign(&buf, 4096, 1u << 20) == 0) {
        memset(buf, 0x5a, 1u << 20);
        uint64_t t0 = sched_mono_us();
        size_t done = 0;
        while (done < PROBE_BYTES) {
            ssize_t w = pwrite(fd, buf, 1u << 20, (off_t)done);
            if (w <= 0) break;
            done += (size_t)w;
        }
        if (done == PROBE_BYTES && fdatasync(fd) == 0) {
            uint64_t us = sched_mono_us() - t0;
            bw = (uint64_t)((double)PROBE_BYTES * 1e6 / (double)(us ? us : 1));
        }
        free(buf);
    }
    close(fd);
    unlink(path);
    return bw;
}

/* The probes this process made, by file system (st_dev of the database
 * directory): a process that opens many databases on one device (a test
 * suite, a daemon with a database per tenant) writes the probe once, not 8
 * MiB per open. A failed probe (0) is not remembered. */
static struct {
    pthread_mutex_t mu;
    unsigned n;
    dev_t dev[PROBE_CACHE];
    uint64_t bw[PROBE_CACHE];
} probe_cache = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* probe_bandwidth_cached -- probe_bandwidth(dir), once per file system per
 * process. Holds the cache's lock across the probe: two opens on one device
 * do not probe it at once (each would measure half). */
static uint64_t probe_bandwidth_cached(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) != 0) return probe_bandwidth(dir);
    pthread_mutex_lock(&probe_cache.mu);
    uint64_t bw = 0;
    for (unsigned i = 0; i < probe_cache.n && !bw; i++)
        if (probe_cache.dev[i] == st.st_dev) bw = probe_cache.bw[i];
    if (!bw && (bw = probe_bandwidth(dir)) != 0) {
        unsigned i = probe_cache.n < PROBE_CACHE ? probe_cache.n++ : (unsigned)(st.st_dev % PROBE_CACHE);
        probe_cache.dev[i] = st.st_dev;
        probe_cache.bw[i] = bw;
    }
    pthread_mutex_unlock(&probe_cache.mu);
    return bw;
}

/* open_device_bw -- T at open: device_bandwidth, else ssd_bandwidth (the
 * emulated device is the device), else a probe (500 MiB/s if it fails, and
 * on a read-only handle, which writes no probe file and runs no background
 * I/O for T to pace);
 * and its adaptation (sched/tadapt.h), pinned when device_bandwidth was
 * set to a nonzero value or T is the emulated device's rate (known
 * exactly; and its queue is a wait in the gate, which tadapt does not see). */
static int open_device_bw(tkv_db *db, silk_state *s)
{
    const struct tkv_options *o = &db->opts;
    s->env = s->fifo ? NULL : db->env;
    s->pooled = db->bg != NULL;
    s->T = s->env ? env_device_bandwidth(s->env) : 0;
    if (!s->T) s->T = o->device_bandwidth;
    if (!s->T && o->ssd_bandwidth) s->T = o->ssd_bandwidth;
    if (!s->T) {
        s->T = o->read_only ? 0 : probe_bandwidth_cached(db->dir);
        s->T_probed = s->T != 0;
        if (!s->T) s->T = 500u << 20;
    }
    if (s->env) TKV_TRY(env_sched_attach(s->env, o, s->T, SILK_PERIOD_US, &s->rl, &s->T)); /* T: the env's */
    tadapt_options ta;
    tadapt_options_default(&ta, s->T);
    /* off by default: with one synchronous compaction thread the device is
     * "busy" (queue >= 1) at whatever rate that thread's pipeline reaches,
     * so the law read a 4M x 1 KiB fill's 230 MB/s as the device's limit and
     * halved T on a disk that writes 740 MB/s (docs/scheduler.md) */
    ta.pinned = !o->adapt_bandwidth || s->env || /* the env's T is one for every database */
                (o->device_bandwidth != 0 && options_user_set(o, "device_bandwidth")) ||
                (o->device_bandwidth == 0 && o->ssd_bandwidth != 0);
    return tadapt_create(&ta, sched_mono_us(), &s->ta);
}

/* open_limits -- the monitor (I = T - C - epsilon, the latency cap), the
 * internal limiter (silk only: three priorities, the deep and L0->L1
 * reserves) and the emulated SSD throttle (ssd_bandwidth). */
static int open_limits(tkv_db *db, silk_state *s)
{
    const struct tkv_options *o = &db->opts;
    monitor_options mo;
    monitor_options_default(&mo);
    mo.device_bw = s->T;
    mo.min_internal_bw = o->min_internal_bandwidth;
    mo.epsilon = o->sched_epsilon;
    mo.threshold = o->sched_threshold;
    mo.period_us = SILK_PERIOD_US;
    /* the read-latency cap (sched/monitor.h): "auto" turns it on when SST
     * reads are direct, i.e. when a client read's time is a device read's
     * (with the page cache, hits and misses mix and the mean says little) */
    s->latency_cap =
        !s->fifo && !s->env && (o->sched_latency == LATCAP_ON || (o->sched_latency == LATCAP_AUTO && o->direct_io));
    if (s->latency_cap) mo.latency_factor_pct = (unsigned)o->sched_latency_factor;
    TKV_TRY(monitor_create(&mo, sched_mono_us(), &s->mon));
    if (!s->fifo && !s->rl) {
        rl_options ro;
        rl_options_default(&ro);
        ro.rate = monitor_internal_bw(s->mon);
        ro.low_reserved = o->deep_reserved_bandwidth;
        ro.mid_reserved = o->l0_reserved_bandwidth;
        TKV_TRY(rl_create(&ro, NULL, &s->rl));
    }
    if (o->ssd_bandwidth) {
        rl_options ro;
        rl_options_default(&ro);
        ro.rate = o->ssd_bandwidth;
        /* silk: internal I/O is LOW in the device queue (clients first), with
         * the floor reserved so flushes and columns never starve; fifo: all
         * HIGH, one first-come queue */
        ro.low_reserved = s->fifo ? 0 : o->min_internal_bandwidth;
        TKV_TRY(rl_create(&ro, NULL, &s->ssd));
    }
    return 0;
}

/* open_wctl -- the write controller. */
static int open_wctl(tkv_db *db, silk_state *s)
{
    const struct tkv_options *o = &db->opts;
    wctl_options wo;
    wctl_options_default(&wo);
    wo.mode = (wctl_mode)o->write_controller;
    /* A flush much smaller than a memtable (tkv_flush, shutdown) is mostly
     * fixed cost and would understate the flush bandwidth; a full memtable's
     * flush is the sample the pace needs, however small memtables are. */
    if (o->memtable_size / 4 < wo.min_sample_bytes) wo.min_sample_bytes = o->memtable_size / 4;
    wo.pace_margin = 0.125; /* headroom under the slowest recent flush (wctl.h) */
    /* the container ramp starts where column compaction starts (the
     * compactor forms at matrix_trigger), and leaves a band below near_full */
    wo.ramp_lo = (double)o->matrix_trigger / 100.0;
    if (wo.ramp_lo > wo.near_full - 0.1) wo.ramp_lo = wo.near_full - 0.1;
    /* The deep debt paces writers from twice the score at which deep work
     * stops being paused: a backstop against unbounded growth, not a
     * throttle. Starting at SILK_URGENT_SCORE cost a 4M x 1 KiB fill about a
     * quarter of its throughput (81k against 108k ops/s, single runs) and
     * bought nothing: with columns running all the time, the deep jobs that
     * would pay the debt are aborted for the columns' L1 files
     * (docs/scheduler.md, "Why a deep debt"). */
    wo.debt_soft = 2 * SILK_URGENT_SCORE;
    wo.debt_hard = 4 * SILK_URGENT_SCORE;
    s->fp = fp_new();
    if (!s->fp) return TKV_NO_MEMORY;
    return wctl_create(&wo, &s->wc);
}

int silk_open(tkv_db *db)
{
    silk_state *s = calloc(1, sizeof *s);
    if (!s) return tkv_err(TKV_NO_MEMORY, "out of memory creating the scheduler");
    db->silk = s;
    const struct tkv_options *o = &db->opts;
    pthread_mutex_init(&s->mu, NULL);
    sched_cond_init(&s->cv);
    s->fifo = o->scheduler == SCHED_FIFO;
    s->yield_wait_us = (uint64_t)o->deep_yield_wait * 1000u;
    TKV_TRY(open_device_bw(db, s));
    TKV_TRY(open_limits(db, s));
    TKV_TRY(open_wctl(db, s));
    db->io.gate_arg = db;
    db->io.gate = silk_gate;
    return 0;
}

/* deep_urgent -- 1 if a level L1+ is at SILK_URGENT_SCORE times its target
 * (deep work must go on even in a peak). Takes db->mu. */
static int deep_urgent(tkv_db *db)
{
    pthread_mutex_lock(&db->mu);
    int urgent = db->deep_score >= SILK_URGENT_SCORE;
    pthread_mutex_unlock(&db->mu);
    return urgent;
}

/* busy_ns -- the time the engine's threads have spent in device calls:
 * read_ns - read_gate_ns + write_ns of every class (io.h), without the
 * waits in the gate (the limiter's and the throttle's tokens, pauses) --
 * counting those would read the scheduler's own throttling as a busy,
 * slow device and lower T, which throttles more. */
static uint64_t busy_ns(tkv_db *db)
{
    uint64_t t = 0, gate = 0;
    for (int c = 0; c < IO_NCLASSES; c++) {
        t += ctr_get(&db->io.read_ns[c]) + ctr_get(&db->io.write_ns[c]);
        gate += ctr_get(&db->io.read_gate_ns[c]);
    }
    return t > gate ? t - gate : 0;
}

/* adapt_t -- the window's device bytes (every class) and busy time to
 * tadapt; a new T goes to the monitor, which republishes I at once. */
static void adapt_t(tkv_db *db, const uint64_t *cls_bytes, uint64_t now_us)
{
    silk_state *s = db->silk;
    uint64_t bytes = 0, busy = busy_ns(db);
    for (int c = 0; c < IO_NCLASSES; c++) bytes += cls_bytes[c];
    /* (a read that failed after the gate counted gate time but no read
     * time: the difference may step back a little) */
    uint64_t dbusy = busy > s->last_busy_ns ? busy - s->last_busy_ns : 0;
    if (busy > s->last_busy_ns) s->last_busy_ns = busy;
    if (!tadapt_sample(s->ta, bytes, dbusy, now_us)) return;
    uint64_t t = tadapt_t(s->ta);
    __atomic_store_n(&s->T, t, __ATOMIC_RELAXED); /* read by silk_report */
    monitor_set_device_bw(s->mon, t);
}

/* tick -- one monitor window: per-class bytes, the control law, the pause
 * decision. */
static void tick(void *arg, uint64_t now_us)
{
    tkv_db *db = arg;
    silk_state *s = db->silk;
    uint64_t cls_bytes[IO_NCLASSES];
    for (int c = 0; c < IO_NCLASSES; c++) {
        uint64_t t = ctr_get(&db->io.read_bytes[c]) + ctr_get(&db->io.write_bytes[c]);
        cls_bytes[c] = t - s->last_bytes[c];
        s->last_bytes[c] = t;
        __atomic_store_n(&s->ctr.window_bytes[c], cls_bytes[c], __ATOMIC_RELAXED);
    }
    uint64_t client = cls_bytes[IO_WAL] + cls_bytes[IO_USER_READ];
    adapt_t(db, cls_bytes, now_us);
    silk_pmem_tick(db, now_us);
    uint64_t reads = ctr_get(&db->io.read_ops[IO_USER_READ]), read_ns = ctr_get(&db->io.read_ns[IO_USER_READ]);
    uint64_t dreads = reads - s->last_reads, dread_ns = read_ns - s->last_read_ns;
    s->last_reads = reads;
    s->last_read_ns = read_ns;
    if (monitor_sample_reads(s->mon, client, dreads, dread_ns, now_us) && s->rl && !s->env)
        rl_set_rate(s->rl, monitor_internal_bw(s->mon));
    if (s->fifo) return;
    /* the budget and the peak are the device's: with an env, every database's clients */
    monitor_stats ms;
    if (s->env) env_sched_sample(s->env, client, now_us, SILK_PERIOD_US, &ms);
    else monitor_get_stats(s->mon, &ms);

    if (now_us - s->last_urgent_check_us >= SILK_URGENT_CHECK_US) {
        s->last_urgent_check_us = now_us;
        int u = deep_urgent(db);
        pthread_mutex_lock(&s->mu);
        s->urgent = u;
        pthread_mutex_unlock(&s->mu);
    }
    /* Pause deep work in a client peak (the budget is at its floor: what is
     * left belongs to flushes and columns) and while writers wait on a
     * flush (all memtables full, or the container full). */
    /* a peak: clients use enough of T that the budget is down to its floor
     * (T - C - epsilon <= floor) -- and they do use the device (C above the
     * threshold: an idle database is never "in a peak", whatever T) */
    int peak = ms.client_bw > db->opts.sched_threshold && ms.candidate <= db->opts.min_internal_bandwidth;
    int writers_wait = __atomic_load_n(&db->write_stopped, __ATOMIC_RELAXED) != 0 ||
                       __atomic_load_n(&db->flush_blocked, __ATOMIC_RELAXED) != 0;
    pthread_mutex_lock(&s->mu);
    int pause = (peak || writers_wait) && !s->urgent;
    if (pause != s->deep_paused) {
        __atomic_store_n(&s->deep_paused, pause, __ATOMIC_RELAXED); /* also read unlocked in pause_point */
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
}

int silk_start(tkv_db *db)
{
    silk_state *s = db->silk;
    for (int c = 0; c < IO_NCLASSES; c++)
        s->last_bytes[c] = ctr_get(&db->io.read_bytes[c]) + ctr_get(&db->io.write_bytes[c]);
    s->last_reads = ctr_get(&db->io.read_ops[IO_USER_READ]);
    s->last_read_ns = ctr_get(&db->io.read_ns[IO_USER_READ]);
    s->last_busy_ns = busy_ns(db);
    silk_pmem_start(db);
    _Static_assert(ENV_TICK_US == SILK_PERIOD_US, "the env's ticker runs the monitor windows");
    if (db->bg) return env_tick_add(db->env, tick, db); /* the env's one monitor thread */
    return monitor_thread_start(SILK_PERIOD_US, tick, db, &s->thread);
}

void silk_stop(tkv_db *db)
{
    silk_state *s = db->silk;
    if (!s || !s->mon) return;
    if (db->bg) env_tick_remove(db->env, db);
    monitor_thread_stop(s->thread);
    s->thread = NULL;
    pthread_mutex_lock(&s->mu);
    s->stopping = 1;
    __atomic_store_n(&s->deep_paused, 0, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void silk_close(tkv_db *db)
{
    silk_state *s = db->silk;
    if (!s) return;
    db->io.gate = NULL; /* first: nothing may pass the gate into freed state */
    db->silk = NULL;
    if (s->env) s->rl = NULL; /* the env's: other databases use it */
    if (s->rl) rl_shutdown(s->rl);
    if (s->ssd) rl_shutdown(s->ssd);
    rl_free(s->rl);
    rl_free(s->ssd);
    silk_pmem_close(db);
    monitor_free(s->mon);
    tadapt_free(s->ta);
    wctl_free(s->wc);
    fp_free(s->fp);
    s->fp = NULL;
    s->rl = s->ssd = NULL;
    s->mon = NULL;
    s->wc = NULL;
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

void silk_job_begin(tkv_db *db, silk_job *j, int level, file_meta *const *inputs, size_t n)
{
    silk_state *s = db->silk;
    memset(j, 0, sizeof *j);
    j->level = level;
    j->inputs = inputs;
    j->ninputs = n;
    atomic_store(&j->abort, 0);
    atomic_store(&j->yield, 0);
    pthread_mutex_lock(&s->mu);
    j->next = s->jobs;
    s->jobs = j;
    pthread_mutex_unlock(&s->mu);
    ctr_add(&s->ctr.deep_started, 1);
    tls_job = j;
}

void silk_job_committing(tkv_db *db)
{
    silk_state *s = db->silk;
    silk_job *j = tls_job;
    if (!j) return;
    pthread_mutex_lock(&s->mu);
    j->committing = 1; /* silk_yield_l1 reads it under mu */
    pthread_mutex_unlock(&s->mu);
    tls_job = NULL; /* silk_gate: no pause point, no abort flag */
}

int silk_job_cut(tkv_db *db)
{
    (void)db;
    silk_job *j = tls_job;
    if (!j) return 0;
    return atomic_load(&j->yield) || atomic_load(&j->abort);
}

/* note_max -- *m = max(*m, v), atomically. */
static void note_max(uint64_t *m, uint64_t v)
{
    uint64_t cur = ctr_get(m);
    while (v > cur && !__atomic_compare_exchange_n(m, &cur, v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
}

void silk_job_end(tkv_db *db, silk_job *j, silk_outcome how, uint64_t kept_bytes)
{
    silk_state *s = db->silk;
    tls_job = NULL;
    pthread_mutex_lock(&s->mu);
    for (silk_job **p = &s->jobs; *p; p = &(*p)->next)
        if (*p == j) {
            *p = j->next;
            break;
        }
    pthread_mutex_unlock(&s->mu);
    silk_deep_stats *d = &s->ctr.deep;
    int yielded = atomic_load(&j->yield);
    if (yielded) { /* L0->L1 work waited for it from yield_at_us to now: its files are free */
        uint64_t us = sched_mono_us() - j->yield_at_us;
        ctr_add(&d->yield_waits, 1);
        ctr_add(&d->yield_wait_us, us);
        note_max(&d->yield_wait_max_us, us);
    }
    if (how == SILK_JOB_PARTIAL) {
        ctr_add(&d->partial_commits, 1);
        ctr_add(&d->partial_bytes, kept_bytes);
    }
    if (how == SILK_JOB_STOPPED && yielded) ctr_add(&d->aborts, 1); /* (shutdown stops are not counted) */
    ctr_add(&s->ctr.deep_done, 1);
}

/* holds_any -- 1 if job j's inputs include one of f[0..n). */
static int holds_any(const silk_job *j, file_meta *const *f, size_t n)
{
    for (size_t i = 0; i < j->ninputs; i++)
        for (size_t k = 0; k < n; k++)
            if (j->inputs[i] == f[k]) return 1;
    return 0;
}

int silk_yield_l1(tkv_db *db, file_meta *const *f, size_t n)
{
    silk_state *s = db->silk;
    if (s->fifo) return 0;
    uint64_t now = sched_mono_us();
    for (size_t k = 0; k < n; k++) f[k]->wanted_until_us = now + SILK_WANTED_US; /* db->mu: no deep pick takes them */
    int holders = 0;
    pthread_mutex_lock(&s->mu);
    for (silk_job *j = s->jobs; j; j = j->next) {
        if (j->level != 1 || j->committing) continue; /* only L1->L2 jobs hold L1 files; a committing one lets go now */
        if (!holds_any(j, f, n)) continue;
        holders++;
        if (atomic_load(&j->yield)) continue; /* asked already */
        j->yield_at_us = now;
        atomic_store(&j->yield, 1);
        ctr_add(&s->ctr.deep.yields, 1);
    }
    pthread_cond_broadcast(&s->cv); /* a paused job asked to yield stops at once */
    pthread_mutex_unlock(&s->mu);
    return holders;
}

int silk_deep_held(tkv_db *db) { return __atomic_load_n(&db->silk->deep_paused, __ATOMIC_RELAXED); }

void silk_get_deep_stats(tkv_db *db, silk_deep_stats *out)
{
    const silk_deep_stats *d = &db->silk->ctr.deep;
    out->yields = ctr_get(&d->yields);
    out->partial_commits = ctr_get(&d->partial_commits);
    out->partial_bytes = ctr_get(&d->partial_bytes);
    out->aborts = ctr_get(&d->aborts);
    out->yield_waits = ctr_get(&d->yield_waits);
    out->yield_wait_us = ctr_get(&d->yield_wait_us);
    out->yield_wait_max_us = ctr_get(&d->yield_wait_max_us);
}

void silk_abort_all(tkv_db *db)
{
    silk_state *s = db->silk;
    if (!s || !s->mon) return;
    pthread_mutex_lock(&s->mu);
    for (silk_job *j = s->jobs; j; j = j->next) {
        if (s->rl) rl_cancel(s->rl, &j->abort);
        else atomic_store(&j->abort, 1);
        if (s->ssd) rl_cancel(s->ssd, &j->abort);
    }
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

/* stop_now -- job j stops at this pause point (SILK_ABORTED): cmp_run
 * installs its work up to its last cut, or discards it if it has none. */
static int stop_now(silk_state *s, silk_job *j)
{
    (void)s;
    atomic_store(&j->abort, 1); /* every later gate call of the job refuses too */
    return SILK_ABORTED;
}

/* yield_expired -- a job asked to yield goes on to its next cut, but stops
 * at once when deep work is paused (it would hold the files through the
 * pause) or when it has gone on for deep_yield_wait. */
static int yield_expired(silk_state *s, silk_job *j)
{
    if (!atomic_load_explicit(&j->yield, memory_order_acquire)) return 0;
    if (__atomic_load_n(&s->deep_paused, __ATOMIC_RELAXED)) return 1;
    return sched_mono_us() - j->yield_at_us >= s->yield_wait_us;
}

/* pause_point -- a deep job passes here before each read and write: waits
 * while deep work is paused; SILK_ABORTED once it is told to stop, or asked
 * to yield and it may not go on (yield_expired, or paused). */
static int pause_point(silk_state *s, silk_job *j)
{
    if (atomic_load(&j->abort)) return SILK_ABORTED;
    if (yield_expired(s, j)) return stop_now(s, j);
    if (!__atomic_load_n(&s->deep_paused, __ATOMIC_RELAXED)) return 0;
    if (s->pooled) return stop_now(s, j); /* a paused job would hold a thread of the env's pool */
    pthread_mutex_lock(&s->mu);
    uint64_t t0 = 0;
    while (s->deep_paused && !s->stopping && !atomic_load(&j->abort) && !atomic_load(&j->yield)) {
        if (!j->paused) {
            j->paused = 1;
            j->pauses++;
            ctr_add(&s->ctr.pauses, 1);
            t0 = sched_mono_us();
        }
        sched_cond_wait_us(&s->cv, &s->mu, SILK_PERIOD_US * 10);
    }
    if (j->paused) {
        j->paused = 0;
        j->resumes++;
        ctr_add(&s->ctr.resumes, 1);
        ctr_add(&s->ctr.pause_micros, sched_mono_us() - t0);
    }
    pthread_mutex_unlock(&s->mu);
    if (atomic_load(&j->abort)) return SILK_ABORTED;
    return yield_expired(s, j) ? stop_now(s, j) : 0;
}

int silk_gate(void *arg, io_class cls, int is_write, size_t n)
{
    (void)is_write;
    tkv_db *db = arg;
    silk_state *s = db->silk;
    silk_job *j = cls == IO_COMPACT_DEEP ? tls_job : NULL;
    if (j) {
        int rc = pause_point(s, j);
        if (rc) return rc;
    }
    if (s->rl && silk_is_internal(cls)) {
        int rc = rl_request(s->rl, silk_prio(cls), n, j ? &j->abort : NULL);
        if (rc) return j && atomic_load(&j->abort) ? SILK_ABORTED : 0; /* shut down: let the I/O go */
    }
    if (s->ssd && cls != IO_META) {
        int prio = !s->fifo && silk_is_internal(cls) ? RL_LOW : RL_HIGH;
        int rc = rl_request(s->ssd, prio, n, j ? &j->abort : NULL);
        if (rc && j && atomic_load(&j->abort)) return SILK_ABORTED;
    }
    return 0;
}

void silk_flush_sample(tkv_db *db, uint64_t bytes, uint64_t us)
{
    if (db->silk->wc) wctl_flush_sample(db->silk->wc, bytes, us ? us : 1);
}

/* The build reports its progress every 1/64 of its work, but at most every
 * 256 KiB (a mutex each) and at least every 4 KiB. */
#define FLUSH_METER_MAX (256u << 10)
#define FLUSH_METER_MIN (4u << 10)

/* flush_counted -- meter_fn of silk_flush_meter. */
static void flush_counted(void *arg, uint64_t bytes) { fp_add(arg, bytes, sched_mono_us()); }

tkv_it *silk_flush_meter(tkv_db *db, tkv_it *it, unsigned pass, const memtable *m)
{
    if (!it) return NULL;
    /* what the meter will count, internal keys and values, from the batch
     * bytes: a record's type and two length varints (~4 bytes) are not
     * counted, its 8-byte sequence and type trailer are */
    uint64_t work = memtable_batch_bytes(m) + 4 * memtable_num_entries(m);
    fp_begin(db->silk->fp, work);
    uint64_t chunk = work / 64;
    chunk = chunk > FLUSH_METER_MAX ? FLUSH_METER_MAX : chunk < FLUSH_METER_MIN ? FLUSH_METER_MIN : chunk;
    return meter_iter_new(it, pass, chunk, flush_counted, db->silk->fp);
}

void silk_flush_built(tkv_db *db) { fp_built(db->silk->fp, sched_mono_us()); }

void silk_flush_ended(tkv_db *db) { fp_end(db->silk->fp, sched_mono_us()); }

void silk_flush_abandoned(tkv_db *db) { fp_begin(db->silk->fp, 0); }

int silk_flush_eta(tkv_db *db, uint64_t now_us, uint64_t *eta_us) { return fp_eta(db->silk->fp, now_us, eta_us); }

uint64_t silk_write_delay(tkv_db *db, wctl_write *t, const wctl_input *in, uint64_t bytes, uint64_t now_us)
{
    return wctl_delay_us(db->silk->wc, t, in, bytes, now_us);
}

void silk_note_write_wait(tkv_db *db, uint64_t us)
{
    silk_counters *c = &db->silk->ctr;
    if (us > 10000) ctr_add(&c->stalls_over_10ms, 1);
    uint64_t m = ctr_get(&c->max_stall_us);
    while (us > m && !__atomic_compare_exchange_n(&c->max_stall_us, &m, us, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
}

void silk_note_stop_flush_running(tkv_db *db) { ctr_add(&db->silk->ctr.stops_flush_running, 1); }

/* report_deep -- tkv.sched's "deep:" line (silk_report). */
static void report_deep(tkv_db *db, tkv_buf *b, int *oom)
{
    silk_state *s = db->silk;
    pthread_mutex_lock(&s->mu);
    int paused = s->deep_paused, urgent = s->urgent, running = 0, paused_now = 0;
    for (silk_job *j = s->jobs; j; j = j->next) {
        running++;
        paused_now += j->paused;
    }
    pthread_mutex_unlock(&s->mu);
    const silk_counters *c = &s->ctr;
    silk_deep_stats d;
    silk_get_deep_stats(db, &d);
    buf_appendf(b, oom,
                "deep: running=%d paused_now=%d pause_requested=%d urgent=%d started=%llu done=%llu pauses=%llu "
                "resumes=%llu pause_micros=%llu yields=%llu partial_commits=%llu partial_bytes=%llu aborts=%llu "
                "yield_waits=%llu yield_wait_us=%llu yield_wait_max_us=%llu\n",
                running, paused_now, paused, urgent, (unsigned long long)ctr_get(&c->deep_started),
                (unsigned long long)ctr_get(&c->deep_done), (unsigned long long)ctr_get(&c->pauses),
                (unsigned long long)ctr_get(&c->resumes), (unsigned long long)ctr_get(&c->pause_micros),
                (unsigned long long)d.yields, (unsigned long long)d.partial_commits,
                (unsigned long long)d.partial_bytes, (unsigned long long)d.aborts, (unsigned long long)d.yield_waits,
                (unsigned long long)d.yield_wait_us, (unsigned long long)d.yield_wait_max_us);
}

/* report_adapt -- tkv.sched's "device_bw:" line: T's adaptation. */
static void report_adapt(silk_state *s, tkv_buf *b, int *oom)
{
    tadapt_stats ts;
    tadapt_get_stats(s->ta, &ts);
    buf_appendf(b, oom,
                "device_bw: T=%llu adapt=%s t_min=%llu t_max=%llu delivered=%llu queue=%.2f up_run=%d down_run=%d "
                "intervals=%llu raises=%llu lowers=%llu\n",
                (unsigned long long)ts.t, ts.pinned ? "pinned" : "on", (unsigned long long)ts.t_min,
                (unsigned long long)ts.t_max, (unsigned long long)ts.delivered, ts.queue, ts.up_run, ts.down_run,
                (unsigned long long)ts.intervals, (unsigned long long)ts.raises, (unsigned long long)ts.lowers);
}

/* report_limiter -- tkv.sched's "limiter:" line (silk only; with an env, the shared one). */
static void report_limiter(silk_state *s, tkv_buf *b, int *oom)
{
    if (!s->rl) return;
    rl_stats rs;
    rl_get_stats(s->rl, &rs);
    buf_appendf(b, oom,
                "limiter: rate=%llu high_granted=%llu mid_granted=%llu low_granted=%llu high_waits=%llu "
                "mid_waits=%llu low_waits=%llu high_wait_us=%llu mid_wait_us=%llu low_wait_us=%llu "
                "mid_reserved=%llu low_reserved=%llu\n",
                (unsigned long long)rs.rate, (unsigned long long)rs.granted[RL_HIGH],
                (unsigned long long)rs.granted[RL_MID], (unsigned long long)rs.granted[RL_LOW],
                (unsigned long long)rs.waits[RL_HIGH], (unsigned long long)rs.waits[RL_MID],
                (unsigned long long)rs.waits[RL_LOW], (unsigned long long)rs.wait_us[RL_HIGH],
                (unsigned long long)rs.wait_us[RL_MID], (unsigned long long)rs.wait_us[RL_LOW],
                (unsigned long long)rs.mid_reserved, (unsigned long long)rs.low_reserved);
}

/* report_env -- tkv.sched's "env:" line: the shared scheduler (with an env). */
static void report_env(silk_state *s, tkv_buf *b, int *oom)
{
    if (!s->env) return;
    rl_stats rs;
    uint64_t T, age;
    env_sched_stats(s->env, &rs, &T, &age);
    bg_pool_stats ps;
    bg_pool_get_stats(env_pool(s->env), &ps);
    buf_appendf(b, oom, "env: shared_limiter=1 T=%llu age_us=%llu threads=%d busy_max=%d steps=%llu,%llu,%llu\n",
                (unsigned long long)T, (unsigned long long)age, ps.threads, ps.busy_max,
                (unsigned long long)ps.steps[0], (unsigned long long)ps.steps[1], (unsigned long long)ps.steps[2]);
}

void silk_report(tkv_db *db, tkv_buf *b, int *oom)
{
    silk_state *s = db->silk;
    static const char *const wnames[] = {"prl", "classic", "off"};
    monitor_stats ms;
    monitor_get_stats(s->mon, &ms);
    buf_appendf(b, oom, "scheduler: %s write_controller: %s\n", s->fifo ? "fifo" : "silk",
                wnames[db->opts.write_controller % 3]);
    buf_appendf(
        b, oom,
        "bandwidth: T=%llu%s C=%llu I=%llu floor=%llu epsilon=%llu threshold=%llu rate_changes=%llu samples=%llu\n",
        (unsigned long long)__atomic_load_n(&s->T, __ATOMIC_RELAXED), s->T_probed ? " (probed)" : "",
        (unsigned long long)ms.client_bw,
        (unsigned long long)(!s->rl   ? 0
                             : s->env ? rl_get_rate(s->rl)
                                      : ms.internal_bw), /* env: the shared rate */
        (unsigned long long)db->opts.min_internal_bandwidth, (unsigned long long)db->opts.sched_epsilon,
        (unsigned long long)db->opts.sched_threshold, (unsigned long long)ms.changes, (unsigned long long)ms.samples);
    buf_appendf(b, oom,
                "latency_cap: %s read_latency_us=%.1f baseline_us=%.1f target_us=%.1f cap=%llu capped=%d "
                "intervals=%llu backoffs=%llu user_reads=%llu\n",
                s->latency_cap ? "on" : "off", (double)ms.read_latency_ns / 1e3, (double)ms.latency_baseline_ns / 1e3,
                (double)ms.latency_target_ns / 1e3, (unsigned long long)ms.latency_cap, ms.latency_capped,
                (unsigned long long)ms.latency_intervals, (unsigned long long)ms.latency_backoffs,
                (unsigned long long)ctr_get(&db->io.read_ops[IO_USER_READ]));
    buf_appendf(b, oom, "window_bytes:");
    for (int c = 0; c < IO_NCLASSES; c++)
        buf_appendf(b, oom, " %s=%llu", io_class_name((io_class)c),
                    (unsigned long long)ctr_get(&s->ctr.window_bytes[c]));
    buf_appendf(b, oom, "\ntotal_bytes:");
    for (int c = 0; c < IO_NCLASSES; c++)
        buf_appendf(b, oom, " %s=%llu", io_class_name((io_class)c),
                    (unsigned long long)(ctr_get(&db->io.read_bytes[c]) + ctr_get(&db->io.write_bytes[c])));
    buf_appendf(b, oom, "\n");
    report_limiter(s, b, oom);
    if (s->ssd) {
        rl_stats rs;
        rl_get_stats(s->ssd, &rs);
        buf_appendf(b, oom, "ssd_throttle: rate=%llu granted=%llu waits=%llu wait_us=%llu\n",
                    (unsigned long long)rs.rate, (unsigned long long)rs.granted[RL_HIGH],
                    (unsigned long long)rs.waits[RL_HIGH], (unsigned long long)rs.wait_us[RL_HIGH]);
    }
    report_env(s, b, oom);
    silk_pmem_report(db, b, oom);
    report_deep(db, b, oom);
    const silk_counters *c = &s->ctr;
    wctl_stats ws;
    wctl_get_stats(s->wc, &ws);
    buf_appendf(
        b, oom,
        "write_controller: state=%s pace_rate=%llu min_flush_sample=%llu samples=%u writes=%llu "
        "stalled_writes=%llu stopped_writes=%llu stall_micros=%llu stalls_over_10ms=%llu max_stall_us=%llu "
        "stops_flush_running=%llu target_rate=%llu ramp_rate=%llu drain_rate=%llu container_fill=%.3f "
        "ramp_writes=%llu deep_score=%.3f debt_rate=%llu debt_writes=%llu deadline_rate=%llu flush_eta_us=%llu "
        "flush_tail_us=%llu deadline_writes=%llu step_us=%llu accrual_ns=%llu late_us=%llu\n",
        ws.state == WCTL_NORMAL     ? "normal"
        : ws.state == WCTL_SLOWDOWN ? "slowdown"
                                    : "stop",
        (unsigned long long)ws.pace_rate, (unsigned long long)ws.min_sample, ws.nsamples, (unsigned long long)ws.writes,
        (unsigned long long)ws.stalled_writes, (unsigned long long)ws.stopped_writes, (unsigned long long)ws.stall_us,
        (unsigned long long)ctr_get(&c->stalls_over_10ms), (unsigned long long)ctr_get(&c->max_stall_us),
        (unsigned long long)ctr_get(&c->stops_flush_running), (unsigned long long)ws.target_rate,
        (unsigned long long)ws.ramp_rate, (unsigned long long)ws.drain_rate, ws.container_fill,
        (unsigned long long)ws.ramp_writes, ws.deep_score, (unsigned long long)ws.debt_rate,
        (unsigned long long)ws.debt_writes, (unsigned long long)ws.deadline_rate, (unsigned long long)ws.flush_eta_us,
        (unsigned long long)fp_tail_us(s->fp), (unsigned long long)ws.deadline_writes, (unsigned long long)ws.step_us,
        (unsigned long long)ws.accrual_ns, (unsigned long long)ws.late_us);
    report_adapt(s, b, oom); /* last: tests read fields by their first match (intervals=) */
}
