// SPDX-License-Identifier: Apache-2.0
/*
 * test_verify.c -- tkv_verify: a database with WALs, a MANIFEST, SSTs and
 * rows in the pool verifies clean; one byte flipped in a copy of each kind
 * of file (WAL, MANIFEST, an SST's data block, index, filter, properties and
 * footer, the pool header, a row header, a RowTable page) is reported as
 * exactly that problem with TKV_CORRUPTION, naming the file; a pool that
 * disagrees with the MANIFEST (a row missing, pages released that a cursor
 * still covers, another database's pool) is reported; what a crash legitimately leaves (a torn log tail, an orphan SST)
 * is a note; verify changes no byte and no block of any file, refuses an open
 * database (TKV_BUSY) and a directory that holds none (TKV_INVALID).
 *
 * The database is built once (group setup) and each case works on a copy.
 */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "matrix/pool.h"
#include "sst/table.h"
#include "testutil.h"

static char *g_root; /* temporary directory of the group */
static char *g_base; /* the database every case copies */

/* ---------------------------------------------------------------- files */

/* copy_db -- a copy of the base database in a new directory of the group. */
static char *copy_db(const char *name)
{
    char *dst = tu_path(g_root, name);
    tu_copy_db(g_base, dst, 0);
    return dst;
}

/* file_with -- the name of the first (or last) file of dir ending in suffix, malloc'd. */
static char *file_with(const char *dir, const char *suffix, int last)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    char *best = NULL;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name), m = strlen(suffix);
        if (n <= m || strcmp(e->d_name + n - m, suffix) != 0) continue;
        if (!best || (strcmp(e->d_name, best) < 0) != last) {
            free(best);
            best = strdup(e->d_name);
        }
    }
    closedir(d);
    if (!best) fail_msg("no file *%s in %s", suffix, dir);
    return best;
}

/* flip -- xors the byte at off of dir/name. */
static void flip(const char *dir, const char *name, uint64_t off)
{
    char *p = tu_path(dir, name);
    int fd = open(p, O_RDWR);
    assert_true(fd >= 0);
    uint8_t b;
    assert_int_equal(pread(fd, &b, 1, (off_t)off), 1);
    b ^= 0x55;
    assert_int_equal(pwrite(fd, &b, 1, (off_t)off), 1);
    close(fd);
    free(p);
}

/* size_in -- tu_file_size of dir/name. */
static uint64_t size_in(const char *dir, const char *name)
{
    char *p = tu_path(dir, name);
    uint64_t n = tu_file_size(p);
    free(p);
    return n;
}

/* ---------------------------------------------------------------- the report */

/* report_u64 -- the number after `field` on the line starting with `line`. */
static uint64_t report_u64(const char *report, const char *line, const char *field)
{
    const char *l = strstr(report, line);
    if (!l) fail_msg("no line \"%s\" in the report:\n%s", line, report);
    const char *eol = strchr(l, '\n'), *f = strstr(l, field);
    if (!f || (eol && f > eol)) fail_msg("no field \"%s\" on line \"%s\" of the report:\n%s", field, line, report);
    return strtoull(f + strlen(field), NULL, 10);
}

/* verify -- tkv_verify(dir) must return want; its report (caller frees). */
static char *verify(const char *dir, int want)
{
    char *report = NULL;
    int rc = tkv_verify(dir, NULL, &report);
    if (rc != want)
        fail_msg("tkv_verify(%s) = %d (%s), expected %d; %s\n%s", dir, rc, tkv_strerror(rc), want, tkv_errmsg(),
                 report ? report : "(no report)");
    assert_non_null(report);
    return report;
}

/* expect_one_problem -- dir verifies with exactly one problem, a
 * corruption whose line names `file` and says `what`; tkv_errmsg names the
 * file too. Removes the copy. */
static void expect_one_problem(char *dir, const char *file, const char *what)
{
    char *report = verify(dir, TKV_CORRUPTION);
    const char *msg = tkv_errmsg();
    if (report_u64(report, "verify:", "problems=") != 1) fail_msg("expected exactly one problem:\n%s", report);
    const char *p = strstr(report, "problem: ");
    assert_non_null(p);
    const char *eol = strchr(p, '\n');
    char line[1200];
    snprintf(line, sizeof line, "%.*s", (int)(eol - p), p);
    print_message("%s\n", line);
    if (!strstr(line, file) || !strstr(line, what))
        fail_msg("the problem should name %s and say \"%s\":\n%s", file, what, report);
    if (!strstr(msg, file)) fail_msg("tkv_errmsg() should name %s: %s", file, msg);
    tkv_free(report);
    tu_rmrf(dir);
    free(dir);
}

/* ---------------------------------------------------------------- the base database */

static tkv_options *options(void)
{
    tkv_options *o = tu_small_options();
    assert_int_equal(tkv_options_set(o, "matrix_trigger", "90"), TKV_OK); /* rows stay until drained by hand */
    return o;
}

static void put_range(tkv_db *db, int from, int to, const char *tag)
{
    for (int i = from; i < to; i++) {
        char k[32], v[128];
        snprintf(k, sizeof k, "key%06d", i);
        snprintf(v, sizeof v, "%s-value-%06d-%0*d", tag, i, 80, i);
        assert_int_equal(tkv_put(db, k, strlen(k), v, strlen(v), 0), TKV_OK);
    }
}

/* group_setup -- SSTs in L1 (rows drained by compact_range), then rows in
 * the pool, then writes left in the WAL, and a clean close. */
static int group_setup(void **state)
{
    (void)state;
    g_root = tu_tmpdir("verify");
    g_base = tu_path(g_root, "base");
    tkv_options *o = options();
    tkv_db *db = tu_open_ok(g_base, o);
    put_range(db, 0, 3000, "a");
    assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK);
    for (int i = 0; i < 3000; i += 7) {
        char k[32];
        snprintf(k, sizeof k, "key%06d", i);
        assert_int_equal(tkv_delete(db, k, strlen(k), 0), TKV_OK);
    }
    put_range(db, 1000, 2500, "b");
    assert_int_equal(tkv_flush(db), TKV_OK);
    put_range(db, 2000, 2100, "c"); /* stays in the WAL */
    tu_close_ok(db);
    tkv_options_free(o);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    free(g_base);
    tu_tmpdir_free(g_root);
    return 0;
}

/* ---------------------------------------------------------------- cases */

/* clean -- every kind of file is there and everything verifies. */
static void clean(void **state)
{
    (void)state;
    char *report = verify(g_base, TKV_OK);
    print_message("%s", report);
    assert_int_equal(report_u64(report, "verify:", "problems="), 0);
    assert_true(report_u64(report, "manifest:", "records=") >= 2);
    assert_true(report_u64(report, "wal:", "records=") >= 100);
    assert_true(report_u64(report, "sst:", "files=") >= 1);
    assert_true(report_u64(report, "sst:", "data_blocks=") > report_u64(report, "sst:", "files="));
    assert_true(report_u64(report, "sst:", "entries=") >= 3000);
    assert_true(report_u64(report, "pool:", "rows=") >= 1);
    assert_true(report_u64(report, "pool:", "entries=") >= 1500);
    assert_int_equal(report_u64(report, "manifest:", "rows="), report_u64(report, "pool:", "rows="));
    assert_null(strstr(report, "problem:"));
    assert_string_equal(tkv_errmsg(), "");
    tkv_free(report);
    /* a NULL report is fine too */
    assert_int_equal(tkv_verify(g_base, NULL, NULL), TKV_OK);
}

static void corrupt_wal(void **state)
{
    (void)state;
    char *dir = copy_db("wal");
    char *wal = file_with(dir, ".wal", 1);
    assert_true(size_in(dir, wal) > 1000);
    flip(dir, wal, 16 + 8 + 3); /* the first record's payload: not the last record */
    expect_one_problem(dir, wal, "checksum");
    free(wal);
}

static void corrupt_manifest(void **state)
{
    (void)state;
    char *dir = copy_db("manifest");
    DIR *d = opendir(dir);
    struct dirent *e;
    char *m = NULL;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, "MANIFEST-", 9)) m = strdup(e->d_name);
    closedir(d);
    assert_non_null(m);
    flip(dir, m, 16 + 8 + 2); /* the snapshot record */
    expect_one_problem(dir, m, "checksum");
    free(m);
}

/* sst_layout -- the layout of SST dir/name (read with the engine's reader). */
static void sst_layout(const char *dir, const char *name, table_layout *lay)
{
    char *p = tu_path(dir, name);
    io_file *f;
    assert_int_equal(io_open_read(p, IO_META, NULL, &f), 0);
    table *t;
    assert_int_equal(table_open(f, size_in(dir, name), NULL, &t), 0);
    table_get_layout(t, lay);
    table_close(t);
    free(p);
}

/* corrupt_sst -- one byte of each part of an SST, each in its own copy. */
static void corrupt_sst(void **state)
{
    (void)state;
    char *name = file_with(g_base, ".sst", 0);
    table_layout lay;
    sst_layout(g_base, name, &lay);
    assert_true(lay.filter_bytes > 0 && lay.index_entries > 1);
    struct {
        const char *tag, *what;
        uint64_t off;
    } parts[] = {
        {"sst-data", "data block", lay.index.offset / 2},      {"sst-last-block", "data block", lay.data_end - 10},
        {"sst-filter", "filter block", lay.filter.offset + 1}, {"sst-props", "properties block", lay.props.offset + 1},
        {"sst-index", "index block", lay.index.offset + 1},    {"sst-footer", "footer", size_in(g_base, name) - 20},
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        char *dir = copy_db(parts[i].tag);
        flip(dir, name, parts[i].off);
        char *report = verify(dir, TKV_CORRUPTION);
        if (!strstr(report, parts[i].what))
            fail_msg("%s: the report should say %s:\n%s", parts[i].tag, parts[i].what, report);
        tkv_free(report);
        expect_one_problem(dir, name, "corrupt");
    }
    free(name);
}

/* pool_geometry -- the header of the base pool, and its first row. */
static void pool_geometry(pool_header *h, pool_row_id *row)
{
    char *p = tu_path(g_base, "matrix.pmem");
    pool *pl;
    assert_int_equal(pool_open_readonly(p, &pl), 0);
    pool_header_info(pl, h);
    pool_row_id *rows;
    size_t n;
    assert_int_equal(pool_rows(pl, &rows, &n), 0);
    assert_true(n >= 1);
    *row = rows[0];
    free(rows);
    pool_close(pl);
    free(p);
}

static void corrupt_pool_header(void **state)
{
    (void)state;
    char *dir = copy_db("pool-header");
    flip(dir, "matrix.pmem", 30); /* page_count */
    expect_one_problem(dir, "matrix.pmem", "checksum mismatch");
}

static void corrupt_row_header(void **state)
{
    (void)state;
    pool_header h;
    pool_row_id row;
    pool_geometry(&h, &row);
    char *dir = copy_db("row-header");
    flip(dir, "matrix.pmem", h.pages_offset + (uint64_t)row.first_page * h.page_size + 40); /* the body */
    expect_one_problem(dir, "matrix.pmem", "corrupt row header");
}

static void corrupt_row_page(void **state)
{
    (void)state;
    pool_header h;
    pool_row_id row;
    pool_geometry(&h, &row);
    char *p = tu_path(g_base, "matrix.pmem");
    pool *pl;
    assert_int_equal(pool_open_readonly(p, &pl), 0);
    pool_row r;
    assert_int_equal(pool_row_read(pl, row.slot, &r), 0);
    uint32_t last = pool_row_page(&r, r.npages - 1); /* a data page */
    pool_close(pl);
    free(p);
    char *dir = copy_db("row-page");
    flip(dir, "matrix.pmem", h.pages_offset + (uint64_t)last * h.page_size + 100);
    expect_one_problem(dir, "matrix.pmem", "checksum mismatch in data page");
}

/* pool_missing_row -- the pool lost a row the MANIFEST lists (its slot cleared). */
static void pool_missing_row(void **state)
{
    (void)state;
    pool_header h;
    pool_row_id row;
    pool_geometry(&h, &row);
    char *dir = copy_db("missing-row");
    char *p = tu_path(dir, "matrix.pmem");
    int fd = open(p, O_RDWR);
    uint64_t zero = 0;
    assert_int_equal(pwrite(fd, &zero, 8, (off_t)(h.dir_offset + 8 * (uint64_t)row.slot)), 8);
    close(fd);
    free(p);
    char want[64];
    snprintf(want, sizeof want, "lists row %llu", (unsigned long long)row.row_id);
    expect_one_problem(dir, "matrix.pmem", want);
}

/* pool_released_ahead -- a row released pages that the MANIFEST's cursor
 * still covers (the release bitmap is outside the header checksum: a
 * release persisted ahead of its MANIFEST edit would look like this). */
static void pool_released_ahead(void **state)
{
    (void)state;
    pool_header h;
    pool_row_id row;
    pool_geometry(&h, &row);
    char *p = tu_path(g_base, "matrix.pmem");
    pool *pl;
    assert_int_equal(pool_open_readonly(p, &pl), 0);
    pool_row r;
    assert_int_equal(pool_row_read(pl, row.slot, &r), 0);
    assert_true(r.npages >= 2);
    uint64_t bitmap = (uint64_t)((const uint8_t *)r.release_bitmap - pool_page_addr(pl, r.first_page));
    uint32_t last = r.npages - 1; /* the last data page: with one data page, a prefix of them */
    pool_close(pl);
    free(p);
    assert_true(last < 8);
    char *dir = copy_db("released-ahead");
    p = tu_path(dir, "matrix.pmem");
    int fd = open(p, O_RDWR);
    uint8_t b = (uint8_t)(1u << last);
    assert_int_equal(pwrite(fd, &b, 1, (off_t)(h.pages_offset + (uint64_t)row.first_page * h.page_size + bitmap)), 1);
    close(fd);
    free(p);
    expect_one_problem(dir, "matrix.pmem", "released the pages");
}

/* pool_of_another -- the pool file of another database in place of its own. */
static void pool_of_another(void **state)
{
    (void)state;
    char *other = tu_path(g_root, "other");
    tkv_options *o = options();
    tkv_db *db = tu_open_ok(other, o);
    put_range(db, 0, 10, "x");
    tu_close_ok(db);
    tkv_options_free(o);
    char *dir = copy_db("another");
    char *src = tu_path(other, "matrix.pmem"), *dst = tu_path(dir, "matrix.pmem");
    tu_copy_file(src, dst);
    expect_one_problem(dir, "matrix.pmem", "belongs to another database");
    free(src);
    free(dst);
    tu_rmrf(other);
    free(other);
}

/* crash_leftovers -- a torn WAL tail and an orphan SST are notes, not problems. */
static void crash_leftovers(void **state)
{
    (void)state;
    char *dir = copy_db("leftovers");
    char *wal = file_with(dir, ".wal", 1), *sst = file_with(dir, ".sst", 0);
    char *p = tu_path(dir, wal), *s = tu_path(dir, sst), *orphan = tu_path(dir, "999999.sst");
    FILE *f = fopen(p, "ab"); /* a record cut short by the crash: its first 5 bytes, after the last sync */
    assert_non_null(f);
    assert_int_equal(fwrite("\x11\x22\x33\x44\x55", 1, 5, f), 5);
    assert_int_equal(fclose(f), 0);
    tu_copy_file(s, orphan);
    char *report = verify(dir, TKV_OK);
    assert_int_equal(report_u64(report, "verify:", "problems="), 0);
    assert_int_equal(report_u64(report, "verify:", "notes="), 2);
    assert_non_null(strstr(report, "torn"));
    assert_non_null(strstr(report, "999999.sst is not in"));
    tkv_free(report);
    free(p);
    free(s);
    free(orphan);
    free(wal);
    free(sst);
    tu_rmrf(dir);
    free(dir);
}

/* clean_sst_levels -- l0=sst (no pool) with random puts and deletes over
 * several levels: every SST and the MANIFEST agree, no problem, no note. */
static void clean_sst_levels(void **state)
{
    (void)state;
    char *dir = tu_path(g_root, "levels");
    tkv_options *o = tu_small_options();
    assert_int_equal(tkv_options_set(o, "l0", "sst"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "sst_size", "64K"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "l1_size", "128K"), TKV_OK);
    tkv_db *db = tu_open_ok(dir, o);
    tu_rng r;
    tu_rng_init(&r, tu_seed());
    for (int i = 0; i < 20000; i++) {
        char k[32], v[80];
        snprintf(k, sizeof k, "k%07llu", (unsigned long long)tu_rng_below(&r, 8000));
        tu_rng_fill(&r, v, sizeof v);
        int rc = tu_rng_chance(&r, 100000) ? tkv_delete(db, k, strlen(k), 0)
                                           : tkv_put(db, k, strlen(k), v, 1 + tu_rng_below(&r, sizeof v), 0);
        assert_int_equal(rc, TKV_OK);
    }
    tu_close_ok(db);
    tkv_options_free(o);
    char *report = verify(dir, TKV_OK);
    print_message("%s", report);
    assert_int_equal(report_u64(report, "verify:", "problems="), 0);
    assert_int_equal(report_u64(report, "verify:", "notes="), 0);
    assert_true(report_u64(report, "sst:", "files=") >= 3);
    assert_non_null(strstr(report, "pool: none"));
    tkv_free(report);
    tu_rmrf(dir);
    free(dir);
}

/* crash_state -- a process killed (SIGKILL) while it writes, flushes and
 * compacts leaves a database that verifies without a problem (notes
 * allowed), and opens. */
static void crash_state(void **state)
{
    (void)state;
    char *dir = copy_db("crash");
    tkv_options *o = options();
    assert_int_equal(tkv_options_set(o, "matrix_trigger", "10"), TKV_OK); /* columns run */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        tkv_db *db;
        if (tkv_open(dir, o, &db) != TKV_OK) _exit(3);
        for (int round = 0;; round++) {
            char k[32], v[100];
            for (int i = 0; i < 500; i++) {
                snprintf(k, sizeof k, "key%06d", (round * 577 + i * 13) % 5000);
                memset(v, 'a' + round % 26, sizeof v);
                if (tkv_put(db, k, strlen(k), v, sizeof v, 0) != TKV_OK) _exit(4);
            }
            if (round % 5 == 4) (void)tkv_flush(db);
        }
    }
    usleep(300000 + (useconds_t)(tu_seed() % 400000));
    kill(pid, SIGKILL);
    int ws;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    assert_true(WIFSIGNALED(ws));
    char *report = verify(dir, TKV_OK);
    print_message("%s", report);
    assert_int_equal(report_u64(report, "verify:", "problems="), 0);
    tkv_free(report);
    tkv_db *db = tu_open_ok(dir, o);
    tu_close_ok(db);
    tkv_free(verify(dir, TKV_OK));
    tkv_options_free(o);
    tu_rmrf(dir);
    free(dir);
}

/* changes_nothing -- verify (clean, or with problems) leaves every byte,
 * every block and every time stamp of every file as it was, and makes no
 * file. */
static void changes_nothing(void **state)
{
    (void)state;
    tu_dir_state *before = tu_dir_state_take(g_base);
    tkv_free(verify(g_base, TKV_OK));
    tu_dir_state *after = tu_dir_state_take(g_base);
    tu_dir_state_expect_same(before, after, "tkv_verify of a clean database");
    tu_dir_state_free(before);
    tu_dir_state_free(after);
    char *dir = copy_db("unchanged");
    char *sst = file_with(dir, ".sst", 0);
    flip(dir, sst, 3);
    flip(dir, "matrix.pmem", 30);
    before = tu_dir_state_take(dir);
    tkv_free(verify(dir, TKV_CORRUPTION));
    after = tu_dir_state_take(dir);
    tu_dir_state_expect_same(before, after, "tkv_verify of a damaged database");
    tu_dir_state_free(before);
    tu_dir_state_free(after);
    free(sst);
    tu_rmrf(dir);
    free(dir);
}

/* refuses -- an open database is TKV_BUSY (nothing checked, no report);
 * closed again, it verifies; a directory without a database, a missing one
 * and NULL are TKV_INVALID. */
static void refuses(void **state)
{
    (void)state;
    char *dir = copy_db("busy");
    tkv_options *o = options();
    tkv_db *db = tu_open_ok(dir, o);
    char *report = (char *)&report;
    assert_int_equal(tkv_verify(dir, NULL, &report), TKV_BUSY);
    assert_null(report);
    assert_non_null(strstr(tkv_errmsg(), "open"));
    tu_close_ok(db);
    tkv_options_free(o);
    tkv_free(verify(dir, TKV_OK));
    tu_rmrf(dir);
    free(dir);
    char *empty = tu_path(g_root, "empty");
    assert_int_equal(mkdir(empty, 0755), 0);
    assert_int_equal(tkv_verify(empty, NULL, &report), TKV_INVALID);
    assert_null(report);
    char *missing = tu_path(g_root, "missing");
    assert_int_equal(tkv_verify(missing, NULL, NULL), TKV_INVALID);
    assert_int_equal(tkv_verify(NULL, NULL, NULL), TKV_INVALID);
    free(empty);
    free(missing);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(clean),
        cmocka_unit_test(corrupt_wal),
        cmocka_unit_test(corrupt_manifest),
        cmocka_unit_test(corrupt_sst),
        cmocka_unit_test(corrupt_pool_header),
        cmocka_unit_test(corrupt_row_header),
        cmocka_unit_test(corrupt_row_page),
        cmocka_unit_test(pool_missing_row),
        cmocka_unit_test(pool_released_ahead),
        cmocka_unit_test(pool_of_another),
        cmocka_unit_test(crash_leftovers),
        cmocka_unit_test(clean_sst_levels),
        cmocka_unit_test(crash_state),
        cmocka_unit_test(changes_nothing),
        cmocka_unit_test(refuses),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
