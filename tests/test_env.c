// SPDX-License-Identifier: Apache-2.0
/*
 * test_env.c -- several databases sharing one tkv_env (src/db/env.c):
 *  - env_contract: settings (unknown names, bad values, refused after the
 *    first open: TKV_BUSY), tkv_env_free refused while a database is open,
 *    NULLs.
 *  - env_pool_budget: pools past pmem_budget are refused at open with
 *    TKV_NO_SPACE, before anything is created; closing gives the bytes back;
 *    a reopened pool is counted at its own size.
 *  - env_shared_cache: two databases whose SSTs have the same file numbers
 *    read through one block cache: each gets its own data, and the cache is
 *    the env's (its capacity, hits from both).
 *  - env_eight: eight databases of one env filled at once by eight writer
 *    threads, with small memtables and pools so that flushes, columns and
 *    compactions run: every database finished its fill and flushed and ran
 *    columns (none starved); their internal I/O went through the env's one
 *    limiter, which granted no more than T x time + one burst; every
 *    database equals its model, also after reopen.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "db/env.h"
#include "testutil.h"

/* env_options -- small options using env, plus name/value pairs (NULL-ended). */
static tkv_options *env_options(tkv_env *env, const char *first, ...)
{
    tkv_options *o = tu_small_options();
    assert_int_equal(tkv_options_set_env(o, env), TKV_OK);
    va_list ap;
    va_start(ap, first);
    for (const char *name = first; name; name = va_arg(ap, const char *)) {
        const char *value = va_arg(ap, const char *);
        assert_int_equal(tkv_options_set(o, name, value), TKV_OK);
    }
    va_end(ap);
    return o;
}

static void env_contract(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("env_contract");
    assert_int_equal(tkv_env_free(NULL), TKV_OK);
    assert_int_equal(tkv_options_set_env(NULL, NULL), TKV_INVALID);
    tkv_env *env = tkv_env_new();
    assert_non_null(env);
    assert_int_equal(tkv_env_set(env, "no_such_setting", "1M"), TKV_INVALID);
    assert_non_null(strstr(tkv_errmsg(), "no_such_setting"));
    assert_int_equal(tkv_env_set(env, "block_cache_size", "lots"), TKV_INVALID);
    assert_int_equal(tkv_env_set(env, "pmem_budget", "2T"), TKV_INVALID);
    assert_int_equal(tkv_env_set(NULL, "pmem_budget", "1G"), TKV_INVALID);
    assert_int_equal(tkv_env_set(env, "block_cache_size", "2M"), TKV_OK);
    assert_int_equal(tkv_env_set(env, "pmem_budget", "1G"), TKV_OK);

    tkv_options *o = env_options(env, NULL);
    char *a = tu_path(dir, "a"), *b = tu_path(dir, "b");
    tkv_db *da = tu_open_ok(a, o);
    /* fixed from the first open: refused, and nothing changes */
    assert_int_equal(tkv_env_set(env, "block_cache_size", "4M"), TKV_BUSY);
    assert_non_null(strstr(tkv_errmsg(), "block_cache_size"));
    assert_int_equal(tkv_env_set(env, "pmem_budget", "0"), TKV_BUSY);
    assert_int_equal(tu_prop_u64(da, "tkv.stats", "block_cache: capacity="), 2u << 20);
    /* in use: refused, and the env still works for the next open */
    assert_int_equal(tkv_env_free(env), TKV_BUSY);
    assert_non_null(strstr(tkv_errmsg(), "1 database"));
    tkv_db *db = tu_open_ok(b, o);
    assert_int_equal(tkv_put(db, "k", 1, "v", 1, 0), TKV_OK);
    tu_close_ok(da);
    assert_int_equal(tkv_env_free(env), TKV_BUSY); /* b is still open */
    tu_close_ok(db);
    /* closed: still fixed (the settings never change once used) */
    assert_int_equal(tkv_env_set(env, "pmem_budget", "2G"), TKV_BUSY);
    assert_int_equal(tkv_env_free(env), TKV_OK);
    tkv_options_free(o);
    free(a);
    free(b);
    tu_rmrf(dir);
    tu_tmpdir_free(dir);
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static void env_pool_budget(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("env_pool_budget");
    tkv_env *env = tkv_env_new();
    assert_non_null(env);
    assert_int_equal(tkv_env_set(env, "pmem_budget", "40M"), TKV_OK);
    tkv_options *o16 = env_options(env, "pmem_size", "16M", NULL);
    tkv_options *o32 = env_options(env, "pmem_size", "32M", NULL);
    tkv_options *sst = env_options(env, "l0", "sst", NULL);
    char *a = tu_path(dir, "a"), *b = tu_path(dir, "b"), *c = tu_path(dir, "c"), *d = tu_path(dir, "d");
    tkv_db *da = tu_open_ok(a, o16);
    tkv_db *dbb = tu_open_ok(b, o16); /* 32M of 40M */
    tkv_db *dc = NULL;
    assert_int_equal(tkv_open(c, o16, &dc), TKV_NO_SPACE);
    assert_null(dc);
    assert_non_null(strstr(tkv_errmsg(), "pmem_budget"));
    assert_false(exists(c));         /* refused before anything was created */
    tkv_db *dd = tu_open_ok(d, sst); /* l0=sst has no pool: nothing counted */
    tu_close_ok(da);
    assert_int_equal(tkv_open(c, o32, &dc), TKV_NO_SPACE); /* 16 + 32 > 40 */
    dc = tu_open_ok(c, o16);                               /* the bytes of a came back */
    tu_close_ok(dc);
    /* a reopened pool is counted at its own size (pmem_size unset): c's 16M
     * fits beside b's 16M, a fresh pool would be 1G */
    tkv_options *dflt = env_options(env, NULL);
    assert_int_equal(tkv_options_set(dflt, "pmem_size", "0"), TKV_OK);
    dc = tu_open_ok(c, dflt);
    char *e = tu_path(dir, "e");
    tkv_db *de = NULL;
    assert_int_equal(tkv_open(e, dflt, &de), TKV_NO_SPACE); /* the default 1G */
    tu_close_ok(dc);
    tu_close_ok(dbb);
    tu_close_ok(dd);
    assert_int_equal(tkv_env_free(env), TKV_OK);
    tkv_options_free(o16);
    tkv_options_free(o32);
    tkv_options_free(sst);
    tkv_options_free(dflt);
    free(a);
    free(b);
    free(c);
    free(d);
    free(e);
    tu_rmrf(dir);
    tu_tmpdir_free(dir);
}

/* fill_sst -- n keys "k%06d" -> "<tag>-%06d-..." into db and m, flushed to SSTs. */
static void fill_sst(tkv_db *db, tu_model *m, const char *tag, int n)
{
    char k[16], v[200];
    for (int i = 0; i < n; i++) {
        snprintf(k, sizeof k, "k%06d", i);
        int vn = snprintf(v, sizeof v, "%s-%06d-%0150d", tag, i, i);
        assert_int_equal(tu_put_model(db, m, k, strlen(k), v, (size_t)vn, 0), TKV_OK);
    }
    assert_int_equal(tkv_flush(db), TKV_OK);
}

/* cache_line -- the numbers of tkv.stats' block_cache line. */
static void cache_line(tkv_db *db, unsigned long long *cap, unsigned long long *usage, unsigned long long *hits)
{
    char *p = tkv_property(db, "tkv.stats");
    assert_non_null(p);
    const char *l = strstr(p, "block_cache: ");
    assert_non_null(l);
    assert_int_equal(sscanf(l, "block_cache: capacity=%llu usage=%llu hits=%llu", cap, usage, hits), 3);
    tkv_free(p);
}

static void env_shared_cache(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("env_shared_cache");
    tkv_env *env = tkv_env_new();
    assert_non_null(env);
    assert_int_equal(tkv_env_set(env, "block_cache_size", "8M"), TKV_OK);
    /* l0=sst, no compactions: the two databases make the same file numbers */
    tkv_options *o = env_options(env, "l0", "sst", "l0_compaction_trigger", "1000", "l0_slowdown_trigger", "1000",
                                 "l0_stop_trigger", "1000", "preload_tables", "0", NULL);
    char *a = tu_path(dir, "a"), *b = tu_path(dir, "b");
    tkv_db *da = tu_open_ok(a, o), *dbb = tu_open_ok(b, o);
    tu_model *ma = tu_model_new(), *mb = tu_model_new();
    fill_sst(da, ma, "a", 2000);
    fill_sst(dbb, mb, "b", 2000);
    uint64_t *na, *nb;
    size_t ca = tu_list_numbered(a, ".sst", &na), cb = tu_list_numbered(b, ".sst", &nb);
    assert_true(ca > 0 && cb > 0);
    assert_true(tu_count_missing(na, ca, nb, cb) < ca); /* some file number is in both */
    free(na);
    free(nb);
    for (int round = 0; round < 2; round++) { /* the second round reads from the cache */
        tu_check_db(da, NULL, ma, "db a through the shared cache");
        tu_check_db(dbb, NULL, mb, "db b through the shared cache");
    }
    /* one cache: the env's capacity, the same usage and hits seen from both */
    unsigned long long cap_a, use_a, hits_a, cap_b, use_b, hits_b;
    cache_line(da, &cap_a, &use_a, &hits_a);
    cache_line(dbb, &cap_b, &use_b, &hits_b);
    assert_int_equal(cap_a, 8u << 20);
    assert_int_equal(cap_b, 8u << 20); /* not the databases' own block_cache_size (1M) */
    assert_true(hits_a > 0);
    assert_int_equal(hits_a, hits_b);
    assert_int_equal(use_a, use_b);
    tu_close_reopen_check(da, a, o, ma, "db a reopened");
    tu_close_reopen_check(dbb, b, o, mb, "db b reopened");
    assert_int_equal(tkv_env_free(env), TKV_OK);
    tu_model_free(ma);
    tu_model_free(mb);
    tkv_options_free(o);
    free(a);
    free(b);
    tu_rmrf(dir);
    tu_tmpdir_free(dir);
}

/* The threads of the process by name, sampled while the databases work. */
typedef struct thread_census {
    int stop;
    int samples;
    int max_pool;   /* "tkv-bg": the env's pool */
    int max_own;    /* the per-database background threads an env replaces */
    int max_tkv;    /* every thread of the library */
    int max_mon;    /* "tkv-sched-mon": the env's one monitor thread */
    char other[32]; /* a library thread of a name not expected */
} thread_census;

/* Per-database helpers that stay with an env (docs/options.md): they sleep
 * most of the time and are not background work threads. */
static const char *const HELPERS[] = {"tkv-wal-wb", "tkv-wal-map", "tkv-trash", "tkv-pool-wb", "tkv-prefault"};
#define NHELPERS (int)(sizeof HELPERS / sizeof HELPERS[0])

/* census_once -- counts the threads of this process by name. */
static void census_once(thread_census *c)
{
    DIR *d = opendir("/proc/self/task");
    if (!d) return;
    int pool = 0, own = 0, tkv = 0, mon = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char path[300], name[32] = {0};
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue; /* it ended meanwhile */
        if (fgets(name, sizeof name, f)) name[strcspn(name, "\n")] = 0;
        fclose(f);
        if (strncmp(name, "tkv-", 4) != 0) continue;
        tkv++;
        int helper = 0;
        for (int i = 0; i < NHELPERS; i++) helper |= !strcmp(name, HELPERS[i]);
        if (!strcmp(name, "tkv-bg")) pool++;
        else if (!strcmp(name, "tkv-sched-mon")) mon++;
        else if (!strcmp(name, "tkv-flush") || !strcmp(name, "tkv-l0") || !strcmp(name, "tkv-deep") ||
                 !strcmp(name, "tkv-column"))
            own++;
        else if (!helper && !c->other[0]) snprintf(c->other, sizeof c->other, "%s", name);
    }
    closedir(d);
    c->samples++;
    if (pool > c->max_pool) c->max_pool = pool;
    if (own > c->max_own) c->max_own = own;
    if (tkv > c->max_tkv) c->max_tkv = tkv;
    if (mon > c->max_mon) c->max_mon = mon;
}

static void *census_main(void *arg)
{
    thread_census *c = arg;
    while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
        census_once(c);
        usleep(2000);
    }
    return NULL;
}

#define NDB      8
#define NTHREADS 3 /* background_threads: fewer than one database alone had */

typedef struct env_writer {
    tkv_db *db;
    tu_model *m;
    uint64_t seed;
    int n, done;
} env_writer;

/* writer_main -- n puts of random keys of one database (keys repeat: overwrites). */
static void *writer_main(void *arg)
{
    env_writer *w = arg;
    tu_rng r;
    tu_rng_init(&r, w->seed);
    char k[24], v[400];
    for (int i = 0; i < w->n; i++) {
        int kn = snprintf(k, sizeof k, "key%08llu", (unsigned long long)tu_rng_below(&r, (uint64_t)w->n * 2));
        size_t vn = (size_t)tu_rng_range(&r, 100, sizeof v);
        tu_rng_fill(&r, v, vn);
        if (tkv_put(w->db, k, (size_t)kn, v, vn, 0) != TKV_OK) return NULL; /* done stays 0: the test fails */
        tu_model_put(w->m, k, (size_t)kn, v, vn);
    }
    w->done = 1;
    return NULL;
}

/* sched_total -- the sum of fields f[0..n) of tkv.sched's "total_bytes:" line. */
static uint64_t sched_total(tkv_db *db, const char *const *f, int n)
{
    char *p = tkv_property(db, "tkv.sched");
    assert_non_null(p);
    const char *l = strstr(p, "total_bytes:");
    assert_non_null(l);
    uint64_t sum = 0;
    for (int i = 0; i < n; i++) {
        const char *x = strstr(l, f[i]);
        assert_non_null(x);
        sum += strtoull(x + strlen(f[i]), NULL, 10);
    }
    tkv_free(p);
    return sum;
}

/* check_limiter -- the env's limiter: every database's internal bytes
 * passed it (their sum is at most what it granted), and it granted at most
 * T per second of its life, plus the one burst it starts with. */
static void check_limiter(tkv_env *env, tkv_db **dbs)
{
    static const char *const internal[] = {" flush=", " compact-l0=", " compact-deep="};
    rl_stats rs;
    uint64_t T, age_us, granted = 0, used = 0;
    /* the databases' bytes first: each was granted before it was counted,
     * and their background work goes on meanwhile */
    for (int i = 0; i < NDB; i++) used += sched_total(dbs[i], internal, 3);
    env_sched_stats(env, &rs, &T, &age_us);
    for (int p = 0; p < RL_NPRIO; p++) granted += rs.granted[p];
    double allowed = (double)T * (double)age_us / 1e6 + (double)(T / 1000 * 5 + 1); /* a 5 ms burst at T */
    printf("env limiter: T=%llu age=%.2fs granted=%llu (%.1f%% of T x age) internal=%llu\n", (unsigned long long)T,
           (double)age_us / 1e6, (unsigned long long)granted, 100.0 * (double)granted / allowed,
           (unsigned long long)used);
    assert_true(granted > 0);
    assert_true(used <= granted);
    assert_true((double)granted <= allowed);
}

/* check_census -- during the fill: no database ran threads of its own for
 * background work or its monitor, the env's pool had at most NTHREADS, the
 * env one monitor thread, and every other library thread was a
 * per-database helper. The pool's own counters agree. */
static void check_census(const thread_census *c, tkv_env *env)
{
    printf("threads: samples=%d pool<=%d own<=%d monitors<=%d library<=%d\n", c->samples, c->max_pool, c->max_own,
           c->max_mon, c->max_tkv);
    assert_true(c->samples > 0);
    assert_int_equal(c->max_own, 0);
    assert_true(c->max_pool >= 1 && c->max_pool <= NTHREADS);
    assert_int_equal(c->max_mon, 1);
    assert_true(c->max_tkv <= NTHREADS + 1 + NDB * NHELPERS);
    if (c->other[0]) fail_msg("unexpected library thread %s", c->other);
    bg_pool_stats ps;
    bg_pool_get_stats(env_pool(env), &ps);
    assert_int_equal(ps.threads, NTHREADS);
    assert_true(ps.busy_max >= 1 && ps.busy_max <= NTHREADS);
    assert_true(ps.steps[0] > 0 && ps.steps[1] > 0);
}

static void env_eight(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("env_eight");
    tkv_env *env = tkv_env_new();
    assert_non_null(env);
    assert_int_equal(tkv_env_set(env, "device_bandwidth", "24M"), TKV_OK); /* I in [8M, 14M]: it binds */
    assert_int_equal(tkv_env_set(env, "block_cache_size", "4M"), TKV_OK);
    assert_int_equal(tkv_env_set(env, "pmem_budget", "32M"), TKV_OK);
    assert_int_equal(tkv_env_set(env, "background_threads", "3"), TKV_OK);
    /* a 4M pool holds less than the fill: every database needs its columns to finish */
    tkv_options *o = env_options(env, "pmem_size", "4M", "min_internal_bandwidth", "8M", NULL);
    char *paths[NDB];
    tkv_db *dbs[NDB];
    env_writer w[NDB];
    pthread_t th[NDB];
    uint64_t seed = tu_seed();
    for (int i = 0; i < NDB; i++) {
        char name[16];
        snprintf(name, sizeof name, "db%d", i);
        paths[i] = tu_path(dir, name);
        dbs[i] = tu_open_ok(paths[i], o);
        w[i] = (env_writer){.db = dbs[i], .m = tu_model_new(), .seed = seed + (uint64_t)i, .n = 6000 * (int)tu_scale()};
    }
    thread_census census = {0};
    pthread_t ct;
    assert_int_equal(pthread_create(&ct, NULL, census_main, &census), 0);
    for (int i = 0; i < NDB; i++) assert_int_equal(pthread_create(&th[i], NULL, writer_main, &w[i]), 0);
    for (int i = 0; i < NDB; i++) assert_int_equal(pthread_join(th[i], NULL), 0);
    __atomic_store_n(&census.stop, 1, __ATOMIC_RELEASE);
    assert_int_equal(pthread_join(ct, NULL), 0);
    check_census(&census, env);
    for (int i = 0; i < NDB; i++) {
        assert_int_equal(w[i].done, 1);
        assert_true(tu_prop_u64(dbs[i], "tkv.matrix", "flush: rows=") > 0);
        assert_true(tu_prop_u64(dbs[i], "tkv.matrix", "columns: count=") > 0);
    }
    check_limiter(env, dbs);
    for (int i = 0; i < NDB; i++) tu_check_db(dbs[i], NULL, w[i].m, "after the fill");
    for (int i = 0; i < NDB; i++) tu_close_reopen_check(dbs[i], paths[i], o, w[i].m, "reopened");
    thread_census after = {0};
    census_once(&after);
    assert_int_equal(after.max_tkv, 0); /* the last close stopped the pool's threads */
    bg_pool_stats ps;
    bg_pool_get_stats(env_pool(env), &ps);
    assert_int_equal(ps.threads, 0);
    assert_int_equal(tkv_env_free(env), TKV_OK);
    for (int i = 0; i < NDB; i++) {
        tu_model_free(w[i].m);
        free(paths[i]);
    }
    tkv_options_free(o);
    tu_rmrf(dir);
    tu_tmpdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(env_contract),
        cmocka_unit_test(env_pool_budget),
        cmocka_unit_test(env_shared_cache),
        cmocka_unit_test(env_eight),
    };
    tu_seed();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
