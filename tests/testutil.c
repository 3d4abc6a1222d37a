// SPDX-License-Identifier: Apache-2.0
/*
 * testutil.c -- temporary directories, PRNG, scale, options helpers, the
 * ordered in-memory model and the model-vs-database check (see testutil.h).
 */
#include "testutil.h"
#include "util/checksum.h"
#include "util/rng.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

/* ---------------------------------------------------------------- directories */

int tu_is_sst(const char *path)
{
    size_t n = strlen(path);
    return n >= 4 && strcmp(path + n - 4, ".sst") == 0;
}

int tu_thread_is(const char *name)
{
    char cur[32] = "";
    pthread_getname_np(pthread_self(), cur, sizeof cur);
    return strcmp(cur, name) == 0;
}

char *tu_tmpdir(const char *tag)
{
    char *p = malloc(strlen(tag) + 32);
    assert_non_null(p);
    sprintf(p, "/tmp/tkv-%s-XXXXXX", tag);
    if (!mkdtemp(p)) fail_msg("mkdtemp(%s): %s", p, strerror(errno));
    return p;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void tu_rmrf(const char *path)
{
    if (path) nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void tu_tmpdir_free(char *path)
{
    if (!path) return;
    const char *keep = getenv("TKV_TEST_KEEP");
    if (keep && *keep && strcmp(keep, "0")) fprintf(stderr, "# kept %s\n", path);
    else tu_rmrf(path);
    free(path);
}

char *tu_path(const char *dir, const char *name)
{
    char *p = malloc(strlen(dir) + strlen(name) + 2);
    assert_non_null(p);
    sprintf(p, "%s/%s", dir, name);
    return p;
}

/* ---------------------------------------------------------------- randomness */

uint64_t tu_mix64(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

uint64_t tu_seed(void)
{
    static int have;
    static uint64_t seed;
    if (!have) {
        const char *e = getenv("TKV_TEST_SEED");
        if (e && *e) {
            seed = strtoull(e, NULL, 0);
        } else {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            seed = tu_mix64((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^ (uint64_t)getpid();
            seed &= UINT64_C(0xffffffffffff); /* short enough to retype */
        }
        have = 1;
        const char *f = getenv("TKV_TEST_FILTER");
        if (f && *f) cmocka_set_test_filter(f);
        fprintf(stderr, "# seed=%" PRIu64 " (rerun with TKV_TEST_SEED=%" PRIu64 "), scale=%u\n", seed, seed,
                tu_scale());
    }
    return seed;
}

void tu_rng_init(tu_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) {
        x += UINT64_C(0x9e3779b97f4a7c15);
        r->s[i] = tu_mix64(x);
    }
}

uint64_t tu_splitmix64(uint64_t *x)
{
    uint64_t out = tu_mix64(*x);
    *x += UINT64_C(0x9e3779b97f4a7c15); /* the golden-ratio step of splitmix64 */
    return out;
}

void tu_rng_init_splitmix(tu_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) r->s[i] = tu_splitmix64(&seed);
}

uint64_t tu_rng_next(tu_rng *r) { return xoshiro256ss_next(r->s); }

double tu_rng_signed_unit(tu_rng *r) { return (double)(tu_rng_next(r) >> 11) / (double)(1ull << 52) - 1.0; }

uint64_t tu_rng_below(tu_rng *r, uint64_t n)
{
    if (n == 0) return 0;
    return (uint64_t)(((unsigned __int128)tu_rng_next(r) * n) >> 64);
}

uint64_t tu_rng_range(tu_rng *r, uint64_t lo, uint64_t hi) { return lo + tu_rng_below(r, hi - lo + 1); }

int tu_rng_chance(tu_rng *r, uint32_t per_million) { return tu_rng_below(r, 1000000) < per_million; }

void tu_rng_fill(tu_rng *r, void *p, size_t n)
{
    uint8_t *d = p;
    while (n >= 8) {
        uint64_t x = tu_rng_next(r);
        memcpy(d, &x, 8);
        d += 8;
        n -= 8;
    }
    if (n) {
        uint64_t x = tu_rng_next(r);
        memcpy(d, &x, n);
    }
}

unsigned tu_scale(void)
{
    const char *e = getenv("TKV_TEST_SCALE");
    if (!e || !*e) return 1;
    long v = strtol(e, NULL, 10);
    return v < 1 ? 1u : (unsigned)v;
}

/* ---------------------------------------------------------------- misc */

double tu_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

const char *tu_hex(const void *p, size_t n)
{
    static char bufs[4][160];
    static unsigned next;
    char *b = bufs[next++ % 4];
    const uint8_t *s = p;
    size_t o = 0, shown = n < 48 ? n : 48;
    o += (size_t)snprintf(b + o, 160 - o, "[%zu]\"", n);
    for (size_t i = 0; s && i < shown && o < 150; i++) {
        if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '\\') b[o++] = (char)s[i];
        else o += (size_t)snprintf(b + o, 160 - o, "\\x%02x", s[i]);
    }
    snprintf(b + o, 160 - o, "\"%s", shown < n ? "..." : "");
    return b;
}

int tu_opt(tkv_options *o, const char *name, const char *value)
{
    static char logged[32][48];
    static int nlogged;
    int rc = tkv_options_set(o, name, value);
    if (rc == TKV_INVALID) {
        for (int i = 0; i < nlogged; i++)
            if (!strcmp(logged[i], name)) return rc;
        if (nlogged < 32) snprintf(logged[nlogged++], sizeof logged[0], "%s", name);
        fprintf(stderr, "# option %s=%s not accepted (ignored): %s\n", name, value, tkv_errmsg());
    }
    return rc;
}

tkv_options *tu_small_options(void)
{
    tkv_options *o = tkv_options_new();
    assert_non_null(o);
    const char *mt = getenv("TKV_TEST_MEMTABLE_SIZE");
    assert_int_equal(tu_opt(o, "memtable_size", mt && *mt ? mt : "64K"), TKV_OK);
    /* Small tiers below the memtable, so data moves down during a test. Options
     * the library does not (yet) have are logged and ignored. */
    const char *ps = getenv("TKV_TEST_PMEM_SIZE");
    tu_opt(o, "pmem_size", ps && *ps ? ps : "16M");
    tu_opt(o, "matrix_trigger", "10"); /* l0=matrix: a compactor forms at 1.6M of rows, */
    tu_opt(o, "column_bytes", "256K"); /* which drains in columns of 256K */
    tu_opt(o, "sst_size", "256K");
    tu_opt(o, "l1_size", "512K");       /* deep levels fill and compact by score */
    tu_opt(o, "level_multiplier", "4"); /* L2 2M, L3 8M, ... */
    tu_opt(o, "block_cache_size", "1M");
    const char *l0 = getenv("TKV_TEST_L0"); /* run a suite with l0=sst or l0=matrix */
    if (l0 && *l0) assert_int_equal(tu_opt(o, "l0", l0), TKV_OK);
    const char *gate = getenv("TKV_TEST_COLUMN_GATE"); /* "always": columns in parallel whenever they can */
    if (gate && *gate) assert_int_equal(tu_opt(o, "column_gate", gate), TKV_OK);
    return o;
}

int tu_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int tu_fault_hook(io_op op, const char *path, size_t len, void *arg)
{
    (void)len;
    tu_fault *f = arg;
    if (op != f->op || (f->match && (!path || !strstr(path, f->match)))) return 0;
    int skip = __atomic_load_n(&f->skip, __ATOMIC_ACQUIRE);
    while (skip > 0)
        if (__atomic_compare_exchange_n(&f->skip, &skip, skip - 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return 0;
    int left = __atomic_load_n(&f->times, __ATOMIC_ACQUIRE);
    for (;;) {
        if (left == 0) return 0;
        if (left < 0) break; /* every one */
        if (__atomic_compare_exchange_n(&f->times, &left, left - 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) break;
    }
    __atomic_fetch_add(&f->hits, 1, __ATOMIC_RELAXED);
    return f->ret;
}

uint64_t tu_absdiff(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

uint64_t tu_file_size(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0) fail_msg("stat %s: %s", path, strerror(errno));
    return (uint64_t)sb.st_size;
}

void tu_copy_file(const char *src, const char *dst)
{
    int in = open(src, O_RDONLY), out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0) fail_msg("copy %s -> %s: open failed: %s", src, dst, strerror(errno));
    static __thread uint8_t buf[1 << 16];
    static const uint8_t zero[1 << 16];
    ssize_t n;
    off_t off = 0;
    while ((n = read(in, buf, sizeof buf)) > 0) {
        if (memcmp(buf, zero, (size_t)n) != 0 && pwrite(out, buf, (size_t)n, off) != n) fail_msg("write %s", dst);
        off += n;
    }
    if (n < 0 || ftruncate(out, off) != 0) fail_msg("copy %s -> %s: %s", src, dst, strerror(errno));
    close(in);
    close(out);
}

void tu_copy_db(const char *src, const char *dst, int with_lock)
{
    tu_rmrf(dst);
    if (mkdir(dst, 0755) != 0) fail_msg("mkdir %s: %s", dst, strerror(errno));
    DIR *d = opendir(src);
    if (!d) fail_msg("opendir %s: %s", src, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || (!with_lock && !strcmp(e->d_name, "LOCK"))) continue;
        char *s = tu_path(src, e->d_name), *t = tu_path(dst, e->d_name);
        tu_copy_file(s, t);
        free(s);
        free(t);
    }
    closedir(d);
}

/* One file (or the directory itself, name ".") as tu_dir_state_take saw it. */
typedef struct tu_file_state {
    char name[256];
    uint64_t size, blocks, mode, hash;
    struct timespec mtime, ctime;
} tu_file_state;

struct tu_dir_state {
    tu_file_state *f; /* sorted by name; f[0] is the directory itself */
    size_t n;
};

/* file_state -- stat and content hash of path into *s. */
static void file_state(const char *path, const char *name, tu_file_state *s)
{
    struct stat sb;
    if (stat(path, &sb) != 0) fail_msg("stat %s: %s", path, strerror(errno));
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->size = (uint64_t)sb.st_size;
    s->blocks = (uint64_t)sb.st_blocks;
    s->mode = (uint64_t)sb.st_mode;
    s->mtime = sb.st_mtim;
    s->ctime = sb.st_ctim;
    if (!S_ISREG(sb.st_mode)) return;
    int fd = open(path, O_RDONLY);
    if (fd < 0) fail_msg("open %s: %s", path, strerror(errno));
    static __thread uint8_t buf[1 << 16];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) s->hash = tkv_hash64(buf, (size_t)n, s->hash);
    close(fd);
}

static int file_state_cmp(const void *a, const void *b)
{
    return strcmp(((const tu_file_state *)a)->name, ((const tu_file_state *)b)->name);
}

tu_dir_state *tu_dir_state_take(const char *dir)
{
    tu_dir_state *s = calloc(1, sizeof *s);
    size_t cap = 16;
    if (!s || !(s->f = malloc(cap * sizeof *s->f))) fail_msg("out of memory");
    file_state(dir, ".", &s->f[s->n++]);
    DIR *d = opendir(dir);
    if (!d) fail_msg("opendir %s: %s", dir, strerror(errno));
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (s->n == cap && !(s->f = realloc(s->f, (cap *= 2) * sizeof *s->f))) fail_msg("out of memory");
        char *p = tu_path(dir, e->d_name);
        file_state(p, e->d_name, &s->f[s->n++]);
        free(p);
    }
    closedir(d);
    qsort(s->f + 1, s->n - 1, sizeof *s->f, file_state_cmp);
    return s;
}

static int ts_equal(struct timespec a, struct timespec b) { return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec; }

static int has_suffix(const char *name, const char *suffix)
{
    size_t n = strlen(name), m = suffix ? strlen(suffix) : 0;
    return suffix && n >= m && !strcmp(name + n - m, suffix);
}

/* expect_same -- tu_dir_state_expect_same; the ctime of a file whose name
 * ends in linked_suffix (NULL: none) may differ. */
static void expect_same(const tu_dir_state *a, const tu_dir_state *b, const char *what, const char *linked_suffix)
{
    for (size_t i = 0, j = 0; i < a->n || j < b->n; i++, j++) {
        int c = i == a->n ? 1 : j == b->n ? -1 : strcmp(a->f[i].name, b->f[j].name);
        if (c < 0) fail_msg("%s: file %s is gone", what, a->f[i].name);
        if (c > 0) fail_msg("%s: file %s appeared", what, b->f[j].name);
        const tu_file_state *x = &a->f[i], *y = &b->f[j];
        const char *diff = x->size != y->size              ? "its size"
                           : x->blocks != y->blocks        ? "its allocated blocks"
                           : x->mode != y->mode            ? "its mode"
                           : x->hash != y->hash            ? "its content"
                           : !ts_equal(x->mtime, y->mtime) ? "its mtime"
                           : !ts_equal(x->ctime, y->ctime) && !has_suffix(x->name, linked_suffix) ? "its ctime"
                                                                                                  : NULL;
        if (diff) fail_msg("%s: %s changed %s", what, x->name, diff);
    }
}

void tu_dir_state_expect_same(const tu_dir_state *a, const tu_dir_state *b, const char *what)
{
    expect_same(a, b, what, NULL);
}

void tu_dir_state_expect_same_linked(const tu_dir_state *a, const tu_dir_state *b, const char *what, const char *suffix)
{
    expect_same(a, b, what, suffix);
}

void tu_dir_state_free(tu_dir_state *s)
{
    if (!s) return;
    free(s->f);
    free(s);
}

size_t tu_list_numbered(const char *dir, const char *suffix, uint64_t **out)
{
    DIR *d = opendir(dir);
    if (!d) fail_msg("opendir %s: %s", dir, strerror(errno));
    size_t n = 0, cap = 0;
    uint64_t *v = NULL;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char *end;
        unsigned long long num = strtoull(e->d_name, &end, 10);
        if (end == e->d_name || strcmp(end, suffix) != 0) continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            v = realloc(v, cap * sizeof *v);
            assert_non_null(v);
        }
        v[n++] = num;
    }
    closedir(d);
    if (n) qsort(v, n, sizeof *v, tu_cmp_u64);
    *out = v;
    return n;
}

size_t tu_count_missing(const uint64_t *a, size_t na, const uint64_t *b, size_t nb)
{
    size_t missing = 0;
    for (size_t i = 0; i < na; i++) {
        size_t j = 0;
        while (j < nb && b[j] != a[i]) j++;
        if (j == nb) missing++;
    }
    return missing;
}

/* work_due -- 1 if tkv.stats shows work a background thread is about to
 * pick up or is running: a matrix pool at its trigger (a column is due),
 * L0 holding l0_trigger SSTs or more (an L0 -> L1 compaction is due or
 * runs: its inputs leave L0 when it installs), or a level L1+ at or above
 * its target (a deep compaction is due). */
static int work_due(const char *stats, unsigned trigger, unsigned l0_trigger)
{
    const char *m = strstr(stats, "matrix: rows=");
    if (m) {
        const char *u = strstr(m, "pages_used="), *f = strstr(m, "pages_free="), *b = strstr(m, " busy=");
        if (b && strtoul(b + 6, NULL, 10) != 0) return 1;
        unsigned long used = u ? strtoul(u + 11, NULL, 10) : 0, free_ = f ? strtoul(f + 11, NULL, 10) : 0;
        if (used && used * 100 >= (unsigned long)trigger * (used + free_)) return 1;
    }
    const char *l0 = strstr(stats, "level.L0: files=");
    if (l0 && strtoul(l0 + strlen("level.L0: files="), NULL, 10) >= l0_trigger) return 1;
    for (const char *p = stats; (p = strstr(p, "level.L")); p++) {
        const char *bytes = strstr(p, " bytes="), *target = strstr(p, " target="), *eol = strchr(p, '\n');
        if (!bytes || !target || (eol && target > eol)) continue;
        unsigned long long t = strtoull(target + 8, NULL, 10);
        if (t && strtoull(bytes + 7, NULL, 10) >= t) return 1;
    }
    return 0;
}

int tu_wait_quiet(tkv_db *db, double timeout_ms)
{
    double until = tu_now_ms() + timeout_ms;
    int quiet = 0;
    unsigned trigger = 100;
    char *mx = tkv_property(db, "tkv.matrix");
    const char *tr = mx ? strstr(mx, "trigger=") : NULL;
    if (tr) trigger = (unsigned)strtoul(tr + 8, NULL, 10);
    tkv_free(mx);
    unsigned l0_trigger = (unsigned)tu_prop_u64(db, "tkv.options", "\nl0_compaction_trigger=");
    while (quiet < 2) {
        int q = tu_prop_u64(db, "tkv.sched", "deep: running=") == 0;
        char *s = tkv_property(db, "tkv.stats");
        const char *bg = s ? strstr(s, "background_error: ") : NULL;
        if (bg && strncmp(bg + 18, "none", 4) != 0) {
            /* read-only after an error: no new work starts, wait for what runs */
            char *m = tkv_property(db, "tkv.matrix");
            const char *inflight = m ? strstr(m, "in_flight=") : NULL;
            if (inflight && strtoul(inflight + 10, NULL, 10) != 0) q = 0;
            tkv_free(m);
        } else if (!s || work_due(s, trigger, l0_trigger) || tu_prop_u64(db, "tkv.num-immutable-mem", "") != 0) {
            q = 0;
        }
        tkv_free(s);
        quiet = q ? quiet + 1 : 0;
        if (quiet == 2) break;
        if (tu_now_ms() > until) return 0;
        usleep(5000);
    }
    return 1;
}

void tu_check_pool_pages(tkv_db *db, const char *what)
{
    uint64_t used = 0, owned = 0;
    for (int tries = 0; tries < 200; tries++) {
        char *p = tkv_property(db, "tkv.matrix");
        if (!p) fail_msg("%s: tkv_property tkv.matrix: %s", what, tkv_errmsg());
        const char *u = strstr(p, "pages: used="), *o = strstr(p, "owned_by_rows=");
        if (!u || !o) fail_msg("%s: tkv.matrix lacks the pages line:\n%s", what, p);
        used = strtoull(u + strlen("pages: used="), NULL, 10);
        owned = strtoull(o + strlen("owned_by_rows="), NULL, 10);
        tkv_free(p);
        if (used == owned) return;
        usleep(10000);
    }
    fail_msg("%s: %llu pool pages used, %llu owned by rows (a leaked page)", what, (unsigned long long)used,
             (unsigned long long)owned);
}

int tu_keycmp(const void *a, size_t an, const void *b, size_t bn)
{
    size_t n = an < bn ? an : bn;
    int c = n ? memcmp(a, b, n) : 0;
    if (c) return c;
    return an < bn ? -1 : an > bn ? 1 : 0;
}

/* ---------------------------------------------------------------- model */

typedef struct blob {
    size_t refs;
    size_t len;
    uint8_t data[];
} blob;

typedef struct entry {
    blob *k, *v;
} entry;

struct tu_model {
    entry *e;
    size_t n, cap;
};

static blob *blob_new(const void *p, size_t n)
{
    blob *b = malloc(sizeof *b + n + 1);
    assert_non_null(b);
    b->refs = 1;
    b->len = n;
    if (n) memcpy(b->data, p, n);
    b->data[n] = 0;
    return b;
}

static void blob_unref(blob *b)
{
    if (b && --b->refs == 0) free(b);
}

tu_model *tu_model_new(void)
{
    tu_model *m = calloc(1, sizeof *m);
    assert_non_null(m);
    return m;
}

void tu_model_free(tu_model *m)
{
    if (!m) return;
    for (size_t i = 0; i < m->n; i++) {
        blob_unref(m->e[i].k);
        blob_unref(m->e[i].v);
    }
    free(m->e);
    free(m);
}

tu_model *tu_model_copy(const tu_model *m)
{
    tu_model *c = tu_model_new();
    c->cap = c->n = m->n;
    if (m->n) {
        c->e = malloc(m->n * sizeof *c->e);
        assert_non_null(c->e);
        memcpy(c->e, m->e, m->n * sizeof *c->e);
        for (size_t i = 0; i < m->n; i++) {
            c->e[i].k->refs++;
            c->e[i].v->refs++;
        }
    }
    return c;
}

size_t tu_model_count(const tu_model *m) { return m->n; }

size_t tu_model_lower_bound(const tu_model *m, const void *k, size_t kn)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tu_keycmp(m->e[mid].k->data, m->e[mid].k->len, k, kn) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static int model_find(const tu_model *m, const void *k, size_t kn, size_t *pos)
{
    size_t i = tu_model_lower_bound(m, k, kn);
    *pos = i;
    return i < m->n && tu_keycmp(m->e[i].k->data, m->e[i].k->len, k, kn) == 0;
}

void tu_model_put(tu_model *m, const void *k, size_t kn, const void *v, size_t vn)
{
    size_t i;
    blob *nv = blob_new(v, vn);
    if (model_find(m, k, kn, &i)) {
        blob_unref(m->e[i].v);
        m->e[i].v = nv;
        return;
    }
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 64;
        m->e = realloc(m->e, m->cap * sizeof *m->e);
        assert_non_null(m->e);
    }
    memmove(&m->e[i + 1], &m->e[i], (m->n - i) * sizeof *m->e);
    m->e[i].k = blob_new(k, kn);
    m->e[i].v = nv;
    m->n++;
}

void tu_model_del(tu_model *m, const void *k, size_t kn)
{
    size_t i;
    if (!model_find(m, k, kn, &i)) return;
    blob_unref(m->e[i].k);
    blob_unref(m->e[i].v);
    memmove(&m->e[i], &m->e[i + 1], (m->n - i - 1) * sizeof *m->e);
    m->n--;
}

void tu_model_del_range(tu_model *m, const void *b, size_t bn, const void *e, size_t en)
{
    if (tu_keycmp(b, bn, e, en) >= 0) return;
    size_t i = tu_model_lower_bound(m, b, bn), j = tu_model_lower_bound(m, e, en);
    for (size_t x = i; x < j; x++) {
        blob_unref(m->e[x].k);
        blob_unref(m->e[x].v);
    }
    if (j < m->n) memmove(&m->e[i], &m->e[j], (m->n - j) * sizeof *m->e); /* an empty model has no array */
    m->n -= j - i;
}

int tu_model_get(const tu_model *m, const void *k, size_t kn, const void **v, size_t *vn)
{
    size_t i;
    if (!model_find(m, k, kn, &i)) return 0;
    if (v) *v = m->e[i].v->data;
    if (vn) *vn = m->e[i].v->len;
    return 1;
}

void tu_model_at(const tu_model *m, size_t i, const void **k, size_t *kn, const void **v, size_t *vn)
{
    assert_true(i < m->n);
    if (k) *k = m->e[i].k->data;
    if (kn) *kn = m->e[i].k->len;
    if (v) *v = m->e[i].v->data;
    if (vn) *vn = m->e[i].v->len;
}

/* ---------------------------------------------------------------- checks */

/* check_entry -- the iterator's current entry equals model entry i. */
static void check_entry(tkv_iter *it, const tu_model *m, size_t i, const char *what, const char *dir)
{
    const void *mk, *mv, *k, *v;
    size_t mkn, mvn, kn = 0, vn = 0;
    tu_model_at(m, i, &mk, &mkn, &mv, &mvn);
    if (!tkv_iter_valid(it))
        fail_msg("%s: %s iteration ended early at model entry %zu/%zu key %s (iter status %d %s, errmsg %s)", what, dir,
                 i, m->n, tu_hex(mk, mkn), tkv_iter_status(it), tkv_strerror(tkv_iter_status(it)), tkv_errmsg());
    k = tkv_iter_key(it, &kn);
    v = tkv_iter_value(it, &vn);
    if (tu_keycmp(k, kn, mk, mkn) != 0)
        fail_msg("%s: %s iteration at model entry %zu/%zu: db key %s, model key %s", what, dir, i, m->n, tu_hex(k, kn),
                 tu_hex(mk, mkn));
    if (vn != mvn || (vn && memcmp(v, mv, vn) != 0))
        fail_msg("%s: %s iteration: key %s: db value %s, model value %s", what, dir, tu_hex(k, kn), tu_hex(v, vn),
                 tu_hex(mv, mvn));
}

void tu_check_db(tkv_db *db, const tkv_snapshot *snap, const tu_model *m, const char *what)
{
    tkv_iter *it = NULL;
    int rc = tkv_iter_new(db, snap, &it);
    if (rc != TKV_OK) fail_msg("%s: tkv_iter_new: %d %s", what, rc, tkv_errmsg());

    tkv_iter_seek_first(it);
    for (size_t i = 0; i < m->n; i++) {
        check_entry(it, m, i, what, "forward");
        tkv_iter_next(it);
    }
    if (tkv_iter_valid(it)) {
        size_t kn;
        const void *k = tkv_iter_key(it, &kn);
        fail_msg("%s: forward iteration has extra key %s after the model's last of %zu", what, tu_hex(k, kn), m->n);
    }
    if (tkv_iter_status(it) != TKV_OK) fail_msg("%s: iterator status %d after forward scan", what, tkv_iter_status(it));

    tkv_iter_seek_last(it);
    for (size_t i = m->n; i-- > 0;) {
        check_entry(it, m, i, what, "backward");
        tkv_iter_prev(it);
    }
    if (tkv_iter_valid(it)) {
        size_t kn;
        const void *k = tkv_iter_key(it, &kn);
        fail_msg("%s: backward iteration has extra key %s before the model's first", what, tu_hex(k, kn));
    }
    if (tkv_iter_status(it) != TKV_OK)
        fail_msg("%s: iterator status %d after backward scan", what, tkv_iter_status(it));
    tkv_iter_free(it);

    for (size_t i = 0; i < m->n; i++) {
        const void *mk, *mv;
        size_t mkn, mvn, vn = 12345;
        void *v = NULL;
        tu_model_at(m, i, &mk, &mkn, &mv, &mvn);
        rc = tkv_get(db, snap, mk, mkn, &v, &vn);
        if (rc != TKV_OK)
            fail_msg("%s: tkv_get(%s) = %d (%s), model has value %s; errmsg %s", what, tu_hex(mk, mkn), rc,
                     tkv_strerror(rc), tu_hex(mv, mvn), tkv_errmsg());
        if (vn != mvn || (vn && memcmp(v, mv, vn) != 0) || ((char *)v)[vn] != '\0')
            fail_msg("%s: tkv_get(%s): db value %s, model value %s", what, tu_hex(mk, mkn), tu_hex(v, vn),
                     tu_hex(mv, mvn));
        tkv_free(v);
    }
}

int tu_put_model(tkv_db *db, tu_model *m, const void *k, size_t kn, const void *v, size_t vn, unsigned flags)
{
    int rc = tkv_put(db, k, kn, v, vn, flags);
    if (rc == TKV_OK) tu_model_put(m, k, kn, v, vn);
    return rc;
}

tkv_db *tu_open_ok(const char *dir, const tkv_options *o)
{
    tkv_db *db = NULL;
    int rc = tkv_open(dir, o, &db);
    if (rc != TKV_OK) fail_msg("tkv_open %s: %s: %s", dir, tkv_strerror(rc), tkv_errmsg());
    return db;
}

void tu_close_ok(tkv_db *db)
{
    int rc = tkv_close(db);
    if (rc != TKV_OK) fail_msg("tkv_close: %s: %s", tkv_strerror(rc), tkv_errmsg());
}

uint64_t tu_prop_u64(tkv_db *db, const char *name, const char *field)
{
    char *p = tkv_property(db, name);
    if (!p) fail_msg("tkv_property %s: %s", name, tkv_errmsg());
    const char *at = strstr(p, field);
    if (!at) fail_msg("property %s has no \"%s\":\n%s", name, field, p);
    unsigned long long v = strtoull(at + strlen(field), NULL, 10);
    tkv_free(p);
    return v;
}

void tu_close_reopen_check(tkv_db *db, const char *dir, const tkv_options *o, const tu_model *m, const char *what)
{
    tu_close_ok(db);
    db = tu_open_ok(dir, o);
    tu_check_db(db, NULL, m, what);
    tu_close_ok(db);
}
