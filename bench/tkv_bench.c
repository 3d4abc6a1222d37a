// SPDX-License-Identifier: Apache-2.0
/*
 * tkv_bench.c -- db_bench-style benchmarks run side by side on tierkv, RocksDB
 * and LevelDB (bench/engine.h), closed loop or open loop (bench/loadgen.h),
 * with per-second latency percentiles (bench/hist.h), write amplification,
 * stall counters, CSV time series and plots. docs/benchmarking.md explains
 * every figure; `tkv_bench --help` lists the flags.
 *
 * Structure: main parses flags; for each engine it opens a fresh database and
 * runs the benchmarks in order (run_benchmark), then closes it. A benchmark
 * runs on N client threads (closed loop: each takes the next operation index
 * until num/duration is reached; open loop: loadgen workers execute requests
 * at their intended times). Each thread records latencies into its own
 * interval and whole-run histograms under its own (uncontended) mutex; a
 * reporter thread swaps the interval histograms out every second.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench/engine.h"
#include "bench/hist.h"
#include "bench/hostmon.h"
#include "bench/loadgen.h"
#include "bench/throttle.h"
#include "bench/workload.h"

/* ------------------------------------------------------------------ flags */

typedef struct flags {
    char *benchmarks;
    char *engines;
    uint64_t num;                /* records (key space) and default op count */
    uint64_t reads;              /* ops for read benchmarks (0 = num) */
    uint64_t deleterange_ranges; /* deleterange: the ranges 10 % of the key space is deleted in */
    size_t key_size, value_size;
    unsigned value_random; /* percent of each value that is random (wl_fill_value_r) */
    int threads;
    double duration; /* seconds; 0 = until num/reads ops (closed loop) */
    uint64_t seed;
    char *db;
    char *nvm_dir; /* --nvm_dir: parent of the NVM directories (rocksdb-l0nvm) */
    const char **tkv_opts;
    size_t n_tkv_opts;
    int sync, direct_io;
    uint64_t dram;     /* memtables + block cache per engine */
    uint64_t memtable; /* per memtable */
    int memtables;
    char *rate;         /* open-loop schedule */
    char *open_loop;    /* benchmarks that run open loop (default: all but fill*) */
    char *distribution; /* YCSB distribution override */
    char *csv;          /* directory for CSV series */
    int plot;
    int batch;      /* multireadrandom keys per call */
    int seek_nexts; /* seekrandom: nexts after each seek */
    int use_existing_db, keep_db;
    double report_interval;
    uint64_t slow_log_ns; /* --slow_log: print every op slower than this (0: off) */
    uint64_t throttle;    /* --throttle: blkio cap (bytes/s) during open-loop benchmarks */
    uint64_t rate_limit;  /* --rate_limiter: RocksDB's rate limiter */
    int rate_limit_auto;
    char *label; /* --label: the engine's name in the output */
} flags;

static flags F = {
    .num = 1000000,
    .key_size = 16,
    .value_size = 1024,
    .value_random = 50,
    .threads = 1,
    .seed = 42,
    .dram = 256u << 20,
    .memtable = 64u << 20,
    .memtables = 2,
    .batch = 16,
    .seek_nexts = 10,
    .report_interval = 1.0,
};

/* ename -- the engine's name in the output: --label, else the engine's. */
static const char *ename(const engine_ops *ops) { return F.label ? F.label : ops->name; }

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tkv_bench [flags]\n"
            "  --benchmarks=LIST   comma-separated, run in order (default fillrandom,readrandom):\n"
            "                      fillseq fillrandom overwrite readrandom readseq readreverse seekrandom\n"
            "                      multireadrandom readwhilewriting ycsba ycsbb ycsbc ycsbd ycsbe ycsbf\n"
            "                      deleterange (10 %% of the key space deleted in --deleterange_ranges\n"
            "                      range deletions spread evenly over it; engines without one skip it)\n"
            "  --engine=LIST       engines, each on its own fresh database (default tierkv): %s\n"
            "  --num=N             records in the key space, and operations per benchmark (1000000)\n"
            "  --reads=N           operations of read benchmarks (default --num)\n"
            "  --key_size=B (16)  --value_size=B (1024)  --threads=N (1)  --seed=N (42)\n"
            "  --value_random=PCT  the random share of each value, the rest repeats it (50: lz4 keeps\n"
            "                      about half; 12 makes values that compress ~8x)\n"
            "  --duration=SEC      run each non-fill benchmark this long instead of a fixed op count\n"
            "  --rate=SCHEDULE     open loop: OPS:DUR[,OPS:DUR...] repeated, e.g. 10000:10s,40000:50s;\n"
            "                      needs --duration; latency from the intended send time\n"
            "  --open_loop=LIST    benchmarks that use --rate (default: all except fillseq/fillrandom)\n"
            "  --slow_log=US       print to stderr every operation slower than US microseconds, with its\n"
            "                      start on the monotonic clock (the '# ...: t=0 at monotonic' line's clock)\n"
            "  --timer_slack_us=N  open loop: the workers' timer slack while they wait for a due time\n"
            "                      (default: the thread's own, the kernel's 50 us; 0.001 wakes for every\n"
            "                      request, costing most of a core at 90k/s on 2 vCPUs)\n"
            "  --distribution=uniform|zipfian|latest   override the YCSB workload's distribution\n"
            "  --db=DIR            parent directory of the databases (default /tmp/tkv_bench)\n"
            "  --opt name=value    tierkv option (tkv_options_set), repeatable\n"
            "  --nvm_dir=DIR       rocksdb-l0nvm puts its WAL and first data path (L0, and L1 as the target\n"
            "                      allows) in DIR/<engine>, with tierkv's pool size as target (--opt pmem_size,\n"
            "                      default 1G). Default DIR: where tierkv's pool goes: the directory of\n"
            "                      --opt pmem_path, else <db>/nvm.\n"
            "                      A plain directory, no pmem emulation: the same disk as --db unless DIR is on\n"
            "                      another device (e.g. /dev/shm: DRAM standing in for NVM)\n"
            "  --dram=SIZE (256M)  per engine: memtables + block cache; --memtable=SIZE (64M), --memtables=N (2)\n"
            "  --sync              every write waits for its WAL record to be durable\n"
            "  --direct_io         O_DIRECT for table reads and flush/compaction writes (engines that support it)\n"
            "  --batch=N (16)      keys per multireadrandom call;  --seek_nexts=N (10)\n"
            "  --deleterange_ranges=N (100)  range deletions of deleterange\n"
            "  --csv=DIR           write timeline.csv, summary.csv and config.txt there\n"
            "  --plot              with --csv: draw DIR/*.png with bench/plot.py (matplotlib)\n"
            "  --use_existing_db   do not wipe the databases first;  --keep_db  do not remove them after\n"
            "  --throttle=BPS      during open-loop benchmarks, cap the device under --db at BPS bytes/s for\n"
            "                      reads and for writes (blkio cgroup; root): the same slow drive for every engine\n"
            "  --rate_limiter=BPS[:auto]  RocksDB engines: rate limiter on flush/compaction writes (auto: auto-tuned)\n"
            "  --label=NAME        name the (single) engine NAME in tables and CSV, e.g. tierkv-fifo\n",
            engine_names());
}

/* parse_size -- "123", "64K", "64M", "1G", "1T" (also "64MB"). */
static int parse_size(const char *s, uint64_t *out)
{
    char *e;
    errno = 0;
    unsigned long long v = strtoull(s, &e, 10);
    if (errno || e == s) return -1;
    int shift = 0;
    if (*e == 'K' || *e == 'k') shift = 10, e++;
    else if (*e == 'M' || *e == 'm') shift = 20, e++;
    else if (*e == 'G' || *e == 'g') shift = 30, e++;
    else if (*e == 'T' || *e == 't') shift = 40, e++;
    if (shift && (*e == 'B' || *e == 'b')) e++; /* "64MB", as tierkv's options accept */
    if (*e || (shift && v > (UINT64_MAX >> shift))) return -1;
    *out = (uint64_t)v << shift;
    return 0;
}

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "tkv_bench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(2);
}

/* tkv_opt -- the value of the last --opt name=... (tierkv applies them in
 * order, so the last one counts), or NULL. */
static const char *tkv_opt(const char *name)
{
    const char *v = NULL;
    size_t nl = strlen(name);
    for (size_t i = 0; i < F.n_tkv_opts; i++)
        if (!strncmp(F.tkv_opts[i], name, nl) && F.tkv_opts[i][nl] == '=') v = F.tkv_opts[i] + nl + 1;
    return v;
}

/* nvm_bytes -- tierkv's pool size, the NVM target of engines with
 * uses_nvm_dir: --opt pmem_size (0, or none: the engine's default, 1 GiB
 * like tierkv's). */
static uint64_t nvm_bytes(void)
{
    const char *v = tkv_opt("pmem_size");
    uint64_t u = 0;
    if (v && parse_size(v, &u) != 0) die("--opt pmem_size=%s: not a size (also rocksdb-l0nvm's NVM target)", v);
    return u;
}

/* parse_flags -- --name=value or --name value. */
static void parse_flags(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (strncmp(a, "--", 2)) die("unexpected argument %s (see --help)", a);
        a += 2;
        char *val = strchr(a, '=');
        char name[64];
        size_t nl = val ? (size_t)(val - a) : strlen(a);
        if (nl >= sizeof name) die("unknown flag --%s", a);
        memcpy(name, a, nl);
        name[nl] = 0;
        if (val) val++;
#define BOOLFLAG(n, field)                                                                                             \
    if (!strcmp(name, n)) {                                                                                            \
        F.field = val ? atoi(val) : 1;                                                                                 \
        continue;                                                                                                      \
    }
        if (!strcmp(name, "help") || !strcmp(name, "h")) {
            usage(stdout);
            exit(0);
        }
        BOOLFLAG("sync", sync)
        BOOLFLAG("direct_io", direct_io)
        BOOLFLAG("plot", plot)
        BOOLFLAG("use_existing_db", use_existing_db)
        BOOLFLAG("keep_db", keep_db)
        if (!val) {
            if (i + 1 >= argc) die("--%s needs a value", name);
            val = argv[++i];
        }
        uint64_t u;
        if (!strcmp(name, "benchmarks")) F.benchmarks = val;
        else if (!strcmp(name, "engine") || !strcmp(name, "engines")) F.engines = val;
        else if (!strcmp(name, "db")) F.db = val;
        else if (!strcmp(name, "nvm_dir")) F.nvm_dir = val;
        else if (!strcmp(name, "rate")) F.rate = val;
        else if (!strcmp(name, "open_loop")) F.open_loop = val;
        else if (!strcmp(name, "timer_slack_us")) {
            char *e;
            double v = strtod(val, &e);
            if (*e || !(v >= 0.001 && v <= 100000)) die("bad --timer_slack_us %s (0.001 .. 100000)", val);
            lg_timer_slack_ns = (unsigned long)(v * 1000 + 0.5);
        } else if (!strcmp(name, "distribution")) F.distribution = val;
        else if (!strcmp(name, "csv")) F.csv = val;
        else if (!strcmp(name, "label")) F.label = val;
        else if (!strcmp(name, "throttle")) {
            if (parse_size(val, &F.throttle) != 0 || F.throttle == 0) die("bad --throttle %s", val);
        } else if (!strcmp(name, "rate_limiter")) {
            char buf[64];
            snprintf(buf, sizeof buf, "%s", val);
            char *c = strchr(buf, ':');
            if (c) {
                if (strcmp(c + 1, "auto")) die("bad --rate_limiter %s (BPS or BPS:auto)", val);
                *c = 0;
                F.rate_limit_auto = 1;
            }
            if (parse_size(buf, &F.rate_limit) != 0 || F.rate_limit == 0) die("bad --rate_limiter %s", val);
        } else if (!strcmp(name, "opt")) {
            if (!strchr(val, '=')) die("--opt wants name=value, got %s", val);
            F.tkv_opts = realloc(F.tkv_opts, (F.n_tkv_opts + 1) * sizeof *F.tkv_opts);
            if (!F.tkv_opts) die("out of memory");
            F.tkv_opts[F.n_tkv_opts++] = val;
        } else if (!strcmp(name, "duration")) {
            F.duration = strtod(val, NULL);
            if (F.duration <= 0) die("bad --duration %s", val);
        } else if (!strcmp(name, "slow_log")) {
            char *e;
            double v = strtod(val, &e);
            if (*e || !(v > 0)) die("bad --slow_log %s (microseconds > 0)", val);
            F.slow_log_ns = (uint64_t)(v * 1000);
        } else if (!strcmp(name, "report_interval")) {
            F.report_interval = strtod(val, NULL);
            if (F.report_interval < 0.05) die("bad --report_interval %s", val);
        } else if (!strcmp(name, "dram") || !strcmp(name, "memtable") || !strcmp(name, "num") ||
                   !strcmp(name, "reads") || !strcmp(name, "key_size") || !strcmp(name, "value_size") ||
                   !strcmp(name, "threads") || !strcmp(name, "seed") || !strcmp(name, "memtables") ||
                   !strcmp(name, "batch") || !strcmp(name, "seek_nexts") || !strcmp(name, "value_random") ||
                   !strcmp(name, "deleterange_ranges")) {
            if (parse_size(val, &u) != 0) die("bad --%s %s", name, val);
            if (!strcmp(name, "dram")) F.dram = u;
            else if (!strcmp(name, "memtable")) F.memtable = u;
            else if (!strcmp(name, "num")) F.num = u;
            else if (!strcmp(name, "reads")) F.reads = u;
            else if (!strcmp(name, "key_size")) F.key_size = (size_t)u;
            else if (!strcmp(name, "value_size")) F.value_size = (size_t)u;
            else if (!strcmp(name, "threads")) F.threads = (int)u;
            else if (!strcmp(name, "seed")) F.seed = u;
            else if (!strcmp(name, "memtables")) F.memtables = (int)u;
            else if (!strcmp(name, "batch")) F.batch = (int)u;
            else if (!strcmp(name, "deleterange_ranges")) F.deleterange_ranges = u;
            else if (!strcmp(name, "value_random")) {
                if (u < 1 || u > 100) die("--value_random must be 1..100");
                F.value_random = (unsigned)u;
            } else F.seek_nexts = (int)u;
        } else {
            die("unknown flag --%s (see --help)", name);
        }
    }
    if (!F.benchmarks) F.benchmarks = "fillrandom,readrandom";
    if (!F.engines) F.engines = "tierkv";
    if (!F.db) F.db = "/tmp/tkv_bench";
    if (F.key_size < 8 || F.key_size > 1024) die("--key_size must be 8..1024");
    if (F.value_size > (64u << 20)) die("--value_size too large");
    if (F.threads < 1 || F.threads > 256) die("--threads must be 1..256");
    if (F.num < 1) die("--num must be >= 1");
    if (F.memtables < 2) die("--memtables must be >= 2");
    if (F.batch < 1 || F.batch > 4096) die("--batch must be 1..4096");
    if (!F.deleterange_ranges) F.deleterange_ranges = 100;
    if (F.deleterange_ranges > F.num / 10)
        die("--deleterange_ranges must be 1..num/10 (each range takes a key at least)");
    nvm_bytes(); /* a bad --opt pmem_size fails here, before any directory is made */
    if ((uint64_t)F.memtables * F.memtable >= F.dram)
        die("--dram %" PRIu64 " must exceed the memtables (%d x %" PRIu64 ")", F.dram, F.memtables, F.memtable);
    if (F.rate && F.duration <= 0) die("--rate needs --duration (seconds per benchmark)");
    if (F.plot && !F.csv) die("--plot needs --csv DIR");
    if (F.label && strchr(F.engines, ',')) die("--label names one engine; --engine lists several");
    if (F.throttle && !F.rate) die("--throttle applies to open-loop benchmarks: it needs --rate");
}

/* ------------------------------------------------------------ operations */

enum { OP_READ, OP_WRITE, OP_INSERT, OP_SCAN, OP_RMW, OP_SEEK, OP_MGET, OP_DELRANGE, NOPS };
static const char *const OP_NAMES[NOPS] = {"read", "write", "insert", "scan", "rmw", "seek", "mget", "delrange"};

/* Per client thread. The mutex guards the histograms and counters: the
 * owning thread takes it per operation (uncontended), the reporter once a
 * second. */
typedef struct tstate {
    pthread_mutex_t mu;
    hist iv[NOPS], tot[NOPS];
    uint64_t iv_ops[NOPS], tot_ops[NOPS]; /* ops (keys for mget) */
    uint64_t user_bytes, found, missing, errors;
    wl_rng rng;
    engine_iter *it;
    char *key, *val;
    const char **mkeys;
    size_t *mkns;
    int *mfound;
    char *mkeybuf;
    uint64_t seq_pos; /* readseq/readreverse entries done */
    int seq_started;
} tstate;

/* One reporting interval of host counters (host.csv). */
typedef struct host_row {
    double t; /* as row.t */
    hostmon_row h;
} host_row;

/* One per-second row of the time series. */
typedef struct row {
    double t; /* seconds since the benchmark started (end of the interval) */
    int op;   /* NOPS = all operations */
    uint64_t ops;
    double ops_per_sec;
    uint64_t p50, p99, p999, max; /* ns */
} row;

typedef struct summary {
    char engine[32], bench[32];
    double secs, ops_per_sec;
    uint64_t ops;
    hist all;
    hist per[NOPS];
    uint64_t per_ops[NOPS];
    double wa_dev, wa_engine; /* -1 when not a write benchmark / unknown */
    int64_t stalls, stall_us;
    double settle_secs;
    uint64_t found, missing, errors;
    int open_loop;
    uint64_t issued, max_backlog;
    double expected;
} summary;

typedef struct run {
    const engine_ops *ops;
    engine *e;
    const char *bench;
    int kind;
    int nthreads;
    tstate *ts;
    volatile int stop;
    uint64_t target;     /* closed loop: operations to do */
    uint64_t next_index; /* closed loop: atomic op counter */
    wl_ycsb y;
    uint64_t start_ns;
    row *rows;
    size_t nrows, caprows;
    int writer_thread; /* readwhilewriting: index of the writer */
    int open_loop;
    hostmon host;    /* host counters, sampled by the reporter */
    host_row *hrows; /* one per reporting interval */
    size_t nhrows, caphrows;
} run;

enum {
    B_FILLSEQ,
    B_FILLRANDOM,
    B_OVERWRITE,
    B_READRANDOM,
    B_READSEQ,
    B_READREVERSE,
    B_SEEKRANDOM,
    B_MULTIREAD,
    B_READWHILEWRITING,
    B_YCSB,
    B_DELETERANGE
};

static int bench_kind(const char *b, char *ycsb_letter)
{
    static const struct {
        const char *n;
        int k;
    } T[] = {{"fillseq", B_FILLSEQ},        {"fillrandom", B_FILLRANDOM},     {"overwrite", B_OVERWRITE},
             {"readrandom", B_READRANDOM},  {"readseq", B_READSEQ},           {"readreverse", B_READREVERSE},
             {"seekrandom", B_SEEKRANDOM},  {"multireadrandom", B_MULTIREAD}, {"readwhilewriting", B_READWHILEWRITING},
             {"deleterange", B_DELETERANGE}};
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++)
        if (!strcmp(b, T[i].n)) return T[i].k;
    if (!strncmp(b, "ycsb", 4) && b[4] >= 'a' && b[4] <= 'f' && !b[5]) {
        *ycsb_letter = b[4];
        return B_YCSB;
    }
    return -1;
}

static int is_fill(int kind) { return kind == B_FILLSEQ || kind == B_FILLRANDOM; }

/* uses_rate -- whether benchmark b runs open loop (deleterange never does). */
static int uses_rate(const char *b, int kind)
{
    if (!F.rate || kind == B_DELETERANGE) return 0;
    if (!F.open_loop) return !is_fill(kind);
    size_t n = strlen(b);
    for (const char *p = F.open_loop; *p;) {
        const char *c = strchr(p, ',');
        size_t l = c ? (size_t)(c - p) : strlen(p);
        if (l == n && !strncmp(p, b, n)) return 1;
        p += l + (c ? 1 : 0);
    }
    return 0;
}

static int writes_data(int kind, char letter)
{
    return kind == B_FILLSEQ || kind == B_FILLRANDOM || kind == B_OVERWRITE || kind == B_READWHILEWRITING ||
           kind == B_DELETERANGE || (kind == B_YCSB && letter != 'c');
}

static void record(tstate *t, int op, uint64_t lat_ns, uint64_t nops)
{
    if (F.slow_log_ns && lat_ns > F.slow_log_ns)
        fprintf(stderr, "slow op=%d start=%.6f s latency=%.3f ms\n", op, (double)(lg_now_ns() - lat_ns) / 1e9,
                (double)lat_ns / 1e6);
    pthread_mutex_lock(&t->mu);
    hist_add(&t->iv[op], lat_ns);
    hist_add(&t->tot[op], lat_ns);
    t->iv_ops[op] += nops;
    t->tot_ops[op] += nops;
    pthread_mutex_unlock(&t->mu);
}

static void op_error(run *r, tstate *t, const char *what)
{
    if (t->errors++ < 5)
        fprintf(stderr, "tkv_bench: %s %s on %s: %s\n", r->bench, what, r->ops->name, r->ops->last_error());
}

/* do_put -- writes key number k with a value for `version`. */
static void do_put(run *r, tstate *t, int op, uint64_t k, uint64_t version, uint64_t start)
{
    wl_format_key(t->key, F.key_size, k);
    wl_fill_value_r(t->val, F.value_size, k, version, F.value_random);
    int rc = r->ops->put(r->e, t->key, F.key_size, t->val, F.value_size);
    record(t, op, lg_now_ns() - start, 1);
    if (rc < 0) op_error(r, t, "put");
    else t->user_bytes += F.key_size + F.value_size;
}

static int do_get(run *r, tstate *t, uint64_t k)
{
    wl_format_key(t->key, F.key_size, k);
    size_t vn;
    int rc = r->ops->get(r->e, t->key, F.key_size, &vn);
    if (rc < 0) op_error(r, t, "get");
    else if (rc == 0) t->found++;
    else t->missing++;
    return rc;
}

/* do_scan -- seek to key k and read up to n entries. */
static void do_scan(run *r, tstate *t, uint64_t k, uint64_t n)
{
    if (!t->it && !(t->it = r->ops->iter_new(r->e))) {
        op_error(r, t, "iterator");
        return;
    }
    wl_format_key(t->key, F.key_size, k);
    r->ops->iter_seek(t->it, t->key, F.key_size);
    size_t kn, vn;
    for (uint64_t i = 0; i < n && r->ops->iter_valid(t->it); i++) {
        r->ops->iter_entry(t->it, &kn, &vn);
        r->ops->iter_next(t->it);
    }
}

/* do_delete_range -- range deletion i of deleterange: of the N ranges, range
 * i starts at key i * num / N and spans num / (10 N) keys, so the N of them
 * delete 10 % of the key space, spread evenly over it. */
static void do_delete_range(run *r, tstate *t, uint64_t i, uint64_t start)
{
    uint64_t n = F.deleterange_ranges, from = i * F.num / n, span = F.num / (10 * n);
    char *end = t->mkeybuf; /* room for --batch keys: one is enough */
    wl_format_key(t->key, F.key_size, from);
    wl_format_key(end, F.key_size, from + (span ? span : 1));
    int rc = r->ops->del_range(r->e, t->key, F.key_size, end, F.key_size);
    record(t, OP_DELRANGE, lg_now_ns() - start, 1);
    if (rc < 0) op_error(r, t, "delete_range");
}

/* one_op -- operation number idx of the benchmark on thread t; `start` is the
 * time latency is measured from (now, or the intended send time). */
static void one_op(run *r, int tid, uint64_t idx, uint64_t start)
{
    tstate *t = &r->ts[tid];
    switch (r->kind) {
    case B_FILLSEQ:
        do_put(r, t, OP_WRITE, idx, 0, start);
        break;
    case B_DELETERANGE:
        do_delete_range(r, t, idx, start);
        break;
    case B_FILLRANDOM:
    case B_OVERWRITE:
        do_put(r, t, OP_WRITE, wl_rng_below(&t->rng, F.num), idx, start);
        break;
    case B_READWHILEWRITING:
        if (tid == r->writer_thread) {
            do_put(r, t, OP_WRITE, wl_rng_below(&t->rng, F.num), idx, start);
            break;
        }
        __attribute__((fallthrough)); /* readers */
    case B_READRANDOM:
        do_get(r, t, wl_rng_below(&t->rng, F.num));
        record(t, OP_READ, lg_now_ns() - start, 1);
        break;
    case B_SEEKRANDOM:
        do_scan(r, t, wl_rng_below(&t->rng, F.num), (uint64_t)F.seek_nexts + 1);
        record(t, OP_SEEK, lg_now_ns() - start, 1);
        break;
    case B_MULTIREAD: {
        for (int i = 0; i < F.batch; i++) {
            t->mkeys[i] = t->mkeybuf + (size_t)i * F.key_size;
            t->mkns[i] = F.key_size;
            wl_format_key(t->mkeybuf + (size_t)i * F.key_size, F.key_size, wl_rng_below(&t->rng, F.num));
        }
        int rc = r->ops->multi_get(r->e, (size_t)F.batch, t->mkeys, t->mkns, t->mfound);
        record(t, OP_MGET, lg_now_ns() - start, (uint64_t)F.batch);
        if (rc < 0) op_error(r, t, "multi_get");
        else
            for (int i = 0; i < F.batch; i++) t->mfound[i] ? t->found++ : t->missing++;
        break;
    }
    case B_READSEQ:
    case B_READREVERSE: {
        if (!t->it && !(t->it = r->ops->iter_new(r->e))) {
            op_error(r, t, "iterator");
            break;
        }
        if (!t->seq_started || !r->ops->iter_valid(t->it)) { /* start, or wrap around at the end */
            if (r->kind == B_READSEQ) r->ops->iter_seek_first(t->it);
            else r->ops->iter_seek_last(t->it);
            t->seq_started = 1;
        }
        if (r->ops->iter_valid(t->it)) {
            size_t kn, vn;
            r->ops->iter_entry(t->it, &kn, &vn);
            if (r->kind == B_READSEQ) r->ops->iter_next(t->it);
            else r->ops->iter_prev(t->it);
            t->found++;
        } else {
            t->missing++;
        }
        record(t, OP_READ, lg_now_ns() - start, 1);
        break;
    }
    case B_YCSB: {
        wl_op op = wl_ycsb_next_op(&r->y, &t->rng);
        switch (op) {
        case WL_READ:
            do_get(r, t, wl_ycsb_next_key(&r->y, &t->rng));
            record(t, OP_READ, lg_now_ns() - start, 1);
            break;
        case WL_UPDATE:
            do_put(r, t, OP_WRITE, wl_ycsb_next_key(&r->y, &t->rng), idx + 1, start);
            break;
        case WL_INSERT:
            do_put(r, t, OP_INSERT, wl_ycsb_insert_key(&r->y), 0, start);
            break;
        case WL_SCAN:
            do_scan(r, t, wl_ycsb_next_key(&r->y, &t->rng), wl_ycsb_scan_len(&r->y, &t->rng));
            record(t, OP_SCAN, lg_now_ns() - start, 1);
            break;
        case WL_RMW: {
            uint64_t k = wl_ycsb_next_key(&r->y, &t->rng);
            do_get(r, t, k);
            do_put(r, t, OP_RMW, k, idx + 1, start);
            break;
        }
        default:
            break;
        }
        break;
    }
    }
}

/* ------------------------------------------------------------- reporting */

static int g_tty;

static void add_row(run *r, const row *x)
{
    if (r->nrows == r->caprows) {
        r->caprows = r->caprows ? r->caprows * 2 : 256;
        r->rows = realloc(r->rows, r->caprows * sizeof *r->rows);
        if (!r->rows) die("out of memory");
    }
    r->rows[r->nrows++] = *x;
}

/* harvest -- swaps out every thread's interval histograms and appends the
 * interval's rows (per op type and all) ending at time `now`. */
static void harvest(run *r, uint64_t from_ns, uint64_t now, int final)
{
    static hist agg[NOPS + 1];
    uint64_t ops[NOPS + 1] = {0};
    for (int o = 0; o <= NOPS; o++) hist_reset(&agg[o]);
    for (int i = 0; i < r->nthreads; i++) {
        tstate *t = &r->ts[i];
        pthread_mutex_lock(&t->mu);
        for (int o = 0; o < NOPS; o++) {
            hist_merge(&agg[o], &t->iv[o]);
            hist_merge(&agg[NOPS], &t->iv[o]);
            ops[o] += t->iv_ops[o];
            ops[NOPS] += t->iv_ops[o];
            hist_reset(&t->iv[o]);
            t->iv_ops[o] = 0;
        }
        pthread_mutex_unlock(&t->mu);
    }
    double len = (double)(now - from_ns) / 1e9;
    if (len <= 0) return;
    if (final && agg[NOPS].count == 0) return;
    if (r->nhrows == r->caphrows) {
        size_t cap = r->caphrows ? r->caphrows * 2 : 256;
        host_row *n = realloc(r->hrows, cap * sizeof *n);
        if (!n) die("out of memory");
        r->hrows = n;
        r->caphrows = cap;
    }
    host_row *hr = &r->hrows[r->nhrows++];
    hr->t = (double)(now - r->start_ns) / 1e9;
    hostmon_next(&r->host, len, &hr->h);
    for (int o = 0; o <= NOPS; o++) {
        if (o < NOPS && agg[o].count == 0) continue;
        row x = {.t = (double)(now - r->start_ns) / 1e9,
                 .op = o,
                 .ops = ops[o],
                 .ops_per_sec = (double)ops[o] / len,
                 .p50 = hist_percentile(&agg[o], 50),
                 .p99 = hist_percentile(&agg[o], 99),
                 .p999 = hist_percentile(&agg[o], 99.9),
                 .max = agg[o].max};
        add_row(r, &x);
    }
    /* progress on stderr: a rewritten line on a terminal, a line every 10 s otherwise */
    const row *a = &r->rows[r->nrows - 1];
    static double last_log;
    if (g_tty) {
        fprintf(stderr, "\r%-12s %-16s %6.0fs %10.0f ops/s  p99 %9.1f us  max %10.1f us   ", ename(r->ops), r->bench,
                a->t, a->ops_per_sec, (double)a->p99 / 1e3, (double)a->max / 1e3);
    } else if (a->t - last_log >= 10 || a->t < last_log) {
        fprintf(stderr, "%s %s %.0fs %.0f ops/s p99 %.1f us\n", ename(r->ops), r->bench, a->t, a->ops_per_sec,
                (double)a->p99 / 1e3);
        last_log = a->t;
    }
}

/* sync_db_filesystem -- syncfs() of the filesystem holding dir (best effort:
 * a failure is reported, the run goes on). */
static void sync_db_filesystem(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || syncfs(fd) != 0) fprintf(stderr, "tkv_bench: syncfs %s: %s\n", dir, strerror(errno));
    if (fd >= 0) close(fd);
}

static void *reporter_main(void *p)
{
    run *r = p;
    uint64_t iv = (uint64_t)(F.report_interval * 1e9), next = r->start_ns + iv, prev = r->start_ns;
    while (!r->stop) {
        uint64_t now = lg_now_ns();
        if (now >= next) {
            harvest(r, prev, now, 0);
            prev = now;
            next += iv;
            continue;
        }
        uint64_t d = next - now;
        if (d > 50000000u) d = 50000000u;
        struct timespec ts = {0, (long)d};
        nanosleep(&ts, NULL);
    }
    harvest(r, prev, lg_now_ns(), 1);
    if (g_tty) fprintf(stderr, "\n");
    return NULL;
}

/* --------------------------------------------------------------- threads */

typedef struct closed_arg {
    run *r;
    int tid;
} closed_arg;

static void *closed_main(void *p)
{
    closed_arg *a = p;
    run *r = a->r;
    /* --duration bounds non-fill benchmarks that run closed loop only when no
     * rate is given (with --rate it is the open-loop length) */
    uint64_t deadline = F.duration > 0 && !is_fill(r->kind) && r->kind != B_DELETERANGE && !F.rate
                            ? r->start_ns + (uint64_t)(F.duration * 1e9)
                            : 0;
    int writer = r->kind == B_READWHILEWRITING && a->tid == r->writer_thread;
    for (uint64_t n = 0;; n++) {
        if (r->stop) break;
        uint64_t idx;
        if (writer) {
            idx = n;
        } else {
            idx = __atomic_fetch_add(&r->next_index, 1, __ATOMIC_RELAXED);
            if (!deadline && idx >= r->target) break;
        }
        uint64_t now = lg_now_ns();
        if (deadline && now >= deadline) break;
        one_op(r, a->tid, idx, now);
    }
    return NULL;
}

static void open_exec(void *arg, int worker, uint64_t intended)
{
    run *r = arg;
    uint64_t idx = __atomic_fetch_add(&r->next_index, 1, __ATOMIC_RELAXED);
    one_op(r, worker, idx, intended);
}

/* ------------------------------------------------------------ accounting */

/* proc_io_written -- bytes this process caused to be written to storage
 * (write_bytes - cancelled_write_bytes of /proc/self/io), or -1. */
static int64_t proc_io_written(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    if (!f) return -1;
    char line[128];
    long long wb = -1, cw = 0;
    while (fgets(line, sizeof line, f)) {
        sscanf(line, "write_bytes: %lld", &wb);
        sscanf(line, "cancelled_write_bytes: %lld", &cw);
    }
    fclose(f);
    return wb < 0 ? -1 : (int64_t)(wb - cw);
}

static void tstate_init(tstate *t, int tid, uint64_t bench_seed)
{
    memset(t, 0, sizeof *t);
    pthread_mutex_init(&t->mu, NULL);
    for (int o = 0; o < NOPS; o++) {
        hist_reset(&t->iv[o]);
        hist_reset(&t->tot[o]);
    }
    wl_rng_seed(&t->rng, bench_seed * 1000003u + (uint64_t)tid);
    t->key = malloc(F.key_size);
    t->val = malloc(F.value_size ? F.value_size : 1);
    t->mkeys = calloc((size_t)F.batch, sizeof *t->mkeys);
    t->mkns = calloc((size_t)F.batch, sizeof *t->mkns);
    t->mfound = calloc((size_t)F.batch, sizeof *t->mfound);
    t->mkeybuf = malloc((size_t)F.batch * F.key_size);
    if (!t->key || !t->val || !t->mkeys || !t->mkns || !t->mfound || !t->mkeybuf) die("out of memory");
}

static void tstate_free(run *r, tstate *t)
{
    if (t->it) r->ops->iter_free(t->it);
    free(t->key);
    free(t->val);
    free(t->mkeys);
    free(t->mkns);
    free(t->mfound);
    free(t->mkeybuf);
    pthread_mutex_destroy(&t->mu);
}

/* ------------------------------------------------------------- a benchmark */

static FILE *g_timeline; /* --csv DIR/timeline.csv */
static FILE *g_host;     /* --csv DIR/host.csv: the host beside each interval (hostmon.h) */

static void run_benchmark(const engine_ops *ops, engine *e, const char *bench, uint64_t bench_seed, summary *s)
{
    char letter = 0;
    int kind = bench_kind(bench, &letter);
    run *r = calloc(1, sizeof *r);
    if (!r) die("out of memory");
    r->ops = ops;
    r->e = e;
    r->bench = bench;
    r->kind = kind;
    r->nthreads = F.threads + (kind == B_READWHILEWRITING ? 1 : 0);
    r->writer_thread = kind == B_READWHILEWRITING ? F.threads : -1;
    r->target = is_fill(kind) || kind == B_OVERWRITE ? F.num : (F.reads ? F.reads : F.num);
    if (kind == B_DELETERANGE) r->target = F.deleterange_ranges;
    if (kind == B_MULTIREAD) r->target = (r->target + (uint64_t)F.batch - 1) / (uint64_t)F.batch;
    if (kind == B_YCSB) {
        int d = F.distribution ? wl_dist_parse(F.distribution) : -1;
        if (F.distribution && d < 0) die("unknown --distribution %s", F.distribution);
        if (wl_ycsb_init(&r->y, letter, F.num, d) != 0) die("bad ycsb workload %s", bench);
    }
    r->ts = calloc((size_t)r->nthreads, sizeof *r->ts);
    if (!r->ts) die("out of memory");
    for (int i = 0; i < r->nthreads; i++) tstate_init(&r->ts[i], i, bench_seed);
    r->open_loop = uses_rate(bench, kind);

    engine_stats st0, st1;
    memset(&st0, 0, sizeof st0);
    memset(&st1, 0, sizeof st1);
    /* An open-loop run starts with no dirty pages in the page cache of the
     * database's filesystem, for every engine alike: otherwise the kernel
     * writes back what the prepopulation left (dirty_expire, ~30 s after it
     * was written) in one burst in the middle of the measured run. */
    if (r->open_loop) sync_db_filesystem(F.db);
    int have_stats = ops->stats(e, &st0) == 0;
    int64_t io0 = proc_io_written();

    r->start_ns = lg_now_ns();
    /* CLOCK_MONOTONIC of t=0 of this benchmark's timeline, to line it up with
     * kernel traces (trace_clock=mono) and TKV_BENCH_PROPERTY_LOG's mono=. */
    printf("# %s: t=0 at monotonic %.6f s\n", bench, (double)r->start_ns / 1e9);
    fflush(stdout);
    hostmon_start(&r->host, F.db);
    pthread_t rep;
    if (pthread_create(&rep, NULL, reporter_main, r) != 0) die("cannot start the reporter thread");
    lg_result lr = {0};
    double expected = 0;
    if (r->open_loop) {
        lg_phase *ph;
        size_t nph;
        char err[256];
        if (lg_parse_schedule(F.rate, &ph, &nph, err, sizeof err) != 0) die("--rate: %s", err);
        expected = lg_expected_ops(ph, nph, F.duration);
        pthread_t wt;
        closed_arg wa = {r, r->writer_thread};
        int have_writer = kind == B_READWHILEWRITING;
        /* readwhilewriting: the writer runs closed loop next to the open-loop readers */
        if (have_writer && pthread_create(&wt, NULL, closed_main, &wa) != 0) die("cannot start the writer");
        /* --throttle: the slow drive for the measured open-loop run only
         * (prepopulation and the settle afterwards run at full speed) */
        char terr[512];
        if (F.throttle && throttle_enter(F.db, F.throttle, terr, sizeof terr) != 0) die("--throttle: %s", terr);
        if (lg_run(ph, nph, F.duration, F.threads, open_exec, r, NULL, &lr) != 0) die("cannot start workers");
        throttle_leave();
        if (have_writer) {
            r->stop = 1;
            pthread_join(wt, NULL);
        }
        free(ph);
    } else {
        pthread_t *th = calloc((size_t)r->nthreads, sizeof *th);
        closed_arg *ca = calloc((size_t)r->nthreads, sizeof *ca);
        if (!th || !ca) die("out of memory");
        for (int i = 0; i < r->nthreads; i++) {
            ca[i] = (closed_arg){r, i};
            if (pthread_create(&th[i], NULL, closed_main, &ca[i]) != 0) die("cannot start client threads");
        }
        for (int i = 0; i < r->nthreads; i++) {
            if (i == r->writer_thread) continue;
            pthread_join(th[i], NULL);
        }
        if (r->writer_thread >= 0) { /* readers are done: stop the writer */
            r->stop = 1;
            pthread_join(th[r->writer_thread], NULL);
        }
        free(th);
        free(ca);
    }
    uint64_t end_ns = lg_now_ns();
    r->stop = 1;
    pthread_join(rep, NULL);
    hostmon_stop(&r->host);

    /* let the engine finish the background work this benchmark caused, and
     * charge its writes to the benchmark */
    double settle = 0;
    if (writes_data(kind, letter)) {
        uint64_t t0 = lg_now_ns();
        if (ops->wait_idle(e) != 0) fprintf(stderr, "tkv_bench: wait_idle on %s: %s\n", ops->name, ops->last_error());
        settle = (double)(lg_now_ns() - t0) / 1e9;
    }
    int64_t io1 = proc_io_written();
    if (have_stats && ops->stats(e, &st1) != 0) have_stats = 0;

    memset(s, 0, sizeof *s);
    snprintf(s->engine, sizeof s->engine, "%s", ename(ops));
    snprintf(s->bench, sizeof s->bench, "%s", bench);
    hist_reset(&s->all);
    uint64_t user_bytes = 0;
    for (int o = 0; o < NOPS; o++) hist_reset(&s->per[o]);
    for (int i = 0; i < r->nthreads; i++) {
        tstate *t = &r->ts[i];
        for (int o = 0; o < NOPS; o++) {
            hist_merge(&s->per[o], &t->tot[o]);
            hist_merge(&s->all, &t->tot[o]);
            s->per_ops[o] += t->tot_ops[o];
            s->ops += t->tot_ops[o];
        }
        user_bytes += t->user_bytes;
        s->found += t->found;
        s->missing += t->missing;
        s->errors += t->errors;
    }
    s->secs = (double)(end_ns - r->start_ns) / 1e9;
    s->ops_per_sec = s->secs > 0 ? (double)s->ops / s->secs : 0;
    s->wa_dev = s->wa_engine = -1;
    if (user_bytes > 0) {
        if (io0 >= 0 && io1 >= 0) s->wa_dev = (double)(io1 - io0) / (double)user_bytes;
        if (have_stats && st0.device_bytes_written >= 0 && st1.device_bytes_written >= 0)
            s->wa_engine = (double)(st1.device_bytes_written - st0.device_bytes_written) / (double)user_bytes;
    }
    s->stalls = have_stats && st1.stall_count >= 0 ? st1.stall_count - st0.stall_count : -1;
    s->stall_us = have_stats && st1.stall_micros >= 0 ? st1.stall_micros - st0.stall_micros : -1;
    s->settle_secs = settle;
    s->open_loop = r->open_loop;
    s->issued = lr.issued;
    s->max_backlog = lr.max_backlog;
    s->expected = expected;

    if (g_timeline) {
        for (size_t i = 0; i < r->nrows; i++) {
            const row *x = &r->rows[i];
            fprintf(g_timeline, "%s,%s,%.3f,%s,%" PRIu64 ",%.1f,%.2f,%.2f,%.2f,%.2f\n", ename(ops), bench, x->t,
                    x->op == NOPS ? "all" : OP_NAMES[x->op], x->ops, x->ops_per_sec, (double)x->p50 / 1e3,
                    (double)x->p99 / 1e3, (double)x->p999 / 1e3, (double)x->max / 1e3);
        }
        fflush(g_timeline);
    }
    if (g_host) {
        for (size_t i = 0; i < r->nhrows; i++) {
            const host_row *x = &r->hrows[i];
            fprintf(g_host, "%s,%s,%.3f,%.1f,%.1f,%.1f,%.0f,%.2f,%.1f,%.2f,%.1f,%.1f,%.1f,%.2f\n", ename(ops), bench,
                    x->t, x->h.cpu_busy_pct, x->h.iowait_pct, x->h.steal_pct, x->h.dev_reads_per_s,
                    x->h.dev_read_await_ms, x->h.dev_write_mb_per_s, x->h.dev_write_await_ms, x->h.dirty_mb,
                    x->h.writeback_mb, x->h.dev_util_pct, x->h.hiccup_ms);
        }
        fflush(g_host);
    }
    free(r->hrows);
    for (int i = 0; i < r->nthreads; i++) tstate_free(r, &r->ts[i]);
    free(r->ts);
    free(r->rows);
    free(r);
}

/* ------------------------------------------------------------------ output */

static void fmt_us(char *b, size_t n, uint64_t ns)
{
    double us = (double)ns / 1e3;
    if (us < 1000) snprintf(b, n, "%.1f", us);
    else snprintf(b, n, "%.0f", us);
}

static void print_summary_table(FILE *f, const summary *S, size_t ns)
{
    fprintf(f, "\n%-16s %-12s %11s %8s %9s %9s %9s %10s %6s %6s %8s %9s %8s\n", "benchmark", "engine", "ops/s",
            "vs tkv", "p50 us", "p99 us", "p99.9 us", "max us", "WA", "WAeng", "stalls", "stall ms", "settle s");
    for (size_t i = 0; i < ns; i++) {
        const summary *s = &S[i];
        const summary *base = NULL;
        for (size_t j = 0; j < ns; j++)
            if (!strcmp(S[j].bench, s->bench) && !strcmp(S[j].engine, "tierkv")) base = &S[j];
        char ratio[16] = "-", p50[16], p99[16], p999[16], mx[16], wa[16] = "-", wae[16] = "-", stl[24] = "-",
             stlms[24] = "-";
        if (base && base->ops_per_sec > 0) snprintf(ratio, sizeof ratio, "%.2fx", s->ops_per_sec / base->ops_per_sec);
        fmt_us(p50, sizeof p50, hist_percentile(&s->all, 50));
        fmt_us(p99, sizeof p99, hist_percentile(&s->all, 99));
        fmt_us(p999, sizeof p999, hist_percentile(&s->all, 99.9));
        fmt_us(mx, sizeof mx, s->all.max);
        if (s->wa_dev >= 0) snprintf(wa, sizeof wa, "%.2f", s->wa_dev);
        if (s->wa_engine >= 0) snprintf(wae, sizeof wae, "%.2f", s->wa_engine);
        if (s->stalls >= 0) snprintf(stl, sizeof stl, "%" PRId64, s->stalls);
        if (s->stall_us >= 0) snprintf(stlms, sizeof stlms, "%.0f", (double)s->stall_us / 1e3);
        fprintf(f, "%-16s %-12s %11.0f %8s %9s %9s %9s %10s %6s %6s %8s %9s %8.1f\n", s->bench, s->engine,
                s->ops_per_sec, ratio, p50, p99, p999, mx, wa, wae, stl, stlms, s->settle_secs);
        for (int o = 0; o < NOPS; o++) {
            if (!s->per[o].count || s->per[o].count == s->all.count) continue;
            fmt_us(p50, sizeof p50, hist_percentile(&s->per[o], 50));
            fmt_us(p99, sizeof p99, hist_percentile(&s->per[o], 99));
            fmt_us(p999, sizeof p999, hist_percentile(&s->per[o], 99.9));
            fmt_us(mx, sizeof mx, s->per[o].max);
            fprintf(f, "%-16s %-12s %11.0f %8s %9s %9s %9s %10s\n", "", OP_NAMES[o],
                    s->secs > 0 ? (double)s->per_ops[o] / s->secs : 0, "", p50, p99, p999, mx);
        }
    }
    fprintf(f, "\nops/s: operations completed / wall time (multireadrandom counts keys). Latencies in microseconds");
    fprintf(f, "%s.\n", F.rate ? ", open loop: from the intended send time" : "");
    fprintf(f, "WA: bytes the process wrote to storage (/proc/self/io) / user bytes written, including the settle\n"
               "time (waiting for the engine's background work to finish after the benchmark); WAeng: the\n"
               "engine's own count of file bytes written. stalls: the engine's delayed or stopped writes.\n");
}

static void print_machine(FILE *f, int argc, char **argv)
{
    struct utsname u;
    uname(&u);
    char cpu[256] = "?";
    FILE *c = fopen("/proc/cpuinfo", "r");
    if (c) {
        char line[512];
        while (fgets(line, sizeof line, c))
            if (!strncmp(line, "model name", 10)) {
                char *p = strchr(line, ':');
                if (p) snprintf(cpu, sizeof cpu, "%s", p + 2);
                cpu[strcspn(cpu, "\n")] = 0;
                break;
            }
        fclose(c);
    }
    long mem_mb = sysconf(_SC_PHYS_PAGES) / 1024 * (sysconf(_SC_PAGESIZE) / 1024);
    time_t now = time(NULL);
    char date[64];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", gmtime(&now));
    fprintf(f, "tkv_bench  %s\nmachine    %s %s, %ld cores (%s), %ld MiB RAM\ncommand   ", date, u.sysname, u.release,
            sysconf(_SC_NPROCESSORS_ONLN), cpu, mem_mb);
    for (int i = 0; i < argc; i++) fprintf(f, " %s", argv[i]);
    fprintf(f, "\nworkload   %" PRIu64 " records, %zu-byte keys, %zu-byte values, %d client thread(s), %s%s%s\n", F.num,
            F.key_size, F.value_size, F.threads, F.sync ? "sync writes" : "WAL without per-write sync",
            F.direct_io ? ", direct I/O" : "", F.rate ? ", open loop" : ", closed loop");
    if (F.rate) {
        lg_phase *ph;
        size_t n;
        char err[128], d[512];
        if (lg_parse_schedule(F.rate, &ph, &n, err, sizeof err) == 0) {
            lg_schedule_describe(ph, n, d, sizeof d);
            char slack[48];
            if (lg_timer_slack_ns) snprintf(slack, sizeof slack, "%.3f us (--timer_slack_us)", lg_timer_slack_ns / 1e3);
            else snprintf(slack, sizeof slack, "the thread's own");
            fprintf(f, "rate       %s for %.0f s, open loop for: %s; timer slack %s\n", d, F.duration,
                    F.open_loop ? F.open_loop : "every benchmark except fill*", slack);
            free(ph);
        }
    }
    if (F.throttle)
        fprintf(f,
                "drive      open-loop runs capped at %" PRIu64 " bytes/s for reads and for writes (blkio cgroup on the "
                "device of %s)\n",
                F.throttle, F.db);
    if (F.rate_limit)
        fprintf(f, "rocksdb    rate limiter %" PRIu64 " bytes/s%s on flush and compaction writes\n", F.rate_limit,
                F.rate_limit_auto ? ", auto-tuned" : "");
}

/* disk_used -- the bytes of blocks the files under path hold (st_blocks,
 * so a preallocated pool counts whole and a sparse file what it holds). */
static uint64_t g_du;
static int du_one(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
    (void)p, (void)f;
    if (flag == FTW_F) g_du += (uint64_t)sb->st_blocks * 512u;
    return 0;
}
static uint64_t disk_used(const char *path)
{
    g_du = 0;
    if (path[0]) (void)nftw(path, du_one, 16, FTW_PHYS);
    return g_du;
}

/* rm_rf -- removes a database or NVM directory (engine files, at most one
 * level of subdirectories). */
static void rm_rf(const char *path)
{
    char cmd[4200 + 16]; /* paths are built in 4200-byte buffers */
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0) fprintf(stderr, "tkv_bench: could not remove %s\n", path);
}

/* nvm_root -- the parent of the NVM directories of engines with
 * uses_nvm_dir: --nvm_dir; else where tierkv's pool goes: the directory of
 * --opt pmem_path, else <db>/nvm (the default pool is <db>/<engine>/matrix.pmem,
 * so the same file system). *made_here = 1 for <db>/nvm, which tkv_bench
 * creates and may remove. */
static void nvm_root(char *out, size_t n, int *made_here)
{
    const char *pool = tkv_opt("pmem_path");
    *made_here = 0;
    if (F.nvm_dir) {
        snprintf(out, n, "%s", F.nvm_dir);
    } else if (pool && *pool) {
        snprintf(out, n, "%s", pool);
        char *slash = strrchr(out, '/');
        if (!slash) snprintf(out, n, ".");
        else slash[slash == out] = '\0'; /* "/pool" -> "/" */
    } else {
        snprintf(out, n, "%s/nvm", F.db);
        *made_here = 1;
    }
}

/* engine_dirs -- an engine's database directory <db>/<name>, and for an
 * engine with uses_nvm_dir its NVM directory <nvm root>/<name> (its parent
 * created), else "". */
static void engine_dirs(const engine_ops *ops, char *dir, size_t dn, char *nvm, size_t nn)
{
    snprintf(dir, dn, "%s/%s", F.db, ename(ops));
    nvm[0] = '\0';
    if (!ops->uses_nvm_dir) return;
    char root[4096];
    int made_here;
    nvm_root(root, sizeof root, &made_here);
    mkdir(root, 0755);
    snprintf(nvm, nn, "%s/%s", root, ename(ops));
}

/* remove_dirs -- removes what engine_dirs named; with tidy (after the run)
 * also <db>/nvm once empty. */
static void remove_dirs(const char *dir, const char *nvm, int tidy)
{
    rm_rf(dir);
    if (!nvm[0]) return;
    rm_rf(nvm);
    if (!tidy) return;
    char root[4096];
    int made_here;
    nvm_root(root, sizeof root, &made_here);
    if (made_here) rmdir(root); /* fails, harmlessly, while other engines' directories are there */
}

/* find_plot_script -- bench/plot.py next to the source tree. */
static int find_plot_script(char *out, size_t n)
{
    const char *env = getenv("TKV_BENCH_PLOT");
    if (env && access(env, R_OK) == 0) return snprintf(out, n, "%s", env), 0;
    char exe[4096];
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (l > 0) {
        exe[l] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) *slash = 0;
        const char *rel[] = {"/../bench/plot.py", "/../../bench/plot.py"};
        for (size_t i = 0; i < 2; i++) {
            snprintf(out, n, "%s%s", exe, rel[i]);
            if (access(out, R_OK) == 0) return 0;
        }
    }
    snprintf(out, n, "bench/plot.py");
    return access(out, R_OK) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    parse_flags(argc, argv);
    atexit(throttle_leave); /* die() exits: never leave the process group throttled */
    g_tty = isatty(2);
    setvbuf(stdout, NULL, _IOLBF, 0);

    /* validate names before running anything */
    char *benches = strdup(F.benchmarks), *engines = strdup(F.engines);
    const char *blist[64], *elist[16];
    size_t nb = 0, ne = 0;
    for (char *sv = NULL, *t = strtok_r(benches, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
        char l;
        if (bench_kind(t, &l) < 0) die("unknown benchmark %s (see --help)", t);
        if (nb == 64) die("too many benchmarks");
        blist[nb++] = t;
    }
    for (char *sv = NULL, *t = strtok_r(engines, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
        if (!engine_find(t)) die("unknown engine %s (engines: %s)", t, engine_names());
        if (ne == 16) die("too many engines");
        elist[ne++] = t;
    }
    mkdir(F.db, 0755);

    FILE *cfgf = NULL, *sumf = NULL;
    if (F.csv) {
        mkdir(F.csv, 0755);
        char p[4200];
        snprintf(p, sizeof p, "%s/timeline.csv", F.csv);
        if (!(g_timeline = fopen(p, "w"))) die("cannot write %s: %s", p, strerror(errno));
        fprintf(g_timeline, "engine,benchmark,t_sec,op,ops,ops_per_sec,p50_us,p99_us,p999_us,max_us\n");
        snprintf(p, sizeof p, "%s/host.csv", F.csv);
        if (!(g_host = fopen(p, "w"))) die("cannot write %s: %s", p, strerror(errno));
        fprintf(g_host, "engine,benchmark,t_sec,cpu_busy_pct,iowait_pct,steal_pct,dev_reads_per_s,dev_read_await_ms,"
                        "dev_write_mb_per_s,dev_write_await_ms,dirty_mb,writeback_mb,dev_util_pct,hiccup_ms\n");
        snprintf(p, sizeof p, "%s/config.txt", F.csv);
        if (!(cfgf = fopen(p, "w"))) die("cannot write %s: %s", p, strerror(errno));
        snprintf(p, sizeof p, "%s/summary.csv", F.csv);
        if (!(sumf = fopen(p, "w"))) die("cannot write %s: %s", p, strerror(errno));
        fprintf(sumf, "engine,benchmark,op,ops,secs,ops_per_sec,p50_us,p99_us,p999_us,max_us,wa,wa_engine,stalls,"
                      "stall_ms,settle_s\n");
    }
    print_machine(stdout, argc, argv);
    if (cfgf) print_machine(cfgf, argc, argv);

    summary *S = calloc(nb * ne, sizeof *S);
    size_t ns = 0;
    if (!S) die("out of memory");
    for (size_t ei = 0; ei < ne; ei++) {
        const engine_ops *ops = engine_find(elist[ei]);
        char err[512];
        if (!ops->available(err, sizeof err)) {
            printf("engine     %-12s unavailable: %s (skipped)\n", ops->name, err);
            continue;
        }
        char dir[4200], nvm[4200];
        engine_dirs(ops, dir, sizeof dir, nvm, sizeof nvm);
        if (!F.use_existing_db) remove_dirs(dir, nvm, 0);
        engine_config cfg = {
            .rate_limit = F.rate_limit,
            .rate_limit_auto = F.rate_limit_auto,
            .dir = dir,
            .memtable_bytes = F.memtable,
            .memtables = F.memtables,
            .cache_bytes = F.dram - (uint64_t)F.memtables * F.memtable,
            .sync = F.sync,
            .direct_io = F.direct_io,
            .threads = F.threads,
            .tkv_opts = F.tkv_opts,
            .n_tkv_opts = F.n_tkv_opts,
            .nvm_dir = nvm[0] ? nvm : NULL,
            .nvm_bytes = nvm[0] ? nvm_bytes() : 0,
        };
        engine *e;
        if (ops->open(&cfg, &e, err, sizeof err) != 0) die("open %s in %s: %s", ops->name, dir, err);
        printf("engine     %-12s %s\n           config: %s\n", ename(ops), ops->version(), ops->describe(e));
        if (cfgf) fprintf(cfgf, "engine %s: %s\n  config: %s\n", ename(ops), ops->version(), ops->describe(e));
        for (size_t bi = 0; bi < nb; bi++) {
            char l;
            if (bench_kind(blist[bi], &l) == B_DELETERANGE && !ops->del_range) {
                printf("%-16s %-12s skipped: the engine has no range deletion\n", blist[bi], ename(ops));
                continue;
            }
            summary *s = &S[ns++];
            run_benchmark(ops, e, blist[bi], F.seed + bi, s);
            char p99[16];
            fmt_us(p99, sizeof p99, hist_percentile(&s->all, 99));
            printf("%-16s %-12s %10.0f ops/s  p99 %s us  (%" PRIu64 " ops in %.1f s", s->bench, s->engine,
                   s->ops_per_sec, p99, s->ops, s->secs);
            if (s->found + s->missing) printf(", %" PRIu64 " of %" PRIu64 " found", s->found, s->found + s->missing);
            if (s->open_loop)
                printf(", open loop: %" PRIu64 " issued of %.0f scheduled, max backlog %" PRIu64, s->issued,
                       s->expected, s->max_backlog);
            if (s->errors) printf(", %" PRIu64 " ERRORS", s->errors);
            printf(")\n");
            if (sumf) {
                for (int o = -1; o < NOPS; o++) {
                    const hist *h = o < 0 ? &s->all : &s->per[o];
                    if (!h->count) continue;
                    fprintf(sumf,
                            "%s,%s,%s,%" PRIu64 ",%.3f,%.1f,%.2f,%.2f,%.2f,%.2f,%.3f,%.3f,%" PRId64 ",%.1f,%.2f\n",
                            s->engine, s->bench, o < 0 ? "all" : OP_NAMES[o], o < 0 ? s->ops : s->per_ops[o], s->secs,
                            s->secs > 0 ? (double)(o < 0 ? s->ops : s->per_ops[o]) / s->secs : 0,
                            (double)hist_percentile(h, 50) / 1e3, (double)hist_percentile(h, 99) / 1e3,
                            (double)hist_percentile(h, 99.9) / 1e3, (double)h->max / 1e3, s->wa_dev, s->wa_engine,
                            s->stalls, s->stall_us >= 0 ? (double)s->stall_us / 1e3 : -1.0, s->settle_secs);
                }
            }
        }
        engine_stats st;
        if (ops->stats(e, &st) == 0 && st.detail[0]) {
            printf("           %s: %s\n", ename(ops), st.detail);
            if (cfgf) fprintf(cfgf, "  stats at close: %s\n", st.detail);
        }
        ops->close(e);
        uint64_t du = disk_used(dir) + disk_used(nvm);
        printf("           %s: disk used after close %.2f GB (blocks of every file under %s%s%s)\n", ename(ops),
               (double)du / 1e9, dir, nvm[0] ? " and " : "", nvm);
        if (F.csv) {
            char p[4300];
            snprintf(p, sizeof p, "%s/disk_bytes", F.csv);
            FILE *f = fopen(p, "w");
            if (f) fprintf(f, "%" PRIu64 "\n", du), fclose(f);
        }
        if (!F.keep_db) remove_dirs(dir, nvm, 1);
    }
    print_summary_table(stdout, S, ns);
    if (cfgf) fclose(cfgf);
    if (sumf) fclose(sumf);
    if (g_timeline) fclose(g_timeline);
    if (g_host) fclose(g_host);
    int rc = 0;
    for (size_t i = 0; i < ns; i++)
        if (S[i].errors) rc = 1;
    if (F.plot) {
        char script[4200], cmd[8600];
        if (find_plot_script(script, sizeof script) != 0) {
            fprintf(stderr, "tkv_bench: bench/plot.py not found (set TKV_BENCH_PLOT); no plots\n");
        } else {
            /* Debian's python3 has python3-matplotlib (make deps); a python3
             * earlier on PATH (pyenv) may not */
            const char *py = getenv("TKV_PYTHON");
            if (!py) py = access("/usr/bin/python3", X_OK) == 0 ? "/usr/bin/python3" : "python3";
            snprintf(cmd, sizeof cmd, "%s '%s' '%s'", py, script, F.csv);
            if (system(cmd) != 0) fprintf(stderr, "tkv_bench: plotting failed (%s)\n", cmd);
        }
    }
    if (F.csv) printf("\nCSV series and config in %s/\n", F.csv);
    free(S);
    free(benches);
    free(engines);
    free(F.tkv_opts);
    return rc;
}
