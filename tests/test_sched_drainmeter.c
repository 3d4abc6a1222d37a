// SPDX-License-Identifier: Apache-2.0
/*
 * test_sched_drainmeter.c -- the matrix container's drain rate from its
 * columns' samples (src/sched/drainmeter.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sched/drainmeter.h"
#include "testutil.h"

#define MiB (1ull << 20)

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
    assert_int_equal(dm_rate(&m, 1, 64 * MiB, 10000, 20000, &r), 0);  /* first column, too young */
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

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_drainmeter),
    };
    return cmocka_run_group_tests_name("sched_drainmeter", tests, NULL, NULL);
}
