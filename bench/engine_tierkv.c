// SPDX-License-Identifier: Apache-2.0
/*
 * engine_tierkv.c -- the "tierkv" engine: tierkv through its public C API
 * (include/tierkv.h), linked in (build/libtierkv.a).
 *
 * Configuration: memtable_size, memtables, block_cache_size and direct_io from
 * engine_config; bloom_bits_per_key=10, block_size=4K, compression=lz4; then
 * the caller's "name=value" tkv_opts (a bad one fails open with tierkv's
 * message). cfg->sync makes every write TKV_SYNC.
 *
 * stats() and wait_idle() read the "tkv.stats" text report (src/db/db_read.c
 * prints it): io.<class> write_bytes, the stalls line, level sizes against
 * their targets, flush/compaction counters.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/engine_impl.h"
#include "tierkv.h"

struct engine {
    tkv_db *db;
    /* TKV_BENCH_PROPERTY_LOG=FILE: a thread appends tkv.sched, tkv.matrix and
     * tkv.stats to FILE once a second (diagnosis of a latency timeline; off
     * by default) */
    pthread_t logger;
    int logging, stop_logging; /* stop_logging: atomic */
    FILE *log;
    /* TKV_BENCH_EVENT_LOG=FILE: every tkv_event appended to FILE, one line
     * each, stamped with CLOCK_MONOTONIC when delivered (to line jobs and
     * stalls up with --slow_log's start= times; off by default) */
    FILE *events;
    unsigned wflags;     /* TKV_SYNC when cfg->sync */
    int l0_trigger;      /* l0_compaction_trigger in effect */
    int nlevels;         /* levels of the tree (lines of "tkv.levels" named L<n>) */
    char describe[4096]; /* "tkv.options" on one line, plus the write flags */
};

struct engine_iter {
    tkv_iter *it;
};

/* tkv_fail -- last error "tierkv <op>: <status> (<tkv_errmsg>)"; returns rc. */
static int tkv_fail(int rc, const char *op)
{
    return eng_fail(rc, "tierkv %s: %s (%s)", op, tkv_strerror(rc), tkv_errmsg());
}

static int t_available(char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    return 1; /* linked in */
}

static char version_str[64];
static pthread_once_t version_once = PTHREAD_ONCE_INIT;

/* version_init -- "tierkv X.Y.Z" from the linked library's version number. */
static void version_init(void)
{
    int n = tkv_version();
    snprintf(version_str, sizeof version_str, "tierkv %d.%d.%d", n / 10000, n / 100 % 100, n % 100);
}

static const char *t_version(void)
{
    pthread_once(&version_once, version_init);
    return version_str;
}

/* set_opt -- tkv_options_set with an open-error message naming the option. */
static int set_opt(tkv_options *o, const char *name, const char *value, char *err, size_t errlen)
{
    if (tkv_options_set(o, name, value) == TKV_OK) return 0;
    return eng_errf(err, errlen, "tierkv open: option %s=%s: %s", name, value, tkv_errmsg());
}

/* count_levels -- the number of "L<n>:" lines of the "tkv.levels" report
 * (the tree's depth: its deepest level is never a compaction source). */
static int count_levels(tkv_db *db)
{
    char *s = tkv_property(db, "tkv.levels");
    int n = 0;
    for (const char *p = s; p && *p;) {
        if (p[0] == 'L' && p[1] >= '0' && p[1] <= '9') n++;
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : NULL;
    }
    tkv_free(s);
    return n;
}

/* logger_main -- the TKV_BENCH_PROPERTY_LOG thread. */
static void *logger_main(void *arg)
{
    engine *e = arg;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!__atomic_load_n(&e->stop_logging, __ATOMIC_ACQUIRE)) {
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double t = (double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
        static const char *const props[] = {"tkv.sched", "tkv.matrix", "tkv.stats"};
        /* mono= is CLOCK_MONOTONIC, to line the log up with kernel traces
         * (trace_clock=mono) or other tools' timestamps. */
        fprintf(e->log, "=== t=%.1f mono=%.6f\n", t, (double)now.tv_sec + (double)now.tv_nsec / 1e9);
        for (size_t i = 0; i < sizeof props / sizeof props[0]; i++) {
            char *s = tkv_property(e->db, props[i]);
            if (s) fputs(s, e->log);
            tkv_free(s);
        }
        fflush(e->log);
        for (int i = 0; i < 10 && !__atomic_load_n(&e->stop_logging, __ATOMIC_ACQUIRE); i++) eng_sleep_ms(100);
    }
    return NULL;
}

/* log_event -- the TKV_BENCH_EVENT_LOG listener (on the tkv-events thread). */
static void log_event(const tkv_event *ev, void *arg)
{
    static const char *const names[] = {"?",          "flush_begin",      "flush_end",      "column_begin",
                                        "column_end", "compaction_begin", "compaction_end", "stall_begin",
                                        "stall_end",  "bg_error"};
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    int t = ev->type > 0 && ev->type <= TKV_EVENT_BG_ERROR ? ev->type : 0;
    fprintf(arg, "mono=%.6f %s job=%llu level=%d status=%d micros=%llu read=%llu written=%llu%s%s\n",
            (double)now.tv_sec + (double)now.tv_nsec / 1e9, names[t], (unsigned long long)ev->job, ev->level,
            ev->status, (unsigned long long)ev->micros, (unsigned long long)ev->bytes_read,
            (unsigned long long)ev->bytes_written, ev->message ? " " : "", ev->message ? ev->message : "");
}

static int t_open(const engine_config *cfg, engine **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!cfg || !cfg->dir) return eng_errf(err, errlen, "tierkv open: no directory given");
    tkv_options *o = tkv_options_new();
    if (!o) return eng_errf(err, errlen, "tierkv open: out of memory");
    char num[32];
    int rc = 0;
    snprintf(num, sizeof num, "%llu", (unsigned long long)cfg->memtable_bytes);
    rc = rc ? rc : set_opt(o, "memtable_size", num, err, errlen);
    snprintf(num, sizeof num, "%d", cfg->memtables);
    rc = rc ? rc : set_opt(o, "memtables", num, err, errlen);
    snprintf(num, sizeof num, "%llu", (unsigned long long)cfg->cache_bytes);
    rc = rc ? rc : set_opt(o, "block_cache_size", num, err, errlen);
    rc = rc ? rc : set_opt(o, "direct_io", cfg->direct_io ? "1" : "0", err, errlen);
    rc = rc ? rc : set_opt(o, "bloom_bits_per_key", "10", err, errlen);
    rc = rc ? rc : set_opt(o, "block_size", "4K", err, errlen);
    rc = rc ? rc : set_opt(o, "compression", "lz4", err, errlen);
    for (size_t i = 0; rc == 0 && i < cfg->n_tkv_opts; i++) {
        const char *kv = cfg->tkv_opts[i];
        const char *eq = kv ? strchr(kv, '=') : NULL;
        if (!eq || eq == kv) {
            rc = eng_errf(err, errlen, "tierkv open: option \"%s\" is not of the form name=value", kv ? kv : "(null)");
            break;
        }
        char name[128];
        size_t nn = (size_t)(eq - kv);
        if (nn >= sizeof name) {
            rc = eng_errf(err, errlen, "tierkv open: option name too long in \"%s\"", kv);
            break;
        }
        memcpy(name, kv, nn);
        name[nn] = '\0';
        rc = set_opt(o, name, eq + 1, err, errlen);
    }
    if (rc) {
        tkv_options_free(o);
        return rc;
    }
    engine *e = calloc(1, sizeof *e);
    if (!e) {
        tkv_options_free(o);
        return eng_errf(err, errlen, "tierkv open: out of memory");
    }
    const char *evpath = getenv("TKV_BENCH_EVENT_LOG");
    if (evpath && *evpath && (e->events = fopen(evpath, "a"))) tkv_options_set_listener(o, log_event, e->events);
    rc = tkv_open(cfg->dir, o, &e->db);
    tkv_options_free(o);
    if (rc != TKV_OK) {
        eng_errf(err, errlen, "tierkv open %s: %s (%s)", cfg->dir, tkv_strerror(rc), tkv_errmsg());
        if (e->events) fclose(e->events);
        free(e);
        return rc < 0 ? rc : -1;
    }
    e->wflags = cfg->sync ? TKV_SYNC : 0;
    char *opts = tkv_property(e->db, "tkv.options");
    uint64_t trig = 4;
    if (opts && eng_find_u64(opts, "l0_compaction_trigger=", &trig) < 0) trig = 4;
    e->l0_trigger = trig ? (int)trig : 1;
    size_t len = 0;
    if (opts) {
        eng_flatten(opts);
        eng_appendf(e->describe, sizeof e->describe, &len, "%s", opts);
    } else {
        eng_appendf(e->describe, sizeof e->describe, &len, "tkv.options=unavailable(%s)", tkv_errmsg());
    }
    eng_appendf(e->describe, sizeof e->describe, &len, " write_flags=%s", cfg->sync ? "TKV_SYNC" : "0");
    tkv_free(opts);
    e->nlevels = count_levels(e->db);
    const char *logpath = getenv("TKV_BENCH_PROPERTY_LOG");
    if (logpath && *logpath && (e->log = fopen(logpath, "a"))) {
        e->logging = pthread_create(&e->logger, NULL, logger_main, e) == 0;
        if (!e->logging) fclose(e->log);
    }
    *out = e;
    return 0;
}

static void t_close(engine *e)
{
    if (!e) return;
    if (e->logging) {
        __atomic_store_n(&e->stop_logging, 1, __ATOMIC_RELEASE);
        pthread_join(e->logger, NULL);
        fclose(e->log);
        e->logging = 0;
    }
    int rc = tkv_close(e->db);
    if (rc != TKV_OK) {
        /* TKV_BUSY (iterators still open) leaves the handle open: a harness
         * bug; say so rather than leak silently. Other errors close anyway. */
        fprintf(stderr, "tierkv close: %s (%s)\n", tkv_strerror(rc), tkv_errmsg());
        if (rc == TKV_BUSY) return;
    }
    if (e->events) fclose(e->events); /* tkv_close delivered the queued events */
    free(e);
}

static const char *t_describe(engine *e) { return e->describe; }

static int t_put(engine *e, const char *k, size_t kn, const char *v, size_t vn)
{
    int rc = tkv_put(e->db, k, kn, v, vn, e->wflags);
    return rc == TKV_OK ? 0 : tkv_fail(rc, "put");
}

static int t_del(engine *e, const char *k, size_t kn)
{
    int rc = tkv_delete(e->db, k, kn, e->wflags);
    return rc == TKV_OK ? 0 : tkv_fail(rc, "delete");
}

static int t_del_range(engine *e, const char *b, size_t bn, const char *end, size_t en)
{
    int rc = tkv_delete_range(e->db, b, bn, end, en, e->wflags);
    return rc == TKV_OK ? 0 : tkv_fail(rc, "delete_range");
}

static int t_get(engine *e, const char *k, size_t kn, size_t *vn)
{
    void *v = NULL;
    size_t n = 0;
    int rc = tkv_get(e->db, NULL, k, kn, &v, &n);
    *vn = 0;
    if (rc == TKV_NOT_FOUND) return 1;
    if (rc != TKV_OK) return tkv_fail(rc, "get");
    eng_touch(v, n);
    *vn = n;
    tkv_free(v);
    return 0;
}

/* Up to this many keys use stack arrays in multi_get. */
#define MG_STACK 64

static int t_multi_get(engine *e, size_t n, const char *const *keys, const size_t *kns, int *found)
{
    void *sv[MG_STACK];
    size_t sl[MG_STACK];
    int ss[MG_STACK];
    void **vals = sv;
    size_t *vlens = sl;
    int *st = ss;
    if (n > MG_STACK) {
        vals = malloc(n * sizeof *vals);
        vlens = malloc(n * sizeof *vlens);
        st = malloc(n * sizeof *st);
        if (!vals || !vlens || !st) {
            free(vals);
            free(vlens);
            free(st);
            return eng_fail(-1, "tierkv multi_get: out of memory for %zu keys", n);
        }
    }
    int rc = tkv_multi_get(e->db, NULL, n, (const void *const *)keys, kns, vals, vlens, st);
    int out = 0;
    if (rc != TKV_OK) out = tkv_fail(rc, "multi_get");
    for (size_t i = 0; rc == TKV_OK && i < n; i++) {
        found[i] = st[i] == TKV_OK;
        if (st[i] == TKV_OK) eng_touch(vals[i], vlens[i]);
        else if (st[i] != TKV_NOT_FOUND && out == 0)
            out = eng_fail(st[i], "tierkv multi_get: key %zu: %s", i, tkv_strerror(st[i]));
        tkv_free(vals[i]);
    }
    if (n > MG_STACK) {
        free(vals);
        free(vlens);
        free(st);
    }
    return out;
}

static engine_iter *t_iter_new(engine *e)
{
    engine_iter *it = malloc(sizeof *it);
    if (!it) {
        eng_fail(-1, "tierkv iter_new: out of memory");
        return NULL;
    }
    int rc = tkv_iter_new(e->db, NULL, &it->it);
    if (rc != TKV_OK) {
        tkv_fail(rc, "iter_new");
        free(it);
        return NULL;
    }
    return it;
}

static void t_iter_seek(engine_iter *it, const char *k, size_t kn) { tkv_iter_seek(it->it, k, kn); }
static void t_iter_seek_first(engine_iter *it) { tkv_iter_seek_first(it->it); }
static void t_iter_seek_last(engine_iter *it) { tkv_iter_seek_last(it->it); }
static void t_iter_next(engine_iter *it) { tkv_iter_next(it->it); }
static void t_iter_prev(engine_iter *it) { tkv_iter_prev(it->it); }

static int t_iter_valid(engine_iter *it)
{
    if (tkv_iter_valid(it->it)) return 1;
    int rc = tkv_iter_status(it->it);
    if (rc != TKV_OK) tkv_fail(rc, "iterator");
    return 0;
}

static void t_iter_entry(engine_iter *it, size_t *kn, size_t *vn)
{
    const void *k = tkv_iter_key(it->it, kn);
    const void *v = tkv_iter_value(it->it, vn);
    eng_touch(k, *kn);
    eng_touch(v, *vn);
}

static void t_iter_free(engine_iter *it)
{
    if (!it) return;
    tkv_iter_free(it->it);
    free(it);
}

/* tree_busy -- from a "tkv.stats" report: 1 while flush or compaction work is
 * pending (an immutable memtable, L0 files >= l0_compaction_trigger, or a
 * level L1..L(n-2) at or above its size target: the compaction thread's own
 * score >= 1 rule, src/db/compact_pick.c), 0 when quiet, -1 if unparsable. */
static int tree_busy(const engine *e, const char *stats)
{
    const char *p = strstr(stats, "memtable.immutable: count=");
    if (!p) return -1;
    if (strtoull(p + strlen("memtable.immutable: count="), NULL, 10) > 0) return 1;
    int seen_l0 = 0;
    for (p = strstr(stats, "level.L"); p; p = strstr(p + 1, "\nlevel.L")) {
        if (*p == '\n') p++;
        int lvl;
        unsigned long long files = 0, bytes = 0, target = 0;
        int n = sscanf(p, "level.L%d: files=%llu bytes=%llu target=%llu", &lvl, &files, &bytes, &target);
        if (n < 3) return -1;
        if (lvl == 0) {
            seen_l0 = 1;
            if (files >= (unsigned long long)e->l0_trigger) return 1;
        } else if (n == 4 && target && lvl < e->nlevels - 1 && bytes >= target) {
            return 1;
        }
    }
    /* l0=matrix: a running column or a compactor still to drain */
    p = strstr(stats, "\nmatrix: ");
    if (p) {
        const char *bz = strstr(p, "busy=");
        if (bz && bz[5] == '1') return 1;
    }
    return seen_l0 ? 0 : -1;
}

/* work_done -- flushes + compactions + trivial moves so far (changes whenever
 * background work completes). */
static uint64_t work_done(const char *stats)
{
    uint64_t sum = 0, v;
    if (eng_find_u64(stats, "flush: count=", &v) == 0) sum += v;
    if (eng_find_u64(stats, "compaction.trivial_moves: ", &v) == 0) sum += v;
    for (const char *p = strstr(stats, "\ncompaction."); p; p = strstr(p + 1, "\ncompaction.")) {
        char name[32];
        unsigned long long cnt;
        if (sscanf(p + 1, "compaction.%31[^:]: count=%llu", name, &cnt) == 2) sum += cnt;
    }
    return sum;
}

static int t_wait_idle(engine *e)
{
    int rc = tkv_flush(e->db);
    if (rc != TKV_OK) return tkv_fail(rc, "wait_idle: flush");
    double start = eng_now_s();
    uint64_t last_work = UINT64_MAX;
    for (;;) {
        char *s = tkv_property(e->db, "tkv.stats");
        if (!s) return eng_fail(-1, "tierkv wait_idle: property tkv.stats: %s", tkv_errmsg());
        int busy = tree_busy(e, s);
        uint64_t work = work_done(s);
        char bg[128] = "";
        const char *b = strstr(s, "background_error: ");
        if (b) sscanf(b, "background_error: %127[^\n]", bg);
        tkv_free(s);
        if (busy < 0) return eng_fail(-1, "tierkv wait_idle: cannot parse the tkv.stats report");
        if (bg[0] && strcmp(bg, "none") != 0) return eng_fail(-1, "tierkv wait_idle: background error: %s", bg);
        /* Quiet twice in a row with no work finished in between. */
        if (!busy && work == last_work) return 0;
        last_work = busy ? UINT64_MAX : work;
        if (eng_now_s() - start > ENG_IDLE_TIMEOUT_S)
            return eng_fail(-1, "tierkv wait_idle: compaction still pending after %.0f s", ENG_IDLE_TIMEOUT_S);
        eng_sleep_ms(ENG_IDLE_POLL_MS);
    }
}

static int t_stats(engine *e, engine_stats *out)
{
    out->device_bytes_written = out->stall_count = out->stall_micros = out->pmem_bytes_written = -1;
    out->detail[0] = '\0';
    char *s = tkv_property(e->db, "tkv.stats");
    if (!s) return eng_fail(-1, "tierkv stats: property tkv.stats: %s", tkv_errmsg());
    /* Device bytes: write_bytes summed over every io.<class> line. */
    uint64_t dev = 0, v;
    int nio = 0;
    for (const char *p = strstr(s, "\nio."); p; p = strstr(p + 1, "\nio.")) {
        const char *nl = strchr(p + 1, '\n');
        const char *w = strstr(p, "write_bytes=");
        if (w && (!nl || w < nl) && eng_find_u64(w, "write_bytes=", &v) == 0) {
            dev += v;
            nio++;
        }
    }
    if (nio) out->device_bytes_written = (int64_t)dev;
    const char *st = strstr(s, "stalls: ");
    uint64_t slow, stops, micros;
    if (st && eng_find_u64(st, "slowdowns=", &slow) == 0 && eng_find_u64(st, "stops=", &stops) == 0 &&
        eng_find_u64(st, "stall_micros=", &micros) == 0) {
        out->stall_count = (int64_t)(slow + stops);
        out->stall_micros = (int64_t)micros;
    }
    /* l0=matrix: bytes persisted to the pool ("pmem: write_bytes=N"). */
    const char *pm = strstr(s, "\npmem");
    if (pm) {
        const char *nl = strchr(pm + 1, '\n');
        const char *w = strstr(pm, "write_bytes=");
        if (w && (!nl || w < nl) && eng_find_u64(w, "write_bytes=", &v) == 0) out->pmem_bytes_written = (int64_t)v;
    }
    /* Detail: write amplification, flushes, compactions per class, cache hit rate. */
    size_t len = 0;
    char wamp[32] = "?", hit[32] = "?";
    const char *p = strstr(s, "write_amplification: ");
    if (p) sscanf(p, "write_amplification: %31s", wamp);
    p = strstr(s, "hit_rate=");
    if (p) sscanf(p, "hit_rate=%31s", hit);
    eng_appendf(out->detail, sizeof out->detail, &len, "wamp=%s", wamp);
    if (eng_find_u64(s, "flush: count=", &v) == 0)
        eng_appendf(out->detail, sizeof out->detail, &len, " flushes=%llu", (unsigned long long)v);
    for (p = strstr(s, "\ncompaction."); p; p = strstr(p + 1, "\ncompaction.")) {
        char name[32];
        unsigned long long cnt;
        if (sscanf(p + 1, "compaction.%31[^:]: count=%llu", name, &cnt) == 2)
            eng_appendf(out->detail, sizeof out->detail, &len, " compactions.%s=%llu", name, cnt);
    }
    if (eng_find_u64(s, "compaction.trivial_moves: ", &v) == 0)
        eng_appendf(out->detail, sizeof out->detail, &len, " trivial_moves=%llu", (unsigned long long)v);
    eng_appendf(out->detail, sizeof out->detail, &len, " cache_hit_rate=%s", hit);
    tkv_free(s);
    /* The scheduler: deep-compaction pauses and aborts, long write stalls. */
    s = tkv_property(e->db, "tkv.sched");
    if (s) {
        static const char *const keys[] = {
            "pauses=", "aborts=", "stalls_over_10ms=", "max_stall_us=", "stops_flush_running="};
        eng_appendf(out->detail, sizeof out->detail, &len, " sched:");
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            if (eng_find_u64(s, keys[i], &v) == 0)
                eng_appendf(out->detail, sizeof out->detail, &len, " %s%llu", keys[i], (unsigned long long)v);
        tkv_free(s);
    }
    return 0;
}

const engine_ops engine_tierkv_ops = {
    .name = "tierkv",
    .available = t_available,
    .version = t_version,
    .open = t_open,
    .close = t_close,
    .describe = t_describe,
    .put = t_put,
    .del = t_del,
    .del_range = t_del_range,
    .get = t_get,
    .multi_get = t_multi_get,
    .iter_new = t_iter_new,
    .iter_seek = t_iter_seek,
    .iter_seek_first = t_iter_seek_first,
    .iter_seek_last = t_iter_seek_last,
    .iter_valid = t_iter_valid,
    .iter_next = t_iter_next,
    .iter_prev = t_iter_prev,
    .iter_entry = t_iter_entry,
    .iter_free = t_iter_free,
    .wait_idle = t_wait_idle,
    .stats = t_stats,
    .last_error = eng_last_error,
};
