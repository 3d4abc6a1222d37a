// SPDX-License-Identifier: Apache-2.0
/*
 * test_deep_yield.c -- deep compactions that yield to L0->L1 work
 * (src/db/compact_run.c, compact_pick.c, silk.c): a deep job asked to give
 * up files stops at its next cut point and installs what it did before it.
 *
 * The data is laid out by hand (build_layout) so that which files each job
 * takes, and where its cut points are, is known: four key ranges r0..r3,
 * each one L1 file over one or two L2 files of its own, no file straddling
 * two ranges. The L1 files come from one L0->L1 compaction of all four
 * ranges, which cuts its outputs on the L2 boundaries (compact_merge.c:
 * without that there would be no cut points). l0=sst, so L0->L1 work is the tkv-l0 worker, and a flush of
 * keys of one range makes it need exactly that range's L1 file. A fault
 * hook holds tkv-deep threads at chosen output writes.
 *
 *  - yield_partial_commit: a run of three ranges (three segments) is held at
 *    the first write of its second segment; L0->L1 work needs its third
 *    file; released, the job finishes the second segment, stops at the cut
 *    and commits two of three (partial_commits=1, partial_bytes>0, no
 *    abort). Its outputs are live once it committed (checked with later
 *    deep writes held), its third file is left for the L0 worker, and the database
 *    equals a model, also after reopen.
 *  - yield_crash_before_edit: the same, in a child process that dies (as
 *    kill -9 would) when the job starts writing its partial commit's
 *    MANIFEST record, after its outputs were synced. Reopened: every write
 *    is there and the dead job's outputs are gone (no .sst outside the
 *    version).
 *  - l0_yields_only_needed: two deep jobs, on r0 and on r1, held; a flush of
 *    r1 keys: the L0 worker asks only the r1 job to yield (yields=1), and
 *    both jobs finish (no abort; the old engine aborted every L1->L2 job).
 *  - abort_before_first_cut: deep_yield_wait=0 and a job held in its first
 *    segment: asked to yield it stops with nothing to keep: aborts=1, no
 *    partial commit, no output left behind, the data intact.
 */
#include <dirent.h>
#include <pthread.h>
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

#include "io/io.h"
#include "testutil.h"

#define RANGES         4
#define KEYS_PER_RANGE 400 /* x ~110 bytes: ~45K per range, under sst_size (64K) */
#define VALUE_BYTES    100

/* ---- checks that work in a forked child too (no cmocka there) */

static int g_child; /* 1 in yield_crash_before_edit's child: failures _exit(3) */

static void need(int ok, const char *what)
{
    if (ok) return;
    if (g_child) {
        fprintf(stderr, "child: %s: %s\n", what, tkv_errmsg());
        _exit(3);
    }
    fail_msg("%s: %s", what, tkv_errmsg());
}

/* prop -- the number after `field` in property `name` (need: present). */
static uint64_t prop(tkv_db *db, const char *name, const char *field)
{
    char *p = tkv_property(db, name);
    need(p != NULL, name);
    const char *at = strstr(p, field);
    if (!at) fprintf(stderr, "%s has no %s:\n%s", name, field, p);
    need(at != NULL, field);
    uint64_t v = strtoull(at + strlen(field), NULL, 10);
    tkv_free(p);
    return v;
}

/* options -- l0=sst, 64K files, level_multiplier 100 (L2 never compacts
 * here), plus NULL-ended name/value pairs. */
static tkv_options *options(const char *first, ...)
{
    tkv_options *o = tkv_options_new();
    need(o != NULL, "options");
    const char *base[] = {"l0",
                          "sst",
                          "memtable_size",
                          "256K",
                          "sst_size",
                          "64K",
                          "level_multiplier",
                          "100",
                          "l0_compaction_trigger",
                          "1",
                          "block_cache_size",
                          "1M",
                          NULL};
    for (int i = 0; base[i]; i += 2) need(tkv_options_set(o, base[i], base[i + 1]) == TKV_OK, base[i]);
    va_list ap;
    va_start(ap, first);
    for (const char *name = first; name; name = va_arg(ap, const char *))
        need(tkv_options_set(o, name, va_arg(ap, const char *)) == TKV_OK, name);
    va_end(ap);
    return o;
}

static tkv_db *open_db(const char *dir, const tkv_options *o)
{
    tkv_db *db = NULL;
    need(tkv_open(dir, o, &db) == TKV_OK, "open");
    return db;
}

/* put_range -- writes `n` keys of range r (every `step`-th from `from`),
 * values from round `round`, into db (NULL: none) and the model. */
static void put_range(tkv_db *db, tu_model *m, int r, int round, int from, int step, int n)
{
    char key[32], val[VALUE_BYTES];
    tu_rng g;
    for (int i = from, k = 0; k < n && i < KEYS_PER_RANGE; i += step, k++) {
        size_t kn = (size_t)sprintf(key, "r%d-%05d", r, i);
        tu_rng_init(&g, (uint64_t)(r * 1000003 + i * 31 + round));
        tu_rng_fill(&g, val, sizeof val);
        if (db) need(tkv_put(db, key, kn, val, sizeof val, 0) == TKV_OK, "put");
        tu_model_put(m, key, kn, val, sizeof val);
    }
}

/* wait_idle -- until L0 is empty and no deep job runs, twice 50 ms apart (at most 30 s). */
static void wait_idle(tkv_db *db)
{
    need(tkv_flush(db) == TKV_OK, "flush");
    int quiet = 0;
    for (int i = 0; i < 600 && quiet < 2; i++) {
        int q = prop(db, "tkv.sched", "deep: running=") == 0 && prop(db, "tkv.stats", "level.L0: files=") == 0;
        quiet = q ? quiet + 1 : 0;
        usleep(50000);
    }
    need(quiet == 2, "background work still running after 30 s");
}

/* build_layout -- the four ranges in L2 (phase 1), then again in L1, one
 * file each (phase 2). Closes the database; m holds what it contains. */
static void build_layout(const char *dir, tu_model *m)
{
    tkv_options *o = options("l1_size", "64K", NULL);
    tkv_db *db = open_db(dir, o);
    for (int r = 0; r < RANGES; r++) {
        put_range(db, m, r, 1, 0, 1, KEYS_PER_RANGE);
        need(tkv_flush(db) == TKV_OK, "flush");
    }
    /* everything down to L2: compact_range pushes to the deepest level
     * holding data, and deep jobs move L1 files down meanwhile */
    for (int i = 0; i < 4 && (prop(db, "tkv.stats", "level.L1: files=") || prop(db, "tkv.stats", "level.L0: files="));
         i++) {
        need(tkv_compact_range(db, NULL, 0, NULL, 0) == TKV_OK, "compact_range");
        wait_idle(db);
    }
    need(prop(db, "tkv.stats", "level.L1: files=") == 0, "phase 1 left L1 files");
    need(tkv_close(db) == TKV_OK, "close");
    tkv_options_free(o);
    /* phase 2: all four ranges in one L0 file (one memtable), merged into
     * L1 by one L0->L1 compaction with no deep work (l1_size 16M). Cut at
     * sst_size alone, its ~180K of output would be three files straddling
     * ranges; cut where it crosses an L2 boundary once half of sst_size,
     * it is one file per range (compact_merge.c) */
    o = options("l1_size", "16M", "memtable_size", "1M", NULL);
    db = open_db(dir, o);
    for (int r = 0; r < RANGES; r++) put_range(db, m, r, 2, 0, 1, KEYS_PER_RANGE);
    need(tkv_flush(db) == TKV_OK, "flush");
    wait_idle(db);
    need(prop(db, "tkv.stats", "compaction.compact-l0: count=") == 1, "phase 2: one L0->L1 compaction");
    uint64_t l1_files = prop(db, "tkv.stats", "level.L1: files=");
    if (l1_files != RANGES) { /* say what the layout was (phase 1's L2 files decide the cuts) */
        char *p = tkv_property(db, "tkv.stats");
        fprintf(stderr, "phase 2: %llu L1 files, expected %d:\n%s", (unsigned long long)l1_files, RANGES, p ? p : "");
        tkv_free(p);
    }
    need(l1_files == RANGES, "phase 2: one L1 file per range");
    need(tkv_close(db) == TKV_OK, "close");
    tkv_options_free(o);
}

/* ---- the hook: holds tkv-deep threads at output writes */

static char g_dir[4096];
static int g_hold;              /* 1: hold as g_hold_after says (atomic) */
static int g_hold_after;        /* hold .sst writes once this many segments ended (directory syncs) */
static int g_held;              /* writes that were held (atomic) */
static int g_crash_manifest;    /* child: die at a tkv-deep MANIFEST write (atomic) */
static int g_freeze;            /* 1: freeze deep output writes after the next tkv-deep MANIFEST
                              * write (a commit); 2: frozen until set to 0 (atomic) */
static __thread int t_segments; /* directory syncs of this deep thread */
static char g_outputs[64][256]; /* .sst files the deep threads wrote (first write of each) */
static int g_noutputs;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static void note_output(const char *path)
{
    pthread_mutex_lock(&g_mu);
    int seen = 0;
    for (int i = 0; i < g_noutputs && !seen; i++) seen = !strcmp(g_outputs[i], path);
    if (!seen && g_noutputs < 64) snprintf(g_outputs[g_noutputs++], sizeof g_outputs[0], "%s", path);
    pthread_mutex_unlock(&g_mu);
}

/* wait_while -- until *flag is no longer `value` (at most 30 s). */
static void wait_while(const int *flag, int value)
{
    for (int i = 0; i < 100000 && __atomic_load_n(flag, __ATOMIC_ACQUIRE) == value; i++) usleep(300);
}

static int hook(io_op op, const char *path, size_t len, void *arg)
{
    (void)len;
    (void)arg;
    if (!tu_thread_is("tkv-deep")) return 0;
    if (op == IO_OP_SYNC && !strcmp(path, g_dir)) t_segments++;
    if (op == IO_OP_WRITE && strstr(path, "MANIFEST") && __atomic_load_n(&g_crash_manifest, __ATOMIC_ACQUIRE))
        _exit(42); /* a crash after the outputs' syncs, before the edit */
    if (op == IO_OP_WRITE && strstr(path, "MANIFEST")) {
        int armed = 1;
        __atomic_compare_exchange_n(&g_freeze, &armed, 2, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
    }
    if (op != IO_OP_WRITE || !tu_is_sst(path)) return 0;
    wait_while(&g_freeze, 2);
    note_output(path);
    if (!__atomic_load_n(&g_hold, __ATOMIC_ACQUIRE) || t_segments < g_hold_after) return 0;
    __atomic_fetch_add(&g_held, 1, __ATOMIC_RELAXED);
    wait_while(&g_hold, 1);
    return 0;
}

static void hook_arm(const char *dir, int after_segments)
{
    snprintf(g_dir, sizeof g_dir, "%s", dir);
    g_hold_after = after_segments;
    g_held = 0;
    g_noutputs = 0;
    __atomic_store_n(&g_hold, 1, __ATOMIC_RELEASE);
    io_set_fault_hook(hook, NULL);
}

/* wait_for -- until property field reaches at least `want` (at most 30 s). */
static void wait_for(tkv_db *db, const char *name, const char *field, uint64_t want)
{
    for (int i = 0; i < 3000 && prop(db, name, field) < want; i++) usleep(10000);
    need(prop(db, name, field) >= want, field);
}

static void wait_held(int want)
{
    for (int i = 0; i < 3000 && __atomic_load_n(&g_held, __ATOMIC_RELAXED) < want; i++) usleep(10000);
    need(__atomic_load_n(&g_held, __ATOMIC_RELAXED) >= want, "deep jobs held");
}

static int file_exists(const char *path) { return access(path, F_OK) == 0; }

/* sst_on_disk -- .sst files in dir. */
static long sst_on_disk(const char *dir)
{
    long n = 0;
    DIR *d = opendir(dir);
    need(d != NULL, "opendir");
    struct dirent *e;
    while ((e = readdir(d))) n += tu_is_sst(e->d_name);
    closedir(d);
    return n;
}

/* sst_listed -- the files of every level (tkv.stats level lines). */
static long sst_listed(tkv_db *db)
{
    char *p = tkv_property(db, "tkv.stats");
    need(p != NULL, "tkv.stats");
    long n = 0;
    for (const char *q = strstr(p, "level.L"); q; q = strstr(q + 1, "level.L"))
        n += strtol(strstr(q, "files=") + 6, NULL, 10);
    tkv_free(p);
    return n;
}

/* run_to_partial_commit -- phase 3 of the partial-commit tests: the run of
 * r0..r2 (l1_size 64K: the excess over target takes three files), held at
 * the first write of its second segment; a flush of r2 keys; released once
 * the job was asked to yield. Returns the open database. */
static tkv_db *run_to_partial_commit(const char *dir, tu_model *m, const tkv_options *o)
{
    hook_arm(dir, 1);
    tkv_db *db = open_db(dir, o);
    wait_held(1);
    put_range(db, m, 2, 3, 0, 7, 40); /* L0->L1 work that needs r2's L1 file, the run's third */
    need(tkv_flush(db) == TKV_OK, "flush");
    wait_for(db, "tkv.sched", "yields=", 1);
    __atomic_store_n(&g_hold, 0, __ATOMIC_RELEASE);
    return db;
}

static void yield_partial_commit(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("deep-yield");
    tu_model *m = tu_model_new();
    build_layout(dir, m);
    tkv_options *o = options("l1_size", "64K", "compaction_threads", "1", "deep_yield_wait", "10000", NULL);
    __atomic_store_n(&g_freeze, 1, __ATOMIC_RELEASE); /* no deep output after the partial commit, until checked */
    tkv_db *db = run_to_partial_commit(dir, m, o);
    wait_for(db, "tkv.sched", "partial_commits=", 1);
    /* the work before the cut is kept, not redone: the outputs the held job
     * wrote (both segments') are live once it committed. (Checked before any
     * later deep job runs: how the rest of the run and the new L1 data are
     * merged afterwards may legitimately rewrite them -- in some runs the
     * second segment's output reaches into r2's keys.) */
    print_message("the held job wrote %d output files\n", g_noutputs);
    assert_true(g_noutputs >= 2);
    for (int i = 0; i < 2; i++)
        if (!file_exists(g_outputs[i])) fail_msg("output %s of the partial commit is gone", g_outputs[i]);
    __atomic_store_n(&g_freeze, 0, __ATOMIC_RELEASE);
    wait_idle(db);
    io_set_fault_hook(NULL, NULL);
    char *s = tkv_property(db, "tkv.sched");
    print_message("%s", strstr(s, "deep:"));
    tkv_free(s);
    assert_int_equal(prop(db, "tkv.sched", "yields="), 1);
    assert_int_equal(prop(db, "tkv.sched", "partial_commits="), 1);
    assert_true(prop(db, "tkv.sched", "partial_bytes=") > 0);
    assert_int_equal(prop(db, "tkv.sched", "aborts="), 0);
    assert_int_equal(prop(db, "tkv.stats", "yields="), 1); /* tkv.stats has the same counters */
    assert_int_equal(sst_on_disk(dir), sst_listed(db));
    tu_check_db(db, NULL, m, "after a partial commit");
    tu_close_reopen_check(db, dir, o, m, "reopened after a partial commit");
    tkv_options_free(o);
    tu_model_free(m);
    tu_tmpdir_free(dir);
}

static void yield_crash_before_edit(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("deep-yield-crash");
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        g_child = 1;
        tu_model *cm = tu_model_new();
        build_layout(dir, cm);
        tkv_options *o = options("l1_size", "64K", "compaction_threads", "1", "deep_yield_wait", "10000", NULL);
        __atomic_store_n(&g_crash_manifest, 0, __ATOMIC_RELEASE);
        tkv_db *db = run_to_partial_commit(dir, cm, o);
        (void)db;
        /* the released job commits: its MANIFEST write ends this process */
        __atomic_store_n(&g_crash_manifest, 1, __ATOMIC_RELEASE);
        sleep(30);
        _exit(4); /* no partial commit came */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) != 42) fail_msg("the child ended with %d, not at the partial commit", WEXITSTATUS(status));
    long before = sst_on_disk(dir);
    /* reopen with no compaction to run (no deep work, L0 under its
     * trigger), so that no file is being written */
    tkv_options *o = options("l1_size", "16M", "l0_compaction_trigger", "100", NULL);
    tkv_db *db = tu_open_ok(dir, o);
    long listed = sst_listed(db), after = sst_on_disk(dir);
    print_message("%ld .sst files after the crash; after open %ld listed, %ld on disk\n", before, listed, after);
    assert_true(before > listed);    /* the dead job's synced outputs were there ... */
    assert_int_equal(after, listed); /* ... and the open deleted them: nothing leaks */
    /* every write is there: the child's writes, replayed into a model */
    tu_model *m = tu_model_new();
    for (int round = 1; round <= 2; round++)
        for (int r = 0; r < RANGES; r++) put_range(NULL, m, r, round, 0, 1, KEYS_PER_RANGE);
    put_range(NULL, m, 2, 3, 0, 7, 40);
    tu_check_db(db, NULL, m, "after a crash before the partial commit's edit");
    tu_close_reopen_check(db, dir, o, m, "reopened again");
    tkv_options_free(o);
    tu_model_free(m);
    tu_tmpdir_free(dir);
}

static void l0_yields_only_needed(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("deep-yield-l0");
    tu_model *m = tu_model_new();
    build_layout(dir, m);
    /* L1 is 4 x ~45K over a 150K target: the first deep job's run is r0
     * alone (the excess is under one file), the second's r1 (the excess
     * less the busy r0 is none) */
    tkv_options *o = options("l1_size", "150K", "compaction_threads", "2", "deep_yield_wait", "10000", NULL);
    hook_arm(dir, 0); /* hold both at their first output write */
    tkv_db *db = open_db(dir, o);
    wait_held(2);
    assert_int_equal(prop(db, "tkv.sched", "deep: running="), 2);
    put_range(db, m, 1, 3, 0, 7, 40); /* L0->L1 work that needs r1's L1 file only */
    assert_int_equal(tkv_flush(db), TKV_OK);
    wait_for(db, "tkv.sched", "yields=", 1);
    usleep(300000); /* room for a wrong second request (the L0 worker asks again every 125 ms) */
    assert_int_equal(prop(db, "tkv.sched", "yields="), 1);
    __atomic_store_n(&g_hold, 0, __ATOMIC_RELEASE);
    wait_idle(db);
    io_set_fault_hook(NULL, NULL);
    char *s = tkv_property(db, "tkv.sched");
    print_message("%s", strstr(s, "deep:"));
    tkv_free(s);
    /* neither job was thrown away: the r1 job finished (its one segment
     * was its next cut), the r0 job was never asked */
    assert_int_equal(prop(db, "tkv.sched", "yields="), 1);
    assert_int_equal(prop(db, "tkv.sched", "aborts="), 0);
    assert_int_equal(prop(db, "tkv.sched", "partial_commits="), 0);
    assert_true(prop(db, "tkv.stats", "compaction.compact-deep: count=") >= 2);
    assert_int_equal(sst_on_disk(dir), sst_listed(db));
    tu_check_db(db, NULL, m, "after the L0 worker's yield");
    tu_close_reopen_check(db, dir, o, m, "reopened");
    tkv_options_free(o);
    tu_model_free(m);
    tu_tmpdir_free(dir);
}

static void abort_before_first_cut(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("deep-yield-abort");
    tu_model *m = tu_model_new();
    build_layout(dir, m);
    /* one deep job, on r0 alone; deep_yield_wait=0: a job asked to yield
     * stops at its next I/O */
    tkv_options *o = options("l1_size", "150K", "compaction_threads", "1", "deep_yield_wait", "0", NULL);
    hook_arm(dir, 0);
    tkv_db *db = open_db(dir, o);
    wait_held(1); /* in its first (and only) segment: no cut reached */
    put_range(db, m, 0, 3, 0, 7, 40);
    assert_int_equal(tkv_flush(db), TKV_OK);
    wait_for(db, "tkv.sched", "yields=", 1);
    __atomic_store_n(&g_hold, 0, __ATOMIC_RELEASE);
    wait_for(db, "tkv.sched", "aborts=", 1);
    wait_idle(db);
    io_set_fault_hook(NULL, NULL);
    char *s = tkv_property(db, "tkv.sched");
    print_message("%s", strstr(s, "deep:"));
    tkv_free(s);
    assert_int_equal(prop(db, "tkv.sched", "aborts="), 1);
    assert_int_equal(prop(db, "tkv.sched", "partial_commits="), 0);
    /* the aborted job's output is gone; its input went on to the L0 worker */
    assert_true(g_noutputs >= 1);
    if (file_exists(g_outputs[0])) fail_msg("the aborted job's output %s is still there", g_outputs[0]);
    assert_int_equal(sst_on_disk(dir), sst_listed(db));
    tu_check_db(db, NULL, m, "after an abort");
    tu_close_reopen_check(db, dir, o, m, "reopened after an abort");
    tkv_options_free(o);
    tu_model_free(m);
    tu_tmpdir_free(dir);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(yield_partial_commit),
        cmocka_unit_test(yield_crash_before_edit),
        cmocka_unit_test(l0_yields_only_needed),
        cmocka_unit_test(abort_before_first_cut),
    };
    const char *only = getenv("TKV_TEST_ONLY");
    if (only && *only) cmocka_set_test_filter(only);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
