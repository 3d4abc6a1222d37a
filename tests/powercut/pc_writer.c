// SPDX-License-Identifier: Apache-2.0
/*
 * pc_writer.c -- the writer of the power-cut test (make crashtest-power;
 * tests/powercut/README.md). It opens the database in DIR with the options
 * OPTS and runs THREADS writer threads until it is killed: thread t issues
 * its operations next[t], next[t] + 1, ... (pc_gen: single puts, single
 * deletes and batches, some TKV_SYNC), recording its progress in the
 * PROGRESS file, a shared mapping on another file system that outlives the
 * process: issued before each operation, acked / acked_sync after its
 * acknowledgement, and per operation the global acknowledgement index it got
 * and the number of acknowledgements there had been when it was issued.
 *
 * Usage: pc_writer DIR PROGRESS SEED THREADS OPTS [STATE]
 *   STATE: the checker's state file of the previous run on this database:
 *   the threads continue from its next[] (absent or "-": from 0).
 * With PC_CHECKPOINT_MS=N in the environment a further thread takes a
 * checkpoint every N ms into DIR.ckpt/NNNNNN (tkv_checkpoint), keeping the
 * two newest: an older one is first renamed to NNNNNN.deleting, then
 * removed, so a cut never leaves a half-removed one under its own name
 * (pc_check opens every checkpoint the cut left).
 * It never exits by itself once the threads run: the driver kills it. An
 * error (tkv_open, a write) is stored in the progress file (failed, msg) and
 * also ends the process with status 2 (tkv_open) or stops the thread.
 */
#include <pthread.h>
#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pc_common.h"

static pc_progress *g_p;
static tkv_db *g_db;
static uint64_t g_seed;

/* fail -- records the writer's first error in the progress file. */
__attribute__((format(printf, 1, 2))) static void fail(const char *fmt, ...)
{
    int expected = 0;
    if (__atomic_compare_exchange_n(&g_p->failed, &expected, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g_p->msg, sizeof g_p->msg, fmt, ap);
        va_end(ap);
        fprintf(stderr, "pc_writer: %s\n", g_p->msg);
    }
}

static int do_op(tkv_batch *b, unsigned t, uint64_t i, const pc_op *o, char *vb)
{
    char kb[32];
    unsigned flags = o->sync ? TKV_SYNC : 0;
    if (!o->batch) {
        size_t kn = pc_key(t, o->it[0].key, kb);
        if (o->it[0].del) return tkv_delete(g_db, kb, kn, flags);
        return tkv_put(g_db, kb, kn, vb, pc_value(g_seed, t, o->it[0].key, i, 0, vb), flags);
    }
    tkv_batch_clear(b);
    for (int j = 0; j < o->n; j++) {
        size_t kn = pc_key(t, o->it[j].key, kb);
        int rc = o->it[j].del ? tkv_batch_delete(b, kb, kn)
                              : tkv_batch_put(b, kb, kn, vb, pc_value(g_seed, t, o->it[j].key, i, (unsigned)j, vb));
        if (rc != TKV_OK) return rc;
    }
    return tkv_write(g_db, b, flags);
}

static void *writer(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg;
    char name[16];
    snprintf(name, sizeof name, "pc-w%u", t);
    pthread_setname_np(pthread_self(), name);
    pc_slot *s = &g_p->slot[t];
    pc_rec *rec = pc_recs(g_p, t);
    tkv_batch *b = tkv_batch_new();
    char *vb = malloc(PC_MAX_VALUE);
    if (!b || !vb) {
        fail("thread %u: out of memory", t);
        return NULL;
    }
    for (uint64_t i = s->start; i < s->start + PC_MAX_OPS; i++) {
        pc_op o;
        pc_gen(g_seed, t, i, &o);
        pc_rec *r = &rec[i - s->start];
        r->issue_G = __atomic_load_n(&g_p->global_acks, __ATOMIC_SEQ_CST);
        __atomic_store_n(&s->issued, i + 1, __ATOMIC_SEQ_CST);
        int rc = do_op(b, t, i, &o, vb);
        if (rc != TKV_OK) {
            fail("%s%s: thread %u op %llu: %s: %s",
                 o.batch       ? "tkv_write"
                 : o.it[0].del ? "tkv_delete"
                               : "tkv_put",
                 o.sync ? " (TKV_SYNC)" : "", t, (unsigned long long)i, tkv_strerror(rc), tkv_errmsg());
            break;
        }
        uint64_t g = __atomic_fetch_add(&g_p->global_acks, 1, __ATOMIC_SEQ_CST);
        __atomic_store_n(&r->ack_g, g + 1, __ATOMIC_SEQ_CST);
        if (o.sync) {
            __atomic_store_n(&s->acked_sync, i + 1, __ATOMIC_SEQ_CST);
            __atomic_store_n(&s->sync_acked, s->sync_acked + 1, __ATOMIC_SEQ_CST);
        }
        __atomic_store_n(&s->acked, i + 1, __ATOMIC_SEQ_CST);
    }
    tkv_batch_free(b);
    free(vb);
    return NULL; /* an error, or the records are full: the thread stops issuing */
}

static const char *g_dir;

/* checkpointer -- the checkpoint thread of PC_CHECKPOINT_MS (above). */
static void *checkpointer(void *arg)
{
    unsigned ms = (unsigned)(uintptr_t)arg;
    pthread_setname_np(pthread_self(), "pc-ckpt");
    char parent[4096], out[4200], gone[4300], cmd[4400];
    snprintf(parent, sizeof parent, "%s.ckpt", g_dir);
    (void)mkdir(parent, 0755);
    unsigned first = 1; /* after the checkpoints of earlier runs on this database (a reopen round) */
    DIR *d = opendir(parent);
    for (struct dirent *e; d && (e = readdir(d));) {
        unsigned k = (unsigned)strtoul(e->d_name, NULL, 10);
        if (k >= first) first = k + 1;
    }
    if (d) closedir(d);
    for (unsigned n = first;; n++) {
        usleep(ms * 1000u);
        snprintf(out, sizeof out, "%s/%06u", parent, n);
        int rc = tkv_checkpoint(g_db, out);
        if (rc != TKV_OK) {
            fail("tkv_checkpoint %s: %s: %s", out, tkv_strerror(rc), tkv_errmsg());
            return NULL;
        }
        if (n > first + 1) {
            snprintf(out, sizeof out, "%s/%06u", parent, n - 2);
            snprintf(gone, sizeof gone, "%s.deleting", out);
            if (rename(out, gone) == 0) {
                snprintf(cmd, sizeof cmd, "rm -rf '%s'", gone);
                if (system(cmd) != 0) fprintf(stderr, "pc_writer: %s failed\n", cmd);
            }
        }
    }
}

int main(int argc, char **argv)
{
    if (argc < 6 || argc > 7) {
        fprintf(stderr, "usage: %s DIR PROGRESS SEED THREADS OPTS [STATE]\n", argv[0]);
        return 64;
    }
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the driver */
    const char *dir = argv[1], *progress = argv[2], *opts = argv[5];
    g_dir = dir;
    g_seed = strtoull(argv[3], NULL, 0);
    unsigned nthreads = (unsigned)strtoul(argv[4], NULL, 10);
    if (nthreads < 1 || nthreads > PC_MAX_THREADS) {
        fprintf(stderr, "pc_writer: THREADS must be 1..%d\n", PC_MAX_THREADS);
        return 64;
    }
    pc_state st;
    if (pc_state_load(&st, argc == 7 ? argv[6] : "-", g_seed, nthreads) != 0) return 64;
    g_p = pc_progress_create(progress, nthreads, g_seed, st.next);
    pc_state_free(&st);
    if (!g_p) return 64;

    char err[600];
    tkv_options *o = pc_options(opts, err, sizeof err);
    if (!o) {
        fail("options: %s", err);
        return 2;
    }
    double t0 = pc_now_ms();
    int rc = tkv_open(dir, o, &g_db);
    tkv_options_free(o);
    g_p->open_ms = pc_now_ms() - t0;
    if (rc != TKV_OK) {
        fail("tkv_open: %s: %s", tkv_strerror(rc), tkv_errmsg());
        return 2;
    }
    __atomic_store_n(&g_p->opened, 1, __ATOMIC_RELEASE);
    for (unsigned t = 0; t < nthreads; t++) {
        pthread_t th;
        int e = pthread_create(&th, NULL, writer, (void *)(uintptr_t)t);
        if (e != 0) {
            fail("pthread_create (thread %u): %s", t, strerror(e));
            return 2;
        }
        pthread_detach(th);
    }
    const char *ck = getenv("PC_CHECKPOINT_MS");
    if (ck && atoi(ck) > 0) {
        pthread_t th;
        int e = pthread_create(&th, NULL, checkpointer, (void *)(uintptr_t)atoi(ck));
        if (e != 0) {
            fail("pthread_create (checkpoints): %s", strerror(e));
            return 2;
        }
        pthread_detach(th);
    }
    for (;;) pause();
}
