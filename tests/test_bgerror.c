// SPDX-License-Identifier: Apache-2.0
/*
 * test_bgerror.c -- failures the library must survive and report instead of
 * ending its host (issue 23, "no aborts in library paths"):
 *
 *  pm_msync_failure       emul: a failed msync (PM_MSYNC persist, and the
 *                         close msync of PM_EMULATED) and a persist outside
 *                         the pool become the region's sticky error
 *                         (pm_error, pm_close), not an abort
 *  db_msync_failure       a database on pmem_mode=msync whose pool msyncs
 *                         start failing: the flush fails, the database turns
 *                         read-only (TKV_IO_ERROR naming the msync), tkv_close
 *                         returns it; reopened, every acknowledged write is
 *                         there and no pool page leaked
 *  close_reports_bg_error a background flush fails (injected SST write
 *                         error) while the caller does nothing: tkv_close
 *                         returns TKV_IO_ERROR, not TKV_OK; nothing is lost
 *  thread_start_failure   every thread tkv_open starts, made to fail in turn:
 *                         TKV_NO_MEMORY "cannot start ..." (or the database
 *                         works without a best-effort helper), no thread left
 *                         behind, the database opens cleanly afterwards
 *  destroy_custom_pool    tkv_destroy removes a pool kept at pmem_path, and
 *                         leaves a file there that is another database's pool
 *  failed_compaction_unlocked
 *                         an L0->L1 compaction fails (injected write error on
 *                         its third output) after finishing two: while its
 *                         thread is held in removing the first one, a get on
 *                         the caller's thread finishes (outputs are removed
 *                         without the database's mutex: an unlink on a busy
 *                         device took 44-74 ms, and every get and put waited);
 *                         the output is gone, nothing acknowledged is lost
 *
 * Faults come from the I/O layer's hook (io_set_fault_hook: IO_OP_MSYNC,
 * IO_OP_WRITE) and util/thread's thread_fail_after.
 */
#include <dirent.h>
#include <errno.h>
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

#include "emul/pmem.h"
#include "io/io.h"
#include "testutil.h"
#include "util/thread.h"

/* ---------------------------------------------------------------- helpers */

/* The fault plan of fault_arm: fails the next `count` operations `op` on
 * paths containing `needle` with `err` (set while no hook runs). */
static tu_fault g_fault;

static void fault_arm(io_op op, const char *needle, int count, int err)
{
    io_set_fault_hook(NULL, NULL);
    g_fault = (tu_fault){op, needle, 0, count, err, 0};
    io_set_fault_hook(tu_fault_hook, &g_fault);
}

static void fault_disarm(void) { io_set_fault_hook(NULL, NULL); }

static int prop_has(tkv_db *db, const char *name, const char *needle)
{
    char *p = tkv_property(db, name);
    if (!p) fail_msg("tkv_property %s: %s", name, tkv_errmsg());
    int has = strstr(p, needle) != NULL;
    tkv_free(p);
    return has;
}

/* put_model -- puts key i with a value of round r; on TKV_OK the model has it. */
static int put_model(tkv_db *db, tu_model *m, uint64_t i, uint64_t r, unsigned flags)
{
    char k[32], v[200];
    int kl = snprintf(k, sizeof k, "key%08llu", (unsigned long long)i);
    int vl = snprintf(v, sizeof v, "value-%llu-%llu-%0120llu", (unsigned long long)i, (unsigned long long)r,
                      (unsigned long long)(i * 7919 + r));
    return tu_put_model(db, m, k, (size_t)kl, v, (size_t)vl, flags);
}

/* wait_bg_error -- polls tkv.stats until it reports a background error (10 s). */
static int wait_bg_error(tkv_db *db)
{
    for (int i = 0; i < 1000; i++) {
        if (!prop_has(db, "tkv.stats", "background_error: none")) return 1;
        usleep(10000);
    }
    return 0;
}

/* ---------------------------------------------------------------- emul */

static void pm_msync_failure(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("bg-msync");
    char *path = tu_path(dir, "pool.pmem");
    pm_region *r = NULL;
    assert_int_equal(pm_open(path, 1u << 20, PM_MSYNC, PM_PROFILE_NONE, &r, NULL), TKV_OK);
    uint8_t *b = pm_base(r);
    memset(b, 0xab, 4096);
    pm_persist(r, b, 4096);
    assert_int_equal(pm_error(r), 0);

    fault_arm(IO_OP_MSYNC, "pool.pmem", 1, EIO);
    memset(b + 4096, 0xcd, 64);
    pm_persist(r, b + 4096, 64); /* fails: recorded, the call returns */
    fault_disarm();
    assert_int_equal(g_fault.hits, 1);
    assert_int_equal(pm_error(r), TKV_IO_ERROR);
    const char *msg = tkv_errmsg();
    print_message("pm_error: %s\n", msg);
    assert_non_null(strstr(msg, "msync"));
    assert_non_null(strstr(msg, "pool.pmem"));
    assert_non_null(strstr(msg, strerror(EIO)));
    pm_persist(r, b, 64); /* later persists work; the error stays */
    pm_store8_persist(r, (uint64_t *)(void *)(b + 8192), 42);
    assert_int_equal(pm_error(r), TKV_IO_ERROR);
    pm_stats st;
    pm_get_stats(r, &st);
    assert_int_equal(st.persist_errors, 1);
    assert_int_equal(pm_close(r), TKV_IO_ERROR);

    /* a persist outside the pool: refused and recorded, not an assertion */
    r = NULL;
    assert_int_equal(pm_open(path, 0, PM_EMULATED, PM_PROFILE_NONE, &r, NULL), TKV_OK);
    assert_int_equal(pm_base(r)[4096], 0xcd);
    pm_persist(r, pm_base(r) + pm_size(r) - 32, 64);
    pm_store8_persist(r, (uint64_t *)(void *)(pm_base(r) + 4), 1); /* misaligned commit store */
    assert_int_equal(pm_error(r), TKV_IO_ERROR);
    assert_non_null(strstr(tkv_errmsg(), "outside the pool"));
    pm_get_stats(r, &st);
    assert_int_equal(st.persist_errors, 2);
    assert_int_equal(pm_close(r), TKV_IO_ERROR);

    /* PM_EMULATED: the msync of the close fails */
    r = NULL;
    assert_int_equal(pm_open(path, 0, PM_EMULATED, PM_PROFILE_NONE, &r, NULL), TKV_OK);
    assert_int_equal(pm_error(r), 0);
    fault_arm(IO_OP_MSYNC, "pool.pmem", 1, EIO);
    assert_int_equal(pm_close(r), TKV_IO_ERROR);
    fault_disarm();
    assert_int_equal(g_fault.hits, 1);
    r = NULL;
    assert_int_equal(pm_open(path, 0, PM_EMULATED, PM_PROFILE_NONE, &r, NULL), TKV_OK);
    assert_int_equal(pm_close(r), 0); /* a clean close of the same pool */
    free(path);
    tu_tmpdir_free(dir);
}

/* ---------------------------------------------------------------- the database */

static void db_msync_failure(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("bg-dbmsync");
    tkv_options *o = tu_small_options();
    assert_int_equal(tkv_options_set(o, "l0", "matrix"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "pmem_mode", "msync"), TKV_OK);
    tkv_db *db = tu_open_ok(dir, o);
    tu_model *m = tu_model_new();
    for (uint64_t i = 0; i < 600; i++) assert_int_equal(put_model(db, m, i, 0, 0), TKV_OK);
    assert_int_equal(tkv_flush(db), TKV_OK);
    assert_true(tu_prop_u64(db, "tkv.matrix", "flush: rows=") >= 1);

    fault_arm(IO_OP_MSYNC, "matrix.pmem", 1000000, EIO);          /* the device fails from here on */
    for (uint64_t i = 0; i < 300; i++) put_model(db, m, i, 1, 0); /* may already fail part-way */
    int rc = tkv_flush(db);
    assert_int_equal(rc, TKV_IO_ERROR);
    print_message("tkv_flush: %s\n", tkv_errmsg());
    assert_non_null(strstr(tkv_errmsg(), "msync"));
    assert_true(g_fault.hits >= 1);
    assert_int_equal(put_model(db, m, 1, 2, 0), TKV_IO_ERROR); /* read-only */
    assert_true(prop_has(db, "tkv.stats", "background_error: I/O error"));
    assert_true(tu_prop_u64(db, "tkv.pmem", "errors=") >= 1);
    tu_check_db(db, NULL, m, "read-only after a failed msync"); /* reads still work */
    rc = tkv_close(db);
    fault_disarm();
    assert_int_equal(rc, TKV_IO_ERROR);
    assert_non_null(strstr(tkv_errmsg(), "msync"));

    db = tu_open_ok(dir, o); /* the WAL brings back what the failed flush held */
    tu_check_db(db, NULL, m, "reopened after a failed msync");
    assert_int_equal(tkv_flush(db), TKV_OK); /* (the replayed WAL may be flushing: its row's pages are not owned yet) */
    assert_int_equal(tu_prop_u64(db, "tkv.matrix", "pages: used="), tu_prop_u64(db, "tkv.matrix", "owned_by_rows="));
    for (uint64_t i = 0; i < 100; i++) assert_int_equal(put_model(db, m, i, 3, 0), TKV_OK);
    assert_int_equal(tkv_flush(db), TKV_OK);
    tu_close_reopen_check(db, dir, o, m, "writable again");
    tkv_options_free(o);
    tu_model_free(m);
    tu_tmpdir_free(dir);
}

static void close_reports_bg_error(void **state)
{
    (void)state;
    static const char *l0[] = {"sst", "matrix"};
    for (int v = 0; v < 2; v++) {
        char *dir = tu_tmpdir("bg-close");
        tkv_options *o = tu_small_options();
        assert_int_equal(tkv_options_set(o, "l0", l0[v]), TKV_OK);
        tkv_db *db = tu_open_ok(dir, o);
        tu_model *m = tu_model_new();
        /* l0=sst: the flush's SST write fails; l0=matrix: its MANIFEST edit */
        fault_arm(IO_OP_WRITE, v == 0 ? ".sst" : "MANIFEST", 1000000, EIO);
        uint64_t i = 0;
        while (prop_has(db, "tkv.stats", "background_error: none") && i < 5000) {
            if (put_model(db, m, i, 0, 0) != TKV_OK) break;
            i++;
        }
        assert_true(wait_bg_error(db)); /* a flush of the memtables filled above failed */
        int rc = tkv_close(db);         /* the caller saw no error so far -- close must say it */
        fault_disarm();
        print_message("l0=%s: %llu puts acknowledged; tkv_close: %s: %s\n", l0[v], (unsigned long long)i,
                      tkv_strerror(rc), tkv_errmsg());
        assert_int_equal(rc, TKV_IO_ERROR);
        assert_non_null(strstr(tkv_errmsg(), v == 0 ? ".sst" : "MANIFEST"));
        db = tu_open_ok(dir, o);
        tu_check_db(db, NULL, m, "reopened after a failed background flush");
        tu_close_ok(db);
        tkv_options_free(o);
        tu_model_free(m);
        tu_tmpdir_free(dir);
    }
}

/* ---------------------------------------------------------------- removal without mu */

/* The hook of failed_compaction_unlocked, on tkv-l0 only: notes the .sst
 * files it writes, fails the first write of the third with EIO, and holds
 * a rename or removal of the first (up to 5 s). */
static char g_first[4096]; /* the compaction's first output */
static int g_outputs_seen; /* distinct outputs written (tkv-l0) */
static int g_rm_state;     /* 0 off, 1 armed, 2 held, 3 let go by the test, 4 timed out (atomic) */
static char g_last_out[4096];

static int unlocked_hook(io_op op, const char *path, size_t len, void *arg)
{
    (void)len;
    (void)arg;
    if (!tu_thread_is("tkv-l0")) return 0;
    if (op == IO_OP_WRITE && tu_is_sst(path) && strcmp(path, g_last_out) != 0) {
        snprintf(g_last_out, sizeof g_last_out, "%s", path);
        if (++g_outputs_seen == 1) snprintf(g_first, sizeof g_first, "%s", path);
        if (g_outputs_seen == 3) return EIO;
    }
    if ((op == IO_OP_RENAME || op == IO_OP_REMOVE) && g_first[0] && !strncmp(path, g_first, strlen(g_first))) {
        int armed = 1;
        if (!__atomic_compare_exchange_n(&g_rm_state, &armed, 2, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return 0;
        for (int i = 0; i < 500 && __atomic_load_n(&g_rm_state, __ATOMIC_ACQUIRE) == 2; i++) usleep(10000);
        int held = 2;
        __atomic_compare_exchange_n(&g_rm_state, &held, 4, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
    return 0;
}

static void failed_compaction_unlocked(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("bg-unlocked");
    tkv_options *o = tu_small_options();
    /* one L0->L1 compaction of four 256K memtables writes ~16 outputs of 64K */
    assert_int_equal(tkv_options_set(o, "l0", "sst"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "memtable_size", "256K"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "sst_size", "64K"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "l1_size", "64M"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "compression", "none"), TKV_OK); /* (lz4 makes it two outputs) */
    tkv_db *db = tu_open_ok(dir, o);
    tu_model *m = tu_model_new();
    g_first[0] = g_last_out[0] = '\0';
    g_outputs_seen = 0;
    __atomic_store_n(&g_rm_state, 1, __ATOMIC_RELEASE);
    io_set_fault_hook(unlocked_hook, NULL);
    uint64_t i = 0;
    while (__atomic_load_n(&g_rm_state, __ATOMIC_ACQUIRE) == 1 && i < 40000) {
        if (put_model(db, m, i, 0, 0) != TKV_OK) break; /* (the failure makes the database read-only) */
        i++;
    }
    for (int k = 0; k < 1000 && __atomic_load_n(&g_rm_state, __ATOMIC_ACQUIRE) == 1; k++) usleep(10000);
    int st = __atomic_load_n(&g_rm_state, __ATOMIC_ACQUIRE);
    if (st == 4) fail_msg("a put waited 5 s for the removal of a failed compaction's output (under the mutex)");
    assert_int_equal(st, 2); /* the first output's removal, held */
    /* a get needs the database's mutex: it finishes while the removal is held */
    void *v = NULL;
    size_t vn = 0;
    int grc = tkv_get(db, NULL, "key00000000", 11, &v, &vn);
    tkv_free(v);
    int released = 2;
    int by_test = __atomic_compare_exchange_n(&g_rm_state, &released, 3, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    assert_true(wait_bg_error(db));
    int rc = tkv_close(db);
    io_set_fault_hook(NULL, NULL);
    print_message("%llu puts acknowledged, %d outputs seen; first %s; tkv_close: %s\n", (unsigned long long)i,
                  g_outputs_seen, g_first, tkv_strerror(rc));
    if (!by_test) fail_msg("the get waited until the removal of a failed compaction's output ended (5 s)");
    assert_int_equal(grc, TKV_OK);
    assert_int_equal(rc, TKV_IO_ERROR);
    assert_int_not_equal(access(g_first, F_OK), 0); /* removed (renamed for the trash thread, then deleted) */
    db = tu_open_ok(dir, o);
    tu_check_db(db, NULL, m, "reopened after a failed compaction");
    tu_close_ok(db);
    tkv_options_free(o);
    tu_model_free(m);
    tu_tmpdir_free(dir);
}

/* ---------------------------------------------------------------- threads */

static int count_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

/* threads_back_to -- waits (1 s) until the process has `n` threads again
 * (a joined thread may linger in /proc for a moment). */
static int threads_back_to(int n)
{
    int now = count_threads();
    for (int i = 0; i < 100 && now != n; i++) {
        usleep(10000);
        now = count_threads();
    }
    return now;
}

static void thread_start_failure(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("bg-threads");
    tkv_options *o = tu_small_options();
    tu_model *m = tu_model_new();
    tkv_db *db = tu_open_ok(dir, o); /* the database exists: every open below reopens it */
    for (uint64_t i = 0; i < 200; i++) assert_int_equal(put_model(db, m, i, 0, 0), TKV_OK);
    tu_close_ok(db);
    int base = count_threads(), failed_opens = 0, degraded_opens = 0, k;
    for (k = 0; k < 64; k++) {
        thread_fail_after(k);
        db = NULL;
        int rc = tkv_open(dir, o, &db);
        int missed = thread_fail_after(-1) >= 0; /* open started fewer than k + 1 threads */
        if (rc != TKV_OK) {
            assert_null(db);
            if (rc != TKV_NO_MEMORY || !strstr(tkv_errmsg(), "cannot start"))
                fail_msg("thread %d failing: tkv_open = %s: %s", k, tkv_strerror(rc), tkv_errmsg());
            failed_opens++;
        } else {
            degraded_opens += !missed; /* a best-effort helper (prefault, trash) did not start */
            assert_int_equal(put_model(db, m, 1000 + (uint64_t)k, 0, 0), TKV_OK);
            assert_int_equal(tkv_flush(db), TKV_OK);
            tu_close_ok(db);
        }
        int now = threads_back_to(base);
        if (now != base) fail_msg("thread %d failing: %d threads after the open, %d before", k, now, base);
        if (missed) break;
    }
    print_message("tkv_open started %d threads: %d failures refused the open, %d left a helper out\n", k, failed_opens,
                  degraded_opens);
    assert_true(k >= 8 && k < 64);
    assert_true(failed_opens >= 6); /* flush, L0, deep x2, column, monitor at least */
    db = tu_open_ok(dir, o);
    tu_check_db(db, NULL, m, "after the failed opens");
    tu_close_ok(db);
    tkv_options_free(o);
    tu_model_free(m);
    tu_tmpdir_free(dir);
}

/* ---------------------------------------------------------------- tkv_destroy */

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static void destroy_custom_pool(void **state)
{
    (void)state;
    char *root = tu_tmpdir("bg-destroy");
    char *a = tu_path(root, "a"), *b = tu_path(root, "b"), *pools = tu_path(root, "pools");
    char *pool = tu_path(pools, "pool.pmem");
    assert_int_equal(mkdir(pools, 0755), 0);
    tkv_options *o = tu_small_options();
    assert_int_equal(tkv_options_set(o, "pmem_path", pool), TKV_OK);
    tkv_db *db = tu_open_ok(a, o);
    tu_model *m = tu_model_new();
    for (uint64_t i = 0; i < 300; i++) assert_int_equal(put_model(db, m, i, 0, 0), TKV_OK);
    assert_int_equal(tkv_flush(db), TKV_OK);
    assert_int_equal(tkv_destroy(a), TKV_BUSY); /* open: nothing removed */
    assert_true(exists(pool));
    tu_close_ok(db);
    assert_true(exists(pool));
    assert_int_equal(tkv_destroy(a), TKV_OK);
    assert_false(exists(pool)); /* the pool outside the directory went too */
    assert_false(exists(a));

    /* A's pool path now holds B's pool: destroying A must leave it */
    db = tu_open_ok(a, o);
    tu_close_ok(db);
    assert_int_equal(unlink(pool), 0);
    db = tu_open_ok(b, o); /* creates a new pool (another uuid) at the same path */
    for (uint64_t i = 0; i < 10; i++) assert_int_equal(put_model(db, m, i, 1, 0), TKV_OK);
    tu_close_ok(db);
    assert_int_equal(tkv_destroy(a), TKV_OK);
    assert_false(exists(a));
    assert_true(exists(pool));
    db = tu_open_ok(b, o);
    tu_close_ok(db);
    assert_int_equal(tkv_destroy(b), TKV_OK);
    assert_false(exists(pool));
    assert_false(exists(b));
    tkv_options_free(o);
    tu_model_free(m);
    free(a);
    free(b);
    free(pool);
    free(pools);
    tu_tmpdir_free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pm_msync_failure),       cmocka_unit_test(db_msync_failure),
        cmocka_unit_test(close_reports_bg_error), cmocka_unit_test(thread_start_failure),
        cmocka_unit_test(destroy_custom_pool),    cmocka_unit_test(failed_compaction_unlocked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
