// SPDX-License-Identifier: Apache-2.0
/*
 * loadgen.c -- the open-loop schedule and its workers (see loadgen.h).
 */
#include "bench/loadgen.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define SPIN_NS 3000u /* sleep until this close to the intended time, then spin */

unsigned long lg_timer_slack_ns;

int (*lg_create_thread)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) = pthread_create;

uint64_t lg_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* parse_duration -- "10s", "500ms", "2m", "10" (seconds). */
static int parse_duration(const char *s, const char *end, double *out)
{
    char buf[32];
    size_t n = (size_t)(end - s);
    if (n == 0 || n >= sizeof buf) return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *e;
    errno = 0;
    double v = strtod(buf, &e);
    if (errno || e == buf || v < 0) return -1;
    if (!strcmp(e, "") || !strcmp(e, "s")) *out = v;
    else if (!strcmp(e, "ms")) *out = v / 1000.0;
    else if (!strcmp(e, "m")) *out = v * 60.0;
    else return -1;
    return 0;
}

int lg_parse_schedule(const char *s, lg_phase **out, size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    if (!s || !*s) {
        snprintf(err, errlen, "empty rate schedule");
        return -1;
    }
    size_t sl = strlen(s);
    if (s[sl - 1] == ',') {
        snprintf(err, errlen, "rate schedule \"%s\" ends with a comma", s);
        return -1;
    }
    size_t cap = 1;
    for (const char *p = s; *p; p++) cap += *p == ',';
    lg_phase *ph = calloc(cap, sizeof *ph);
    if (!ph) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t k = 0;
    const char *p = s;
    double total = 0;
    while (*p) {
        const char *comma = strchr(p, ',');
        const char *end = comma ? comma : p + strlen(p);
        const char *colon = memchr(p, ':', (size_t)(end - p));
        char *e;
        errno = 0;
        double rate = strtod(p, &e);
        if (!colon || e == p || e != colon || errno || rate < 0 ||
            parse_duration(colon + 1, end, &ph[k].seconds) != 0 || ph[k].seconds <= 0) {
            snprintf(err, errlen, "bad rate phase \"%.*s\" (want OPS_PER_SEC:DURATION, e.g. 10000:10s)", (int)(end - p),
                     p);
            free(ph);
            return -1;
        }
        /* written so that NaN fails every test */
        if (!(ph[k].seconds >= LG_MIN_PHASE_S && ph[k].seconds <= LG_MAX_PHASE_S) ||
            !(rate == 0 || (rate >= LG_MIN_RATE && rate <= LG_MAX_RATE))) {
            snprintf(err, errlen,
                     "rate phase \"%.*s\" out of range (a phase lasts 1 ms to %.0f s at 0 or %g to %.0f ops/s)",
                     (int)(end - p), p, LG_MAX_PHASE_S, LG_MIN_RATE, LG_MAX_RATE);
            free(ph);
            return -1;
        }
        ph[k].rate = rate;
        total += ph[k].seconds;
        k++;
        p = comma ? comma + 1 : end;
    }
    if (k == 0 || total <= 0) {
        snprintf(err, errlen, "rate schedule \"%s\" has no phases", s);
        free(ph);
        return -1;
    }
    *out = ph;
    *n = k;
    return 0;
}

void lg_schedule_describe(const lg_phase *ph, size_t n, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < n && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "%s%.0f/s for %gs", i ? ", " : "", ph[i].rate, ph[i].seconds);
    if (used < len) snprintf(buf + used, len - used, " (repeated)");
}

double lg_expected_ops(const lg_phase *ph, size_t n, double duration_s)
{
    double t = 0, ops = 0;
    for (size_t i = 0; t < duration_s; i = (i + 1) % n) {
        double d = ph[i].seconds < duration_s - t ? ph[i].seconds : duration_s - t;
        ops += d * ph[i].rate;
        t += d;
    }
    return ops;
}

/* The schedule, shared by all workers: request k of a phase is due at
 * phase_start + k / rate. A free worker takes the oldest request not yet
 * taken, sleeps until it is due if it is early, and runs it -- what a server
 * whose worker pool serves one queue does (a slow request holds up only
 * itself, not the requests dealt to other workers), without a generator
 * thread: one that woke up for every request (90,000 times a second at
 * 90k/s) took 60 % of a core from the engine on a 2-core machine and
 * preempted its flush thread a thousand times in 8 s. A request is charged
 * from its due time whenever a worker gets to it, so queueing still counts
 * in full.
 * Invariants (under mu): requests are handed out in due order, each once;
 * next_due() is the due time of request `k` of phase `i`, which starts at
 * phase_start; once phase_start >= end (or *stop, or aborted) nothing more is
 * handed out. */
typedef struct lg_sched {
    pthread_mutex_t mu;
    const lg_phase *ph;
    size_t nph, i;        /* the phases; the current one */
    uint64_t phase_start; /* of phase i */
    uint64_t phase_end;   /* of phase i, at most end */
    uint64_t end;         /* of the whole run */
    uint64_t k;           /* the next request of phase i */
    const volatile int *stop;
    int aborted;           /* atomic: a worker could not be created; the run ends */
    double cyc_s, cyc_ops; /* one cycle of the phases: its length (s) and requests */
    lg_result *res;
    uint64_t *issue_ns;
    size_t trace_cap;
    lg_exec_fn fn;
    void *arg;
} lg_sched;

typedef struct worker {
    int index;
    pthread_t thread;
    lg_sched *s;
    uint64_t done;
    uint64_t last_ns;
} worker;

/* stopped -- the caller's stop flag is set, or the run was aborted. */
static int stopped(const lg_sched *s)
{
    return (s->stop && *s->stop) || __atomic_load_n(&s->aborted, __ATOMIC_ACQUIRE);
}

/* wait_until -- sleeps until SPIN_NS before t, then spins the rest; 0 if the
 * run stopped first (checked every 10 ms of sleep). With lg_timer_slack_ns
 * set, the sleep runs with that timer slack and the thread's own
 * (default_slack, read at start) is restored before it returns, so the
 * engine's sleeps on this thread -- a write controller's pacing -- keep the
 * slack any host thread has. */
static int wait_until(const lg_sched *s, uint64_t t, unsigned long default_slack)
{
    uint64_t now = lg_now_ns();
    if (now + SPIN_NS < t) {
        if (lg_timer_slack_ns) prctl(PR_SET_TIMERSLACK, lg_timer_slack_ns, 0, 0, 0);
        while (now + SPIN_NS < t) {
            if (stopped(s)) break;
            uint64_t d = t - SPIN_NS - now;
            if (d > 10000000u) d = 10000000u;
            struct timespec ts = {(time_t)(d / 1000000000u), (long)(d % 1000000000u)};
            nanosleep(&ts, NULL);
            now = lg_now_ns();
        }
        if (lg_timer_slack_ns) prctl(PR_SET_TIMERSLACK, default_slack, 0, 0, 0);
    }
    while (!stopped(s) && lg_now_ns() < t) __builtin_ia32_pause();
    return !stopped(s);
}

/* due_between -- requests of the schedule due in [from, to), phase i
 * starting at phase_start (from >= phase_start; whole cycles counted at once,
 * so the cost is O(phases) however far behind the workers are). */
static double due_between(const lg_sched *s, uint64_t from, uint64_t to)
{
    if (to > s->end) to = s->end;
    if (to <= from) return 0;
    double cyc_s = s->cyc_s, cyc_ops = s->cyc_ops;
    double at = (double)(from - s->phase_start) / 1e9; /* seconds into phase i */
    double left = (double)(to - from) / 1e9, ops = 0;
    size_t j = s->i;
    /* finish phase i, then whole cycles, then the phases of the last part */
    double in_i = s->ph[j].seconds - at;
    if (in_i > 0) {
        double d = in_i < left ? in_i : left;
        ops += d * s->ph[j].rate;
        left -= d;
    }
    j = (j + 1) % s->nph;
    if (left > cyc_s) {
        double cycles = (double)(uint64_t)(left / cyc_s);
        ops += cycles * cyc_ops;
        left -= cycles * cyc_s;
    }
    for (size_t m = 0; m < s->nph && left > 0; m++, j = (j + 1) % s->nph) {
        double d = s->ph[j].seconds < left ? s->ph[j].seconds : left;
        ops += d * s->ph[j].rate;
        left -= d;
    }
    return ops;
}

/* sched_take -- under mu: the next request's due time into *due and its
 * number into *seq; 0 when the schedule (or a stop) has ended it. */
static int sched_take(lg_sched *s, uint64_t now, uint64_t *due, uint64_t *seq)
{
    while (s->phase_start < s->end && !stopped(s)) {
        double rate = s->ph[s->i].rate;
        if (rate > 0) {
            uint64_t t = s->phase_start + (uint64_t)((double)s->k * 1e9 / rate);
            if (t < s->phase_end) {
                s->k++;
                /* requests already due and not yet taken, this one included
                 * (those of later phases too when the workers are that late) */
                uint64_t backlog = 1 + (now > t ? (uint64_t)due_between(s, t + 1, now) : 0);
                if (backlog > s->res->max_backlog) s->res->max_backlog = backlog;
                *due = t;
                *seq = s->res->issued++;
                return 1;
            }
        }
        s->phase_start = s->phase_end;
        s->i = (s->i + 1) % s->nph;
        s->k = 0;
        uint64_t len = (uint64_t)(s->ph[s->i].seconds * 1e9);
        if (len == 0) len = 1; /* a phase under 1 ns still moves the clock: no endless loop over empty phases */
        s->phase_end = s->phase_start + len < s->end ? s->phase_start + len : s->end;
    }
    return 0;
}

static void *worker_main(void *p)
{
    worker *w = p;
    lg_sched *s = w->s;
    char name[16];
    snprintf(name, sizeof name, "lg-worker%d", w->index % 1000);
    pthread_setname_np(pthread_self(), name); /* for top and perf */
    int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    unsigned long default_slack = slack > 0 ? (unsigned long)slack : 50000u; /* the kernel's default */
    for (;;) {
        uint64_t due, seq;
        pthread_mutex_lock(&s->mu);
        int got = sched_take(s, lg_now_ns(), &due, &seq);
        pthread_mutex_unlock(&s->mu);
        if (!got) break;
        if (!wait_until(s, due, default_slack)) { /* stopped before it was due: not run */
            pthread_mutex_lock(&s->mu);
            s->res->issued--;
            pthread_mutex_unlock(&s->mu);
            break;
        }
        if (seq < s->trace_cap) s->issue_ns[seq] = lg_now_ns();
        s->fn(s->arg, w->index, due);
        w->done++;
    }
    /* the run lasts its whole schedule, a trailing idle phase included
     * (unless stopped): throughput is per wall-clock second of it */
    wait_until(s, s->end, default_slack); /* s->end is set before any worker starts */
    w->last_ns = lg_now_ns();
    return NULL;
}

int lg_run(const lg_phase *ph, size_t n, double duration_s, int nworkers, lg_exec_fn fn, void *arg,
           const volatile int *stop, lg_result *res)
{
    return lg_run_traced(ph, n, duration_s, nworkers, fn, arg, stop, res, NULL, 0);
}

int lg_run_traced(const lg_phase *ph, size_t n, double duration_s, int nworkers, lg_exec_fn fn, void *arg,
                  const volatile int *stop, lg_result *res, uint64_t *issue_ns, size_t trace_cap)
{
    memset(res, 0, sizeof *res);
    if (nworkers < 1) nworkers = 1;
    lg_sched *s = calloc(1, sizeof *s);
    worker *ws = calloc((size_t)nworkers, sizeof *ws);
    if (!s || !ws) {
        free(s);
        free(ws);
        return -1;
    }
    pthread_mutex_init(&s->mu, NULL);
    s->ph = ph;
    s->nph = n;
    s->stop = stop;
    for (size_t j = 0; j < n; j++) {
        s->cyc_s += ph[j].seconds;
        s->cyc_ops += ph[j].seconds * ph[j].rate;
    }
    s->res = res;
    s->issue_ns = issue_ns;
    s->trace_cap = issue_ns ? trace_cap : 0;
    s->fn = fn;
    s->arg = arg;
    uint64_t start = lg_now_ns() + 1000000u; /* 1 ms for the workers to start */
    s->end = start + (uint64_t)(duration_s * 1e9);
    s->phase_start = start;
    uint64_t len = (uint64_t)(ph[0].seconds * 1e9);
    s->phase_end = start + len < s->end ? start + len : s->end;
    res->start_ns = start;
    int started = 0;
    for (; started < nworkers; started++) {
        worker *w = &ws[started];
        w->index = started;
        w->s = s;
        if (lg_create_thread(&w->thread, NULL, worker_main, w) != 0) break;
    }
    int rc = started == nworkers ? 0 : -1;
    /* end the run: the workers that did start take nothing more and give up
     * a request they are waiting for (as on a stop) */
    if (rc != 0) __atomic_store_n(&s->aborted, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < started; i++) {
        pthread_join(ws[i].thread, NULL);
        res->completed += ws[i].done;
        if (ws[i].last_ns > res->end_ns) res->end_ns = ws[i].last_ns;
    }
    pthread_mutex_destroy(&s->mu);
    free(s);
    free(ws);
    return rc;
}
