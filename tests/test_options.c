// SPDX-License-Identifier: Apache-2.0
/*
 * test_options.c -- option parsing: sizes with suffixes, booleans, ranges,
 * unknown names and bad values (clear TKV_INVALID, options unchanged).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "db/options.h"
#include "tierkv.h"

static void test_sizes(void **state)
{
    (void)state;
    uint64_t v;
    assert_int_equal(options_parse_size("4096", &v), 0);
    assert_int_equal(v, 4096);
    assert_int_equal(options_parse_size("64K", &v), 0);
    assert_int_equal(v, 64u << 10);
    assert_int_equal(options_parse_size("64m", &v), 0);
    assert_int_equal(v, 64u << 20);
    assert_int_equal(options_parse_size("1G", &v), 0);
    assert_int_equal(v, 1u << 30);
    assert_int_equal(options_parse_size("2T", &v), 0);
    assert_int_equal(v, UINT64_C(2) << 40);
    assert_int_equal(options_parse_size("64MB", &v), 0);
    assert_int_equal(v, 64u << 20);
    const char *bad[] = {"",  "abc", "-1", "12Q", "1.5G", " 1", "1 ", "64MBx", "99999999999999999999", "20000000000T",
                         NULL};
    for (int i = 0; bad[i]; i++) assert_int_equal(options_parse_size(bad[i], &v), TKV_INVALID);
}

static void test_set_and_defaults(void **state)
{
    (void)state;
    tkv_options *o = tkv_options_new();
    assert_non_null(o);
    assert_int_equal(o->memtable_size, 64u << 20);
    assert_int_equal(o->memtables, 2);
    assert_int_equal(o->wal, 1);
    assert_int_equal(o->create_if_missing, 1);
    assert_int_equal(tkv_options_set(o, "memtable_size", "1M"), TKV_OK);
    assert_int_equal(o->memtable_size, 1u << 20);
    assert_int_equal(tkv_options_set(o, "wal", "off"), TKV_OK);
    assert_int_equal(o->wal, 0);
    assert_int_equal(tkv_options_set(o, "wal", "TRUE"), TKV_OK);
    assert_int_equal(o->wal, 1);
    assert_int_equal(tkv_options_set(o, "memtables", "4"), TKV_OK);
    assert_int_equal(o->memtables, 4);
    char *d = options_describe(o);
    assert_non_null(strstr(d, "memtable_size=1048576\n"));
    assert_non_null(strstr(d, "memtables=4\n"));
    free(d);
    tkv_options_free(o);
    tkv_options_free(NULL);
}

static void test_errors(void **state)
{
    (void)state;
    tkv_options *o = tkv_options_new();
    struct tkv_options before = *o;
    assert_int_equal(tkv_options_set(o, "no_such_option", "1"), TKV_INVALID);
    assert_non_null(strstr(tkv_errmsg(), "no_such_option"));
    assert_int_equal(tkv_options_set(o, "memtable_size", "huge"), TKV_INVALID);
    assert_non_null(strstr(tkv_errmsg(), "memtable_size"));
    assert_int_equal(tkv_options_set(o, "memtable_size", "1K"), TKV_INVALID); /* below 16K */
    assert_non_null(strstr(tkv_errmsg(), "out of range"));
    assert_int_equal(tkv_options_set(o, "memtables", "1"), TKV_INVALID);
    assert_int_equal(tkv_options_set(o, "memtables", "65"), TKV_INVALID);
    assert_int_equal(tkv_options_set(o, "wal", "maybe"), TKV_INVALID);
    assert_non_null(strstr(tkv_errmsg(), "wal"));
    assert_int_equal(tkv_options_set(o, "sync", ""), TKV_INVALID);
    assert_int_equal(tkv_options_set(NULL, "sync", "1"), TKV_INVALID);
    assert_int_equal(tkv_options_set(o, NULL, "1"), TKV_INVALID);
    assert_int_equal(tkv_options_set(o, "sync", NULL), TKV_INVALID);
    assert_memory_equal(&before, o, sizeof before); /* nothing changed */
    tkv_options_free(o);
}

/* test_auto_l1_size -- l1_size is 0 (automatic) by default, takes 0 or
 * 64K..16T, and options_resolve_at_open derives it from the pool with
 * l0=matrix, a fixed 1G with l0=sst, and keeps an explicit value. */
static void test_auto_l1_size(void **state)
{
    (void)state;
    tkv_options *o = tkv_options_new();
    assert_int_equal(o->l1_size, 0);
    assert_int_equal(tkv_options_set(o, "l1_size", "1K"), TKV_INVALID);
    assert_non_null(strstr(tkv_errmsg(), "automatic"));
    assert_int_equal(tkv_options_set(o, "l1_size", "8M"), TKV_OK);
    assert_int_equal(o->l1_size, 8u << 20);
    struct tkv_options r = *o;
    options_resolve_at_open(&r, 64u << 20);
    assert_int_equal(r.l1_size, 8u << 20); /* explicit wins */
    assert_int_equal(options_level_target(&r, 2), 80u << 20);
    assert_int_equal(tkv_options_set(o, "l1_size", "0"), TKV_OK);
    r = *o;
    options_resolve_at_open(&r, 64u << 20);
    assert_int_equal(r.l1_size, 64u << 20); /* l0=matrix: the pool */
    assert_int_equal(tkv_options_set(o, "l0", "sst"), TKV_OK);
    r = *o;
    options_resolve_at_open(&r, 0);
    assert_int_equal(r.l1_size, OPTIONS_L1_SIZE_SST);
    assert_int_equal(OPTIONS_L1_SIZE_SST, UINT64_C(1) << 30);
    tkv_options_free(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_set_and_defaults),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_auto_l1_size),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
