// SPDX-License-Identifier: Apache-2.0
/*
 * soak.c -- the soak driver (make soak DURATION=...): worker threads mix
 * writes, reads, scans, batches, deletes and snapshot reads on one
 * database (soak_work.c), checking every answer against a model; between
 * phases the database is closed, reopened and verified in full. Every
 * SOAK_INTERVAL it logs one line: elapsed time, operations, RSS, open file
 * descriptors, the pmem pool's used and allocated bytes, DRAM used against
 * dram_budget, the directory's disk usage. At the end it prints the RSS
 * curve and fails if RSS (total or anonymous) or the heap in use has not
 * plateaued -- the last third's mean more than SOAK_TOLERANCE percent
 * (+ 4 MiB) above the middle third's (the first third is warm-up), or its
 * peak that much above the peak of the first two thirds -- or if open file
 * descriptors grew so (by more than 2). docs/testing.md.
 *
 * Usage: tkv_soak [DURATION]   (10m by default; s, m, h suffixes)
 *        tkv_soak --judge LOG  (the same verdict on a log's sample lines)
 * Environment: SOAK_INTERVAL (60s), SOAK_DIR (build/soak-db), SOAK_LOG (a
 * file that gets the lines too), SOAK_BUDGET (dram_budget, 64M), SOAK_POOL
 * (pmem_size, 128M), SOAK_KEYS (keys per worker, 100000), SOAK_THREADS (2),
 * SOAK_PHASE (mean time between reopens, 120s), SOAK_TOLERANCE (percent, 5),
 * SOAK_SEED.
 */
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "soak.h"

#define MAX_WORKERS 16
#define MAX_SAMPLES 100000

typedef struct sample {
    double t; /* seconds since the start */
    uint64_t ops;
    uint64_t rss, anon, file;      /* bytes (VmRSS, RssAnon, RssFile + RssShmem) */
    uint64_t heap_used, heap_held; /* malloc: bytes in use, and held from the OS (mallinfo2) */
    uint64_t fds;
    uint64_t pool_used, pool_alloc, dram_used, dram_budget, disk;
} sample;

typedef struct soak {
    double duration, interval, phase;
    const char *dir;
    FILE *log;
    tkv_options *opts;
    tkv_db *db;
    int nworkers, stop, reopens;
    soak_worker w[MAX_WORKERS];
    sample *s;
    size_t ns;
    double t0;
} soak;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* say -- a line to stdout and the log file. */
static void say(soak *k, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char line[1024];
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fputs(line, stdout);
    fflush(stdout);
    if (k->log) {
        fputs(line, k->log);
        fflush(k->log);
    }
}

/* parse_duration -- "90", "30s", "10m", "2h" in seconds; < 0 if bad. */
static double parse_duration(const char *s)
{
    if (!s || !*s) return -1;
    char *end;
    double v = strtod(s, &end);
    if (end == s || v < 0) return -1;
    if (*end == 's' || *end == 0) return *end && end[1] ? -1 : v;
    if (*end == 'm' && !end[1]) return v * 60;
    if (*end == 'h' && !end[1]) return v * 3600;
    return -1;
}

static const char *env_or(const char *name, const char *dflt)
{
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}

/* status_kb -- the kB value of `field` in /proc/self/status, 0 if absent. */
static uint64_t status_kb(const char *text, const char *field)
{
    const char *p = strstr(text, field);
    return p ? strtoull(p + strlen(field), NULL, 10) : 0;
}

static void read_proc(sample *s)
{
    char buf[8192];
    FILE *f = fopen("/proc/self/status", "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    s->rss = status_kb(buf, "VmRSS:") << 10;
    s->anon = status_kb(buf, "RssAnon:") << 10;
    s->file = (status_kb(buf, "RssFile:") + status_kb(buf, "RssShmem:")) << 10;
    struct mallinfo2 mi = mallinfo2();
    s->heap_used = mi.uordblks + mi.hblkhd;
    s->heap_held = mi.arena + mi.hblkhd;
    s->fds = 0;
    DIR *d = opendir("/proc/self/fd");
    for (struct dirent *e; d && (e = readdir(d));)
        if (e->d_name[0] != '.') s->fds++;
    if (d) {
        closedir(d);
        s->fds--; /* the directory's own descriptor */
    }
}

/* dir_bytes -- the disk the database directory takes (blocks, as du counts). */
static uint64_t dir_bytes(const char *dir)
{
    uint64_t sum = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        char p[4096];
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (e->d_name[0] != '.' && stat(p, &st) == 0) sum += (uint64_t)st.st_blocks * 512;
    }
    if (d) closedir(d);
    return sum;
}

/* prop_u64 -- the number after `field` on the line of property `name`
 * that starts with `line` (0 if absent). */
static uint64_t prop_u64(tkv_db *db, const char *name, const char *line, const char *field)
{
    char *p = tkv_property(db, name);
    const char *l = p;
    while (l && strncmp(l, line, strlen(line)) != 0)
        if ((l = strchr(l, '\n'))) l++;
    const char *eol = l ? strchr(l, '\n') : NULL, *f = l ? strstr(l, field) : NULL;
    uint64_t v = f && (!eol || f < eol) ? strtoull(f + strlen(field), NULL, 10) : 0;
    tkv_free(p);
    return v;
}

static double mib(uint64_t b) { return (double)b / 1048576.0; }

/* take_sample -- one sample and its log line (the database is open). */
static void take_sample(soak *k)
{
    if (k->ns == MAX_SAMPLES) return;
    sample *s = &k->s[k->ns++];
    memset(s, 0, sizeof *s);
    s->t = now_s() - k->t0;
    for (int i = 0; i < k->nworkers; i++) s->ops += soak_ops_total(&k->w[i].ops);
    read_proc(s);
    s->pool_used = prop_u64(k->db, "tkv.pmem", "space:", " used=");
    s->pool_alloc = prop_u64(k->db, "tkv.pmem", "space:", "allocated=");
    s->dram_used = prop_u64(k->db, "tkv.memory", "budget:", " used=");
    s->dram_budget = prop_u64(k->db, "tkv.memory", "budget:", "total=");
    s->disk = dir_bytes(k->dir);
    double rate = s->t > 0 ? (double)s->ops / s->t : 0;
    say(k,
        "[soak] t=%6.0fs ops=%llu (%.0f/s) rss=%.1fM anon=%.1fM file=%.1fM heap=%.1fM/%.1fM fds=%llu "
        "pool_used=%.1fM pool_alloc=%.1fM dram=%.1fM/%.1fM disk=%.1fM reopens=%d\n",
        s->t, (unsigned long long)s->ops, rate, mib(s->rss), mib(s->anon), mib(s->file), mib(s->heap_used),
        mib(s->heap_held), (unsigned long long)s->fds, mib(s->pool_used), mib(s->pool_alloc), mib(s->dram_used),
        mib(s->dram_budget), mib(s->disk), k->reopens);
}

static int open_db(soak *k)
{
    int rc = tkv_open(k->dir, k->opts, &k->db);
    if (rc) say(k, "[soak] FAIL: tkv_open %s: %s: %s\n", k->dir, tkv_strerror(rc), tkv_errmsg());
    for (int i = 0; i < k->nworkers; i++) k->w[i].db = k->db;
    return rc ? -1 : 0;
}

/* run_phase -- the workers run until `until` (seconds since start) or a
 * failure, sampling on the way; *next_sample moves on. */
static int run_phase(soak *k, double until, double *next_sample)
{
    __atomic_store_n(&k->stop, 0, __ATOMIC_RELAXED);
    for (int i = 0; i < k->nworkers; i++) pthread_create(&k->w[i].thread, NULL, soak_worker_run, &k->w[i]);
    int failed = 0;
    while (!failed && now_s() - k->t0 < until) {
        usleep(100000);
        for (int i = 0; i < k->nworkers; i++) failed |= __atomic_load_n(&k->w[i].fail[0], __ATOMIC_RELAXED) != 0;
        if (now_s() - k->t0 >= *next_sample) {
            take_sample(k);
            *next_sample += k->interval;
        }
    }
    __atomic_store_n(&k->stop, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < k->nworkers; i++) pthread_join(k->w[i].thread, NULL);
    for (int i = 0; i < k->nworkers; i++)
        if (k->w[i].fail[0]) {
            say(k, "[soak] FAIL (worker %d): %s\n", i, k->w[i].fail);
            return -1;
        }
    return 0;
}

/* reopen -- close (must succeed), open, verify every worker's range. */
static int reopen(soak *k)
{
    int rc = tkv_close(k->db);
    k->db = NULL;
    if (rc) {
        say(k, "[soak] FAIL: tkv_close: %s: %s\n", tkv_strerror(rc), tkv_errmsg());
        return -1;
    }
    if (open_db(k) < 0) return -1;
    k->reopens++;
    for (int i = 0; i < k->nworkers; i++)
        if (soak_verify_all(&k->w[i]) < 0) {
            say(k, "[soak] FAIL (verify after reopen %d): %s\n", k->reopens, k->w[i].fail);
            return -1;
        }
    return 0;
}

/* peak -- the largest value of field `off` over samples [a, b). */
static uint64_t peak(const soak *k, size_t a, size_t b, size_t off)
{
    uint64_t m = 0;
    for (size_t i = a; i < b; i++) {
        uint64_t v;
        memcpy(&v, (const char *)&k->s[i] + off, sizeof v);
        if (v > m) m = v;
    }
    return m;
}

/* slope -- least-squares slope of field `off` over samples [a, b), in
 * bytes per hour. */
static double slope(const soak *k, size_t a, size_t b, size_t off)
{
    double n = (double)(b - a), st = 0, sv = 0, stt = 0, stv = 0;
    for (size_t i = a; i < b; i++) {
        uint64_t v;
        memcpy(&v, (const char *)&k->s[i] + off, sizeof v);
        st += k->s[i].t;
        sv += (double)v;
        stt += k->s[i].t * k->s[i].t;
        stv += k->s[i].t * (double)v;
    }
    double den = n * stt - st * st;
    return den > 0 ? (n * stv - st * sv) / den * 3600.0 : 0.0;
}

/* print_curve -- the RSS curve, at most 40 rows. */
static void print_curve(soak *k)
{
    say(k, "[soak] RSS curve:\n[soak] %8s %10s %10s %10s %10s %6s %10s %12s\n", "t(s)", "rss(MiB)", "anon(MiB)",
        "file(MiB)", "heap(MiB)", "fds", "dram(MiB)", "ops");
    size_t step = k->ns > 40 ? (k->ns + 39) / 40 : 1;
    for (size_t i = 0; i < k->ns; i += step) {
        const sample *s = &k->s[i];
        say(k, "[soak] %8.0f %10.1f %10.1f %10.1f %10.1f %6llu %10.1f %12llu\n", s->t, mib(s->rss), mib(s->anon),
            mib(s->file), mib(s->heap_used), (unsigned long long)s->fds, mib(s->dram_used), (unsigned long long)s->ops);
    }
}

/* mean -- the mean of field `off` over samples [a, b). */
static double mean(const soak *k, size_t a, size_t b, size_t off)
{
    double sum = 0;
    for (size_t i = a; i < b; i++) {
        uint64_t v;
        memcpy(&v, (const char *)&k->s[i] + off, sizeof v);
        sum += (double)v;
    }
    return b > a ? sum / (double)(b - a) : 0.0;
}

/* grew -- judges field `off` over thirds [0, a), [a, b), [b, ns): 1 if the
 * last third's mean passes the middle third's (the first is warm-up), or
 * the last third's peak passes the peak of the first two, by more than
 * tol_pct percent + slack. Prints the numbers. */
static int grew(soak *k, const char *name, size_t off, double tol_pct, double slack, int bytes)
{
    size_t a = k->ns / 3, b = k->ns * 2 / 3;
    double m_mid = mean(k, a, b, off), m_late = mean(k, b, k->ns, off);
    double p_early = (double)peak(k, 0, b, off), p_late = (double)peak(k, b, k->ns, off);
    double f = 1.0 + tol_pct / 100.0, u = bytes ? 1048576.0 : 1.0;
    int by_mean = m_late > m_mid * f + slack, by_peak = p_late > p_early * f + slack;
    say(k,
        "[soak] %s: mean %.1f%s in the middle third, %.1f%s in the last (limit %.1f%s); peak %.1f%s before the "
        "last third, %.1f%s in it (limit %.1f%s); slope over the last half %+.1f%s/h: %s\n",
        name, m_mid / u, bytes ? "M" : "", m_late / u, bytes ? "M" : "", (m_mid * f + slack) / u, bytes ? "M" : "",
        p_early / u, bytes ? "M" : "", p_late / u, bytes ? "M" : "", (p_early * f + slack) / u, bytes ? "M" : "",
        slope(k, k->ns / 2, k->ns, off) / u, bytes ? "M" : "", by_mean || by_peak ? "STILL GROWING" : "plateau");
    return by_mean || by_peak;
}

/* verdict -- 0 if RSS (total and anonymous) and the heap in use plateaued
 * and open file descriptors did not grow (grew(): SOAK_TOLERANCE percent
 * + 4 MiB for the memory, 2 descriptors for fds). RSS swings by tens of
 * MiB with the pool's mapped pages and what the allocator keeps, so it
 * catches only a fast rise; the heap in use is steady to a few MiB and
 * shows a leak of a MiB a minute within 30 minutes. */
static int verdict(soak *k, double tol_pct)
{
    print_curve(k);
    if (k->ns < 6) {
        say(k, "[soak] verdict: not judged (%zu samples; 6 needed: a longer DURATION or a shorter SOAK_INTERVAL)\n",
            k->ns);
        return 0;
    }
    int bad = grew(k, "rss", offsetof(sample, rss), tol_pct, 4.0 * 1048576.0, 1);
    bad |= grew(k, "anon", offsetof(sample, anon), tol_pct, 4.0 * 1048576.0, 1);
    bad |= grew(k, "heap", offsetof(sample, heap_used), tol_pct, 4.0 * 1048576.0, 1);
    bad |= grew(k, "fds", offsetof(sample, fds), 0.0, 2.0, 0);
    return bad ? -1 : 0;
}

/* judge -- reads the sample lines of a soak log and gives its verdict. */
static int judge(soak *k, const char *path, double tol_pct)
{
    FILE *f = fopen(path, "r");
    if (!f || !(k->s = calloc(MAX_SAMPLES, sizeof *k->s))) {
        fprintf(stderr, "soak: cannot read %s: %s\n", path, strerror(errno));
        if (f) fclose(f);
        return 2;
    }
    char line[1024];
    while (k->ns < MAX_SAMPLES && fgets(line, sizeof line, f)) {
        sample *s = &k->s[k->ns];
        double rss, anon, file, used, held, fds;
        char *p = strstr(line, "[soak] t=");
        if (!p || sscanf(p, "[soak] t=%lfs", &s->t) != 1 || !(p = strstr(line, " rss=")) ||
            sscanf(p, " rss=%lfM anon=%lfM file=%lfM heap=%lfM/%lfM fds=%lf", &rss, &anon, &file, &used, &held, &fds) !=
                6)
            continue;
        s->rss = (uint64_t)(rss * 1048576.0);
        s->anon = (uint64_t)(anon * 1048576.0);
        s->file = (uint64_t)(file * 1048576.0);
        s->heap_used = (uint64_t)(used * 1048576.0);
        s->heap_held = (uint64_t)(held * 1048576.0);
        s->fds = (uint64_t)fds;
        k->ns++;
    }
    fclose(f);
    int rc = verdict(k, tol_pct);
    printf("[soak] %s: %zu samples of %s\n", rc ? "FAILED" : "passed", k->ns, path);
    free(k->s);
    return rc ? 1 : 0;
}

/* setup -- options, the workers' models, a fresh database directory. */
static int setup(soak *k, uint64_t seed)
{
    const char *budget = env_or("SOAK_BUDGET", "64M"), *pool = env_or("SOAK_POOL", "128M");
    k->opts = tkv_options_new();
    if (!k->opts || tkv_options_set(k->opts, "dram_budget", budget) || tkv_options_set(k->opts, "pmem_size", pool)) {
        say(k, "[soak] FAIL: options dram_budget=%s pmem_size=%s: %s\n", budget, pool, tkv_errmsg());
        return -1;
    }
    k->nworkers = atoi(env_or("SOAK_THREADS", "2"));
    if (k->nworkers < 1 || k->nworkers > MAX_WORKERS) k->nworkers = 2;
    uint32_t keys = (uint32_t)strtoul(env_or("SOAK_KEYS", "100000"), NULL, 10);
    if (keys < 100) keys = 100;
    for (int i = 0; i < k->nworkers; i++) {
        if (soak_worker_init(&k->w[i], i, keys, seed) < 0) return -1;
        k->w[i].stop = &k->stop;
    }
    if (!(k->s = calloc(MAX_SAMPLES, sizeof *k->s))) return -1;
    int rc = tkv_destroy(k->dir);
    if (rc) {
        say(k, "[soak] FAIL: tkv_destroy %s: %s\n", k->dir, tkv_errmsg());
        return -1;
    }
    say(k,
        "[soak] duration=%.0fs interval=%.0fs phase~%.0fs dir=%s dram_budget=%s pmem_size=%s workers=%d "
        "keys/worker=%u seed=%llu\n",
        k->duration, k->interval, k->phase, k->dir, budget, pool, k->nworkers, keys, (unsigned long long)seed);
    return open_db(k);
}

/* soak_run -- phases until the duration is up; 0 if every check passed. */
static int soak_run(soak *k, uint64_t seed)
{
    double next_sample = k->interval;
    uint64_t r = seed;
    k->t0 = now_s();
    for (;;) {
        double elapsed = now_s() - k->t0;
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        double len = k->phase * (0.5 + (double)(r >> 11) / 9007199254740992.0); /* 0.5 .. 1.5 x phase */
        double until = elapsed + len < k->duration ? elapsed + len : k->duration;
        if (run_phase(k, until, &next_sample) < 0) return -1;
        if (now_s() - k->t0 >= k->duration) return 0;
        if (reopen(k) < 0) return -1;
    }
}

int main(int argc, char **argv)
{
    soak k;
    memset(&k, 0, sizeof k);
    k.duration = parse_duration(argc > 1 ? argv[1] : env_or("SOAK_DURATION", "10m"));
    k.interval = parse_duration(env_or("SOAK_INTERVAL", "60s"));
    k.phase = parse_duration(env_or("SOAK_PHASE", "120s"));
    double tol = strtod(env_or("SOAK_TOLERANCE", "5"), NULL);
    if (argc == 3 && !strcmp(argv[1], "--judge")) return judge(&k, argv[2], tol);
    if (k.duration <= 0 || k.interval <= 0 || k.phase <= 0) {
        fprintf(stderr,
                "usage: %s [DURATION]  (e.g. 90, 30s, 10m, 2h; SOAK_INTERVAL and SOAK_PHASE likewise)\n"
                "       %s --judge LOG  (the verdict on a soak log's sample lines)\n",
                argv[0], argv[0]);
        return 2;
    }
    if (k.phase > k.duration / 3) k.phase = k.duration / 3; /* at least a couple of reopens */
    k.dir = env_or("SOAK_DIR", "build/soak-db");
    const char *log = getenv("SOAK_LOG");
    if (log && *log && !(k.log = fopen(log, "w"))) fprintf(stderr, "soak: cannot write %s: %s\n", log, strerror(errno));
    uint64_t seed = strtoull(env_or("SOAK_SEED", "0"), NULL, 10);
    if (!seed) seed = (uint64_t)time(NULL) ^ (uint64_t)getpid() << 32;
    int rc = setup(&k, seed);
    if (rc == 0) rc = soak_run(&k, seed);
    if (rc == 0 && k.db) {
        if (!k.ns || now_s() - k.t0 - k.s[k.ns - 1].t > k.interval / 2) take_sample(&k);
        int crc = tkv_close(k.db);
        k.db = NULL;
        if (crc) say(&k, "[soak] FAIL: tkv_close: %s: %s\n", tkv_strerror(crc), tkv_errmsg());
        rc = crc ? -1 : 0;
    }
    if (rc == 0) rc = verdict(&k, tol);
    else if (k.db) tkv_close(k.db); /* the failure is already reported; keep the directory */
    uint64_t ops = 0;
    for (int i = 0; i < k.nworkers; i++) ops += soak_ops_total(&k.w[i].ops);
    say(&k, "[soak] %s: %.0fs, %llu operations, %d reopens (seed %llu)\n", rc ? "FAILED" : "passed", now_s() - k.t0,
        (unsigned long long)ops, k.reopens, (unsigned long long)seed);
    if (rc == 0) tkv_destroy(k.dir);
    for (int i = 0; i < k.nworkers; i++) soak_worker_free(&k.w[i]);
    free(k.s);
    tkv_options_free(k.opts);
    if (k.log) fclose(k.log);
    return rc ? 1 : 0;
}
