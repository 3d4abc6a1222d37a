// SPDX-License-Identifier: Apache-2.0
/*
 * options.h -- the engine's option set behind the opaque tkv_options.
 *
 * Every option is a row of the table in options.c (name, type, range,
 * default); docs/options.md documents each one and is kept by hand beside
 * the table. tkv_open copies the options, so the engine reads them without
 * locking.
 */
#ifndef TKV_DB_OPTIONS_H
#define TKV_DB_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "tierkv.h"

/* The most obsolete WAL files a database keeps to recycle (wal_recycle). */
#define DB_WAL_RECYCLE_MAX 16

struct tkv_options {
    int create_if_missing;  /* create the directory and database if absent */
    int error_if_exists;    /* fail if a database already exists */
    int read_only;          /* 1: open an existing database to read it, writing nothing (db_open.c) */
    uint64_t memtable_size; /* bytes of arena per memtable before it is switched */
    int memtables;          /* memtables in DRAM: 1 mutable + (memtables-1) immutable */
    int wal;                /* 1: write-ahead log on; 0: off (writes survive only via flush) */
    int sync;               /* 1: every write is TKV_SYNC */
    int wal_mmap;           /* 1: WAL appends are stores into a mapping whose pages a helper makes (io/wmap.h) */
    int wal_recycle;        /* obsolete WAL files kept to be written again as new logs (files.c, mem/wal.h) */
    int paranoid_checks;    /* 1: a corrupt record in the middle of a WAL fails open */
    uint64_t dram_budget;   /* bytes of DRAM for every sizeable part together (budget.h); 0 = no budget */
    /* SSD tier */
    uint64_t block_size;         /* target uncompressed data block size */
    uint64_t block_cache_size;   /* bytes of uncompressed blocks cached (sharded LRU) */
    int bloom_bits_per_key;      /* bloom filter bits per key; 0 = no filter */
    int compression;             /* 0 none, 1 lz4 (per block, only when it saves space): L2 and below */
    int l1_compression;          /* the same for the SSTs of L0 and L1 (output_open); 2: as `compression` */
    uint64_t sst_size;           /* target SST file size */
    uint64_t l1_size;            /* target bytes of L1; 0 = automatic, resolved by tkv_open (options_resolve_at_open) */
    int level_multiplier;        /* each level below L1 is this many times larger */
    int l0_compaction_trigger;   /* L0 files that start an L0->L1 compaction */
    int l0_slowdown_trigger;     /* l0=sst: L0 files at which the write controller slows writers */
    int l0_stop_trigger;         /* L0 files at which writes wait for compaction */
    int max_open_files;          /* SST tables kept open */
    uint64_t bytes_per_sync;     /* incremental syncs of SSTs and the MANIFEST (io_stats.bytes_per_sync) */
    uint64_t wal_bytes_per_sync; /* the same for WALs (io_stats.wal_bytes_per_sync); 0 = only when synced */
    int preload_tables;          /* 1: open tables into the table cache at open and when installed */
    uint64_t delete_chunk;       /* obsolete files are truncated this much at a time (0: unlinked at once) */
    uint64_t delete_rate;        /* bytes/s of obsolete files released at most (0: no pause) */
    int direct_io;               /* 1: SST reads and flush/compaction writes use O_DIRECT */
    int async_io;                /* ASYNC_AUTO, ASYNC_ON, ASYNC_OFF: io_uring reads for multi_get and iterators */
    /* NVM tier: the matrix container (docs/format-matrix.md) */
    int l0;               /* L0_SST or L0_MATRIX */
    char pmem_path[4096]; /* pool file; "" = <dir>/matrix.pmem */
    uint64_t pmem_size;   /* pool bytes at creation; 0 = 1G for a new pool, the pool's own size for an existing one */
    int pmem_mode;        /* pm_mode (emul/pmem.h): auto, pmem, emulated, msync, crashsim, volatile */
    int emul_profile;     /* pm_profile: none, optane */
    uint64_t pmem_writeback; /* bytes/s of paced write-back of flushed rows (emulated pmem on a disk), 0 = off */
    uint64_t column_bytes;   /* bytes of rows per column compaction; 0 = pool size / 16 */
    int matrix_trigger;      /* percent of the pool's pages in use at which the compactor forms */
    int row_filter;          /* 1: lookups consult each row's DRAM key filter before searching it */
    int row_compression;     /* 1: flushed rows store values as lz4 blocks where that saves 1/8 (ROWTABLE_FLAG_LZ4) */
    int seek_hints;          /* 1: iterator seeks narrow from row to row through the forward pointers */
    int column_threads;      /* column compactions that may run at once, on disjoint key ranges */
    int column_gate;         /* COLUMN_GATE_IDLE: a second column only while a CPU is idle; _ALWAYS */
    /* Scheduler (docs/scheduler.md) */
    int scheduler;                   /* SCHED_SILK or SCHED_FIFO */
    int write_controller;            /* WCTL_MODE_PRL, WCTL_MODE_CLASSIC, WCTL_MODE_OFF (option order) */
    uint64_t device_bandwidth;       /* T in bytes/s; 0 = probe at open */
    int adapt_bandwidth;             /* 1: T follows the observed throughput (sched/tadapt.h) */
    uint64_t min_internal_bandwidth; /* floor of I for flush and L0->L1 work, bytes/s */
    uint64_t sched_epsilon;          /* epsilon of I = T - C - epsilon, bytes/s */
    uint64_t sched_threshold;        /* the published I changes only by more than this, bytes/s */
    int sched_latency;        /* LATCAP_AUTO (on with direct_io), LATCAP_ON, LATCAP_OFF: the read-latency cap on I */
    int sched_latency_factor; /* the cap backs off when client reads take this percent of their baseline */
    uint64_t deep_reserved_bandwidth; /* deep compactions' guaranteed share of I, bytes/s */
    uint64_t l0_reserved_bandwidth;   /* L0->L1 work's (columns') guaranteed share of I under a flush peak, bytes/s */
    uint64_t pmem_bandwidth;          /* T of the pmem tier, bytes/s; 0 = the Optane profile's, or probed */
    int compaction_threads;           /* low-priority pool: threads for deep (L1+) compactions */
    int deep_yield_wait;              /* ms a deep job asked to yield may go on to its next cut (0: stop at once) */
    int background_nice;              /* nice value of the flush, column, L0 and deep threads (0: unchanged) */
    int background_slice;             /* us: the CPU slice the engine's threads ask for (0: the kernel's) */
    uint64_t compaction_readahead;    /* bytes per read of a compaction input SST (0: one block per read) */
    uint64_t ssd_bandwidth;           /* emul/: cap on every SSD read and write of the engine, bytes/s; 0 = off */
    int statistics;                   /* 1: latency histograms of gets and writes (tkv_statistics) */
    /* Set by tkv_options_set_listener, not by name: the event listener */
    tkv_event_fn listener;
    void *listener_arg;
    /* Set by tkv_options_set_env: the resources shared with other databases (env.h); NULL: none */
    struct tkv_env *env;
    /* Not an option: bit i is set once tkv_options_set has set row i of
     * the option table, so that a derived value (dram_budget's split) never
     * overrides an explicit one (options_user_set). */
    uint64_t user_set;
};

#define LATCAP_AUTO 0
#define LATCAP_ON   1
#define LATCAP_OFF  2

#define ASYNC_AUTO 0
#define ASYNC_ON   1
#define ASYNC_OFF  2

#define SCHED_SILK 0
#define SCHED_FIFO 1

#define L0_SST             0
#define L0_MATRIX          1
#define COLUMN_GATE_IDLE   0
#define COLUMN_GATE_ALWAYS 1

/* options_pmem_path -- the pool file of database `dir` under o (malloc'd). */
char *options_pmem_path(const struct tkv_options *o, const char *dir);

/* options_init_defaults -- fills o with every default. */
void options_init_defaults(struct tkv_options *o);

/* options_describe -- appends "name=value\n" for every option to a malloc'd string. */
char *options_describe(const struct tkv_options *o);

/* OPTIONS_L1_SIZE_SST -- L1's target with l1_size=0 and l0=sst (no pool to
 * size it from): the fixed 1 GiB that l1_size defaulted to before it was
 * derived from the pool. */
#define OPTIONS_L1_SIZE_SST (UINT64_C(1) << 30)

/* options_resolve_at_open -- turns the automatic (0) values into effective
 * ones, once, in tkv_open's copy of the options, after the pool is open
 * (pool_size: the pool's size from its header; 0 with l0=sst). l1_size=0
 * becomes pool_size with l0=matrix, OPTIONS_L1_SIZE_SST with l0=sst; an
 * explicit l1_size is kept. tkv.options then shows the effective value. */
void options_resolve_at_open(struct tkv_options *o, uint64_t pool_size);

/* options_level_target -- the size target in bytes of level L (L >= 1):
 * l1_size times level_multiplier^(L-1), saturating. l1_size must be
 * resolved (options_resolve_at_open). */
uint64_t options_level_target(const struct tkv_options *o, int level);

/* options_user_set -- 1 if option `name` was set by tkv_options_set (even
 * to its default value), 0 if it has its default or is unknown. */
int options_user_set(const struct tkv_options *o, const char *name);

/* options_parse_size -- parses "123", "64K", "64M", "1G", "1T" (powers of 1024). 0 or TKV_INVALID. */
int options_parse_size(const char *s, uint64_t *out);

/* options_parse_bool -- 1/0/true/false/on/off/yes/no (any case) into *out.
 * 0 or TKV_INVALID (nothing recorded). */
int options_parse_bool(const char *s, uint64_t *out);

#endif
