// SPDX-License-Identifier: Apache-2.0
/*
 * test_readonly.c -- read_only=1: a read-only open reads every tier and
 * writes nothing.
 *
 *  every_tier      a database with data in L2, L1, pool rows and the WAL
 *                  (closed cleanly) opened read-only: gets, multi_get,
 *                  get_into, iterators both ways, bounds, a snapshot, the
 *                  properties and statistics agree with a model; every
 *                  write call is TKV_READ_ONLY naming the database; no
 *                  thread is started (a listener and an env are set, and
 *                  the env is not used), no write-side I/O is made, and after
 *                  the close every file (list, bytes, blocks, mtime, ctime)
 *                  and the directory are as they were
 *  large_wal       WALs holding ~55 memtables of the read-only open's size
 *                  (and more than its dram_budget) are kept in DRAM, all read
 *  sst_tier        l0=sst (no pool): read-only with l0=sst, and with
 *                  l0=matrix, which must not create a pool
 *  after_crash     a writer killed (SIGKILL) with writes only in its WAL:
 *                  read-only sees all of them and leaves the files as the
 *                  crash did; a read-write open afterwards agrees
 *  unlisted_row    a writer killed between a row's commit and its MANIFEST
 *                  edit: read-only ignores the row (the WAL has its data)
 *                  and leaves it in the pool, which a read-write open drops
 *  shared_locks    two read-only handles in one process read at once, one
 *                  more in a child process; a read-write open, tkv_destroy
 *                  are TKV_BUSY meanwhile, tkv_verify is not; while a
 *                  read-write handle is open a read-only open is TKV_BUSY,
 *                  here and in another process
 *  missing         no directory, an empty one, a copy without LOCK, one
 *                  without MANIFEST: TKV_INVALID and nothing created
 *  corruption      a flipped byte in every SST: reads that reach it are
 *                  TKV_CORRUPTION, never other data; a flipped byte in a
 *                  row: the read-only open is TKV_CORRUPTION; no file changes
 *  checkpoint      tkv_checkpoint of a read-only handle writes nothing in
 *                  the source (its SSTs' ctimes aside: the links), holds
 *                  every tier, and opens read-only itself
 *
 * The base database is built once (group setup) and each case reads a copy.
 */
#include <errno.h>
#include <fcntl.h>
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
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "io/io.h"
#include "matrix/pool.h"
#include "testutil.h"
#include "util/thread.h"

static char *g_root;      /* temporary directory of the group */
static char *g_base;      /* the database every case copies */
static tu_model *g_model; /* what it holds */
static uint64_t g_last_seq;

/* ---------------------------------------------------------------- writing the data */

static tkv_options *base_options(void)
{
    tkv_options *o = tu_small_options();
    assert_int_equal(tkv_options_set(o, "l0", "matrix"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "matrix_trigger", "90"), TKV_OK); /* rows stay until drained by hand */
    return o;
}

static tkv_options *ro_options(void)
{
    tkv_options *o = base_options();
    assert_int_equal(tkv_options_set(o, "read_only", "1"), TKV_OK);
    return o;
}

/* put_keys -- keys [from, to) in steps of `step`, values tagged `tag`
 * (about 200 bytes), into db (NULL: the model alone) and m. */
static void put_keys(tkv_db *db, tu_model *m, int from, int to, int step, const char *tag)
{
    for (int i = from; i < to; i += step) {
        char k[32], v[256];
        int kn = snprintf(k, sizeof k, "key%06d", i), vn = snprintf(v, sizeof v, "%s-%06d-", tag, i);
        uint64_t x = (uint64_t)i * 1000003u + (uint64_t)tag[0]; /* 192 hex digits that do not compress */
        for (int j = 0; j < 12; j++)
            vn += snprintf(v + vn, sizeof v - (size_t)vn, "%016llx", (unsigned long long)tu_splitmix64(&x));
        if (db) assert_int_equal(tkv_put(db, k, (size_t)kn, v, (size_t)vn, 0), TKV_OK);
        tu_model_put(m, k, (size_t)kn, v, (size_t)vn);
    }
}

/* del_keys -- deletes keys [from, to) in steps of `step` (db NULL: m only). */
static void del_keys(tkv_db *db, tu_model *m, int from, int to, int step)
{
    for (int i = from; i < to; i += step) {
        char k[32];
        int kn = snprintf(k, sizeof k, "key%06d", i);
        if (db) assert_int_equal(tkv_delete(db, k, (size_t)kn, 0), TKV_OK);
        tu_model_del(m, k, (size_t)kn);
    }
}

/* fill_tiers -- L2 (compact_range, then deep compactions by score), L1
 * (rows drained by a compact_range of a range no level holds, which goes no
 * deeper), rows in the pool (a flush; matrix_trigger=90 keeps them), then
 * writes left in the WAL. Each tier overwrites and deletes some keys of the
 * ones below. */
static void fill_tiers(tkv_db *db, tu_model *m)
{
    put_keys(db, m, 0, 6000, 1, "a");
    assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK);
    assert_true(tu_wait_quiet(db, 60000));
    put_keys(db, m, 0, 6000, 5, "b");
    del_keys(db, m, 1, 6000, 11);
    assert_int_equal(tkv_compact_range(db, "zzz", 3, "zzz", 3), TKV_OK);
    assert_true(tu_wait_quiet(db, 60000));
    put_keys(db, m, 2, 6000, 7, "c");
    del_keys(db, m, 3, 6000, 13);
    assert_int_equal(tkv_flush(db), TKV_OK);
    put_keys(db, m, 4, 6000, 37, "d"); /* ~160 keys: stay in the active memtable and its WAL */
    del_keys(db, m, 5, 6000, 97);
}

static int group_setup(void **state)
{
    (void)state;
    g_root = tu_tmpdir("readonly");
    g_base = tu_path(g_root, "base");
    g_model = tu_model_new();
    tkv_options *o = base_options();
    tkv_db *db = tu_open_ok(g_base, o);
    fill_tiers(db, g_model);
    char *seq = tkv_property(db, "tkv.last-sequence");
    assert_non_null(seq);
    g_last_seq = strtoull(seq, NULL, 10);
    tkv_free(seq);
    char *levels = tkv_property(db, "tkv.levels");
    print_message("%s", levels);
    tkv_free(levels);
    tu_close_ok(db);
    tkv_options_free(o);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    tu_model_free(g_model);
    free(g_base);
    tu_tmpdir_free(g_root);
    return 0;
}

/* copy_base -- a copy of the base database (with its LOCK file). */
static char *copy_base(const char *name)
{
    char *dst = tu_path(g_root, name);
    tu_copy_db(g_base, dst, 1);
    return dst;
}

/* ---------------------------------------------------------------- what a read-only handle must not do */

/* The write-side operations of the I/O layer and emul/ (io.h io_op) on a
 * path in the watched directory; the spy counts them from tkv_open to
 * tkv_close. */
static int g_writes;
static char g_first_write[600];
static char g_watched[4096]; /* "<dir>/" */

static int write_spy(io_op op, const char *path, size_t len, void *arg)
{
    (void)len;
    (void)arg;
    if (!path || strncmp(path, g_watched, strlen(g_watched)) != 0) return 0;
    static const char *const names[] = {"open",   "write",      "sync",  "read",     "rename",
                                        "remove", "ring setup", "msync", "fallocate"};
    int w = op == IO_OP_WRITE || op == IO_OP_SYNC || op == IO_OP_RENAME || op == IO_OP_REMOVE || op == IO_OP_MSYNC ||
            op == IO_OP_FALLOCATE;
    if (w && __atomic_fetch_add(&g_writes, 1, __ATOMIC_RELAXED) == 0)
        snprintf(g_first_write, sizeof g_first_write, "%s of %s", names[op], path);
    return 0;
}

/* watch_begin / watch_end -- around a read-only handle's life: the
 * directory's state, the spy, and thread_create armed to fail (a read-only
 * handle starts no thread: the countdown must still be armed at the end). */
static tu_dir_state *watch_begin(const char *dir)
{
    tu_dir_state *s = tu_dir_state_take(dir);
    snprintf(g_watched, sizeof g_watched, "%s/", dir);
    __atomic_store_n(&g_writes, 0, __ATOMIC_RELAXED);
    io_set_fault_hook(write_spy, NULL);
    thread_fail_after(0);
    return s;
}

static void watch_end(const char *dir, tu_dir_state *before, const char *what)
{
    int armed = thread_fail_after(-1);
    io_set_fault_hook(NULL, NULL);
    if (armed < 0) fail_msg("%s: a read-only handle started a thread", what);
    if (g_writes) fail_msg("%s: %d write-side I/O operations, the first a %s", what, g_writes, g_first_write);
    tu_dir_state *after = tu_dir_state_take(dir);
    tu_dir_state_expect_same(before, after, what);
    tu_dir_state_free(before);
    tu_dir_state_free(after);
}

/* open_ro -- a read-only open of dir that must succeed. */
static tkv_db *open_ro(const char *dir, const tkv_options *o)
{
    tkv_db *db = NULL;
    int rc = tkv_open(dir, o, &db);
    if (rc != TKV_OK) fail_msg("read-only open of %s: %d (%s): %s", dir, rc, tkv_strerror(rc), tkv_errmsg());
    return db;
}

/* ---------------------------------------------------------------- reads */

/* check_multi_get -- every model key, with absent keys between them, in
 * batches of 64, at snap. */
static void check_multi_get(tkv_db *db, const tkv_snapshot *snap, const tu_model *m)
{
    enum { B = 64 };
    size_t n = tu_model_count(m);
    char absent[B][32];
    const void *keys[B];
    size_t klens[B], vlens[B];
    void *vals[B];
    int st[B], present[B];
    const void *want[B];
    size_t wantn[B];
    for (size_t at = 0; at < n;) {
        size_t k = 0;
        for (; k < B && at < n; k++) {
            present[k] = k % 4 != 3;
            if (present[k]) {
                tu_model_at(m, at, &keys[k], &klens[k], &want[k], &wantn[k]);
                at++;
            } else {
                klens[k] = (size_t)snprintf(absent[k], sizeof absent[k], "key%06zu-absent", at);
                keys[k] = absent[k];
            }
        }
        assert_int_equal(tkv_multi_get(db, snap, k, keys, klens, vals, vlens, st), TKV_OK);
        for (size_t i = 0; i < k; i++) {
            if (st[i] != (present[i] ? TKV_OK : TKV_NOT_FOUND))
                fail_msg("multi_get %s: status %d", tu_hex(keys[i], klens[i]), st[i]);
            if (present[i] && (vlens[i] != wantn[i] || memcmp(vals[i], want[i], wantn[i]) != 0))
                fail_msg("multi_get %s: wrong value", tu_hex(keys[i], klens[i]));
            if (present[i]) tkv_free(vals[i]);
        }
    }
}

/* check_get_into -- every 7th model key into a buffer too small (whole
 * length, prefix) and one large enough. */
static void check_get_into(tkv_db *db, const tu_model *m)
{
    char small[16], big[512];
    for (size_t i = 0; i < tu_model_count(m); i += 7) {
        const void *k, *v;
        size_t kn, vn, got = 0;
        tu_model_at(m, i, &k, &kn, &v, &vn);
        assert_true(vn > sizeof small && vn <= sizeof big);
        assert_int_equal(tkv_get_into(db, NULL, k, kn, small, sizeof small, &got), TKV_TRUNCATED);
        assert_int_equal(got, vn);
        assert_memory_equal(small, v, sizeof small);
        assert_int_equal(tkv_get_into(db, NULL, k, kn, big, sizeof big, &got), TKV_OK);
        assert_int_equal(got, vn);
        assert_memory_equal(big, v, vn);
    }
}

/* check_bounded -- an iterator bounded to [key001000, key004000), both
 * directions, against the model. */
static void check_bounded(tkv_db *db, const tu_model *m)
{
    tkv_read_options *ro = tkv_read_options_new();
    assert_int_equal(tkv_read_options_set_bounds(ro, "key001000", 9, "key004000", 9), TKV_OK);
    tkv_iter *it;
    assert_int_equal(tkv_iter_new_opt(db, ro, &it), TKV_OK);
    size_t lo = tu_model_lower_bound(m, "key001000", 9), hi = tu_model_lower_bound(m, "key004000", 9);
    size_t i = lo;
    for (tkv_iter_seek_first(it); tkv_iter_valid(it); tkv_iter_next(it), i++) {
        const void *k;
        size_t kn, n;
        tu_model_at(m, i, &k, &kn, NULL, NULL);
        const void *got = tkv_iter_key(it, &n);
        if (i >= hi || n != kn || memcmp(got, k, kn)) fail_msg("bounded scan: wrong key at %zu", i - lo);
    }
    assert_int_equal(tkv_iter_status(it), TKV_OK);
    assert_int_equal(i, hi);
    for (tkv_iter_seek_last(it); tkv_iter_valid(it); tkv_iter_prev(it)) i--;
    assert_int_equal(tkv_iter_status(it), TKV_OK);
    assert_int_equal(i, lo);
    tkv_iter_free(it);
    tkv_read_options_free(ro);
}

/* check_props -- every property answers; statistics count reads, no write. */
static void check_props(tkv_db *db)
{
    static const char *const names[] = {"tkv.stats",
                                        "tkv.levels",
                                        "tkv.matrix",
                                        "tkv.pmem",
                                        "tkv.memory",
                                        "tkv.options",
                                        "tkv.sched",
                                        "tkv.num-entries-active-mem",
                                        "tkv.num-immutable-mem",
                                        "tkv.last-sequence"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *p = tkv_property(db, names[i]);
        if (!p) fail_msg("property %s: NULL (%s)", names[i], tkv_errmsg());
        tkv_free(p);
    }
    char *opts = tkv_property(db, "tkv.options");
    assert_non_null(strstr(opts, "read_only=1\n"));
    tkv_free(opts);
    uint64_t t[TKV_TICKER_COUNT];
    assert_int_equal(tkv_statistics(db, t, TKV_TICKER_COUNT, NULL, 0), TKV_OK);
    assert_true(t[TKV_TICKER_GETS] > 0);
    assert_int_equal(t[TKV_TICKER_PUTS] + t[TKV_TICKER_DELETES] + t[TKV_TICKER_FLUSHES], 0);
}

/* check_reads -- everything a reader can do, against m. */
static void check_reads(tkv_db *db, const tu_model *m, const char *what)
{
    tu_check_db(db, NULL, m, what); /* both directions, and a get of every key */
    const tkv_snapshot *snap = tkv_snapshot_new(db);
    assert_non_null(snap);
    tu_check_db(db, snap, m, what);
    check_multi_get(db, snap, m);
    tkv_snapshot_free(db, snap);
    check_multi_get(db, NULL, m);
    check_get_into(db, m);
    check_bounded(db, m);
    check_props(db);
}

/* expect_refused -- rc must be TKV_READ_ONLY with a message naming the call
 * and the database. */
static void expect_refused(int rc, const char *call, const char *dir)
{
    if (rc != TKV_READ_ONLY) fail_msg("%s on a read-only handle: %d (%s)", call, rc, tkv_strerror(rc));
    if (!strstr(tkv_errmsg(), call) || !strstr(tkv_errmsg(), dir))
        fail_msg("%s: the message should name the call and %s: %s", call, dir, tkv_errmsg());
}

/* check_writes_refused -- every call that changes a database. */
static void check_writes_refused(tkv_db *db, const char *dir)
{
    expect_refused(tkv_put(db, "key000001", 9, "x", 1, 0), "tkv_put", dir);
    expect_refused(tkv_put(db, "key000001", 9, "x", 1, TKV_SYNC), "tkv_put", dir);
    expect_refused(tkv_delete(db, "key000000", 9, 0), "tkv_delete", dir);
    expect_refused(tkv_delete_range(db, "key000000", 9, "key000100", 9, 0), "tkv_delete_range", dir);
    expect_refused(tkv_delete_range(db, "b", 1, "a", 1, 0), "tkv_delete_range", dir); /* even an empty range */
    tkv_batch *b = tkv_batch_new();
    expect_refused(tkv_write(db, b, 0), "tkv_write", dir); /* even an empty batch */
    assert_int_equal(tkv_batch_put(b, "new", 3, "v", 1), TKV_OK);
    assert_int_equal(tkv_batch_delete(b, "key000000", 9), TKV_OK);
    assert_int_equal(tkv_batch_delete_range(b, "key000010", 9, "key000020", 9), TKV_OK);
    expect_refused(tkv_write(db, b, TKV_NO_WAL), "tkv_write", dir);
    tkv_batch_free(b);
    expect_refused(tkv_flush(db), "tkv_flush", dir);
    expect_refused(tkv_compact_range(db, NULL, 0, NULL, 0), "tkv_compact_range", dir);
    expect_refused(tkv_compact_range(db, "a", 1, "b", 1), "tkv_compact_range", dir);
}

/* check_readonly -- opens dir read-only with o, reads it all against m,
 * checks that writes are refused and reads again, closes; nothing written,
 * no thread started, the directory unchanged. */
static void check_readonly(const char *dir, const tkv_options *o, const tu_model *m, const char *what)
{
    tu_dir_state *before = watch_begin(dir);
    tkv_db *db = open_ro(dir, o);
    check_reads(db, m, what);
    check_writes_refused(db, dir);
    tu_check_db(db, NULL, m, what);
    tu_close_ok(db);
    watch_end(dir, before, what);
}

/* ---------------------------------------------------------------- cases */

static int g_events;
static void count_event(const tkv_event *ev, void *arg)
{
    (void)ev;
    (void)arg;
    __atomic_fetch_add(&g_events, 1, __ATOMIC_RELAXED);
}

/* every_tier -- see the top of the file. */
static void every_tier(void **state)
{
    (void)state;
    char *dir = copy_base("every-tier");
    tkv_options *o = ro_options();
    assert_int_equal(tkv_options_set_listener(o, count_event, NULL), TKV_OK); /* no event thread for it */
    tkv_env *env = tkv_env_new(); /* not used: its first database would start its threads */
    assert_non_null(env);
    assert_int_equal(tkv_options_set_env(o, env), TKV_OK);
    /* the copy has data in every tier, and the read-only handle reads it there */
    tkv_db *db = open_ro(dir, o);
    assert_true(tu_prop_u64(db, "tkv.levels", "L2: files=") > 0);
    assert_true(tu_prop_u64(db, "tkv.levels", "L1: files=") > 0);
    assert_true(tu_prop_u64(db, "tkv.levels", "rows: count=") > 0);
    assert_true(tu_prop_u64(db, "tkv.levels", "mem: entries=") > 0);
    char *seq = tkv_property(db, "tkv.last-sequence");
    assert_int_equal(strtoull(seq, NULL, 10), g_last_seq);
    tkv_free(seq);
    tu_close_ok(db);
    check_readonly(dir, o, g_model, "read-only open of every tier");
    assert_int_equal(g_events, 0);
    db = open_ro(dir, o);
    assert_int_equal(tkv_env_free(env), TKV_OK); /* the read-only handle did not attach */
    tu_close_ok(db);
    /* a read-write open afterwards finds the database as the writer left it */
    tkv_options *rw = base_options();
    db = tu_open_ok(dir, rw);
    tu_check_db(db, NULL, g_model, "read-write open after read-only ones");
    tu_close_ok(db);
    tkv_options_free(rw);
    tkv_options_free(o);
    tu_rmrf(dir);
    free(dir);
}

/* large_wal -- a writer with 4 MiB memtables leaves ~3 MiB in its WAL;
 * the read-only open with 64 KiB memtables (2 of them) and a 4 MiB
 * dram_budget keeps them all in DRAM, about 55 memtables. */
static void large_wal(void **state)
{
    (void)state;
    char *dir = tu_path(g_root, "large-wal");
    tkv_options *o = base_options();
    assert_int_equal(tkv_options_set(o, "memtable_size", "4M"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "pmem_size", "64M"), TKV_OK);
    tu_model *m = tu_model_new();
    tkv_db *db = tu_open_ok(dir, o);
    put_keys(db, m, 0, 11000, 1, "w");
    del_keys(db, m, 0, 11000, 9);
    assert_int_equal(tu_prop_u64(db, "tkv.levels", "rows: count="), 0);
    tu_close_ok(db);
    tkv_options *ro = ro_options();
    assert_int_equal(tkv_options_set(ro, "dram_budget", "4M"), TKV_OK);
    assert_int_equal(tkv_options_set(ro, "pmem_size", "0"), TKV_OK); /* the pool's own size */
    db = open_ro(dir, ro);
    char *n = tkv_property(db, "tkv.num-immutable-mem");
    uint64_t imm = strtoull(n, NULL, 10);
    tkv_free(n);
    print_message("read-only open: %llu immutable memtables\n", (unsigned long long)imm);
    assert_true(imm >= 30);
    tu_close_ok(db);
    check_readonly(dir, ro, m, "read-only open of a large WAL");
    tu_model_free(m);
    tkv_options_free(o);
    tkv_options_free(ro);
    tu_rmrf(dir);
    free(dir);
}

/* sst_tier -- a database made with l0=sst (L0 and L1 SSTs, a WAL, no pool):
 * read-only with l0=sst, and with l0=matrix, which finds no pool and must
 * not make one. */
static void sst_tier(void **state)
{
    (void)state;
    char *dir = tu_path(g_root, "sst-tier");
    tkv_options *o = tu_small_options();
    assert_int_equal(tkv_options_set(o, "l0", "sst"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "l0_compaction_trigger", "100"), TKV_OK); /* L0 files stay */
    assert_int_equal(tkv_options_set(o, "l0_slowdown_trigger", "200"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "l0_stop_trigger", "300"), TKV_OK);
    tu_model *m = tu_model_new();
    tkv_db *db = tu_open_ok(dir, o);
    put_keys(db, m, 0, 3000, 1, "a");
    assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK);
    put_keys(db, m, 0, 3000, 3, "b");
    assert_int_equal(tkv_flush(db), TKV_OK);
    put_keys(db, m, 1, 3000, 50, "c");
    assert_true(tu_prop_u64(db, "tkv.levels", "L0: files=") > 0);
    tu_close_ok(db);
    assert_int_equal(tkv_options_set(o, "read_only", "1"), TKV_OK);
    check_readonly(dir, o, m, "read-only open with l0=sst");
    tkv_options *mx = ro_options(); /* l0=matrix */
    check_readonly(dir, mx, m, "read-only open with l0=matrix of a database without a pool");
    tkv_options_free(mx);
    tu_model_free(m);
    tkv_options_free(o);
    tu_rmrf(dir);
    free(dir);
}

/* ---------------------------------------------------------------- crashes */

/* The child of a crash case writes, reports on the pipe and waits to be
 * killed (or is killed by its own fault hook). */
static int g_kill_armed;

static int kill_at_manifest(io_op op, const char *path, size_t len, void *arg)
{
    (void)len;
    (void)arg;
    if (__atomic_load_n(&g_kill_armed, __ATOMIC_ACQUIRE) && op == IO_OP_WRITE && path && strstr(path, "MANIFEST"))
        raise(SIGKILL); /* between the row's commit and the edit that names it */
    return 0;
}

/* crash_writes -- phase A (flushed into rows), then phase B, which stays in
 * the WAL: written by the child and replayed by the parent into its model. */
static void crash_writes(tkv_db *db, tu_model *m, int phase)
{
    if (phase == 0) {
        put_keys(db, m, 0, 2000, 1, "A");
        del_keys(db, m, 0, 2000, 17);
    } else {
        put_keys(db, m, 1000, 3000, 2, "B");
        del_keys(db, m, 3, 2000, 19);
    }
}

/* crash_child -- never returns: opens dir, writes phase A, flushes, writes
 * phase B, then either writes to `fd` and waits for SIGKILL, or (at_edit)
 * flushes B with the kill armed at the MANIFEST edit. */
static void crash_child(const char *dir, int fd, int at_edit)
{
    tkv_options *o = base_options();
    tkv_db *db = NULL;
    tu_model *m = tu_model_new();
    if (tkv_open(dir, o, &db) != TKV_OK) _exit(3);
    crash_writes(db, m, 0);
    if (tkv_flush(db) != TKV_OK) _exit(4);
    crash_writes(db, m, 1);
    if (at_edit) {
        io_set_fault_hook(kill_at_manifest, NULL);
        __atomic_store_n(&g_kill_armed, 1, __ATOMIC_RELEASE);
        (void)tkv_flush(db);
        _exit(5); /* not killed: the flush wrote no MANIFEST edit */
    }
    char c = 1;
    if (write(fd, &c, 1) != 1) _exit(6);
    for (;;) pause();
}

/* run_crash -- a fresh database in dir written by a child that is killed
 * (at_edit: by its fault hook, between a row's commit and its MANIFEST
 * edit); m gets every write the child had acknowledged. */
static void run_crash(const char *dir, int at_edit, tu_model *m)
{
    int p[2];
    assert_int_equal(pipe(p), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        crash_child(dir, p[1], at_edit);
    }
    close(p[1]);
    if (!at_edit) {
        char c;
        ssize_t n = read(p[0], &c, 1);
        kill(pid, SIGKILL);
        if (n != 1) fail_msg("the writer ended before its writes were done");
    }
    close(p[0]);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL) fail_msg("the writer was not killed (status 0x%x)", st);
    crash_writes(NULL, m, 0);
    crash_writes(NULL, m, 1);
}

/* after_crash -- see the top of the file. */
static void after_crash(void **state)
{
    (void)state;
    char *dir = tu_path(g_root, "after-crash");
    tu_model *m = tu_model_new();
    run_crash(dir, 0, m);
    tkv_options *o = ro_options();
    tkv_db *db = open_ro(dir, o);
    assert_true(tu_prop_u64(db, "tkv.levels", "rows: count=") > 0);  /* phase A */
    assert_true(tu_prop_u64(db, "tkv.levels", "mem: entries=") > 0); /* phase B, from the WAL */
    tu_close_ok(db);
    check_readonly(dir, o, m, "read-only open after a crash");
    check_readonly(dir, o, m, "a second read-only open after a crash");
    tkv_options *rw = base_options();
    db = tu_open_ok(dir, rw);
    tu_check_db(db, NULL, m, "read-write open after the read-only ones");
    tu_close_ok(db);
    tkv_options_free(rw);
    tkv_options_free(o);
    tu_model_free(m);
    tu_rmrf(dir);
    free(dir);
}

/* unlisted_note -- 1 if tkv_verify(dir) (clean) notes a row the MANIFEST
 * does not list. */
static int unlisted_note(const char *dir)
{
    char *report = NULL;
    int rc = tkv_verify(dir, NULL, &report);
    if (rc != TKV_OK) fail_msg("tkv_verify(%s) = %d: %s\n%s", dir, rc, tkv_errmsg(), report ? report : "");
    int found = strstr(report, "is not in MANIFEST") != NULL;
    tkv_free(report);
    return found;
}

/* unlisted_row -- see the top of the file. */
static void unlisted_row(void **state)
{
    (void)state;
    char *dir = tu_path(g_root, "unlisted-row");
    tu_model *m = tu_model_new();
    run_crash(dir, 1, m);
    if (!unlisted_note(dir)) fail_msg("the crash should have left a row the MANIFEST does not list");
    tkv_options *o = ro_options();
    check_readonly(dir, o, m, "read-only open with a row the MANIFEST does not list");
    assert_true(unlisted_note(dir)); /* still there: a read-only open drops nothing */
    tkv_options *rw = base_options();
    tkv_db *db = tu_open_ok(dir, rw);
    tu_check_db(db, NULL, m, "read-write open after the read-only one");
    tu_close_ok(db);
    assert_false(unlisted_note(dir)); /* the read-write open dropped it */
    tkv_options_free(rw);
    tkv_options_free(o);
    tu_model_free(m);
    tu_rmrf(dir);
    free(dir);
}

/* checkpoint -- tkv_checkpoint of a read-only handle: no write-side I/O in
 * the source, which afterwards (the checkpoint removed) differs in nothing
 * but its SSTs' ctimes (the checkpoint's hard links changed them); the
 * checkpoint holds every tier's data, the WAL's included, and opens
 * read-only itself (it has a LOCK file). */
static void checkpoint(void **state)
{
    (void)state;
    char *dir = copy_base("ckpt-src"), *out = tu_path(g_root, "ckpt-out");
    tkv_options *o = ro_options();
    tu_dir_state *before = tu_dir_state_take(dir);
    snprintf(g_watched, sizeof g_watched, "%s/", dir);
    __atomic_store_n(&g_writes, 0, __ATOMIC_RELAXED);
    io_set_fault_hook(write_spy, NULL);
    tkv_db *db = open_ro(dir, o);
    assert_int_equal(tkv_checkpoint(db, out), TKV_OK);
    tu_close_ok(db);
    io_set_fault_hook(NULL, NULL);
    if (g_writes)
        fail_msg("checkpoint of a read-only handle: %d writes in the source, the first a %s", g_writes, g_first_write);
    tu_rmrf(out); /* its links go: the SSTs' link counts are as before, their ctimes not */
    tu_dir_state *after = tu_dir_state_take(dir);
    tu_dir_state_expect_same_linked(before, after, "checkpoint of a read-only handle", ".sst");
    tu_dir_state_free(before);
    tu_dir_state_free(after);
    db = open_ro(dir, o); /* again, and this time the checkpoint is read read-only too */
    assert_int_equal(tkv_checkpoint(db, out), TKV_OK);
    tu_close_ok(db);
    check_readonly(out, o, g_model, "read-only open of a checkpoint of a read-only handle");
    tkv_options_free(o);
    tu_rmrf(out);
    tu_rmrf(dir);
    free(out);
    free(dir);
}

/* ---------------------------------------------------------------- locks */

typedef struct reader_arg {
    tkv_db *db;
    int bad; /* entries that differ from the model, or a failed scan */
} reader_arg;

/* reader_main -- three full scans of one handle against g_model (no cmocka
 * asserts off the test's thread). */
static void *reader_main(void *arg)
{
    reader_arg *r = arg;
    for (int round = 0; round < 3; round++) {
        tkv_iter *it;
        if (tkv_iter_new(r->db, NULL, &it) != TKV_OK) {
            r->bad++;
            return NULL;
        }
        size_t i = 0;
        for (tkv_iter_seek_first(it); tkv_iter_valid(it); tkv_iter_next(it), i++) {
            const void *k, *v, *gk, *gv;
            size_t kn, vn, gkn, gvn;
            if (i >= tu_model_count(g_model)) break;
            tu_model_at(g_model, i, &k, &kn, &v, &vn);
            gk = tkv_iter_key(it, &gkn);
            gv = tkv_iter_value(it, &gvn);
            if (gkn != kn || gvn != vn || memcmp(gk, k, kn) || memcmp(gv, v, vn)) r->bad++;
        }
        if (tkv_iter_status(it) != TKV_OK || i != tu_model_count(g_model)) r->bad++;
        tkv_iter_free(it);
    }
    return NULL;
}

/* child_open_ro -- in a child: a read-only open of dir; its status goes to
 * fd `report`, then the child waits for a byte on `go`, reads a key and
 * closes. Exit 0 when every step went as expected (`want` for the open). */
static pid_t child_open_ro(const char *dir, int want, int report[2], int go[2])
{
    pid_t pid = fork();
    if (pid != 0) return pid;
    close(report[0]);
    close(go[1]);
    char c;
    if (read(go[0], &c, 1) != 1) _exit(7); /* the parent says when */
    tkv_options *o = ro_options();
    tkv_db *db = NULL;
    int rc = tkv_open(dir, o, &db);
    if (write(report[1], &rc, sizeof rc) != (ssize_t)sizeof rc) _exit(8);
    if (rc != want) _exit(9);
    if (!db) _exit(0);
    if (read(go[0], &c, 1) != 1) _exit(10); /* hold the handle until told */
    void *v = NULL;
    size_t vn;
    int g = tkv_get(db, NULL, "key000002", 9, &v, &vn);
    tkv_free(v);
    _exit(g == TKV_OK && tkv_close(db) == TKV_OK ? 0 : 11);
}

/* child_status -- the opened status the child reported. */
static int child_status(int report[2])
{
    int rc = 0;
    assert_int_equal(read(report[0], &rc, sizeof rc), (ssize_t)sizeof rc);
    return rc;
}

static void child_done(pid_t pid)
{
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) fail_msg("the child failed (status 0x%x)", st);
}

static void pipes(int a[2], int b[2])
{
    assert_int_equal(pipe(a), 0);
    assert_int_equal(pipe(b), 0);
}

static void close_pipes(int a[2], int b[2])
{
    close(a[0]);
    close(a[1]);
    close(b[0]);
    close(b[1]);
}

/* expect_busy -- tkv_open(dir, o) must be TKV_BUSY, naming dir and `says`. */
static void expect_busy(const char *dir, const tkv_options *o, const char *says)
{
    tkv_db *db = (tkv_db *)&db;
    int rc = tkv_open(dir, o, &db);
    if (rc != TKV_BUSY) fail_msg("open of %s: %d (%s), expected TKV_BUSY", dir, rc, tkv_strerror(rc));
    assert_null(db);
    if (!strstr(tkv_errmsg(), dir) || !strstr(tkv_errmsg(), says))
        fail_msg("the TKV_BUSY message should name %s and say \"%s\": %s", dir, says, tkv_errmsg());
}

/* shared_locks -- see the top of the file. */
static void shared_locks(void **state)
{
    (void)state;
    char *dir = copy_base("shared");
    tkv_options *ro = ro_options(), *rw = base_options();
    int report[2], go[2];
    pipes(report, go);
    pid_t pid = child_open_ro(dir, TKV_OK, report, go);
    assert_true(pid > 0);
    tkv_db *a = open_ro(dir, ro), *b = open_ro(dir, ro);
    assert_int_equal(write(go[1], "g", 1), 1);
    assert_int_equal(child_status(report), TKV_OK); /* a third read-only handle, in another process */
    reader_arg ra[2] = {{a, 0}, {b, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&t[i], NULL, reader_main, &ra[i]), 0);
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_join(t[i], NULL), 0);
    assert_int_equal(ra[0].bad + ra[1].bad, 0);
    expect_busy(dir, rw, "read-write or read-only");
    assert_int_equal(tkv_destroy(dir), TKV_BUSY);
    char *rep = NULL;
    assert_int_equal(tkv_verify(dir, NULL, &rep), TKV_OK); /* shared locks too */
    tkv_free(rep);
    tu_close_ok(a);
    tu_close_ok(b);
    expect_busy(dir, rw, "read-write or read-only"); /* the child's handle */
    assert_int_equal(write(go[1], "g", 1), 1);
    child_done(pid);
    close_pipes(report, go);
    /* the reverse: a read-write handle keeps read-only opens out, here and
     * in another process (forked before the handle's threads start) */
    pipes(report, go);
    pid = child_open_ro(dir, TKV_BUSY, report, go);
    assert_true(pid > 0);
    tkv_db *db = tu_open_ok(dir, rw);
    expect_busy(dir, ro, "open read-write");
    assert_int_equal(write(go[1], "g", 1), 1);
    assert_int_equal(child_status(report), TKV_BUSY);
    child_done(pid);
    close_pipes(report, go);
    tu_check_db(db, NULL, g_model, "read-write open after read-only ones");
    tu_close_ok(db);
    a = open_ro(dir, ro);
    tu_close_ok(a);
    tkv_options_free(ro);
    tkv_options_free(rw);
    tu_rmrf(dir);
    free(dir);
}

/* ---------------------------------------------------------------- refusals and damage */

/* expect_invalid -- a read-only open of dir with o is TKV_INVALID saying
 * `says`, and dir is as it was. */
static void expect_invalid(const char *dir, const tkv_options *o, const char *says)
{
    tu_dir_state *before = access(dir, F_OK) == 0 ? watch_begin(dir) : NULL;
    tkv_db *db = (tkv_db *)&db;
    int rc = tkv_open(dir, o, &db);
    if (rc != TKV_INVALID) fail_msg("read-only open of %s: %d (%s), expected TKV_INVALID", dir, rc, tkv_strerror(rc));
    assert_null(db);
    if (!strstr(tkv_errmsg(), dir) || !strstr(tkv_errmsg(), says))
        fail_msg("the message should name %s and say \"%s\": %s", dir, says, tkv_errmsg());
    if (before) watch_end(dir, before, "a refused read-only open");
    else assert_int_equal(access(dir, F_OK), -1); /* not created */
}

/* missing -- see the top of the file. */
static void missing(void **state)
{
    (void)state;
    tkv_options *o = ro_options();
    assert_int_equal(tkv_options_set(o, "read_only", "perhaps"), TKV_INVALID);
    char *none = tu_path(g_root, "none");
    expect_invalid(none, o, "holds no tierkv database");
    assert_int_equal(tkv_options_set(o, "create_if_missing", "1"), TKV_OK);
    expect_invalid(none, o, "holds no tierkv database");
    char *empty = tu_path(g_root, "empty");
    assert_int_equal(mkdir(empty, 0755), 0);
    expect_invalid(empty, o, "holds no tierkv database");
    char *nolock = tu_path(g_root, "no-lock");
    tu_copy_db(g_base, nolock, 0);
    expect_invalid(nolock, o, "LOCK");
    char *nomanifest = tu_path(g_root, "no-manifest");
    assert_int_equal(mkdir(nomanifest, 0755), 0);
    const char *names[] = {"IDENTITY", "LOCK"};
    for (int i = 0; i < 2; i++) {
        char *s = tu_path(g_base, names[i]), *d = tu_path(nomanifest, names[i]);
        tu_copy_file(s, d);
        free(s);
        free(d);
    }
    expect_invalid(nomanifest, o, "no MANIFEST");
    char *exists = copy_base("exists");
    assert_int_equal(tkv_options_set(o, "error_if_exists", "1"), TKV_OK);
    expect_invalid(exists, o, "error_if_exists");
    char *all[] = {none, empty, nolock, nomanifest, exists};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        tu_rmrf(all[i]);
        free(all[i]);
    }
    tkv_options_free(o);
}

/* flip -- xors the byte at off of dir/name. */
static void flip(const char *dir, const char *name, uint64_t off)
{
    char *p = tu_path(dir, name);
    int fd = open(p, O_RDWR);
    assert_true(fd >= 0);
    uint8_t c;
    assert_int_equal(pread(fd, &c, 1, (off_t)off), 1);
    c ^= 0x55;
    assert_int_equal(pwrite(fd, &c, 1, (off_t)off), 1);
    close(fd);
    free(p);
}

/* scan_damaged -- reads of a database whose SSTs all have a flipped byte
 * in their first data block: a scan stops with TKV_CORRUPTION after a
 * prefix of the model; each get returns the model's value or
 * TKV_CORRUPTION, and some do. */
static void scan_damaged(tkv_db *db)
{
    tkv_iter *it;
    assert_int_equal(tkv_iter_new(db, NULL, &it), TKV_OK);
    size_t i = 0;
    for (tkv_iter_seek_first(it); tkv_iter_valid(it); tkv_iter_next(it), i++) {
        const void *k;
        size_t kn, n;
        tu_model_at(g_model, i, &k, &kn, NULL, NULL);
        const void *got = tkv_iter_key(it, &n);
        if (n != kn || memcmp(got, k, kn)) fail_msg("damaged scan: wrong key at %zu", i);
    }
    assert_int_equal(tkv_iter_status(it), TKV_CORRUPTION);
    tkv_iter_free(it);
    size_t corrupt = 0;
    for (i = 0; i < tu_model_count(g_model); i++) {
        const void *k, *v;
        size_t kn, vn, gn;
        void *got = NULL;
        tu_model_at(g_model, i, &k, &kn, &v, &vn);
        int rc = tkv_get(db, NULL, k, kn, &got, &gn);
        if (rc == TKV_CORRUPTION) corrupt++;
        else if (rc != TKV_OK || gn != vn || memcmp(got, v, vn)) fail_msg("damaged get of %s: %d", tu_hex(k, kn), rc);
        tkv_free(got);
    }
    print_message("damaged SSTs: %zu of %zu gets reported TKV_CORRUPTION\n", corrupt, tu_model_count(g_model));
    assert_true(corrupt > 0);
}

/* last_row_page -- the offset in the base's pool of a data page of its
 * first row. */
static uint64_t last_row_page(void)
{
    char *p = tu_path(g_base, "matrix.pmem");
    pool *pl;
    assert_int_equal(pool_open_readonly(p, &pl), 0);
    pool_header h;
    pool_header_info(pl, &h);
    pool_row_id *rows;
    size_t n;
    assert_int_equal(pool_rows(pl, &rows, &n), 0);
    assert_true(n >= 1);
    pool_row r;
    assert_int_equal(pool_row_read(pl, rows[0].slot, &r), 0);
    uint64_t off = h.pages_offset + (uint64_t)pool_row_page(&r, r.npages - 1) * h.page_size + 100;
    free(rows);
    pool_close(pl);
    free(p);
    return off;
}

/* corruption -- see the top of the file. */
static void corruption(void **state)
{
    (void)state;
    char *dir = copy_base("corrupt-sst");
    uint64_t *nums;
    size_t n = tu_list_numbered(dir, ".sst", &nums);
    assert_true(n >= 2);
    for (size_t i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "%06llu.sst", (unsigned long long)nums[i]);
        flip(dir, name, 10);
    }
    free(nums);
    tkv_options *o = ro_options();
    tu_dir_state *before = watch_begin(dir);
    tkv_db *db = open_ro(dir, o);
    scan_damaged(db);
    tu_close_ok(db);
    watch_end(dir, before, "read-only reads of damaged SSTs");
    tu_rmrf(dir);
    free(dir);
    uint64_t off = last_row_page();
    dir = copy_base("corrupt-row");
    flip(dir, "matrix.pmem", off);
    before = watch_begin(dir);
    db = (tkv_db *)&db;
    int rc = tkv_open(dir, o, &db);
    assert_int_equal(rc, TKV_CORRUPTION);
    assert_null(db);
    if (!strstr(tkv_errmsg(), "matrix.pmem")) fail_msg("the message should name the pool: %s", tkv_errmsg());
    watch_end(dir, before, "a read-only open of a damaged row");
    tkv_options_free(o);
    tu_rmrf(dir);
    free(dir);
}

/* disarm -- after each case, also a failed one: no spy, no armed thread
 * failure left for the next. */
static int disarm(void **state)
{
    (void)state;
    thread_fail_after(-1);
    io_set_fault_hook(NULL, NULL);
    return 0;
}

int main(void)
{
    tu_seed(); /* TKV_TEST_FILTER */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(every_tier, disarm),   cmocka_unit_test_teardown(large_wal, disarm),
        cmocka_unit_test_teardown(sst_tier, disarm),     cmocka_unit_test_teardown(after_crash, disarm),
        cmocka_unit_test_teardown(unlisted_row, disarm), cmocka_unit_test_teardown(shared_locks, disarm),
        cmocka_unit_test_teardown(missing, disarm),      cmocka_unit_test_teardown(corruption, disarm),
        cmocka_unit_test_teardown(checkpoint, disarm),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
