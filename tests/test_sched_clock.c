// SPDX-License-Identifier: Apache-2.0
/*
 * test_sched_clock.c -- the scheduler's clock (src/sched/clock.c): a fake
 * clock moves only when told (never backwards) and bounds waits to short
 * polls; the real clock ignores advances and sleeps for real.
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
#include "testutil.h"

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

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_clock),
    };
    return cmocka_run_group_tests_name("sched_clock", tests, NULL, NULL);
}
