// SPDX-License-Identifier: Apache-2.0
/*
 * test_memory.c -- the DRAM budget (dram_budget, src/db/budget.h) and the
 * tkv.memory property.
 *
 *  budget_option        parsing: sizes, 0 = off, below 4M refused with the
 *                       range; options_user_set tells explicit options
 *  budget_split         the default split of 64M (memtables a quarter, at
 *                       most their default; tables 1/8; rows and the reserve
 *                       1/16; rings that fit in 1/16; the block cache the
 *                       rest), explicit sizes kept, the shares summing to
 *                       at most the budget, rows 0 with l0=sst, no rings
 *                       with async_io=off
 *  budget_too_small     explicit sizes that do not fit: TKV_INVALID from
 *                       budget_split and from tkv_open, naming the parts and
 *                       the options set; the directory is not created
 *  memory_property      tkv.memory's lines and fields with and without a
 *                       budget; tkv.options shows the derived sizes;
 *                       tkv.stats' dram: line agrees
 *  budget_workload      8M of budget, matrix_trigger=25, small entries into
 *                       a 64M pool (so the rows' DRAM, not the pool, is what
 *                       fills: columns start at a quarter of the rows' 512K
 *                       share, the pool under a sixth full), many small
 *                       SSTs: writes, overwrites, deletes, gets and scans;
 *                       every measured part stays at its share and the
 *                       total within the budget; the data
 *                       matches a model, also after a reopen; the flush
 *                       thread reserved spare memtable blocks
 *  rows_wait            4M, matrix_trigger=100: the flush finds the
 *                       rows' share full and waits for columns (no_space)
 *  spares_ahead         a first memtable a quarter full: no spare blocks;
 *                       half full: the idle flush thread reserves the
 *                       next memtable's blocks before any flush (the
 *                       rest of the active one's too), within the
 *                       memtables' share (2 x memtable_size);
 *                       the writes go on through switches and flushes and
 *                       match a model, also after a reopen
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "db/budget.h"
#include "db/options.h"
#include "io/uring.h"
#include "testutil.h"

#define MiB (UINT64_C(1) << 20)

static void budget_option(void **state)
{
    (void)state;
    tkv_options *o = tkv_options_new();
    assert_int_equal(o->dram_budget, 0);
    assert_false(options_user_set(o, "dram_budget"));
    assert_int_equal(tkv_options_set(o, "dram_budget", "64M"), TKV_OK);
    assert_int_equal(o->dram_budget, 64 * MiB);
    assert_true(options_user_set(o, "dram_budget"));
    assert_false(options_user_set(o, "memtable_size"));
    assert_false(options_user_set(o, "no_such_option"));
    assert_int_equal(tkv_options_set(o, "dram_budget", "1M"), TKV_INVALID);
    assert_non_null(strstr(tkv_errmsg(), "dram_budget"));
    assert_non_null(strstr(tkv_errmsg(), "(or 0: off)"));
    assert_int_equal(o->dram_budget, 64 * MiB); /* unchanged */
    assert_int_equal(tkv_options_set(o, "dram_budget", "lots"), TKV_INVALID);
    assert_int_equal(tkv_options_set(o, "dram_budget", "0"), TKV_OK);
    assert_int_equal(o->dram_budget, 0);
    assert_int_equal(tkv_options_set(o, "dram_budget", "4M"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "memtable_size", "64M"), TKV_OK); /* its default, but set */
    assert_true(options_user_set(o, "memtable_size"));
    tkv_options_free(o);
}

static uint64_t share_sum(const dram_split *d)
{
    uint64_t s = 0;
    for (int p = 0; p < BUDGET_NPARTS; p++) s += d->share[p];
    return s;
}

static void budget_split_defaults(void **state)
{
    (void)state;
    uint64_t ring = io_ring_cost(BUDGET_RING_DEPTH);
    tkv_options *o = tkv_options_new();
    dram_split d;
    /* no budget: the configured sizes */
    struct tkv_options c = *o;
    assert_int_equal(budget_split(&c, &d), 0);
    assert_int_equal(d.total, 0);
    assert_int_equal(d.share[BUDGET_MEMTABLES], 128 * MiB);
    assert_int_equal(d.share[BUDGET_BLOCK_CACHE], 256 * MiB);
    assert_int_equal(d.share[BUDGET_TABLES], 0);
    assert_int_equal(d.share[BUDGET_ROWS], 0);
    assert_int_equal(d.max_rings, BUDGET_MAX_RINGS);
    assert_memory_equal(&c, o, sizeof c);
    /* 64M: memtables 2 x 8M, tables 8M, rows 4M, rings in 4M, reserve 4M */
    assert_int_equal(tkv_options_set(o, "dram_budget", "64M"), TKV_OK);
    c = *o;
    assert_int_equal(budget_split(&c, &d), 0);
    assert_int_equal(c.memtable_size, 8 * MiB);
    assert_int_equal(d.share[BUDGET_MEMTABLES], 16 * MiB);
    assert_int_equal(d.share[BUDGET_TABLES], 8 * MiB);
    assert_int_equal(d.share[BUDGET_ROWS], 4 * MiB);
    assert_int_equal(d.share[BUDGET_OTHER], 4 * MiB);
    assert_int_equal(d.max_rings, (4 * MiB) / ring);
    assert_true(d.max_rings >= 1);
    assert_int_equal(d.share[BUDGET_RINGS], d.max_rings * ring);
    assert_int_equal(c.block_cache_size, d.share[BUDGET_BLOCK_CACHE]);
    assert_int_equal(share_sum(&d), 64 * MiB); /* the cache takes the rest */
    assert_false(d.user_set[BUDGET_MEMTABLES]);
    /* 8G: memtables stay at their default 64M; the cache gets the rest */
    assert_int_equal(tkv_options_set(o, "dram_budget", "8G"), TKV_OK);
    c = *o;
    assert_int_equal(budget_split(&c, &d), 0);
    assert_int_equal(c.memtable_size, 64 * MiB);
    assert_int_equal(d.max_rings, BUDGET_MAX_RINGS);
    assert_true(c.block_cache_size > 4096 * MiB);
    assert_int_equal(share_sum(&d), 8192 * MiB);
    /* explicit sizes are kept; memtables set alone divides the quarter */
    assert_int_equal(tkv_options_set(o, "dram_budget", "64M"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "memtables", "4"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "block_cache_size", "10M"), TKV_OK);
    c = *o;
    assert_int_equal(budget_split(&c, &d), 0);
    assert_int_equal(c.memtable_size, 4 * MiB);
    assert_true(d.user_set[BUDGET_MEMTABLES]);
    assert_true(d.user_set[BUDGET_BLOCK_CACHE]);
    assert_int_equal(c.block_cache_size, 10 * MiB);
    assert_true(share_sum(&d) <= 64 * MiB);
    /* a set pmem_size caps derived memtables at 1/8 of it */
    assert_int_equal(tkv_options_set(o, "pmem_size", "16M"), TKV_OK);
    c = *o;
    assert_int_equal(budget_split(&c, &d), 0);
    assert_int_equal(c.memtable_size, 2 * MiB);
    /* l0=sst: no rows share; async_io=off: no rings */
    assert_int_equal(tkv_options_set(o, "l0", "sst"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "async_io", "off"), TKV_OK);
    c = *o;
    assert_int_equal(budget_split(&c, &d), 0);
    assert_int_equal(d.share[BUDGET_ROWS], 0);
    assert_int_equal(d.max_rings, 0);
    assert_int_equal(d.share[BUDGET_RINGS], 0);
    tkv_options_free(o);
}

static void budget_too_small(void **state)
{
    (void)state;
    tkv_options *o = tkv_options_new();
    assert_int_equal(tkv_options_set(o, "dram_budget", "64M"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "memtable_size", "32M"), TKV_OK); /* 2 x 32M: half of it */
    assert_int_equal(tkv_options_set(o, "block_cache_size", "24M"), TKV_OK);
    struct tkv_options c = *o;
    dram_split d;
    assert_int_equal(budget_split(&c, &d), TKV_INVALID);
    const char *msg = tkv_errmsg();
    assert_non_null(strstr(msg, "dram_budget=64M"));
    assert_non_null(strstr(msg, "memtables 2 x 32M = 64M (memtable_size or memtables set)"));
    assert_non_null(strstr(msg, "block_cache 24M (block_cache_size set)"));
    assert_non_null(strstr(msg, "tables 8M"));
    assert_non_null(strstr(msg, "rows 4M"));
    assert_memory_equal(&c, o, sizeof c); /* unchanged on error */
    /* tkv_open refuses it before creating anything */
    char *dir = tu_tmpdir("mem-small");
    char *db_dir = tu_path(dir, "db");
    tkv_db *db = (tkv_db *)1;
    assert_int_equal(tkv_open(db_dir, o, &db), TKV_INVALID);
    assert_null(db);
    assert_non_null(strstr(tkv_errmsg(), "block_cache_size set"));
    struct stat st;
    assert_int_not_equal(stat(db_dir, &st), 0);
    /* memtables alone too large, the cache derived: still refused */
    assert_int_equal(tkv_options_set(o, "block_cache_size", "0"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "memtable_size", "64M"), TKV_OK);
    c = *o;
    assert_int_equal(budget_split(&c, &d), TKV_INVALID);
    assert_non_null(strstr(tkv_errmsg(), "memtables 2 x 64M = 128M"));
    free(db_dir);
    tu_tmpdir_free(dir);
    tkv_options_free(o);
}

/* prop_line_u64 -- the number after `field` on the line of property
 * `name` that starts with `line`. */
static uint64_t prop_line_u64(tkv_db *db, const char *name, const char *line, const char *field)
{
    char *p = tkv_property(db, name);
    if (!p) fail_msg("tkv_property %s: %s", name, tkv_errmsg());
    char *l = p;
    while (l && strncmp(l, line, strlen(line)) != 0) {
        l = strchr(l, '\n');
        if (l) l++;
    }
    if (!l) fail_msg("%s: no line %s in:\n%s", name, line, p);
    char *eol = strchr(l, '\n');
    char *f = strstr(l, field);
    if (!f || (eol && f > eol)) fail_msg("%s: no %s on line %s in:\n%s", name, field, line, p);
    uint64_t v = strtoull(f + strlen(field), NULL, 10);
    tkv_free(p);
    return v;
}

static const char *const PARTS[] = {"memtables:", "block_cache:", "tables:", "rows:", "rings:"};

static void memory_property(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("mem-prop");
    /* no budget: the configured sizes */
    tkv_options *o = tu_small_options();
    tkv_db *db = tu_open_ok(dir, o);
    assert_int_equal(tkv_put(db, "k", 1, "v", 1, 0), TKV_OK);
    char *p = tkv_property(db, "tkv.memory");
    assert_non_null(p);
    assert_non_null(strstr(p, "budget: total=0 used="));
    assert_non_null(strstr(p, "(no dram_budget)"));
    assert_non_null(strstr(p, "other: share=0 "));
    tkv_free(p);
    assert_int_equal(prop_line_u64(db, "tkv.memory", "memtables:", "share="), 2 * 64 * 1024);
    assert_int_equal(prop_line_u64(db, "tkv.memory", "block_cache:", "share="), MiB);
    assert_int_equal(prop_line_u64(db, "tkv.memory", "tables:", "share="), 0);
    assert_true(prop_line_u64(db, "tkv.memory", "memtables:", "used=") > 0);
    tu_close_ok(db);
    tkv_options_free(o);
    assert_int_equal(tkv_destroy(dir), TKV_OK);

    /* a budget: its split, reported and in effect */
    o = tu_small_options();
    assert_int_equal(tkv_options_set(o, "dram_budget", "16M"), TKV_OK);
    db = tu_open_ok(dir, o);
    assert_int_equal(tkv_put(db, "k", 1, "v", 1, 0), TKV_OK);
    assert_int_equal(prop_line_u64(db, "tkv.memory", "budget:", "total="), 16 * MiB);
    uint64_t sum = 0, used = 0;
    for (size_t i = 0; i < sizeof PARTS / sizeof PARTS[0]; i++) {
        sum += prop_line_u64(db, "tkv.memory", PARTS[i], "share=");
        used += prop_line_u64(db, "tkv.memory", PARTS[i], "used=");
    }
    sum += prop_line_u64(db, "tkv.memory", "other:", "share=");
    assert_true(sum <= 16 * MiB); /* the block cache is set (1M): the rest is unused */
    assert_int_equal(prop_line_u64(db, "tkv.memory", "budget:", "used="), used);
    assert_int_equal(prop_line_u64(db, "tkv.memory", "memtables:", "set="), 1); /* tu_small_options sets it */
    assert_int_equal(prop_line_u64(db, "tkv.memory", "block_cache:", "set="), 1);
    assert_int_equal(prop_line_u64(db, "tkv.memory", "tables:", "share="), 2 * MiB);
    assert_int_equal(prop_line_u64(db, "tkv.memory", "rows:", "share="), MiB);
    assert_int_equal(prop_line_u64(db, "tkv.memory", "block_cache:", "share="), MiB);
    assert_int_equal(prop_line_u64(db, "tkv.stats", "dram:", "budget="), 16 * MiB);
    assert_true(prop_line_u64(db, "tkv.stats", "dram:", "memtables=") > 0);
    assert_int_equal(prop_line_u64(db, "tkv.options", "dram_budget=", "dram_budget="), 16 * MiB);
    tu_close_ok(db);
    tkv_options_free(o);
    assert_int_equal(tkv_destroy(dir), TKV_OK);

    /* only the budget set: derived sizes in tkv.options */
    o = tkv_options_new();
    assert_int_equal(tkv_options_set(o, "dram_budget", "32M"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "pmem_size", "64M"), TKV_OK);
    db = tu_open_ok(dir, o);
    assert_int_equal(prop_line_u64(db, "tkv.options", "memtable_size=", "memtable_size="), 4 * MiB);
    uint64_t cache = prop_line_u64(db, "tkv.options", "block_cache_size=", "block_cache_size=");
    assert_int_equal(prop_line_u64(db, "tkv.memory", "block_cache:", "share="), cache);
    assert_int_equal(prop_line_u64(db, "tkv.stats", "block_cache:", "capacity="), cache);
    assert_int_equal(prop_line_u64(db, "tkv.memory", "memtables:", "set="), 0);
    tu_close_ok(db);
    tkv_options_free(o);
    tu_tmpdir_free(dir);
}

/* check_parts -- every measured part at its share (memtables: plus one
 * arena block and a write group of slack, the active memtable passing its
 * size by the write that fills it), the total within the budget. */
static void check_parts(tkv_db *db, const char *when)
{
    uint64_t total = prop_line_u64(db, "tkv.memory", "budget:", "total=");
    uint64_t used = prop_line_u64(db, "tkv.memory", "budget:", "used=");
    for (size_t i = 0; i < sizeof PARTS / sizeof PARTS[0]; i++) {
        uint64_t share = prop_line_u64(db, "tkv.memory", PARTS[i], "share=");
        uint64_t u = prop_line_u64(db, "tkv.memory", PARTS[i], "used=");
        uint64_t slack = i == 0 ? 256 * 1024 : 0;
        if (u > share + slack) {
            char *p = tkv_property(db, "tkv.memory");
            fail_msg("%s: %s uses %llu bytes, share %llu:\n%s", when, PARTS[i], (unsigned long long)u,
                     (unsigned long long)share, p);
        }
    }
    if (used > total)
        fail_msg("%s: %llu bytes used, budget %llu", when, (unsigned long long)used, (unsigned long long)total);
}

/* workload -- the writes and checks of budget_workload and rows_wait with
 * matrix_trigger `trigger`. */
static void workload(const char *budget, const char *trigger, uint64_t n)
{
    char *dir = tu_tmpdir("mem-work");
    tkv_options *o = tkv_options_new();
    const char *opts[][2] = {{"dram_budget", budget},   {"pmem_size", "64M"},     {"matrix_trigger", trigger},
                             {"column_bytes", "1M"},    {"sst_size", "64K"},      {"l1_size", "1M"},
                             {"level_multiplier", "4"}, {"column_gate", "always"}};
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
        assert_int_equal(tkv_options_set(o, opts[i][0], opts[i][1]), TKV_OK);
    tkv_db *db = tu_open_ok(dir, o);
    tu_model *m = tu_model_new();
    tu_rng r;
    tu_rng_init(&r, tu_seed());
    uint64_t rows_share = prop_line_u64(db, "tkv.memory", "rows:", "share=");
    assert_int_equal(rows_share, o->dram_budget / 16);
    for (uint64_t i = 0; i < n; i++) {
        char k[24], v[16];
        int kn = snprintf(k, sizeof k, "k%09llu", (unsigned long long)tu_rng_below(&r, 50000));
        int vn = snprintf(v, sizeof v, "%llu", (unsigned long long)i);
        if (tu_rng_below(&r, 10) == 0) {
            assert_int_equal(tkv_delete(db, k, (size_t)kn, 0), TKV_OK);
            tu_model_del(m, k, (size_t)kn);
        } else {
            assert_int_equal(tkv_put(db, k, (size_t)kn, v, (size_t)vn, 0), TKV_OK);
            tu_model_put(m, k, (size_t)kn, v, (size_t)vn);
        }
        if (i % 997 == 0) {
            void *got = NULL;
            size_t gn = 0;
            int rc = tkv_get(db, NULL, k, (size_t)kn, &got, &gn);
            const void *mv;
            size_t mn;
            assert_int_equal(rc, tu_model_get(m, k, (size_t)kn, &mv, &mn) ? TKV_OK : TKV_NOT_FOUND);
            tkv_free(got);
        }
        if (i % 20000 == 0) check_parts(db, "during the writes");
    }
    check_parts(db, "after the writes");
    /* the flush thread faulted spare memtable blocks in ahead of the writer
     * (within the memtables' share, which check_parts holds it to) */
    assert_true(prop_line_u64(db, "tkv.stats", "memtable.spares:", "reserved=") > 0);
    if (getenv("TKV_TEST_VERBOSE")) {
        char *p = tkv_property(db, "tkv.memory");
        printf("%s", p);
        tkv_free(p);
        p = tkv_property(db, "tkv.matrix");
        printf("%s", p);
        tkv_free(p);
    }
    /* the rows' share, not the pool, bounded L0: columns ran although the
     * pool never came near its trigger */
    assert_true(tu_prop_u64(db, "tkv.matrix", "columns: count=") > 0);
    assert_true(tu_prop_u64(db, "tkv.matrix", "bytes: used=") < 32 * MiB);
    tu_check_db(db, NULL, m, "under a budget");
    check_parts(db, "after the scans");
    if (!strcmp(trigger, "100")) /* no compactor before the rows' share is full: the flush waited for one */
        assert_true(tu_prop_u64(db, "tkv.matrix", "flush: rows=") > 0 &&
                    tu_prop_u64(db, "tkv.matrix", "no_space=") > 0);
    tu_close_reopen_check(db, dir, o, m, "reopened under a budget");
    tu_model_free(m);
    tkv_options_free(o);
    tu_tmpdir_free(dir);
}

static void budget_workload(void **state)
{
    (void)state;
    workload("8M", "25", 150000);
}

/* rows_wait -- matrix_trigger=100: no compactor forms before a flush finds
 * the rows' share full; the flush waits for columns (counted as no_space)
 * instead of letting the rows grow, and nothing is lost. */
static void rows_wait(void **state)
{
    (void)state;
    workload("4M", "100", 250000);
}

/* put_kib -- n puts of 1 KiB values, keys from *next on, into db and m. */
static void put_kib(tkv_db *db, tu_model *m, int *next, int n)
{
    char v[1024];
    for (int i = 0; i < n; i++, (*next)++) {
        char k[24];
        int kn = snprintf(k, sizeof k, "key%08d", *next);
        memset(v, 'a' + *next % 26, sizeof v);
        assert_int_equal(tkv_put(db, k, (size_t)kn, v, sizeof v, 0), TKV_OK);
        tu_model_put(m, k, (size_t)kn, v, sizeof v);
    }
}

/* spares_ahead -- the next memtable's arena blocks are reserved while the
 * first one fills (write.c ask_spares_ahead, flush.c reserve_spares_ahead),
 * not at the start of the first flush, where the writers fill the next
 * memtable already. */
static void spares_ahead(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("mem-spares");
    tkv_options *o = tkv_options_new();
    assert_int_equal(tkv_options_set(o, "memtable_size", "4M"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "pmem_size", "64M"), TKV_OK);
    tkv_db *db = tu_open_ok(dir, o);
    tu_model *m = tu_model_new();
    int next = 0;
    put_kib(db, m, &next, 800); /* ~0.8 of 4M: a fifth full, nothing asked */
    usleep(50000);
    assert_int_equal(prop_line_u64(db, "tkv.stats", "memtable.spares:", "reserved="), 0);
    put_kib(db, m, &next, 1400); /* ~2.3M: past half, below full (no switch) */
    assert_int_equal(prop_line_u64(db, "tkv.stats", "flush:", "count="), 0);
    double t0 = tu_now_ms();
    while (prop_line_u64(db, "tkv.stats", "memtable.spares:", "bytes=") < 4 * MiB && tu_now_ms() - t0 < 20000)
        usleep(2000); /* (the flush thread reserves a block at a time) */
    uint64_t spare = prop_line_u64(db, "tkv.stats", "memtable.spares:", "bytes=");
    print_message("spares before the first flush: %llu bytes\n", (unsigned long long)spare);
    assert_true(prop_line_u64(db, "tkv.stats", "memtable.spares:", "reserved=") > 0);
    assert_int_equal(prop_line_u64(db, "tkv.stats", "flush:", "count="), 0); /* ahead of the first flush */
    assert_true(spare >= 4 * MiB);                                           /* a whole next memtable */
    assert_true(prop_line_u64(db, "tkv.memory", "memtables:", "used=") <=    /* live and spare blocks */
                prop_line_u64(db, "tkv.memory", "memtables:", "share="));
    put_kib(db, m, &next, 12000); /* several switches and flushes: the spares are used, and asked again */
    assert_true(prop_line_u64(db, "tkv.stats", "flush:", "count=") > 0);
    assert_true(prop_line_u64(db, "tkv.memory", "memtables:", "used=") <=
                prop_line_u64(db, "tkv.memory", "memtables:", "share="));
    tu_check_db(db, NULL, m, "after the spares ahead");
    tu_close_reopen_check(db, dir, o, m, "reopened after the spares ahead");
    tu_model_free(m);
    tkv_options_free(o);
    tu_tmpdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(budget_option),   cmocka_unit_test(budget_split_defaults), cmocka_unit_test(budget_too_small),
        cmocka_unit_test(memory_property), cmocka_unit_test(budget_workload),       cmocka_unit_test(rows_wait),
        cmocka_unit_test(spares_ahead),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
