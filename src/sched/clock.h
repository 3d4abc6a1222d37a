// SPDX-License-Identifier: Apache-2.0
/*
 * clock.h -- the scheduler's time source: the real monotonic clock, or a fake
 * clock that tests set and advance by hand.
 *
 * Every scheduler primitive (ratelimit.h, monitor.h, wctl.h) has a
 * deterministic core whose functions take the current time as a `now_us`
 * argument and never sleep; only thin blocking wrappers read a sched_clock and
 * wait on a condition variable. With a fake clock those wrappers never wait
 * more than SCHED_FAKE_POLL_US of real time before re-reading the clock, so a
 * test that advances the fake clock from another thread sees them react.
 *
 * Times are microseconds since an arbitrary origin (CLOCK_MONOTONIC's, for the
 * real clock), in uint64_t: they never wrap in practice.
 *
 * Thread safety: all functions may be called from any thread; a fake clock's
 * time is an atomic, so one thread may advance it while others read it.
 */
#ifndef TKV_SCHED_CLOCK_H
#define TKV_SCHED_CLOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

/* The longest real wait of a blocking wrapper that runs on a fake clock. */
#define SCHED_FAKE_POLL_US 1000u

typedef struct sched_clock {
    int fake;                 /* 0: CLOCK_MONOTONIC; 1: fake_us */
    _Atomic uint64_t fake_us; /* a fake clock's current time */
} sched_clock;

/* sched_clock_real -- the process-wide real clock (never freed). */
sched_clock *sched_clock_real(void);

/* sched_clock_init_fake -- makes `c` a fake clock reading `start_us`. */
void sched_clock_init_fake(sched_clock *c, uint64_t start_us);

/* sched_clock_now_us -- the clock's time; NULL means the real clock. */
uint64_t sched_clock_now_us(const sched_clock *c);

/* sched_clock_is_fake -- 1 for a fake clock, 0 for the real one (or NULL). */
int sched_clock_is_fake(const sched_clock *c);

/* sched_clock_set_us -- sets a fake clock's time. A fake clock never goes
 * backwards: a time earlier than the current one is ignored. No-op on the
 * real clock. */
void sched_clock_set_us(sched_clock *c, uint64_t t_us);

/* sched_clock_advance_us -- moves a fake clock forward by d_us. No-op on the
 * real clock. */
void sched_clock_advance_us(sched_clock *c, uint64_t d_us);

/* sched_mono_us -- CLOCK_MONOTONIC in microseconds. */
uint64_t sched_mono_us(void);
/* sched_mono_ns -- CLOCK_MONOTONIC in nanoseconds. */
uint64_t sched_mono_ns(void);

/* sched_sleep_us -- sleeps `us` microseconds of real time (restarts after
 * signals). */
void sched_sleep_us(uint64_t us);

/* sched_cond_init -- initialises a condition variable whose timed waits use
 * CLOCK_MONOTONIC (immune to wall-clock jumps). Returns 0 or an errno. */
int sched_cond_init(pthread_cond_t *cv);

/* sched_cond_wait_us -- waits on `cv` (initialised by sched_cond_init, `mu`
 * held) for at most `us` microseconds of real time. Returns 0 when woken (or
 * spuriously) and ETIMEDOUT when the time ran out. */
int sched_cond_wait_us(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t us);

/* sched_wait_budget_us -- how long a blocking wrapper on clock `c` may wait
 * for a clock time `want_us` ahead: `want_us` itself on the real clock,
 * min(want_us, SCHED_FAKE_POLL_US) on a fake clock, and at least 1. */
uint64_t sched_wait_budget_us(const sched_clock *c, uint64_t want_us);

#endif
