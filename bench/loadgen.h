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
 * One generator thread computes the intended time of request k of a phase as
 * phase_start + k / rate, sleeps until just before it (timers overshoot by tens
 * of microseconds here), spins the rest, and puts the intended time on one
 * queue that all workers take from (the next free worker runs the oldest
 * request, like a server's worker pool: a slow request delays only the
 * requests that find every worker busy). Workers sleep on a semaphore when
 * idle. If the queue is full (2^20 requests) the generator waits for room,
 * but intended times are never moved: a late request is charged its full
 * delay.
 */
#ifndef TKV_BENCH_LOADGEN_H
#define TKV_BENCH_LOADGEN_H

#include <stddef.h>
#include <stdint.h>

typedef struct lg_phase {
    double rate;    /* ops per second (0 = idle phase) */
    double seconds; /* phase length */
} lg_phase;

/* lg_parse_schedule -- parses s into a malloc'd array. 0, or -1 with a message in err. */
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
    uint64_t issued;      /* requests handed to workers */
    uint64_t completed;   /* requests executed */
    uint64_t max_backlog; /* largest queue length seen by the generator */
    uint64_t start_ns, end_ns; /* schedule start; last completion */
} lg_result;

/* lg_run -- runs the schedule for duration_s seconds (or until *stop becomes
 * nonzero) with nworkers worker threads calling fn, waits for every issued
 * request to complete, and returns. 0, or -1 (thread creation failed). */
int lg_run(const lg_phase *ph, size_t n, double duration_s, int nworkers, lg_exec_fn fn, void *arg,
           const volatile int *stop, lg_result *res);
/* lg_run_traced -- lg_run that also records, for the first trace_cap
 * requests, the time the generator actually handed each one to a worker
 * (lg_now_ns clock), so a test can check the issue rate itself. */
int lg_run_traced(const lg_phase *ph, size_t n, double duration_s, int nworkers, lg_exec_fn fn, void *arg,
                  const volatile int *stop, lg_result *res, uint64_t *issue_ns, size_t trace_cap);

#endif
