// SPDX-License-Identifier: Apache-2.0
/*
 * engine.h -- the one small interface tkv_bench drives every storage engine
 * through: tierkv (its C API), RocksDB and LevelDB (their C APIs, loaded with
 * dlopen so several builds can sit in one process and a missing library only
 * disables that engine), and "null" (does nothing; for testing the harness).
 *
 * Engines: "tierkv", "rocksdb" (the release build from the rocksdbjni jar,
 * librocksdbjni-linux64.so), "rocksdb-l0nvm" (the same build and settings,
 * with its WAL and first data path in engine_config.nvm_dir: MatrixKV's
 * "RocksDB-L0-NVM"), "rocksdb-deb" (Debian's librocksdb.so.7.8), "leveldb"
 * (Debian's libleveldb.so.1d), "null", "devread".
 *
 * Every engine gets the same configuration (engine_config): the same DRAM
 * budget split the same way (memtables + block cache), WAL on, no per-write
 * sync unless `sync`, direct I/O where the engine supports it, bloom filters
 * of 10 bits/key, 4 KiB blocks, lz4 where supported. engine_describe records
 * what each engine was actually given.
 *
 * Thread safety: after open, every call may be made from many threads at
 * once (one iterator per thread). Return values: 0 ok, 1 not found (get),
 * negative = error with a message in the engine's last_error buffer.
 */
#ifndef TKV_BENCH_ENGINE_H
#define TKV_BENCH_ENGINE_H

#include <stddef.h>
#include <stdint.h>

typedef struct engine_config {
    const char *dir;         /* database directory (created; removed by the caller) */
    uint64_t memtable_bytes; /* per memtable (write buffer) */
    int memtables;           /* memtables in DRAM (mutable + immutable), >= 2 */
    uint64_t cache_bytes;    /* block cache */
    int sync;                /* 1: every write waits for the WAL to be durable */
    int direct_io;           /* 1: O_DIRECT for table reads and flush/compaction writes */
    int threads;             /* client threads (engines may size pools from it) */
    /* RocksDB engines: a rate limiter on flush and compaction writes of
     * rate_limit bytes/s (0 = none, RocksDB's default); rate_limit_auto = 1
     * makes it RocksDB's auto-tuned one (NewGenericRateLimiter auto_tuned:
     * it moves the rate within [rate_limit / 20, rate_limit] with the
     * demand). Ignored by the other engines. */
    uint64_t rate_limit;
    int rate_limit_auto;
    /* "name=value" options for tierkv (tkv_options_set), applied after the
     * common settings above; ignored by the other engines. */
    const char *const *tkv_opts;
    size_t n_tkv_opts;
    /* Engines with uses_nvm_dir (rocksdb-l0nvm): their directory on the
     * storage standing in for NVM (created if missing, one level; removed
     * by the caller), and the bytes they may plan to keep there (0 = 1 GiB,
     * tierkv's default pool size). Ignored by the other engines. */
    const char *nvm_dir;
    uint64_t nvm_bytes;
} engine_config;

/* Counters an engine can report; -1 where it cannot. */
typedef struct engine_stats {
    int64_t device_bytes_written; /* engine's own count of bytes written to files (WAL + tables + meta) */
    int64_t stall_count;          /* writes delayed or stopped by the engine */
    int64_t stall_micros;         /* time writers spent delayed or stopped */
    int64_t pmem_bytes_written;   /* tierkv: bytes persisted to the pmem pool */
    char detail[512];             /* engine-specific one-line extras (e.g. scheduler split) */
} engine_stats;

typedef struct engine engine; /* an open database */
typedef struct engine_iter engine_iter;

typedef struct engine_ops {
    const char *name;
    /* uses_nvm_dir -- 1 if the engine keeps files in engine_config.nvm_dir
     * too (the caller then wipes and removes that directory with the
     * database directory). */
    int uses_nvm_dir;
    /* available -- 1 if the engine's library can be loaded; else 0 and why in err. */
    int (*available)(char *err, size_t errlen);
    /* version -- a version string such as "tierkv 0.1.0" or "RocksDB 10.10.1 (rocksdbjni release build)". */
    const char *(*version)(void);
    int (*open)(const engine_config *cfg, engine **out, char *err, size_t errlen);
    /* close -- closes and frees (waits for background work). */
    void (*close)(engine *e);
    /* describe -- "key=value key=value ..." of the configuration actually used (static until close). */
    const char *(*describe)(engine *e);
    int (*put)(engine *e, const char *k, size_t kn, const char *v, size_t vn);
    int (*del)(engine *e, const char *k, size_t kn);
    /* del_range -- deletes every key in [begin, end) with one range deletion;
     * NULL for an engine without one (LevelDB, null, devread). */
    int (*del_range)(engine *e, const char *begin, size_t bn, const char *end, size_t en);
    /* get -- 0 found (value length in *vn; the value is read and discarded), 1 not found. */
    int (*get)(engine *e, const char *k, size_t kn, size_t *vn);
    /* multi_get -- n keys at once; found[i] = 1/0. Returns 0 or an error. */
    int (*multi_get)(engine *e, size_t n, const char *const *keys, const size_t *kns, int *found);
    engine_iter *(*iter_new)(engine *e);
    void (*iter_seek)(engine_iter *it, const char *k, size_t kn);
    void (*iter_seek_first)(engine_iter *it);
    void (*iter_seek_last)(engine_iter *it);
    int (*iter_valid)(engine_iter *it);
    void (*iter_next)(engine_iter *it);
    void (*iter_prev)(engine_iter *it);
    /* iter_entry -- key and value lengths of the current entry (contents read and discarded). */
    void (*iter_entry)(engine_iter *it, size_t *kn, size_t *vn);
    void (*iter_free)(engine_iter *it);
    /* wait_idle -- flush memtables and wait until background compaction is
     * quiet (used between a fill and the read phases). */
    int (*wait_idle)(engine *e);
    int (*stats)(engine *e, engine_stats *out);
    /* last_error -- the message of the last failed call on this thread. */
    const char *(*last_error)(void);
} engine_ops;

/* engine_find -- the engine called `name`, or NULL. */
const engine_ops *engine_find(const char *name);
/* engine_names -- comma-separated list of all engine names. */
const char *engine_names(void);

#endif
