// SPDX-License-Identifier: Apache-2.0
/*
 * test_sched_wctl.c -- the PRL write controller (src/sched/wctl.c): how it
 * classifies a write, pacing in its modes (PRL, CLASSIC, OFF), the step and
 * the stop, the container ramp, debt, the flush deadline, and sleeps that
 * end late (the lateness compensation). Everything
 * runs on a fake time line (`now_us` passed in); nothing sleeps.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sched/wctl.h"
#include "testutil.h"

#define MiB (1ull << 20)

#define KiB (1ull << 10)

/* ---- wctl ---- */
/* wctl_new -- the defaults, without the step's growth (stall_every 0):
 * the pacing tests below count sleeps at the fixed step; test_wctl_step_grows
 * tests the growth. */
static wctl *wctl_new(wctl_mode mode)
{
    wctl_options o;
    wctl_options_default(&o);
    o.mode = mode;
    o.stall_every = 0;
    o.max_sleep_us = 1000; /* the tests' sleeps: pieces of at most 1 ms */
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
    mo.stall_every = 0; /* the 2 ms step below */
    mo.max_sleep_us = 1000;
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
    o.stall_every = 0;
    o.max_sleep_us = 1000;
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

/* pace_timed -- n writes of `bytes`, each taking write_us of fake time
 * before it asks (the writer's own work); returns how many slept, adds
 * their sleeps to *slept_us, and checks each sleep against [lo, hi) and
 * its pieces against max_sleeps. */
static uint64_t pace_timed(wctl *w, const wctl_input *in, uint64_t n, uint64_t bytes, double write_us, uint64_t *now,
                           double *clock, uint64_t lo, uint64_t hi, uint64_t *slept_us, uint64_t max_sleeps)
{
    uint64_t slept = 0;
    for (uint64_t i = 0; i < n; i++) {
        *clock += write_us;
        *now = (uint64_t)*clock;
        pace_result r = pace(w, in, bytes, now);
        *clock += (double)r.total_us;
        if (r.total_us) {
            assert_true(r.total_us >= lo && r.total_us < hi);
            assert_true(r.steps <= max_sleeps); /* one sleep, up to max_sleep_us (8 ms) */
            slept++;
            *slept_us += r.total_us;
        }
    }
    return slept;
}

/* The step grows with the pace's pressure (W5): about one write in
 * stall_every (4000) sleeps, or one in (cap / debt a write) where the 4 ms
 * cap binds. At 40 MiB/s a 1 KiB write costs 24.4 us: a writer that takes
 * 23.5 us a write adds 0.91 us of debt a write (step 3.66 ms, one write in
 * 4000 sleeps); one that takes 20.4 us adds 4 us (16 ms wanted, capped at
 * 4 ms: one in 1000); one that takes 19.2 us adds 5.2 us (capped: one in
 * 770); one that takes no time adds 24.4 us (capped: one in 164); one that
 * takes 24 us adds 0.4 us (1.6 ms wanted: the 2 ms floor); with 3 writers
 * queued the 8 ms floor wins over the cap. The total slept is the debt
 * whatever the step. */
static void test_wctl_step_grows(void **state)
{
    (void)state;
    const double write_us[] = {23.5, 20.4, 19.2, 0.0, 24.0, 0.0};
    const unsigned queued[] = {0, 0, 0, 0, 0, 3};
    const uint64_t step_lo[] = {3500, 4000, 4000, 4000, 2000, 8000}, step_hi[] = {3800, 4001, 4001, 4001, 2001, 8001};
    for (int c = 0; c < 6; c++) {
        wctl_options o;
        wctl_options_default(&o);
        assert_int_equal(o.stall_every, 4000);
        assert_int_equal(o.step_cap_us, 4000);
        wctl *w;
        assert_int_equal(wctl_create(&o, &w), TKV_OK);
        for (int i = 0; i < 8; i++) wctl_flush_sample(w, 40 * MiB, 1000000);
        wctl_input in = {.mutable_left = 1, .max_memtables = 2, .queued = queued[c]};
        uint64_t now = 1000000, slept_us = 0;
        double clock = 1e6;
        /* warm-up: the first stalls set the average */
        pace_timed(w, &in, 200000, KiB, write_us[c], &now, &clock, 1, 100000, &slept_us, 2);
        wctl_stats st;
        wctl_get_stats(w, &st);
        double want_ns = (1e9 / (40.0 * MiB) * KiB) - write_us[c] * 1000.0;
        print_message("case %d: accrual %llu ns (want %.0f), step %llu us\n", c, (unsigned long long)st.accrual_ns,
                      want_ns, (unsigned long long)st.step_us);
        assert_true(st.accrual_ns >= want_ns * 0.97 && st.accrual_ns <= want_ns * 1.03);
        assert_true(st.step_us >= step_lo[c] && st.step_us < step_hi[c]);
        /* measured: every sleep pays a step, and their share is 1 / (step / accrual) */
        uint64_t n = 400000;
        slept_us = 0;
        double t0 = clock;
        uint64_t slept = pace_timed(w, &in, n, KiB, write_us[c], &now, &clock, step_lo[c], step_hi[c] + 100, &slept_us,
                                    step_lo[c] < 8000 ? 1 : 2);
        double expect = (double)n * want_ns / 1000.0 / (double)st.step_us;
        print_message("  %llu of %llu writes slept (expected %.0f), %llu us of %.0f\n", (unsigned long long)slept,
                      (unsigned long long)n, expect, (unsigned long long)slept_us, clock - t0);
        assert_true((double)slept >= expect * 0.9 && (double)slept <= expect * 1.1 + 1);
        /* the total is the debt: n writes at 40 MiB/s take n x 24.4 us */
        double cost_us = (double)n * 1e6 / (40.0 * MiB) * KiB;
        assert_true(clock - t0 >= cost_us * 0.98 && clock - t0 <= cost_us * 1.02);
        wctl_free(w);
    }
    wctl_options o;
    wctl_options_default(&o);
    wctl *w;
    o.step_cap_us = 0;
    assert_int_equal(wctl_create(&o, &w), TKV_INVALID);
    o.step_cap_us = 100001;
    assert_int_equal(wctl_create(&o, &w), TKV_INVALID);
    wctl_options_default(&o);
    assert_int_equal(o.max_sleep_us, 8000);
    o.max_sleep_us = 0;
    assert_int_equal(wctl_create(&o, &w), TKV_INVALID);
    o.max_sleep_us = 100001;
    assert_int_equal(wctl_create(&o, &w), TKV_INVALID);
}

/* late_run -- n writes of 1 KiB that take no time themselves, each of
 * whose sleeps takes `late` us more than asked (the next call comes that
 * much later); returns the stalls and the longest and shortest stall's
 * wall time. */
static uint64_t late_run(wctl *w, const wctl_input *in, uint64_t n, uint64_t late, uint64_t *now, uint64_t *max_wall,
                         uint64_t *min_wall)
{
    uint64_t stalls = 0;
    *max_wall = 0;
    *min_wall = UINT64_MAX;
    for (uint64_t i = 0; i < n; i++) {
        wctl_write t = WCTL_WRITE_INIT;
        uint64_t wall = 0, d = wctl_delay_us(w, &t, in, KiB, *now);
        while (d > 0) {
            uint64_t took = d + late;
            *now += took;
            wall += took;
            d = wctl_delay_us(w, &t, in, 0, *now);
        }
        if (!wall) continue;
        stalls++;
        if (wall > *max_wall) *max_wall = wall;
        if (wall < *min_wall) *min_wall = wall;
    }
    return stalls;
}

/* W6: sleeps that end late (on a busy machine the timer fires, then the
 * writer waits for a CPU). At 40 MiB/s a 1 KiB write that takes no time
 * owes 24.4 us: the step is the cap, set to 6 ms here. Sleeps `late` us longer than
 * asked: with late_comp a stall sleeps 6 ms less the measured lateness and
 * takes its 6 ms; the writer keeps the pace (n writes take n x 24.4 us).
 * With late >= the step a stall still sleeps a quarter of its debt
 * (1.5 ms) and takes 1.5 ms + late. Without late_comp a stall takes 6 ms +
 * late, and the writer falls behind the pace. */
static void test_wctl_late(void **state)
{
    (void)state;
    const uint64_t lates[] = {0, 1000, 4000, 6000};
    for (int comp = 1; comp >= 0; comp--) {
        for (int c = 0; c < 4; c++) {
            wctl_options o;
            wctl_options_default(&o);
            assert_int_equal(o.late_comp, 1);
            o.late_comp = comp;
            o.step_cap_us = 6000; /* the step of the numbers above (the default is 4000) */
            wctl *w;
            assert_int_equal(wctl_create(&o, &w), TKV_OK);
            for (int i = 0; i < 8; i++) wctl_flush_sample(w, 40 * MiB, 1000000);
            wctl_input in = {.mutable_left = 1, .max_memtables = 2};
            uint64_t now = 1000000, max_wall, min_wall, late = lates[c];
            late_run(w, &in, 20000, late, &now, &max_wall, &min_wall); /* warm-up: the step and the lateness */
            wctl_stats st;
            wctl_get_stats(w, &st);
            assert_int_equal(st.step_us, 6000);
            assert_true(st.late_us + 1 >= late && st.late_us <= late);
            uint64_t n = 200000, t0 = now;
            uint64_t stalls = late_run(w, &in, n, late, &now, &max_wall, &min_wall);
            double cost_us = (double)n * 1e6 / (40.0 * MiB) * KiB, ratio = (double)(now - t0) / cost_us;
            print_message("late_comp=%d late %llu us: %llu stalls, %llu-%llu us each, %.3f x the pace's time\n", comp,
                          (unsigned long long)late, (unsigned long long)stalls, (unsigned long long)min_wall,
                          (unsigned long long)max_wall, ratio);
            if (comp && late < 6000) {
                assert_true(min_wall >= 6000 && max_wall <= 6000 + 100); /* a stall takes its step */
                assert_true(ratio >= 0.98 && ratio <= 1.02);             /* at the pace */
            } else if (comp) {
                assert_true(min_wall >= 1500 + late && max_wall <= 1500 + late + 100); /* a quarter, then late */
            } else {
                assert_true(min_wall >= 6000 + late && max_wall <= 6000 + late + 100);
                if (late >= 4000) assert_true(ratio > 1.2); /* behind the pace */
            }
            wctl_free(w);
        }
    }
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
        print_message("mode %d: 8 MiB in %llu us of delay (ideal %.0f)\n", mode, (unsigned long long)total, want[mode]);
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
    } pts[] = {{0, 0},     {1.0, 0},  {1.99, 0},       {2.0, 200},     {2.5, 150},
               {3.0, 100}, {3.5, 50}, {4.0, 1.0 / 16}, {9.0, 1.0 / 16}};
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
    mo.stall_every = 0; /* the 2 ms step below */
    mo.max_sleep_us = 1000;
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
    wctl_input cin = {
        .mutable_left = 1, .max_memtables = 2, .flush_eta_known = 1, .flush_eta_us = 8000000, .active_room = 1 * MiB};
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

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wctl_classify),   cmocka_unit_test(test_wctl_normal),
        cmocka_unit_test(test_wctl_prl_pacing), cmocka_unit_test(test_wctl_step),
        cmocka_unit_test(test_wctl_step_grows), cmocka_unit_test(test_wctl_stop),
        cmocka_unit_test(test_wctl_modes),      cmocka_unit_test(test_wctl_ramp),
        cmocka_unit_test(test_wctl_debt),       cmocka_unit_test(test_wctl_deadline),
        cmocka_unit_test(test_wctl_late),
    };
    return cmocka_run_group_tests_name("sched_wctl", tests, NULL, NULL);
}
