// SPDX-License-Identifier: Apache-2.0
/*
 * test_fault_sweep.c -- every injection point of a fixed workload, failed in
 * turn (the I/O layer's fault hook, io_set_fault_hook).
 *
 * The workload (one client thread; l0=matrix on a 1 MiB pool in
 * pmem_mode=msync, 32K memtables, a 64K L1 -- one column's output, so
 * that every run makes merging deep compactions, not only trivial moves,
 * however the background threads are timed): it creates the database,
 * writes puts, deletes and batches (every tenth with TKV_SYNC) through
 * about a dozen memtables -- WAL switches, flushes into the pool, column
 * compactions into L1, deep compactions L1 -> L2 -- flushes, closes and
 * reopens (a new MANIFEST and CURRENT), writes some more, runs
 * tkv_compact_range and closes.
 *
 * A first run counts the injection points: every IO_OP_OPEN, WRITE, SYNC,
 * RENAME, REMOVE, MSYNC and FALLOCATE, keyed by operation, file kind (wal,
 * sst, manifest, current, pool, ...) and thread (tkv-flush, tkv-column,
 * tkv-deep, tkv-trash, ..., or client). Then, for each point (key, k), the
 * workload runs again with the k-th operation of that key failing once:
 * with EIO, with ENOSPC, and for writes with a short write (half the bytes,
 * then ENOSPC). Each case must end in one of two ways:
 *   - the engine absorbs the failure (a column is retried, a best-effort
 *     remove is skipped) and every call returns TKV_OK; or
 *   - a call returns the documented code (TKV_IO_ERROR for EIO,
 *     TKV_NO_SPACE for ENOSPC and short writes, TKV_IO_ERROR for any failed
 *     msync of the pool) with a message naming the system's error; the
 *     workload stops there and closes (TKV_OK or the same code).
 * No case may hang (a watchdog ends the run after 120 s) or crash. Then the
 * database is reopened without faults and must hold every acknowledged
 * write (the model; the write that failed, if any, all or nothing), leak no
 * file (after a flush and once background work is quiet: only CURRENT,
 * LOCK, IDENTITY, POOL, the pool, the live MANIFEST, the current WAL and
 * the version's SSTs) and no pool page (every page in use belongs to a row,
 * and none is in use after tkv_compact_range).
 *
 * Default: the cases are ordered breadth first (each key's first point,
 * then its last, then the others, with the faults alternating) and run for
 * at most TKV_FAULT_SWEEP_SECONDS (default 15) seconds. TKV_FAULT_SWEEP=full
 * (make crashtest) runs every point with every fault. The counts are
 * printed: points per key, cases run, outcomes.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
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
#include "io/io.h"
#include "sst/version.h"
#include "testutil.h"

#define FS_MAX_KEYS 128
#define FS_KEYS     500u /* user keys k00000 .. */
#define FS_OPS1     420u /* operations before the reopen */
#define FS_OPS2     120u /* after it */
#define FS_SHORT    (-1) /* fault: a short write */

/* ---------------------------------------------------------------- injection points */

typedef struct fs_key {
    io_op op;
    char file[12];
    char thread[16];
} fs_key;

static const char *op_name(io_op op)
{
    static const char *const n[] = {"open", "write", "sync", "read", "rename", "remove", "ring", "msync", "fallocate"};
    return (unsigned)op < sizeof n / sizeof n[0] ? n[op] : "?";
}

/* file_kind -- what kind of file of the database path is. */
static void file_kind(const char *dir, const char *path, char out[12])
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    const char *k = "other";
    if (!strcmp(path, dir)) k = "dir";
    else if (n > 6 && !strcmp(base + n - 6, ".trash")) k = "trash";
    else if (n > 4 && !strcmp(base + n - 4, ".wal")) k = "wal";
    else if (n > 4 && !strcmp(base + n - 4, ".sst")) k = "sst";
    else if (!strncmp(base, "MANIFEST-", 9)) k = "manifest";
    else if (!strncmp(base, "CURRENT", 7)) k = "current";
    else if (!strncmp(base, "IDENTITY", 8)) k = "identity";
    else if (!strncmp(base, "POOL", 4)) k = "poolref";
    else if (!strcmp(base, "matrix.pmem")) k = "pool";
    else if (!strcmp(base, "LOCK")) k = "lock";
    snprintf(out, 12, "%s", k);
}

static struct {
    char dir[256];      /* the workload's directory (set while no hook runs) */
    int mode;           /* 0 off, 1 count, 2 inject */
    pthread_mutex_t mu; /* count mode: keys */
    fs_key keys[FS_MAX_KEYS];
    unsigned nkeys;
    uint64_t count[FS_MAX_KEYS];
    /* inject mode */
    fs_key target;
    uint64_t target_ord, seen;
    int fault; /* errno, or FS_SHORT */
    int hit;
    char hit_path[300];
} g = {.mu = PTHREAD_MUTEX_INITIALIZER};

static int key_eq(const fs_key *a, const fs_key *b)
{
    return a->op == b->op && !strcmp(a->file, b->file) && !strcmp(a->thread, b->thread);
}

static int fs_hook(io_op op, const char *path, size_t len, void *arg)
{
    (void)arg;
    int mode = __atomic_load_n(&g.mode, __ATOMIC_ACQUIRE);
    if (!mode || op == IO_OP_READ || op == IO_OP_RING_SETUP) return 0;
    fs_key k = {.op = op};
    file_kind(g.dir, path, k.file);
    pthread_getname_np(pthread_self(), k.thread, sizeof k.thread);
    if (strncmp(k.thread, "tkv-", 4) != 0) snprintf(k.thread, sizeof k.thread, "client");
    if (mode == 1) {
        pthread_mutex_lock(&g.mu);
        unsigned i = 0;
        while (i < g.nkeys && !key_eq(&g.keys[i], &k)) i++;
        if (i == g.nkeys && i < FS_MAX_KEYS) g.keys[g.nkeys++] = k;
        if (i < FS_MAX_KEYS) g.count[i]++;
        pthread_mutex_unlock(&g.mu);
        return 0;
    }
    if (!key_eq(&g.target, &k)) return 0;
    if (__atomic_add_fetch(&g.seen, 1, __ATOMIC_ACQ_REL) != g.target_ord) return 0;
    snprintf(g.hit_path, sizeof g.hit_path, "%s", path);
    __atomic_store_n(&g.hit, 1, __ATOMIC_RELEASE);
    if (g.fault != FS_SHORT) return g.fault;
    return len >= 2 ? -(int)(len / 2) : ENOSPC;
}

/* ---------------------------------------------------------------- the workload */

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    double deadline; /* 0: idle */
    char what[200];  /* the case running */
    int stop;
} wd = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER}; /* the watchdog (below) */

typedef struct fs_op {
    int n, sync;
    uint32_t key[4];
    int del[4];
} fs_op;

static uint64_t g_seed;

/* fs_gen -- operation i: 70 % a put, 10 % a delete, 20 % a batch of 2..4
 * puts and deletes; every tenth with TKV_SYNC. */
static void fs_gen(uint64_t i, fs_op *o)
{
    tu_rng r;
    tu_rng_init(&r, g_seed ^ tu_mix64(i));
    uint64_t x = tu_rng_below(&r, 100);
    o->sync = i % 10 == 0;
    o->n = x < 80 ? 1 : (int)tu_rng_range(&r, 2, 4);
    for (int j = 0; j < o->n; j++) {
        o->key[j] = (uint32_t)tu_rng_below(&r, FS_KEYS);
        o->del[j] = o->n == 1 ? x >= 70 : tu_rng_chance(&r, 250000);
    }
}

static size_t fs_keystr(uint32_t k, char *b) { return (size_t)sprintf(b, "k%05u", k); }

/* fs_value -- 300..1500 bytes for item j of operation i. */
static size_t fs_value(uint64_t i, int j, char *b)
{
    uint64_t h = tu_mix64(g_seed ^ (i * 8 + (uint64_t)j));
    size_t n = (size_t)sprintf(b, "i%llu.%d|", (unsigned long long)i, j), len = 300 + (size_t)(h % 1200);
    for (size_t p = n; p < len; p++) {
        h = tu_mix64(h);
        b[p] = (char)('a' + h % 26);
    }
    return len;
}

static void fs_apply(tu_model *m, uint64_t i, const fs_op *o)
{
    char kb[16], vb[1600];
    for (int j = 0; j < o->n; j++) {
        size_t kn = fs_keystr(o->key[j], kb);
        if (o->del[j]) tu_model_del(m, kb, kn);
        else tu_model_put(m, kb, kn, vb, fs_value(i, j, vb));
    }
}

static int fs_issue(tkv_db *db, tkv_batch *b, uint64_t i, const fs_op *o)
{
    char kb[16], vb[1600];
    unsigned flags = o->sync ? TKV_SYNC : 0;
    if (o->n == 1) {
        size_t kn = fs_keystr(o->key[0], kb);
        return o->del[0] ? tkv_delete(db, kb, kn, flags) : tkv_put(db, kb, kn, vb, fs_value(i, 0, vb), flags);
    }
    tkv_batch_clear(b);
    for (int j = 0; j < o->n; j++) {
        size_t kn = fs_keystr(o->key[j], kb);
        int rc = o->del[j] ? tkv_batch_delete(b, kb, kn) : tkv_batch_put(b, kb, kn, vb, fs_value(i, j, vb));
        if (rc != TKV_OK) return rc;
    }
    return tkv_write(db, b, flags);
}

static tkv_options *fs_options(void)
{
    tkv_options *o = tu_small_options();
    static const char *const set[][2] = {
        {"memtable_size", "32K"}, {"pmem_size", "1M"},         {"pmem_mode", "msync"}, {"matrix_trigger", "30"},
        {"column_bytes", "64K"},  {"sst_size", "64K"},         {"l1_size", "64K"},     {"level_multiplier", "4"},
        {"column_threads", "1"},  {"compaction_threads", "1"}, {"l0", "matrix"},
    };
    for (size_t i = 0; i < sizeof set / sizeof set[0]; i++)
        if (tkv_options_set(o, set[i][0], set[i][1]) != TKV_OK)
            fail_msg("%s=%s: %s", set[i][0], set[i][1], tkv_errmsg());
    return o;
}

/* What one run of the workload did. */
typedef struct fs_result {
    tu_model *m;    /* the acknowledged writes */
    int rc;         /* the first error a call returned (0: none) */
    char where[48]; /* which call */
    char msg[600];  /* its tkv_errmsg() */
    int doubt;      /* the failed call was write i: maybe applied */
    uint64_t doubt_i;
    int close_rc; /* the close after the error (0 if none or OK) */
} fs_result;

/* fs_stop -- records the first failed call. */
static int fs_stop(fs_result *r, int rc, const char *where)
{
    if (rc == TKV_OK) return 0;
    r->rc = rc;
    snprintf(r->where, sizeof r->where, "%s", where);
    snprintf(r->msg, sizeof r->msg, "%s", tkv_errmsg());
    return 1;
}

/* fs_writes -- operations [from, to); stops at the first failure. */
static int fs_writes(tkv_db *db, tkv_batch *b, uint64_t from, uint64_t to, fs_result *r)
{
    for (uint64_t i = from; i < to; i++) {
        fs_op o;
        fs_gen(i, &o);
        int rc = fs_issue(db, b, i, &o);
        if (rc != TKV_OK) {
            r->doubt = 1;
            r->doubt_i = i;
            char w[48];
            snprintf(w, sizeof w, "write %llu", (unsigned long long)i);
            return fs_stop(r, rc, w);
        }
        fs_apply(r->m, i, &o);
    }
    return 0;
}

/* fs_workload -- the whole workload in dir (see the head comment). */
static void fs_workload(const char *dir, fs_result *r)
{
    tkv_options *o = fs_options();
    tkv_batch *b = tkv_batch_new();
    assert_non_null(b);
    tkv_db *db = NULL;
    int stopped = fs_stop(r, tkv_open(dir, o, &db), "open (create)");
    if (!stopped) stopped = fs_writes(db, b, 0, FS_OPS1, r);
    if (!stopped) stopped = fs_stop(r, tkv_flush(db), "flush");
    if (!stopped && !tu_wait_quiet(db, 60000)) fail_msg("%s: background work still running after 60 s", wd.what);
    if (!stopped) {
        int rc = tkv_close(db);
        db = NULL;
        stopped = fs_stop(r, rc, "close before reopen");
    }
    if (!stopped) stopped = fs_stop(r, tkv_open(dir, o, &db), "reopen");
    if (!stopped) stopped = fs_writes(db, b, FS_OPS1, FS_OPS1 + FS_OPS2, r);
    if (!stopped) stopped = fs_stop(r, tkv_compact_range(db, NULL, 0, NULL, 0), "compact_range");
    if (db) {
        int rc = tkv_close(db);
        if (!stopped) fs_stop(r, rc, "close");
        else r->close_rc = rc;
    }
    tkv_batch_free(b);
    tkv_options_free(o);
}

/* ---------------------------------------------------------------- checks after a case */

/* fs_doubt -- the failed write, all or nothing: applies it to m if the
 * database holds it, fails the test if it holds part of it. */
static void fs_doubt(tkv_db *db, fs_result *r, const char *what)
{
    if (!r->doubt) return;
    fs_op o;
    fs_gen(r->doubt_i, &o);
    tu_model *with = tu_model_copy(r->m);
    fs_apply(with, r->doubt_i, &o);
    int as_with = 0, as_without = 0;
    char kb[16];
    for (int j = 0; j < o.n; j++) {
        size_t kn = fs_keystr(o.key[j], kb);
        void *v = NULL;
        size_t vn = 0;
        int rc = tkv_get(db, NULL, kb, kn, &v, &vn);
        if (rc != TKV_OK && rc != TKV_NOT_FOUND) fail_msg("%s: get %s: %s", what, kb, tkv_errmsg());
        const void *mv;
        size_t mvn;
        int in_with = tu_model_get(with, kb, kn, &mv, &mvn);
        int eq_with = (rc == TKV_OK) == in_with && (!in_with || (vn == mvn && !memcmp(v, mv, vn)));
        int in_wo = tu_model_get(r->m, kb, kn, &mv, &mvn);
        int eq_wo = (rc == TKV_OK) == in_wo && (!in_wo || (vn == mvn && !memcmp(v, mv, vn)));
        tkv_free(v);
        as_with += eq_with && !eq_wo;
        as_without += eq_wo && !eq_with;
        if (!eq_with && !eq_wo) fail_msg("%s: key %s of the failed write is neither before nor after it", what, kb);
    }
    if (as_with && as_without)
        fail_msg("%s: the failed write %llu survived in part", what, (unsigned long long)r->doubt_i);
    if (as_with) {
        tu_model_free(r->m);
        r->m = with;
    } else {
        tu_model_free(with);
    }
}

/* fs_leaked_file -- 1 with the name of the first file in dir that is not
 * one of the database's live files in out (and the live MANIFEST and WAL
 * numbers and SST count for the message), else 0 with *nsst the current
 * version's SSTs found on disk and *nlive the number it lists. */
static int fs_leaked_file(tkv_db *db, const char *dir, char *out, size_t outlen, size_t *nsst, size_t *nlive,
                          uint64_t *manifest_out, uint64_t *wal_out)
{
    pthread_mutex_lock(&db->mu);
    version *v = vset_current(db->vs);
    uint64_t manifest = vset_manifest_number(db->vs), wal = db->wal_number;
    uint64_t live[512], kept[DB_WAL_RECYCLE_MAX];
    size_t n = 0, nkept = db->nwal_recycled;
    for (int l = 0; l < VERSION_LEVELS; l++)
        for (size_t i = 0; i < v->nfiles[l] && n < 512; i++) live[n++] = v->files[l][i]->number;
    for (size_t i = 0; i < nkept; i++) kept[i] = db->wal_recycled[i].number; /* obsolete, kept to recycle */
    pthread_mutex_unlock(&db->mu);
    *manifest_out = manifest;
    *wal_out = wal;
    *nlive = n;
    *nsst = 0;
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *f = e->d_name;
        if (!strcmp(f, ".") || !strcmp(f, "..") || !strcmp(f, "CURRENT") || !strcmp(f, "LOCK") ||
            !strcmp(f, "IDENTITY") || !strcmp(f, "POOL") || !strcmp(f, "matrix.pmem"))
            continue;
        char *end;
        unsigned long long num = strtoull(f, &end, 10);
        if (!strncmp(f, "MANIFEST-", 9) && strtoull(f + 9, NULL, 10) == manifest) continue;
        if (end != f && !strcmp(end, ".wal") && num == wal) continue;
        int is_kept = 0;
        for (size_t i = 0; i < nkept; i++) is_kept |= end != f && !strcmp(end, ".wal") && kept[i] == num;
        if (is_kept) continue;
        if (end != f && !strcmp(end, ".sst")) {
            size_t i = 0;
            while (i < n && live[i] != num) i++;
            if (i < n) {
                (*nsst)++;
                continue;
            }
        }
        snprintf(out, outlen, "%s", f);
        closedir(d);
        return 1;
    }
    closedir(d);
    return 0;
}

/* fs_check_files -- the directory holds only the database's live files. A
 * job that has just installed its version removes its inputs after it lets
 * go of db->mu, so a file the current version no longer lists may still be
 * on its way out: like the .trash files, it must be gone within 5 s. */
static void fs_check_files(tkv_db *db, const char *dir, const char *what)
{
    for (int tries = 0;; tries++) { /* the trash thread deletes renamed files in the background */
        size_t n = 0;
        DIR *d = opendir(dir);
        assert_non_null(d);
        struct dirent *e;
        while ((e = readdir(d))) n += strstr(e->d_name, ".trash") != NULL;
        closedir(d);
        if (!n) break;
        if (tries == 500) fail_msg("%s: %zu .trash files still there after 5 s", what, n);
        usleep(10000);
    }
    char f[256];
    size_t nsst, nlive;
    uint64_t manifest, wal;
    for (int tries = 0; fs_leaked_file(db, dir, f, sizeof f, &nsst, &nlive, &manifest, &wal); tries++) {
        if (tries == 500)
            fail_msg("%s: leaked file %s (live: MANIFEST-%06llu, %06llu.wal, %zu SSTs)", what, f,
                     (unsigned long long)manifest, (unsigned long long)wal, nlive);
        usleep(10000);
    }
    if (nsst != nlive) fail_msg("%s: %zu of the version's %zu SSTs are on disk", what, nsst, nlive);
}

/* fs_verify -- reopens dir without faults and checks the case's outcome. */
static void fs_verify(const char *dir, fs_result *r, const char *what)
{
    tkv_options *o = fs_options();
    tkv_db *db = NULL;
    int rc = tkv_open(dir, o, &db);
    if (rc != TKV_OK) fail_msg("%s: reopen without faults: %s: %s", what, tkv_strerror(rc), tkv_errmsg());
    fs_doubt(db, r, what);
    tu_check_db(db, NULL, r->m, what);
    rc = tkv_flush(db);
    if (rc != TKV_OK) fail_msg("%s: flush after the reopen: %s: %s", what, tkv_strerror(rc), tkv_errmsg());
    if (!tu_wait_quiet(db, 60000)) fail_msg("%s: background work still running after 60 s", what);
    tu_check_pool_pages(db, what);
    fs_check_files(db, dir, what);
    rc = tkv_compact_range(db, NULL, 0, NULL, 0);
    if (rc != TKV_OK) fail_msg("%s: compact_range after the reopen: %s: %s", what, tkv_strerror(rc), tkv_errmsg());
    uint64_t used = 1;
    for (int i = 0; i < 300 && (used = tu_prop_u64(db, "tkv.matrix", "pages: used=")) != 0; i++) usleep(10000);
    if (used) fail_msg("%s: %llu pool pages in use after everything drained", what, (unsigned long long)used);
    tu_check_db(db, NULL, r->m, what);
    rc = tkv_close(db);
    if (rc != TKV_OK) fail_msg("%s: close: %s: %s", what, tkv_strerror(rc), tkv_errmsg());
    tkv_options_free(o);
}

/* ---------------------------------------------------------------- watchdog */

static void *wd_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&wd.mu);
    while (!wd.stop) {
        if (wd.deadline && tu_now_ms() > wd.deadline) {
            fprintf(stderr, "fault_sweep: %s did not finish within 120 s (a hang); seed %llu\n", wd.what,
                    (unsigned long long)g_seed);
            _exit(2);
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&wd.cv, &wd.mu, &ts);
    }
    pthread_mutex_unlock(&wd.mu);
    return NULL;
}

static void wd_arm(const char *what)
{
    pthread_mutex_lock(&wd.mu);
    snprintf(wd.what, sizeof wd.what, "%s", what ? what : "");
    wd.deadline = what ? tu_now_ms() + 120000 : 0;
    pthread_mutex_unlock(&wd.mu);
}

/* ---------------------------------------------------------------- the sweep */

typedef struct fs_case {
    unsigned key;
    uint64_t ord;
    int fault;
} fs_case;

typedef struct fs_stats {
    unsigned cases, not_reached, absorbed, errors, by_code[3];
    unsigned absorbed_by_key[FS_MAX_KEYS], errors_by_key[FS_MAX_KEYS];
} fs_stats;

/* expected_code -- what a call must return for a fault: the errno's code
 * (tkv_err_errno), except for a failed msync of the pool, which is always
 * TKV_IO_ERROR (docs/pmem.md: a failed persist is the pool's sticky I/O
 * error, whatever the system said). */
static int expected_code(io_op op, int fault)
{
    if (op == IO_OP_MSYNC) return TKV_IO_ERROR;
    return fault == EIO ? TKV_IO_ERROR : TKV_NO_SPACE;
}
static const char *fault_name(int fault) { return fault == EIO ? "EIO" : fault == ENOSPC ? "ENOSPC" : "short write"; }

/* fs_run_case -- the workload with one point failing, then the checks. */
static void fs_run_case(const fs_case *c, fs_stats *st)
{
    const fs_key *k = &g.keys[c->key];
    char what[200];
    snprintf(what, sizeof what, "%s %s by %s #%llu of %llu, %s", op_name(k->op), k->file, k->thread,
             (unsigned long long)c->ord, (unsigned long long)g.count[c->key], fault_name(c->fault));
    wd_arm(what);
    char *dir = tu_tmpdir("fault-sweep");
    fs_result r = {.m = tu_model_new()};
    snprintf(g.dir, sizeof g.dir, "%s", dir);
    g.target = *k;
    g.target_ord = c->ord;
    g.fault = c->fault;
    g.seen = 0;
    g.hit = 0;
    __atomic_store_n(&g.mode, 2, __ATOMIC_RELEASE);
    fs_workload(dir, &r);
    __atomic_store_n(&g.mode, 0, __ATOMIC_RELEASE);
    st->cases++;
    int hit = __atomic_load_n(&g.hit, __ATOMIC_ACQUIRE);
    if (r.rc != TKV_OK) {
        int errno_value = c->fault == EIO ? EIO : ENOSPC;
        if (!hit) fail_msg("%s: %s failed without the fault: %s: %s", what, r.where, tkv_strerror(r.rc), r.msg);
        int want = expected_code(k->op, c->fault);
        if (r.rc != want || !strstr(r.msg, strerror(errno_value)))
            fail_msg("%s (at %s): %s returned %s \"%s\", expected %s naming \"%s\"", what, g.hit_path, r.where,
                     tkv_strerror(r.rc), r.msg, tkv_strerror(want), strerror(errno_value));
        if (r.close_rc != TKV_OK && r.close_rc != r.rc)
            fail_msg("%s: close after the error returned %s", what, tkv_strerror(r.close_rc));
        st->errors++;
        st->errors_by_key[c->key]++;
        st->by_code[c->fault == EIO ? 0 : c->fault == ENOSPC ? 1 : 2]++;
    } else if (hit) {
        st->absorbed++;
        st->absorbed_by_key[c->key]++;
    } else {
        st->not_reached++;
    }
    fs_verify(dir, &r, what);
    tu_model_free(r.m);
    assert_int_equal(tkv_destroy(dir), TKV_OK);
    tu_tmpdir_free(dir);
    wd_arm(NULL);
}

/* fs_plan -- the cases: breadth first over the keys (each key's first
 * point, its last, then the rest in order), each point with EIO, ENOSPC and
 * (writes) a short write when full, else one of them in turn. */
static size_t fs_plan(int full, fs_case **out)
{
    size_t cap = 0, n = 0;
    for (unsigned k = 0; k < g.nkeys; k++) cap += g.count[k] * 3;
    fs_case *v = calloc(cap ? cap : 1, sizeof *v);
    assert_non_null(v);
    static const int faults[3] = {EIO, ENOSPC, FS_SHORT};
    unsigned turn = 0;
    uint64_t max = 0;
    for (unsigned k = 0; k < g.nkeys; k++)
        if (g.count[k] > max) max = g.count[k];
    for (uint64_t rank = 0; rank < max; rank++)
        for (unsigned k = 0; k < g.nkeys; k++) {
            uint64_t c = g.count[k];
            if (rank >= c) continue;
            uint64_t ord = rank == 0 ? 1 : rank == 1 ? c : rank; /* 1, last, 2, 3, ... */
            int nf = g.keys[k].op == IO_OP_WRITE ? 3 : 2;
            for (int f = 0; f < nf; f++) {
                if (!full && f != (int)(turn % (unsigned)nf)) continue;
                v[n++] = (fs_case){k, ord, faults[f]};
            }
            turn++;
        }
    *out = v;
    return n;
}

/* fs_only -- keeps the one case `spec` names ("write manifest tkv-column 1
 * ENOSPC"; fault EIO, ENOSPC or short), to rerun a failure. */
static size_t fs_only(const char *spec, fs_case *plan, size_t n)
{
    char op[16], file[16], thread[16], fault[16];
    unsigned long long ord;
    if (sscanf(spec, "%15s %15s %15s %llu %15s", op, file, thread, &ord, fault) != 5)
        fail_msg("TKV_FAULT_SWEEP_ONLY=\"%s\": expected \"op file thread k fault\"", spec);
    int f = !strcmp(fault, "EIO") ? EIO : !strcmp(fault, "ENOSPC") ? ENOSPC : FS_SHORT;
    for (size_t i = 0; i < n; i++) {
        const fs_key *k = &g.keys[plan[i].key];
        if (!strcmp(op_name(k->op), op) && !strcmp(k->file, file) && !strcmp(k->thread, thread)) {
            plan[0] = (fs_case){plan[i].key, ord, f};
            return 1;
        }
    }
    fail_msg("TKV_FAULT_SWEEP_ONLY: the workload made no \"%s %s %s\"", op, file, thread);
    return 0;
}

static void fs_report(const fs_stats *st, size_t planned, uint64_t points, double ms)
{
    fprintf(stderr,
            "# fault_sweep: %llu injection points in %u keys; %u of %zu planned cases run in %.1f s: %u "
            "failed calls cleanly (EIO %u, ENOSPC %u, short write %u), %u absorbed (retried or best "
            "effort), %u not reached (the run made fewer points of that key)\n",
            (unsigned long long)points, g.nkeys, st->cases, planned, ms / 1000, st->errors, st->by_code[0],
            st->by_code[1], st->by_code[2], st->absorbed, st->not_reached);
    fprintf(stderr, "# %-10s %-10s %-14s %7s %7s %8s\n", "op", "file", "thread", "points", "errors", "absorbed");
    for (unsigned k = 0; k < g.nkeys; k++)
        fprintf(stderr, "# %-10s %-10s %-14s %7llu %7u %8u\n", op_name(g.keys[k].op), g.keys[k].file, g.keys[k].thread,
                (unsigned long long)g.count[k], st->errors_by_key[k], st->absorbed_by_key[k]);
}

static int has_key(const char *op_file_thread)
{
    for (unsigned k = 0; k < g.nkeys; k++) {
        char s[64];
        snprintf(s, sizeof s, "%s %s %s", op_name(g.keys[k].op), g.keys[k].file, g.keys[k].thread);
        if (!strcmp(s, op_file_thread)) return 1;
    }
    return 0;
}

static void fault_sweep(void **state)
{
    (void)state;
    g_seed = tu_seed();
    const char *mode = getenv("TKV_FAULT_SWEEP");
    int full = mode && !strcmp(mode, "full");
    const char *secs = getenv("TKV_FAULT_SWEEP_SECONDS");
    double budget_ms = full ? 1e300 : (secs && *secs ? atof(secs) : 15.0) * 1000;
    pthread_t wdt;
    assert_int_equal(pthread_create(&wdt, NULL, wd_main, NULL), 0);
    io_set_fault_hook(fs_hook, NULL);

    /* the counting run */
    char *dir = tu_tmpdir("fault-sweep-count");
    fs_result r = {.m = tu_model_new()};
    snprintf(g.dir, sizeof g.dir, "%s", dir);
    wd_arm("the counting run");
    double t0 = tu_now_ms();
    __atomic_store_n(&g.mode, 1, __ATOMIC_RELEASE);
    fs_workload(dir, &r);
    __atomic_store_n(&g.mode, 0, __ATOMIC_RELEASE);
    if (r.rc != TKV_OK) fail_msg("the workload failed without faults at %s: %s", r.where, r.msg);
    fs_verify(dir, &r, "the counting run");
    double one = tu_now_ms() - t0;
    tu_model_free(r.m);
    assert_int_equal(tkv_destroy(dir), TKV_OK);
    tu_tmpdir_free(dir);
    uint64_t points = 0;
    for (unsigned k = 0; k < g.nkeys; k++) points += g.count[k];
    fprintf(stderr, "# fault_sweep: the workload makes %llu injection points (%u keys), one run with checks %.0f ms\n",
            (unsigned long long)points, g.nkeys, one);
    /* the workload reaches what it is meant to */
    static const char *const must[] = {"write wal client",      "open wal client",          "write sst tkv-column",
                                       "write sst tkv-deep",    "write manifest tkv-flush", "write manifest client",
                                       "rename current client", "msync pool tkv-flush",     "fallocate pool tkv-flush"};
    for (size_t i = 0; i < sizeof must / sizeof must[0]; i++)
        if (!has_key(must[i])) fail_msg("the workload made no \"%s\"", must[i]);

    fs_case *plan;
    size_t planned = fs_plan(full, &plan);
    const char *only = getenv("TKV_FAULT_SWEEP_ONLY"); /* "op file thread k fault", as a failure names it */
    if (only && *only) planned = fs_only(only, plan, planned);
    fs_stats st = {0};
    t0 = tu_now_ms();
    for (size_t i = 0; i < planned && tu_now_ms() - t0 < budget_ms; i++) {
        fs_run_case(&plan[i], &st);
        if (full && (i + 1) % 250 == 0)
            fprintf(stderr, "# fault_sweep: %zu of %zu cases, %.0f s\n", i + 1, planned, (tu_now_ms() - t0) / 1000);
    }
    fs_report(&st, planned, points, tu_now_ms() - t0);
    free(plan);
    io_set_fault_hook(NULL, NULL);
    pthread_mutex_lock(&wd.mu);
    wd.stop = 1;
    pthread_cond_signal(&wd.cv);
    pthread_mutex_unlock(&wd.mu);
    pthread_join(wdt, NULL);
    assert_true(st.cases > 0);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fault_sweep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
