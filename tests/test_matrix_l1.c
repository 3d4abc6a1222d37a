/*
 * test_matrix_l1.c -- L1 under the matrix container (l0=matrix):
 *
 *  l1_target_auto   l1_size=0 (the default) sizes L1 from the pool: the
 *                   effective target in tkv.options and tkv.stats is the
 *                   pool's size (its header's on a reopen), an explicit
 *                   l1_size wins, l0=sst has the fixed 1G
 *
 * Replay a failure with the printed TKV_TEST_SEED.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

/* l1_options -- small memtables; l0, pmem_size and l1_size when non-NULL. */
static tkv_options *l1_options(const char *l0, const char *pmem_size, const char *l1_size)
{
    tkv_options *o = tkv_options_new();
    assert_non_null(o);
    assert_int_equal(tkv_options_set(o, "memtable_size", "256K"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "block_cache_size", "1M"), TKV_OK);
    if (l0) assert_int_equal(tkv_options_set(o, "l0", l0), TKV_OK);
    if (pmem_size) assert_int_equal(tkv_options_set(o, "pmem_size", pmem_size), TKV_OK);
    if (l1_size) assert_int_equal(tkv_options_set(o, "l1_size", l1_size), TKV_OK);
    return o;
}

/* ---------------------------------------------------------------- L1's target */

/* expect_l1_target -- tkv.options (l1_size=) and tkv.stats (level.L1's
 * target=) both show `want`. */
static void expect_l1_target(tkv_db *db, uint64_t want, const char *what)
{
    uint64_t opt = tu_prop_u64(db, "tkv.options", "\nl1_size=");
    char *st = tkv_property(db, "tkv.stats");
    assert_non_null(st);
    const char *l1 = strstr(st, "level.L1: "), *t = l1 ? strstr(l1, " target=") : NULL;
    if (!t) fail_msg("%s: tkv.stats has no L1 target:\n%s", what, st);
    uint64_t stats = strtoull(t + strlen(" target="), NULL, 10);
    tkv_free(st);
    print_message("%s: l1_size=%llu, L1 target=%llu\n", what, (unsigned long long)opt, (unsigned long long)stats);
    if (opt != want || stats != want)
        fail_msg("%s: l1_size=%llu and L1 target=%llu, want %llu", what, (unsigned long long)opt,
                 (unsigned long long)stats, (unsigned long long)want);
}

static void l1_target_auto(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("mx-l1target");
    tkv_options *o = l1_options("matrix", "64M", NULL);
    tkv_db *db = tu_open_ok(dir, o);
    expect_l1_target(db, 64u << 20, "pmem_size=64M");
    assert_int_equal(tkv_put(db, "k", 1, "v", 1, 0), TKV_OK);
    tu_close_ok(db);
    tkv_options_free(o);

    o = l1_options("matrix", NULL, NULL); /* pmem_size=0: the existing pool's own size */
    db = tu_open_ok(dir, o);
    expect_l1_target(db, 64u << 20, "reopened without pmem_size");
    tu_close_ok(db);
    tkv_options_free(o);

    o = l1_options("matrix", NULL, "8M");
    db = tu_open_ok(dir, o);
    expect_l1_target(db, 8u << 20, "l1_size=8M");
    tu_close_ok(db);
    tkv_options_free(o);
    tu_tmpdir_free(dir);

    dir = tu_tmpdir("mx-l1target-sst");
    o = l1_options("sst", NULL, NULL);
    db = tu_open_ok(dir, o);
    expect_l1_target(db, UINT64_C(1) << 30, "l0=sst");
    tu_close_ok(db);
    tkv_options_free(o);
    tu_tmpdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(l1_target_auto),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
