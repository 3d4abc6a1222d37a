// SPDX-License-Identifier: Apache-2.0
/*
 * engine_rocksdb.c -- the "rocksdb", "rocksdb-l0nvm" and "rocksdb-deb"
 * engines: RocksDB's C API (<rocksdb/c.h>) from a library loaded at run time
 * with dlopen, so that two builds can sit in one process and a missing
 * library only disables its engine.
 *
 *   "rocksdb"        the release build shipped in the Maven jar
 *                    org.rocksdb:rocksdbjni:10.10.1 (librocksdbjni-linux64.so,
 *                    which exports the whole C API and needs no JVM; fetched
 *                    by bench/fetch_rocksdbjni.sh). $TKV_ROCKSDB_LIB overrides.
 *   "rocksdb-l0nvm"  the same build and settings, with the WAL and the first
 *                    of two data paths in engine_config.nvm_dir (MatrixKV's
 *                    "RocksDB-L0-NVM", ATC'20): see set_nvm_paths.
 *   "rocksdb-deb"    Debian's librocksdb.so.7.8 (7.8.3, built with
 *                    assertions). $TKV_ROCKSDB_DEB_LIB overrides.
 *
 * Every function is called through a table filled with dlsym; each entry is
 * declared with __typeof__ of the prototype in <rocksdb/c.h> (7.8.3), so the
 * compiler checks every call. Only functions both 7.8.3 and 10.x export are
 * used, and the library handles are never closed (RocksDB keeps background
 * threads and static state for the life of the process).
 *
 * Caveat: the two builds can be loaded into one process, but their C++
 * STB_GNU_UNIQUE symbols (27 in common between 7.8.3 and 10.10.1, e.g.
 * CompressionDict::GetEmptyDict()::empty_dict) are bound process-wide to the
 * first build loaded, whatever the dlopen flags. Benchmarks should open one
 * RocksDB build per process; describe() flags a process that has both.
 *
 * multi_get is DB::MultiGet's batched form (rocksdb_batched_multi_get_cf:
 * per file one filter pass and the data blocks read together) when the build
 * exports rocksdb_get_default_column_family_handle (8.x+, so the release
 * build), else rocksdb_multi_get (Debian's 7.8: a Get per key inside).
 * ReadOptions are the defaults (async_io off; the release build has no
 * io_uring support compiled in, so it would read synchronously anyway).
 *
 * Memory: values from rocksdb_get/rocksdb_multi_get are malloc'd inside the
 * library and go back through rocksdb_free. Error strings and property values
 * are strdup'd (so allocated by whatever malloc the process uses, even with
 * RTLD_DEEPBIND) and are released with the bench's own free().
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <rocksdb/c.h>

#include "bench/engine_impl.h"

/* Every RocksDB C function the engines use. */
#define RDB_FUNCS(X)                                                                                                   \
    X(rocksdb_options_create)                                                                                          \
    X(rocksdb_options_destroy)                                                                                         \
    X(rocksdb_options_increase_parallelism)                                                                            \
    X(rocksdb_options_set_create_if_missing)                                                                           \
    X(rocksdb_options_set_write_buffer_size)                                                                           \
    X(rocksdb_options_set_max_write_buffer_number)                                                                     \
    X(rocksdb_options_set_max_background_jobs)                                                                         \
    X(rocksdb_options_set_target_file_size_base)                                                                       \
    X(rocksdb_options_set_compression)                                                                                 \
    X(rocksdb_options_set_use_direct_reads)                                                                            \
    X(rocksdb_options_set_use_direct_io_for_flush_and_compaction)                                                      \
    X(rocksdb_options_set_block_based_table_factory)                                                                   \
    X(rocksdb_block_based_options_create)                                                                              \
    X(rocksdb_block_based_options_destroy)                                                                             \
    X(rocksdb_block_based_options_set_block_cache)                                                                     \
    X(rocksdb_block_based_options_set_block_size)                                                                      \
    X(rocksdb_block_based_options_set_filter_policy)                                                                   \
    X(rocksdb_filterpolicy_create_bloom_full)                                                                          \
    X(rocksdb_cache_create_lru)                                                                                        \
    X(rocksdb_ratelimiter_create)                                                                                      \
    X(rocksdb_ratelimiter_destroy)                                                                                     \
    X(rocksdb_options_set_ratelimiter)                                                                                 \
    X(rocksdb_dbpath_create)                                                                                           \
    X(rocksdb_dbpath_destroy)                                                                                          \
    X(rocksdb_options_set_db_paths)                                                                                    \
    X(rocksdb_options_set_wal_dir)                                                                                     \
    X(rocksdb_cache_destroy)                                                                                           \
    X(rocksdb_open)                                                                                                    \
    X(rocksdb_close)                                                                                                   \
    X(rocksdb_writeoptions_create)                                                                                     \
    X(rocksdb_writeoptions_destroy)                                                                                    \
    X(rocksdb_writeoptions_set_sync)                                                                                   \
    X(rocksdb_readoptions_create)                                                                                      \
    X(rocksdb_readoptions_destroy)                                                                                     \
    X(rocksdb_put)                                                                                                     \
    X(rocksdb_delete)                                                                                                  \
    X(rocksdb_get)                                                                                                     \
    X(rocksdb_multi_get)                                                                                               \
    X(rocksdb_batched_multi_get_cf)                                                                                    \
    X(rocksdb_pinnableslice_value)                                                                                     \
    X(rocksdb_pinnableslice_destroy)                                                                                   \
    X(rocksdb_column_family_handle_destroy)                                                                            \
    X(rocksdb_free)                                                                                                    \
    X(rocksdb_create_iterator)                                                                                         \
    X(rocksdb_iter_destroy)                                                                                            \
    X(rocksdb_iter_valid)                                                                                              \
    X(rocksdb_iter_seek)                                                                                               \
    X(rocksdb_iter_seek_to_first)                                                                                      \
    X(rocksdb_iter_seek_to_last)                                                                                       \
    X(rocksdb_iter_next)                                                                                               \
    X(rocksdb_iter_prev)                                                                                               \
    X(rocksdb_iter_key)                                                                                                \
    X(rocksdb_iter_value)                                                                                              \
    X(rocksdb_iter_get_error)                                                                                          \
    X(rocksdb_flushoptions_create)                                                                                     \
    X(rocksdb_flushoptions_destroy)                                                                                    \
    X(rocksdb_flushoptions_set_wait)                                                                                   \
    X(rocksdb_flush)                                                                                                   \
    X(rocksdb_property_value)                                                                                          \
    X(rocksdb_property_int)

/* Newer than Debian's 7.8 header (RocksDB 8.x C API), so declared here and
 * looked up optionally: NULL when the loaded build lacks it. */
typedef rocksdb_ratelimiter_t *(*ratelimiter_create_auto_tuned_fn)(int64_t rate_bytes_per_sec, int64_t refill_period_us,
                                                                   int32_t fairness);
/* rocksdb_get_default_column_family_handle (RocksDB 8.x): the handle the
 * batched MultiGet needs for a database opened without column families. */
typedef rocksdb_column_family_handle_t *(*get_default_cf_fn)(rocksdb_t *db);
typedef void (*delete_range_cf_fn)(rocksdb_t *db, const rocksdb_writeoptions_t *wo, rocksdb_column_family_handle_t *cf,
                                   const char *b, size_t bn, const char *e, size_t en, char **err);

typedef struct rdb_api {
#define RDB_FIELD(f) __typeof__(&f) f;
    RDB_FUNCS(RDB_FIELD)
#undef RDB_FIELD
    ratelimiter_create_auto_tuned_fn ratelimiter_create_auto_tuned; /* optional */
    get_default_cf_fn get_default_column_family_handle;             /* optional */
    delete_range_cf_fn delete_range_cf;                             /* optional (DeleteRange) ... */
    /* ... or through a write batch, for a build without the default
     * family's handle (rocksdb-deb): */
    __typeof__(&rocksdb_writebatch_create) writebatch_create;
    __typeof__(&rocksdb_writebatch_delete_range) writebatch_delete_range;
    __typeof__(&rocksdb_write) write;
    __typeof__(&rocksdb_writebatch_destroy) writebatch_destroy;
} rdb_api;

/* One loadable RocksDB build. */
typedef struct rdb_lib {
    const char *engine; /* engine name */
    int release;        /* 1: rocksdbjni release build, 0: Debian's */
    pthread_mutex_t mu; /* guards the lazy load */
    int state;          /* 0 not tried yet, 1 loaded, -1 unavailable (why) */
    void *handle;
    rdb_api api;
    char path[PATH_MAX]; /* the file actually loaded */
    char version[PATH_MAX + 128];
    char why[1024];
} rdb_lib;

static rdb_lib LIB_RELEASE = {.engine = "rocksdb", .release = 1, .mu = PTHREAD_MUTEX_INITIALIZER};
static rdb_lib LIB_DEB = {.engine = "rocksdb-deb", .release = 0, .mu = PTHREAD_MUTEX_INITIALIZER};

#define JNI_SO           "librocksdbjni-linux64.so"
#define ROCKSDB_THREADS  2 /* increase_parallelism / max_background_jobs (tierkv: 1 flush + 1 compaction thread) */
#define TARGET_FILE_SIZE (64ull << 20)
/* rocksdb-l0nvm: the first path's target when engine_config.nvm_bytes is 0
 * (tierkv's default pool size), and the last path's target (leveled
 * compaction falls back to the last path without looking at its target). */
#define NVM_DEFAULT_BYTES (1ull << 30)
#define SSD_PATH_BYTES    (1ull << 40)

/* try_open -- dlopen path and resolve every function; 0 or -1 (why set). */
static int try_open(rdb_lib *lib, const char *path)
{
    char why[512];
    void *h = eng_dlopen(path, why, sizeof why);
    if (!h) {
        snprintf(lib->why, sizeof lib->why, "%s: dlopen %s: %s", lib->engine, path, why);
        return -1;
    }
#define RDB_SYM(f)                                                                                                     \
    lib->api.f = (__typeof__(lib->api.f))dlsym(h, #f);                                                                 \
    if (!lib->api.f) {                                                                                                 \
        snprintf(lib->why, sizeof lib->why, "%s: %s does not export %s", lib->engine, path, #f);                       \
        return -1; /* the handle stays open: closing a half-used RocksDB is not worth the risk */                      \
    }
    RDB_FUNCS(RDB_SYM)
#undef RDB_SYM
    lib->api.ratelimiter_create_auto_tuned =
        (ratelimiter_create_auto_tuned_fn)dlsym(h, "rocksdb_ratelimiter_create_auto_tuned");
    lib->api.get_default_column_family_handle = (get_default_cf_fn)dlsym(h, "rocksdb_get_default_column_family_handle");
    lib->api.delete_range_cf = (delete_range_cf_fn)dlsym(h, "rocksdb_delete_range_cf");
    lib->api.writebatch_create = (__typeof__(lib->api.writebatch_create))dlsym(h, "rocksdb_writebatch_create");
    lib->api.writebatch_delete_range =
        (__typeof__(lib->api.writebatch_delete_range))dlsym(h, "rocksdb_writebatch_delete_range");
    lib->api.write = (__typeof__(lib->api.write))dlsym(h, "rocksdb_write");
    lib->api.writebatch_destroy = (__typeof__(lib->api.writebatch_destroy))dlsym(h, "rocksdb_writebatch_destroy");
    lib->handle = h;
    eng_dl_path(h, lib->path, sizeof lib->path);
    if (!lib->path[0]) snprintf(lib->path, sizeof lib->path, "%s", path);
    return 0;
}

/* set_version -- the version string of a loaded library: for the release
 * build, from rocksdbjni.version (written by fetch_rocksdbjni.sh next to the
 * .so); for Debian's, from the file name librocksdb.so.X.Y.Z. RocksDB 7.8
 * has no C version function. */
static void set_version(rdb_lib *lib)
{
    char ver[64] = "";
    if (lib->release) {
        char vf[PATH_MAX + 32];
        snprintf(vf, sizeof vf, "%s", lib->path);
        char *slash = strrchr(vf, '/');
        if (slash) *slash = '\0';
        else snprintf(vf, sizeof vf, ".");
        strcat(vf, "/rocksdbjni.version");
        size_t len = 0;
        if (eng_read_line(vf, ver, sizeof ver) == 0)
            eng_appendf(lib->version, sizeof lib->version, &len, "RocksDB %s (rocksdbjni jar, release build)", ver);
        else eng_appendf(lib->version, sizeof lib->version, &len, "RocksDB (version unknown: no %s)", vf);
        return;
    }
    const char *base = strrchr(lib->path, '/');
    base = base ? base + 1 : lib->path;
    const char *so = strstr(base, ".so.");
    if (so) snprintf(ver, sizeof ver, "%s", so + 4);
    int debian = !strncmp(lib->path, "/usr/lib/", 9) || !strncmp(lib->path, "/lib/", 5);
    size_t len = 0;
    if (debian)
        eng_appendf(lib->version, sizeof lib->version, &len, "RocksDB %s (Debian librocksdb, assertions on)",
                    ver[0] ? ver : "(version unknown)");
    else
        eng_appendf(lib->version, sizeof lib->version, &len, "RocksDB %s (%s)", ver[0] ? ver : "(version unknown)",
                    lib->path);
}

/* load_release -- $TKV_ROCKSDB_LIB, else build/deps/ under the current
 * directory, else deps/ next to (or one level above) the executable. */
static int load_release(rdb_lib *lib)
{
    const char *env = getenv("TKV_ROCKSDB_LIB");
    if (env && *env) return try_open(lib, env);
    char cand[3][PATH_MAX + 64];
    int n = 0;
    snprintf(cand[n++], sizeof cand[0], "build/deps/" JNI_SO);
    char exe[PATH_MAX];
    if (eng_exe_dir(exe, sizeof exe) == 0) {
        snprintf(cand[n++], sizeof cand[0], "%s/deps/" JNI_SO, exe);
        snprintf(cand[n++], sizeof cand[0], "%s/../deps/" JNI_SO, exe);
    }
    for (int i = 0; i < n; i++)
        if (eng_file_exists(cand[i])) return try_open(lib, cand[i]);
    size_t len = 0;
    eng_appendf(lib->why, sizeof lib->why, &len, "%s: %s not found (looked at", lib->engine, JNI_SO);
    for (int i = 0; i < n; i++) eng_appendf(lib->why, sizeof lib->why, &len, " %s", cand[i]);
    eng_appendf(lib->why, sizeof lib->why, &len, "); run bash bench/fetch_rocksdbjni.sh or set TKV_ROCKSDB_LIB");
    return -1;
}

/* load_deb -- $TKV_ROCKSDB_DEB_LIB, else Debian's librocksdb by full path,
 * then by the sonames the dynamic linker knows. */
static int load_deb(rdb_lib *lib)
{
    const char *env = getenv("TKV_ROCKSDB_DEB_LIB");
    if (env && *env) return try_open(lib, env);
    static const char *const cand[] = {"/usr/lib/x86_64-linux-gnu/librocksdb.so.7.8", "librocksdb.so.7.8",
                                       "librocksdb.so.7", "librocksdb.so"};
    char first[sizeof lib->why] = "";
    for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++) {
        if (try_open(lib, cand[i]) == 0) return 0;
        if (!first[0]) snprintf(first, sizeof first, "%s", lib->why);
    }
    size_t len = 0;
    lib->why[0] = '\0';
    eng_appendf(lib->why, sizeof lib->why, &len,
                "%s (also tried librocksdb.so.7.8, .so.7, .so; apt install librocksdb-dev)", first);
    return -1;
}

/* lib_load -- loads lib once (thread-safe); 0 if usable. */
static int lib_load(rdb_lib *lib)
{
    pthread_mutex_lock(&lib->mu);
    if (lib->state == 0) {
        int rc = lib->release ? load_release(lib) : load_deb(lib);
        if (rc == 0) set_version(lib);
        else snprintf(lib->version, sizeof lib->version, "RocksDB (unavailable)");
        lib->state = rc == 0 ? 1 : -1;
    }
    int ok = lib->state == 1;
    pthread_mutex_unlock(&lib->mu);
    return ok ? 0 : -1;
}

/* ---------------------------------------------------------------- engine */

struct engine {
    rdb_lib *lib;
    const rdb_api *api;
    const char *name;
    rocksdb_t *db;
    rocksdb_options_t *opts;
    rocksdb_cache_t *cache;
    rocksdb_writeoptions_t *wo;
    rocksdb_readoptions_t *ro;
    rocksdb_column_family_handle_t *cf; /* the default family: batched MultiGet; NULL: rocksdb_multi_get */
    char describe[2048];
};

struct engine_iter {
    engine *e;
    rocksdb_iterator_t *it;
};

/* rdb_error -- turns a RocksDB error string into this thread's last error
 * ("<engine> <op>: <message>") and frees it; returns -1. */
static int rdb_error(const engine *e, const char *op, char *err)
{
    eng_fail(-1, "%s %s: %s", e->name, op, err ? err : "unknown error");
    free(err); /* strdup'd inside RocksDB: see the header comment */
    return -1;
}

static int lib_available(rdb_lib *lib, char *err, size_t errlen)
{
    if (lib_load(lib) == 0) return 1;
    if (err && errlen) snprintf(err, errlen, "%s", lib->why);
    return 0;
}

static const char *lib_version(rdb_lib *lib)
{
    lib_load(lib);
    return lib->version;
}

static int r_available_release(char *err, size_t errlen) { return lib_available(&LIB_RELEASE, err, errlen); }
static int r_available_deb(char *err, size_t errlen) { return lib_available(&LIB_DEB, err, errlen); }
static const char *r_version_release(void) { return lib_version(&LIB_RELEASE); }
static const char *r_version_deb(void) { return lib_version(&LIB_DEB); }

/* options_file_value -- the value of "key=" in the newest OPTIONS-NNNNNN
 * file RocksDB wrote into dir (the library's own statement of its version
 * and of the options it sanitized), or "unknown". */
static void options_file_value(const char *dir, const char *key, char *out, size_t n)
{
    snprintf(out, n, "unknown");
    DIR *d = opendir(dir);
    if (!d) return;
    unsigned long best = 0;
    char name[300] = "";
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        unsigned long num;
        if (sscanf(de->d_name, "OPTIONS-%lu", &num) == 1 && num >= best && strlen(de->d_name) < sizeof name) {
            best = num;
            snprintf(name, sizeof name, "%s", de->d_name);
        }
    }
    closedir(d);
    if (!name[0]) return;
    char path[PATH_MAX + 320];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f) return;
    char line[512];
    size_t kl = strlen(key);
    while (fgets(line, sizeof line, f)) {
        const char *p = line + strspn(line, " \t");
        char v[64];
        if (!strncmp(p, key, kl) && p[kl] == '=' && sscanf(p + kl + 1, "%63s", v) == 1) {
            snprintf(out, n, "%s", v);
            break;
        }
    }
    fclose(f);
}

static void engine_free(engine *e)
{
    const rdb_api *a = e->api;
    if (e->cf) a->rocksdb_column_family_handle_destroy(e->cf);
    if (e->db) a->rocksdb_close(e->db);
    if (e->wo) a->rocksdb_writeoptions_destroy(e->wo);
    if (e->ro) a->rocksdb_readoptions_destroy(e->ro);
    if (e->opts) a->rocksdb_options_destroy(e->opts);
    if (e->cache) a->rocksdb_cache_destroy(e->cache);
    free(e);
}

/* engine_new -- engine `name` on lib with its option objects created
 * (nothing set yet), or NULL with the message in err. */
static engine *engine_new(rdb_lib *lib, const char *name, const engine_config *cfg, char *err, size_t errlen)
{
    const rdb_api *a = &lib->api;
    engine *e = calloc(1, sizeof *e);
    if (!e) {
        eng_errf(err, errlen, "%s open: out of memory", name);
        return NULL;
    }
    e->lib = lib;
    e->api = a;
    e->name = name;
    e->opts = a->rocksdb_options_create();
    e->cache = a->rocksdb_cache_create_lru((size_t)cfg->cache_bytes);
    e->wo = a->rocksdb_writeoptions_create();
    e->ro = a->rocksdb_readoptions_create();
    if (!e->opts || !e->cache || !e->wo || !e->ro) {
        engine_free(e);
        eng_errf(err, errlen, "%s open: out of memory creating options", name);
        return NULL;
    }
    return e;
}

/* set_common_options -- what every RocksDB engine is given (engine.h): the
 * DRAM split, block-based tables with bloom filters, lz4, direct I/O,
 * background threads, per-write sync. 0, or -1 with the message in err. */
static int set_common_options(engine *e, const engine_config *cfg, char *err, size_t errlen)
{
    const rdb_api *a = e->api;
    rocksdb_options_t *o = e->opts;
    rocksdb_block_based_table_options_t *bbto = a->rocksdb_block_based_options_create();
    if (!bbto) return eng_errf(err, errlen, "%s open: out of memory creating options", e->name);
    a->rocksdb_options_increase_parallelism(o, ROCKSDB_THREADS);
    a->rocksdb_options_set_create_if_missing(o, 1);
    a->rocksdb_options_set_write_buffer_size(o, (size_t)cfg->memtable_bytes);
    a->rocksdb_options_set_max_write_buffer_number(o, cfg->memtables);
    a->rocksdb_block_based_options_set_block_cache(bbto, e->cache);
    a->rocksdb_block_based_options_set_block_size(bbto, 4096);
    /* The table options take ownership of the filter policy. */
    a->rocksdb_block_based_options_set_filter_policy(bbto, a->rocksdb_filterpolicy_create_bloom_full(10));
    a->rocksdb_options_set_block_based_table_factory(o, bbto); /* copies bbto */
    a->rocksdb_block_based_options_destroy(bbto);
    a->rocksdb_options_set_compression(o, rocksdb_lz4_compression);
    a->rocksdb_options_set_use_direct_reads(o, cfg->direct_io ? 1 : 0);
    a->rocksdb_options_set_use_direct_io_for_flush_and_compaction(o, cfg->direct_io ? 1 : 0);
    a->rocksdb_options_set_max_background_jobs(o, ROCKSDB_THREADS);
    a->rocksdb_options_set_target_file_size_base(o, TARGET_FILE_SIZE);
    a->rocksdb_writeoptions_set_sync(e->wo, cfg->sync ? 1 : 0);
    return 0;
}

/* set_rate_limiter -- cfg's rate limiter (if any) on the options, and what
 * it is ("none", "generic:BPS", "auto_tuned:BPS") in desc[n]. 0, or -1 with
 * the message in err. */
static int set_rate_limiter(engine *e, const engine_config *cfg, char *desc, size_t n, char *err, size_t errlen)
{
    const rdb_api *a = e->api;
    snprintf(desc, n, "none");
    if (!cfg->rate_limit) return 0;
    if (cfg->rate_limit_auto && !a->ratelimiter_create_auto_tuned)
        return eng_errf(err, errlen, "%s open: this build has no rocksdb_ratelimiter_create_auto_tuned", e->name);
    /* RocksDB's defaults: 100 ms refill period, fairness 10 */
    rocksdb_ratelimiter_t *rl = cfg->rate_limit_auto
                                    ? a->ratelimiter_create_auto_tuned((int64_t)cfg->rate_limit, 100000, 10)
                                    : a->rocksdb_ratelimiter_create((int64_t)cfg->rate_limit, 100000, 10);
    if (!rl) return eng_errf(err, errlen, "%s open: cannot create the rate limiter", e->name);
    a->rocksdb_options_set_ratelimiter(e->opts, rl); /* the options hold their own reference */
    a->rocksdb_ratelimiter_destroy(rl);
    snprintf(desc, n, "%s:%llu", cfg->rate_limit_auto ? "auto_tuned" : "generic", (unsigned long long)cfg->rate_limit);
    return 0;
}

/* set_nvm_paths -- rocksdb-l0nvm's placement, MatrixKV's "RocksDB-L0-NVM":
 * the WAL in <nvm_dir>/wal and two data paths, <nvm_dir>/sst with a target
 * of cfg->nvm_bytes, then the database directory. RocksDB writes flushes to
 * the first path; leveled compaction writes level N to the first path whose
 * target holds the target sizes of levels 0..N (L0 counted as
 * max_bytes_for_level_base, 256 MiB by default), so with 1 GiB, L0 and L1
 * are placed there and L2 on in the directory. A target plans placement; it
 * does not cap the bytes. With two paths RocksDB turns
 * level_compaction_dynamic_level_bytes off (describe() shows it). The
 * placement goes to desc[n]. 0, or -1 with the message in err. */
static int set_nvm_paths(engine *e, const engine_config *cfg, char *desc, size_t n, char *err, size_t errlen)
{
    const rdb_api *a = e->api;
    if (!cfg->nvm_dir || !cfg->nvm_dir[0]) return eng_errf(err, errlen, "%s open: no nvm_dir given", e->name);
    char wal[PATH_MAX], sst[PATH_MAX];
    if (snprintf(wal, sizeof wal, "%s/wal", cfg->nvm_dir) >= (int)sizeof wal ||
        snprintf(sst, sizeof sst, "%s/sst", cfg->nvm_dir) >= (int)sizeof sst)
        return eng_errf(err, errlen, "%s open: nvm_dir %s: path too long", e->name, cfg->nvm_dir);
    /* RocksDB creates wal/ and sst/ itself, but only one level down. */
    if (mkdir(cfg->nvm_dir, 0755) != 0 && errno != EEXIST)
        return eng_errf(err, errlen, "%s open: cannot create %s: %s", e->name, cfg->nvm_dir, strerror(errno));
    uint64_t nvm_bytes = cfg->nvm_bytes ? cfg->nvm_bytes : NVM_DEFAULT_BYTES;
    rocksdb_dbpath_t *p0 = a->rocksdb_dbpath_create(sst, nvm_bytes);
    rocksdb_dbpath_t *p1 = a->rocksdb_dbpath_create(cfg->dir, SSD_PATH_BYTES);
    const rocksdb_dbpath_t *paths[2] = {p0, p1};
    if (p0 && p1) a->rocksdb_options_set_db_paths(e->opts, paths, 2); /* copies them */
    if (p0) a->rocksdb_dbpath_destroy(p0);
    if (p1) a->rocksdb_dbpath_destroy(p1);
    if (!p0 || !p1) return eng_errf(err, errlen, "%s open: out of memory creating db_paths", e->name);
    a->rocksdb_options_set_wal_dir(e->opts, wal);
    snprintf(desc, n, "wal_dir=%s db_paths=%s:%llu,%s:%llu", wal, sst, (unsigned long long)nvm_bytes, cfg->dir,
             SSD_PATH_BYTES);
    return 0;
}

/* nvm_storage -- what holds nvm_dir, next to the database directory dir:
 * "tmpfs" (DRAM), "same_device_as_db", "other_device" or "unknown". */
static const char *nvm_storage(const char *nvm_dir, const char *dir)
{
    struct statfs fs;
    struct stat sn, sd;
    if (statfs(nvm_dir, &fs) == 0 && fs.f_type == TMPFS_MAGIC) return "tmpfs";
    if (stat(nvm_dir, &sn) != 0 || stat(dir, &sd) != 0) return "unknown";
    return sn.st_dev == sd.st_dev ? "same_device_as_db" : "other_device";
}

/* describe_open -- e->describe of a database just opened with cfg: every
 * setting the set_* functions made, as key=value; paths is set_nvm_paths'
 * placement ("" for the database directory alone). */
static void describe_open(engine *e, const engine_config *cfg, const char *limiter, const char *paths)
{
    char optver[64], dynamic[64];
    options_file_value(cfg->dir, "rocksdb_version", optver, sizeof optver);
    options_file_value(cfg->dir, "level_compaction_dynamic_level_bytes", dynamic, sizeof dynamic);
    rdb_lib *lib = e->lib, *other = lib == &LIB_RELEASE ? &LIB_DEB : &LIB_RELEASE;
    pthread_mutex_lock(&other->mu);
    int coresident = other->state == 1;
    pthread_mutex_unlock(&other->mu);
    size_t len = 0;
    /* Both RocksDB builds in one process: dlopen flags keep their ordinary
     * symbols apart, but not the C++ STB_GNU_UNIQUE ones (static locals of
     * inline functions, e.g. CompressionDict::GetEmptyDict()::empty_dict),
     * which the dynamic linker binds process-wide to the first build loaded.
     * Say so in the configuration record. */
    if (coresident)
        eng_appendf(e->describe, sizeof e->describe, &len, "coresident_with=%s(shares_GNU_UNIQUE_symbols) ",
                    other->engine);
    eng_appendf(e->describe, sizeof e->describe, &len,
                "lib=%s dlopen=%s options_file_rocksdb_version=%s increase_parallelism=%d max_background_jobs=%d "
                "create_if_missing=1 write_buffer_size=%llu max_write_buffer_number=%d "
                "table=block_based block_cache=lru:%llu block_size=4096 filter_policy=bloom_full:10 "
                "compression=lz4 use_direct_reads=%d use_direct_io_for_flush_and_compaction=%d "
                "target_file_size_base=%llu rate_limiter=%s wal=on sync=%d reads=rocksdb_get(copy) "
                "multi_get=%s options_file_level_compaction_dynamic_level_bytes=%s ",
                lib->path, eng_dlopen_mode(), optver, ROCKSDB_THREADS, ROCKSDB_THREADS,
                (unsigned long long)cfg->memtable_bytes, cfg->memtables, (unsigned long long)cfg->cache_bytes,
                cfg->direct_io ? 1 : 0, cfg->direct_io ? 1 : 0, TARGET_FILE_SIZE, limiter, cfg->sync ? 1 : 0,
                e->cf ? "rocksdb_batched_multi_get_cf(sorted_input=0,async_io=0)" : "rocksdb_multi_get", dynamic);
    if (paths[0])
        eng_appendf(e->describe, sizeof e->describe, &len, "%s nvm_storage=%s ", paths,
                    nvm_storage(cfg->nvm_dir, cfg->dir));
    eng_appendf(e->describe, sizeof e->describe, &len, "other=rocksdb_defaults");
}

/* lib_open -- the common open of engine `name` on lib, with the WAL and the
 * first data path in cfg->nvm_dir if nvm: every setting listed in
 * describe(). */
static int lib_open(rdb_lib *lib, const char *name, int nvm, const engine_config *cfg, engine **out, char *err,
                    size_t errlen)
{
    *out = NULL;
    if (lib_load(lib) < 0) return eng_errf(err, errlen, "%s open: unavailable: %s", name, lib->why);
    if (!cfg || !cfg->dir) return eng_errf(err, errlen, "%s open: no directory given", name);
    engine *e = engine_new(lib, name, cfg, err, errlen);
    if (!e) return -1;
    char limiter[96], paths[3 * PATH_MAX + 64] = "";
    if (set_common_options(e, cfg, err, errlen) < 0 ||
        set_rate_limiter(e, cfg, limiter, sizeof limiter, err, errlen) < 0 ||
        (nvm && set_nvm_paths(e, cfg, paths, sizeof paths, err, errlen) < 0)) {
        engine_free(e);
        return -1;
    }
    char *rerr = NULL;
    e->db = e->api->rocksdb_open(e->opts, cfg->dir, &rerr);
    if (rerr || !e->db) {
        eng_errf(err, errlen, "%s open %s: %s", e->name, cfg->dir, rerr ? rerr : "failed");
        free(rerr);
        engine_free(e);
        return -1;
    }
    /* The batched MultiGet needs the default family's handle, which only
     * 8.x+ C APIs give for a database opened without families. */
    if (e->api->get_default_column_family_handle) e->cf = e->api->get_default_column_family_handle(e->db);
    describe_open(e, cfg, limiter, paths);
    *out = e;
    return 0;
}

static int r_open_release(const engine_config *cfg, engine **out, char *err, size_t errlen)
{
    return lib_open(&LIB_RELEASE, LIB_RELEASE.engine, 0, cfg, out, err, errlen);
}

static int r_open_l0nvm(const engine_config *cfg, engine **out, char *err, size_t errlen)
{
    return lib_open(&LIB_RELEASE, "rocksdb-l0nvm", 1, cfg, out, err, errlen);
}

static int r_open_deb(const engine_config *cfg, engine **out, char *err, size_t errlen)
{
    return lib_open(&LIB_DEB, LIB_DEB.engine, 0, cfg, out, err, errlen);
}

static void r_close(engine *e)
{
    if (e) engine_free(e);
}

static const char *r_describe(engine *e) { return e->describe; }

static int r_put(engine *e, const char *k, size_t kn, const char *v, size_t vn)
{
    char *err = NULL;
    e->api->rocksdb_put(e->db, e->wo, k, kn, v, vn, &err);
    return err ? rdb_error(e, "put", err) : 0;
}

static int r_del(engine *e, const char *k, size_t kn)
{
    char *err = NULL;
    e->api->rocksdb_delete(e->db, e->wo, k, kn, &err);
    return err ? rdb_error(e, "delete", err) : 0;
}

/* r_del_range -- DeleteRange on the default family, or (a build without its
 * handle) a write batch of one DeleteRange: the same write. */
static int r_del_range(engine *e, const char *b, size_t bn, const char *end, size_t en)
{
    const rdb_api *a = e->api;
    char *err = NULL;
    if (a->delete_range_cf && e->cf) {
        a->delete_range_cf(e->db, e->wo, e->cf, b, bn, end, en, &err);
    } else if (a->writebatch_create && a->writebatch_delete_range && a->write && a->writebatch_destroy) {
        rocksdb_writebatch_t *wb = a->writebatch_create();
        if (!wb) return eng_fail(-1, "delete_range: rocksdb_writebatch_create failed");
        a->writebatch_delete_range(wb, b, bn, end, en);
        a->write(e->db, e->wo, wb, &err);
        a->writebatch_destroy(wb);
    } else {
        return eng_fail(-1, "delete_range: this RocksDB library has no DeleteRange in its C API");
    }
    return err ? rdb_error(e, "delete_range", err) : 0;
}

static int r_get(engine *e, const char *k, size_t kn, size_t *vn)
{
    char *err = NULL;
    size_t n = 0;
    char *v = e->api->rocksdb_get(e->db, e->ro, k, kn, &n, &err);
    *vn = 0;
    if (err) {
        if (v) e->api->rocksdb_free(v);
        return rdb_error(e, "get", err);
    }
    if (!v) return 1;
    eng_touch(v, n);
    *vn = n;
    e->api->rocksdb_free(v); /* malloc'd inside RocksDB */
    return 0;
}

/* Up to this many keys use stack arrays in multi_get. */
#define MG_STACK 64

/* r_multi_get_batched -- DB::MultiGet on the array API (batched: keys
 * sorted, per file one filter pass and the blocks read together), values as
 * pinnable slices. */
static int r_multi_get_batched(engine *e, size_t n, const char *const *keys, const size_t *kns, int *found)
{
    rocksdb_pinnableslice_t *sv[MG_STACK], **vals = sv;
    char *se[MG_STACK], **errs = se;
    if (n > MG_STACK) {
        vals = malloc(n * sizeof *vals);
        errs = malloc(n * sizeof *errs);
        if (!vals || !errs) {
            free(vals);
            free(errs);
            return eng_fail(-1, "%s multi_get: out of memory for %zu keys", e->name, n);
        }
    }
    e->api->rocksdb_batched_multi_get_cf(e->db, e->ro, e->cf, n, keys, kns, vals, errs, 0);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        found[i] = vals[i] != NULL;
        if (vals[i]) {
            size_t vn;
            const char *v = e->api->rocksdb_pinnableslice_value(vals[i], &vn);
            eng_touch(v, vn);
            e->api->rocksdb_pinnableslice_destroy(vals[i]);
        }
        if (errs[i]) {
            if (rc == 0) {
                eng_fail(-1, "%s multi_get: key %zu: %s", e->name, i, errs[i]);
                rc = -1;
            }
            free(errs[i]);
        }
    }
    if (n > MG_STACK) {
        free(vals);
        free(errs);
    }
    return rc;
}

static int r_multi_get(engine *e, size_t n, const char *const *keys, const size_t *kns, int *found)
{
    if (e->cf) return r_multi_get_batched(e, n, keys, kns, found);
    char *sv[MG_STACK], *se[MG_STACK];
    size_t sl[MG_STACK];
    char **vals = sv, **errs = se;
    size_t *vlens = sl;
    if (n > MG_STACK) {
        vals = malloc(n * sizeof *vals);
        errs = malloc(n * sizeof *errs);
        vlens = malloc(n * sizeof *vlens);
        if (!vals || !errs || !vlens) {
            free(vals);
            free(errs);
            free(vlens);
            return eng_fail(-1, "%s multi_get: out of memory for %zu keys", e->name, n);
        }
    }
    e->api->rocksdb_multi_get(e->db, e->ro, n, keys, kns, vals, vlens, errs);
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        found[i] = vals[i] != NULL;
        if (vals[i]) {
            eng_touch(vals[i], vlens[i]);
            e->api->rocksdb_free(vals[i]);
        }
        if (errs[i]) {
            if (rc == 0) {
                eng_fail(-1, "%s multi_get: key %zu: %s", e->name, i, errs[i]);
                rc = -1;
            }
            free(errs[i]);
        }
    }
    if (n > MG_STACK) {
        free(vals);
        free(errs);
        free(vlens);
    }
    return rc;
}

static engine_iter *r_iter_new(engine *e)
{
    engine_iter *it = malloc(sizeof *it);
    if (!it) {
        eng_fail(-1, "%s iter_new: out of memory", e->name);
        return NULL;
    }
    it->e = e;
    it->it = e->api->rocksdb_create_iterator(e->db, e->ro);
    if (!it->it) {
        eng_fail(-1, "%s iter_new: rocksdb_create_iterator failed", e->name);
        free(it);
        return NULL;
    }
    return it;
}

static void r_iter_seek(engine_iter *it, const char *k, size_t kn) { it->e->api->rocksdb_iter_seek(it->it, k, kn); }
static void r_iter_seek_first(engine_iter *it) { it->e->api->rocksdb_iter_seek_to_first(it->it); }
static void r_iter_seek_last(engine_iter *it) { it->e->api->rocksdb_iter_seek_to_last(it->it); }
static void r_iter_next(engine_iter *it) { it->e->api->rocksdb_iter_next(it->it); }
static void r_iter_prev(engine_iter *it) { it->e->api->rocksdb_iter_prev(it->it); }

static int r_iter_valid(engine_iter *it)
{
    if (it->e->api->rocksdb_iter_valid(it->it)) return 1;
    char *err = NULL;
    it->e->api->rocksdb_iter_get_error(it->it, &err);
    if (err) rdb_error(it->e, "iterator", err);
    return 0;
}

static void r_iter_entry(engine_iter *it, size_t *kn, size_t *vn)
{
    const char *k = it->e->api->rocksdb_iter_key(it->it, kn);
    const char *v = it->e->api->rocksdb_iter_value(it->it, vn);
    eng_touch(k, *kn);
    eng_touch(v, *vn);
}

static void r_iter_free(engine_iter *it)
{
    if (!it) return;
    it->e->api->rocksdb_iter_destroy(it->it);
    free(it);
}

/* busy -- 1 while a flush or compaction is pending or running, 0 when quiet,
 * -1 if a property cannot be read (name in *bad). */
static int busy(engine *e, const char **bad)
{
    static const char *const props[] = {"rocksdb.mem-table-flush-pending", "rocksdb.num-running-flushes",
                                        "rocksdb.compaction-pending", "rocksdb.num-running-compactions"};
    int any = 0;
    for (size_t i = 0; i < sizeof props / sizeof props[0]; i++) {
        uint64_t v = 0;
        if (e->api->rocksdb_property_int(e->db, props[i], &v) != 0) {
            *bad = props[i];
            return -1;
        }
        any |= v != 0;
    }
    return any;
}

static int r_wait_idle(engine *e)
{
    const rdb_api *a = e->api;
    rocksdb_flushoptions_t *fo = a->rocksdb_flushoptions_create();
    if (!fo) return eng_fail(-1, "%s wait_idle: out of memory", e->name);
    a->rocksdb_flushoptions_set_wait(fo, 1);
    char *err = NULL;
    a->rocksdb_flush(e->db, fo, &err);
    a->rocksdb_flushoptions_destroy(fo);
    if (err) return rdb_error(e, "wait_idle: flush", err);
    double start = eng_now_s();
    int quiet = 0;
    for (;;) {
        const char *bad = NULL;
        int b = busy(e, &bad);
        if (b < 0) return eng_fail(-1, "%s wait_idle: property %s unavailable", e->name, bad);
        /* Quiet on two polls in a row (a finished flush may only then
         * raise compaction-pending). */
        quiet = b ? 0 : quiet + 1;
        if (quiet >= 2) return 0;
        if (eng_now_s() - start > ENG_IDLE_TIMEOUT_S)
            return eng_fail(-1, "%s wait_idle: flush/compaction still pending after %.0f s", e->name,
                            ENG_IDLE_TIMEOUT_S);
        eng_sleep_ms(ENG_IDLE_POLL_MS);
    }
}

/* parse_gb -- the number before " GB" following `tag` (e.g. "written: "),
 * searched from `from`; bytes (RocksDB's GB are 2^30) or -1. */
static int64_t parse_gb(const char *from, const char *tag)
{
    const char *p = from ? strstr(from, tag) : NULL;
    double gb;
    if (!p || sscanf(p + strlen(tag), "%lf GB", &gb) != 1) return -1;
    return (int64_t)(gb * (double)(1ull << 30) + 0.5);
}

/* stall_count -- write stalls (delays + stops) since open from the
 * "rocksdb.stats" text. 10.x: "Write Stall (count): ... total-delays: N, ...
 * total-stops: N" (per column family) plus the DB-wide
 * "write-buffer-manager-limit-stops: N". 7.8: "Stalls(count): N
 * level0_slowdown, N level0_slowdown_with_compaction, N level0_numfiles, ...,
 * interval N total count": the sum of the counters without the
 * "_with_compaction" ones (subsets of their neighbours) and the interval. */
static int64_t stall_count(const char *s)
{
    uint64_t d, t;
    if (eng_find_u64(s, "total-delays: ", &d) == 0 && eng_find_u64(s, "total-stops: ", &t) == 0) {
        uint64_t wbm = 0;
        if (eng_find_u64(s, "write-buffer-manager-limit-stops: ", &wbm) < 0) wbm = 0;
        return (int64_t)(d + t + wbm);
    }
    const char *p = strstr(s, "Stalls(count): ");
    if (!p) return -1;
    p += strlen("Stalls(count): ");
    const char *end = strchr(p, '\n');
    if (!end) end = p + strlen(p);
    int64_t sum = 0;
    int items = 0;
    while (p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma ? comma : end;
        char item[128];
        size_t n = (size_t)(stop - p) < sizeof item - 1 ? (size_t)(stop - p) : sizeof item - 1;
        memcpy(item, p, n);
        item[n] = '\0';
        unsigned long long v;
        char label[100];
        if (sscanf(item, " %llu %99[^\n]", &v, label) == 2 && !strstr(label, "with_compaction")) {
            sum += (int64_t)v;
            items++;
        }
        p = comma ? comma + 1 : end;
    }
    return items ? sum : -1;
}

static int r_stats(engine *e, engine_stats *out)
{
    out->device_bytes_written = out->stall_count = out->stall_micros = out->pmem_bytes_written = -1;
    out->detail[0] = '\0';
    char *s = e->api->rocksdb_property_value(e->db, "rocksdb.stats");
    if (!s) return eng_fail(-1, "%s stats: property rocksdb.stats unavailable", e->name);
    /* "Cumulative stall: 00:00:1.000 H:M:S, 63.7 percent" (DB stats). */
    const char *p = strstr(s, "Cumulative stall: ");
    int h, m;
    double sec;
    if (p && sscanf(p, "Cumulative stall: %d:%d:%lf", &h, &m, &sec) == 3)
        out->stall_micros = ((int64_t)h * 3600 + m * 60) * 1000000 + (int64_t)(sec * 1e6 + 0.5);
    out->stall_count = stall_count(s);
    /* Device bytes: "Cumulative WAL: ... written: X GB" + "Cumulative
     * compaction: X GB write" (which includes flushes: L0's row). Both are
     * printed with 2 decimals, so the figure is good to ~0.01 GiB each. */
    const char *wal = strstr(s, "Cumulative WAL: ");
    int64_t wal_b = parse_gb(wal, "written: ");
    int64_t comp_b = parse_gb(s, "Cumulative compaction: ");
    if (wal_b >= 0 && comp_b >= 0) out->device_bytes_written = wal_b + comp_b;
    size_t len = 0;
    double flush_gb = -1;
    p = strstr(s, "Flush(GB): cumulative ");
    if (p) sscanf(p, "Flush(GB): cumulative %lf", &flush_gb);
    uint64_t pending = 0;
    int has_pending = eng_find_u64(s, "Estimated pending compaction bytes: ", &pending) == 0;
    eng_appendf(out->detail, sizeof out->detail, &len, "wal_gb=%.2f compaction_write_gb=%.2f flush_gb=%.3f",
                wal_b >= 0 ? (double)wal_b / (double)(1ull << 30) : -1.0,
                comp_b >= 0 ? (double)comp_b / (double)(1ull << 30) : -1.0, flush_gb);
    if (has_pending)
        eng_appendf(out->detail, sizeof out->detail, &len, " pending_compaction_bytes=%llu",
                    (unsigned long long)pending);
    eng_appendf(out->detail, sizeof out->detail, &len, " (device bytes from rocksdb.stats text: 0.01 GiB resolution)");
    free(s); /* strdup'd */
    return 0;
}

#define RDB_OPS(NAME, NVM, AVAIL, VERSION, OPEN)                                                                       \
    {                                                                                                                  \
        .name = NAME, .uses_nvm_dir = NVM, .available = AVAIL, .version = VERSION, .open = OPEN, .close = r_close,     \
        .describe = r_describe, .put = r_put, .del = r_del, .del_range = r_del_range, .get = r_get,                    \
        .multi_get = r_multi_get, .iter_new = r_iter_new, .iter_seek = r_iter_seek,                                    \
        .iter_seek_first = r_iter_seek_first, .iter_seek_last = r_iter_seek_last, .iter_valid = r_iter_valid,          \
        .iter_next = r_iter_next, .iter_prev = r_iter_prev, .iter_entry = r_iter_entry, .iter_free = r_iter_free,      \
        .wait_idle = r_wait_idle, .stats = r_stats, .last_error = eng_last_error,                                      \
    }

const engine_ops engine_rocksdb_ops = RDB_OPS("rocksdb", 0, r_available_release, r_version_release, r_open_release);
const engine_ops engine_rocksdb_l0nvm_ops =
    RDB_OPS("rocksdb-l0nvm", 1, r_available_release, r_version_release, r_open_l0nvm);
const engine_ops engine_rocksdb_deb_ops = RDB_OPS("rocksdb-deb", 0, r_available_deb, r_version_deb, r_open_deb);
