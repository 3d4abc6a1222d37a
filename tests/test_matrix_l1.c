// SPDX-License-Identifier: Apache-2.0
/*
 * test_matrix_l1.c -- L1 under the matrix container (l0=matrix):
 *
 *  l1_target_auto   l1_size=0 (the default) sizes L1 from the pool: the
 *                   effective target in tkv.options and tkv.stats is the
 *                   pool's size (its header's on a reopen), an explicit
 *                   l1_size wins, l0=sst has the fixed 1G
 *  l1_files_sequential  the reported fragmentation, small: ascending keys
 *                   with 4 KiB values that compress ~4x, a small pool,
 *                   sst_size=1M. Each column's output is ~1/8 of sst_size;
 *                   small L1 neighbours are merged (matrix/column.h step
 *                   5), and the test asserts the bound that step keeps for
 *                   appending columns plus an average of at least
 *                   sst_size/2, and reads every key back
 *  l1_files_other_orders  descending and random keys: every key reads
 *                   back; L1's files average at least sst_size/4 (a
 *                   regression bound: unmerged they averaged ~sst_size/8
 *                   descending)
 *  l1_compression_per_level  l1_compression for L1's SSTs, compression
 *                   for L2's (table properties: blocks stored compressed)
 *
 * Replay a failure with the printed TKV_TEST_SEED.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "db/db_impl.h"
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

/* ---------------------------------------------------------------- L1 file sizes */

#define VALUE_SIZE 4096
#define SST_SIZE   (UINT64_C(1) << 20)

static size_t key_of(uint64_t k, char *buf) { return (size_t)sprintf(buf, "key%010llu", (unsigned long long)k); }

/* value_of -- VALUE_SIZE bytes: a header naming key and version, pseudo-random
 * letters up to 1 KiB, then one letter repeated: lz4 makes it ~4x smaller. */
static void value_of(uint64_t k, uint64_t ver, char *buf)
{
    uint64_t h = tu_mix64(k * 131 + ver);
    size_t n = (size_t)sprintf(buf, "v%llu.%llu|", (unsigned long long)k, (unsigned long long)ver);
    for (size_t i = n; i < VALUE_SIZE; i++) {
        if (i < 1024) {
            h = tu_mix64(h);
            buf[i] = (char)('a' + h % 26);
        } else {
            buf[i] = (char)('A' + k % 26);
        }
    }
}

/* files_options -- the reproduction's options: a pool of 8M (columns of
 * 512K of rows, ~128K once compressed in L1), 256K memtables, sst_size=1M,
 * and (as in the report, whose l1_size was 1G) an L1 that never compacts
 * down, so every column's output stays in L1. parallel: columns run two at
 * a time whenever they can (column_gate=always); else one at a time. */
static tkv_options *files_options(int parallel)
{
    tkv_options *o = l1_options("matrix", "8M", "1G");
    assert_int_equal(tkv_options_set(o, "sst_size", "1M"), TKV_OK);
    if (parallel) assert_int_equal(tkv_options_set(o, "column_gate", "always"), TKV_OK);
    else assert_int_equal(tkv_options_set(o, "column_threads", "1"), TKV_OK);
    return o;
}

/* l1_sizes -- the sizes of the current version's L1 files, in key order
 * (malloc'd), through the engine's version: tkv.levels has only totals. */
static uint64_t *l1_sizes(tkv_db *db, size_t *n)
{
    pthread_mutex_lock(&db->mu);
    version *v = vset_current(db->vs);
    *n = v->nfiles[1];
    uint64_t *s = calloc(*n + 1, sizeof *s);
    assert_non_null(s);
    for (size_t i = 0; i < *n; i++) s[i] = v->files[1][i]->size;
    pthread_mutex_unlock(&db->mu);
    return s;
}

/* fill -- n puts of key order `order` ("asc", "desc", "random"), the model
 * alongside; then a flush and a wait until no column runs. */
static void fill(tkv_db *db, tu_model *m, const char *order, uint64_t n)
{
    tu_rng r;
    tu_rng_init(&r, tu_seed() + 5);
    char kb[32], *vb = malloc(VALUE_SIZE);
    assert_non_null(vb);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t k = !strcmp(order, "asc") ? i : !strcmp(order, "desc") ? n - i : tu_rng_below(&r, n);
        size_t kn = key_of(k, kb);
        value_of(k, i, vb);
        int rc = tkv_put(db, kb, kn, vb, VALUE_SIZE, 0);
        if (rc != TKV_OK) fail_msg("put %s: %s", kb, tkv_errmsg());
        tu_model_put(m, kb, kn, vb, VALUE_SIZE);
    }
    free(vb);
    assert_int_equal(tkv_flush(db), TKV_OK);
    for (int i = 0; i < 1000 && tu_prop_u64(db, "tkv.stats", "busy="); i++) usleep(10000);
}

/* report -- prints L1's files and returns their count and total bytes. */
static void report(tkv_db *db, const char *what, const uint64_t *s, size_t n, uint64_t *total)
{
    uint64_t min = UINT64_MAX;
    *total = 0;
    for (size_t i = 0; i < n; i++) {
        *total += s[i];
        if (s[i] < min) min = s[i];
    }
    print_message("%s: L1 files=%zu bytes=%llu average=%llu min=%llu (sst_size %llu); columns=%llu "
                  "l1_merged_files=%llu column write_bytes=%llu\n",
                  what, n, (unsigned long long)*total, (unsigned long long)(n ? *total / n : 0),
                  (unsigned long long)(n ? min : 0), (unsigned long long)SST_SIZE,
                  (unsigned long long)tu_prop_u64(db, "tkv.matrix", "columns: count="),
                  (unsigned long long)tu_prop_u64(db, "tkv.matrix", "l1_merged_files="),
                  (unsigned long long)tu_prop_u64(db, "tkv.matrix", " write_bytes="));
}

static void l1_files_sequential(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("mx-l1files");
    /* the bound holds for columns one at a time: a column cannot merge the
     * output of one running beside it (it does not exist yet), and in an
     * ascending fill no later column comes back to it; l1_files_other_orders
     * covers parallel columns with the weaker average */
    tkv_options *o = files_options(0);
    tkv_db *db = tu_open_ok(dir, o);
    tu_model *m = tu_model_new();
    fill(db, m, "asc", 20000 * tu_scale());
    size_t n;
    uint64_t *s = l1_sizes(db, &n), total;
    report(db, "ascending", s, n, &total);
    /* column.h step 5's bound for columns that append at one end: every
     * L1 file is big (>= sst_size/2) but for a trailing run of small ones
     * at the appending (high) end, of fewer than log2(sst_size / 2m) + 1
     * files, m the smallest of them */
    size_t run = n;
    while (run > 0 && s[run - 1] < SST_SIZE / 2) run--;
    for (size_t i = 0; i < run; i++)
        if (s[i] < SST_SIZE / 2)
            fail_msg("L1 file %zu of %zu holds %llu bytes, below sst_size/2, before the trailing run", i, n,
                     (unsigned long long)s[i]);
    if (run < n) {
        uint64_t min = s[run];
        for (size_t i = run; i < n; i++) min = s[i] < min ? s[i] : min;
        double bound = log2((double)SST_SIZE / (2.0 * (double)min)) + 1;
        if ((double)(n - run) >= bound)
            fail_msg("a trailing run of %zu small L1 files (smallest %llu): the bound is < %.1f", n - run,
                     (unsigned long long)min, bound);
    }
    /* the criterion: L1 files near sst_size, on average at least half */
    assert_true(n > 0);
    if (total / n < SST_SIZE / 2)
        fail_msg("L1 files average %llu bytes, below sst_size/2", (unsigned long long)(total / n));
    free(s);
    tu_check_db(db, NULL, m, "ascending fill");
    tu_close_reopen_check(db, dir, o, m, "ascending fill, reopened");
    tu_model_free(m);
    tkv_options_free(o);
    tu_tmpdir_free(dir);
}

static void l1_files_other_orders(void **state)
{
    (void)state;
    static const char *const orders[] = {"desc", "random", "asc"};
    for (size_t i = 0; i < 3; i++) { /* the ascending fill here with parallel columns */
        char *dir = tu_tmpdir("mx-l1files");
        tkv_options *o = files_options(i == 2);
        tkv_db *db = tu_open_ok(dir, o);
        tu_model *m = tu_model_new();
        fill(db, m, orders[i], 20000 * tu_scale());
        size_t n;
        uint64_t *s = l1_sizes(db, &n), total;
        report(db, orders[i], s, n, &total);
        free(s);
        assert_true(n > 0);
        if (total / n < SST_SIZE / 4)
            fail_msg("%s: L1 files average %llu bytes, below sst_size/4", orders[i], (unsigned long long)(total / n));
        tu_check_db(db, NULL, m, orders[i]);
        tu_close_reopen_check(db, dir, o, m, orders[i]);
        tu_model_free(m);
        tkv_options_free(o);
        tu_tmpdir_free(dir);
    }
}

/* compressed_blocks -- the data blocks of the current version's level-`level`
 * files, and how many of them are stored compressed (table properties). */
static void compressed_blocks(tkv_db *db, int level, uint64_t *blocks, uint64_t *compressed)
{
    *blocks = *compressed = 0;
    pthread_mutex_lock(&db->mu);
    version *v = vset_current(db->vs);
    version_ref(v);
    pthread_mutex_unlock(&db->mu);
    for (size_t i = 0; i < v->nfiles[level]; i++) {
        cache_handle *h;
        assert_int_equal(table_cache_find(db->tc, v->files[level][i], &h), 0);
        const table_props *p = table_properties(table_cache_table(h));
        *blocks += p->num_data_blocks;
        *compressed += p->num_compressed_blocks;
        table_cache_release(db->tc, h);
    }
    pthread_mutex_lock(&db->mu);
    version_unref(v);
    pthread_mutex_unlock(&db->mu);
}

/* l1_compression_per_level -- l1_compression applies to L1's SSTs and
 * compression to L2's: with values that lz4 makes ~4x smaller, an L1 of
 * `none` holds no compressed block while L2 (lz4) compresses nearly all,
 * and the other way round; `same` follows compression. Every key reads
 * back, also after a reopen. */
static void l1_compression_per_level(void **state)
{
    (void)state;
    static const char *const l1c[] = {"none", "lz4", "same"}, *const c[] = {"lz4", "none", "none"};
    for (size_t i = 0; i < 3; i++) {
        char *dir = tu_tmpdir("mx-l1comp");
        tkv_options *o = l1_options("matrix", "8M", "2M"); /* L1 of 2M: most data moves on to L2 */
        assert_int_equal(tkv_options_set(o, "sst_size", "1M"), TKV_OK);
        assert_int_equal(tkv_options_set(o, "compression", c[i]), TKV_OK);
        assert_int_equal(tkv_options_set(o, "l1_compression", l1c[i]), TKV_OK);
        /* rows that hold the values as they are: with lz4 rows the 8M pool
         * keeps ~4x as many of these values, and too few reach L1 and L2 */
        assert_int_equal(tkv_options_set(o, "row_compression", "none"), TKV_OK);
        tkv_db *db = tu_open_ok(dir, o);
        tu_model *m = tu_model_new();
        fill(db, m, "random", 6000 * tu_scale()); /* waits until no background work runs */
        uint64_t b1, c1, b2, c2;
        compressed_blocks(db, 1, &b1, &c1);
        compressed_blocks(db, 2, &b2, &c2);
        /* both levels must hold blocks to compare them; where the fill ends
         * decides that (a deep compaction after the last column may empty
         * L1): write more until they do */
        for (int more = 0; more < 4 && (b1 == 0 || b2 == 0); more++) {
            fill(db, m, "random", 3000 * tu_scale());
            compressed_blocks(db, 1, &b1, &c1);
            compressed_blocks(db, 2, &b2, &c2);
        }
        print_message("l1_compression=%s compression=%s: L1 %llu of %llu blocks compressed, L2 %llu of %llu\n", l1c[i],
                      c[i], (unsigned long long)c1, (unsigned long long)b1, (unsigned long long)c2,
                      (unsigned long long)b2);
        assert_true(b1 > 0 && b2 > 0);
        int l1_lz4 = !strcmp(l1c[i], "lz4") || (!strcmp(l1c[i], "same") && !strcmp(c[i], "lz4"));
        int l2_lz4 = !strcmp(c[i], "lz4");
        if (l1_lz4) assert_true(c1 * 10 >= b1 * 9);
        else assert_int_equal(c1, 0);
        if (l2_lz4) assert_true(c2 * 10 >= b2 * 9);
        else assert_int_equal(c2, 0);
        tu_check_db(db, NULL, m, l1c[i]);
        tu_close_reopen_check(db, dir, o, m, l1c[i]);
        tu_model_free(m);
        tkv_options_free(o);
        tu_tmpdir_free(dir);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(l1_target_auto),
        cmocka_unit_test(l1_files_sequential),
        cmocka_unit_test(l1_files_other_orders),
        cmocka_unit_test(l1_compression_per_level),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
