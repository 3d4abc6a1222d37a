// SPDX-License-Identifier: Apache-2.0
/*
 * pc_check.c -- the checker of the power-cut test (make crashtest-power;
 * tests/powercut/README.md). Run on the mounted copy of a cut image, it
 * reopens the database and checks it against what the killed writer
 * (pc_writer.c) recorded in its progress file:
 *   1. tkv_open succeeds (tkv_verify runs first, read-only, for the report);
 *   2. per thread, the database holds exactly the state after the thread's
 *      operations 0..S-1 for some S (a batch whole or not at all), with
 *      acked_sync <= S <= issued: every acknowledged TKV_SYNC write survived,
 *      and everything the thread did before it;
 *   3. across threads: if thread u's TKV_SYNC operation j was acknowledged,
 *      every operation (of any thread) acknowledged before j was issued
 *      survived; and if an operation survived, every operation acknowledged
 *      before it was issued survived too;
 *   4. the whole database equals the model: a forward and a backward scan,
 *      and a tkv_get of every key of every thread;
 *   5. tkv_close succeeds.
 * Then it writes the state it found (each key's (op, item), and per thread
 * the next operation index: the run's issued) to OUT_STATE, for a writer
 * that continues on this database and for its checker.
 *
 * Usage: pc_check DIR PROGRESS SEED THREADS OPTS BASE_STATE|- OUT_STATE
 * Prints "# ..." notes, STATS and WRITER lines, "FAIL <why>" for each
 * failure, and PASS or FAIL last. Exit status: 0 pass, 1 fail, 64 usage.
 */
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pc_common.h"

typedef struct chk {
    uint64_t seed;
    unsigned nthreads;
    pc_state st;    /* the base state, then the state found */
    pc_progress *p; /* NULL: the writer died before its setup */
    pc_slot slot[PC_MAX_THREADS];
    uint64_t *dbs[PC_MAX_THREADS];                       /* what the database holds, per key (pc_enc) */
    uint64_t smin[PC_MAX_THREADS], smax[PC_MAX_THREADS]; /* the prefixes that match */
    int found[PC_MAX_THREADS];
    unsigned fails;
} chk;

__attribute__((format(printf, 2, 3))) static void failf(chk *c, const char *fmt, ...)
{
    char buf[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (++c->fails <= 20) printf("FAIL %s\n", buf);
    else if (c->fails == 21) printf("FAIL (more failures not shown)\n");
}

static const char *show(const void *p, size_t n)
{
    static char bufs[4][200];
    static unsigned next;
    char *b = bufs[next++ % 4];
    const unsigned char *s = p;
    size_t o = (size_t)snprintf(b, 200, "[%zu]\"", n);
    for (size_t i = 0; s && i < n && i < 40 && o < 180; i++)
        o += s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' ? (size_t)snprintf(b + o, 200 - o, "%c", s[i])
                                                        : (size_t)snprintf(b + o, 200 - o, "\\x%02x", s[i]);
    snprintf(b + o, 200 - o, "\"%s", n > 40 ? "..." : "");
    return b;
}

/* describe -- "absent" or "op I item J" for a key state. */
static const char *describe(uint64_t e)
{
    static char bufs[4][64];
    static unsigned next;
    char *b = bufs[next++ % 4];
    if (!e) return "absent";
    snprintf(b, 64, "op %llu item %u", (unsigned long long)pc_enc_op(e), pc_enc_item(e));
    return b;
}

/* read_db -- every entry into c->dbs, each value checked byte for byte
 * against the one its key's state names. 0, or -1 after a failure. */
static int read_db(chk *c, tkv_db *db, uint64_t *entries)
{
    tkv_iter *it = NULL;
    int rc = tkv_iter_new(db, NULL, &it);
    if (rc != TKV_OK) {
        failf(c, "tkv_iter_new: %s: %s", tkv_strerror(rc), tkv_errmsg());
        return -1;
    }
    char *vb = malloc(PC_MAX_VALUE);
    int bad = 0;
    for (tkv_iter_seek_first(it); !bad && tkv_iter_valid(it); tkv_iter_next(it)) {
        size_t kn, vn;
        const char *k = tkv_iter_key(it, &kn), *v = tkv_iter_value(it, &vn);
        unsigned t, key, j;
        unsigned long long i;
        char head[64];
        size_t hn = vn < sizeof head - 1 ? vn : sizeof head - 1;
        memcpy(head, v, hn);
        head[hn] = 0;
        int used = 0;
        if (kn != PC_KEY_LEN || sscanf(head, "t%02u.%05u|i%llu|j%u|%n", &t, &key, &i, &j, &used) != 4 || used == 0 ||
            memcmp(head, k, PC_KEY_LEN) != 0 || t >= c->nthreads || key >= PC_KEYS || j >= PC_MAX_ITEMS) {
            failf(c, "key %s holds a value the test never wrote: %s", show(k, kn), show(v, vn));
            bad = 1;
            break;
        }
        size_t en = pc_value(c->seed, t, key, i, j, vb);
        if (en != vn || memcmp(vb, v, vn) != 0) {
            failf(c, "key %s: the value %s differs from the one op %llu item %u of thread %u wrote (%s)", show(k, kn),
                  show(v, vn), i, j, t, show(vb, en));
            bad = 1;
            break;
        }
        c->dbs[t][key] = pc_enc(i, j);
        ++*entries;
    }
    if (!bad && tkv_iter_status(it) != TKV_OK) {
        failf(c, "forward scan: %s: %s", tkv_strerror(tkv_iter_status(it)), tkv_errmsg());
        bad = 1;
    }
    tkv_iter_free(it);
    free(vb);
    return bad ? -1 : 0;
}

/* apply -- operation i of thread t onto st; with dbs, keeps *diff = the
 * keys where st and dbs differ. */
static void apply(const chk *c, unsigned t, uint64_t i, uint64_t *st, const uint64_t *dbs, long *diff)
{
    pc_op o;
    pc_gen(c->seed, t, i, &o);
    for (int j = 0; j < o.n; j++) {
        uint32_t k = o.it[j].key;
        uint64_t nw = o.it[j].del ? 0 : pc_enc(i, (unsigned)j);
        if (dbs) *diff += (long)(nw != dbs[k]) - (long)(st[k] != dbs[k]);
        st[k] = nw;
    }
}

/* survivor -- thread t: the S in [start, issued] whose state equals the
 * database's (smin, smax: the smallest and largest; states can repeat when
 * operations change nothing); c->st.key[t] becomes the state after smax. */
static void survivor(chk *c, unsigned t)
{
    const pc_slot *s = &c->slot[t];
    uint64_t *st = c->st.key[t], *base = malloc(PC_KEYS * sizeof *base);
    memcpy(base, st, PC_KEYS * sizeof *st);
    long diff = 0;
    for (uint32_t k = 0; k < PC_KEYS; k++) diff += st[k] != c->dbs[t][k];
    long best = diff;
    uint64_t best_at = s->start;
    c->found[t] = diff == 0;
    c->smin[t] = c->smax[t] = s->start;
    for (uint64_t i = s->start; i < s->issued; i++) {
        apply(c, t, i, st, c->dbs[t], &diff);
        if (diff == 0) {
            if (!c->found[t]) c->smin[t] = i + 1;
            c->found[t] = 1;
            c->smax[t] = i + 1;
        }
        if (diff < best) best = diff, best_at = i + 1;
    }
    memcpy(st, base, PC_KEYS * sizeof *st);
    if (c->found[t]) {
        for (uint64_t i = s->start; i < c->smax[t]; i++) apply(c, t, i, st, NULL, NULL);
    } else {
        /* the closest prefix, and the first key where it and the database differ */
        for (uint64_t i = s->start; i < best_at; i++) apply(c, t, i, st, NULL, NULL);
        uint32_t k = 0;
        while (k < PC_KEYS && st[k] == c->dbs[t][k]) k++;
        failf(c,
              "thread %u: no prefix of its operations matches the database (a hole: a write lost while a later "
              "one of the thread survived, or a torn batch): start %llu, issued %llu, acked %llu, acked_sync "
              "%llu; closest: after its first %llu ops %ld keys differ, the first t%02u.%05u: %s in the "
              "database, %s in the model",
              t, (unsigned long long)s->start, (unsigned long long)s->issued, (unsigned long long)s->acked,
              (unsigned long long)s->acked_sync, (unsigned long long)best_at, best, t, k,
              describe(k < PC_KEYS ? c->dbs[t][k] : 0), describe(k < PC_KEYS ? st[k] : 0));
    }
    free(base);
}

/* acked_before -- thread t's operations acknowledged with an index below G,
 * as an absolute operation count: the thread's prefix that was acknowledged
 * before an operation that saw G acknowledgements at its issue. */
static uint64_t acked_before(const chk *c, unsigned t, uint64_t G)
{
    const pc_slot *s = &c->slot[t];
    const pc_rec *rec = pc_recs(c->p, t);
    uint64_t n = s->acked - s->start;              /* records with ack_g set (in increasing order) */
    if (s->acked < s->issued && rec[n].ack_g) n++; /* acknowledged; killed before it stored acked */
    uint64_t lo = 0, hi = n;                       /* the first record whose ack index is >= G */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (rec[mid].ack_g - 1 < G) lo = mid + 1;
        else hi = mid;
    }
    return s->start + lo;
}

/* cross_check -- check 3: what operation (u, j), issued with G
 * acknowledgements behind it, requires of the other threads. */
static void cross_check(chk *c, unsigned u, uint64_t j, const char *why)
{
    uint64_t G = pc_recs(c->p, u)[j - c->slot[u].start].issue_G;
    for (unsigned t = 0; t < c->nthreads; t++) {
        if (t == u || !c->found[t]) continue;
        uint64_t need = acked_before(c, t, G);
        if (c->smax[t] >= need) continue;
        uint64_t lost = c->smax[t];
        failf(c,
              "cross-thread: thread %u's op %llu %s, and it was issued after thread %u's op %llu had been "
              "acknowledged (ack #%llu of %llu before the issue), but thread %u's surviving state ends after op "
              "%llu (ops %llu..%llu lost; acked %llu, acked_sync %llu)",
              u, (unsigned long long)j, why, t, (unsigned long long)(need - 1),
              (unsigned long long)(pc_recs(c->p, t)[need - 1 - c->slot[t].start].ack_g - 1), (unsigned long long)G, t,
              (unsigned long long)lost, (unsigned long long)lost, (unsigned long long)(need - 1),
              (unsigned long long)c->slot[t].acked, (unsigned long long)c->slot[t].acked_sync);
    }
}

/* compare -- check 4: a backward scan and a tkv_get of every key against
 * the model (c->st; the forward scan was compared by survivor). */
static void compare(chk *c, tkv_db *db)
{
    char kb[32], *vb = malloc(PC_MAX_VALUE);
    tkv_iter *it = NULL;
    int rc = tkv_iter_new(db, NULL, &it);
    if (rc != TKV_OK) {
        failf(c, "tkv_iter_new: %s: %s", tkv_strerror(rc), tkv_errmsg());
        free(vb);
        return;
    }
    tkv_iter_seek_last(it);
    for (int t = (int)c->nthreads - 1; t >= 0; t--)
        for (int k = PC_KEYS - 1; k >= 0; k--) {
            uint64_t e = c->st.key[t][k];
            if (!e) continue;
            size_t kn = pc_key((unsigned)t, (uint32_t)k, kb);
            size_t vn = pc_value(c->seed, (unsigned)t, (uint32_t)k, pc_enc_op(e), pc_enc_item(e), vb);
            if (!tkv_iter_valid(it)) {
                failf(c, "backward scan: ended (status %s) before t%02d.%05d (%s in the model)",
                      tkv_strerror(tkv_iter_status(it)), t, k, describe(e));
                goto out;
            }
            size_t gk, gv;
            const void *ik = tkv_iter_key(it, &gk), *iv = tkv_iter_value(it, &gv);
            if (gk != kn || memcmp(ik, kb, kn) != 0 || gv != vn || memcmp(iv, vb, vn) != 0) {
                failf(c, "backward scan: at %s %s, the model has t%02d.%05d = %s", show(ik, gk), show(iv, gv), t, k,
                      describe(e));
                goto out;
            }
            tkv_iter_prev(it);
        }
    if (tkv_iter_valid(it)) {
        size_t gk;
        const void *ik = tkv_iter_key(it, &gk);
        failf(c, "backward scan: key %s is below every key of the model", show(ik, gk));
    } else if (tkv_iter_status(it) != TKV_OK) {
        failf(c, "backward scan: %s: %s", tkv_strerror(tkv_iter_status(it)), tkv_errmsg());
    }
out:
    tkv_iter_free(it);
    for (unsigned t = 0; t < c->nthreads; t++)
        for (uint32_t k = 0; k < PC_KEYS; k++) {
            uint64_t e = c->st.key[t][k];
            size_t kn = pc_key(t, k, kb);
            void *v = NULL;
            size_t vn = 0;
            rc = tkv_get(db, NULL, kb, kn, &v, &vn);
            size_t en = e ? pc_value(c->seed, t, k, pc_enc_op(e), pc_enc_item(e), vb) : 0;
            if (e ? rc != TKV_OK || vn != en || memcmp(v, vb, en) != 0 : rc != TKV_NOT_FOUND)
                failf(c, "tkv_get(t%02u.%05u) = %s %s, the model has %s", t, k, tkv_strerror(rc),
                      rc == TKV_OK ? show(v, vn) : tkv_errmsg(), describe(e));
            tkv_free(v);
            if (c->fails > 20) goto done;
        }
done:
    free(vb);
}

/* load_progress -- what the writer did (c->p, c->slot); -1 if the progress
 * file does not continue the state file. */
static int load_progress(chk *c, const char *path)
{
    c->p = pc_progress_open(path, c->nthreads);
    for (unsigned t = 0; t < c->nthreads; t++) {
        uint64_t n = c->st.next[t];
        c->slot[t] = c->p ? c->p->slot[t] : (pc_slot){.start = n, .issued = n, .acked = n, .acked_sync = n};
        if (c->p && (c->slot[t].start != n || c->p->seed != c->seed)) {
            fprintf(stderr,
                    "pc_check: the progress file does not continue the state file (thread %u starts at %llu, "
                    "not %llu)\n",
                    t, (unsigned long long)c->slot[t].start, (unsigned long long)n);
            return -1;
        }
        c->dbs[t] = calloc(PC_KEYS, sizeof(uint64_t));
    }
    if (c->p)
        printf("WRITER opened=%d open_ms=%.1f failed=%d %s\n", c->p->opened, c->p->open_ms, c->p->failed,
               c->p->failed ? c->p->msg : "");
    else printf("WRITER none (killed before its progress file was set up)\n");
    if (c->p && c->p->failed) failf(c, "the writer failed: %s", c->p->msg);
    return 0;
}

/* verify -- tkv_verify of what the cut left (read-only), printed; returns
 * its problem count (*rc: its status). */
static unsigned long verify(const char *dir, const tkv_options *o, int *rc)
{
    char *rep = NULL;
    unsigned long problems = 0;
    *rc = tkv_verify(dir, o, &rep);
    if (!rep) {
        printf("# tkv_verify: %s: %s\n", tkv_strerror(*rc), tkv_errmsg());
        return 0;
    }
    const char *pp = strstr(rep, "problems=");
    problems = pp ? strtoul(pp + 9, NULL, 10) : 0;
    for (char *line = strtok(rep, "\n"); line; line = strtok(NULL, "\n"))
        if (!strncmp(line, "problem:", 8) || !strncmp(line, "verify:", 7)) printf("# tkv_verify: %s\n", line);
    tkv_free(rep);
    return problems;
}

/* check_db -- checks 2 to 5 on the open database (closes it). */
static void check_db(chk *c, tkv_db *db, uint64_t *entries)
{
    if (read_db(c, db, entries) == 0) {
        /* 2. Per thread: a prefix, and no acknowledged sync write lost. */
        for (unsigned t = 0; t < c->nthreads; t++) {
            const pc_slot *s = &c->slot[t];
            survivor(c, t);
            if (c->found[t] && c->smax[t] < s->acked_sync)
                failf(c,
                      "thread %u lost acknowledged TKV_SYNC writes: its surviving state is after op %llu, but its "
                      "op %llu was a TKV_SYNC write that was acknowledged (start %llu, issued %llu, acked %llu)",
                      t, (unsigned long long)c->smax[t], (unsigned long long)(s->acked_sync - 1),
                      (unsigned long long)s->start, (unsigned long long)s->issued, (unsigned long long)s->acked);
        }
        /* 3. Across threads. */
        for (unsigned u = 0; c->p && u < c->nthreads; u++) {
            const pc_slot *s = &c->slot[u];
            if (s->acked_sync > s->start) cross_check(c, u, s->acked_sync - 1, "was a TKV_SYNC write acknowledged");
            if (c->found[u] && c->smin[u] > s->start) cross_check(c, u, c->smin[u] - 1, "survived");
        }
        /* 4. The whole database against the model. */
        int all_found = 1;
        for (unsigned t = 0; t < c->nthreads; t++) all_found &= c->found[t];
        if (all_found) compare(c, db);
    }
    /* 5. The close. */
    int rc = tkv_close(db);
    if (rc != TKV_OK) failf(c, "tkv_close: %s: %s", tkv_strerror(rc), tkv_errmsg());
}

/* check_checkpoints -- the checkpoints the writer was taking
 * (PC_CHECKPOINT_MS) that the cut left in DIR.ckpt: a complete one (NNNNNN)
 * opens and verifies clean; a directory tkv_checkpoint was still building
 * (*.tmp-ckpt-*) is either refused by tkv_open as an incomplete checkpoint
 * (its marker) or, the marker already removed, complete and clean, or empty
 * (cut right after its mkdir); the writer's removals in flight (*.deleting)
 * are skipped. */
static void check_checkpoints(chk *c, const char *dir, const char *opts)
{
    char parent[4096], path[4400], err[600];
    snprintf(parent, sizeof parent, "%s.ckpt", dir);
    DIR *d = opendir(parent);
    if (!d) return;
    tkv_options *o = pc_options(opts, err, sizeof err);
    if (!o || tkv_options_set(o, "create_if_missing", "0") != TKV_OK) {
        failf(c, "checkpoint options: %s", o ? tkv_errmsg() : err);
        tkv_options_free(o);
        closedir(d);
        return;
    }
    unsigned complete = 0, refused = 0, empty = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' || strstr(e->d_name, ".deleting")) continue;
        snprintf(path, sizeof path, "%s/%s", parent, e->d_name);
        int building = strstr(e->d_name, ".tmp-ckpt-") != NULL;
        tkv_db *db = NULL;
        int rc = tkv_open(path, o, &db);
        if (rc != TKV_OK) {
            const char *m = tkv_errmsg();
            if (building && strstr(m, "incomplete checkpoint")) refused++;
            else if (building && rc == TKV_INVALID && strstr(m, "holds no tierkv database")) empty++;
            else failf(c, "checkpoint %s does not open: %s: %s", path, tkv_strerror(rc), m);
            continue;
        }
        tkv_close(db);
        int vrc;
        unsigned long problems = verify(path, o, &vrc);
        if (vrc != TKV_OK || problems)
            failf(c, "checkpoint %s: tkv_verify %s, %lu problems", path, tkv_strerror(vrc), problems);
        else complete++;
    }
    closedir(d);
    tkv_options_free(o);
    printf("CHECKPOINTS complete=%u refused_incomplete=%u empty=%u\n", complete, refused, empty);
}

/* report -- per thread what was issued, acknowledged and kept, and the
 * STATS line; c->st.next becomes the run's issued. */
static void report(chk *c, int db_open, uint64_t entries, unsigned long problems, int vrc, double open_ms)
{
    uint64_t acked = 0, sync_acked = 0, issued = 0, kept = 0, lost_acked = 0, inflight_kept = 0;
    unsigned found = 0;
    for (unsigned t = 0; t < c->nthreads; t++) {
        const pc_slot *s = &c->slot[t];
        acked += s->acked - s->start;
        sync_acked += s->sync_acked;
        issued += s->issued - s->start;
        if (c->found[t]) {
            found++;
            kept += c->smax[t] - s->start;
            if (c->smax[t] < s->acked) lost_acked += s->acked - c->smax[t];
            if (c->smax[t] > s->acked) inflight_kept++;
        }
        printf("# thread %u: start %llu issued %llu acked %llu acked_sync %llu sync_acked %llu survived %s%llu..%llu\n",
               t, (unsigned long long)s->start, (unsigned long long)s->issued, (unsigned long long)s->acked,
               (unsigned long long)s->acked_sync, (unsigned long long)s->sync_acked, c->found[t] ? "" : "(none) ",
               (unsigned long long)c->smin[t], (unsigned long long)c->smax[t]);
        c->st.next[t] = s->issued;
    }
    printf("STATS db_open=%d found=%u issued=%llu acked=%llu sync_acked=%llu kept=%llu lost_acked=%llu "
           "inflight_kept=%llu entries=%llu verify_problems=%lu verify_rc=%d open_ms=%.1f\n",
           db_open, found, (unsigned long long)issued, (unsigned long long)acked, (unsigned long long)sync_acked,
           (unsigned long long)kept, (unsigned long long)lost_acked, (unsigned long long)inflight_kept,
           (unsigned long long)entries, problems, vrc, open_ms);
}

/* wal_versions -- prints "WALS v2=N v3=M other=K": the format versions of
 * the WAL headers in dir as the cut left them (version 3: a recycled log,
 * docs/format-wal.md), so the report shows the cuts met recycled logs. */
static void wal_versions(const char *dir)
{
    unsigned v2 = 0, v3 = 0, other = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".wal") != 0) continue;
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unsigned char h[12] = {0};
        FILE *f = fopen(path, "rb");
        size_t got = f ? fread(h, 1, sizeof h, f) : 0;
        if (f) fclose(f);
        unsigned version = got == sizeof h ? h[8] | (unsigned)h[9] << 8 : 0;
        if (version == 2) v2++;
        else if (version == 3) v3++;
        else other++;
    }
    if (d) closedir(d);
    printf("WALS v2=%u v3=%u other=%u\n", v2, v3, other);
}

int main(int argc, char **argv)
{
    if (argc != 8) {
        fprintf(stderr, "usage: %s DIR PROGRESS SEED THREADS OPTS BASE_STATE|- OUT_STATE\n", argv[0]);
        return 64;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    chk C = {0}, *c = &C;
    const char *dir = argv[1], *opts = argv[5];
    c->seed = strtoull(argv[3], NULL, 0);
    c->nthreads = (unsigned)strtoul(argv[4], NULL, 10);
    if (c->nthreads < 1 || c->nthreads > PC_MAX_THREADS) return 64;
    if (pc_state_load(&c->st, argv[6], c->seed, c->nthreads) != 0) return 64;
    if (load_progress(c, argv[2]) != 0) return 64;
    char err[600];
    tkv_options *o = pc_options(opts, err, sizeof err);
    if (!o) {
        fprintf(stderr, "pc_check: %s\n", err);
        return 64;
    }
    wal_versions(dir);
    int vrc;
    unsigned long problems = verify(dir, o, &vrc);

    /* 1. The open. */
    tkv_db *db = NULL;
    double t0 = pc_now_ms();
    int rc = tkv_open(dir, o, &db);
    double open_ms = pc_now_ms() - t0;
    tkv_options_free(o);
    uint64_t entries = 0;
    if (rc != TKV_OK) failf(c, "tkv_open: %s: %s", tkv_strerror(rc), tkv_errmsg());
    else {
        /* what the open found: the pool's fill and the recovery counters, for the report */
        const char *props[] = {"tkv.pmem", "tkv.stats"}, *lines[] = {"pool:", "recovery:"};
        for (int i = 0; i < 2; i++) {
            char *p = tkv_property(db, props[i]), *l = p ? strstr(p, lines[i]) : NULL;
            if (l) printf("# after open: %.*s\n", (int)strcspn(l, "\n"), l);
            tkv_free(p);
        }
        check_db(c, db, &entries);
    }

    check_checkpoints(c, dir, opts);
    report(c, rc == TKV_OK, entries, problems, vrc, open_ms);
    if (!c->fails && pc_state_save(&c->st, argv[7]) != 0) return 64;
    printf(c->fails ? "FAIL\n" : "PASS\n");
    for (unsigned t = 0; t < c->nthreads; t++) free(c->dbs[t]);
    pc_state_free(&c->st);
    return c->fails ? 1 : 0;
}
