// SPDX-License-Identifier: Apache-2.0
/*
 * engine_leveldb.c -- the "leveldb" engine: LevelDB's C API (<leveldb/c.h>)
 * from Debian's libleveldb.so.1d, loaded with dlopen ($TKV_LEVELDB_LIB
 * overrides) and called through a table of __typeof__-checked pointers, as
 * in engine_rocksdb.c (same memory rule: values via leveldb_free, strdup'd
 * error and property strings via free()).
 *
 * LevelDB's fixed shape: one memtable plus one immutable (write_buffer_size =
 * memtable_bytes whatever cfg->memtables says), no direct I/O, no multi_get
 * (a loop of gets), no stall counters. Compression is snappy when the library
 * carries it, else none; describe() says which.
 *
 * wait_idle flushes with leveldb_compact_range over an empty range (begin =
 * 64 bytes of 0xff, end = ""): LevelDB's CompactRange always flushes the
 * memtable first, and a range that overlaps no file compacts nothing, so the
 * tree is not reshaped. It then waits until LevelDB's own compaction scores
 * (from "leveldb.sstables") are all < 1 and "leveldb.stats" has not changed
 * for a second.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dlfcn.h>
#include <leveldb/c.h>

#include "bench/engine_impl.h"

#define LDB_FUNCS(X)                                                                                                   \
    X(leveldb_options_create)                                                                                          \
    X(leveldb_options_destroy)                                                                                         \
    X(leveldb_options_set_create_if_missing)                                                                           \
    X(leveldb_options_set_write_buffer_size)                                                                           \
    X(leveldb_options_set_cache)                                                                                       \
    X(leveldb_options_set_block_size)                                                                                  \
    X(leveldb_options_set_filter_policy)                                                                               \
    X(leveldb_options_set_compression)                                                                                 \
    X(leveldb_options_set_max_open_files)                                                                              \
    X(leveldb_filterpolicy_create_bloom)                                                                               \
    X(leveldb_filterpolicy_destroy)                                                                                    \
    X(leveldb_cache_create_lru)                                                                                        \
    X(leveldb_cache_destroy)                                                                                           \
    X(leveldb_open)                                                                                                    \
    X(leveldb_close)                                                                                                   \
    X(leveldb_writeoptions_create)                                                                                     \
    X(leveldb_writeoptions_destroy)                                                                                    \
    X(leveldb_writeoptions_set_sync)                                                                                   \
    X(leveldb_readoptions_create)                                                                                      \
    X(leveldb_readoptions_destroy)                                                                                     \
    X(leveldb_put)                                                                                                     \
    X(leveldb_delete)                                                                                                  \
    X(leveldb_get)                                                                                                     \
    X(leveldb_free)                                                                                                    \
    X(leveldb_create_iterator)                                                                                         \
    X(leveldb_iter_destroy)                                                                                            \
    X(leveldb_iter_valid)                                                                                              \
    X(leveldb_iter_seek)                                                                                               \
    X(leveldb_iter_seek_to_first)                                                                                      \
    X(leveldb_iter_seek_to_last)                                                                                       \
    X(leveldb_iter_next)                                                                                               \
    X(leveldb_iter_prev)                                                                                               \
    X(leveldb_iter_key)                                                                                                \
    X(leveldb_iter_value)                                                                                              \
    X(leveldb_iter_get_error)                                                                                          \
    X(leveldb_property_value)                                                                                          \
    X(leveldb_compact_range)                                                                                           \
    X(leveldb_major_version)                                                                                           \
    X(leveldb_minor_version)

typedef struct ldb_api {
#define LDB_FIELD(f) __typeof__(&f) f;
    LDB_FUNCS(LDB_FIELD)
#undef LDB_FIELD
} ldb_api;

static struct {
    pthread_mutex_t mu;
    int state; /* 0 not tried, 1 loaded, -1 unavailable */
    void *handle;
    ldb_api api;
    int snappy; /* libsnappy is among the library's dependencies */
    char path[PATH_MAX];
    char version[PATH_MAX + 64];
    char why[1024];
} L = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* LevelDB's compile-time shape (db/dbformat.h, version_set.cc). */
#define LDB_LEVELS       7
#define LDB_L0_TRIGGER   4
#define LDB_L1_BYTES     (10.0 * 1048576.0)
#define LDB_STABLE_POLLS 10 /* 1 s at ENG_IDLE_POLL_MS */

/* load -- dlopens LevelDB once (thread-safe); 0 if usable. */
static int load(void)
{
    pthread_mutex_lock(&L.mu);
    if (L.state == 0) {
        const char *env = getenv("TKV_LEVELDB_LIB");
        const char *path = env && *env ? env : "libleveldb.so.1d";
        char why[512];
        void *h = eng_dlopen(path, why, sizeof why);
        L.state = -1;
        if (!h) {
            snprintf(L.why, sizeof L.why, "leveldb: dlopen %s: %s%s", path, why,
                     env && *env ? "" : " (apt install libleveldb-dev, or set TKV_LEVELDB_LIB)");
        } else {
            L.state = 1;
#define LDB_SYM(f)                                                                                                     \
    L.api.f = (__typeof__(L.api.f))dlsym(h, #f);                                                                       \
    if (!L.api.f && L.state == 1) {                                                                                    \
        snprintf(L.why, sizeof L.why, "leveldb: %s does not export %s", path, #f);                                     \
        L.state = -1;                                                                                                  \
    }
            LDB_FUNCS(LDB_SYM)
#undef LDB_SYM
        }
        if (L.state == 1) {
            L.handle = h;
            eng_dl_path(h, L.path, sizeof L.path);
            if (!L.path[0]) snprintf(L.path, sizeof L.path, "%s", path);
            /* dlsym on a handle searches its dependencies too: snappy's C
             * entry point is there iff LevelDB was linked with snappy. */
            L.snappy = dlsym(h, "snappy_compress") != NULL;
            size_t len = 0;
            eng_appendf(L.version, sizeof L.version, &len, "LevelDB %d.%d (%s)", L.api.leveldb_major_version(),
                        L.api.leveldb_minor_version(),
                        !strncmp(L.path, "/usr/lib/", 9) || !strncmp(L.path, "/lib/", 5) ? "Debian libleveldb"
                                                                                         : L.path);
        } else {
            snprintf(L.version, sizeof L.version, "LevelDB (unavailable)");
        }
    }
    int ok = L.state == 1;
    pthread_mutex_unlock(&L.mu);
    return ok ? 0 : -1;
}

struct engine {
    const ldb_api *api;
    leveldb_t *db;
    leveldb_options_t *opts;
    leveldb_cache_t *cache;
    leveldb_filterpolicy_t *filter; /* not owned by the options: freed after close */
    leveldb_writeoptions_t *wo;
    leveldb_readoptions_t *ro;
    char describe[1024];
};

struct engine_iter {
    const ldb_api *api;
    leveldb_iterator_t *it;
};

/* ldb_error -- "leveldb <op>: <message>" as the last error; frees the
 * strdup'd message; returns -1. */
static int ldb_error(const char *op, char *err)
{
    eng_fail(-1, "leveldb %s: %s", op, err ? err : "unknown error");
    free(err);
    return -1;
}

static int l_available(char *err, size_t errlen)
{
    if (load() == 0) return 1;
    if (err && errlen) snprintf(err, errlen, "%s", L.why);
    return 0;
}

static const char *l_version(void)
{
    load();
    return L.version;
}

static void engine_free(engine *e)
{
    const ldb_api *a = e->api;
    if (e->db) a->leveldb_close(e->db);
    if (e->wo) a->leveldb_writeoptions_destroy(e->wo);
    if (e->ro) a->leveldb_readoptions_destroy(e->ro);
    if (e->opts) a->leveldb_options_destroy(e->opts);
    if (e->filter) a->leveldb_filterpolicy_destroy(e->filter);
    if (e->cache) a->leveldb_cache_destroy(e->cache);
    free(e);
}

static int l_open(const engine_config *cfg, engine **out, char *err, size_t errlen)
{
    *out = NULL;
    if (load() < 0) return eng_errf(err, errlen, "leveldb open: unavailable: %s", L.why);
    if (!cfg || !cfg->dir) return eng_errf(err, errlen, "leveldb open: no directory given");
    const ldb_api *a = &L.api;
    engine *e = calloc(1, sizeof *e);
    if (!e) return eng_errf(err, errlen, "leveldb open: out of memory");
    e->api = a;
    e->opts = a->leveldb_options_create();
    e->cache = a->leveldb_cache_create_lru((size_t)cfg->cache_bytes);
    e->filter = a->leveldb_filterpolicy_create_bloom(10);
    e->wo = a->leveldb_writeoptions_create();
    e->ro = a->leveldb_readoptions_create();
    if (!e->opts || !e->cache || !e->filter || !e->wo || !e->ro) {
        engine_free(e);
        return eng_errf(err, errlen, "leveldb open: out of memory creating options");
    }
    a->leveldb_options_set_create_if_missing(e->opts, 1);
    a->leveldb_options_set_write_buffer_size(e->opts, (size_t)cfg->memtable_bytes);
    a->leveldb_options_set_cache(e->opts, e->cache);
    a->leveldb_options_set_block_size(e->opts, 4096);
    a->leveldb_options_set_filter_policy(e->opts, e->filter);
    a->leveldb_options_set_compression(e->opts, L.snappy ? leveldb_snappy_compression : leveldb_no_compression);
    a->leveldb_options_set_max_open_files(e->opts, 1000);
    a->leveldb_writeoptions_set_sync(e->wo, cfg->sync ? 1 : 0);
    char *lerr = NULL;
    e->db = a->leveldb_open(e->opts, cfg->dir, &lerr);
    if (lerr || !e->db) {
        eng_errf(err, errlen, "leveldb open %s: %s", cfg->dir, lerr ? lerr : "failed");
        free(lerr);
        engine_free(e);
        return -1;
    }
    size_t len = 0;
    eng_appendf(e->describe, sizeof e->describe, &len,
                "lib=%s dlopen=%s create_if_missing=1 write_buffer_size=%llu memtables=2(fixed:1+1_immutable;asked=%d) "
                "block_cache=lru:%llu block_size=4096 filter_policy=bloom:10 compression=%s max_open_files=1000 "
                "direct_io=unsupported%s wal=on sync=%d multi_get=loop_of_get "
                "other=leveldb_defaults(max_file_size=2M,L0_trigger=4)",
                L.path, eng_dlopen_mode(), (unsigned long long)cfg->memtable_bytes, cfg->memtables,
                (unsigned long long)cfg->cache_bytes, L.snappy ? "snappy" : "none(no_snappy_in_library)",
                cfg->direct_io ? "(asked)" : "", cfg->sync ? 1 : 0);
    *out = e;
    return 0;
}

static void l_close(engine *e)
{
    if (e) engine_free(e);
}

static const char *l_describe(engine *e) { return e->describe; }

static int l_put(engine *e, const char *k, size_t kn, const char *v, size_t vn)
{
    char *err = NULL;
    e->api->leveldb_put(e->db, e->wo, k, kn, v, vn, &err);
    return err ? ldb_error("put", err) : 0;
}

static int l_del(engine *e, const char *k, size_t kn)
{
    char *err = NULL;
    e->api->leveldb_delete(e->db, e->wo, k, kn, &err);
    return err ? ldb_error("delete", err) : 0;
}

static int l_get(engine *e, const char *k, size_t kn, size_t *vn)
{
    char *err = NULL;
    size_t n = 0;
    char *v = e->api->leveldb_get(e->db, e->ro, k, kn, &n, &err);
    *vn = 0;
    if (err) {
        if (v) e->api->leveldb_free(v);
        return ldb_error("get", err);
    }
    if (!v) return 1;
    eng_touch(v, n);
    *vn = n;
    e->api->leveldb_free(v);
    return 0;
}

static int l_multi_get(engine *e, size_t n, const char *const *keys, const size_t *kns, int *found)
{
    return eng_multi_get_each(l_get, e, n, keys, kns, found); /* LevelDB has no batched read */
}

static engine_iter *l_iter_new(engine *e)
{
    engine_iter *it = malloc(sizeof *it);
    if (!it) {
        eng_fail(-1, "leveldb iter_new: out of memory");
        return NULL;
    }
    it->api = e->api;
    it->it = e->api->leveldb_create_iterator(e->db, e->ro);
    if (!it->it) {
        eng_fail(-1, "leveldb iter_new: leveldb_create_iterator failed");
        free(it);
        return NULL;
    }
    return it;
}

static void l_iter_seek(engine_iter *it, const char *k, size_t kn) { it->api->leveldb_iter_seek(it->it, k, kn); }
static void l_iter_seek_first(engine_iter *it) { it->api->leveldb_iter_seek_to_first(it->it); }
static void l_iter_seek_last(engine_iter *it) { it->api->leveldb_iter_seek_to_last(it->it); }
static void l_iter_next(engine_iter *it) { it->api->leveldb_iter_next(it->it); }
static void l_iter_prev(engine_iter *it) { it->api->leveldb_iter_prev(it->it); }

static int l_iter_valid(engine_iter *it)
{
    if (it->api->leveldb_iter_valid(it->it)) return 1;
    char *err = NULL;
    it->api->leveldb_iter_get_error(it->it, &err);
    if (err) ldb_error("iterator", err);
    return 0;
}

static void l_iter_entry(engine_iter *it, size_t *kn, size_t *vn)
{
    const char *k = it->api->leveldb_iter_key(it->it, kn);
    const char *v = it->api->leveldb_iter_value(it->it, vn);
    eng_touch(k, *kn);
    eng_touch(v, *vn);
}

static void l_iter_free(engine_iter *it)
{
    if (!it) return;
    it->api->leveldb_iter_destroy(it->it);
    free(it);
}

/* max_score -- LevelDB's compaction score (VersionSet::Finalize) computed
 * from the "leveldb.sstables" listing ("--- level N ---" headers, then one
 * " number:size[smallest .. largest]" line per file): L0 by file count over
 * 4, L1..L5 by bytes over 10 MiB * 10^(L-1). -1 if unparsable. */
static double max_score(const char *sst)
{
    double bytes[LDB_LEVELS] = {0};
    int files[LDB_LEVELS] = {0};
    int level = -1, headers = 0;
    for (const char *p = sst; p && *p;) {
        int l;
        unsigned long long num, size;
        if (sscanf(p, "--- level %d ---", &l) == 1) {
            level = l >= 0 && l < LDB_LEVELS ? l : -1;
            headers++;
        } else if (level >= 0 && sscanf(p, " %llu:%llu[", &num, &size) == 2) {
            bytes[level] += (double)size;
            files[level]++;
        }
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : NULL;
    }
    if (!headers) return -1;
    double best = (double)files[0] / LDB_L0_TRIGGER, target = LDB_L1_BYTES;
    for (int l = 1; l < LDB_LEVELS - 1; l++, target *= 10)
        if (bytes[l] / target > best) best = bytes[l] / target;
    return best;
}

static int l_wait_idle(engine *e)
{
    const ldb_api *a = e->api;
    /* Flush (see the header comment): CompactRange over an empty range. */
    char begin[64];
    memset(begin, 0xff, sizeof begin);
    a->leveldb_compact_range(e->db, begin, sizeof begin, "", 0);
    double start = eng_now_s();
    char *prev = NULL;
    int stable = 0;
    for (;;) {
        char *sst = a->leveldb_property_value(e->db, "leveldb.sstables");
        char *st = a->leveldb_property_value(e->db, "leveldb.stats");
        if (!sst || !st) {
            free(sst);
            free(st);
            free(prev);
            return eng_fail(-1, "leveldb wait_idle: properties leveldb.sstables/leveldb.stats unavailable");
        }
        double score = max_score(sst);
        free(sst);
        if (score < 0) {
            free(st);
            free(prev);
            return eng_fail(-1, "leveldb wait_idle: cannot parse leveldb.sstables");
        }
        stable = score < 1.0 && prev && !strcmp(prev, st) ? stable + 1 : 0;
        free(prev);
        prev = st;
        if (stable >= LDB_STABLE_POLLS) break;
        if (eng_now_s() - start > ENG_IDLE_TIMEOUT_S) {
            free(prev);
            return eng_fail(-1, "leveldb wait_idle: compaction still pending after %.0f s (max score %.2f)",
                            ENG_IDLE_TIMEOUT_S, score);
        }
        eng_sleep_ms(ENG_IDLE_POLL_MS);
    }
    free(prev);
    return 0;
}

static int l_stats(engine *e, engine_stats *out)
{
    out->device_bytes_written = out->stall_count = out->stall_micros = out->pmem_bytes_written = -1;
    out->detail[0] = '\0';
    char *s = e->api->leveldb_property_value(e->db, "leveldb.stats");
    if (!s) return eng_fail(-1, "leveldb stats: property leveldb.stats unavailable");
    /* Rows after the dashes: "Level Files Size(MB) Time(sec) Read(MB) Write(MB)". */
    double write_mb = 0, read_mb = 0;
    const char *p = strstr(s, "---\n");
    for (p = p ? p + 4 : NULL; p && *p;) {
        int lvl, files;
        double size, secs, rd, wr;
        if (sscanf(p, " %d %d %lf %lf %lf %lf", &lvl, &files, &size, &secs, &rd, &wr) == 6) {
            write_mb += wr;
            read_mb += rd;
        }
        const char *nl = strchr(p, '\n');
        p = nl ? nl + 1 : NULL;
    }
    free(s);
    /* The table counts flush + compaction output but not the WAL, so it is
     * not a device total: reported in detail only. */
    size_t len = 0;
    eng_appendf(out->detail, sizeof out->detail, &len,
                "sst_write_mb=%.0f compaction_read_mb=%.0f (leveldb.stats, 1 MB resolution, WAL not counted; "
                "no stall counters in LevelDB)",
                write_mb, read_mb);
    return 0;
}

const engine_ops engine_leveldb_ops = {
    .name = "leveldb",
    .available = l_available,
    .version = l_version,
    .open = l_open,
    .close = l_close,
    .describe = l_describe,
    .put = l_put,
    .del = l_del,
    .get = l_get,
    .multi_get = l_multi_get,
    .iter_new = l_iter_new,
    .iter_seek = l_iter_seek,
    .iter_seek_first = l_iter_seek_first,
    .iter_seek_last = l_iter_seek_last,
    .iter_valid = l_iter_valid,
    .iter_next = l_iter_next,
    .iter_prev = l_iter_prev,
    .iter_entry = l_iter_entry,
    .iter_free = l_iter_free,
    .wait_idle = l_wait_idle,
    .stats = l_stats,
    .last_error = eng_last_error,
};
