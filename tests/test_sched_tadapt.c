// SPDX-License-Identifier: Apache-2.0
/*
 * test_sched_tadapt.c -- T from the observed throughput (src/sched/tadapt.c),
 * on a synthetic device whose level, noise and queue depth the test sets
 * (fixed seed: every run sees the same numbers).
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sched/tadapt.h"
#include "testutil.h"

#define MiB (1ull << 20)

/* A synthetic device for tadapt: each 1 s interval delivers `level` bytes/s
 * times (1 + noise * u), u uniform in [-1, 1) per interval (the hard case:
 * per-window noise averages out over an interval), spread over 100 windows
 * of 10 ms with +-20 % jitter each, with `queue` device calls in flight on
 * average. */
typedef struct tdev {
    tu_rng s;
    uint64_t now;
    int changes;
} tdev;

/* tdev_run -- `secs` seconds of the device; returns T at the end. */
static uint64_t tdev_run(tadapt *a, tdev *d, double level, double noise, double queue, int secs)
{
    for (int k = 0; k < secs; k++) {
        double lv = level * (1.0 + noise * tu_rng_signed_unit(&d->s));
        for (int w = 0; w < 100; w++) {
            d->now += 10000;
            double jit = 1.0 + 0.2 * tu_rng_signed_unit(&d->s);
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
    tu_rng_init_splitmix(&d.s, 42);
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

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tadapt),
    };
    return cmocka_run_group_tests_name("sched_tadapt", tests, NULL, NULL);
}
