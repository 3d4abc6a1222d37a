/*
 * loadgen.c -- the open-loop generator and worker queues (see loadgen.h).
 */
#include "bench/loadgen.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/prctl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RING_SIZE (1u << 18) /* per worker; a power of two */
#define WORKER_POLL_NS 20000u /* an idle worker polls its queue this long before it sleeps */
#define SPIN_NS 3000u        /* sleep until this close to the intended time, then spin */

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
        if (!colon || e == p || e != colon || errno || rate < 0 || parse_duration(colon + 1, end, &ph[k].seconds) != 0 ||
            ph[k].seconds <= 0) {
            snprintf(err, errlen, "bad rate phase \"%.*s\" (want OPS_PER_SEC:DURATION, e.g. 10000:10s)",
                     (int)(end - p), p);
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
        used += (size_t)snprintf(buf + used, len - used, "%s%.0f/s for %gs", i ? ", " : "", ph[i].rate,
                                 ph[i].seconds);
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

/* A worker's queue: the generator is the only producer, the worker the only
 * consumer. head/tail are free-running counters. */
typedef struct worker {
    uint64_t ring[RING_SIZE];
    uint64_t head; /* next slot to write (generator) */
    uint64_t tail; /* next slot to read (worker) */
    sem_t items;   /* one post per queued request, plus one at shutdown */
    int index;
    pthread_t thread;
    struct lg_ctx *ctx;
    uint64_t done;
    uint64_t last_ns;
} worker;

typedef struct lg_ctx {
    lg_exec_fn fn;
    void *arg;
    int closing; /* set after the last request: workers exit when their queue is empty */
} lg_ctx;

static void *worker_main(void *p)
{
    worker *w = p;
    for (;;) {
        /* poll briefly before sleeping: under load the next request usually
         * arrives within microseconds, and a futex sleep + wake-up costs more */
        uint64_t poll_until = lg_now_ns() + WORKER_POLL_NS;
        int got = 0;
        while (!(got = sem_trywait(&w->items) == 0) && lg_now_ns() < poll_until) __builtin_ia32_pause();
        if (!got)
            while (sem_wait(&w->items) != 0 && errno == EINTR) {
            }
        uint64_t tail = w->tail;
        if (tail == __atomic_load_n(&w->head, __ATOMIC_ACQUIRE)) {
            if (__atomic_load_n(&w->ctx->closing, __ATOMIC_ACQUIRE)) break;
            continue;
        }
        uint64_t intended = w->ring[tail & (RING_SIZE - 1)];
        __atomic_store_n(&w->tail, tail + 1, __ATOMIC_RELEASE);
        w->ctx->fn(w->ctx->arg, w->index, intended);
        w->done++;
    }
    w->last_ns = lg_now_ns();
    return NULL;
}

/* wait_until -- sleeps until SPIN_NS before t, then spins the rest. The
 * generator runs with a 1 ns timer slack (lg_run), so a sleep ends within a
 * few microseconds of its target; the short spin absorbs that without
 * taking a core away from the engine (on 2 cores a generator that spins for
 * long would take half the machine). */
static void wait_until(uint64_t t)
{
    uint64_t now = lg_now_ns();
    if (now + SPIN_NS < t) {
        uint64_t d = t - SPIN_NS - now;
        struct timespec ts = {(time_t)(d / 1000000000u), (long)(d % 1000000000u)};
        nanosleep(&ts, NULL);
    }
    while (lg_now_ns() < t) __builtin_ia32_pause();
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
    lg_ctx ctx = {.fn = fn, .arg = arg};
    worker *ws = calloc((size_t)nworkers, sizeof *ws);
    if (!ws) return -1;
    int started = 0;
    for (; started < nworkers; started++) {
        worker *w = &ws[started];
        w->index = started;
        w->ctx = &ctx;
        sem_init(&w->items, 0, 0);
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) break;
    }
    int rc = started == nworkers ? 0 : -1;
    int old_slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0); /* precise sleeps for this (generator) thread */
    uint64_t start = lg_now_ns() + 1000000u; /* 1 ms to let workers park */
    uint64_t end = start + (uint64_t)(duration_s * 1e9);
    res->start_ns = start;
    uint64_t phase_start = start;
    size_t next_worker = 0;
    for (size_t i = 0; rc == 0 && phase_start < end && !(stop && *stop); i = (i + 1) % n) {
        uint64_t phase_len = (uint64_t)(ph[i].seconds * 1e9);
        uint64_t phase_end = phase_start + phase_len < end ? phase_start + phase_len : end;
        if (ph[i].rate > 0) {
            double gap = 1e9 / ph[i].rate;
            for (uint64_t k = 0;; k++) {
                uint64_t t = phase_start + (uint64_t)((double)k * gap);
                if (t >= phase_end || (stop && *stop)) break;
                wait_until(t);
                worker *w = &ws[next_worker];
                next_worker = (next_worker + 1) % (size_t)nworkers;
                uint64_t head = w->head;
                uint64_t backlog = head - __atomic_load_n(&w->tail, __ATOMIC_ACQUIRE);
                while (backlog >= RING_SIZE) { /* full: wait, but keep the intended time */
                    struct timespec ts = {0, 100000};
                    nanosleep(&ts, NULL);
                    backlog = head - __atomic_load_n(&w->tail, __ATOMIC_ACQUIRE);
                }
                if (backlog * (uint64_t)nworkers > res->max_backlog) res->max_backlog = backlog * (uint64_t)nworkers;
                w->ring[head & (RING_SIZE - 1)] = t;
                __atomic_store_n(&w->head, head + 1, __ATOMIC_RELEASE);
                sem_post(&w->items);
                if (res->issued < trace_cap) issue_ns[res->issued] = lg_now_ns();
                res->issued++;
            }
        } else {
            wait_until(phase_end);
        }
        phase_start = phase_end;
    }
    if (old_slack > 0) prctl(PR_SET_TIMERSLACK, (unsigned long)old_slack, 0, 0, 0);
    __atomic_store_n(&ctx.closing, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < started; i++) sem_post(&ws[i].items);
    for (int i = 0; i < started; i++) {
        pthread_join(ws[i].thread, NULL);
        sem_destroy(&ws[i].items);
        res->completed += ws[i].done;
        if (ws[i].last_ns > res->end_ns) res->end_ns = ws[i].last_ns;
    }
    free(ws);
    return rc;
}
