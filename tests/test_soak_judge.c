// SPDX-License-Identifier: Apache-2.0
/*
 * test_soak_judge.c -- the soak driver's verdict (tests/soak/soak.c,
 * `tkv_soak --judge LOG`) on made-up logs, so that `make soak` keeps
 * telling a plateau from a leak:
 *
 *  judge_plateau    RSS swinging by 40 MiB around a level (the pool's pages
 *                   and the allocator's retention do that), the heap in
 *                   use by 4 MiB: passes
 *  judge_leak       the heap in use rising by 1 MiB a minute, RSS with it
 *                   (hidden in its swings): fails
 *  judge_rss_growth RSS rising by 3 MiB a minute over a steady heap (the
 *                   allocator keeping ever more): fails
 *  judge_fd_leak    a descriptor more every two minutes fails
 *  judge_short      fewer than 6 samples are not judged (passes)
 *
 * The driver is $TKV_BUILD/tkv_soak (built by make tests); the test is
 * skipped if it is missing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

/* judge -- writes n samples a minute apart (rss and anon from rss_at, the
 * heap in use from heap_at, fds from fds_at) and returns tkv_soak --judge's
 * exit status (-1: skipped). */
static int judge(int n, double (*rss_at)(int), double (*heap_at)(int), int (*fds_at)(int))
{
    const char *build = getenv("TKV_BUILD");
    char exe[512], log[] = "/tmp/tkv-soak-judge-XXXXXX";
    snprintf(exe, sizeof exe, "%s/tkv_soak", build && *build ? build : "build");
    if (access(exe, X_OK) != 0) return -1;
    int fd = mkstemp(log);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    assert_non_null(f);
    fprintf(f, "[soak] duration=%ds interval=60s\n", n * 60);
    for (int i = 0; i < n; i++) {
        double rss = rss_at(i);
        fprintf(f,
                "[soak] t=%6ds ops=%d (1/s) rss=%.1fM anon=%.1fM file=%.1fM heap=%.1fM/%.1fM fds=%d "
                "pool_used=1.0M pool_alloc=1.0M dram=1.0M/64.0M disk=1.0M reopens=0\n",
                (i + 1) * 60, i, rss, rss - 80, 80.0, heap_at(i), rss - 85, fds_at(i));
    }
    fclose(f);
    char cmd[1200], out[sizeof log + 4];
    snprintf(out, sizeof out, "%s.out", log);
    snprintf(cmd, sizeof cmd, "%s --judge %s > %s 2>&1", exe, log, out);
    int st = system(cmd);
    unlink(log);
    unlink(out);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

/* swing -- a deterministic wobble of +-20 MiB. */
static double swing(int i) { return 20.0 * ((double)((i * 7919) % 17) / 8.0 - 1.0); }
static double flat(int i) { return (i < 2 ? 120.0 + 20 * i : 180.0) + swing(i); }
static double leak(int i) { return flat(i) + i; }
static double growth(int i) { return flat(i) + 3 * i; }
static double heap_flat(int i) { return 48.0 + swing(i) / 10; }
static double heap_leak(int i) { return heap_flat(i) + i; }
static int fds_flat(int i) { return 16 + (i * 31) % 5; }
static int fds_leak(int i) { return 16 + i / 2; }

static void check(int rc, int want)
{
    if (rc < 0) skip();
    assert_int_equal(rc, want);
}

static void judge_plateau(void **state)
{
    (void)state;
    check(judge(30, flat, heap_flat, fds_flat), 0);
}

static void judge_leak(void **state)
{
    (void)state;
    check(judge(30, leak, heap_leak, fds_flat), 1);
}

static void judge_rss_growth(void **state)
{
    (void)state;
    check(judge(30, growth, heap_flat, fds_flat), 1);
}

static void judge_fd_leak(void **state)
{
    (void)state;
    check(judge(30, flat, heap_flat, fds_leak), 1);
}

static void judge_short(void **state)
{
    (void)state;
    check(judge(5, growth, heap_leak, fds_leak), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(judge_plateau), cmocka_unit_test(judge_leak),  cmocka_unit_test(judge_rss_growth),
        cmocka_unit_test(judge_fd_leak), cmocka_unit_test(judge_short),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
