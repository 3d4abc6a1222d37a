// SPDX-License-Identifier: Apache-2.0
/*
 * clock.c -- the real monotonic clock, the fake test clock, and the
 * CLOCK_MONOTONIC condition-variable waits the blocking wrappers use.
 */
#include "sched/clock.h"

#include <errno.h>
#include <time.h>

static sched_clock g_real_clock = {.fake = 0, .fake_us = 0};

/* sched_clock_real -- the shared real clock object. */
sched_clock *sched_clock_real(void) { return &g_real_clock; }

/* sched_clock_init_fake -- a fake clock starting at start_us. */
void sched_clock_init_fake(sched_clock *c, uint64_t start_us)
{
    c->fake = 1;
    atomic_store_explicit(&c->fake_us, start_us, memory_order_release);
}

/* sched_mono_ns -- CLOCK_MONOTONIC as nanoseconds. */
uint64_t sched_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* sched_mono_us -- CLOCK_MONOTONIC as microseconds. */
uint64_t sched_mono_us(void) { return sched_mono_ns() / 1000u; }

/* sched_clock_now_us -- real or fake time. */
uint64_t sched_clock_now_us(const sched_clock *c)
{
    if (c && c->fake) return atomic_load_explicit(&c->fake_us, memory_order_acquire);
    return sched_mono_us();
}

/* sched_clock_is_fake -- whether `c` is a fake clock. */
int sched_clock_is_fake(const sched_clock *c) { return c && c->fake; }

/* sched_clock_set_us -- forward-only store (a CAS loop keeps the invariant
 * "a fake clock never goes backwards" under concurrent setters). */
void sched_clock_set_us(sched_clock *c, uint64_t t_us)
{
    if (!c || !c->fake) return;
    uint64_t cur = atomic_load_explicit(&c->fake_us, memory_order_acquire);
    while (cur < t_us && !atomic_compare_exchange_weak_explicit(&c->fake_us, &cur, t_us, memory_order_acq_rel,
                                                                memory_order_acquire)) {}
}

/* sched_clock_advance_us -- fake time += d_us. */
void sched_clock_advance_us(sched_clock *c, uint64_t d_us)
{
    if (!c || !c->fake) return;
    atomic_fetch_add_explicit(&c->fake_us, d_us, memory_order_acq_rel);
}

/* sched_sleep_us -- relative sleep on CLOCK_MONOTONIC via an absolute deadline,
 * so that EINTR restarts do not stretch the total. */
void sched_sleep_us(uint64_t us)
{
    if (us == 0) return;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t ns = (uint64_t)ts.tv_nsec + (us % 1000000u) * 1000u;
    ts.tv_sec += (time_t)(us / 1000000u + ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
}

/* sched_cond_init -- condvar on CLOCK_MONOTONIC. */
int sched_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t a;
    int rc = pthread_condattr_init(&a);
    if (rc) return rc;
    rc = pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    if (rc == 0) rc = pthread_cond_init(cv, &a);
    pthread_condattr_destroy(&a);
    return rc;
}

/* sched_cond_wait_us -- timed wait of at most `us` (absolute monotonic
 * deadline computed here). */
int sched_cond_wait_us(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t us)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    uint64_t ns = (uint64_t)ts.tv_nsec + (us % 1000000u) * 1000u;
    ts.tv_sec += (time_t)(us / 1000000u + ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    int rc = pthread_cond_timedwait(cv, mu, &ts);
    return rc == ETIMEDOUT ? ETIMEDOUT : 0;
}

/* sched_wait_budget_us -- see the header: fake clocks are polled. */
uint64_t sched_wait_budget_us(const sched_clock *c, uint64_t want_us)
{
    if (sched_clock_is_fake(c) && want_us > SCHED_FAKE_POLL_US) want_us = SCHED_FAKE_POLL_US;
    return want_us ? want_us : 1;
}
