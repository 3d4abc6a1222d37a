// SPDX-License-Identifier: Apache-2.0
/*
 * loadgen.h -- open-loop load for tkv_bench: requests are issued at intended
 * times from a rate schedule, independent of how fast the engine answers, so
 * latency (completion - intended send time) includes queueing and there is no
 * coordinated omission.
 *
 * A schedule is "RATE:DURATION[,RATE:DURATION...]", e.g. "10000:10s,40000:50s"
 * (ops/s : seconds; a duration may end in s, ms or m), repeated cyclically for
 * the whole run (SILK's peaks and valleys).
 *
 * Request k of a phase is due at phase_start + k / rate. There is no
 * generator thread: a free worker takes the oldest request not yet taken,
 * sleeps until it is due if it is early (then spins the last microseconds
 * if the sleep ended early enough), and runs it -- the next
 * free worker serves the oldest request, like a server's worker pool, so a
 * slow request delays only the requests that find every worker busy. Due
 * times are never moved: a late request is charged its full delay. (A
 * generator thread that woke up for every request took 60 % of a core from
 * the engine at 90k requests/s on 2 cores.)
 */
#ifndef TKV_BENCH_LOADGEN_H
#define TKV_BENCH_LOADGEN_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

typedef struct lg_phase {
    double rate;    /* ops per second (0 = idle phase) */
    double seconds; /* phase length */
} lg_phase;

#define LG_MIN_PHASE_S 0.001 /* shorter phases are refused: ms is the schedule's unit */
#define LG_MAX_PHASE_S 1e7   /* ~116 days: due times stay within 64-bit nanoseconds */
#define LG_MAX_RATE    1e9   /* ops/s: one request per nanosecond */
#define LG_MIN_RATE    1e-3  /* ops/s other than 0 (idle): due times stay within 64-bit nanoseconds */

/* lg_parse_schedule -- parses s into a malloc'd array. 0, or -1 with a message in err
 * (also for a phase outside [LG_MIN_PHASE_S, LG_MAX_PHASE_S], a rate other
 * than 0 outside [LG_MIN_RATE, LG_MAX_RATE], or NaN). */
int lg_parse_schedule(const char *s, lg_phase **out, size_t *n, char *err, size_t errlen);
/* lg_schedule_describe -- "10000/s for 10s, 40000/s for 50s" into buf. */
void lg_schedule_describe(const lg_phase *ph, size_t n, char *buf, size_t len);
/* lg_expected_ops -- requests the schedule issues in [0, duration_s). */
double lg_expected_ops(const lg_phase *ph, size_t n, double duration_s);

/* lg_now_ns -- CLOCK_MONOTONIC in ns (the clock all intended times use). */
uint64_t lg_now_ns(void);

/* Executes one request on worker `worker`; `intended_ns` is its intended send
 * time (lg_now_ns clock). The callback measures latency itself. */
typedef void (*lg_exec_fn)(void *arg, int worker, uint64_t intended_ns);

typedef struct lg_result {
    uint64_t issued;           /* requests workers took and did not give up (a stop or an abort gives up a
                           * request a worker waits for; in lg_run_traced's trace its slot stays 0) */
    uint64_t completed;        /* requests executed */
    uint64_t max_backlog;      /* most requests due and not yet taken (of every phase), seen when one was taken */
    uint64_t start_ns, end_ns; /* schedule start; last completion */
} lg_result;

/* lg_run -- runs the schedule for duration_s seconds (or until *stop becomes
 * nonzero: a worker waiting for a request's due time then gives it up, and it
 * is not counted as issued) with nworkers worker threads calling fn, waits for
 * every issued request to complete, and returns. 0, or -1 when a worker
 * thread could not be created (the workers already started take nothing
 * more, give up a request they wait for, and are joined; res counts what
 * they ran). */
int lg_run(const lg_phase *ph, size_t n, double duration_s, int nworkers, lg_exec_fn fn, void *arg,
           const volatile int *stop, lg_result *res);
/* lg_run_traced -- lg_run that also records, for the first trace_cap
 * requests, the time a worker actually started each one
 * (lg_now_ns clock), so a test can check the issue rate itself. */
int lg_run_traced(const lg_phase *ph, size_t n, double duration_s, int nworkers, lg_exec_fn fn, void *arg,
                  const volatile int *stop, lg_result *res, uint64_t *issue_ns, size_t trace_cap);

/* lg_timer_slack_ns -- the timer slack workers sleep with while they wait
 * for a due time; 0 (the default) leaves the thread's own (the kernel's 50 us
 * unless the process changed it). A 1 ns slack puts each request within a few
 * microseconds of its due time but wakes the worker for every request: at
 * 90,000 requests/s that took ~0.8 of a core of kernel time on the 2-vCPU
 * VM, against ~0.3 with 50 us, where the wake-ups that would come too early
 * merge and the requests due by then run back to back (each still charged
 * from its due time). Set it before lg_run. */
extern unsigned long lg_timer_slack_ns;

/* lg_create_thread -- pthread_create, the default; a test replaces it to make
 * worker creation fail. */
extern int (*lg_create_thread)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

#endif
