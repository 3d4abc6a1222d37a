// SPDX-License-Identifier: Apache-2.0
/*
 * test_crash.c -- kill -9 and verify. A forked child opens the database and
 * writes (single puts and small batches with deletes and range deletions of
 * a few keys; keys "k%08llu", values
 * derived from key, round and operation index), reporting each acknowledged
 * operation's index to the parent through a pipe. The parent SIGKILLs it at a
 * random moment, reopens the database and checks that
 *   - every acknowledged operation is present with the right value,
 *   - what survived is exactly a prefix of the operations issued (the state
 *     equals the model after operations 0..P for the largest P seen, so no
 *     operation i+1 without i, and batches all-or-nothing).
 * Rounds continue on the same directory with new keys and overwrites. The
 * child also calls tkv_flush / tkv_compact_range now and then, so that kills
 * land in flushes and compactions too.
 *
 * Cases: crash_sync (writes with TKV_SYNC; 20 rounds x TKV_TEST_SCALE, some
 * killed while the child is still opening/recovering) and crash_nosync (30
 * rounds x scale, writes without TKV_SYNC: a process crash must not lose
 * acknowledged writes, as they reached the WAL file before the call returned),
 * both with the default l0=matrix and a 16M pool; crash_nosync_sst (l0=sst)
 * and crash_nosync_full_pool (a 1M pool: flushes wait for columns).
 * tu_small_options gives 64K memtables, 256K SSTs and a 512K L1 (x4 per
 * level), so background flushes and L0->L1 and deep compactions are running
 * when the kills land; the parent counts the SST files that recovery removes
 * (outputs of uncommitted jobs) to show it.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#define MARK_OPEN         0xffffffffu /* child: database open, writing starts */
#define MARK_ERR          0xfffffffeu /* child: an error follows (status, then op index) */
#define MAX_ITEMS         8
#define MAX_OPS_PER_ROUND 2000000u

typedef struct item {
    uint64_t key;
    int del;       /* 1: a delete; 2: a range deletion of keys [key, key + span) */
    unsigned span; /* for a range deletion: 1..8 */
} item;

typedef struct op {
    int n;
    item it[MAX_ITEMS];
} op;

/* gen_op -- the next operation of a round: 70 % a single put (a new key or an
 * overwrite), 30 % a batch of 2..6 items (new keys, overwrites, deletes, range
 * deletions of 1..8 keys, the same key twice). The last item of every
 * operation is a put of a new key, so the newest surviving operation is
 * always visible through its value. */
static void gen_op(tu_rng *r, uint64_t *next_key, op *o)
{
    if (*next_key == 0 || tu_rng_chance(r, 700000)) {
        o->n = 1;
        o->it[0].del = 0;
        o->it[0].key = (*next_key == 0 || tu_rng_chance(r, 500000)) ? (*next_key)++ : tu_rng_below(r, *next_key);
        return;
    }
    o->n = (int)tu_rng_range(r, 2, 6);
    for (int j = 0; j < o->n - 1; j++) {
        if (j > 0 && tu_rng_chance(r, 150000)) {
            o->it[j].key = o->it[j - 1].key;
            o->it[j].del = tu_rng_chance(r, 500000);
            continue;
        }
        uint64_t x = tu_rng_below(r, 10);
        o->it[j].del = x >= 8;
        o->it[j].key = x < 4 ? (*next_key)++ : tu_rng_below(r, *next_key);
        if (x == 9 && tu_rng_chance(r, 300000)) { /* a range deletion: older keys, never the op's new one */
            o->it[j].del = 2;
            o->it[j].span = (unsigned)tu_rng_range(r, 1, 8);
        }
    }
    o->it[o->n - 1].del = 0;
    o->it[o->n - 1].key = (*next_key)++;
}

static size_t key_for(uint64_t k, char *buf) { return (size_t)sprintf(buf, "k%08llu", (unsigned long long)k); }

/* value_for -- "k........|r<round>|i<op>|" followed by filler bytes derived
 * from (key, round, op, item); 16..500 bytes, sometimes ~4 KB. */
static size_t value_for(uint64_t k, uint32_t round, uint32_t i, int j, char *buf)
{
    uint64_t h = tu_mix64(k * 1000003u ^ ((uint64_t)round << 40) ^ ((uint64_t)i << 8) ^ (uint64_t)j);
    size_t n = (size_t)sprintf(buf, "k%08llu|r%u|i%u|", (unsigned long long)k, round, i);
    size_t len = (h % 100) < 5 ? 4000 + (size_t)(h >> 40) % 100 : 16 + (size_t)(h >> 40) % 485;
    for (size_t p = n; p < len; p++) {
        h = tu_mix64(h);
        buf[p] = (char)(' ' + h % 94);
    }
    return len > n ? len : n;
}

/* apply_model -- applies operation o (index i of `round`) to model m. */
static void apply_model(tu_model *m, const op *o, uint32_t round, uint32_t i)
{
    char kb[32], vb[4200];
    for (int j = 0; j < o->n; j++) {
        size_t kn = key_for(o->it[j].key, kb);
        if (o->it[j].del == 2) {
            char eb[32];
            size_t en = key_for(o->it[j].key + o->it[j].span, eb);
            tu_model_del_range(m, kb, kn, eb, en);
        } else if (o->it[j].del) {
            tu_model_del(m, kb, kn);
        } else {
            tu_model_put(m, kb, kn, vb, value_for(o->it[j].key, round, i, j, vb));
        }
    }
}

/* ---------------------------------------------------------------- child */

static void report(int fd, uint32_t x)
{
    while (write(fd, &x, sizeof x) < 0 && errno == EINTR) {}
}

static void child_fail(int fd, int rc, uint32_t i)
{
    report(fd, MARK_ERR);
    report(fd, (uint32_t)rc);
    report(fd, i);
    _exit(3);
}

/* child_main -- opens dir, then issues the round's operations until killed. */
static void child_main(const char *dir, uint32_t round, uint64_t gen_seed, uint64_t next_key, unsigned flags, int fd)
{
    tkv_options *o = tu_small_options(); /* the same options as the parent's */
    tkv_db *db = NULL;
    tkv_batch *b = tkv_batch_new();
    if (!b) child_fail(fd, TKV_NO_MEMORY, 0);
    int rc = tkv_open(dir, o, &db);
    if (rc != TKV_OK) child_fail(fd, rc, 0);
    report(fd, MARK_OPEN);
    tu_rng r, maint; /* maint: flush/compaction timing, kept apart from the op sequence */
    tu_rng_init(&r, gen_seed);
    tu_rng_init(&maint, ~gen_seed);
    char kb[32], vb[4200];
    for (uint32_t i = 0; i < MAX_OPS_PER_ROUND; i++) {
        op w;
        gen_op(&r, &next_key, &w);
        if (w.n == 1) {
            size_t kn = key_for(w.it[0].key, kb);
            rc = tkv_put(db, kb, kn, vb, value_for(w.it[0].key, round, i, 0, vb), flags);
        } else {
            tkv_batch_clear(b);
            for (int j = 0; j < w.n; j++) {
                size_t kn = key_for(w.it[j].key, kb);
                char eb[32];
                rc = w.it[j].del == 2 ? tkv_batch_delete_range(b, kb, kn, eb, key_for(w.it[j].key + w.it[j].span, eb))
                     : w.it[j].del    ? tkv_batch_delete(b, kb, kn)
                                      : tkv_batch_put(b, kb, kn, vb, value_for(w.it[j].key, round, i, j, vb));
                if (rc != TKV_OK) child_fail(fd, rc, i);
            }
            rc = tkv_write(db, b, flags);
        }
        if (rc != TKV_OK) child_fail(fd, rc, i);
        report(fd, i);
        /* now and then force a flush or a compaction, so kills land in them */
        if (tu_rng_chance(&maint, 10000) && (rc = tkv_flush(db)) != TKV_OK) child_fail(fd, rc, i);
        if (tu_rng_chance(&maint, 3000) && (rc = tkv_compact_range(db, NULL, 0, NULL, 0)) != TKV_OK)
            child_fail(fd, rc, i);
    }
    tkv_close(db);
    _exit(0);
}

/* ---------------------------------------------------------------- parent */

typedef struct round_result {
    long long acked;     /* last acknowledged op index, -1 if none */
    int opened;          /* the child reported MARK_OPEN */
    int err, err_status; /* the child reported an error */
    uint32_t err_op;
} round_result;

/* consume -- handles the 32-bit records in buf. */
static void consume(round_result *res, const uint32_t *rec, size_t n, int *err_state)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t x = rec[i];
        if (*err_state == 1) {
            res->err_status = (int)x;
            *err_state = 2;
        } else if (*err_state == 2) {
            res->err_op = x;
            *err_state = 3;
        } else if (x == MARK_OPEN) {
            res->opened = 1;
        } else if (x == MARK_ERR) {
            res->err = 1;
            *err_state = 1;
        } else if (*err_state == 0) {
            if ((long long)x != res->acked + 1)
                fail_msg("child reported op %u after %lld (pipe protocol broken)", x, res->acked);
            res->acked = x;
        }
    }
}

/* take_records -- consumes the whole 32-bit records at the start of buf
 * (have bytes) and keeps a partial record's bytes for the next read. */
static void take_records(round_result *res, uint8_t *buf, size_t *have, int *err_state)
{
    uint32_t recs[4096 / 4];
    size_t nrec = *have / 4;
    assert_true(nrec <= sizeof recs / 4);
    memcpy(recs, buf, nrec * 4);
    memmove(buf, buf + nrec * 4, *have - nrec * 4);
    *have -= nrec * 4;
    consume(res, recs, nrec, err_state);
}

/* run_child -- forks the writer, kills it after `delay_ms` counted from its
 * MARK_OPEN (or from the fork when `from_fork`), and collects its reports. */
static round_result run_child(const char *dir, uint32_t round, uint64_t gen_seed, uint64_t next_key, unsigned flags,
                              double delay_ms, int from_fork)
{
    round_result res = {.acked = -1};
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(pfd[0]);
        child_main(dir, round, gen_seed, next_key, flags, pfd[1]);
        _exit(0);
    }
    close(pfd[1]);
    uint8_t buf[4096];
    size_t have = 0;
    int err_state = 0, eof = 0;
    double start = tu_now_ms(), deadline = from_fork ? start + delay_ms : start + 60000.0;
    while (!eof) {
        double now = tu_now_ms();
        if (now >= deadline) {
            if (res.opened || from_fork || res.err) break;
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            fail_msg("round %u: the child did not open the database within 60 s", round);
        }
        struct pollfd p = {.fd = pfd[0], .events = POLLIN};
        int timeout = (int)(deadline - now) + 1;
        int pr = poll(&p, 1, timeout);
        if (pr < 0 && errno == EINTR) continue;
        assert_true(pr >= 0);
        if (pr == 0) continue;
        ssize_t got = read(pfd[0], buf + have, sizeof buf - have);
        if (got < 0 && errno == EINTR) continue;
        assert_true(got >= 0);
        if (got == 0) {
            eof = 1;
            break;
        }
        have += (size_t)got;
        int was_open = res.opened;
        take_records(&res, buf, &have, &err_state);
        if (!was_open && res.opened && !from_fork) deadline = tu_now_ms() + delay_ms;
    }
    kill(pid, SIGKILL);
    int wst = 0;
    assert_int_equal(waitpid(pid, &wst, 0), pid);
    for (;;) { /* drain what the child wrote before it died */
        ssize_t got = read(pfd[0], buf + have, sizeof buf - have);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        have += (size_t)got;
        take_records(&res, buf, &have, &err_state);
    }
    close(pfd[0]);
    if (res.err)
        fail_msg("round %u: the child failed with %d (%s) at op %u", round, res.err_status,
                 tkv_strerror(res.err_status), res.err_op);
    if (!WIFSIGNALED(wst) || WTERMSIG(wst) != SIGKILL)
        fail_msg("round %u: the child ended by itself (status 0x%x) instead of being killed", round, wst);
    return res;
}

/* parse_value -- extracts round and op index from a value written by the test. */
static int parse_value(const void *v, size_t vn, const void *k, size_t kn, uint32_t *round, uint32_t *i)
{
    char head[64];
    size_t n = vn < sizeof head - 1 ? vn : sizeof head - 1;
    memcpy(head, v, n);
    head[n] = 0;
    unsigned long long key;
    int used = 0;
    if (sscanf(head, "k%llu|r%u|i%u|%n", &key, round, i, &used) != 3 || used == 0) return -1;
    if (kn != 9 || memcmp(head, k, kn) != 0) return -1; /* value belongs to another key */
    return 0;
}

/* crash_rounds -- the round loop shared by both cases. */
static void crash_rounds(unsigned nrounds, int sync_writes)
{
    uint64_t seed = tu_seed() ^ (sync_writes ? 0x5151u : 0xa5a5u);
    tu_rng r;
    tu_rng_init(&r, seed);
    char *dir = tu_tmpdir(sync_writes ? "crash-sync" : "crash-nosync");
    tu_model *base = tu_model_new();
    uint64_t next_key = 0, total_acked = 0, total_survived = 0;
    unsigned killed_early = 0, rounds_with_orphans = 0;
    size_t orphans = 0;
    double t0 = tu_now_ms();

    for (uint32_t round = 0; round < nrounds; round++) {
        uint64_t gen_seed = tu_mix64(seed + round);
        /* every 5th round (not the first) is killed 0..15 ms after the fork:
         * usually while the child is still opening and recovering */
        int from_fork = round % 5 == 4;
        double delay = from_fork ? (double)tu_rng_range(&r, 0, 15) : (double)tu_rng_range(&r, 5, 80);
        unsigned flags = sync_writes ? TKV_SYNC : 0;
        round_result res = run_child(dir, round, gen_seed, next_key, flags, delay, from_fork);
        if (from_fork && !res.opened) killed_early++;

        /* SST files the kill left behind that recovery removes: outputs of a
         * flush/compaction that had not committed, or inputs whose deletion
         * had not happened yet. Counted to show kills landing in that work. */
        uint64_t *before, *after;
        size_t nbefore = tu_list_numbered(dir, ".sst", &before);
        tkv_options *o = tu_small_options();
        tkv_db *db = NULL;
        int rc = tkv_open(dir, o, &db);
        tkv_options_free(o);
        if (rc == TKV_OK) {
            size_t nafter = tu_list_numbered(dir, ".sst", &after);
            size_t removed = tu_count_missing(before, nbefore, after, nafter);
            if (removed) rounds_with_orphans++;
            orphans += removed;
            free(after);
        }
        free(before);
        if (rc != TKV_OK)
            fail_msg("round %u: reopen after kill (acked %lld) = %d (%s): %s", round, res.acked, rc, tkv_strerror(rc),
                     tkv_errmsg());

        /* the newest operation of this round that survived */
        long long survived = -1;
        tkv_iter *it = NULL;
        assert_int_equal(tkv_iter_new(db, NULL, &it), TKV_OK);
        for (tkv_iter_seek_first(it); tkv_iter_valid(it); tkv_iter_next(it)) {
            size_t kn, vn;
            const void *k = tkv_iter_key(it, &kn), *v = tkv_iter_value(it, &vn);
            uint32_t vr, vi;
            if (parse_value(v, vn, k, kn, &vr, &vi) != 0)
                fail_msg("round %u: key %s has a value the test never wrote: %s", round, tu_hex(k, kn), tu_hex(v, vn));
            if (vr > round) fail_msg("round %u: key %s has a value from round %u", round, tu_hex(k, kn), vr);
            if (vr == round && (long long)vi > survived) survived = vi;
        }
        assert_int_equal(tkv_iter_status(it), TKV_OK);
        tkv_iter_free(it);
        if (survived < res.acked)
            fail_msg("round %u: operation %lld was acknowledged but the newest surviving one is %lld", round, res.acked,
                     survived);

        /* the expected state: the base plus operations 0..survived */
        tu_model *expect = tu_model_copy(base);
        tu_rng g;
        tu_rng_init(&g, gen_seed);
        uint64_t nk = next_key;
        for (long long i = 0; i <= survived; i++) {
            op w;
            gen_op(&g, &nk, &w);
            apply_model(expect, &w, round, (uint32_t)i);
        }
        char what[160];
        snprintf(what, sizeof what, "round %u (acked %lld, survived %lld): recovered state vs ops 0..%lld", round,
                 res.acked, survived, survived);
        tu_check_db(db, NULL, expect, what);
        if (round + 1 == nrounds) {
            char *levels = tkv_property(db, "tkv.levels");
            fprintf(stderr, "# crash_%s: tkv.levels at the end:\n%s", sync_writes ? "sync" : "nosync",
                    levels ? levels : "(NULL)\n");
            tkv_free(levels);
        }
        rc = tkv_close(db);
        if (rc != TKV_OK) fail_msg("round %u: close = %d (%s)", round, rc, tkv_errmsg());

        tu_model_free(base);
        base = expect;
        next_key = nk;
        total_acked += (uint64_t)(res.acked + 1);
        total_survived += (uint64_t)(survived + 1);
    }
    fprintf(stderr,
            "# crash_%s: %u rounds in %.0f ms: %llu ops acknowledged, %llu survived, %zu keys, %u rounds "
            "killed before open completed; %u rounds left %zu SSTs of unfinished flushes/compactions\n",
            sync_writes ? "sync" : "nosync", nrounds, tu_now_ms() - t0, (unsigned long long)total_acked,
            (unsigned long long)total_survived, tu_model_count(base), killed_early, rounds_with_orphans, orphans);
    /* the test is vacuous if the child never got to write */
    assert_true(total_acked >= nrounds);
    /* ... or if no kill ever landed in a flush or compaction (with 64K
     * memtables and a 512K L1 they run almost all the time without TKV_SYNC) */
    if (!sync_writes && nrounds >= 20) assert_true(rounds_with_orphans > 0);
    tu_model_free(base);
    assert_int_equal(tkv_destroy(dir), TKV_OK);
    tu_tmpdir_free(dir);
}

static void crash_sync(void **state)
{
    (void)state;
    crash_rounds(20 * tu_scale(), 1);
}

static void crash_nosync(void **state)
{
    (void)state;
    crash_rounds(30 * tu_scale(), 0);
}

/* crash_nosync_sst -- the same with l0=sst (L0 as SST files). The child
 * reads the same environment, so both sides use the same options. */
static void crash_nosync_sst(void **state)
{
    (void)state;
    setenv("TKV_TEST_L0", "sst", 1);
    crash_rounds(20 * tu_scale(), 0);
    unsetenv("TKV_TEST_L0");
}

/* crash_nosync_full_pool -- l0=matrix with a 1 MiB pool (15 pages): flushes
 * wait for columns most of the time, so kills land in both. */
static void crash_nosync_full_pool(void **state)
{
    (void)state;
    setenv("TKV_TEST_L0", "matrix", 1);
    setenv("TKV_TEST_PMEM_SIZE", "1M", 1);
    crash_rounds(20 * tu_scale(), 0);
    unsetenv("TKV_TEST_PMEM_SIZE");
    unsetenv("TKV_TEST_L0");
}

/* crash_nosync_parallel_columns -- l0=matrix, a 2 MiB pool, up to two
 * columns in flight at once (column_gate=always): kills land between the
 * commits of two columns of one compactor too. */
static void crash_nosync_parallel_columns(void **state)
{
    (void)state;
    setenv("TKV_TEST_L0", "matrix", 1);
    setenv("TKV_TEST_PMEM_SIZE", "2M", 1);
    setenv("TKV_TEST_COLUMN_GATE", "always", 1);
    crash_rounds(20 * tu_scale(), 0);
    unsetenv("TKV_TEST_COLUMN_GATE");
    unsetenv("TKV_TEST_PMEM_SIZE");
    unsetenv("TKV_TEST_L0");
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(crash_sync),
        cmocka_unit_test(crash_nosync),
        cmocka_unit_test(crash_nosync_sst),
        cmocka_unit_test(crash_nosync_full_pool),
        cmocka_unit_test(crash_nosync_parallel_columns),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
