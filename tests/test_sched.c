// SPDX-License-Identifier: Apache-2.0
/*
 * test_sched.c -- the scheduler primitives of src/sched/: the fake clock, the
 * SILK control law (monitor), the two-priority token bucket (ratelimit) and
 * the PRL write controller (wctl).
 *
 * Everything runs on a fake clock and the deterministic cores (which take
 * `now_us` and never sleep), except three short real-thread tests: a
 * blocked rl_request is woken by rl_cancel and rl_shutdown, a blocking
 * rl_request on a fake clock advances when the test advances the clock, and
 * the monitor's ticker thread ticks and stops. Random loads use a fixed-seed
 * xoshiro256** so that every run sees the same numbers.
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sched/clock.h"
#include "sched/drainmeter.h"
#include "sched/flushprog.h"
#include "sched/monitor.h"
#include "sched/ratelimit.h"
#include "sched/tadapt.h"
#include "sched/wctl.h"
#include "tierkv.h"
#include "util/rng.h"

#define MiB (1ull << 20)
#define KiB (1ull << 10)

/* ---- helpers ---- */

/* rng_seed -- a fixed-seed xoshiro256** state (splitmix64 expansion). */
static void rng_seed(uint64_t s[4], uint64_t seed)
{
    for (int i = 0; i < 4; i++) {
        uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        s[i] = z ^ (z >> 31);
    }
}

/* rng_unit -- uniform in [-1, 1). */
static double rng_unit(uint64_t s[4]) { return (double)(xoshiro256ss_next(s) >> 11) / (double)(1ull << 52) - 1.0; }

static uint64_t absdiff(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

/* ---- clock ---- */

static void test_clock(void **state)
{
    (void)state;
    sched_clock c;
    sched_clock_init_fake(&c, 1000);
    assert_true(sched_clock_is_fake(&c));
    assert_int_equal(sched_clock_now_us(&c), 1000);
    sched_clock_advance_us(&c, 500);
    assert_int_equal(sched_clock_now_us(&c), 1500);
    sched_clock_set_us(&c, 1200); /* backwards: ignored */
    assert_int_equal(sched_clock_now_us(&c), 1500);
    sched_clock_set_us(&c, 9000);
    assert_int_equal(sched_clock_now_us(&c), 9000);
    assert_int_equal(sched_wait_budget_us(&c, 50000), SCHED_FAKE_POLL_US);
    assert_int_equal(sched_wait_budget_us(&c, 0), 1);

    sched_clock *r = sched_clock_real();
    assert_false(sched_clock_is_fake(r));
    assert_false(sched_clock_is_fake(NULL));
    assert_int_equal(sched_wait_budget_us(r, 50000), 50000);
    uint64_t t0 = sched_clock_now_us(r);
    sched_sleep_us(2000);
    uint64_t t1 = sched_clock_now_us(NULL);
    assert_true(t1 >= t0 + 2000);
    sched_clock_advance_us(r, 1ull << 40); /* no-op on the real clock */
    assert_true(sched_clock_now_us(r) < t1 + 10000000u);
}

/* ---- monitor ---- */

#define PERIOD 10000u /* 10 ms windows */

/* mon_defaults -- T 500, floor 50, epsilon 10, threshold 10 (MiB/s). */
static monitor *mon_new(unsigned noise_mult, uint64_t t0)
{
    monitor_options o;
    monitor_options_default(&o);
    assert_int_equal(o.device_bw, 500 * MiB);
    assert_int_equal(o.threshold, 10 * MiB);
    o.noise_mult = noise_mult;
    monitor *m = NULL;
    assert_int_equal(monitor_create(&o, t0, &m), TKV_OK);
    return m;
}

/* target -- max(floor, T - C - eps) for the defaults. */
static uint64_t target_for(uint64_t c)
{
    return 500 * MiB > c + 10 * MiB + 50 * MiB ? 500 * MiB - c - 10 * MiB : 50 * MiB;
}

/* feed -- one window of `bw` bytes/s lasting dt; returns monitor_sample's. */
static int feed(monitor *m, uint64_t *now, double bw, uint64_t dt)
{
    *now += dt;
    return monitor_sample(m, (uint64_t)(bw * (double)dt / 1e6), *now);
}

/* The published I reaches the new target (within the threshold) within 2
 * periods of a step in client load, up and down, and then stays put. */
static void test_monitor_step_response(void **state)
{
    (void)state;
    uint64_t now = 0;
    monitor *m = mon_new(5, now);
    assert_int_equal(monitor_internal_bw(m), 490 * MiB); /* before any sample: T - eps */
    const uint64_t levels[] = {100 * MiB, 300 * MiB, 50 * MiB, 70 * MiB, 400 * MiB, 0};
    for (size_t li = 0; li < sizeof levels / sizeof levels[0]; li++) {
        uint64_t c = levels[li];
        for (int k = 0; k < 60; k++) {
            feed(m, &now, (double)c, PERIOD);
            monitor_stats st;
            monitor_get_stats(m, &st);
            if (k >= 1) { /* settled by the end of the 2nd period after the step */
                assert_true(absdiff(st.internal_bw, target_for(c)) <= 10 * MiB);
                assert_true(absdiff(st.client_bw, c) <= 200); /* byte rounding of the windows */
            }
            if (k == 2) {
                uint64_t changes = st.changes;
                for (int j = 0; j < 50; j++) feed(m, &now, (double)c, PERIOD);
                monitor_get_stats(m, &st);
                assert_int_equal(st.changes, changes); /* and stays there */
                break;
            }
        }
    }
    /* with noise of +-5% the step still settles within 2 periods (to within
     * the threshold plus the noise itself) */
    uint64_t s[4];
    rng_seed(s, 7);
    for (int k = 0; k < 100; k++) feed(m, &now, 100.0 * MiB * (1 + 0.05 * rng_unit(s)), PERIOD);
    for (int k = 0; k < 30; k++) {
        feed(m, &now, 300.0 * MiB * (1 + 0.05 * rng_unit(s)), PERIOD);
        if (k >= 1) assert_true(absdiff(monitor_internal_bw(m), target_for(300 * MiB)) <= 10 * MiB + 15 * MiB);
    }
    for (int k = 0; k < 30; k++) {
        feed(m, &now, 60.0 * MiB * (1 + 0.05 * rng_unit(s)), PERIOD);
        if (k >= 1) assert_true(absdiff(monitor_internal_bw(m), target_for(60 * MiB)) <= 10 * MiB + 15 * MiB);
    }
    /* and with more smoothing it would not: 4 windows settle in 4 periods */
    monitor_options o;
    monitor_options_default(&o);
    o.smooth_windows = 4;
    monitor *slow = NULL;
    now = 0;
    assert_int_equal(monitor_create(&o, now, &slow), TKV_OK);
    for (int k = 0; k < 50; k++) feed(slow, &now, 100.0 * MiB, PERIOD);
    feed(slow, &now, 300.0 * MiB, PERIOD);
    feed(slow, &now, 300.0 * MiB, PERIOD);
    assert_true(absdiff(monitor_internal_bw(slow), target_for(300 * MiB)) > 10 * MiB);
    feed(slow, &now, 300.0 * MiB, PERIOD);
    feed(slow, &now, 300.0 * MiB, PERIOD);
    assert_true(absdiff(monitor_internal_bw(slow), target_for(300 * MiB)) <= 10 * MiB);
    monitor_free(slow);
    monitor_free(m);
}

/* noise_sample -- a noise value in about [-1, 1]: uniform (shape 0), or a
 * bell of three uniforms with the same standard deviation (shape 1, tails
 * to +-1.7). */
static double noise_sample(uint64_t s[4], int shape)
{
    if (shape == 0) return rng_unit(s);
    return (rng_unit(s) + rng_unit(s) + rng_unit(s)) / 3 * 1.7;
}

/* max_changes_per_second -- feeds 10.4 s of load c * (1 + noise * x) in
 * windows of 9..11 ms (a thread that wakes late or early) and returns the
 * most changes of I seen in any one second, after 0.4 s in which the
 * monitor learns the noise level (and makes the initial step from "no load
 * seen"). */
static uint64_t max_changes_per_second(unsigned noise_mult, double c, double noise, int shape, uint64_t seed)
{
    uint64_t s[4];
    rng_seed(s, seed);
    uint64_t now = 0;
    monitor *m = mon_new(noise_mult, now);
    monitor_stats st;
    uint64_t worst = 0, base = 0;
    for (int k = 0; k < 1040; k++) {
        double x = noise_sample(s, shape);
        uint64_t dt = 9000 + (uint64_t)(1000 * (1 + rng_unit(s)));
        feed(m, &now, c * (1 + noise * x), dt);
        monitor_get_stats(m, &st);
        assert_true(st.internal_bw >= 50 * MiB);
        if (k == 39) base = st.changes;
        if (k > 39 && (k - 39) % 100 == 0) {
            if (st.changes - base > worst) worst = st.changes - base;
            base = st.changes;
        }
    }
    monitor_free(m);
    return worst;
}

/* Under steady load with +-5% noise, I changes at most twice per second, at
 * every load level and for two noise shapes; the plain SILK rule (deadband =
 * threshold only) fails that bound at high load, which shows the test can
 * tell. */
static void test_monitor_noise(void **state)
{
    (void)state;
    uint64_t worst[2] = {0, 0};
    for (int load = 20; load <= 480; load += 20) {
        for (int shape = 0; shape < 2; shape++) {
            for (uint64_t seed = 1; seed <= 4; seed++) {
                uint64_t w = max_changes_per_second(5, load * (double)MiB, 0.05, shape, seed * 1000 + (uint64_t)load);
                if (w > worst[shape]) worst[shape] = w;
                if (w > 2) print_message("load %d MiB/s shape %d seed %llu: %llu changes/s\n", load, shape,
                                         (unsigned long long)seed, (unsigned long long)w);
                assert_true(w <= 2);
            }
        }
    }
    print_message("most changes in a second: %llu (uniform), %llu (bell)\n", (unsigned long long)worst[0],
                  (unsigned long long)worst[1]);
    uint64_t plain = max_changes_per_second(0, 400.0 * MiB, 0.05, 0, 99);
    print_message("plain SILK rule at 400 MiB/s: max %llu changes/s\n", (unsigned long long)plain);
    assert_true(plain > 2);
}

/* I never drops below the floor nor exceeds T - epsilon, whatever the load
 * (including loads above T), and the counters count. */
/* feed_reads -- one window of `bw` bytes/s lasting dt with `reads` client
 * reads of lat_us each; returns monitor_sample_reads'. */
static int feed_reads(monitor *m, uint64_t *now, double bw, uint64_t reads, double lat_us, uint64_t dt)
{
    *now += dt;
    return monitor_sample_reads(m, (uint64_t)(bw * (double)dt / 1e6), reads, (uint64_t)((double)reads * lat_us * 1e3),
                                *now);
}

/* lat_new -- the defaults with the read-latency cap at factor_pct (and a
 * fixed target if target_us). */
static monitor *lat_new(unsigned factor_pct, uint64_t target_us, uint64_t t0)
{
    monitor_options o;
    monitor_options_default(&o);
    assert_int_equal(o.latency_factor_pct, 0); /* off unless asked for */
    o.latency_factor_pct = factor_pct;
    o.latency_target_us = target_us;
    monitor *m = NULL;
    assert_int_equal(monitor_create(&o, t0, &m), TKV_OK);
    return m;
}

/* The read-latency cap: multiplicative decrease to the floor while reads are
 * slow, additive recovery when they are fast again, no effect with too few
 * reads, a baseline that forgets a low slowly, a fixed target, off = the
 * bandwidth law alone, invalid settings refused. */
static void test_monitor_latency_cap(void **state)
{
    (void)state;
    uint64_t now = 0;
    monitor_stats st;
    monitor *m = lat_new(200, 0, now);
    /* 1 s at C = 100 MiB/s, 10 reads of 200 us per window: I = T - C - eps,
     * the baseline is 200 us, nothing capped */
    for (int k = 0; k < 100; k++) feed_reads(m, &now, 100.0 * MiB, 10, 200, PERIOD);
    monitor_get_stats(m, &st);
    assert_int_equal(st.internal_bw, 390 * MiB);
    assert_int_equal(st.latency_baseline_ns, 200000);
    assert_int_equal(st.latency_target_ns, 400000);
    assert_int_equal(st.latency_backoffs, 0);
    assert_int_equal(st.latency_capped, 0);
    assert_true(st.latency_intervals >= 9);

    /* reads slow to 1 ms: I falls by 30% per 100 ms interval, to the floor
     * exactly (published even inside the deadband) within 7 intervals */
    uint64_t prev = st.internal_bw;
    int at_floor = -1;
    for (int k = 0; k < 100; k++) {
        feed_reads(m, &now, 100.0 * MiB, 10, 1000, PERIOD);
        uint64_t i = monitor_internal_bw(m);
        assert_true(i <= prev && i >= 50 * MiB);
        if (k == 10) assert_true(absdiff(i, (uint64_t)(390.0 * MiB * 0.7)) <= 1); /* the first interval's back-off */
        if (i == 50 * MiB && at_floor < 0) at_floor = k;
        prev = i;
    }
    assert_true(at_floor >= 0 && at_floor <= 70);
    monitor_get_stats(m, &st);
    assert_int_equal(st.latency_capped, 1);
    assert_int_equal(st.read_latency_ns, 1000000);
    assert_int_equal(st.latency_backoffs, 10);
    assert_int_equal(st.candidate, 390 * MiB); /* the bandwidth law is unchanged */

    /* fast again: I climbs by T/32 per interval, back to T - C - eps within
     * 2.5 s, never down on the way */
    int back = -1;
    for (int k = 0; k < 300; k++) {
        feed_reads(m, &now, 100.0 * MiB, 10, 200, PERIOD);
        uint64_t i = monitor_internal_bw(m);
        assert_true(i >= prev);
        if (i == 390 * MiB && back < 0) back = k;
        prev = i;
    }
    assert_true(back > 0 && back <= 250);
    monitor_get_stats(m, &st);
    assert_int_equal(st.latency_capped, 0);
    assert_int_equal(st.latency_backoffs, 10);
    assert_int_equal(st.latency_cap, 500 * MiB); /* the ceiling: T */

    /* slow reads, but fewer than latency_min_reads (16) per interval: no
     * signal, no back-off */
    for (int k = 0; k < 100; k++) feed_reads(m, &now, 100.0 * MiB, k % 10 == 0 ? 1 : 0, 5000, PERIOD);
    monitor_get_stats(m, &st);
    assert_int_equal(st.latency_backoffs, 10);
    assert_int_equal(st.internal_bw, 390 * MiB);

    /* a sustained new level: the baseline (200 us) drifts up towards 500 us
     * with tau 30 s, so 500 us stops being "twice the baseline" after
     * 30 s * ln(300/250) = 5.5 s; then the cap recovers */
    uint64_t b0 = 0, last_backoff_s = 0;
    for (int k = 0; k < 1500; k++) {
        feed_reads(m, &now, 100.0 * MiB, 10, 500, PERIOD);
        monitor_get_stats(m, &st);
        if (st.latency_backoffs != b0) last_backoff_s = (uint64_t)k / 100;
        b0 = st.latency_backoffs;
        assert_true(st.internal_bw >= 50 * MiB);
    }
    assert_true(last_backoff_s >= 4 && last_backoff_s <= 6);
    assert_true(st.latency_baseline_ns > 250000 && st.latency_baseline_ns < 400000);
    assert_int_equal(st.internal_bw, 390 * MiB);
    monitor_free(m);

    /* a fixed target of 300 us: 250 us never backs off, 400 us does */
    now = 0;
    m = lat_new(0, 300, now);
    for (int k = 0; k < 100; k++) feed_reads(m, &now, 100.0 * MiB, 10, 250, PERIOD);
    monitor_get_stats(m, &st);
    assert_int_equal(st.latency_backoffs, 0);
    assert_int_equal(st.latency_target_ns, 300000);
    for (int k = 0; k < 100; k++) feed_reads(m, &now, 100.0 * MiB, 10, 400, PERIOD);
    monitor_get_stats(m, &st);
    assert_int_equal(st.latency_backoffs, 10);
    assert_int_equal(st.internal_bw, 50 * MiB);
    monitor_free(m);

    /* off (the default): the bandwidth law alone, no latency stats */
    now = 0;
    m = lat_new(0, 0, now);
    for (int k = 0; k < 200; k++) feed_reads(m, &now, 100.0 * MiB, 10, k < 100 ? 100 : 10000, PERIOD);
    monitor_get_stats(m, &st);
    assert_int_equal(st.internal_bw, 390 * MiB);
    assert_int_equal(st.latency_intervals, 0);
    assert_int_equal(st.latency_cap, 0);
    monitor_free(m);

    /* invalid settings */
    monitor_options o;
    monitor_options_default(&o);
    o.latency_factor_pct = 200;
    o.latency_backoff_pct = 100;
    assert_int_equal(monitor_create(&o, 0, &m), TKV_INVALID);
    o.latency_backoff_pct = 0;
    assert_int_equal(monitor_create(&o, 0, &m), TKV_INVALID);
    o.latency_backoff_pct = 70;
    o.latency_interval_us = 0;
    assert_int_equal(monitor_create(&o, 0, &m), TKV_INVALID);
}

static void test_monitor_floor_and_stats(void **state)
{
    (void)state;
    uint64_t s[4];
    rng_seed(s, 3);
    uint64_t now = 0;
    monitor *m = mon_new(5, now);
    uint64_t changes = 0;
    for (int k = 0; k < 2000; k++) {
        double bw = (1 + rng_unit(s)) * 400.0 * MiB; /* 0 .. 800 MiB/s */
        if ((k / 100) % 2) bw = 700.0 * MiB;         /* long periods above T */
        changes += (uint64_t)feed(m, &now, bw, PERIOD);
        uint64_t i = monitor_internal_bw(m);
        assert_true(i >= 50 * MiB);
        assert_true(i <= 490 * MiB);
    }
    monitor_stats st;
    monitor_get_stats(m, &st);
    assert_int_equal(st.samples, 2000);
    assert_int_equal(st.changes, changes);
    assert_int_equal(st.internal_bw, 50 * MiB); /* ended on a 700 MiB/s stretch */
    assert_int_equal(st.candidate, 50 * MiB);
    assert_int_equal(st.device_bw, 500 * MiB);
    assert_true(st.deadband >= 10 * MiB);

    /* a zero-length window is merged into the next one */
    uint64_t before = st.samples;
    assert_int_equal(monitor_sample(m, 123, now), 0);
    feed(m, &now, 0, PERIOD);
    monitor_get_stats(m, &st);
    assert_int_equal(st.samples, before + 1);
    assert_int_equal(st.client_raw, 12300); /* 123 bytes over 10 ms */

    /* a new T is published at the next sample even inside the deadband */
    for (int k = 0; k < 5; k++) feed(m, &now, 100.0 * MiB, PERIOD);
    assert_int_equal(monitor_internal_bw(m), 390 * MiB);
    monitor_set_device_bw(m, 505 * MiB);
    assert_int_equal(feed(m, &now, 100.0 * MiB, PERIOD), 1);
    assert_int_equal(monitor_internal_bw(m), 395 * MiB);

    monitor_options o;
    monitor_options_default(&o);
    monitor *bad = NULL;
    o.smooth_windows = 0;
    assert_int_equal(monitor_create(&o, 0, &bad), TKV_INVALID);
    monitor_options_default(&o);
    o.device_bw = 0;
    assert_int_equal(monitor_create(&o, 0, &bad), TKV_INVALID);
    monitor_free(NULL);
    monitor_free(m);
}

static void tick_count(void *arg, uint64_t now_us)
{
    (void)now_us;
    atomic_fetch_add((atomic_int *)arg, 1);
}

/* The optional ticker thread ticks on the real clock and stops promptly. */
static void test_monitor_thread(void **state)
{
    (void)state;
    atomic_int n = 0;
    monitor_thread *t = NULL;
    uint64_t start = sched_mono_us();
    assert_int_equal(monitor_thread_start(2000, tick_count, &n, &t), TKV_OK);
    sched_sleep_us(40000);
    uint64_t t0 = sched_mono_us();
    monitor_thread_stop(t);
    uint64_t stop_us = sched_mono_us() - t0;
    int ticks = atomic_load(&n);
    uint64_t ran = sched_mono_us() - start;
    print_message("ticker: %d ticks in %llu us at 2 ms; stop took %llu us\n", ticks, (unsigned long long)ran,
                  (unsigned long long)stop_us);
    assert_true(stop_us < 200000);
    assert_true(ticks >= 5 && (uint64_t)ticks <= ran / 2000 + 1);
    sched_sleep_us(5000);
    assert_int_equal(atomic_load(&n), ticks); /* no tick after stop */
    monitor_thread_stop(NULL);
    assert_int_equal(monitor_thread_start(0, tick_count, &n, &t), TKV_INVALID);
}

/* ---- tadapt: T from the observed throughput ---- */

/* A synthetic device for tadapt: each 1 s interval delivers `level` bytes/s
 * times (1 + noise * u), u uniform in [-1, 1) per interval (the hard case:
 * per-window noise averages out over an interval), spread over 100 windows
 * of 10 ms with +-20 % jitter each, with `queue` device calls in flight on
 * average. */
typedef struct tdev {
    uint64_t s[4];
    uint64_t now;
    int changes;
} tdev;

/* tdev_run -- `secs` seconds of the device; returns T at the end. */
static uint64_t tdev_run(tadapt *a, tdev *d, double level, double noise, double queue, int secs)
{
    for (int k = 0; k < secs; k++) {
        double lv = level * (1.0 + noise * rng_unit(d->s));
        for (int w = 0; w < 100; w++) {
            d->now += 10000;
            double jit = 1.0 + 0.2 * rng_unit(d->s);
            uint64_t bytes = (uint64_t)(lv * 0.01 * jit);
            uint64_t busy = (uint64_t)(queue * 10000 * 1000 * jit);
            d->changes += tadapt_sample(a, bytes, busy, d->now);
        }
    }
    return tadapt_t(a);
}

/* near -- |x - want| <= pct percent of want. */
static int near(uint64_t x, double want, double pct) { return fabs((double)x - want) <= want * pct / 100.0; }

/* T follows a device that gets slower, then faster, in as few moves as the
 * factor-2 step allows, and then stays put under +-5 % noise per interval;
 * a light load (not saturated) never lowers it; noise inside the dead zone
 * (+-8 %, and alternating 0.7 T / T intervals) never moves it; the bounds
 * and pinning hold; bad options are refused. */
static void test_tadapt(void **state)
{
    (void)state;
    tdev d = {.now = 1000000};
    rng_seed(d.s, 42);
    tadapt_options o;
    tadapt_options_default(&o, 400 * MiB);
    tadapt *a = NULL;
    assert_int_equal(tadapt_create(&o, d.now, &a), TKV_OK);
    /* steady at T, saturated, +-5 %: nothing moves */
    assert_int_equal(tdev_run(a, &d, 400.0 * MiB, 0.05, 1.5, 10), 400 * MiB);
    assert_int_equal(d.changes, 0);
    /* slower: 200 MiB/s, saturated. One move, within 4 s (3 intervals + the
     * one under way), to the upper envelope of what it delivered */
    uint64_t t = tdev_run(a, &d, 200.0 * MiB, 0.05, 1.5, 4);
    print_message("slower: T = %.1f MiB/s after 4 s, %d change(s)\n", (double)t / MiB, d.changes);
    assert_int_equal(d.changes, 1);
    assert_true(near(t, 200.0 * MiB, 6)); /* the highest interval of the run: within the +-5 % noise */
    t = tdev_run(a, &d, 200.0 * MiB, 0.05, 1.5, 30);
    assert_int_equal(d.changes, 1); /* no oscillation after */
    /* faster: 600 MiB/s. From ~200 the first move is capped at 2 T, the second
     * reaches the level; both within 8 s, then 30 s of quiet */
    d.changes = 0;
    t = tdev_run(a, &d, 600.0 * MiB, 0.05, 1.5, 8);
    print_message("faster: T = %.1f MiB/s after 8 s, %d change(s)\n", (double)t / MiB, d.changes);
    assert_int_equal(d.changes, 2);
    assert_true(near(t, 600.0 * MiB, 6));
    uint64_t before = t;
    t = tdev_run(a, &d, 600.0 * MiB, 0.05, 1.5, 30);
    assert_int_equal(d.changes, 2);
    assert_int_equal(t, before);
    /* a light load, not saturated: T is not lowered */
    assert_int_equal(tdev_run(a, &d, 50.0 * MiB, 0.05, 0.3, 20), before);
    /* noise inside the dead zone: +-8 % around T; then intervals alternating
     * between 0.7 T (saturated) and T: no run of 3 */
    assert_int_equal(tdev_run(a, &d, (double)before, 0.08, 1.5, 30), before);
    for (int i = 0; i < 10; i++) {
        tdev_run(a, &d, 0.7 * (double)before, 0, 1.5, 2);
        tdev_run(a, &d, (double)before, 0, 1.5, 1);
    }
    assert_int_equal(tadapt_t(a), before);
    assert_int_equal(d.changes, 2);
    tadapt_stats st;
    tadapt_get_stats(a, &st);
    assert_int_equal(st.raises, 2);
    assert_int_equal(st.lowers, 1);
    assert_true(st.intervals >= 150);
    assert_int_equal(st.t_min, 50 * MiB);
    assert_int_equal(st.t_max, 3200 * MiB);
    /* the lower bound: a device at 10 MiB/s takes T down to t_min, no lower */
    for (int i = 0; i < 10; i++) tdev_run(a, &d, 10.0 * MiB, 0, 2, 3);
    assert_int_equal(tadapt_t(a), 50 * MiB);
    tadapt_free(a);

    /* pinned: the same slow device leaves T alone; the statistics still see it */
    o.pinned = 1;
    assert_int_equal(tadapt_create(&o, d.now, &a), TKV_OK);
    d.changes = 0;
    assert_int_equal(tdev_run(a, &d, 100.0 * MiB, 0, 2, 10), 400 * MiB);
    assert_int_equal(d.changes, 0);
    tadapt_get_stats(a, &st);
    assert_true(st.pinned && near(st.delivered, 100.0 * MiB, 21) && st.queue > 1.5);
    tadapt_free(a);
    tadapt_free(NULL);

    /* refused */
    tadapt_options_default(&o, 0);
    assert_int_equal(tadapt_create(&o, 0, &a), TKV_INVALID);
    tadapt_options_default(&o, 100);
    o.t_min = 200;
    assert_int_equal(tadapt_create(&o, 0, &a), TKV_INVALID);
    tadapt_options_default(&o, 100);
    o.down_pct = 100;
    assert_int_equal(tadapt_create(&o, 0, &a), TKV_INVALID);
    tadapt_options_default(&o, 100);
    o.intervals = 0;
    assert_int_equal(tadapt_create(&o, 0, &a), TKV_INVALID);
}

/* ---- ratelimit ---- */

#define REFILL 5000u

static ratelimit *rl_new(sched_clock *c, uint64_t rate, uint64_t low_reserved)
{
    rl_options o;
    rl_options_default(&o);
    assert_int_equal(o.refill_us, REFILL);
    o.rate = rate;
    o.low_reserved = low_reserved;
    ratelimit *rl = NULL;
    assert_int_equal(rl_create(&o, c, &rl), TKV_OK);
    return rl;
}

/* A simulated requester: wants `left` bytes, asks through its ticket. */
typedef struct sim_req {
    rl_req t;
    rl_prio prio;
    uint64_t left, got, max_piece;
    int infinite;
} sim_req;

/* sim_poll -- drives one requester at time now: collects grants and asks
 * again until it has to wait (or is done). */
static void sim_poll(ratelimit *rl, sim_req *r, uint64_t now)
{
    while (r->infinite || r->left > 0) {
        uint64_t until = 0;
        int64_t g = rl_try_acquire(rl, &r->t, r->prio, r->infinite ? 1 * MiB : r->left, now, &until);
        assert_true(g >= 0);
        if (g == 0) {
            assert_true(until > now);
            return;
        }
        if ((uint64_t)g > r->max_piece) r->max_piece = (uint64_t)g;
        r->got += (uint64_t)g;
        if (!r->infinite) r->left -= (uint64_t)g;
    }
}

/* drain -- empties the bucket at time now (a HIGH grab of one burst). */
static void drain(ratelimit *rl, uint64_t now)
{
    rl_req t = RL_REQ_INIT;
    int64_t g = rl_try_acquire(rl, &t, RL_HIGH, rl_burst(rl), now, NULL);
    assert_int_equal(g, (int64_t)rl_burst(rl));
}

/* Rate 0 is unlimited: requests of any size are granted in full at once, and
 * switching to 0 grants the queued ones in full. */
static void test_rl_unlimited(void **state)
{
    (void)state;
    sched_clock c;
    sched_clock_init_fake(&c, 1000000);
    ratelimit *rl = rl_new(&c, 0, 0);
    rl_req t = RL_REQ_INIT;
    assert_int_equal(rl_try_acquire(rl, &t, RL_LOW, 5000 * MiB, 1000000, NULL), (int64_t)(5000 * MiB));
    assert_int_equal(rl_request(rl, RL_HIGH, 1ull << 40, NULL), TKV_OK);
    assert_int_equal(rl_burst(rl), 0);

    rl_set_rate(rl, 1 * MiB);
    drain(rl, 1000000);
    sim_req a = {.t = RL_REQ_INIT, .prio = RL_LOW, .left = 100 * MiB};
    sim_poll(rl, &a, 1000000);
    assert_int_equal(a.got, 0);
    rl_set_rate(rl, 0);
    sim_poll(rl, &a, 1000001);
    assert_int_equal(a.got, 100 * MiB);
    rl_stats st;
    rl_get_stats(rl, &st);
    assert_int_equal(st.waits[RL_LOW], 1);
    assert_int_equal(st.queued[RL_LOW], 0);
    assert_int_equal(st.granted[RL_LOW], 5100 * MiB);
    rl_free(rl);
    rl_free(NULL);
}

/* poll_all -- polls every requester at time now. */
static void poll_all(ratelimit *rl, sim_req **rs, int n, uint64_t now)
{
    for (int i = 0; i < n; i++) sim_poll(rl, rs[i], now);
}

/* run -- polls every requester at every refill time in [*now, *now + us);
 * *now ends at *now + us. */
static void run(ratelimit *rl, sim_req **rs, int n, uint64_t *now, uint64_t us)
{
    uint64_t end = *now + us;
    for (; *now < end; *now += REFILL) poll_all(rl, rs, n, *now);
}

/* The granted bandwidth follows the rate, and a rate change takes effect at
 * the next refill; no piece exceeds one burst. */
static void test_rl_rate_and_change(void **state)
{
    (void)state;
    uint64_t now = 1000000;
    sched_clock c;
    sched_clock_init_fake(&c, now);
    ratelimit *rl = rl_new(&c, 10 * MiB, 0);
    assert_int_equal(rl_burst(rl), (10 * MiB * REFILL + 999999) / 1000000);
    sim_req a = {.t = RL_REQ_INIT, .prio = RL_HIGH, .infinite = 1};
    sim_req *rs[] = {&a};
    run(rl, rs, 1, &now, 1000000);
    print_message("1 s at 10 MiB/s: %llu bytes\n", (unsigned long long)a.got);
    assert_true(absdiff(a.got, 10 * MiB) <= rl_burst(rl) + 1);
    assert_true(a.max_piece <= rl_burst(rl));

    sched_clock_set_us(&c, now);
    rl_set_rate(rl, 40 * MiB);
    assert_int_equal(rl_get_rate(rl), 40 * MiB);
    uint64_t before = a.got;
    run(rl, rs, 1, &now, 1000000);
    print_message("1 s at 40 MiB/s: %llu bytes\n", (unsigned long long)(a.got - before));
    assert_true(absdiff(a.got - before, 40 * MiB) <= 2 * rl_burst(rl));
    assert_true(a.max_piece <= rl_burst(rl));

    sched_clock_set_us(&c, now);
    uint64_t old_burst = rl_burst(rl);
    rl_set_rate(rl, 2 * MiB); /* the refill due at `now` is still at 40 MiB/s */
    before = a.got;
    run(rl, rs, 1, &now, 1000000);
    print_message("1 s at 2 MiB/s: %llu bytes\n", (unsigned long long)(a.got - before));
    assert_true(absdiff(a.got - before, 2 * MiB + old_burst) <= 2 * rl_burst(rl) + 1);
    rl_withdraw(rl, &a.t);
    rl_free(rl);
}

/* When both wait, HIGH is served before LOW (no reserve): LOW gets nothing
 * until HIGH's demand is met, then everything. */
static void test_rl_high_before_low(void **state)
{
    (void)state;
    uint64_t now = 1000000;
    sched_clock c;
    sched_clock_init_fake(&c, now);
    ratelimit *rl = rl_new(&c, 10 * MiB, 0);
    uint64_t b = rl_burst(rl);
    drain(rl, now);
    sim_req lo = {.t = RL_REQ_INIT, .prio = RL_LOW, .left = 3 * b};
    sim_req hi = {.t = RL_REQ_INIT, .prio = RL_HIGH, .left = 3 * b};
    sim_poll(rl, &lo, now); /* LOW queued first */
    sim_poll(rl, &hi, now);
    assert_int_equal(lo.got + hi.got, 0);
    sim_req *rs[] = {&lo, &hi};
    int refills = 0;
    while (hi.left > 0) {
        now += REFILL;
        poll_all(rl, rs, 2, now);
        refills++;
        if (hi.left > 0) assert_int_equal(lo.got, 0);
    }
    assert_true(refills <= 4);
    assert_true(lo.got < b); /* at most the leftover of HIGH's last refill */
    now += 3 * REFILL;
    poll_all(rl, rs, 2, now);
    assert_true(lo.got >= 2 * b);

    /* a late poller keeps its priority: HIGH polls only every 3 refills, yet
     * LOW (queued the whole time) gets nothing while HIGH still wants bytes */
    hi.left = 6 * b;
    lo.left = 100 * b;
    sim_poll(rl, &hi, now); /* may take what is in the bucket, then queues */
    sim_poll(rl, &lo, now);
    lo.got = 0;
    for (int i = 0; i < 3; i++) {
        now += 3 * REFILL;
        sim_poll(rl, &hi, now);
        sim_poll(rl, &lo, now);
        if (hi.left > 0) assert_int_equal(lo.got, 0);
    }
    assert_int_equal(hi.left, 0);

    rl_stats st;
    rl_get_stats(rl, &st);
    assert_true(st.waits[RL_LOW] >= 1 && st.waits[RL_HIGH] >= 1);
    assert_true(st.wait_us[RL_LOW] > st.wait_us[RL_HIGH]);
    rl_withdraw(rl, &lo.t);
    rl_free(rl);
}

/* Under an endless HIGH peak LOW still gets its reserved share, HIGH the
 * rest; with no reserve LOW starves; the reserve is capped at rate/2. */
static void test_rl_low_reserved(void **state)
{
    (void)state;
    for (int variant = 0; variant < 3; variant++) {
        uint64_t now = 1000000;
        sched_clock c;
        sched_clock_init_fake(&c, now);
        uint64_t rate = variant == 2 ? 4 * MiB : 100 * MiB;
        uint64_t res = variant == 1 ? 0 : 4 * MiB;
        ratelimit *rl = rl_new(&c, rate, res);
        drain(rl, now);
        sim_req h1 = {.t = RL_REQ_INIT, .prio = RL_HIGH, .infinite = 1};
        sim_req h2 = {.t = RL_REQ_INIT, .prio = RL_HIGH, .infinite = 1};
        sim_req lo = {.t = RL_REQ_INIT, .prio = RL_LOW, .infinite = 1};
        sim_req *rs[] = {&h1, &lo, &h2};
        run(rl, rs, 3, &now, 2000000); /* 2 s */
        uint64_t high = h1.got + h2.got;
        print_message("rate %llu MiB/s reserve %llu MiB/s: high %llu low %llu\n", (unsigned long long)(rate / MiB),
                      (unsigned long long)(res / MiB), (unsigned long long)high, (unsigned long long)lo.got);
        uint64_t want_low = variant == 0 ? 8 * MiB : variant == 1 ? 0 : 4 * MiB; /* 2 s of min(res, rate/2) */
        assert_true(absdiff(lo.got, want_low) <= want_low / 50 + rl_burst(rl));
        assert_true(absdiff(high + lo.got, 2 * rate) <= 2 * rl_burst(rl));
        rl_stats st;
        rl_get_stats(rl, &st);
        assert_int_equal(st.low_reserved, variant == 0 ? 4 * MiB : variant == 1 ? 0 : 2 * MiB);
        for (int i = 0; i < 3; i++) rl_withdraw(rl, &rs[i]->t);
        rl_free(rl);
    }
}

/* rl_new3 -- a limiter with both reserves. */
static ratelimit *rl_new3(sched_clock *c, uint64_t rate, uint64_t low_reserved, uint64_t mid_reserved)
{
    rl_options o;
    rl_options_default(&o);
    assert_int_equal(o.mid_reserved, 0); /* strict by default */
    o.rate = rate;
    o.low_reserved = low_reserved;
    o.mid_reserved = mid_reserved;
    ratelimit *rl = NULL;
    assert_int_equal(rl_create(&o, c, &rl), TKV_OK);
    return rl;
}

/* Three priorities without reserves: with all three waiting, MID gets
 * nothing while HIGH still wants bytes, LOW nothing while HIGH or MID does;
 * queued in the reverse order (LOW, MID, HIGH), and also when HIGH and MID
 * poll late. Then each finishes in priority order. */
static void test_rl_three_priorities(void **state)
{
    (void)state;
    for (int late = 0; late < 2; late++) {
        uint64_t now = 1000000;
        sched_clock c;
        sched_clock_init_fake(&c, now);
        ratelimit *rl = rl_new3(&c, 10 * MiB, 0, 0);
        uint64_t b = rl_burst(rl);
        drain(rl, now);
        sim_req lo = {.t = RL_REQ_INIT, .prio = RL_LOW, .left = 4 * b};
        sim_req mid = {.t = RL_REQ_INIT, .prio = RL_MID, .left = 4 * b};
        sim_req hi = {.t = RL_REQ_INIT, .prio = RL_HIGH, .left = 4 * b};
        sim_poll(rl, &lo, now);
        sim_poll(rl, &mid, now);
        sim_poll(rl, &hi, now);
        assert_int_equal(lo.got + mid.got + hi.got, 0);
        uint64_t step = late ? 3 * REFILL : REFILL; /* late: HIGH and MID poll every 3rd refill only */
        int hi_done = -1, mid_done = -1, lo_done = -1;
        for (int i = 0; i < 200 && (lo.left || mid.left || hi.left); i++) {
            now += step;
            sim_poll(rl, &hi, now);
            sim_poll(rl, &mid, now);
            sim_poll(rl, &lo, now);
            if (hi.left > 0) assert_int_equal(mid.got + lo.got, 0);
            if (mid.left > 0) assert_int_equal(lo.got, 0);
            if (!hi.left && hi_done < 0) hi_done = i;
            if (!mid.left && mid_done < 0) mid_done = i;
            if (!lo.left && lo_done < 0) lo_done = i;
        }
        print_message("late=%d: HIGH done at step %d, MID at %d, LOW at %d\n", late, hi_done, mid_done, lo_done);
        assert_true(hi_done >= 0 && hi_done <= mid_done && mid_done <= lo_done);
        assert_true(hi_done < lo_done);
        rl_stats st;
        rl_get_stats(rl, &st);
        for (int p = 0; p < RL_NPRIO; p++) assert_int_equal(st.granted[p], (p == RL_HIGH ? b : 0) + 4 * b);
        assert_true(st.wait_us[RL_LOW] > st.wait_us[RL_MID] && st.wait_us[RL_MID] > st.wait_us[RL_HIGH]);
        assert_int_equal(st.mid_reserved, 0);
        rl_free(rl);
    }
    /* a bad priority is refused */
    sched_clock c;
    sched_clock_init_fake(&c, 1);
    ratelimit *rl = rl_new3(&c, 10 * MiB, 0, 0);
    rl_req t = RL_REQ_INIT;
    assert_int_equal(rl_try_acquire(rl, &t, (rl_prio)RL_NPRIO, 1, 1, NULL), TKV_INVALID);
    assert_int_equal(rl_request(rl, (rl_prio)RL_NPRIO, 1, NULL), TKV_INVALID);
    rl_free(rl);
}

/* The reserves under endless demand, 2 s each, for (rate, low reserve, mid
 * reserve, who wants tokens):
 *   - an endless HIGH peak with MID and LOW waiting: LOW gets its reserve,
 *     MID its reserve, HIGH the rest -- nobody starves;
 *   - no MID reserve: MID starves under the HIGH peak (the negative control);
 *   - the caps: the reserves together take at most rate/2 (LOW's cap first);
 *   - no HIGH demand: MID takes everything LOW's reserve leaves (a reserve
 *     is a floor, not a ceiling), and LOW still gets its reserve under an
 *     endless MID peak. */
static void test_rl_mid_reserved(void **state)
{
    (void)state;
    static const struct {
        uint64_t rate, lres, mres;
        int high;                     /* HIGH wants tokens too */
        uint64_t want_low, want_mid;  /* per second; HIGH gets the rest */
        uint64_t eff_low, eff_mid;
    } cs[] = {
        {100 * MiB, 4 * MiB, 8 * MiB, 1, 4 * MiB, 8 * MiB, 4 * MiB, 8 * MiB},
        {100 * MiB, 4 * MiB, 0, 1, 4 * MiB, 0, 4 * MiB, 0},
        {12 * MiB, 4 * MiB, 4 * MiB, 1, 4 * MiB, 2 * MiB, 4 * MiB, 2 * MiB},
        {8 * MiB, 8 * MiB, 4 * MiB, 1, 4 * MiB, 0, 4 * MiB, 0},
        {100 * MiB, 4 * MiB, 8 * MiB, 0, 4 * MiB, 96 * MiB, 4 * MiB, 8 * MiB},
    };
    for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
        uint64_t now = 1000000;
        sched_clock c;
        sched_clock_init_fake(&c, now);
        ratelimit *rl = rl_new3(&c, cs[k].rate, cs[k].lres, cs[k].mres);
        drain(rl, now);
        sim_req hi = {.t = RL_REQ_INIT, .prio = RL_HIGH, .infinite = 1};
        sim_req mid = {.t = RL_REQ_INIT, .prio = RL_MID, .infinite = 1};
        sim_req lo = {.t = RL_REQ_INIT, .prio = RL_LOW, .infinite = 1};
        sim_req *rs[] = {&lo, &mid, &hi};
        run(rl, rs, cs[k].high ? 3 : 2, &now, 2000000);
        print_message("rate %llu, reserves low %llu mid %llu, high %s: high %llu mid %llu low %llu\n",
                      (unsigned long long)(cs[k].rate / MiB), (unsigned long long)(cs[k].lres / MiB),
                      (unsigned long long)(cs[k].mres / MiB), cs[k].high ? "on" : "off", (unsigned long long)hi.got,
                      (unsigned long long)mid.got, (unsigned long long)lo.got);
        uint64_t b = rl_burst(rl);
        assert_true(absdiff(lo.got, 2 * cs[k].want_low) <= 2 * cs[k].want_low / 50 + b);
        assert_true(absdiff(mid.got, 2 * cs[k].want_mid) <= 2 * cs[k].want_mid / 50 + b);
        assert_true(absdiff(hi.got + mid.got + lo.got, 2 * cs[k].rate) <= 2 * b);
        if (cs[k].high) assert_true(hi.got + 2 * b >= cs[k].rate); /* HIGH keeps at least half (2 s x rate/2) */
        rl_stats st;
        rl_get_stats(rl, &st);
        assert_int_equal(st.low_reserved, cs[k].eff_low);
        assert_int_equal(st.mid_reserved, cs[k].eff_mid);
        for (int i = 0; i < 3; i++) rl_withdraw(rl, &rs[i]->t);
        rl_free(rl);
    }
    /* run time: a MID reserve set later applies from the next refill */
    uint64_t now = 1000000;
    sched_clock c;
    sched_clock_init_fake(&c, now);
    ratelimit *rl = rl_new3(&c, 100 * MiB, 0, 0);
    drain(rl, now);
    sim_req hi = {.t = RL_REQ_INIT, .prio = RL_HIGH, .infinite = 1};
    sim_req mid = {.t = RL_REQ_INIT, .prio = RL_MID, .infinite = 1};
    sim_req *rs[] = {&mid, &hi};
    run(rl, rs, 2, &now, 1000000);
    assert_int_equal(mid.got, 0);
    rl_set_mid_reserved(rl, 10 * MiB);
    run(rl, rs, 2, &now, 1000000);
    assert_true(absdiff(mid.got, 10 * MiB) <= 10 * MiB / 50 + rl_burst(rl));
    for (int i = 0; i < 2; i++) rl_withdraw(rl, &rs[i]->t);
    rl_free(rl);
}

/* A request larger than one refill is granted in pieces of at most a burst
 * and does not hold the queue: a small request queued behind it is served at
 * most one refill after the large one's first piece. */
static void test_rl_split_large(void **state)
{
    (void)state;
    for (int prio = 0; prio < 2; prio++) {
        uint64_t now = 1000000;
        sched_clock c;
        sched_clock_init_fake(&c, now);
        ratelimit *rl = rl_new(&c, 10 * MiB, 0);
        uint64_t b = rl_burst(rl);
        drain(rl, now);
        sim_req big = {.t = RL_REQ_INIT, .prio = (rl_prio)prio, .left = 10 * MiB};
        sim_req small = {.t = RL_REQ_INIT, .prio = (rl_prio)prio, .left = 4 * KiB};
        sim_poll(rl, &big, now);
        sim_poll(rl, &small, now + 1);
        sim_req *rs[] = {&big, &small};
        now += REFILL;
        poll_all(rl, rs, 2, now); /* refill 1: the big one's first piece */
        assert_true(big.got >= b - 1 && big.got <= b);
        assert_int_equal(small.got, 0);
        now += REFILL;
        poll_all(rl, rs, 2, now); /* refill 2: the small one, one refill later */
        assert_int_equal(small.left, 0);
        while (big.left > 0) run(rl, rs, 2, &now, REFILL);
        assert_true(big.max_piece <= b);
        rl_stats st;
        rl_get_stats(rl, &st);
        assert_true(st.grants[prio] >= 10 * MiB / b);
        rl_free(rl);
    }
}

typedef struct waiter_arg {
    ratelimit *rl;
    rl_prio prio;
    uint64_t n;
    atomic_int *flag;
    int rc;
    atomic_int done;
} waiter_arg;

static void *waiter_main(void *p)
{
    waiter_arg *a = p;
    a->rc = rl_request(a->rl, a->prio, a->n, a->flag);
    atomic_store(&a->done, 1);
    return NULL;
}

/* wait_done -- waits (real time, at most 2 s) for a waiter to return. */
static int wait_done(waiter_arg *a)
{
    for (int i = 0; i < 2000 && !atomic_load(&a->done); i++) sched_sleep_us(1000);
    return atomic_load(&a->done);
}

/* rl_cancel wakes the cancelled waiter at once (not the others), and
 * rl_shutdown wakes everyone; both return TKV_BUSY. Real threads, real
 * clock, a rate so low the requests could never finish. */
static void test_rl_cancel_shutdown(void **state)
{
    (void)state;
    ratelimit *rl = rl_new(NULL, RL_MIN_RATE, 0);
    atomic_int f1 = 0, f2 = 0;
    waiter_arg a1 = {.rl = rl, .prio = RL_LOW, .n = 100 * MiB, .flag = &f1};
    waiter_arg a2 = {.rl = rl, .prio = RL_HIGH, .n = 100 * MiB, .flag = &f2};
    pthread_t t1, t2;
    assert_int_equal(pthread_create(&t1, NULL, waiter_main, &a1), 0);
    assert_int_equal(pthread_create(&t2, NULL, waiter_main, &a2), 0);
    sched_sleep_us(20000);
    assert_false(atomic_load(&a1.done));
    uint64_t t0 = sched_mono_us();
    rl_cancel(rl, &f1);
    assert_true(wait_done(&a1));
    print_message("cancel woke the waiter in %llu us\n", (unsigned long long)(sched_mono_us() - t0));
    assert_true(sched_mono_us() - t0 < 500000);
    assert_int_equal(a1.rc, TKV_BUSY);
    sched_sleep_us(10000);
    assert_false(atomic_load(&a2.done));
    rl_shutdown(rl);
    assert_true(wait_done(&a2));
    assert_int_equal(a2.rc, TKV_BUSY);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    assert_int_equal(rl_request(rl, RL_HIGH, 1, NULL), TKV_BUSY);
    rl_req t = RL_REQ_INIT;
    assert_int_equal(rl_try_acquire(rl, &t, RL_LOW, 1, sched_mono_us(), NULL), TKV_BUSY);
    rl_stats st;
    rl_get_stats(rl, &st);
    assert_int_equal(st.cancelled, 3);
    assert_int_equal(st.queued[RL_HIGH] + st.queued[RL_LOW], 0);
    rl_free(rl);
}

/* The blocking rl_request: on a fake clock it completes exactly when the
 * test has advanced the clock far enough; on the real clock it takes about
 * n / rate. */
static void test_rl_request_blocking(void **state)
{
    (void)state;
    sched_clock c;
    sched_clock_init_fake(&c, 1000000);
    ratelimit *rl = rl_new(&c, 1000000, 0);
    uint64_t b = rl_burst(rl);
    assert_int_equal(b, 5000);
    drain(rl, 1000000);
    waiter_arg a = {.rl = rl, .prio = RL_LOW, .n = 4 * b};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, waiter_main, &a), 0);
    rl_stats st;
    do { /* from the moment it is queued its ticket stays queued (pieces
          * accumulate in it), so each refill below gives it exactly 5000 */
        sched_sleep_us(500);
        rl_get_stats(rl, &st);
    } while (st.queued[RL_LOW] == 0);
    for (int i = 0; i < 3; i++) {
        sched_sleep_us(3000);
        assert_false(atomic_load(&a.done));
        sched_clock_advance_us(&c, REFILL);
    }
    sched_sleep_us(3000);
    assert_false(atomic_load(&a.done)); /* 3 refills: 3 bursts of 4 */
    sched_clock_advance_us(&c, REFILL);
    assert_true(wait_done(&a));
    assert_int_equal(a.rc, TKV_OK);
    pthread_join(th, NULL);
    rl_free(rl);

    rl = rl_new(NULL, 20 * MiB, 0);
    uint64_t t0 = sched_mono_us();
    assert_int_equal(rl_request(rl, RL_HIGH, 2 * MiB, NULL), TKV_OK);
    uint64_t el = sched_mono_us() - t0;
    print_message("2 MiB at 20 MiB/s took %llu us\n", (unsigned long long)el);
    assert_true(el >= 90000 && el < 1000000); /* 100 ms less the initial burst */
    rl_free(rl);

    rl_options o;
    rl_options_default(&o);
    o.refill_us = 20000;
    assert_int_equal(rl_create(&o, NULL, &rl), TKV_INVALID);
}

/* ---- wctl ---- */

static wctl *wctl_new(wctl_mode mode)
{
    wctl_options o;
    wctl_options_default(&o);
    o.mode = mode;
    wctl *w = NULL;
    assert_int_equal(wctl_create(&o, &w), TKV_OK);
    return w;
}

typedef struct pace_result {
    uint64_t total_us, steps, max_step;
    wctl_state first_state;
} pace_result;

/* pace -- one write through the ticket protocol on fake time *now: sums
 * the delays (advancing *now by each) until the write may proceed. */
static pace_result pace(wctl *w, const wctl_input *in, uint64_t bytes, uint64_t *now)
{
    pace_result r = {0};
    wctl_write t = WCTL_WRITE_INIT;
    uint64_t d = wctl_delay_us(w, &t, in, bytes, *now);
    r.first_state = t.state;
    while (d > 0) {
        assert_true(t.state != WCTL_STOP);
        r.total_us += d;
        r.steps++;
        if (d > r.max_step) r.max_step = d;
        *now += d;
        d = wctl_delay_us(w, &t, in, 0, *now);
    }
    return r;
}

/* pace_many -- n writes of `bytes` back to back; returns the total delay and
 * checks every step is at most 1 ms. */
static uint64_t pace_many(wctl *w, const wctl_input *in, uint64_t n, uint64_t bytes, uint64_t *now)
{
    uint64_t total = 0;
    for (uint64_t i = 0; i < n; i++) {
        pace_result r = pace(w, in, bytes, now);
        assert_true(r.max_step <= 1000);
        total += r.total_us;
    }
    return total;
}

static void test_wctl_classify(void **state)
{
    (void)state;
    wctl *w = wctl_new(WCTL_PRL);
    wctl_input in = {.mutable_left = 4, .max_memtables = 4, .container_fill = 0.5};
    assert_int_equal(wctl_classify(w, &in), WCTL_NORMAL);
    in.mutable_left = 2;
    assert_int_equal(wctl_classify(w, &in), WCTL_NORMAL);
    in.mutable_left = 1;
    assert_int_equal(wctl_classify(w, &in), WCTL_SLOWDOWN);
    in.mutable_left = 0;
    assert_int_equal(wctl_classify(w, &in), WCTL_STOP);
    in.container_fill = 1.0;
    assert_int_equal(wctl_classify(w, &in), WCTL_STOP);
    in.mutable_left = 3;
    in.container_fill = 0.9;
    assert_int_equal(wctl_classify(w, &in), WCTL_SLOWDOWN);
    in.container_fill = 0.89;
    assert_int_equal(wctl_classify(w, &in), WCTL_NORMAL);
    wctl_free(w);
    wctl_free(NULL);

    wctl_options o;
    wctl_options_default(&o);
    o.max_step_us = 2000;
    assert_int_equal(wctl_create(&o, &w), TKV_INVALID);
    wctl_options_default(&o);
    o.mode = (wctl_mode)7;
    assert_int_equal(wctl_create(&o, &w), TKV_INVALID);
}

/* NORMAL never delays, in any mode. */
static void test_wctl_normal(void **state)
{
    (void)state;
    for (int mode = 0; mode < 3; mode++) {
        wctl *w = wctl_new((wctl_mode)mode);
        wctl_flush_sample(w, 64 * MiB, 1000000);
        wctl_input in = {.mutable_left = 2, .max_memtables = 2};
        uint64_t now = 0;
        assert_int_equal(pace_many(w, &in, 10000, 64 * KiB, &now), 0);
        wctl_stats st;
        wctl_get_stats(w, &st);
        assert_int_equal(st.writes, 10000);
        assert_int_equal(st.stalled_writes + st.stopped_writes + st.stall_us, 0);
        assert_int_equal(st.state, WCTL_NORMAL);
        wctl_free(w);
    }
}

/* PRL in SLOWDOWN paces at the minimum of the last 8 flush samples: N bytes
 * take N / min within 10%, for tiny, small and large writes, in steps of at
 * most 1 ms; and the counters add up. */
static void test_wctl_prl_pacing(void **state)
{
    (void)state;
    wctl *w = wctl_new(WCTL_PRL);
    /* 9 samples: the 5 MiB/s one is the oldest and falls out of the 8 kept */
    assert_int_equal(wctl_flush_sample(w, 5 * MiB, 1000000), 1);
    const uint64_t bw[] = {100, 40, 80, 120, 90, 60, 150, 70};
    for (int i = 0; i < 8; i++) assert_int_equal(wctl_flush_sample(w, bw[i] * MiB, 1000000), 1);
    assert_int_equal(wctl_flush_sample(w, 4 * KiB, 1), 0); /* too small to be a sample */
    assert_int_equal(wctl_pace_rate(w), 40 * MiB);
    wctl_input in = {.mutable_left = 1, .max_memtables = 2};
    uint64_t now = 1000000, sum = 0;
    const uint64_t sizes[] = {100, 4 * KiB, 1 * MiB};
    const uint64_t counts[] = {83886, 2048, 8};
    for (int i = 0; i < 3; i++) {
        uint64_t n = counts[i] * sizes[i];
        uint64_t total = pace_many(w, &in, counts[i], sizes[i], &now);
        double want = (double)n * 1e6 / (double)(40 * MiB);
        print_message("PRL: %llu writes of %llu B: %llu us (ideal %.0f)\n", (unsigned long long)counts[i],
                      (unsigned long long)sizes[i], (unsigned long long)total, want);
        assert_true((double)total >= 0.9 * want && (double)total <= 1.1 * want);
        sum += total;
        now += 100000; /* a pause between the series */
        in.mutable_left = 2;
        pace(w, &in, 1, &now); /* back to NORMAL, ends the episode */
        in.mutable_left = 1;
    }
    wctl_stats st;
    wctl_get_stats(w, &st);
    assert_int_equal(st.stall_us, sum);
    assert_int_equal(st.writes, 83886 + 2048 + 8 + 3);
    /* every write that slept paid at least the 2 ms step (W4), and all 1 MiB
     * writes (25 ms each) slept */
    assert_true(st.stalled_writes >= 8 && st.stalled_writes <= sum / 2000);
    assert_int_equal(st.stopped_writes, 0);
    assert_int_equal(st.nsamples, 8);
    assert_int_equal(st.samples_total, 9);
    assert_int_equal(st.min_sample, 40 * MiB);

    /* pace_margin: the pace is that much under the slowest sample */
    wctl_options mo;
    wctl_options_default(&mo);
    mo.pace_margin = 0.125;
    wctl *wm;
    assert_int_equal(wctl_create(&mo, &wm), TKV_OK);
    for (int i = 0; i < 8; i++) wctl_flush_sample(wm, bw[i] * MiB, 1000000);
    assert_int_equal(wctl_pace_rate(wm), 35 * MiB);
    wctl_free(wm);
    mo.pace_margin = 0.6;
    assert_int_equal(wctl_create(&mo, &wm), TKV_INVALID);

    /* with no samples yet PRL paces at the conservative 16 MiB/s */
    wctl *w2 = wctl_new(WCTL_PRL);
    assert_int_equal(wctl_pace_rate(w2), 16 * MiB);
    uint64_t t = pace_many(w2, &in, 1024, 4 * KiB, &now);
    assert_true(t >= 225000 && t <= 275000); /* 4 MiB at 16 MiB/s = 250 ms */
    wctl_free(w2);
    wctl_free(w);
}

/* The step (W4): with one writer a write sleeps only once it owes 2 ms and
 * then pays all it owes; with n other writes queued behind it the step is
 * 2 ms x (n + 1), at most 8 ms; the total is bytes / rate whatever the step;
 * a min_step_us of 0 sleeps every debt; out-of-range steps are refused. */
static void test_wctl_step(void **state)
{
    (void)state;
    const unsigned queued[] = {0, 1, 3, 7};
    const uint64_t steps[] = {2000, 4000, 8000, 8000};
    for (int q = 0; q < 4; q++) {
        wctl *w = wctl_new(WCTL_PRL);
        for (int i = 0; i < 8; i++) wctl_flush_sample(w, 40 * MiB, 1000000);
        wctl_input in = {.mutable_left = 1, .max_memtables = 2, .queued = queued[q]};
        uint64_t step = steps[q], now = 1000000, total = 0, slept = 0, carried = 0;
        for (int i = 0; i < 40960; i++) { /* 40 MiB of 1 KiB writes: 1 s at 40 MiB/s */
            pace_result r = pace(w, &in, KiB, &now);
            if (r.total_us) {
                assert_true(r.total_us >= step && r.total_us < step + 100); /* >= the step, pays it all */
                assert_true(r.max_step <= 1000);
                slept++;
            } else {
                carried++;
            }
            total += r.total_us;
        }
        print_message("queued %u: %llu of 40960 writes slept, %llu us\n", queued[q], (unsigned long long)slept,
                      (unsigned long long)total);
        assert_true(total >= 900000 && total <= 1100000);
        assert_true(slept >= 1000000 / (step + 100) && slept <= 1000000 / step + 1);
        assert_true(carried > slept);
        wctl_free(w);
    }
    /* min_step_us 0: every write sleeps what it owes (a 1 KiB write at 40 MiB/s: 24.4 us) */
    wctl_options o;
    wctl_options_default(&o);
    o.min_step_us = 0;
    wctl *w;
    assert_int_equal(wctl_create(&o, &w), TKV_OK);
    for (int i = 0; i < 8; i++) wctl_flush_sample(w, 40 * MiB, 1000000);
    wctl_input in = {.mutable_left = 1, .max_memtables = 2};
    uint64_t now = 1000000;
    pace(w, &in, KiB, &now); /* the episode's first write starts vt at now */
    for (int i = 0; i < 100; i++) {
        pace_result r = pace(w, &in, KiB, &now);
        assert_true(r.total_us >= 23 && r.total_us <= 25);
    }
    wctl_free(w);
    o.min_step_us = 100001;
    assert_int_equal(wctl_create(&o, &w), TKV_INVALID);
    o.min_step_us = 100000;
    assert_int_equal(wctl_create(&o, &w), TKV_OK);
    wctl_free(w);
}

/* STOP when every memtable is full, in every mode: the write waits in steps
 * of at most 1 ms, counts once as stopped however long it waits, and
 * proceeds (paced) once a flush frees a memtable. */
static void test_wctl_stop(void **state)
{
    (void)state;
    for (int mode = 0; mode < 3; mode++) {
        wctl *w = wctl_new((wctl_mode)mode);
        wctl_flush_sample(w, 64 * MiB, 1000000);
        wctl_input in = {.mutable_left = 0, .max_memtables = 2};
        uint64_t now = 0, waited = 0;
        wctl_write t = WCTL_WRITE_INIT;
        uint64_t d = wctl_delay_us(w, &t, &in, 256 * KiB, now);
        for (int i = 0; i < 50; i++) {
            assert_int_equal(t.state, WCTL_STOP);
            assert_true(d > 0 && d <= 1000);
            waited += d;
            now += d;
            d = wctl_delay_us(w, &t, &in, 0, now);
        }
        in.mutable_left = 1; /* the flush freed one memtable */
        uint64_t paced = 0;
        while (d > 0) {
            waited += d;
            now += d;
            d = wctl_delay_us(w, &t, &in, 0, now);
            if (d && t.state == WCTL_SLOWDOWN) paced += d;
        }
        wctl_stats st;
        wctl_get_stats(w, &st);
        assert_int_equal(st.writes, 1);
        assert_int_equal(st.stopped_writes, 1);
        assert_int_equal(st.stall_us, waited);
        if (mode == WCTL_OFF) assert_int_equal(paced, 0);
        else assert_true(paced > 0); /* 256 KiB at 16 or 64 MiB/s: 16 or 4 ms, over the 2 ms step */
        assert_int_equal(st.stalled_writes, mode == WCTL_OFF ? 0 : 1);
        wctl_free(w);
    }
}

/* The three modes in SLOWDOWN with a fast flush (200 MiB/s): PRL paces at
 * the flush rate, CLASSIC at its fixed 16 MiB/s whatever the flush does,
 * OFF not at all. Near-full container triggers the same. */
static void test_wctl_modes(void **state)
{
    (void)state;
    const double want[] = {8.0 / 200 * 1e6, 8.0 / 16 * 1e6, 0};
    for (int mode = 0; mode < 3; mode++) {
        wctl *w = wctl_new((wctl_mode)mode);
        for (int i = 0; i < 8; i++) wctl_flush_sample(w, 200 * MiB, 1000000);
        wctl_input in = {.mutable_left = 3, .max_memtables = 4, .container_fill = 0.95};
        uint64_t now = 0;
        uint64_t total = pace_many(w, &in, 2048, 4 * KiB, &now); /* 8 MiB */
        print_message("mode %d: 8 MiB in %llu us of delay (ideal %.0f)\n", mode, (unsigned long long)total,
                      want[mode]);
        if (mode == WCTL_OFF) assert_int_equal(total, 0);
        else assert_true((double)total >= 0.9 * want[mode] && (double)total <= 1.1 * want[mode]);
        wctl_stats st;
        wctl_get_stats(w, &st);
        assert_int_equal(st.mode, mode);
        assert_int_equal(st.state, WCTL_SLOWDOWN);
        assert_int_equal(st.pace_rate, mode == WCTL_PRL ? 200 * MiB : mode == WCTL_CLASSIC ? 16 * MiB : 0);
        wctl_free(w);
    }
    wctl *w = wctl_new(WCTL_OFF);
    assert_int_equal(wctl_set_mode(w, WCTL_CLASSIC), TKV_OK);
    assert_int_equal(wctl_pace_rate(w), 16 * MiB);
    assert_int_equal(wctl_set_mode(w, (wctl_mode)9), TKV_INVALID);
    wctl_free(w);
}

/* The container ramp (PRL): no pacing below ramp_lo; from (1 + gain) x the
 * drain rate at ramp_lo down to the drain rate at near_full, smoothly (never
 * rising with the fill), and on down to its floor at a full container; a memtable
 * limit on top; a drain slower than min_rate holds writers below it; the
 * drain rate falling to zero slows writers to min_rate / 16 without a stop, and its recovery lifts the pace again; without a drain
 * measurement (or in CLASSIC / OFF) the old near_full step applies. */
/* PRL with one memtable left and the running flush's ETA known paces at the
 * deadline active_room / eta (less pace_margin) when that is below the
 * flush pace: a flush behind slows writers, one ahead does not speed them
 * up (except before any flush sample, when the pace is only a guess); the
 * floor when there is almost no room; the flush pace at an ETA of 0
 * or when the ETA is unknown; CLASSIC and OFF ignore it; with the ramp, the
 * slowest of the three. */
static void test_wctl_deadline(void **state)
{
    (void)state;
    wctl *w = wctl_new(WCTL_PRL);
    for (int i = 0; i < 8; i++) wctl_flush_sample(w, 40 * MiB, 1000000); /* flush pace 40 MiB/s */
    wctl_input in = {.mutable_left = 1, .max_memtables = 2};
    assert_int_equal(wctl_target_rate(w, &in), 40 * MiB);
    in.flush_eta_known = 1;
    in.flush_eta_us = 1000000;
    in.active_room = 80 * MiB; /* a flush ahead: deadline 80 MiB/s, the flush pace stays */
    assert_int_equal(wctl_target_rate(w, &in), 40 * MiB);
    uint64_t now = 0;
    pace(w, &in, 1, &now);
    wctl_stats st;
    wctl_get_stats(w, &st);
    assert_int_equal(st.deadline_rate, 80 * MiB);
    assert_int_equal(st.flush_eta_us, 1000000);
    assert_int_equal(st.deadline_writes, 0);
    in.flush_eta_us = 4000000;
    in.active_room = 40 * MiB; /* a flush behind: 10 MiB/s, below the flush pace */
    assert_int_equal(wctl_target_rate(w, &in), 10 * MiB);
    now += 1000000;
    uint64_t t = pace_many(w, &in, 1024, 1 * KiB, &now); /* 1 MiB at 10 MiB/s: 100 ms */
    print_message("deadline: 1 MiB at 10 MiB/s in %llu us\n", (unsigned long long)t);
    assert_true(t >= 90000 && t <= 110000);
    wctl_get_stats(w, &st);
    assert_int_equal(st.deadline_writes, 1024);
    in.active_room = 1 * KiB; /* no room left to speak of: the floor, not a stop */
    assert_int_equal(wctl_classify(w, &in), WCTL_SLOWDOWN);
    assert_int_equal(wctl_target_rate(w, &in), 1 * MiB / 16);
    in.flush_eta_us = 0; /* the flush is done: the flush pace */
    assert_int_equal(wctl_target_rate(w, &in), 40 * MiB);
    in.flush_eta_known = 0; /* unknown: the flush pace */
    in.flush_eta_us = 4000000;
    in.active_room = 40 * MiB;
    assert_int_equal(wctl_target_rate(w, &in), 40 * MiB);
    in.flush_eta_known = 1;

    /* pace_margin applies to the deadline as to the flush pace */
    wctl_options mo;
    wctl_options_default(&mo);
    mo.pace_margin = 0.125;
    wctl *wm;
    assert_int_equal(wctl_create(&mo, &wm), TKV_OK); /* no samples: flush pace 14 MiB/s */
    assert_int_equal(wctl_target_rate(wm, &in), 10 * MiB / 8 * 7);
    /* before any flush sample the deadline applies above the flush pace too:
     * the initial rate is a guess, the running flush's ETA a measurement */
    in.flush_eta_us = 1000000;
    in.active_room = 80 * MiB; /* deadline 70 MiB/s with the margin, the guess 14 */
    assert_int_equal(wctl_target_rate(wm, &in), 70 * MiB);
    now += 1000000;
    t = pace_many(wm, &in, 1024, 1 * KiB, &now); /* 1 MiB at 70 MiB/s: ~14.3 ms, not ~71 */
    print_message("deadline before any sample: 1 MiB at 70 MiB/s in %llu us\n", (unsigned long long)t);
    assert_true(t >= 12000 && t <= 17000);
    in.flush_eta_known = 0; /* ETA unknown: the guess */
    assert_int_equal(wctl_target_rate(wm, &in), 14 * MiB);
    /* ... which, with the memtable's capacity known, binds only in its
     * second half: a first flush is not met by a 14 MiB/s writer */
    in.active_capacity = 64 * MiB;
    in.active_room = 40 * MiB;
    assert_int_equal(wctl_classify(wm, &in), WCTL_SLOWDOWN);
    assert_int_equal(wctl_target_rate(wm, &in), 0);
    now += 1000000;
    t = pace_many(wm, &in, 1024, 1 * KiB, &now);
    assert_int_equal(t, 0);
    in.active_room = 32 * MiB; /* half full: the guess again */
    assert_int_equal(wctl_target_rate(wm, &in), 14 * MiB);
    /* an unpaced SLOWDOWN ends a pacing episode: a write carried in vt
     * (under the 2 ms step) is not owed by the next paced write after it */
    now += 1000000;
    pace_result pr = pace(wm, &in, 28 * KiB, &now); /* ~1.95 ms at 14 MiB/s: carried, no sleep */
    assert_int_equal(pr.total_us, 0);
    in.active_room = 40 * MiB; /* not paced */
    now += 100;
    assert_int_equal(pace(wm, &in, 1 * KiB, &now).total_us, 0);
    in.active_room = 32 * MiB;
    now += 100;
    pr = pace(wm, &in, 8 * KiB, &now); /* ~0.56 ms: with the old debt 2.3 ms, a sleep */
    assert_int_equal(pr.total_us, 0);
    pr = pace(wm, &in, 24 * KiB, &now); /* the same episode: 0.56 + 1.67 ms owed, a sleep */
    assert_true(pr.total_us >= 2000 && pr.total_us <= 2400);
    in.active_room = 40 * MiB;
    in.flush_eta_known = 1; /* and once the ETA is known, the deadline decides as before */
    in.flush_eta_us = 4000000;
    assert_int_equal(wctl_target_rate(wm, &in), 10 * MiB / 8 * 7);
    in.active_capacity = 0;
    in.flush_eta_us = 0; /* ETA 0: no limit from the deadline, the guess stays */
    assert_int_equal(wctl_target_rate(wm, &in), 14 * MiB);
    wctl_flush_sample(wm, 40 * MiB, 1000000); /* a sample: a flush ahead no longer speeds writers up */
    in.flush_eta_us = 1000000;
    assert_int_equal(wctl_target_rate(wm, &in), 35 * MiB);
    in.flush_eta_us = 4000000;
    in.active_room = 40 * MiB; /* deadline 10 MiB/s less the margin: a flush behind still slows writers */
    assert_int_equal(wctl_target_rate(wm, &in), 10 * MiB / 8 * 7);
    wctl_free(wm);

    /* two memtables free: the deadline does not apply */
    in.mutable_left = 2;
    assert_int_equal(wctl_classify(w, &in), WCTL_NORMAL);
    assert_int_equal(wctl_target_rate(w, &in), 0);
    in.mutable_left = 1;

    /* with the container ramp on: the slowest of flush pace, deadline, ramp */
    in.drain_known = 1;
    in.drain_rate = 20 * MiB;
    in.container_fill = 0.9; /* the ramp is at the drain rate, 20 MiB/s */
    in.flush_eta_us = 1000000;
    in.active_room = 80 * MiB;
    assert_int_equal(wctl_target_rate(w, &in), 20 * MiB);
    in.flush_eta_us = 8000000; /* deadline 10 MiB/s */
    assert_int_equal(wctl_target_rate(w, &in), 10 * MiB);
    /* near full with the drain unknown: the slower of deadline and flush pace */
    in.drain_known = 0;
    assert_int_equal(wctl_target_rate(w, &in), 10 * MiB);
    in.flush_eta_us = 500000; /* deadline 160 MiB/s */
    assert_int_equal(wctl_target_rate(w, &in), 40 * MiB);
    wctl_free(w);

    /* CLASSIC and OFF: no deadline */
    wctl_input cin = {.mutable_left = 1, .max_memtables = 2, .flush_eta_known = 1, .flush_eta_us = 8000000,
                      .active_room = 1 * MiB};
    wctl *wc = wctl_new(WCTL_CLASSIC);
    assert_int_equal(wctl_target_rate(wc, &cin), 16 * MiB);
    cin.active_capacity = 64 * MiB; /* classic's rate is configured, not a guess: no half-memtable grace */
    cin.active_room = 60 * MiB;
    assert_int_equal(wctl_target_rate(wc, &cin), 16 * MiB);
    cin.active_capacity = 0;
    cin.active_room = 1 * MiB;
    wctl_free(wc);
    wctl *wo = wctl_new(WCTL_OFF);
    assert_int_equal(wctl_target_rate(wo, &cin), 0);
    wctl_free(wo);
}

/* flushprog: the running flush's ETA from its own progress -- unknown until
 * 1/16 of the build is counted, then the bytes left at the rate since the
 * first report plus the last flush's tail; during the tail, what is left of
 * the last tail, or as long again as it has run once past half of it;
 * unknown after an abandoned build or between flushes. */
static void test_flushprog(void **state)
{
    (void)state;
    flushprog *p = fp_new();
    assert_non_null(p);
    uint64_t eta = 7;
    assert_int_equal(fp_eta(p, 1000, &eta), 0);
    fp_begin(p, 64 * MiB);
    assert_int_equal(fp_eta(p, 1000, &eta), 0);
    fp_add(p, 1 * MiB, 2000); /* starts the clock */
    assert_int_equal(fp_eta(p, 3000, &eta), 0); /* under 1/16 */
    fp_add(p, 3 * MiB, 102000); /* 3 MiB in 100 ms since the first report: 30 MiB/s */
    assert_int_equal(fp_eta(p, 102000, &eta), 1);
    /* 60 MiB left at 30 MiB/s: 2 s, no tail yet */
    print_message("flushprog: eta %llu us\n", (unsigned long long)eta);
    assert_true(eta >= 1999000 && eta <= 2001000);
    fp_add(p, 60 * MiB, 2102000);
    assert_int_equal(fp_eta(p, 2102000, &eta), 1);
    assert_int_equal(eta, 0);
    fp_built(p, 2102000);
    assert_int_equal(fp_eta(p, 2102000, &eta), 1);
    assert_int_equal(eta, 0); /* no tail measured yet */
    fp_end(p, 2152000);
    assert_int_equal(fp_tail_us(p), 50000);
    assert_int_equal(fp_eta(p, 2152000, &eta), 0); /* nothing runs */

    /* the next flush adds the 50 ms tail */
    fp_begin(p, 16 * MiB);
    fp_add(p, 1 * MiB, 3000000);
    fp_add(p, 1 * MiB, 3100000); /* 10 MiB/s; 14 MiB left: 1.4 s */
    assert_int_equal(fp_eta(p, 3100000, &eta), 1);
    assert_true(eta >= 1449000 && eta <= 1451000);
    /* a stalled build: the rate falls as time passes without progress */
    assert_int_equal(fp_eta(p, 3200000, &eta), 1);
    assert_true(eta >= 2849000 && eta <= 2851000); /* 1 MiB per 200 ms: 14 MiB in 2.8 s, + 50 ms */
    fp_add(p, 14 * MiB, 3300000);
    fp_built(p, 3300000);
    assert_int_equal(fp_eta(p, 3320000, &eta), 1);
    assert_int_equal(eta, 30000); /* 50 ms tail, 20 ms of it gone */
    assert_int_equal(fp_eta(p, 3330000, &eta), 1);
    assert_int_equal(eta, 30000); /* past half of the last tail: as long again */
    assert_int_equal(fp_eta(p, 3400000, &eta), 1);
    assert_int_equal(eta, 100000); /* twice the last tail: another 100 ms expected */
    fp_end(p, 3400000);
    assert_int_equal(fp_tail_us(p), 100000);

    /* an abandoned build (no room in the pool) is not running; the tail stays */
    fp_begin(p, 16 * MiB);
    fp_add(p, 2 * MiB, 4000000);
    fp_add(p, 2 * MiB, 4100000);
    assert_int_equal(fp_eta(p, 4100000, &eta), 1);
    fp_begin(p, 0);
    assert_int_equal(fp_eta(p, 4100000, &eta), 0);
    fp_built(p, 4200000); /* ignored: nothing was building */
    assert_int_equal(fp_eta(p, 4200000, &eta), 0);
    fp_end(p, 4300000);
    assert_int_equal(fp_tail_us(p), 100000);
    fp_free(p);
    fp_free(NULL);
}

/* test_drainmeter -- the drain rate is the samples' bytes over their time:
 * one small column (1 KB in 53 ms, seen in a 4M fill) does not collapse it
 * (the slowest sample did: 4 columns paced at the floor); a column running
 * behind the pace pulls it down smoothly, a stalled one towards 0; it
 * recovers as fast columns replace the slow samples. */
static void test_drainmeter(void **state)
{
    (void)state;
    drainmeter m = {0};
    uint64_t r = 7;
    assert_int_equal(dm_rate(&m, 0, 0, 0, 20000, &r), 0); /* nothing known */
    assert_int_equal(r, 0);
    assert_int_equal(dm_rate(&m, 1, 64 * MiB, 10000, 20000, &r), 0); /* first column, too young */
    assert_int_equal(dm_rate(&m, 1, 64 * MiB, 500000, 20000, &r), 1); /* its own pace: 128 MiB/s */
    assert_int_equal(r, 128 * MiB);
    /* four 64 MiB columns of 250 ms each: 256 MiB/s */
    for (int i = 0; i < 4; i++) dm_note(&m, 64 * MiB, 250000);
    assert_int_equal(dm_rate(&m, 0, 0, 0, 20000, &r), 1);
    assert_int_equal(r, 256 * MiB);
    /* a running column on pace, half done, does not lower it */
    assert_int_equal(dm_rate(&m, 1, 64 * MiB, 125000, 20000, &r), 1);
    assert_int_equal(r, 256 * MiB);
    /* a tiny column: the rate stays near 256 MiB/s (3 x 64 MiB + 1 KB over 803 ms) */
    dm_note(&m, 1024, 53000);
    assert_int_equal(dm_rate(&m, 0, 0, 0, 20000, &r), 1);
    print_message("drainmeter: after a tiny column %.1f MiB/s\n", (double)r / MiB);
    assert_true(r > 239 * MiB && r < 240 * MiB);
    /* a column that commits 1 ms after its neighbour adds its bytes, not an infinite rate */
    dm_note(&m, 64 * MiB, 1000);
    assert_int_equal(dm_rate(&m, 0, 0, 0, 20000, &r), 1);
    assert_true(r > 346 * MiB && r < 347 * MiB); /* 3 x 64 MiB + 1 KB over 250 + 250 + 53 + 1 ms */
    /* a stalled running column drags it down: to half after as long as the samples took, towards 0 */
    drainmeter s = {0};
    for (int i = 0; i < 4; i++) dm_note(&s, 64 * MiB, 250000);
    uint64_t at1, at2, at10;
    assert_int_equal(dm_rate(&s, 1, 64 * MiB, 1000000, 20000, &at1), 1); /* 320 MiB in 2 s: 160 MiB/s */
    assert_int_equal(dm_rate(&s, 1, 64 * MiB, 2000000, 20000, &at2), 1);
    assert_int_equal(dm_rate(&s, 1, 64 * MiB, 10000000, 20000, &at10), 1);
    print_message("drainmeter: stalled 1 s %.1f, 2 s %.1f, 10 s %.1f MiB/s\n", (double)at1 / MiB, (double)at2 / MiB,
                  (double)at10 / MiB);
    assert_int_equal(at1, 160 * MiB);
    assert_true(at2 < at1 && at10 < at2 && at10 < 30 * MiB);
    /* it recovers: four fast columns replace the slow samples */
    dm_note(&s, 64 * MiB, 10000000);
    assert_int_equal(dm_rate(&s, 0, 0, 0, 20000, &r), 1);
    assert_true(r < 30 * MiB);
    for (int i = 0; i < 4; i++) dm_note(&s, 64 * MiB, 200000);
    assert_int_equal(dm_rate(&s, 0, 0, 0, 20000, &r), 1);
    assert_int_equal(r, 320 * MiB);
    /* a rate never reads 0 once known */
    drainmeter z = {0};
    dm_note(&z, 0, 0);
    assert_int_equal(dm_rate(&z, 0, 0, 0, 20000, &r), 1);
    assert_int_equal(r, 1);
}

static void test_wctl_ramp(void **state)
{
    (void)state;
    wctl *w = wctl_new(WCTL_PRL); /* ramp_lo 0.5, ramp_gain 3, near_full 0.9 */
    for (int i = 0; i < 8; i++) wctl_flush_sample(w, 200 * MiB, 1000000);
    wctl_input in = {.mutable_left = 2, .max_memtables = 2, .drain_known = 1, .drain_rate = 40 * MiB};
    const struct {
        double fill;
        double want; /* x drain rate; 0 = not paced */
    } pts[] = {{0.0, 0}, {0.49, 0}, {0.5, 4.0}, {0.7, 2.5}, {0.8, 1.75}, {0.9, 1.0}, {0.95, 0.5}, {0.99, 0.1}};
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
        in.container_fill = pts[i].fill;
        uint64_t r = wctl_target_rate(w, &in);
        print_message("ramp: fill %.2f -> %.1f MiB/s\n", pts[i].fill, (double)r / MiB);
        assert_int_equal(wctl_classify(w, &in), pts[i].want ? WCTL_SLOWDOWN : WCTL_NORMAL);
        double want = pts[i].want * 40 * MiB;
        assert_true((double)r >= want - 2 && (double)r <= want + 2);
    }
    uint64_t prev = UINT64_MAX;
    for (int pct = 50; pct <= 99; pct++) { /* smooth: never rises as the container fills */
        in.container_fill = pct / 100.0;
        uint64_t r = wctl_target_rate(w, &in);
        assert_true(r <= prev && r > 0);
        prev = r;
    }
    /* a full or overcommitted container (the engine counts memtables not yet
     * in it): the floor, min_rate / 16, never a stop and never faster */
    for (double f = 1.0; f <= 1.5; f += 0.25) {
        in.container_fill = f;
        assert_int_equal(wctl_classify(w, &in), WCTL_SLOWDOWN);
        assert_int_equal(wctl_target_rate(w, &in), MiB / 16);
    }

    /* steady state at 80 %: writers get 1.75 x 40 MiB/s = 70 MiB/s */
    in.container_fill = 0.8;
    uint64_t now = 1000000;
    uint64_t total = pace_many(w, &in, 2048, 4 * KiB, &now); /* 8 MiB */
    double ideal = 8.0 / 70 * 1e6;
    print_message("ramp steady state: 8 MiB in %llu us (ideal %.0f)\n", (unsigned long long)total, ideal);
    assert_true((double)total >= 0.9 * ideal && (double)total <= 1.1 * ideal);
    wctl_stats st;
    wctl_get_stats(w, &st);
    assert_int_equal(st.ramp_writes, 2048);
    assert_true(st.target_rate >= 70 * MiB - 2 && st.target_rate <= 70 * MiB + 2);
    assert_int_equal(st.ramp_rate, st.target_rate);
    assert_int_equal(st.drain_rate, 40 * MiB);
    assert_int_equal(st.stopped_writes, 0);

    /* a memtable limit paces at the slower of the flush and the ramp */
    in.mutable_left = 1;
    in.container_fill = 0.5;
    uint64_t r50 = wctl_target_rate(w, &in);
    assert_true(r50 >= 160 * MiB - 2 && r50 <= 160 * MiB + 2);
    wctl *slow = wctl_new(WCTL_PRL);
    for (int i = 0; i < 8; i++) wctl_flush_sample(slow, 50 * MiB, 1000000);
    assert_int_equal(wctl_target_rate(slow, &in), 50 * MiB);
    /* the ticket tells the caller whether the ramp set its pace (the engine
     * then runs columns at the process's priority): yes at 80 % with the
     * ramp the slowest stage; no where the slower flush paces it (one
     * memtable left at 50 %: 50 MiB/s under the ramp's 160), and no below
     * the band (not paced at all) */
    const struct {
        wctl *w;
        unsigned left;
        double fill;
        int want;
    } tk[] = {{w, 2, 0.8, 1}, {w, 1, 0.5, 1}, {slow, 1, 0.5, 0}, {w, 2, 0.3, 0}, {slow, 2, 0.95, 1}};
    for (size_t i = 0; i < sizeof tk / sizeof tk[0]; i++) {
        in.mutable_left = tk[i].left;
        in.container_fill = tk[i].fill;
        wctl_write t = WCTL_WRITE_INIT;
        uint64_t t_now = 5000000 + i * 1000000;
        (void)wctl_delay_us(tk[i].w, &t, &in, 64 * KiB, t_now);
        if (t.ramp_paced != tk[i].want)
            fail_msg("ticket %zu (fill %.2f, %u memtables left): ramp_paced %d, want %d", i, tk[i].fill, tk[i].left,
                     t.ramp_paced, tk[i].want);
    }
    wctl_free(slow);
    in.mutable_left = 2;

    /* a drain slower than min_rate (1 MiB/s) still holds writers below it */
    in.container_fill = 0.9;
    in.drain_rate = 256 * KiB;
    assert_int_equal(wctl_target_rate(w, &in), 256 * KiB);
    /* the drain stops: paced at the ramp's floor, min_rate / 16 = 64 KiB/s,
     * still SLOWDOWN, never STOP */
    in.container_fill = 0.85;
    in.drain_rate = 0;
    assert_int_equal(wctl_classify(w, &in), WCTL_SLOWDOWN);
    assert_int_equal(wctl_target_rate(w, &in), 64 * KiB);
    pace_result pr = pace(w, &in, 4 * KiB, &now);
    assert_int_equal(pr.first_state, WCTL_SLOWDOWN);
    assert_true(pr.total_us >= 55000 && pr.total_us <= 70000); /* 4 KiB at 64 KiB/s = 62.5 ms */
    /* ... and recovers */
    in.drain_rate = 40 * MiB;
    uint64_t back = wctl_target_rate(w, &in);
    assert_true(back >= 55 * MiB - 2 && back <= 55 * MiB + 2); /* 1.375 x 40 */

    /* no drain measurement, none expected (l0=sst): the old step at
     * near_full, at the flush pace */
    in.drain_known = 0;
    in.container_fill = 0.8;
    assert_int_equal(wctl_classify(w, &in), WCTL_NORMAL);
    in.container_fill = 0.95;
    assert_int_equal(wctl_target_rate(w, &in), 200 * MiB);
    /* a drain expected but not measured yet (the first column has not run
     * long enough): the ramp on the flush pace (200 MiB/s here) -- 4x at
     * ramp_lo, 1x at near_full, falling past it -- neither unpaced into a
     * full pool nor held to a guess far below the writers' speed */
    in.drain_expected = 1;
    const struct {
        double fill, want; /* x the flush pace; 0 = not paced */
    } est[] = {{0.3, 0}, {0.5, 4.0}, {0.7, 2.5}, {0.9, 1.0}, {0.95, 0.5}};
    for (size_t i = 0; i < sizeof est / sizeof est[0]; i++) {
        in.container_fill = est[i].fill;
        uint64_t r = wctl_target_rate(w, &in);
        assert_int_equal(wctl_classify(w, &in), est[i].want ? WCTL_SLOWDOWN : WCTL_NORMAL);
        double want = est[i].want * 200 * MiB;
        if (!((double)r >= want - 2 && (double)r <= want + 2))
            fail_msg("drain expected, fill %.2f: %llu B/s, want %.0f", est[i].fill, (unsigned long long)r, want);
    }
    /* ... and before any flush sample, on initial_rate (16 MiB/s) */
    {
        wctl *fresh = wctl_new(WCTL_PRL);
        wctl_input fi = in;
        fi.container_fill = 0.7;
        fi.mutable_left = 2;
        uint64_t r = wctl_target_rate(fresh, &fi);
        if (!((double)r >= 2.5 * 16 * MiB - 2 && (double)r <= 2.5 * 16 * MiB + 2))
            fail_msg("drain expected, no flush sample: %llu B/s, want 40 MiB/s", (unsigned long long)r);
        wctl_free(fresh);
    }
    /* the first measurement replaces the estimate at once */
    in.drain_known = 1;
    in.drain_rate = 40 * MiB;
    in.container_fill = 0.9;
    assert_int_equal(wctl_target_rate(w, &in), 40 * MiB);
    in.drain_expected = 0;
    /* CLASSIC and OFF ignore the ramp */
    in.drain_known = 1;
    in.container_fill = 0.8;
    for (int mode = WCTL_CLASSIC; mode <= WCTL_OFF; mode++) {
        wctl *m = wctl_new((wctl_mode)mode);
        assert_int_equal(wctl_classify(m, &in), WCTL_NORMAL);
        assert_int_equal(wctl_target_rate(m, &in), 0);
        wctl_free(m);
    }
    /* bad bands */
    wctl_options o;
    wctl_options_default(&o);
    o.ramp_lo = 0.9; /* not below near_full */
    wctl *bad = NULL;
    assert_int_equal(wctl_create(&o, &bad), TKV_INVALID);
    wctl_options_default(&o);
    o.ramp_gain = -1;
    assert_int_equal(wctl_create(&o, &bad), TKV_INVALID);
    wctl_free(w);
}

/* test_wctl_debt -- the deep-debt pace of wctl.h on synthetic inputs: no
 * pacing below debt_soft (2), the flush pace at 2 falling linearly to the
 * floor (min_rate / 16) at debt_hard (4) and beyond, never a STOP; the
 * smaller of the debt and the container ramp wins; the debt falling back
 * lifts the pace again; CLASSIC scales its fixed rate the same way, OFF
 * ignores the debt, debt_soft <= 0 disables it, and debt_hard must lie
 * above debt_soft. */
static void test_wctl_debt(void **state)
{
    (void)state;
    wctl *w = wctl_new(WCTL_PRL);
    for (int i = 0; i < 8; i++) wctl_flush_sample(w, 200 * MiB, 1000000);
    wctl_input in = {.mutable_left = 2, .max_memtables = 2};
    const struct {
        double score;
        double want; /* MiB/s; 0 = not paced */
    } pts[] = {{0, 0}, {1.0, 0}, {1.99, 0}, {2.0, 200}, {2.5, 150}, {3.0, 100}, {3.5, 50}, {4.0, 1.0 / 16}, {9.0, 1.0 / 16}};
    for (size_t i = 0; i < sizeof pts / sizeof pts[0]; i++) {
        in.deep_score = pts[i].score;
        uint64_t r = wctl_target_rate(w, &in);
        print_message("debt: score %.2f -> %.3f MiB/s\n", pts[i].score, (double)r / MiB);
        assert_int_equal(wctl_classify(w, &in), pts[i].want ? WCTL_SLOWDOWN : WCTL_NORMAL);
        double want = pts[i].want * MiB;
        assert_true((double)r >= want - 2 && (double)r <= want + 2);
    }
    uint64_t prev = UINT64_MAX;
    for (int k = 200; k <= 500; k += 5) { /* smooth: never rises as the debt grows */
        in.deep_score = k / 100.0;
        uint64_t r = wctl_target_rate(w, &in);
        assert_true(r <= prev && r > 0);
        prev = r;
    }
    /* steady state at score 3: writers get 100 MiB/s, counted as debt writes */
    in.deep_score = 3.0;
    uint64_t now = 1000000;
    uint64_t total = pace_many(w, &in, 2048, 4 * KiB, &now); /* 8 MiB */
    double ideal = 8.0 / 100 * 1e6;
    assert_true((double)total >= 0.9 * ideal && (double)total <= 1.1 * ideal);
    wctl_stats st;
    wctl_get_stats(w, &st);
    assert_int_equal(st.debt_writes, 2048);
    assert_int_equal(st.ramp_writes, 0);
    assert_int_equal(st.debt_rate, 100 * MiB);
    assert_int_equal(st.target_rate, 100 * MiB);
    assert_true(st.deep_score == 3.0);
    assert_int_equal(st.stopped_writes, 0);
    /* a slower container ramp wins over the debt (score 3: 100 MiB/s; the
     * ramp at 90 % fill with a 40 MiB/s drain: 40 MiB/s) */
    in.drain_known = 1;
    in.drain_rate = 40 * MiB;
    in.container_fill = 0.9;
    assert_int_equal(wctl_target_rate(w, &in), 40 * MiB);
    /* ... and a slower debt over the ramp (score 3.9: 10 MiB/s) */
    in.deep_score = 3.9;
    uint64_t r39 = wctl_target_rate(w, &in);
    assert_true(r39 >= 10 * MiB - 2 && r39 <= 10 * MiB + 2);
    /* the deep work catches up: no pacing again */
    in.drain_known = 0;
    in.container_fill = 0;
    in.deep_score = 1.5;
    assert_int_equal(wctl_classify(w, &in), WCTL_NORMAL);
    assert_int_equal(wctl_target_rate(w, &in), 0);
    wctl_free(w);

    /* CLASSIC: its fixed 16 MiB/s, scaled by the debt; OFF: nothing */
    in.deep_score = 3.0;
    wctl *c = wctl_new(WCTL_CLASSIC);
    assert_int_equal(wctl_classify(c, &in), WCTL_SLOWDOWN);
    assert_int_equal(wctl_target_rate(c, &in), 8 * MiB);
    wctl_free(c);
    wctl *off = wctl_new(WCTL_OFF);
    assert_int_equal(wctl_classify(off, &in), WCTL_NORMAL);
    assert_int_equal(wctl_target_rate(off, &in), 0);
    wctl_free(off);
    /* disabled, and bad bands */
    wctl_options o;
    wctl_options_default(&o);
    o.debt_soft = 0;
    wctl *dis = NULL;
    assert_int_equal(wctl_create(&o, &dis), TKV_OK);
    assert_int_equal(wctl_classify(dis, &in), WCTL_NORMAL);
    wctl_free(dis);
    wctl_options_default(&o);
    o.debt_hard = o.debt_soft;
    assert_int_equal(wctl_create(&o, &dis), TKV_INVALID);
}

int main(void)
{
    const char *filter = getenv("TKV_TEST_FILTER");
    char pattern[256];
    if (filter && *filter) {
        if (strchr(filter, '*'))
            snprintf(pattern, sizeof pattern, "%s", filter);
        else
            snprintf(pattern, sizeof pattern, "*%s*", filter);
        cmocka_set_test_filter(pattern);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clock),
        cmocka_unit_test(test_monitor_step_response),
        cmocka_unit_test(test_monitor_noise),
        cmocka_unit_test(test_monitor_floor_and_stats),
        cmocka_unit_test(test_monitor_latency_cap),
        cmocka_unit_test(test_monitor_thread),
        cmocka_unit_test(test_tadapt),
        cmocka_unit_test(test_rl_unlimited),
        cmocka_unit_test(test_rl_rate_and_change),
        cmocka_unit_test(test_rl_high_before_low),
        cmocka_unit_test(test_rl_low_reserved),
        cmocka_unit_test(test_rl_three_priorities),
        cmocka_unit_test(test_rl_mid_reserved),
        cmocka_unit_test(test_rl_split_large),
        cmocka_unit_test(test_rl_cancel_shutdown),
        cmocka_unit_test(test_rl_request_blocking),
        cmocka_unit_test(test_wctl_classify),
        cmocka_unit_test(test_wctl_normal),
        cmocka_unit_test(test_wctl_prl_pacing),
        cmocka_unit_test(test_wctl_step),
        cmocka_unit_test(test_wctl_stop),
        cmocka_unit_test(test_wctl_modes),
        cmocka_unit_test(test_wctl_ramp),
        cmocka_unit_test(test_wctl_debt),
        cmocka_unit_test(test_wctl_deadline),
        cmocka_unit_test(test_flushprog),
        cmocka_unit_test(test_drainmeter),
    };
    return cmocka_run_group_tests_name("sched", tests, NULL, NULL);
}
