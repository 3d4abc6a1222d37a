// SPDX-License-Identifier: Apache-2.0
/*
 * test_sched_flushprog.c -- the running flush's ETA from its own progress
 * (src/sched/flushprog.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sched/flushprog.h"
#include "testutil.h"

#define MiB (1ull << 20)

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
    fp_add(p, 1 * MiB, 2000);                   /* starts the clock */
    assert_int_equal(fp_eta(p, 3000, &eta), 0); /* under 1/16 */
    fp_add(p, 3 * MiB, 102000);                 /* 3 MiB in 100 ms since the first report: 30 MiB/s */
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

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flushprog),
    };
    return cmocka_run_group_tests_name("sched_flushprog", tests, NULL, NULL);
}
