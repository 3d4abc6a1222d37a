// SPDX-License-Identifier: Apache-2.0
/*
 * test_matrix_db.c -- the matrix container inside the database (l0=matrix):
 *
 *  matrix_basics        flush into rows, reads and iterators over rows,
 *                       tkv.matrix / tkv.pmem / tkv.stats, reopen
 *  matrix_open_errors   pmem_size on reopen, a pool too small for the
 *                       memtables, l0=sst over rows, a missing or replaced
 *                       pool, a pool shared by two databases
 *  matrix_corruption    flipped bytes in the pool header and in a row:
 *                       TKV_CORRUPTION naming them, never a crash
 *  matrix_mode_switch   l0=sst -> l0=matrix (L0 SSTs go to L1 first) and back
 *                       after a drain
 *  matrix_backpressure  a pool that holds a few rows under a stream of
 *                       writes: flushes wait for columns, nothing is lost
 *  matrix_column_retry  the first column compactions fail (injected write
 *                       errors): retried, later columns proceed, no error
 *  matrix_pinned_views  an iterator and a snapshot opened before many
 *                       columns and row drops still read their state
 *  matrix_concurrent    writers and readers while columns run; no reader
 *                       opens a table (outputs are open before install)
 *  matrix_powercut      power cut at persist points (pmem_mode=crashsim +
 *                       pm_crashsim_arm) across flushes and columns: what
 *                       was acknowledged survives, nothing else appears, no
 *                       pool page leaks
 *
 * Replay a failure with the printed TKV_TEST_SEED.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "emul/pmem.h"
#include "io/io.h"
#include "testutil.h"

/* ---------------------------------------------------------------- helpers */

/* matrix_options -- tu_small_options with l0=matrix and a pool of pmem_size. */
static tkv_options *matrix_options(const char *pmem_size)
{
    tkv_options *o = tu_small_options();
    assert_int_equal(tkv_options_set(o, "l0", "matrix"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "pmem_size", pmem_size), TKV_OK);
    return o;
}

static int prop_has(tkv_db *db, const char *name, const char *needle)
{
    char *p = tkv_property(db, name);
    if (!p) fail_msg("tkv_property %s: %s", name, tkv_errmsg());
    int has = strstr(p, needle) != NULL;
    tkv_free(p);
    return has;
}

/* line_u64 -- the number after `field` on the line of property `name` that
 * starts with `line`. */
static uint64_t line_u64(tkv_db *db, const char *name, const char *line, const char *field)
{
    char *p = tkv_property(db, name);
    if (!p) fail_msg("tkv_property %s: %s", name, tkv_errmsg());
    const char *l = strstr(p, line);
    if (!l) fail_msg("property %s has no line \"%s\":\n%s", name, line, p);
    const char *end = strchr(l, '\n');
    const char *at = strstr(l, field);
    if (!at || (end && at > end)) fail_msg("line \"%s\" of %s has no \"%s\":\n%s", line, name, field, p);
    unsigned long long v = strtoull(at + strlen(field), NULL, 10);
    tkv_free(p);
    return v;
}

/* check_no_leak -- every used pool page belongs to an open row. */
static void check_no_leak(tkv_db *db, const char *what)
{
    /* Both numbers come from one report. A flush building a row holds pages
     * no open row owns yet, so a mismatch must persist (2 s) to be a leak. */
    uint64_t used = 0, owned = 0;
    for (int tries = 0; tries < 200; tries++) {
        char *p = tkv_property(db, "tkv.matrix");
        if (!p) fail_msg("tkv_property tkv.matrix: %s", tkv_errmsg());
        const char *u = strstr(p, "pages: used="), *o = strstr(p, "owned_by_rows=");
        if (!u || !o) fail_msg("tkv.matrix lacks the pages line:\n%s", p);
        used = strtoull(u + strlen("pages: used="), NULL, 10);
        owned = strtoull(o + strlen("owned_by_rows="), NULL, 10);
        tkv_free(p);
        if (used == owned) return;
        usleep(10000);
    }
    fail_msg("%s: %llu pool pages used, %llu owned by rows", what, (unsigned long long)used, (unsigned long long)owned);
}

static size_t key_of(uint64_t k, char *buf) { return (size_t)sprintf(buf, "key%08llu", (unsigned long long)k); }

/* value_of -- a value for key k at version ver: 20..600 bytes, recognisable. */
static size_t value_of(uint64_t k, uint64_t ver, char *buf)
{
    uint64_t h = tu_mix64(k * 31 + ver);
    size_t n = (size_t)sprintf(buf, "v%llu.%llu|", (unsigned long long)k, (unsigned long long)ver);
    size_t len = 20 + (size_t)(h % 580);
    for (size_t i = n; i < len; i++) {
        h = tu_mix64(h);
        buf[i] = (char)('a' + h % 26);
    }
    return len > n ? len : n;
}

/* put_model -- tkv_put + model update. */
static void put_model(tkv_db *db, tu_model *m, uint64_t k, uint64_t ver)
{
    char kb[32], vb[700];
    size_t kn = key_of(k, kb), vn = value_of(k, ver, vb);
    int rc = tu_put_model(db, m, kb, kn, vb, vn, 0);
    if (rc != TKV_OK) fail_msg("put %s: %s: %s", kb, tkv_strerror(rc), tkv_errmsg());
}

static void del_model(tkv_db *db, tu_model *m, uint64_t k)
{
    char kb[32];
    size_t kn = key_of(k, kb);
    assert_int_equal(tkv_delete(db, kb, kn, 0), TKV_OK);
    tu_model_del(m, kb, kn);
}

/* wait_for -- polls property field until it reaches at least `want` (10 s max). */
static uint64_t wait_for(tkv_db *db, const char *name, const char *field, uint64_t want)
{
    uint64_t v = 0;
    for (int i = 0; i < 1000; i++) {
        v = tu_prop_u64(db, name, field);
        if (v >= want) return v;
        usleep(10000);
    }
    return v;
}

/* wait_pool_empty -- after a drain the last rows are dropped by the column
 * thread once the job that drained them lets its version go: poll (10 s max). */
static void wait_pool_empty(tkv_db *db, const char *what)
{
    uint64_t used = 0;
    for (int i = 0; i < 1000; i++) {
        if ((used = tu_prop_u64(db, "tkv.matrix", "pages: used=")) == 0) return;
        usleep(10000);
    }
    fail_msg("%s: %llu pool pages still used after every row drained", what, (unsigned long long)used);
}

static void flip_byte(const char *path, off_t off)
{
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    uint8_t b;
    assert_int_equal(pread(fd, &b, 1, off), 1);
    b ^= 0x5a;
    assert_int_equal(pwrite(fd, &b, 1, off), 1);
    close(fd);
}

/* ---------------------------------------------------------------- basics */

static void matrix_basics(void **state)
{
    (void)state;
    tu_rng r;
    tu_rng_init(&r, tu_seed());
    char *dir = tu_tmpdir("mx-basics");
    tkv_options *o = matrix_options("16M");
    assert_int_equal(tkv_options_set(o, "matrix_trigger", "100"), TKV_OK); /* rows stay: no column */
    tkv_db *db = tu_open_ok(dir, o);
    tu_model *m = tu_model_new();
    put_model(db, m, 99999, 0);
    const tkv_snapshot *early = tkv_snapshot_new(db);
    tu_model *at_early = tu_model_copy(m);
    for (uint64_t i = 0; i < 3000; i++) {
        uint64_t k = i % 50 == 0 ? 99999 : tu_rng_below(&r, 1500); /* key 99999: a version in every row */
        if (tu_rng_chance(&r, 100000)) del_model(db, m, k);
        else put_model(db, m, k, i);
    }
    assert_int_equal(tkv_flush(db), TKV_OK);
    uint64_t rows = tu_prop_u64(db, "tkv.matrix", "rows: ");
    assert_true(rows >= 5); /* ~1 MB of values in 64K memtables */
    assert_int_equal(tu_prop_u64(db, "tkv.matrix", "columns: count="), 0);
    assert_int_equal(tu_prop_u64(db, "tkv.levels", "L1: files="), 0);
    assert_true(prop_has(db, "tkv.pmem", "mode: emulated"));
    assert_true(prop_has(db, "tkv.pmem", "profile: none"));
    assert_true(prop_has(db, "tkv.stats", "matrix: rows="));
    tu_check_db(db, NULL, m, "rows only");
    /* most rows are ruled out by their key filters */
    assert_true(tu_prop_u64(db, "tkv.matrix", "rows_filtered=") > tu_prop_u64(db, "tkv.matrix", "lookups: count="));
    tkv_snapshot_free(db, early);
    tu_model_free(at_early);
    check_no_leak(db, "rows only");
    tu_close_ok(db);

    /* without the filters every lookup walks the rows newest first: one
     * binary search, then the forward-pointer windows, never rejected */
    assert_int_equal(tkv_options_set(o, "row_filter", "0"), TKV_OK);
    db = tu_open_ok(dir, o); /* the rows come back from the pool, no WAL replay needed */
    assert_int_equal(tu_prop_u64(db, "tkv.matrix", "rows: "), rows);
    assert_int_equal(tu_prop_u64(db, "tkv.stats", "recovery: records="), 0);
    tu_check_db(db, NULL, m, "reopened");
    uint64_t lookups = tu_prop_u64(db, "tkv.matrix", "lookups: count="),
             searched = tu_prop_u64(db, "tkv.matrix", "rows_searched=");
    uint64_t hinted = tu_prop_u64(db, "tkv.matrix", "hinted=");
    print_message(
        "basics: %llu lookups searched %llu rows, %llu of those searches with a window, %.1f comparisons each\n",
        (unsigned long long)lookups, (unsigned long long)searched, (unsigned long long)hinted,
        (double)tu_prop_u64(db, "tkv.matrix", "comparisons_per_lookup="));
    assert_int_equal(tu_prop_u64(db, "tkv.matrix", "rows_filtered="), 0);
    assert_true(hinted > lookups);             /* several rows per lookup, all but the first hinted */
    assert_true(hinted + lookups >= searched); /* every search after the first of a lookup had a window */
    assert_int_equal(tu_prop_u64(db, "tkv.matrix", "hint_rejected="), 0);
    /* drain everything: the pool is empty afterwards, L1+ holds it all */
    assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK);
    assert_int_equal(tu_prop_u64(db, "tkv.matrix", "rows: "), 0);
    wait_pool_empty(db, "basics");
    assert_true(tu_prop_u64(db, "tkv.matrix", "columns: count=") >= 1);
    tu_check_db(db, NULL, m, "drained");
    tu_close_ok(db);
    tkv_options_free(o);
    tu_model_free(m);
    assert_int_equal(tkv_destroy(dir), TKV_OK);
    struct stat sb;
    assert_int_not_equal(stat(dir, &sb), 0); /* the pool file went with the rest */
    free(dir);
}

/* ---------------------------------------------------------------- row compression */

/* cval_of -- value of key k at version ver that lz4 shrinks: 40..2000 bytes,
 * its first eighth random letters and the rest repeating them; every fifth
 * value all random letters. */
static size_t cval_of(uint64_t k, uint64_t ver, char *buf)
{
    uint64_t h = tu_mix64(k * 131 + ver);
    size_t len = 40 + (size_t)(h % 1960),
           n = (size_t)sprintf(buf, "v%llu.%llu|", (unsigned long long)k, (unsigned long long)ver);
    size_t head = h % 5 == 0 ? len : n + len / 8;
    for (size_t i = n; i < len; i++) {
        h = tu_mix64(h);
        buf[i] = i < head ? (char)('a' + h % 26) : buf[n + (i - head) % (head - n)];
    }
    return len;
}

/* matrix_row_compression -- rows built with row_compression=lz4 hold the
 * values in fewer bytes and read back the same, through a reopen with the
 * other setting (a pool holds rows of both kinds) and a drain into L1. */
static void matrix_row_compression(void **state)
{
    (void)state;
    tu_rng r;
    tu_rng_init(&r, tu_seed() + 5);
    char *dir = tu_tmpdir("mx-lz4");
    tkv_options *o = matrix_options("16M");
    assert_int_equal(tkv_options_set(o, "matrix_trigger", "100"), TKV_OK); /* rows stay until compact_range */
    tu_model *m = tu_model_new();
    char kb[32], vb[2100];
    uint64_t ver = 0;
    for (int pass = 0; pass < 2; pass++) {
        const char *mode = pass == 0 ? "lz4" : "none";
        assert_int_equal(tkv_options_set(o, "row_compression", mode), TKV_OK);
        tkv_db *db = tu_open_ok(dir, o);
        uint64_t data0 = line_u64(db, "tkv.matrix", "flush:", "data_bytes="),
                 vals0 = line_u64(db, "tkv.matrix", "flush:", "value_bytes=");
        for (int i = 0; i < 2000; i++) {
            uint64_t k = tu_rng_below(&r, 1500);
            size_t kn = key_of(k, kb), vn = cval_of(k, ++ver, vb);
            int rc = tu_put_model(db, m, kb, kn, vb, vn, 0);
            if (rc != TKV_OK) fail_msg("put: %s", tkv_errmsg());
        }
        assert_int_equal(tkv_flush(db), TKV_OK);
        uint64_t data = line_u64(db, "tkv.matrix", "flush:", "data_bytes=") - data0,
                 vals = line_u64(db, "tkv.matrix", "flush:", "value_bytes=") - vals0,
                 lz4 = line_u64(db, "tkv.matrix", "flush:", "lz4_values=");
        print_message("row_compression=%s: values %llu bytes, rows' data %llu bytes, %llu values as lz4\n", mode,
                      (unsigned long long)vals, (unsigned long long)data, (unsigned long long)lz4);
        if (pass == 0) {
            assert_true(lz4 > 1000);      /* four values in five compress */
            assert_true(data < vals / 2); /* and shrink to well under half */
        } else {
            assert_int_equal(lz4, 0); /* counted since this open */
            assert_true(data > vals);
        }
        tu_check_db(db, NULL, m, mode);
        tu_close_ok(db);
    }
    /* reopened with lz4 again: rows of both kinds from the pool, then drained */
    assert_int_equal(tkv_options_set(o, "row_compression", "lz4"), TKV_OK);
    tkv_db *db = tu_open_ok(dir, o);
    assert_true(tu_prop_u64(db, "tkv.matrix", "rows: ") >= 4);
    tu_check_db(db, NULL, m, "both kinds of rows");
    assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK);
    assert_int_equal(tu_prop_u64(db, "tkv.matrix", "rows: "), 0);
    tu_check_db(db, NULL, m, "drained into L1");
    tu_close_ok(db);
    tkv_options_free(o);
    tu_model_free(m);
    assert_int_equal(tkv_destroy(dir), TKV_OK);
    free(dir);
}

/* ---------------------------------------------------------------- open errors */

static void expect_open(const char *dir, const tkv_options *o, int want, const char *needle, const char *what)
{
    tkv_db *db = NULL;
    int rc = tkv_open(dir, o, &db);
    if (rc != want)
        fail_msg("%s: tkv_open gave %s (%s), want %s", what, tkv_strerror(rc), tkv_errmsg(), tkv_strerror(want));
    assert_null(db);
    if (needle && !strstr(tkv_errmsg(), needle))
        fail_msg("%s: message \"%s\" lacks \"%s\"", what, tkv_errmsg(), needle);
    print_message("%s: %s\n", what, tkv_errmsg());
}

static void matrix_open_errors(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("mx-errors");
    char *pool = tu_path(dir, "matrix.pmem");
    tkv_options *o = matrix_options("16M");
    tkv_db *db = tu_open_ok(dir, o);
    tu_model *m = tu_model_new();
    for (uint64_t i = 0; i < 800; i++) put_model(db, m, i, i);
    assert_int_equal(tkv_flush(db), TKV_OK);

    /* a second database on the same pool file */
    char *dir2 = tu_tmpdir("mx-errors2");
    tkv_options *o2 = matrix_options("16M");
    assert_int_equal(tkv_options_set(o2, "pmem_path", pool), TKV_OK);
    expect_open(dir2, o2, TKV_BUSY, "in use", "shared pool");
    tu_close_ok(db);

    /* pmem_size is read from the pool: 0 reopens any size, another size is refused */
    tkv_options *o0 = matrix_options("0");
    db = tu_open_ok(dir, o0);
    tu_check_db(db, NULL, m, "pmem_size=0");
    tu_close_ok(db);
    tkv_options *o32 = matrix_options("32M");
    expect_open(dir, o32, TKV_INVALID, "pmem_size", "other pmem_size");

    /* a pool that cannot hold 4 memtables */
    char *dir3 = tu_tmpdir("mx-errors3");
    tkv_options *tiny = matrix_options("192K");
    expect_open(dir3, tiny, TKV_INVALID, "at least 4 memtables", "pool too small");

    /* l0=sst over a database whose rows are in the pool */
    tkv_options *sst = tu_small_options();
    assert_int_equal(tkv_options_set(sst, "l0", "sst"), TKV_OK);
    expect_open(dir, sst, TKV_INVALID, "l0=matrix", "l0=sst over rows");

    /* the pool replaced by an empty one: the MANIFEST's rows are missing */
    char *saved = tu_path(dir, "matrix.pmem.saved");
    assert_int_equal(rename(pool, saved), 0);
    expect_open(dir, o, TKV_CORRUPTION, "missing", "pool file missing");
    {
        char *d4 = tu_tmpdir("mx-errors4");
        tkv_options *o4 = matrix_options("16M");
        assert_int_equal(tkv_options_set(o4, "pmem_path", pool), TKV_OK);
        tkv_db *db4 = tu_open_ok(d4, o4); /* creates a fresh, empty pool at that path */
        tu_close_ok(db4);
        tkv_options_free(o4);
        tu_tmpdir_free(d4);
    }
    expect_open(dir, o, TKV_INVALID, "another database", "pool replaced by another database's");
    assert_int_equal(rename(saved, pool), 0);
    db = tu_open_ok(dir, o);
    tu_check_db(db, NULL, m, "pool restored");
    tu_close_ok(db);

    /* another database pointed at this pool (closed, with rows): refused
     * before anything is reconciled, so this database keeps every row */
    {
        char *d5 = tu_tmpdir("mx-errors5");
        tkv_options *o5 = matrix_options("16M");
        assert_int_equal(tkv_options_set(o5, "pmem_path", pool), TKV_OK);
        expect_open(d5, o5, TKV_INVALID, "never recorded", "a new database on another's pool");
        tkv_options *o6 = matrix_options("16M");
        tkv_db *db6 = tu_open_ok(d5, o6); /* d5 now has its own pool (and records its uuid) */
        tu_close_ok(db6);
        expect_open(d5, o5, TKV_INVALID, "another database", "a database on another's pool");
        tkv_options_free(o5);
        tkv_options_free(o6);
        tu_tmpdir_free(d5);
    }
    db = tu_open_ok(dir, o);
    tu_check_db(db, NULL, m, "after other databases tried the pool");
    tu_close_ok(db);

    tkv_options_free(o);
    tkv_options_free(o0);
    tkv_options_free(o2);
    tkv_options_free(o32);
    tkv_options_free(tiny);
    tkv_options_free(sst);
    tu_model_free(m);
    free(saved);
    free(pool);
    tu_tmpdir_free(dir);
    tu_tmpdir_free(dir2);
    tu_tmpdir_free(dir3);
}

/* ---------------------------------------------------------------- corruption */

static void matrix_corruption(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("mx-corrupt");
    char *pool = tu_path(dir, "matrix.pmem");
    tkv_options *o = matrix_options("16M");
    assert_int_equal(tkv_options_set(o, "matrix_trigger", "100"), TKV_OK);
    tkv_db *db = tu_open_ok(dir, o);
    tu_model *m = tu_model_new();
    for (uint64_t i = 0; i < 600; i++) put_model(db, m, i, i);
    assert_int_equal(tkv_flush(db), TKV_OK);
    tu_close_ok(db);
    char *copy = tu_path(dir, "pool.copy");
    {
        char cmd[8192];
        snprintf(cmd, sizeof cmd, "cp %s %s", pool, copy);
        assert_int_equal(system(cmd), 0);
    }

    /* a byte of the pool header (its checksum covers it) */
    flip_byte(pool, 20);
    expect_open(dir, o, TKV_CORRUPTION, "matrix.pmem", "header byte");
    assert_int_equal(rename(copy, pool), 0);

    /* a data byte of the first row: 64 KiB pages, which start at 64 KiB (a
     * multiple of the page size); the first row's header + metadata page is
     * page 0, its data follows */
    flip_byte(pool, 65536 + 65536 + 100);
    expect_open(dir, o, TKV_CORRUPTION, "row", "row data byte");
    tkv_options_free(o);
    tu_model_free(m);
    free(copy);
    free(pool);
    tu_tmpdir_free(dir);
}

/* ---------------------------------------------------------------- mode switch */

static void matrix_mode_switch(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("mx-switch");
    tkv_options *sst = tu_small_options();
    assert_int_equal(tkv_options_set(sst, "l0", "sst"), TKV_OK);
    assert_int_equal(tkv_options_set(sst, "l0_compaction_trigger", "1000"), TKV_OK); /* L0 files stay */
    assert_int_equal(tkv_options_set(sst, "l0_slowdown_trigger", "1000"), TKV_OK);
    assert_int_equal(tkv_options_set(sst, "l0_stop_trigger", "1000"), TKV_OK);
    tkv_db *db = tu_open_ok(dir, sst);
    tu_model *m = tu_model_new();
    for (uint64_t i = 0; i < 1500; i++) put_model(db, m, i % 700, i);
    assert_int_equal(tkv_flush(db), TKV_OK);
    assert_true(tu_prop_u64(db, "tkv.levels", "L0: files=") >= 3);
    tu_close_ok(db);

    tkv_options *mx = matrix_options("16M");
    db = tu_open_ok(dir, mx);
    tu_check_db(db, NULL, m, "sst -> matrix");
    for (uint64_t i = 1500; i < 4000; i++) put_model(db, m, i % 900, i); /* newer versions go to rows */
    assert_int_equal(tkv_flush(db), TKV_OK);
    tu_check_db(db, NULL, m, "rows over L0 SSTs");
    assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK);
    assert_int_equal(tu_prop_u64(db, "tkv.levels", "L0: files="), 0);
    assert_int_equal(tu_prop_u64(db, "tkv.matrix", "rows: "), 0);
    tu_check_db(db, NULL, m, "drained");
    tu_close_ok(db);

    db = tu_open_ok(dir, sst); /* no rows left: l0=sst may open it again */
    tu_check_db(db, NULL, m, "matrix -> sst");
    tu_close_ok(db);
    tkv_options_free(sst);
    tkv_options_free(mx);
    tu_model_free(m);
    tu_tmpdir_free(dir);
}

/* ---------------------------------------------------------------- back-pressure */

static void matrix_backpressure(void **state)
{
    (void)state;
    tu_rng r;
    tu_rng_init(&r, tu_seed() + 1);
    char *dir = tu_tmpdir("mx-full");
    /* 512K pool: 7 pages of 64 KiB, a row takes 2-3 of them, the compactor
     * forms only when a flush finds no room */
    tkv_options *o = matrix_options("512K");
    assert_int_equal(tkv_options_set(o, "matrix_trigger", "100"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "column_bytes", "64K"), TKV_OK);
    tkv_db *db = tu_open_ok(dir, o);
    tu_model *m = tu_model_new();
    unsigned n = 20000 * tu_scale();
    for (uint64_t i = 0; i < n; i++) put_model(db, m, tu_rng_below(&r, 5000), i);
    assert_int_equal(tkv_flush(db), TKV_OK);
    uint64_t waits = tu_prop_u64(db, "tkv.matrix", "no_space=");
    print_message("backpressure: %u puts, %llu flushes found the pool full, %llu columns\n", n,
                  (unsigned long long)waits, (unsigned long long)tu_prop_u64(db, "tkv.matrix", "columns: count="));
    assert_true(waits > 0);
    assert_true(prop_has(db, "tkv.stats", "background_error: none"));
    tu_check_db(db, NULL, m, "after back-pressure");
    check_no_leak(db, "after back-pressure");
    tu_close_reopen_check(db, dir, o, m, "reopened");
    tkv_options_free(o);
    tu_model_free(m);
    tu_tmpdir_free(dir);
}

/* ---------------------------------------------------------------- column failures */

static int g_fail_sst_writes; /* atomic: SST writes still to fail */

static int fail_sst_writes(io_op op, const char *path, size_t len, void *arg)
{
    (void)len;
    (void)arg;
    size_t n = strlen(path);
    if (op != IO_OP_WRITE || n < 4 || strcmp(path + n - 4, ".sst") != 0) return 0;
    int left = __atomic_load_n(&g_fail_sst_writes, __ATOMIC_ACQUIRE);
    while (left > 0)
        if (__atomic_compare_exchange_n(&g_fail_sst_writes, &left, left - 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return EIO;
    return 0;
}

static void matrix_column_retry(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("mx-retry");
    tkv_options *o = matrix_options("16M");
    assert_int_equal(tkv_options_set(o, "l1_size", "1G"), TKV_OK); /* no deep compaction writes SSTs */
    tkv_db *db = tu_open_ok(dir, o);
    tu_model *m = tu_model_new();
    __atomic_store_n(&g_fail_sst_writes, 4, __ATOMIC_RELEASE);
    io_set_fault_hook(fail_sst_writes, NULL);
    /* ~6 MB of writes: compactors form at 1.6 MB (matrix_trigger 10 %) */
    for (uint64_t i = 0; i < 20000; i++) put_model(db, m, i % 6000, i);
    assert_int_equal(tkv_flush(db), TKV_OK);
    uint64_t cols = wait_for(db, "tkv.matrix", "columns: count=", 3);
    io_set_fault_hook(NULL, NULL);
    uint64_t failures = line_u64(db, "tkv.matrix", "columns:", " failures=");
    print_message("column retry: %llu failed columns, %llu columns done\n", (unsigned long long)failures,
                  (unsigned long long)cols);
    assert_int_equal(__atomic_load_n(&g_fail_sst_writes, __ATOMIC_ACQUIRE), 0);
    assert_true(failures >= 1);
    assert_true(cols >= 3);
    assert_true(prop_has(db, "tkv.stats", "background_error: none"));
    for (uint64_t i = 0; i < 100; i++) put_model(db, m, i, 100000 + i); /* still writable */
    tu_check_db(db, NULL, m, "after failed columns");
    check_no_leak(db, "after failed columns");
    tu_close_reopen_check(db, dir, o, m, "reopened");
    tkv_options_free(o);
    tu_model_free(m);
    tu_tmpdir_free(dir);
}

/* ---------------------------------------------------------------- close */

/* matrix_close_stops_column -- tkv_close does not wait for a column still
 * merging: once the flush thread has ended (nothing needs room any more) the
 * column stops within CMP_STOP_EVERY keys and is dropped, its rows left in
 * the pool for the next open. The fault hook holds the first column SST
 * write of a 4 MB column until tkv_close has been running 300 ms; after the
 * release the column writes a few hundred KB at most (it wrote all of its
 * several MB before), and the reopened database holds every write and no
 * leftover file (tkv_verify). */
static int g_close_hold;       /* 0 armed, 1 holding, 2 released (atomic) */
static uint64_t g_close_after; /* column SST bytes written after the release (atomic) */

static int hold_column_write(io_op op, const char *path, size_t len, void *arg)
{
    (void)arg;
    if (op != IO_OP_WRITE || !tu_thread_is("tkv-column") || !tu_is_sst(path)) return 0;
    int armed = 0;
    if (__atomic_compare_exchange_n(&g_close_hold, &armed, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        while (__atomic_load_n(&g_close_hold, __ATOMIC_ACQUIRE) != 2) usleep(1000);
        return 0;
    }
    if (__atomic_load_n(&g_close_hold, __ATOMIC_ACQUIRE) == 2)
        __atomic_fetch_add(&g_close_after, len, __ATOMIC_RELAXED);
    return 0;
}

static void *release_after_close_began(void *arg)
{
    (void)arg;
    usleep(300000); /* tkv_close is in mx_stop by now: the flush thread had nothing left to flush */
    __atomic_store_n(&g_close_hold, 2, __ATOMIC_RELEASE);
    return NULL;
}

static void matrix_close_stops_column(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("mx-close");
    tkv_options *o = matrix_options("32M");
    assert_int_equal(tkv_options_set(o, "column_bytes", "4M"), TKV_OK); /* one long column */
    assert_int_equal(tkv_options_set(o, "sst_size", "8M"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "l1_size", "1G"), TKV_OK);
    tkv_db *db = tu_open_ok(dir, o);
    tu_model *m = tu_model_new();
    __atomic_store_n(&g_close_hold, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&g_close_after, 0, __ATOMIC_RELEASE);
    io_set_fault_hook(hold_column_write, NULL);
    /* ~10 MB of rows: a compactor forms at 3.2 MB (matrix_trigger 10 % of 32M) */
    for (uint64_t i = 0; i < 15000; i++) put_model(db, m, i, 1);
    assert_int_equal(tkv_flush(db), TKV_OK);
    for (int i = 0; i < 10000 && __atomic_load_n(&g_close_hold, __ATOMIC_ACQUIRE) != 1; i++) usleep(1000);
    assert_int_equal(__atomic_load_n(&g_close_hold, __ATOMIC_ACQUIRE), 1); /* a column is in flight, held */
    uint64_t cols = tu_prop_u64(db, "tkv.matrix", "columns: count=");
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, release_after_close_began, NULL), 0);
    tu_close_ok(db);
    pthread_join(t, NULL);
    io_set_fault_hook(NULL, NULL);
    uint64_t after = __atomic_load_n(&g_close_after, __ATOMIC_ACQUIRE);
    print_message("close: %llu columns done before, %llu bytes of column SSTs written after the release\n",
                  (unsigned long long)cols, (unsigned long long)after);
    assert_true(after < (512u << 10)); /* stopped within 256 keys, not the rest of 4 MB (1.2 MB compressed) */
    char *report = NULL;
    int vrc = tkv_verify(dir, NULL, &report);
    if (vrc != TKV_OK) fail_msg("tkv_verify after the stopped column: %s\n%s", tkv_strerror(vrc), report ? report : "");
    if (!strstr(report, " notes=0")) fail_msg("tkv_verify: the stopped column left something behind:\n%s", report);
    tkv_free(report);
    db = tu_open_ok(dir, o);
    tu_check_db(db, NULL, m, "after a column stopped by tkv_close");
    tu_close_ok(db);
    tkv_options_free(o);
    tu_model_free(m);
    tu_tmpdir_free(dir);
}

/* ---------------------------------------------------------------- parallel columns */

/* matrix_parallel_columns -- column_threads=3, column_gate=always: columns
 * of one compactor run at once on consecutive key ranges (tkv.matrix
 * parallel: max_in_flight >= 2) while a writer overwrites and deletes and a
 * reader scans; everything reads back as the model says, before and after
 * a reopen, and no pool page leaks. Then the first column of a new round
 * is held 300 ms and fails (its thread's first SST write, in the fault
 * hook) while the next column runs beside it: the next one must be
 * cancelled, not committed (its cursors assumed the failed one's), and
 * both are redone. */
static int g_victim_state; /* 0 armed, 1 holding the victim, 2 done (atomic) */

static int fail_first_column_write(io_op op, const char *path, size_t len, void *arg)
{
    (void)len;
    (void)arg;
    if (op != IO_OP_WRITE || !tu_thread_is("tkv-column") || !tu_is_sst(path)) return 0;
    int armed = 0;
    if (!__atomic_compare_exchange_n(&g_victim_state, &armed, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return 0;
    usleep(300000); /* the next column is picked and runs meanwhile */
    __atomic_store_n(&g_victim_state, 2, __ATOMIC_RELEASE);
    return TKV_IO_ERROR;
}

static void matrix_parallel_columns(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("mx-parallel");
    tkv_options *o = matrix_options("16M");
    assert_int_equal(tkv_options_set(o, "column_threads", "3"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "column_gate", "always"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "column_bytes", "64K"), TKV_OK); /* many columns per compactor */
    tkv_db *db = tu_open_ok(dir, o);
    tu_model *m = tu_model_new();
    tu_rng r;
    tu_rng_init(&r, tu_seed() + 7);
    for (uint64_t i = 0; i < 30000; i++) {
        uint64_t k = tu_rng_below(&r, 8000);
        if (tu_rng_chance(&r, 50000)) del_model(db, m, k);
        else put_model(db, m, k, i);
        if (i % 5000 == 4999) tu_check_db(db, NULL, m, "while columns run"); /* a full scan and gets */
    }
    assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK); /* drains every row */
    uint64_t most = line_u64(db, "tkv.matrix", "parallel:", " max_in_flight=");
    uint64_t beside = line_u64(db, "tkv.matrix", "parallel:", " started_beside=");
    uint64_t cols = line_u64(db, "tkv.matrix", "columns:", " count=");
    print_message("parallel columns: %llu columns, %llu started beside another, at most %llu at once\n",
                  (unsigned long long)cols, (unsigned long long)beside, (unsigned long long)most);
    assert_true(most >= 2);
    assert_true(beside >= 1);
    tu_check_db(db, NULL, m, "after the drain");
    check_no_leak(db, "after parallel columns");

    /* a failed column cancels the one picked after it */
    __atomic_store_n(&g_victim_state, 0, __ATOMIC_RELEASE);
    io_set_fault_hook(fail_first_column_write, NULL);
    for (uint64_t i = 0; i < 12000; i++) put_model(db, m, tu_rng_below(&r, 8000), 100000 + i);
    assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK);
    io_set_fault_hook(NULL, NULL);
    uint64_t failures = line_u64(db, "tkv.matrix", "columns:", " failures=");
    uint64_t cancelled = line_u64(db, "tkv.matrix", "parallel:", " cancelled=");
    print_message("a held column failed: %llu failures, %llu columns cancelled\n", (unsigned long long)failures,
                  (unsigned long long)cancelled);
    assert_int_equal(__atomic_load_n(&g_victim_state, __ATOMIC_ACQUIRE), 2);
    assert_int_equal(failures, 1);
    assert_true(cancelled >= 1);
    assert_true(prop_has(db, "tkv.stats", "background_error: none"));
    tu_check_db(db, NULL, m, "after a cancelled column");
    check_no_leak(db, "after a cancelled column");
    tu_close_reopen_check(db, dir, o, m, "reopened after parallel columns");
    tkv_options_free(o);
    tu_model_free(m);
    tu_tmpdir_free(dir);
}

/* ---------------------------------------------------------------- pinned views */

static void matrix_pinned_views(void **state)
{
    (void)state;
    tu_rng r;
    tu_rng_init(&r, tu_seed() + 2);
    char *dir = tu_tmpdir("mx-pinned");
    tkv_options *o = matrix_options("4M");
    assert_int_equal(tkv_options_set(o, "matrix_trigger", "20"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "column_bytes", "64K"), TKV_OK);
    tkv_db *db = tu_open_ok(dir, o);
    tu_model *m = tu_model_new();
    for (uint64_t i = 0; i < 3000; i++) put_model(db, m, tu_rng_below(&r, 2000), i);
    assert_int_equal(tkv_flush(db), TKV_OK);
    /* pin a state: an iterator and a snapshot (with a model copy) */
    tu_model *pinned = tu_model_copy(m);
    const tkv_snapshot *snap = tkv_snapshot_new(db);
    tkv_iter *it = NULL;
    assert_int_equal(tkv_iter_new(db, NULL, &it), TKV_OK);
    uint64_t cols0 = tu_prop_u64(db, "tkv.matrix", "columns: count="),
             drop0 = tu_prop_u64(db, "tkv.matrix", "rows_dropped=");
    /* overwrite everything several times: columns move rows to L1, rows drain and drop, pages are reused */
    for (uint64_t i = 0; i < 24000; i++) put_model(db, m, tu_rng_below(&r, 2000), 10000 + i);
    assert_int_equal(tkv_flush(db), TKV_OK);
    uint64_t cols = tu_prop_u64(db, "tkv.matrix", "columns: count=") - cols0;
    print_message("pinned views: %llu columns and %llu dropped rows while pinned\n", (unsigned long long)cols,
                  (unsigned long long)(tu_prop_u64(db, "tkv.matrix", "rows_dropped=") - drop0));
    assert_true(cols >= 5);
    /* the iterator created before all that */
    size_t i = 0;
    for (tkv_iter_seek_first(it); tkv_iter_valid(it); tkv_iter_next(it), i++) {
        const void *k, *v, *mk, *mv;
        size_t kn, vn, mkn, mvn;
        k = tkv_iter_key(it, &kn);
        v = tkv_iter_value(it, &vn);
        assert_true(i < tu_model_count(pinned));
        tu_model_at(pinned, i, &mk, &mkn, &mv, &mvn);
        if (kn != mkn || memcmp(k, mk, kn) || vn != mvn || memcmp(v, mv, vn))
            fail_msg("pinned iterator entry %zu: %s differs from %s", i, tu_hex(k, kn), tu_hex(mk, mkn));
    }
    assert_int_equal(tkv_iter_status(it), TKV_OK);
    assert_int_equal(i, tu_model_count(pinned));
    tkv_iter_free(it);
    tu_check_db(db, snap, pinned, "snapshot pinned across columns");
    tkv_snapshot_free(db, snap);
    tu_check_db(db, NULL, m, "latest");
    /* unpinned: the next flush reclaims; no page leaks */
    for (uint64_t j = 0; j < 500; j++) put_model(db, m, j, 90000 + j);
    assert_int_equal(tkv_flush(db), TKV_OK);
    check_no_leak(db, "after unpinning");
    tu_close_ok(db);
    tkv_options_free(o);
    tu_model_free(m);
    tu_model_free(pinned);
    tu_tmpdir_free(dir);
}

/* matrix_writer_holds_iterator -- a thread that holds an iterator and keeps
 * writing fills a small pool whose pages the iterator's view pins: the
 * writes must not wait for the view (that would deadlock the thread), so
 * memtables queue in DRAM until the iterator is freed, then drain. */
static void matrix_writer_holds_iterator(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("mx-holds-iter");
    tkv_options *o = matrix_options("1M");
    assert_int_equal(tkv_options_set(o, "matrix_trigger", "100"), TKV_OK); /* rows stay until the pool is full */
    tkv_db *db = tu_open_ok(dir, o);
    tu_model *m = tu_model_new();
    /* Fill the pool with rows until fewer pages are free than a flushed
     * memtable needs (no column runs before a flush finds no room): the
     * iterator below pins nearly the whole pool. */
    uint64_t k = 0;
    while (tu_prop_u64(db, "tkv.stats", "pages_free=") > 2) {
        for (int i = 0; i < 120; i++, k++) put_model(db, m, k % 2200, k);
        assert_int_equal(tkv_flush(db), TKV_OK);
        assert_true(k < 20000);
    }
    assert_int_equal(tu_prop_u64(db, "tkv.stats", "flush_no_space=") + tu_prop_u64(db, "tkv.matrix", "columns: count="),
                     0);
    tkv_iter *it = NULL;
    assert_int_equal(tkv_iter_new(db, NULL, &it), TKV_OK);
    tkv_iter_seek_first(it);
    /* ~3 MB through a 1 MB pool while the iterator pins the first rows */
    for (uint64_t i = 0; i < 10000; i++) {
        put_model(db, m, i % 2200, 1000 + i);
        if (i % 100 == 0 && tkv_iter_valid(it)) tkv_iter_next(it);
    }
    uint64_t pinned = tu_prop_u64(db, "tkv.matrix", "pinned_switches=");
    print_message("writer holding an iterator: %llu memtables queued in DRAM while the pool was pinned\n",
                  (unsigned long long)pinned);
    assert_true(pinned > 0);
    assert_int_equal(tkv_iter_status(it), TKV_OK);
    tkv_iter_free(it);
    assert_int_equal(tkv_flush(db), TKV_OK);
    tu_check_db(db, NULL, m, "after the iterator was freed");
    for (uint64_t j = 0; j < 300; j++) put_model(db, m, j, 90000 + j);
    assert_int_equal(tkv_flush(db), TKV_OK);
    check_no_leak(db, "after unpinning");
    tu_close_reopen_check(db, dir, o, m, "reopened");
    tkv_options_free(o);
    tu_model_free(m);
    tu_tmpdir_free(dir);
}

/* ---------------------------------------------------------------- concurrency */

#define CW_WRITERS 2
#define CW_READERS 2
#define CW_KEYS    3000

typedef struct cw_ctx {
    tkv_db *db;
    int id;
    int *stop;                  /* atomic */
    uint64_t versions[CW_KEYS]; /* writer 0 owns even keys, writer 1 odd keys */
    uint64_t errors;
    char msg[256];
} cw_ctx;

/* cw_value -- key k at version ver (ver >= 1): the version is parsed back. */
static size_t cw_value(uint64_t k, uint64_t ver, char *buf) { return value_of(k, ver, buf); }

static void *cw_writer(void *arg)
{
    cw_ctx *c = arg;
    tu_rng r;
    tu_rng_init(&r, tu_seed() + 100 + (uint64_t)c->id);
    for (uint64_t i = 0; i < 15000 * tu_scale(); i++) {
        uint64_t k = tu_rng_below(&r, CW_KEYS / 2) * 2 + (uint64_t)c->id;
        char kb[32], vb[700];
        size_t kn = key_of(k, kb), vn = cw_value(k, ++c->versions[k], vb);
        if (tkv_put(c->db, kb, kn, vb, vn, 0) != TKV_OK) {
            snprintf(c->msg, sizeof c->msg, "put: %s", tkv_errmsg());
            c->errors++;
            break;
        }
    }
    return NULL;
}

/* cw_reader -- every value read must be one the writer wrote for that key,
 * and a key's version never goes back in later reads of this thread. */
static void *cw_reader(void *arg)
{
    cw_ctx *c = arg;
    tu_rng r;
    tu_rng_init(&r, tu_seed() + 200 + (uint64_t)c->id);
    uint64_t *seen = calloc(CW_KEYS, sizeof *seen);
    while (!__atomic_load_n(c->stop, __ATOMIC_ACQUIRE) && !c->errors) {
        uint64_t k = tu_rng_below(&r, CW_KEYS);
        char kb[32];
        size_t kn = key_of(k, kb);
        void *v;
        size_t vn;
        int rc = tkv_get(c->db, NULL, kb, kn, &v, &vn);
        if (rc == TKV_NOT_FOUND) {
            if (seen[k]) {
                snprintf(c->msg, sizeof c->msg, "%s vanished after version %llu", kb, (unsigned long long)seen[k]);
                c->errors++;
            }
            continue;
        }
        if (rc != TKV_OK) {
            snprintf(c->msg, sizeof c->msg, "get %s: %s", kb, tkv_errmsg());
            c->errors++;
            break;
        }
        unsigned long long kk, ver;
        char expect[700];
        if (sscanf(v, "v%llu.%llu|", &kk, &ver) != 2 || kk != k || vn != cw_value(k, ver, expect) ||
            memcmp(v, expect, vn) != 0) {
            snprintf(c->msg, sizeof c->msg, "%s: bad value %s", kb, tu_hex(v, vn));
            c->errors++;
        } else if (ver < seen[k]) {
            snprintf(c->msg, sizeof c->msg, "%s went back from version %llu to %llu", kb, (unsigned long long)seen[k],
                     ver);
            c->errors++;
        } else {
            seen[k] = ver;
        }
        tkv_free(v);
    }
    free(seen);
    return NULL;
}

/* slow_sst_open -- every .sst open sleeps 2 ms: it widens the window in
 * which a compaction's new table is being opened, so that a reader would
 * land in it if the version listing it were installed first. */
static int slow_sst_open(io_op op, const char *path, size_t len, void *arg)
{
    (void)len;
    (void)arg;
    size_t n = strlen(path);
    if (op == IO_OP_OPEN && n >= 4 && strcmp(path + n - 4, ".sst") == 0) usleep(2000);
    return 0;
}

static void matrix_concurrent(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("mx-concurrent");
    tkv_options *o = matrix_options("2M");
    assert_int_equal(tkv_options_set(o, "matrix_trigger", "30"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "column_bytes", "64K"), TKV_OK);
    tkv_db *db = tu_open_ok(dir, o);
    io_set_fault_hook(slow_sst_open, NULL);
    int stop = 0;
    static cw_ctx ctx[CW_WRITERS + CW_READERS];
    pthread_t th[CW_WRITERS + CW_READERS];
    for (int i = 0; i < CW_WRITERS + CW_READERS; i++) {
        memset(&ctx[i], 0, sizeof ctx[i]);
        ctx[i].db = db;
        ctx[i].id = i < CW_WRITERS ? i : i - CW_WRITERS;
        ctx[i].stop = &stop;
        assert_int_equal(pthread_create(&th[i], NULL, i < CW_WRITERS ? cw_writer : cw_reader, &ctx[i]), 0);
    }
    for (int i = 0; i < CW_WRITERS; i++) pthread_join(th[i], NULL);
    __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
    for (int i = CW_WRITERS; i < CW_WRITERS + CW_READERS; i++) pthread_join(th[i], NULL);
    io_set_fault_hook(NULL, NULL);
    for (int i = 0; i < CW_WRITERS + CW_READERS; i++)
        if (ctx[i].errors) fail_msg("thread %d: %s", i, ctx[i].msg);
    uint64_t client_opens = tu_prop_u64(db, "tkv.stats", " client_opens=");
    print_message("concurrent: %llu columns, %llu tables opened ahead, %llu by readers\n",
                  (unsigned long long)tu_prop_u64(db, "tkv.matrix", "columns: count="),
                  (unsigned long long)tu_prop_u64(db, "tkv.stats", " preloads="), (unsigned long long)client_opens);
    assert_true(tu_prop_u64(db, "tkv.matrix", "columns: count=") >= 3);
    /* columns and deep compactions open their outputs before installing
     * them: no reader ever opens a table itself */
    assert_int_equal(client_opens, 0);
    /* the final state: the last version of every key */
    tu_model *m = tu_model_new();
    for (uint64_t k = 0; k < CW_KEYS; k++) {
        uint64_t ver = ctx[k % 2].versions[k];
        if (!ver) continue;
        char kb[32], vb[700];
        size_t kn = key_of(k, kb), vn = cw_value(k, ver, vb);
        tu_model_put(m, kb, kn, vb, vn);
    }
    tu_check_db(db, NULL, m, "after the threads");
    tu_close_ok(db);
    db = tu_open_ok(dir, o);
    tu_check_db(db, NULL, m, "reopened");
    check_no_leak(db, "reopened");
    tu_close_ok(db);
    tkv_options_free(o);
    tu_model_free(m);
    tu_tmpdir_free(dir);
}

/* ---------------------------------------------------------------- power cut */

/* The workload of one power-cut run: op i is a batch {put key(k_i) =
 * value(k_i, i), put "~last" = i} (or a delete of k_i instead of the put), so
 * after recovery "~last" names the newest operation that survived and the
 * state must equal the model after operations 0..last. */
#define PC_OPS  2400u
#define PC_KEYS 900u

static uint64_t pc_key(uint64_t i) { return tu_mix64(i * 7919u + 13) % PC_KEYS; }
static int pc_is_delete(uint64_t i) { return tu_mix64(i ^ 0xabcdef) % 10 == 0; }

static void pc_apply(tu_model *m, uint64_t i)
{
    char kb[32], vb[700];
    size_t kn = key_of(pc_key(i), kb);
    if (pc_is_delete(i)) tu_model_del(m, kb, kn);
    else tu_model_put(m, kb, kn, vb, value_of(pc_key(i), i, vb));
    char lb[32];
    size_t ln = (size_t)sprintf(lb, "%llu", (unsigned long long)i);
    tu_model_put(m, "~last", 5, lb, ln);
}

static tkv_options *pc_options(const char *mode)
{
    tkv_options *o = matrix_options("1M"); /* 15 pages of 64 KiB */
    assert_int_equal(tkv_options_set(o, "pmem_mode", mode), TKV_OK);
    assert_int_equal(tkv_options_set(o, "matrix_trigger", "30"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "column_bytes", "48K"), TKV_OK);
    return o;
}

/* pc_on_cut -- dies at once, like the machine at a power cut: the raw
 * exit_group system call, past every atexit and sanitizer exit hook. */
static void pc_on_cut(void) { syscall(SYS_exit_group, 0); }

/* pc_child -- runs the workload on a crashsim pool cut after `cut` persists,
 * reporting each acknowledged op to fd; dies at the cut (or exits 0 when the
 * workload ends first, 3 on an error). */
static void pc_child(const char *dir, uint64_t cut, int fd)
{
    pm_crashsim_arm(cut, pc_on_cut);
    tkv_options *o = pc_options("crashsim");
    tkv_db *db;
    if (tkv_open(dir, o, &db) != TKV_OK) _exit(3);
    tkv_batch *b = tkv_batch_new();
    for (uint32_t i = 0; i < PC_OPS; i++) {
        char kb[32], vb[700], lb[32];
        size_t kn = key_of(pc_key(i), kb), ln = (size_t)sprintf(lb, "%u", i);
        tkv_batch_clear(b);
        if (pc_is_delete(i)) tkv_batch_delete(b, kb, kn);
        else tkv_batch_put(b, kb, kn, vb, value_of(pc_key(i), i, vb));
        tkv_batch_put(b, "~last", 5, lb, ln);
        if (tkv_write(db, b, 0) != TKV_OK) _exit(3);
        while (write(fd, &i, sizeof i) < 0 && errno == EINTR) {}
        if (i % 700 == 699 && tkv_flush(db) != TKV_OK) _exit(3);
    }
    tkv_close(db);
    _exit(0);
}

/* pc_run -- one run cut after `cut` persists; returns 1 if the cut was
 * reached (the child died at it), 0 if the workload finished first. */
static int pc_run(uint64_t cut, const char *what)
{
    char *dir = tu_tmpdir("mx-powercut");
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(pfd[0]);
        pc_child(dir, cut, pfd[1]);
    }
    close(pfd[1]);
    long long acked = -1;
    uint32_t x;
    for (;;) {
        ssize_t got = read(pfd[0], &x, sizeof x);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        assert_int_equal(got, sizeof x);
        assert_int_equal((long long)x, acked + 1);
        acked = x;
    }
    close(pfd[0]);
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fail_msg("%s: child ended with status 0x%x", what, st);
    int finished = acked == (long long)PC_OPS - 1;

    /* recover (emulated mode reads the durable image) and check */
    tkv_options *o = pc_options("emulated");
    tkv_db *db = NULL;
    int rc = tkv_open(dir, o, &db);
    if (rc != TKV_OK) fail_msg("%s: recovery failed: %s: %s", what, tkv_strerror(rc), tkv_errmsg());
    long long last = -1;
    void *v;
    size_t vn;
    rc = tkv_get(db, NULL, "~last", 5, &v, &vn);
    if (rc == TKV_OK) {
        last = strtoll(v, NULL, 10);
        tkv_free(v);
    } else {
        assert_int_equal(rc, TKV_NOT_FOUND);
    }
    if (last < acked) fail_msg("%s: op %lld was acknowledged but only ops up to %lld survived", what, acked, last);
    tu_model *m = tu_model_new();
    for (long long i = 0; i <= last; i++) pc_apply(m, (uint64_t)i);
    char label[128];
    snprintf(label, sizeof label, "%s (acked %lld, survived %lld)", what, acked, last);
    tu_check_db(db, NULL, m, label);
    check_no_leak(db, label);
    /* and everything drains: no page stays used once every row is in L1 */
    assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK);
    wait_pool_empty(db, label);
    tu_check_db(db, NULL, m, label);
    tu_close_ok(db);
    tkv_options_free(o);
    tu_model_free(m);
    tu_tmpdir_free(dir);
    return !finished;
}

static void matrix_powercut(void **state)
{
    (void)state;
    /* the number of persists of an uncut run: run with the cut at "never"
     * once, in-process, and read tkv.pmem */
    char *dir = tu_tmpdir("mx-powercut-count");
    tkv_options *o = pc_options("crashsim");
    tkv_db *db = tu_open_ok(dir, o);
    tkv_batch *b = tkv_batch_new();
    for (uint32_t i = 0; i < PC_OPS; i++) {
        char kb[32], vb[700], lb[32];
        size_t kn = key_of(pc_key(i), kb), ln = (size_t)sprintf(lb, "%u", i);
        tkv_batch_clear(b);
        if (pc_is_delete(i)) tkv_batch_delete(b, kb, kn);
        else tkv_batch_put(b, kb, kn, vb, value_of(pc_key(i), i, vb));
        tkv_batch_put(b, "~last", 5, lb, ln);
        assert_int_equal(tkv_write(db, b, 0), TKV_OK);
        if (i % 700 == 699) assert_int_equal(tkv_flush(db), TKV_OK);
    }
    uint64_t total = tu_prop_u64(db, "tkv.pmem", "persist: calls="),
             cols = tu_prop_u64(db, "tkv.matrix", "columns: count=");
    tkv_batch_free(b);
    tu_close_ok(db);
    tkv_options_free(o);
    tu_tmpdir_free(dir);
    print_message("powercut: an uncut run makes %llu persists (%llu columns)\n", (unsigned long long)total,
                  (unsigned long long)cols);
    assert_true(cols >= 2);
    assert_true(total > 20);

    /* every cut point when there are few enough (one run each, ~60 ms),
     * else every point of the first part (pool creation, the first flushes
     * and columns) and a random sample of the rest */
    tu_rng r;
    tu_rng_init(&r, tu_seed() + 3);
    unsigned scale = tu_scale();
    uint64_t dense = total <= 200 * scale ? total + 1 : 60 * scale;
    int cut_runs = 0, runs = 0;
    for (uint64_t k = 0; k < dense; k++, runs++) {
        char what[64];
        snprintf(what, sizeof what, "cut at persist %llu", (unsigned long long)k);
        cut_runs += pc_run(k, what);
    }
    for (unsigned s = 0; dense <= total && s < 60 * scale; s++, runs++) {
        uint64_t k = dense + tu_rng_below(&r, total - dense + 1);
        char what[64];
        snprintf(what, sizeof what, "cut at persist %llu", (unsigned long long)k);
        cut_runs += pc_run(k, what);
    }
    print_message("powercut: %d runs, %d of them cut before the workload ended\n", runs, cut_runs);
    assert_true(cut_runs >= runs / 2);
}

/* matrix_pool_writeback -- pmem_writeback with pmem_mode=volatile: every
 * page of every flushed row is written back by the pool's thread (the pool
 * in the test directory, on a disk unless TMPDIR is tmpfs), counted as flush
 * bytes in tkv.sched; the data reads back unchanged, also after a reopen.
 * With pmem_writeback=0 nothing is written back. With the default mode
 * (emulated: durable) the thread has nothing to do: each row's commit
 * writes and syncs it (two syncs per row, docs/pmem.md "Persistence
 * order"). */
static void matrix_pool_writeback(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("mx-wb");
    struct statfs sf;
    assert_int_equal(statfs(dir, &sf), 0);
    int on_disk = sf.f_type != 0x01021994; /* not tmpfs */
    for (int on = 0; on < 3; on++) {       /* volatile without, volatile with the thread, emulated with it */
        int durable = on == 2;
        tkv_options *o = matrix_options("16M");
        assert_int_equal(tkv_options_set(o, "matrix_trigger", "100"), TKV_OK); /* rows stay: no column */
        assert_int_equal(tkv_options_set(o, "pmem_writeback", on ? "64M" : "0"), TKV_OK);
        assert_int_equal(tkv_options_set(o, "pmem_mode", durable ? "emulated" : "volatile"), TKV_OK);
        tkv_db *db = tu_open_ok(dir, o);
        tu_model *m = tu_model_new();
        for (uint64_t i = 0; i < 2000; i++) put_model(db, m, i, i);
        assert_int_equal(tkv_flush(db), TKV_OK);
        uint64_t rows = tu_prop_u64(db, "tkv.matrix", "rows: ");
        assert_true(rows >= 2);
        uint64_t written = 0, pending = 1;
        for (int i = 0; i < 1000 && pending; i++) { /* at most 10 s */
            written = line_u64(db, "tkv.matrix", "writeback:", " bytes=");
            pending = line_u64(db, "tkv.matrix", "writeback:", " pending=");
            if (pending) usleep(10000);
        }
        assert_int_equal(pending, 0);
        assert_int_equal(line_u64(db, "tkv.matrix", "writeback:", " errors="), 0);
        assert_int_equal(line_u64(db, "tkv.matrix", "writeback:", " dropped="), 0);
        if (durable) {
            assert_true(prop_has(db, "tkv.pmem", "durable: yes"));
            assert_true(line_u64(db, "tkv.pmem", "sync:", " calls=") >= 2 * rows);
            assert_int_equal(written, 0);
        } else if (on && on_disk) {
            /* at least the data of the rows, in whole pages */
            uint64_t data = line_u64(db, "tkv.matrix", "flush:", " data_bytes=");
            if (written < data)
                fail_msg("%llu bytes written back for %llu bytes of rows", (unsigned long long)written,
                         (unsigned long long)data);
            assert_true(line_u64(db, "tkv.sched", "total_bytes:", " flush=") >= written);
        } else {
            assert_int_equal(written, 0);
        }
        tu_check_db(db, NULL, m, "after write-back");
        tu_close_reopen_check(db, dir, o, m, "reopened");
        tu_model_free(m);
        tkv_options_free(o);
        assert_int_equal(tkv_destroy(dir), TKV_OK);
    }
    tu_tmpdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(matrix_pool_writeback),   cmocka_unit_test(matrix_basics),
        cmocka_unit_test(matrix_row_compression),  cmocka_unit_test(matrix_open_errors),
        cmocka_unit_test(matrix_corruption),       cmocka_unit_test(matrix_mode_switch),
        cmocka_unit_test(matrix_backpressure),     cmocka_unit_test(matrix_column_retry),
        cmocka_unit_test(matrix_parallel_columns), cmocka_unit_test(matrix_close_stops_column),
        cmocka_unit_test(matrix_pinned_views),     cmocka_unit_test(matrix_concurrent),
        cmocka_unit_test(matrix_powercut),         cmocka_unit_test(matrix_writer_holds_iterator),
    };
    const char *only = getenv("TKV_TEST_ONLY"); /* run one case */
    if (only && *only) cmocka_set_test_filter(only);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
