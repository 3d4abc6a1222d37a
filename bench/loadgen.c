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

#define RING_SIZE (1u << 20) /* requests queued at most; a power of two */
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

/* The request queue, shared by all workers (one server queue, as in a
 * server whose worker pool takes the next request when it is free): one slow
 * request holds up only itself, not a quarter of the requests behind it, as
 * per-worker round-robin queues would. The generator is the only producer.
 * Invariants: head - tail <= RING_SIZE; items holds one post per queued
 * request plus one per worker at shutdown; ring, head and tail change under mu. */
typedef struct lg_queue {
    pthread_mutex_t mu;
    uint64_t ring[RING_SIZE];
    uint64_t head; /* next slot to write (generator) */
    uint64_t tail; /* next slot to take (a worker) */
    sem_t items;
    int closing; /* set after the last request: workers exit when the queue is empty */
    lg_exec_fn fn;
    void *arg;
} lg_queue;

typedef struct worker {
    int index;
    pthread_t thread;
    lg_queue *q;
    uint64_t done;
    uint64_t last_ns;
} worker;

static void *worker_main(void *p)
{
    worker *w = p;
    lg_queue *q = w->q;
    char name[16];
    snprintf(name, sizeof name, "lg-worker%d", w->index % 1000);
    pthread_setname_np(pthread_self(), name); /* for top and perf */
    for (;;) {
        /* poll briefly before sleeping: under load the next request usually
         * arrives within microseconds, and a futex sleep + wake-up costs more */
        uint64_t poll_until = lg_now_ns() + WORKER_POLL_NS;
        int got = 0;
        while (!(got = sem_trywait(&q->items) == 0) && lg_now_ns() < poll_until) __builtin_ia32_pause();
        if (!got)
            while (sem_wait(&q->items) != 0 && errno == EINTR) {
            }
        pthread_mutex_lock(&q->mu);
        if (q->tail == q->head) {
            int closing = q->closing;
            pthread_mutex_unlock(&q->mu);
            if (closing) break;
            continue;
        }
        uint64_t intended = q->ring[q->tail & (RING_SIZE - 1)];
        q->tail++;
        pthread_mutex_unlock(&q->mu);
        q->fn(q->arg, w->index, intended);
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
    lg_queue *q = calloc(1, sizeof *q);
    worker *ws = calloc((size_t)nworkers, sizeof *ws);
    if (!q || !ws) {
        free(q);
        free(ws);
        return -1;
    }
    pthread_mutex_init(&q->mu, NULL);
    sem_init(&q->items, 0, 0);
    q->fn = fn;
    q->arg = arg;
    int started = 0;
    for (; started < nworkers; started++) {
        worker *w = &ws[started];
        w->index = started;
        w->q = q;
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0) break;
    }
    int rc = started == nworkers ? 0 : -1;
    int old_slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
    prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0); /* precise sleeps for this (generator) thread */
    uint64_t start = lg_now_ns() + 1000000u; /* 1 ms to let workers park */
    uint64_t end = start + (uint64_t)(duration_s * 1e9);
    res->start_ns = start;
    uint64_t phase_start = start;
    for (size_t i = 0; rc == 0 && phase_start < end && !(stop && *stop); i = (i + 1) % n) {
        uint64_t phase_len = (uint64_t)(ph[i].seconds * 1e9);
        uint64_t phase_end = phase_start + phase_len < end ? phase_start + phase_len : end;
        if (ph[i].rate > 0) {
            double gap = 1e9 / ph[i].rate;
            for (uint64_t k = 0;; k++) {
                uint64_t t = phase_start + (uint64_t)((double)k * gap);
                if (t >= phase_end || (stop && *stop)) break;
                wait_until(t);
                pthread_mutex_lock(&q->mu);
                while (q->head - q->tail >= RING_SIZE) { /* full: wait, but keep the intended time */
                    pthread_mutex_unlock(&q->mu);
                    struct timespec ts = {0, 100000};
                    nanosleep(&ts, NULL);
                    pthread_mutex_lock(&q->mu);
                }
                uint64_t backlog = q->head - q->tail;
                q->ring[q->head & (RING_SIZE - 1)] = t;
                q->head++;
                pthread_mutex_unlock(&q->mu);
                sem_post(&q->items);
                if (backlog + 1 > res->max_backlog) res->max_backlog = backlog + 1;
                if (res->issued < trace_cap) issue_ns[res->issued] = lg_now_ns();
                res->issued++;
            }
        } else {
            wait_until(phase_end);
        }
        phase_start = phase_end;
    }
    if (old_slack > 0) prctl(PR_SET_TIMERSLACK, (unsigned long)old_slack, 0, 0, 0);
    pthread_mutex_lock(&q->mu);
    q->closing = 1;
    pthread_mutex_unlock(&q->mu);
    for (int i = 0; i < started; i++) sem_post(&q->items);
    for (int i = 0; i < started; i++) {
        pthread_join(ws[i].thread, NULL);
        res->completed += ws[i].done;
        if (ws[i].last_ns > res->end_ns) res->end_ns = ws[i].last_ns;
    }
    sem_destroy(&q->items);
    pthread_mutex_destroy(&q->mu);
    free(q);
    free(ws);
    return rc;
}
