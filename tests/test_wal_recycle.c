// SPDX-License-Identifier: Apache-2.0
/*
 * test_wal_recycle.c -- recycled WALs (format version 3, mem/wal.h
 * wal_writer_recycle; docs/format-wal.md): a log written over an older
 * log's file replays exactly its own records, never one of the old log's --
 * not even one that lies at one of its record boundaries with a valid
 * unseeded (version 2) or differently seeded (version 3) checksum; crash
 * images taken at random moments (what a killed process leaves) replay the
 * records appended so far; damage below the synced frontier is still
 * corruption; through a mapping too. Then the database: obsolete WALs are
 * written again as new logs (tkv.stats `recycled=`) with every write kept
 * across reopens (test_crash's kill -9 loop and the power-cut test run
 * with recycling on, the default), and a log whose new header never
 * reached the disk (its name does, its header still names the older log)
 * opens as an empty log instead of failing the open.
 *
 * Reproducing a failure: the test prints "seed=N"; rerun with TKV_TEST_SEED=N.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io.h"
#include "io/wb.h"
#include "io/wmap.h"
#include "mem/wal.h"
#include "testutil.h"
#include "util/coding.h"
#include "util/status.h"

/* ---------------------------------------------------------------- helpers */

typedef struct fixture {
    char *dir;
} fixture;

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    if (!fx) return -1;
    fx->dir = tu_tmpdir("walrec");
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    io_set_fault_hook(NULL, NULL);
    wal_set_frontier_step(WAL_FRONTIER_STEP);
    tu_rmrf(fx->dir);
    tu_tmpdir_free(fx->dir);
    free(fx);
    return 0;
}

/* lpath -- "<dir>/<number>.wal" into buf (PATH_MAX bytes). */
static const char *lpath(const fixture *fx, uint64_t number, char *buf)
{
    snprintf(buf, PATH_MAX, "%s/%06llu.wal", fx->dir, (unsigned long long)number);
    return buf;
}

/* payload -- the content of record `id` (n bytes) into p. */
static void payload(uint8_t *p, size_t n, uint64_t id)
{
    tu_rng r;
    tu_rng_init(&r, id * 7919 + 1);
    tu_rng_fill(&r, p, n);
}

/* The records a replay must deliver, in order. */
typedef struct model {
    size_t n;
    size_t len[4096];
    uint64_t id[4096];
    size_t seen;
    int bad;
} model;

/* add -- appends record `id` of n bytes through w and into m (m may be NULL). */
static void add(wal_writer *w, model *m, size_t n, uint64_t id)
{
    uint8_t *p = malloc(n ? n : 1);
    assert_non_null(p);
    payload(p, n, id);
    if (wal_add_record(w, p, n) != 0) fail_msg("wal_add_record: %s", tkv_errmsg());
    free(p);
    if (!m) return;
    assert_true(m->n < sizeof m->len / sizeof m->len[0]);
    m->len[m->n] = n;
    m->id[m->n++] = id;
}

static int check_record(void *arg, const uint8_t *p, size_t n, uint64_t off)
{
    (void)off;
    model *m = arg;
    size_t i = m->seen++;
    if (i >= m->n || m->len[i] != n) {
        m->bad = 1;
        return 0;
    }
    uint8_t *want = malloc(n ? n : 1);
    payload(want, n, m->id[i]);
    if (n && memcmp(want, p, n) != 0) m->bad = 1;
    free(want);
    return 0;
}

/* replay_as -- replays path; asserts it delivers exactly the first `upto`
 * records of m (all of them with upto == m->n) and returns the stats. */
static wal_replay_stats replay_as(const char *path, model *m, size_t upto)
{
    size_t keep = m->n;
    m->n = upto;
    m->seen = 0;
    m->bad = 0;
    wal_replay_stats st;
    int rc = wal_replay(path, NULL, check_record, m, &st);
    m->n = keep;
    if (rc != 0) fail_msg("%s: replay failed: %d %s", path, rc, tkv_errmsg());
    if (m->bad || m->seen != upto)
        fail_msg("%s: %zu records delivered, %zu expected (bad=%d)", path, m->seen, upto, m->bad);
    return st;
}

/* flip -- inverts the byte at off in path. */
static void flip(const char *path, uint64_t off)
{
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    uint8_t c;
    assert_int_equal(pread(fd, &c, 1, (off_t)off), 1);
    c = (uint8_t)~c;
    assert_int_equal(pwrite(fd, &c, 1, (off_t)off), 1);
    close(fd);
}

/* ------------------------------------------------------------ the format */

/* test_recycle_same_boundaries -- the hard case: the new log's records have
 * the old log's sizes, so each old record left past the new log's end
 * starts exactly where the next new record would. The version-2 log's
 * (unseeded) records and a version-3 log's (seeded with another number)
 * must both end the replay there, in the open file (a process crash) and
 * after close (cut off). */
static void test_recycle_same_boundaries(void **state)
{
    fixture *fx = *state;
    char a[PATH_MAX], b[PATH_MAX], c[PATH_MAX], img[PATH_MAX];
    snprintf(img, sizeof img, "%s/image", fx->dir);
    wal_writer *w = NULL;
    assert_int_equal(wal_writer_open(lpath(fx, 5, a), NULL, 5, 0, 0, &w), 0);
    for (int i = 0; i < 40; i++) add(w, NULL, 300, 500 + (uint64_t)i);
    assert_int_equal(wal_sync(w), 0);
    assert_int_equal(wal_writer_close(w), 0);
    uint64_t old_size = tu_file_size(a);

    model m = {0};
    assert_int_equal(wal_writer_recycle(a, lpath(fx, 9, b), NULL, 9, 8, 1234, &w), 0);
    assert_int_equal(access(a, F_OK), -1); /* renamed, not copied */
    for (int i = 0; i < 15; i++) add(w, &m, 300, 900 + (uint64_t)i);
    assert_int_equal(wal_sync(w), 0);
    assert_int_equal(tu_file_size(b), old_size); /* the old records are still there past the end */
    tu_copy_file(b, img);                        /* what a killed process leaves */
    wal_replay_stats st = replay_as(img, &m, m.n);
    assert_int_equal(st.version, WAL_V3);
    assert_int_equal(st.log_number, 9);
    assert_int_equal(st.prev_number, 8);
    assert_int_equal(st.prev_size, 1234);
    assert_int_equal(st.end, WAL_V2_HEADER_SIZE + 15 * (WAL_RECORD_HEADER + 300));
    assert_int_equal(st.torn_tail_records, 1);
    assert_int_equal(st.torn_tail_bytes, old_size - st.end);
    assert_int_equal(st.torn_hole, 0);
    assert_int_equal(wal_writer_close(w), 0);
    assert_int_equal(tu_file_size(b), st.end); /* close cuts the old records off */
    st = replay_as(b, &m, m.n);
    assert_int_equal(st.torn_tail_records, 0);

    /* version 3 over version 3: the records of log 9 (seeded 9) past log 12's end */
    model m2 = {0};
    assert_int_equal(wal_writer_recycle(b, lpath(fx, 12, c), NULL, 12, 9, st.end, &w), 0);
    for (int i = 0; i < 6; i++) add(w, &m2, 300, 1200 + (uint64_t)i);
    tu_copy_file(c, img);
    st = replay_as(img, &m2, m2.n);
    assert_int_equal(st.log_number, 12);
    assert_int_equal(st.end, WAL_V2_HEADER_SIZE + 6 * (WAL_RECORD_HEADER + 300));
    assert_int_equal(st.torn_tail_records, 1);
    assert_int_equal(wal_writer_close(w), 0);
}

/* test_recycle_random_images -- random record sizes over a random older
 * log, syncs at random, a copy of the file taken after random appends:
 * every copy replays exactly the records appended before it was taken. */
static void test_recycle_random_images(void **state)
{
    fixture *fx = *state;
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ 0x7265637963);
    char img[PATH_MAX], p[PATH_MAX], q[PATH_MAX];
    snprintf(img, sizeof img, "%s/image", fx->dir);
    uint64_t number = 3;
    wal_writer *w = NULL;
    assert_int_equal(wal_writer_open(lpath(fx, number, p), NULL, number, 0, 0, &w), 0);
    for (int i = 0; i < 200; i++) add(w, NULL, (size_t)tu_rng_below(&r, 3000), 10000 + (uint64_t)i);
    assert_int_equal(wal_writer_close(w), 0);
    for (int round = 0; round < 12; round++) {
        model *m = calloc(1, sizeof *m);
        assert_non_null(m);
        uint64_t next = number + 1 + tu_rng_below(&r, 3);
        assert_int_equal(wal_writer_recycle(lpath(fx, number, p), lpath(fx, next, q), NULL, next, number, 77, &w), 0);
        number = next;
        size_t k = (size_t)tu_rng_range(&r, 1, 300);
        for (size_t i = 0; i < k; i++) {
            size_t n = tu_rng_chance(&r, 20000) ? (size_t)tu_rng_range(&r, 256u << 10, 300u << 10)
                                                : (size_t)tu_rng_below(&r, 3000);
            add(w, m, n, ((uint64_t)round << 32) | i);
            if (tu_rng_chance(&r, 100000)) assert_int_equal(wal_sync(w), 0);
            if (tu_rng_chance(&r, 50000) || i + 1 == k) {
                tu_copy_file(q, img);
                replay_as(img, m, m->n);
            }
        }
        assert_int_equal(wal_writer_close(w), 0);
        replay_as(q, m, m->n);
        free(m);
    }
}

/* test_recycle_corruption_below_frontier -- a recycled log keeps the
 * synced frontier's rule: a damaged record below it is TKV_CORRUPTION;
 * past it, the end of the log. */
static void test_recycle_corruption_below_frontier(void **state)
{
    fixture *fx = *state;
    wal_set_frontier_step(0); /* the slot holds exactly what the last sync covered */
    char a[PATH_MAX], b[PATH_MAX];
    wal_writer *w = NULL;
    assert_int_equal(wal_writer_open(lpath(fx, 2, a), NULL, 2, 0, 0, &w), 0);
    for (int i = 0; i < 30; i++) add(w, NULL, 200, (uint64_t)i);
    assert_int_equal(wal_writer_close(w), 0);
    model m = {0};
    assert_int_equal(wal_writer_recycle(a, lpath(fx, 4, b), NULL, 4, 2, 0, &w), 0);
    for (int i = 0; i < 10; i++) add(w, &m, 100, 40 + (uint64_t)i);
    assert_int_equal(wal_sync(w), 0);
    for (int i = 0; i < 5; i++) add(w, &m, 100, 50 + (uint64_t)i);
    assert_int_equal(wal_writer_close(w), 0);
    uint64_t rec = WAL_RECORD_HEADER + 100;
    /* past the frontier (record 12): the end of the log, 12 records */
    flip(b, WAL_V2_HEADER_SIZE + 12 * rec + 20);
    wal_replay_stats st = replay_as(b, &m, 12);
    assert_int_equal(st.torn_tail_records, 1);
    flip(b, WAL_V2_HEADER_SIZE + 12 * rec + 20);
    /* below it (record 3) */
    flip(b, WAL_V2_HEADER_SIZE + 3 * rec + 20);
    tkv_err_clear();
    assert_int_equal(wal_replay(b, NULL, NULL, NULL, &st), TKV_CORRUPTION);
    assert_non_null(strstr(tkv_errmsg(), "frontier"));
    assert_int_equal(st.records, 3);
}

/* test_recycle_errors -- bad arguments, and a missing old log: nothing
 * is created. */
static void test_recycle_errors(void **state)
{
    fixture *fx = *state;
    char a[PATH_MAX], b[PATH_MAX];
    wal_writer *w = (wal_writer *)1;
    assert_int_equal(wal_writer_recycle(NULL, lpath(fx, 2, b), NULL, 2, 0, 0, &w), TKV_INVALID);
    assert_null(w);
    assert_int_equal(wal_writer_recycle(lpath(fx, 1, a), NULL, NULL, 2, 0, 0, &w), TKV_INVALID);
    assert_int_equal(wal_writer_recycle(a, b, NULL, 0, 0, 0, &w), TKV_INVALID);
    assert_int_equal(wal_writer_recycle(a, b, NULL, 2, 0, 0, NULL), TKV_INVALID);
    tkv_err_clear();
    assert_int_equal(wal_writer_recycle(a, b, NULL, 2, 0, 0, &w), TKV_IO_ERROR);
    assert_non_null(strstr(tkv_errmsg(), "000001.wal"));
    assert_null(w);
    assert_int_equal(access(b, F_OK), -1);
}

/* test_recycle_mapped -- the same through a mapping (wal_mmap): the
 * helper's zeros and the stores land over the old log's bytes. */
static void test_recycle_mapped(void **state)
{
    fixture *fx = *state;
    io_stats st;
    memset(&st, 0, sizeof st);
    st.wal_bytes_per_sync = 64u << 10;
    assert_int_equal(io_wb_start(&st.wb, fx->dir), 0);
    assert_int_equal(io_wmap_start(&st.wmap, 0), 0);
    char a[PATH_MAX], b[PATH_MAX], img[PATH_MAX];
    snprintf(img, sizeof img, "%s/image", fx->dir);
    wal_writer *w = NULL;
    assert_int_equal(wal_writer_open(lpath(fx, 5, a), &st, 5, 0, 0, &w), 0);
    wal_writer_reserve(w, 4u << 20);
    for (int i = 0; i < 300; i++) add(w, NULL, 1000 + (size_t)i, 7000 + (uint64_t)i);
    assert_int_equal(wal_writer_close(w), 0);
    io_wb_drain(st.wb); /* the close's release (files_wal_recycled waits for it the same way) */
    model m = {0};
    assert_int_equal(wal_writer_recycle(a, lpath(fx, 6, b), &st, 6, 5, 0, &w), 0);
    wal_writer_reserve(w, 4u << 20);
    for (int i = 0; i < 120; i++) {
        add(w, &m, 1000 + (size_t)i, 8000 + (uint64_t)i); /* the same sizes: the same boundaries */
        if (i % 17 == 0) assert_int_equal(wal_sync(w), 0);
    }
    tu_copy_file(b, img);
    wal_replay_stats rs = replay_as(img, &m, m.n);
    assert_int_equal(rs.version, WAL_V3);
    assert_int_equal(wal_writer_close(w), 0);
    io_wb_drain(st.wb); /* the release that cuts the old log off runs there */
    rs = replay_as(b, &m, m.n);
    assert_int_equal(rs.torn_tail_records, 0);
    io_wb_stop(st.wb);
    io_wmap_stop(st.wmap);
}

/* file_blocks -- the bytes of disk blocks path holds. */
static uint64_t file_blocks(const char *path)
{
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    return (uint64_t)sb.st_blocks * 512u;
}

/* kept_length -- wal_writer_keep_reserved, mapped or not: a closed log
 * keeps its reservation's length and blocks; the log recycled into it
 * reserves the same again without a fallocate and without changing the
 * file (its length, its blocks), is mapped when the first one was, and replays exactly its own
 * records with the older log's (or the helper's zeros) after them, open and
 * after its own close. */
static void kept_length(fixture *fx, int mapped)
{
    io_stats st;
    memset(&st, 0, sizeof st);
    assert_int_equal(io_wb_start(&st.wb, fx->dir), 0);
    if (mapped) assert_int_equal(io_wmap_start(&st.wmap, 0), 0);
    const uint64_t reserve = 4u << 20;
    char a[PATH_MAX], b[PATH_MAX], img[PATH_MAX];
    snprintf(img, sizeof img, "%s/image", fx->dir);
    wal_writer *w = NULL;
    assert_int_equal(wal_writer_open(lpath(fx, 5, a), &st, 5, 0, 0, &w), 0);
    wal_writer_keep_reserved(w, 1);
    wal_writer_reserve(w, reserve);
    for (int i = 0; i < 900; i++) add(w, NULL, 1000 + (size_t)i % 700, 7000 + (uint64_t)i);
    uint64_t written = wal_size(w);
    assert_true(written < reserve);
    assert_int_equal(wal_writer_close(w), 0);
    io_wb_drain(st.wb);
    uint64_t blocks = file_blocks(a), len = tu_file_size(a);
    if (len < WAL_V2_HEADER_SIZE + reserve)
        fail_msg("kept log is %llu bytes, reserved %llu", (unsigned long long)len,
                 (unsigned long long)(WAL_V2_HEADER_SIZE + reserve));
    if (blocks < reserve)
        fail_msg("kept log holds %llu bytes of blocks, reserved %llu", (unsigned long long)blocks,
                 (unsigned long long)reserve);

    model m = {0};
    assert_int_equal(wal_writer_recycle(a, lpath(fx, 6, b), &st, 6, 5, 0, &w), 0);
    wal_writer_keep_reserved(w, 1);
    tu_fault f = {IO_OP_FALLOCATE, NULL, 0, -1, ENOSPC, 0}; /* every fallocate fails and is counted */
    io_set_fault_hook(tu_fault_hook, &f);
    wal_writer_reserve(w, reserve);
    io_set_fault_hook(NULL, NULL);
    assert_int_equal(f.hits, 0);            /* its blocks are there: nothing to reserve */
    assert_int_equal(tu_file_size(b), len); /* neither extended nor cut */
    assert_int_equal(file_blocks(b), blocks);
    if (mapped) {
        io_wmap_stats ws;
        io_wmap_get_stats(st.wmap, &ws);
        assert_int_equal(ws.files, 2); /* the recycled log is mapped as it is */
    }
    for (int i = 0; i < 200; i++) {
        add(w, &m, 900 + (size_t)i % 300, 8000 + (uint64_t)i);
        if (i % 41 == 0) assert_int_equal(wal_sync(w), 0);
    }
    tu_copy_file(b, img); /* what a process crash leaves */
    wal_replay_stats rs = replay_as(img, &m, m.n);
    assert_int_equal(rs.version, WAL_V3);
    assert_int_equal(wal_writer_close(w), 0);
    io_wb_drain(st.wb);
    assert_int_equal(tu_file_size(b), len);
    rs = replay_as(b, &m, m.n);
    assert_true(rs.torn_tail_bytes > 0); /* the older log's records and zeros, read as the end */
    io_wb_stop(st.wb);
    if (mapped) io_wmap_stop(st.wmap);
}

static void test_recycle_kept_mapped(void **state) { kept_length(*state, 1); }
static void test_recycle_kept_pwrite(void **state) { kept_length(*state, 0); }

/* ------------------------------------------------------------ the database */

/* wal_stat -- the `recycled=` count of tkv.stats. */
static uint64_t recycled_count(tkv_db *db)
{
    char *s = tkv_property(db, "tkv.stats");
    assert_non_null(s);
    const char *p = strstr(s, "recycled=");
    assert_non_null(p);
    uint64_t n = strtoull(p + 9, NULL, 10);
    tkv_free(s);
    return n;
}

/* db_writes -- n random puts and deletes of keys below 4000 into db and m,
 * every 50th synced. */
static void db_writes(tkv_db *db, tu_model *m, tu_rng *r, int n)
{
    char k[16], v[600];
    for (int i = 0; i < n; i++) {
        int kn = snprintf(k, sizeof k, "k%06llu", (unsigned long long)tu_rng_below(r, 4000));
        unsigned flags = i % 50 == 0 ? TKV_SYNC : 0;
        if (tu_rng_chance(r, 100000)) {
            assert_int_equal(tkv_delete(db, k, (size_t)kn, flags), 0);
            tu_model_del(m, k, (size_t)kn);
        } else {
            size_t vn = (size_t)tu_rng_range(r, 1, sizeof v);
            tu_rng_fill(r, v, vn);
            assert_int_equal(tu_put_model(db, m, k, (size_t)kn, v, vn, flags), 0);
        }
    }
}

/* db_recycles -- with wal_recycle=N and the WAL mapped or not: logs are
 * recycled (N > 0) or never (N = 0); at most memtables + N + 1 WAL files
 * exist; every write survives reopens; a closed database keeps none. */
static void db_recycles(fixture *fx, const char *mmap, const char *n)
{
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ (uint64_t)(mmap[0] * 31 + n[0]));
    char *dir = tu_path(fx->dir, "db");
    tu_rmrf(dir);
    tkv_options *o = tu_small_options();
    tu_opt(o, "wal_mmap", mmap);
    tu_opt(o, "wal_recycle", n);
    tu_model *m = tu_model_new();
    tkv_db *db = tu_open_ok(dir, o);
    uint64_t recycled = 0;
    for (int round = 0; round < 4; round++) {
        db_writes(db, m, &r, 3000);
        uint64_t *nums;
        size_t nwal = tu_list_numbered(dir, ".wal", &nums);
        free(nums);
        if (nwal > 2u + (size_t)atoi(n) + 1u) fail_msg("%zu WAL files with wal_recycle=%s", nwal, n);
        recycled += recycled_count(db);
        tu_close_reopen_check(db, dir, o, m, "reopen");
        db = tu_open_ok(dir, o);
    }
    if (atoi(n) == 0) assert_int_equal(recycled, 0);
    else if (recycled == 0) fail_msg("no WAL recycled with wal_recycle=%s wal_mmap=%s", n, mmap);
    tu_close_ok(db);
    char *report = NULL; /* tkv_close deleted the kept ones */
    assert_int_equal(tkv_verify(dir, o, &report), 0);
    if (strstr(report, "older than the MANIFEST's log number")) fail_msg("kept WALs after close:\n%s", report);
    tkv_free(report);
    tu_model_free(m);
    tkv_options_free(o);
    free(dir);
}

static void test_db_recycles_pwrite(void **state) { db_recycles(*state, "0", "2"); }
static void test_db_recycles_mapped(void **state) { db_recycles(*state, "1", "2"); }
static void test_db_recycles_one(void **state) { db_recycles(*state, "0", "1"); }
static void test_db_recycle_off(void **state) { db_recycles(*state, "1", "0"); }

/* test_db_header_lost -- a crash after a recycled log's rename reached the
 * disk and before its header did: the file carries the new number and the
 * old log's header and records. Recovery must read it as an empty log
 * (nothing in it was synced) and open; tkv_verify says so. Built here by
 * copying the newest WAL to a higher number. */
static void test_db_header_lost(void **state)
{
    fixture *fx = *state;
    char *dir = tu_path(fx->dir, "db");
    tkv_options *o = tu_small_options();
    tu_opt(o, "memtable_size", "2M"); /* no switch: one WAL holds every write */
    tu_model *m = tu_model_new();
    tkv_db *db = tu_open_ok(dir, o);
    tu_rng r;
    tu_rng_init(&r, tu_seed());
    db_writes(db, m, &r, 500);
    tu_close_ok(db);
    uint64_t *nums;
    size_t nwal = tu_list_numbered(dir, ".wal", &nums);
    assert_true(nwal >= 1);
    char src[PATH_MAX], dst[PATH_MAX];
    snprintf(src, sizeof src, "%s/%06llu.wal", dir, (unsigned long long)nums[nwal - 1]);
    snprintf(dst, sizeof dst, "%s/%06llu.wal", dir, (unsigned long long)nums[nwal - 1] + 50);
    free(nums);
    tu_copy_file(src, dst);
    char *report = NULL;
    assert_int_equal(tkv_verify(dir, o, &report), 0);
    assert_non_null(strstr(report, "recycled log whose header never reached the disk"));
    tkv_free(report);
    db = tu_open_ok(dir, o); /* before: TKV_CORRUPTION, "its header names log N" */
    tu_check_db(db, NULL, m, "after a lost recycled header");
    tu_close_ok(db);
    tu_model_free(m);
    tkv_options_free(o);
    free(dir);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_recycle_same_boundaries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recycle_random_images, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recycle_corruption_below_frontier, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recycle_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recycle_mapped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recycle_kept_mapped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recycle_kept_pwrite, setup, teardown),
        cmocka_unit_test_setup_teardown(test_db_recycles_pwrite, setup, teardown),
        cmocka_unit_test_setup_teardown(test_db_recycles_mapped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_db_recycles_one, setup, teardown),
        cmocka_unit_test_setup_teardown(test_db_recycle_off, setup, teardown),
        cmocka_unit_test_setup_teardown(test_db_header_lost, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
