// SPDX-License-Identifier: Apache-2.0
/*
 * test_sched_monitor.c -- the SILK control law (src/sched/monitor.c): the
 * internal bandwidth's step response and stability under noisy load, its
 * floor and counters, the read-latency cap, and the optional ticker thread.
 *
 * Everything runs on a fake time line (`now_us` passed in) except the
 * ticker-thread test, which ticks on the real clock and stops. Random loads
 * use fixed seeds so that every run sees the same numbers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sched/clock.h"
#include "sched/monitor.h"
#include "testutil.h"

#define MiB (1ull << 20)

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

/* noise_sample -- a noise value in about [-1, 1]: uniform (shape 0), or a
 * bell of three uniforms with the same standard deviation (shape 1, tails
 * to +-1.7). */
static double noise_sample(tu_rng *s, int shape)
{
    if (shape == 0) return tu_rng_signed_unit(s);
    return (tu_rng_signed_unit(s) + tu_rng_signed_unit(s) + tu_rng_signed_unit(s)) / 3 * 1.7;
}

/* max_changes_per_second -- feeds 10.4 s of load c * (1 + noise * x) in
 * windows of 9..11 ms (a thread that wakes late or early) and returns the
 * most changes of I seen in any one second, after 0.4 s in which the
 * monitor learns the noise level (and makes the initial step from "no load
 * seen"). */
static uint64_t max_changes_per_second(unsigned noise_mult, double c, double noise, int shape, uint64_t seed)
{
    tu_rng s;
    tu_rng_init_splitmix(&s, seed);
    uint64_t now = 0;
    monitor *m = mon_new(noise_mult, now);
    monitor_stats st;
    uint64_t worst = 0, base = 0;
    for (int k = 0; k < 1040; k++) {
        double x = noise_sample(&s, shape);
        uint64_t dt = 9000 + (uint64_t)(1000 * (1 + tu_rng_signed_unit(&s)));
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

static void tick_count(void *arg, uint64_t now_us)
{
    (void)now_us;
    atomic_fetch_add((atomic_int *)arg, 1);
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
                assert_true(tu_absdiff(st.internal_bw, target_for(c)) <= 10 * MiB);
                assert_true(tu_absdiff(st.client_bw, c) <= 200); /* byte rounding of the windows */
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
    tu_rng s;
    tu_rng_init_splitmix(&s, 7);
    for (int k = 0; k < 100; k++) feed(m, &now, 100.0 * MiB * (1 + 0.05 * tu_rng_signed_unit(&s)), PERIOD);
    for (int k = 0; k < 30; k++) {
        feed(m, &now, 300.0 * MiB * (1 + 0.05 * tu_rng_signed_unit(&s)), PERIOD);
        if (k >= 1) assert_true(tu_absdiff(monitor_internal_bw(m), target_for(300 * MiB)) <= 10 * MiB + 15 * MiB);
    }
    for (int k = 0; k < 30; k++) {
        feed(m, &now, 60.0 * MiB * (1 + 0.05 * tu_rng_signed_unit(&s)), PERIOD);
        if (k >= 1) assert_true(tu_absdiff(monitor_internal_bw(m), target_for(60 * MiB)) <= 10 * MiB + 15 * MiB);
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
    assert_true(tu_absdiff(monitor_internal_bw(slow), target_for(300 * MiB)) > 10 * MiB);
    feed(slow, &now, 300.0 * MiB, PERIOD);
    feed(slow, &now, 300.0 * MiB, PERIOD);
    assert_true(tu_absdiff(monitor_internal_bw(slow), target_for(300 * MiB)) <= 10 * MiB);
    monitor_free(slow);
    monitor_free(m);
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
                if (w > 2)
                    print_message("load %d MiB/s shape %d seed %llu: %llu changes/s\n", load, shape,
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
static void test_monitor_floor_and_stats(void **state)
{
    (void)state;
    tu_rng s;
    tu_rng_init_splitmix(&s, 3);
    uint64_t now = 0;
    monitor *m = mon_new(5, now);
    uint64_t changes = 0;
    for (int k = 0; k < 2000; k++) {
        double bw = (1 + tu_rng_signed_unit(&s)) * 400.0 * MiB; /* 0 .. 800 MiB/s */
        if ((k / 100) % 2) bw = 700.0 * MiB;                    /* long periods above T */
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
        if (k == 10) assert_true(tu_absdiff(i, (uint64_t)(390.0 * MiB * 0.7)) <= 1); /* the first interval's back-off */
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

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_monitor_step_response),   cmocka_unit_test(test_monitor_noise),
        cmocka_unit_test(test_monitor_floor_and_stats), cmocka_unit_test(test_monitor_latency_cap),
        cmocka_unit_test(test_monitor_thread),
    };
    return cmocka_run_group_tests_name("sched_monitor", tests, NULL, NULL);
}
