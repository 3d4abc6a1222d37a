// SPDX-License-Identifier: Apache-2.0
/*
 * test_crash_threads.c -- kill -9 rounds with several writer threads: the
 * driver behind `make crashtest` (a few rounds of it run in make test).
 *
 * Each round forks a child that opens the database with small options
 * (tu_small_options: 64K memtables, a 16M pool, 256K columns, a 512K L1 and
 * x4 per level, so flushes into the pool, column compactions into L1 and
 * deep compactions L1 -> L2 -> ... run all the time) and starts THREADS
 * writer threads. Thread t owns the keys "t<t>.<k>" (k < CR_KEYS) and
 * issues operations 0, 1, 2, ... of its own sequence, a counter that keeps
 * growing over the rounds: single puts, single deletes and batches of 2..8
 * puts and deletes, some with TKV_SYNC (in phases: none, few, many).
 * Operation i of thread t is a function of (seed, t, i) only, so the parent
 * can regenerate it.
 * Before an operation the thread stores issued = i + 1 in a shared mapping,
 * after its acknowledgement acked = i + 1 (and acked_sync = i + 1 for a
 * TKV_SYNC one). Thread 0 also calls tkv_flush now and then, and rarely
 * tkv_compact_range.
 *
 * The parent SIGKILLs the child at a random moment, reopens the database
 * and finds, per thread, the S for which the thread's keys hold exactly the
 * state after its operations 0..S-1. Such an S must exist (what survived is
 * a prefix of the thread's sequence; a batch survives whole or not at all)
 * and lie in [lo, issued], lo being what the round may not lose. Then the
 * whole database must equal the model (tu_check_db: both scan directions and
 * a get per key), and every fourth round, after a flush and once background
 * work is quiet, nothing may have leaked: every pool page in use belongs to
 * a row, and the .sst files on disk are exactly the version's.
 *
 * Round kinds, and what the durability contract promises for each
 * (include/tierkv.h tkv_put; docs/format-wal.md):
 *   kill      kill -9 of the process (the pool in pmem_mode=emulated): the
 *             page cache survives, and a write is acknowledged only once
 *             its WAL record was handed to the OS, so every acknowledged
 *             write survives, TKV_SYNC or not: lo = acked.
 *   pmemcut   the same kill with the pool in pmem_mode=crashsim: the pool
 *             keeps only what was persisted (a power cut for the pool at
 *             the moment of the kill), the files what was written:
 *             lo = acked.
 *   powercut  pmemcut, and the WALs lose what an OS crash may take: the
 *             child's fault hook notes each WAL's size at every fdatasync,
 *             and the WALs, taken in order, are cut at one point at or
 *             after the last synced byte (write-back in order; the later
 *             WALs lose everything). Acknowledged TKV_SYNC writes survive,
 *             and the writes before them; the others may be lost, but only
 *             as a suffix: lo = acked_sync (the round's start if none).
 *   reorder   pmemcut, and the WALs lose unsynced pages in any order (write-
 *             back out of order, across files and within one): each WAL the
 *             child made keeps what its synced frontier covers, and past it
 *             is kept whole, cut, or has a range zeroed with later bytes
 *             kept (cr_reorder_wals). The same promise: lo = acked_sync.
 * The first four rounds are one of each, then 55 % kill, 15 % pmemcut, 15 %
 * powercut, 15 % reorder. A fifth of the rounds kill the child 0..20 ms after the fork,
 * mostly while it opens and recovers; the others 5..150 ms (sometimes up to
 * 600 ms) after its open returned.
 *
 * wal_switch_sync is the regression test of one finding: an OS crash right
 * after a TKV_SYNC write that followed a WAL switch must keep the writes
 * acknowledged before it (they sit in the switched-away WAL).
 * wal_chain_* (the WAL chain, docs/format-wal.md): an OS crash whose
 * write-back reached a newer WAL but not all of the older one's unsynced
 * tail must not bring the newer one's writes back without the older ones --
 * nor may an out-of-order hole in a WAL keep the database from opening.
 *
 * Knobs: TKV_CRASHTEST_ROUNDS (default 6), TKV_CRASHTEST_THREADS (default
 * 4, at most 16), TKV_TEST_SEED. A failure stops the run and keeps the
 * directory, and a copy of it as the kill left it (<dir>.before-reopen);
 * the message names both, the seed and the round. The seed fixes the
 * operations, round kinds, delays and WAL cuts, not the interleaving of the
 * threads.
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
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "io/io.h"
#include "mem/wal.h"
#include "testutil.h"

#define CR_MAX_THREADS 16
#define CR_KEYS        1500u
#define CR_MAX_ITEMS   8
#define CR_MAX_WALS    512

enum { CR_KILL, CR_PMEMCUT, CR_POWERCUT, CR_REORDER, CR_NKINDS };
static const char *const cr_kind_names[CR_NKINDS] = {"kill", "pmemcut", "powercut", "reorder"};

/* ---------------------------------------------------------------- shared with the child */

typedef struct cr_slot {
    uint64_t issued;     /* operations started (the next one's index) */
    uint64_t acked;      /* operations acknowledged */
    uint64_t acked_sync; /* operations up to the last acknowledged TKV_SYNC one */
} cr_slot;

typedef struct cr_wal {
    uint64_t number, synced; /* a WAL file and its size at its last fdatasync */
} cr_wal;

typedef struct cr_shared {
    int opened; /* the child's tkv_open returned */
    int failed; /* the child met an error: msg */
    char msg[600];
    int wal_lock; /* spin lock over wals (child only) */
    unsigned nwals;
    cr_wal wals[CR_MAX_WALS];
    cr_slot slot[CR_MAX_THREADS];
} cr_shared;

static cr_shared *g_sh;

/* ---------------------------------------------------------------- operations */

typedef struct cr_item {
    uint32_t key;
    int del;
} cr_item;

typedef struct cr_op {
    int n;     /* items */
    int batch; /* tkv_write of a batch (else one tkv_put / tkv_delete) */
    int sync;  /* TKV_SYNC */
    cr_item it[CR_MAX_ITEMS];
} cr_op;

/* cr_gen -- operation i of thread t: 50 % a put, 10 % a delete, 40 % a
 * batch of 2..8 items (a quarter deletes, sometimes the same key twice).
 * TKV_SYNC comes in phases of 256 operations of a thread: none, 2 %, 20 %
 * or half of them, so that WAL cuts find long unsynced tails too. */
static void cr_gen(uint64_t seed, unsigned t, uint64_t i, cr_op *o)
{
    static const uint32_t sync_rate[4] = {0, 20000, 200000, 500000};
    tu_rng r;
    tu_rng_init(&r, seed ^ tu_mix64(((uint64_t)t << 52) ^ i));
    uint64_t x = tu_rng_below(&r, 100);
    o->sync = tu_rng_chance(&r, sync_rate[tu_mix64(seed ^ 0x73796e63ull ^ ((uint64_t)t << 44) ^ (i >> 8)) % 4]);
    o->batch = x >= 60;
    o->n = o->batch ? (int)tu_rng_range(&r, 2, CR_MAX_ITEMS) : 1;
    for (int j = 0; j < o->n; j++) {
        if (j > 0 && tu_rng_chance(&r, 100000)) {
            o->it[j].key = o->it[j - 1].key;
            o->it[j].del = !o->it[j - 1].del;
            continue;
        }
        o->it[j].key = (uint32_t)tu_rng_below(&r, CR_KEYS);
        o->it[j].del = o->batch ? tu_rng_chance(&r, 250000) : x >= 50;
    }
}

static size_t cr_key(unsigned t, uint32_t k, char *buf) { return (size_t)sprintf(buf, "t%02u.%05u", t, k); }

/* cr_value -- the value item j of operation i of thread t puts at key k:
 * "t<t>.<k>|i<i>|j<j>|" and filler, 20..400 bytes, 3 % of them 3..5 KB. */
static size_t cr_value(uint64_t seed, unsigned t, uint32_t k, uint64_t i, unsigned j, char *buf)
{
    uint64_t h = tu_mix64(seed ^ ((uint64_t)t << 56) ^ ((uint64_t)k << 36) ^ (i * 16 + j));
    size_t n = (size_t)sprintf(buf, "t%02u.%05u|i%llu|j%u|", t, k, (unsigned long long)i, j);
    size_t len = h % 100 < 3 ? 3000 + (size_t)(h >> 40) % 2000 : 20 + (size_t)(h >> 40) % 380;
    for (size_t p = n; p < len; p++) {
        h = tu_mix64(h);
        buf[p] = (char)('!' + h % 90);
    }
    return len > n ? len : n;
}

/* A key's state in the model: 0 = absent, else the writer (i, j) + 1. */
static uint64_t cr_enc(uint64_t i, unsigned j) { return ((i << 4) | j) + 1; }

/* ---------------------------------------------------------------- child */

/* cr_child_fail -- records the first error of the child and ends it. */
static void cr_child_fail(int t, uint64_t i, int rc, const char *what)
{
    int expected = 0;
    if (__atomic_compare_exchange_n(&g_sh->failed, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        snprintf(g_sh->msg, sizeof g_sh->msg, "thread %d op %llu: %s = %d (%s): %s", t, (unsigned long long)i, what, rc,
                 tkv_strerror(rc), tkv_errmsg());
    _exit(3);
}

/* cr_note_synced -- records that WAL `number` was fdatasync'd at `size` bytes or more. */
static void cr_note_synced(uint64_t number, uint64_t size)
{
    while (__atomic_exchange_n(&g_sh->wal_lock, 1, __ATOMIC_ACQUIRE)) {}
    unsigned i = 0;
    while (i < g_sh->nwals && g_sh->wals[i].number != number) i++;
    if (i == g_sh->nwals && i < CR_MAX_WALS) {
        g_sh->wals[i].number = number;
        g_sh->wals[i].synced = 0;
        __atomic_store_n(&g_sh->nwals, i + 1, __ATOMIC_RELEASE);
    }
    if (i < CR_MAX_WALS && g_sh->wals[i].synced < size) g_sh->wals[i].synced = size;
    __atomic_store_n(&g_sh->wal_lock, 0, __ATOMIC_RELEASE);
}

/* cr_wal_sync_hook -- (powercut rounds) the I/O layer's hook before every
 * sync: for a WAL, everything written so far (its current size) is what
 * the fdatasync that follows makes durable. Never injects a fault. */
static int cr_wal_sync_hook(io_op op, const char *path, size_t len, void *arg)
{
    (void)len;
    (void)arg;
    size_t n = strlen(path);
    if (op != IO_OP_SYNC || n < 4 || strcmp(path + n - 4, ".wal") != 0) return 0;
    const char *base = strrchr(path, '/');
    struct stat st;
    if (stat(path, &st) == 0) cr_note_synced(strtoull(base ? base + 1 : path, NULL, 10), (uint64_t)st.st_size);
    return 0;
}

typedef struct cr_writer_arg {
    tkv_db *db;
    unsigned t;
    uint64_t seed;
} cr_writer_arg;

/* cr_do -- issues operation o of thread t (index i) with batch b. */
static int cr_do(tkv_db *db, tkv_batch *b, uint64_t seed, unsigned t, uint64_t i, const cr_op *o)
{
    char kb[32], vb[5200];
    unsigned flags = o->sync ? TKV_SYNC : 0;
    if (!o->batch) {
        size_t kn = cr_key(t, o->it[0].key, kb);
        if (o->it[0].del) return tkv_delete(db, kb, kn, flags);
        return tkv_put(db, kb, kn, vb, cr_value(seed, t, o->it[0].key, i, 0, vb), flags);
    }
    tkv_batch_clear(b);
    for (int j = 0; j < o->n; j++) {
        size_t kn = cr_key(t, o->it[j].key, kb);
        int rc = o->it[j].del ? tkv_batch_delete(b, kb, kn)
                              : tkv_batch_put(b, kb, kn, vb, cr_value(seed, t, o->it[j].key, i, (unsigned)j, vb));
        if (rc != TKV_OK) return rc;
    }
    return tkv_write(db, b, flags);
}

/* cr_writer -- one writer thread of the child: its operations, until killed. */
static void *cr_writer(void *arg)
{
    cr_writer_arg *a = arg;
    cr_slot *s = &g_sh->slot[a->t];
    tkv_batch *b = tkv_batch_new();
    if (!b) cr_child_fail((int)a->t, 0, TKV_NO_MEMORY, "tkv_batch_new");
    tu_rng maint;
    tu_rng_init(&maint, a->seed ^ 0x6d61696e74ull ^ s->issued);
    for (uint64_t i = s->issued;; i++) {
        cr_op o;
        cr_gen(a->seed, a->t, i, &o);
        __atomic_store_n(&s->issued, i + 1, __ATOMIC_RELEASE);
        int rc = cr_do(a->db, b, a->seed, a->t, i, &o);
        if (rc != TKV_OK)
            cr_child_fail((int)a->t, i, rc, o.batch ? "tkv_write" : o.it[0].del ? "tkv_delete" : "tkv_put");
        __atomic_store_n(&s->acked, i + 1, __ATOMIC_RELEASE);
        if (o.sync) __atomic_store_n(&s->acked_sync, i + 1, __ATOMIC_RELEASE);
        if (a->t != 0) continue;
        if (tu_rng_chance(&maint, 1500) && (rc = tkv_flush(a->db)) != TKV_OK) cr_child_fail(0, i, rc, "tkv_flush");
        if (tu_rng_chance(&maint, 60) && (rc = tkv_compact_range(a->db, NULL, 0, NULL, 0)) != TKV_OK)
            cr_child_fail(0, i, rc, "tkv_compact_range");
    }
    return NULL;
}

/* cr_child -- opens dir and runs the writers until the parent kills it. */
static void cr_child(const char *dir, int kind, unsigned nthreads, uint64_t seed)
{
    if (kind == CR_POWERCUT) io_set_fault_hook(cr_wal_sync_hook, NULL);
    tkv_options *o = tu_small_options();
    if (kind != CR_KILL && tkv_options_set(o, "pmem_mode", "crashsim") != TKV_OK)
        cr_child_fail(-1, 0, TKV_INVALID, "pmem_mode=crashsim");
    tkv_db *db = NULL;
    int rc = tkv_open(dir, o, &db);
    if (rc != TKV_OK) cr_child_fail(-1, 0, rc, "tkv_open");
    __atomic_store_n(&g_sh->opened, 1, __ATOMIC_RELEASE);
    static cr_writer_arg args[CR_MAX_THREADS];
    for (unsigned t = 0; t < nthreads; t++) {
        pthread_t th;
        args[t] = (cr_writer_arg){db, t, seed};
        if (pthread_create(&th, NULL, cr_writer, &args[t]) != 0)
            cr_child_fail((int)t, 0, TKV_NO_MEMORY, "pthread_create");
    }
    for (;;) pause();
}

/* ---------------------------------------------------------------- parent */

typedef struct cr_run {
    uint64_t seed;
    unsigned nthreads, nrounds;
    char *dir;
    uint64_t *state[CR_MAX_THREADS]; /* the model: CR_KEYS states per thread (cr_enc) */
    uint64_t next[CR_MAX_THREADS];   /* the next operation of each thread */
    /* totals for the report */
    unsigned rounds[CR_NKINDS], early, killed_in_open;
    uint64_t acked, acked_sync, inflight, inflight_survived, lost_unsynced, wal_bytes_cut, wals_cut, orphans;
    unsigned leak_checks;
    int kind; /* the current round's */
} cr_run;

/* cr_failf -- fails the test naming the seed, round and kept directory. */
static void cr_failf(const cr_run *R, unsigned round, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fail_msg("round %u (%s): %s\n  seed=%llu (TKV_TEST_SEED, or make crashtest SEED=...), threads=%u; directory "
             "kept: %s, as the kill left it: %s.before-reopen",
             round, cr_kind_names[R->kind], buf, (unsigned long long)R->seed, R->nthreads, R->dir, R->dir);
}

static unsigned env_unsigned(const char *name, unsigned dflt, unsigned lo, unsigned hi)
{
    const char *e = getenv(name);
    if (!e || !*e) return dflt;
    unsigned long v = strtoul(e, NULL, 10);
    return v < lo ? lo : v > hi ? hi : (unsigned)v;
}

/* cr_wal_baseline -- (powercut) every WAL present before the round counts
 * as synced in full: what the previous rounds' reopens verified stays. */
static void cr_wal_baseline(const cr_run *R)
{
    uint64_t *nums;
    size_t n = tu_list_numbered(R->dir, ".wal", &nums);
    for (size_t i = 0; i < n && g_sh->nwals < CR_MAX_WALS; i++) {
        char name[64];
        snprintf(name, sizeof name, "%06llu.wal", (unsigned long long)nums[i]);
        char *p = tu_path(R->dir, name);
        struct stat st;
        if (stat(p, &st) == 0) g_sh->wals[g_sh->nwals++] = (cr_wal){nums[i], (uint64_t)st.st_size};
        free(p);
    }
    free(nums);
}

/* cr_cut_wals -- (powercut) an OS crash whose write-back reached the WAL
 * files in order: one cut point in the WALs taken in turn (by number), at
 * or after the end of the last bytes an fdatasync covered (half the time
 * exactly there); the WAL holding it is cut there and the later ones lose
 * everything. (Write-back out of order: cr_reorder_wals.) */
static void cr_cut_wals(cr_run *R, tu_rng *r)
{
    uint64_t *nums;
    size_t n = tu_list_numbered(R->dir, ".wal", &nums);
    char **paths = calloc(n ? n : 1, sizeof *paths);
    uint64_t *size = calloc(n ? n : 1, sizeof *size), from_file = 0, from_off = 0, left = 0;
    assert_true(paths && size);
    for (size_t i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "%06llu.wal", (unsigned long long)nums[i]);
        paths[i] = tu_path(R->dir, name);
        struct stat st;
        size[i] = stat(paths[i], &st) == 0 ? (uint64_t)st.st_size : 0;
        for (unsigned w = 0; w < g_sh->nwals; w++)
            if (g_sh->wals[w].number == nums[i] && g_sh->wals[w].synced) {
                from_file = i;
                from_off = g_sh->wals[w].synced < size[i] ? g_sh->wals[w].synced : size[i];
            }
    }
    for (size_t i = from_file; i < n; i++) left += size[i] - (i == from_file ? from_off : 0);
    uint64_t cut = tu_rng_chance(r, 500000) ? 0 : tu_rng_below(r, left + 1); /* bytes kept past the synced end */
    for (size_t i = from_file; i < n; i++) {
        uint64_t keep = i == from_file ? from_off : 0, room = size[i] - keep;
        keep += cut < room ? cut : room;
        cut -= cut < room ? cut : room;
        if (keep < size[i]) {
            if (truncate(paths[i], (off_t)keep) != 0) fail_msg("truncate %s: %s", paths[i], strerror(errno));
            R->wal_bytes_cut += size[i] - keep;
            R->wals_cut++;
        }
    }
    for (size_t i = 0; i < n; i++) free(paths[i]);
    free(paths);
    free(size);
    free(nums);
}

static char *wc_wal(const char *dir, uint64_t number);
static void wc_zero(const char *path, uint64_t from, uint64_t to);

/* cr_reorder_wals -- (reorder) an OS crash whose write-back reached the
 * WALs' unsynced pages in any order, across files and within one. A WAL
 * present before the round was synced whole (the previous round's reopen
 * and close) and stays. Each WAL the child made keeps what its fdatasyncs
 * covered -- its synced frontier (the page cache holds the slot's last
 * value: exactly the size the last wal_sync covered; 0: never synced, the
 * header may go too, whole) -- and of the rest, independently per WAL: all of it
 * (a tenth of them); a cut at a random point; or a random range zeroed
 * (pages not written back while later ones were), half the time also cut
 * after it. Acknowledged
 * TKV_SYNC writes survive, and everything before them (lo = acked_sync);
 * the rest may be lost as a suffix only (the chain, docs/format-wal.md). */
static void cr_reorder_wals(cr_run *R, tu_rng *r)
{
    uint64_t *nums;
    size_t n = tu_list_numbered(R->dir, ".wal", &nums);
    for (size_t i = 0; i < n; i++) {
        int base = 0;
        for (unsigned w = 0; w < g_sh->nwals; w++) base |= g_sh->wals[w].number == nums[i];
        char *p = wc_wal(R->dir, nums[i]);
        struct stat st;
        wal_replay_stats h;
        if (base || stat(p, &st) != 0 || tu_rng_chance(r, 100000)) { /* a tenth of them whole */
            free(p);
            continue;
        }
        uint64_t size = (uint64_t)st.st_size, synced = 0, end = size;
        if (wal_replay(p, NULL, NULL, NULL, &h) == 0 && (h.version == WAL_V2 || h.version == WAL_V3)) {
            synced = h.frontier < size ? h.frontier : size;
            if (h.end > synced) end = h.end; /* a mapped log: zeros after its records */
        }
        if (end <= synced) {
            free(p);
            continue;
        }
        uint64_t keep = size;
        if (tu_rng_chance(r, 333333)) {
            keep = synced + tu_rng_below(r, end - synced + 1); /* (past `end` a mapped log's zeros) */
        } else {
            uint64_t room = end - synced, a = synced + tu_rng_below(r, room);
            /* the header is one write within one sector: it is lost whole
             * (all zero: an empty log, format-wal.md H1) or kept */
            if (a < WAL_V2_HEADER_SIZE) a = 0;
            uint64_t b = a + 1 + tu_rng_below(r, end - a < 20000 ? end - a : 20000);
            if (a == 0 && b < WAL_V2_HEADER_SIZE) b = WAL_V2_HEADER_SIZE;
            wc_zero(p, a, b);
            R->wal_bytes_cut += b - a;
            if (tu_rng_chance(r, 500000)) keep = b + tu_rng_below(r, size - b + 1);
        }
        if (keep < size) {
            if (truncate(p, (off_t)keep) != 0) fail_msg("truncate %s: %s", p, strerror(errno));
            R->wal_bytes_cut += size - keep;
        }
        R->wals_cut++;
        free(p);
    }
    free(nums);
}

/* cr_run_child -- forks the child of one round and SIGKILLs it `delay_ms`
 * after its open (or after the fork when early). */
static void cr_run_child(cr_run *R, unsigned round, int kind, int early, double delay_ms)
{
    memset(g_sh, 0, sizeof *g_sh);
    for (unsigned t = 0; t < R->nthreads; t++) g_sh->slot[t] = (cr_slot){R->next[t], R->next[t], R->next[t]};
    if (kind == CR_POWERCUT || kind == CR_REORDER) cr_wal_baseline(R);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) cr_child(R->dir, kind, R->nthreads, R->seed);
    double start = tu_now_ms(), kill_at = early ? start + delay_ms : -1;
    int status = 0, exited = 0;
    for (;;) {
        double now = tu_now_ms();
        if (kill_at < 0 && __atomic_load_n(&g_sh->opened, __ATOMIC_ACQUIRE)) kill_at = now + delay_ms;
        if (kill_at >= 0 && now >= kill_at) break;
        if (kill_at < 0 && now > start + 60000) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            cr_failf(R, round, "the child did not open the database within 60 s");
        }
        if (waitpid(pid, &status, WNOHANG) == pid) {
            exited = 1;
            break;
        }
        usleep(500);
    }
    if (!exited) {
        kill(pid, SIGKILL);
        assert_int_equal(waitpid(pid, &status, 0), pid);
    }
    if (g_sh->failed) cr_failf(R, round, "the child failed: %s", g_sh->msg);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
        cr_failf(R, round, "the child ended by itself (status 0x%x) instead of being killed", status);
    if (!g_sh->opened) R->killed_in_open++;
}

/* cr_read_db -- every entry of db into db_state (per thread, cr_enc), each
 * value checked byte for byte against the one its header names. */
static void cr_read_db(cr_run *R, unsigned round, tkv_db *db, uint64_t **db_state)
{
    tkv_iter *it = NULL;
    assert_int_equal(tkv_iter_new(db, NULL, &it), TKV_OK);
    char vb[5200];
    for (tkv_iter_seek_first(it); tkv_iter_valid(it); tkv_iter_next(it)) {
        size_t kn, vn;
        const char *k = tkv_iter_key(it, &kn), *v = tkv_iter_value(it, &vn);
        unsigned t, key, j;
        unsigned long long i;
        char head[64];
        size_t hn = vn < sizeof head - 1 ? vn : sizeof head - 1;
        memcpy(head, v, hn);
        head[hn] = 0;
        int used = 0;
        if (kn != 9 || sscanf(head, "t%02u.%05u|i%llu|j%u|%n", &t, &key, &i, &j, &used) != 4 || used == 0 ||
            memcmp(head, k, 9) != 0 || t >= R->nthreads || key >= CR_KEYS || j >= CR_MAX_ITEMS)
            cr_failf(R, round, "key %s has a value the test never wrote: %s", tu_hex(k, kn), tu_hex(v, vn));
        size_t en = cr_value(R->seed, t, key, i, j, vb);
        if (en != vn || memcmp(vb, v, vn) != 0)
            cr_failf(R, round, "key %s: value %s differs from the one op %llu item %u wrote (%s)", tu_hex(k, kn),
                     tu_hex(v, vn), i, j, tu_hex(vb, en));
        db_state[t][key] = cr_enc(i, j);
    }
    if (tkv_iter_status(it) != TKV_OK)
        cr_failf(R, round, "scan: %s: %s", tkv_strerror(tkv_iter_status(it)), tkv_errmsg());
    tkv_iter_free(it);
}

/* cr_apply -- applies operation i of thread t to st; with dbs, keeps *diff
 * = the number of keys where st and dbs differ. */
static void cr_apply(const cr_run *R, unsigned t, uint64_t i, uint64_t *st, const uint64_t *dbs, long *diff)
{
    cr_op o;
    cr_gen(R->seed, t, i, &o);
    for (int j = 0; j < o.n; j++) {
        uint32_t k = o.it[j].key;
        uint64_t nw = o.it[j].del ? 0 : cr_enc(i, (unsigned)j);
        if (dbs) *diff += (long)(nw != dbs[k]) - (long)(st[k] != dbs[k]);
        st[k] = nw;
    }
}

/* cr_survivor -- thread t's surviving prefix: the S in [lo, hi] whose
 * state equals the database's (the largest such S), applied to the model.
 * Fails the test if there is none. */
static uint64_t cr_survivor(cr_run *R, unsigned round, unsigned t, uint64_t lo, uint64_t hi, const uint64_t *dbs)
{
    uint64_t *st = R->state[t];
    for (uint64_t i = R->next[t]; i < lo; i++) cr_apply(R, t, i, st, NULL, NULL);
    uint64_t *at_lo = malloc(CR_KEYS * sizeof *at_lo);
    assert_non_null(at_lo);
    memcpy(at_lo, st, CR_KEYS * sizeof *st);
    long diff = 0, best_diff;
    for (uint32_t k = 0; k < CR_KEYS; k++) diff += st[k] != dbs[k];
    long long found = diff == 0 ? (long long)lo : -1;
    uint64_t best_at = lo;
    best_diff = diff;
    for (uint64_t i = lo; i < hi; i++) {
        cr_apply(R, t, i, st, dbs, &diff);
        if (diff == 0) found = (long long)(i + 1);
        if (diff < best_diff) best_diff = diff, best_at = i + 1;
    }
    if (found < 0) {
        uint32_t k = 0;
        while (k < CR_KEYS && at_lo[k] == dbs[k]) k++;
        cr_failf(R, round,
                 "thread %u: no prefix of its operations matches the database: acked %llu, acked_sync %llu, "
                 "issued %llu, must keep %llu; closest: after %llu ops %ld keys differ; after %llu ops key %u is "
                 "%s%llu/%llu in the database and %s%llu/%llu in the model",
                 t, (unsigned long long)g_sh->slot[t].acked, (unsigned long long)g_sh->slot[t].acked_sync,
                 (unsigned long long)hi, (unsigned long long)lo, (unsigned long long)best_at, best_diff,
                 (unsigned long long)lo, k, k < CR_KEYS && dbs[k] ? "op/item " : "absent ",
                 k < CR_KEYS && dbs[k] ? (unsigned long long)((dbs[k] - 1) >> 4) : 0ull,
                 k < CR_KEYS && dbs[k] ? (unsigned long long)((dbs[k] - 1) & 15) : 0ull,
                 k < CR_KEYS && at_lo[k] ? "op/item " : "absent ",
                 k < CR_KEYS && at_lo[k] ? (unsigned long long)((at_lo[k] - 1) >> 4) : 0ull,
                 k < CR_KEYS && at_lo[k] ? (unsigned long long)((at_lo[k] - 1) & 15) : 0ull);
    }
    memcpy(st, at_lo, CR_KEYS * sizeof *st);
    for (uint64_t i = lo; i < (uint64_t)found; i++) cr_apply(R, t, i, st, NULL, NULL);
    free(at_lo);
    return (uint64_t)found;
}

/* cr_model -- the model as a tu_model (every thread's keys). */
static tu_model *cr_model(const cr_run *R)
{
    tu_model *m = tu_model_new();
    char kb[32], vb[5200];
    for (unsigned t = 0; t < R->nthreads; t++)
        for (uint32_t k = 0; k < CR_KEYS; k++) {
            uint64_t s = R->state[t][k];
            if (!s) continue;
            size_t kn = cr_key(t, k, kb);
            tu_model_put(m, kb, kn, vb, cr_value(R->seed, t, k, (s - 1) >> 4, (unsigned)((s - 1) & 15), vb));
        }
    return m;
}

/* cr_verify -- the reopened database against the round's acknowledgements. */
static void cr_verify(cr_run *R, unsigned round, int kind, tkv_db *db)
{
    uint64_t *dbs[CR_MAX_THREADS];
    for (unsigned t = 0; t < R->nthreads; t++) {
        dbs[t] = calloc(CR_KEYS, sizeof *dbs[t]);
        assert_non_null(dbs[t]);
    }
    cr_read_db(R, round, db, dbs);
    for (unsigned t = 0; t < R->nthreads; t++) {
        const cr_slot *s = &g_sh->slot[t];
        uint64_t lo = kind == CR_POWERCUT || kind == CR_REORDER ? s->acked_sync : s->acked;
        uint64_t got = cr_survivor(R, round, t, lo, s->issued, dbs[t]);
        R->acked += s->acked - R->next[t];
        R->acked_sync += s->acked_sync - R->next[t];
        if (s->issued > s->acked) {
            R->inflight++;
            R->inflight_survived += got == s->issued;
        }
        if (got < s->acked) R->lost_unsynced += s->acked - got;
        R->next[t] = s->issued;
        free(dbs[t]);
    }
    tu_model *m = cr_model(R);
    char what[96];
    snprintf(what, sizeof what, "round %u (%s), seed %llu, dir %s", round, cr_kind_names[kind],
             (unsigned long long)R->seed, R->dir);
    tu_check_db(db, NULL, m, what);
    tu_model_free(m);
}

/* cr_check_leaks -- after a flush and once background work is quiet: every
 * pool page in use belongs to a row, and the .sst files on disk are the
 * version's (tkv.stats level.L*: files=). */
static void cr_check_leaks(cr_run *R, unsigned round, tkv_db *db)
{
    int rc = tkv_flush(db);
    if (rc != TKV_OK) cr_failf(R, round, "tkv_flush after reopen: %s: %s", tkv_strerror(rc), tkv_errmsg());
    size_t on_disk = 0, in_version = 0;
    for (int tries = 0; tries < 50; tries++) { /* a job may start between the two counts: retry */
        if (!tu_wait_quiet(db, 60000)) cr_failf(R, round, "background work still running 60 s after the reopen");
        uint64_t *ssts;
        on_disk = tu_list_numbered(R->dir, ".sst", &ssts);
        free(ssts);
        char *s = tkv_property(db, "tkv.stats");
        assert_non_null(s);
        in_version = 0;
        for (char *p = s; (p = strstr(p, "level.L")); p++) in_version += strtoul(strstr(p, " files=") + 7, NULL, 10);
        tkv_free(s);
        if (on_disk == in_version) break;
        usleep(20000);
    }
    if (on_disk != in_version)
        cr_failf(R, round, "%zu .sst files on disk, %zu in the version (a leaked or a missing file)", on_disk,
                 in_version);
    tu_check_pool_pages(db, "after the reopen");
    R->leak_checks++;
}

/* cr_keep_copy -- copies the directory as the kill left it to
 * <dir>.before-reopen (replacing the previous round's), for a failure. */
static void cr_keep_copy(const cr_run *R)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "rm -rf '%s.before-reopen' && cp -a --sparse=always '%s' '%s.before-reopen'", R->dir,
             R->dir, R->dir);
    if (system(cmd) != 0) fail_msg("%s failed", cmd);
}

/* cr_round -- one round: child, kill, (WAL cut), reopen, verify, close. */
static void cr_round(cr_run *R, unsigned round, tu_rng *r)
{
    uint64_t x = tu_rng_below(r, 100);
    int kind = round < CR_NKINDS ? (int)round
               : x < 55          ? CR_KILL
               : x < 70          ? CR_PMEMCUT
               : x < 85          ? CR_POWERCUT
                                 : CR_REORDER;
    int early = tu_rng_chance(r, 200000);
    double delay = early                      ? (double)tu_rng_range(r, 0, 20)
                   : tu_rng_chance(r, 100000) ? (double)tu_rng_range(r, 150, 600)
                                              : (double)tu_rng_range(r, 5, 150);
    R->rounds[kind]++;
    R->kind = kind;
    R->early += early;
    cr_run_child(R, round, kind, early, delay);
    if (kind == CR_POWERCUT) cr_cut_wals(R, r);
    if (kind == CR_REORDER) cr_reorder_wals(R, r);

    cr_keep_copy(R);
    uint64_t *before, *after;
    size_t nbefore = tu_list_numbered(R->dir, ".sst", &before);
    tkv_options *o = tu_small_options();
    tkv_db *db = NULL;
    int rc = tkv_open(R->dir, o, &db);
    tkv_options_free(o);
    if (rc != TKV_OK)
        cr_failf(R, round, "reopen after the %s: %s: %s", cr_kind_names[kind], tkv_strerror(rc), tkv_errmsg());
    size_t nafter = tu_list_numbered(R->dir, ".sst", &after);
    R->orphans += tu_count_missing(before, nbefore, after, nafter);
    free(before);
    free(after);

    cr_verify(R, round, kind, db);
    if (round % 4 == 3 || round + 1 == R->nrounds) cr_check_leaks(R, round, db);
    if (round + 1 == R->nrounds) {
        char *levels = tkv_property(db, "tkv.levels");
        fprintf(stderr, "# tkv.levels at the end:\n%s", levels ? levels : "(NULL)\n");
        tkv_free(levels);
    }
    rc = tkv_close(db);
    if (rc != TKV_OK) cr_failf(R, round, "close: %s: %s", tkv_strerror(rc), tkv_errmsg());
}

static void cr_report(const cr_run *R, unsigned rounds, double ms)
{
    fprintf(stderr,
            "# crash_threads: %u rounds (kill %u, pmemcut %u, powercut %u, reorder %u; %u killed 0-20 ms after the "
            "fork, %u "
            "before the open returned) in %.1f s, %u threads: %llu ops acknowledged (%llu up to a sync one), "
            "%llu in flight at the kill (%llu survived), %llu acknowledged non-sync ops lost to WAL cuts "
            "(%llu WAL cuts, %llu bytes); %llu SSTs of unfinished jobs removed by recovery; %u leak checks\n",
            rounds, R->rounds[CR_KILL], R->rounds[CR_PMEMCUT], R->rounds[CR_POWERCUT], R->rounds[CR_REORDER], R->early,
            R->killed_in_open, ms / 1000, R->nthreads, (unsigned long long)R->acked, (unsigned long long)R->acked_sync,
            (unsigned long long)R->inflight, (unsigned long long)R->inflight_survived,
            (unsigned long long)R->lost_unsynced, (unsigned long long)R->wals_cut, (unsigned long long)R->wal_bytes_cut,
            (unsigned long long)R->orphans, R->leak_checks);
}

static void crash_threads(void **state)
{
    (void)state;
    cr_run R = {0};
    R.seed = tu_seed();
    R.nrounds = env_unsigned("TKV_CRASHTEST_ROUNDS", 6, 1, 10000000);
    R.nthreads = env_unsigned("TKV_CRASHTEST_THREADS", 4, 1, CR_MAX_THREADS);
    R.dir = tu_tmpdir("crash-threads");
    fprintf(stderr, "# crash_threads: %u rounds, %u threads, seed %llu, directory %s\n", R.nrounds, R.nthreads,
            (unsigned long long)R.seed, R.dir);
    g_sh = mmap(NULL, sizeof *g_sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(g_sh != MAP_FAILED);
    for (unsigned t = 0; t < R.nthreads; t++) {
        R.state[t] = calloc(CR_KEYS, sizeof *R.state[t]);
        assert_non_null(R.state[t]);
    }
    tu_rng r;
    tu_rng_init(&r, R.seed ^ 0x6372617368ull);
    double t0 = tu_now_ms();
    for (unsigned round = 0; round < R.nrounds; round++) {
        cr_round(&R, round, &r);
        if ((round + 1) % 100 == 0 && round + 1 < R.nrounds) cr_report(&R, round + 1, tu_now_ms() - t0);
    }
    cr_report(&R, R.nrounds, tu_now_ms() - t0);
    assert_true(R.acked >= R.nrounds); /* the child got to write */
    for (unsigned t = 0; t < R.nthreads; t++) free(R.state[t]);
    munmap(g_sh, sizeof *g_sh);
    assert_int_equal(tkv_destroy(R.dir), TKV_OK);
    char *copy = malloc(strlen(R.dir) + 32);
    assert_non_null(copy);
    sprintf(copy, "%s.before-reopen", R.dir);
    tu_tmpdir_free(copy);
    tu_tmpdir_free(R.dir);
}

/* ---------------------------------------------------------------- WAL switch, then a sync write */

/* The hook of wal_switch_sync: notes WAL sync sizes (cr_wal_sync_hook) and
 * holds the flush thread at its SST's open while `hold` is set, so the
 * switched-away WAL stays the only copy of its memtable's writes. */
static int g_hold;
static int ws_hook(io_op op, const char *path, size_t len, void *arg)
{
    if (op == IO_OP_OPEN && tu_is_sst(path) && tu_thread_is("tkv-flush"))
        while (__atomic_load_n(&g_hold, __ATOMIC_ACQUIRE)) usleep(1000);
    return cr_wal_sync_hook(op, path, len, arg);
}

/* wal_switch_sync -- non-sync writes fill a memtable, which switches to a new
 * WAL (its flush held back), then one TKV_SYNC write. An OS crash at that
 * moment keeps of each WAL only what was fdatasync'd: the sync write must
 * come back, and with it every write acknowledged before it, which sit in the
 * previous WAL (a sync write makes earlier writes durable too: recovery
 * replays the WALs in order, so a lost earlier WAL tail would leave a hole
 * behind the sync write). The "crash" copies the directory while the
 * database is open and cuts the copy's WALs back to their synced sizes. */
static void wal_switch_sync(void **state)
{
    (void)state;
    g_sh = mmap(NULL, sizeof *g_sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(g_sh != MAP_FAILED);
    memset(g_sh, 0, sizeof *g_sh);
    char *dir = tu_tmpdir("wal-switch-sync"), *copy = tu_tmpdir("wal-switch-sync-copy");
    tkv_options *o = tu_small_options();
    assert_int_equal(tkv_options_set(o, "l0", "sst"), TKV_OK);
    __atomic_store_n(&g_hold, 1, __ATOMIC_RELEASE);
    io_set_fault_hook(ws_hook, NULL);
    tkv_db *db = tu_open_ok(dir, o);
    tu_model *m = tu_model_new();
    char kb[32], vb[300];
    unsigned n = 0;
    while (tu_prop_u64(db, "tkv.num-immutable-mem", "") == 0) {
        size_t kn = (size_t)sprintf(kb, "k%06u", n), vn = (size_t)sprintf(vb, "%0200u", n);
        assert_int_equal(tkv_put(db, kb, kn, vb, vn, 0), TKV_OK);
        tu_model_put(m, kb, kn, vb, vn);
        assert_true(++n < 100000);
    }
    assert_int_equal(tkv_put(db, "synced", 6, "yes", 3, TKV_SYNC), TKV_OK);
    tu_model_put(m, "synced", 6, "yes", 3);

    char cmd[8192];
    snprintf(cmd, sizeof cmd, "cp -a '%s/.' '%s/'", dir, copy);
    assert_int_equal(system(cmd), 0);
    uint64_t *nums;
    size_t nw = tu_list_numbered(copy, ".wal", &nums);
    assert_int_equal(nw, 2); /* the switched-away WAL and the new one */
    for (size_t i = 0; i < nw; i++) {
        uint64_t synced = 0;
        for (unsigned w = 0; w < g_sh->nwals; w++)
            if (g_sh->wals[w].number == nums[i]) synced = g_sh->wals[w].synced;
        char name[64];
        snprintf(name, sizeof name, "%06llu.wal", (unsigned long long)nums[i]);
        char *p = tu_path(copy, name);
        assert_int_equal(truncate(p, (off_t)synced), 0);
        free(p);
    }
    free(nums);
    __atomic_store_n(&g_hold, 0, __ATOMIC_RELEASE);
    tu_close_ok(db);
    io_set_fault_hook(NULL, NULL);

    db = tu_open_ok(copy, o);
    tu_check_db(db, NULL, m, "after an OS crash right after a sync write behind a WAL switch");
    tu_close_ok(db);
    tu_model_free(m);
    tkv_options_free(o);
    munmap(g_sh, sizeof *g_sh);
    tu_tmpdir_free(copy);
    tu_tmpdir_free(dir);
}

/* ---------------------------------------------------------------- the WAL chain */

typedef struct wc_offs {
    uint64_t off[8192];
    size_t n;
} wc_offs;

/* wc_note -- wal_record_fn: each record's offset. */
static int wc_note(void *arg, const uint8_t *payload, size_t n, uint64_t offset)
{
    (void)payload;
    (void)n;
    wc_offs *o = arg;
    if (o->n < sizeof o->off / sizeof o->off[0]) o->off[o->n++] = offset;
    return 0;
}

/* wc_put -- puts <prefix><i> = 200 bytes of i (into m too, if given). */
static void wc_put(tkv_db *db, tu_model *m, const char *prefix, unsigned i, unsigned flags)
{
    char kb[32], vb[300];
    size_t kn = (size_t)sprintf(kb, "%s%06u", prefix, i), vn = (size_t)sprintf(vb, "%0200u", i);
    assert_int_equal(tkv_put(db, kb, kn, vb, vn, flags), TKV_OK);
    if (m) tu_model_put(m, kb, kn, vb, vn);
}

/* wc_copy -- dst becomes a copy of src (an open database's directory: its
 * files as the page cache holds them). */
static void wc_copy(const char *src, const char *dst)
{
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s' && cp -a '%s/.' '%s/'", dst, dst, src, dst);
    assert_int_equal(system(cmd), 0);
}

/* wc_wal -- dir's WAL `number` (malloc'd path). */
static char *wc_wal(const char *dir, uint64_t number)
{
    char name[64];
    snprintf(name, sizeof name, "%06llu.wal", (unsigned long long)number);
    return tu_path(dir, name);
}

/* wc_zero -- zeros bytes [from, to) of path (pages that never reached the disk). */
static void wc_zero(const char *path, uint64_t from, uint64_t to)
{
    int fd = open(path, O_WRONLY);
    assert_true(fd >= 0);
    static const uint8_t z[4096];
    for (uint64_t at = from; at < to;) {
        size_t k = to - at < sizeof z ? (size_t)(to - at) : sizeof z;
        assert_int_equal(pwrite(fd, z, k, (off_t)at), (ssize_t)k);
        at += k;
    }
    close(fd);
}

/* wc_power_cut -- every WAL of dir cut back to the size its last fdatasync
 * covered (g_sh, noted by ws_hook; 0 if never synced). */
static void wc_power_cut(const char *dir)
{
    uint64_t *nums;
    size_t n = tu_list_numbered(dir, ".wal", &nums);
    for (size_t i = 0; i < n; i++) {
        uint64_t synced = 0;
        for (unsigned w = 0; w < g_sh->nwals; w++)
            if (g_sh->wals[w].number == nums[i]) synced = g_sh->wals[w].synced;
        char *p = wc_wal(dir, nums[i]);
        struct stat st;
        assert_int_equal(stat(p, &st), 0);
        if ((uint64_t)st.st_size > synced) assert_int_equal(truncate(p, (off_t)synced), 0);
        free(p);
    }
    free(nums);
}

enum { WC_LOST_TAIL, WC_HOLE, WC_CORRUPT };
static const char *const wc_names[] = {"lost tail", "hole past the frontier", "damage below the frontier"};

/* wal_chain_case -- non-sync puts k0, k1, ... fill the first WAL (N) until
 * a memtable switch starts WAL N+1 (the flush held back, so N stays the
 * only copy of its memtable), 50 more go to N+1. The "crash" copies the
 * directory and damages N from record `keep` on, N+1 left whole:
 *   WC_LOST_TAIL  N cut inside record keep (its last pages never written back);
 *   WC_HOLE       record keep zeroed, the records after it intact (pages
 *                 written back out of order; a sync put at record 5 puts
 *                 the frontier before the hole);
 *   WC_CORRUPT    the same hole below N's frontier (every tenth put syncs),
 *                 opened with paranoid_checks=0 (with 1, the open fails).
 * Reopened, the database must hold exactly k0 .. k(keep-1): none of N+1's
 * writes (their WAL names N at its full size, which N no longer reaches),
 * and it opens. N+1 is deleted. Then sync puts s0..s19 into the reopened
 * database's new WAL, and a power cut (every WAL cut to its last synced
 * size: the log replayed at open was synced then): opened again, and once
 * more, the same prefix and every sync put. */
static void wal_chain_case(int mode)
{
    g_sh = mmap(NULL, sizeof *g_sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(g_sh != MAP_FAILED);
    memset(g_sh, 0, sizeof *g_sh);
    char *dir = tu_tmpdir("wal-chain"), *copy = tu_tmpdir("wal-chain-copy"), *cut = tu_tmpdir("wal-chain-cut");
    tkv_options *o = tu_small_options();
    assert_int_equal(tkv_options_set(o, "l0", "sst"), TKV_OK);
    __atomic_store_n(&g_hold, 1, __ATOMIC_RELEASE);
    io_set_fault_hook(ws_hook, NULL);
    tkv_db *db = tu_open_ok(dir, o);
    unsigned n = 0;
    while (tu_prop_u64(db, "tkv.num-immutable-mem", "") == 0) {
        int sync = (mode == WC_HOLE && n == 5) || (mode == WC_CORRUPT && n % 10 == 9);
        wc_put(db, NULL, "k", n++, sync ? TKV_SYNC : 0);
        assert_true(n < 100000);
    }
    unsigned in_old = n - 1; /* the last put switched: it is N+1's first record */
    for (int i = 0; i < 50; i++) wc_put(db, NULL, "k", n++, 0);
    assert_int_equal(tu_prop_u64(db, "tkv.num-immutable-mem", ""), 1);
    wc_copy(dir, copy);
    __atomic_store_n(&g_hold, 0, __ATOMIC_RELEASE);
    tu_close_ok(db);

    uint64_t *nums;
    assert_int_equal(tu_list_numbered(copy, ".wal", &nums), 2); /* N and N+1 */
    char *old = wc_wal(copy, nums[0]), *newer = wc_wal(copy, nums[1]);
    wc_offs *offs = calloc(1, sizeof *offs);
    assert_non_null(offs);
    wal_replay_stats rs;
    assert_int_equal(wal_replay(old, NULL, wc_note, offs, &rs), 0);
    assert_int_equal(offs->n, in_old);
    uint64_t old_size = rs.end, frontier = rs.frontier;
    assert_int_equal(wal_replay(newer, NULL, NULL, NULL, &rs), 0);
    assert_int_equal(rs.records, 51);
    assert_int_equal(rs.prev_number, nums[0]); /* the chain: N+1 names N at its size at the switch */
    assert_int_equal(rs.prev_size, old_size);
    size_t keep = in_old / 2;
    assert_true(keep > 6 && keep + 1 < in_old);
    if (mode == WC_LOST_TAIL) assert_int_equal(truncate(old, (off_t)(offs->off[keep] + 20)), 0);
    else wc_zero(old, offs->off[keep] + 10, offs->off[keep + 1] + 10);
    if (mode == WC_HOLE) assert_true(frontier == offs->off[6] && offs->off[keep] >= frontier);
    if (mode == WC_CORRUPT) assert_true(offs->off[keep] < frontier);
    tu_model *m = tu_model_new();
    for (unsigned i = 0; i < keep; i++) {
        char kb[32], vb[300];
        size_t kn = (size_t)sprintf(kb, "k%06u", i), vn = (size_t)sprintf(vb, "%0200u", i);
        tu_model_put(m, kb, kn, vb, vn);
    }
    if (mode == WC_CORRUPT) { /* paranoid_checks=1 (the default) refuses it */
        tkv_db *x = NULL;
        assert_int_equal(tkv_open(copy, o, &x), TKV_CORRUPTION);
        assert_non_null(strstr(tkv_errmsg(), "frontier"));
        assert_int_equal(tkv_options_set(o, "paranoid_checks", "0"), TKV_OK);
    }

    char *report = NULL; /* tkv_verify reads it as recovery will */
    assert_int_equal(tkv_verify(copy, o, &report), mode == WC_CORRUPT ? TKV_CORRUPTION : TKV_OK);
    assert_non_null(report);
    if (mode != WC_CORRUPT) assert_non_null(strstr(report, "is not replayed: its predecessor's intact records end"));
    if (mode == WC_HOLE) assert_non_null(strstr(report, "torn tail with a hole"));
    tkv_free(report);

    char what[160];
    snprintf(what, sizeof what, "%s: the older WAL damaged, the newer one whole", wc_names[mode]);
    memset(g_sh, 0, sizeof *g_sh); /* from here on, the syncs of the copy */
    __atomic_store_n(&g_hold, 1, __ATOMIC_RELEASE);
    db = tu_open_ok(copy, o);
    tu_check_db(db, NULL, m, what);
    assert_int_equal(tu_prop_u64(db, "tkv.stats", "dropped_logs="), 1);
    assert_true(tu_prop_u64(db, "tkv.stats", "dropped_bytes=") >= rs.end);
    struct stat sb;
    assert_int_equal(stat(newer, &sb), -1); /* deleted: no later open can replay it */
    assert_int_equal(stat(old, &sb), 0);
    for (unsigned i = 0; i < 20; i++) wc_put(db, m, "s", i, TKV_SYNC);
    wc_copy(copy, cut);
    wc_power_cut(cut);
    __atomic_store_n(&g_hold, 0, __ATOMIC_RELEASE);
    tu_close_ok(db);
    io_set_fault_hook(NULL, NULL);

    snprintf(what, sizeof what, "%s: a power cut after sync writes that followed the recovery", wc_names[mode]);
    db = tu_open_ok(cut, o);
    tu_check_db(db, NULL, m, what);
    assert_int_equal(tu_prop_u64(db, "tkv.stats", "dropped_logs="), 0);
    tu_close_reopen_check(db, cut, o, m, what);
    snprintf(what, sizeof what, "%s: opened again after a clean close", wc_names[mode]);
    db = tu_open_ok(copy, o);
    tu_check_db(db, NULL, m, what);
    tu_close_ok(db);

    tu_model_free(m);
    free(offs);
    free(old);
    free(newer);
    free(nums);
    tkv_options_free(o);
    munmap(g_sh, sizeof *g_sh);
    tu_tmpdir_free(cut);
    tu_tmpdir_free(copy);
    tu_tmpdir_free(dir);
}

static void wal_chain_lost_tail(void **state)
{
    (void)state;
    wal_chain_case(WC_LOST_TAIL);
}

static void wal_chain_hole(void **state)
{
    (void)state;
    wal_chain_case(WC_HOLE);
}

static void wal_chain_corrupt(void **state)
{
    (void)state;
    wal_chain_case(WC_CORRUPT);
}

int main(void)
{
    tu_seed();
    wal_set_frontier_step(0); /* each WAL's frontier is what its last wal_sync covered (cr_reorder_wals, wal_chain_*) */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(wal_switch_sync),   cmocka_unit_test(wal_chain_lost_tail), cmocka_unit_test(wal_chain_hole),
        cmocka_unit_test(wal_chain_corrupt), cmocka_unit_test(crash_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
