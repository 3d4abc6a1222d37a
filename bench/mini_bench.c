/*
 * mini_bench.c -- a small driver for tierkv's own numbers until tkv_bench
 * (the benchmark issue) lands: fillrandom, readrandom and a forward scan with
 * ops/s, p50/p99/p99.9 latency (exact, from sorted per-op samples) and the
 * engine's write amplification.
 *
 * usage: mini_bench [--num N] [--value_size B] [--key_size B] [--db DIR] [--opt name=value]...
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tierkv.h"

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* report -- prints ops/s and latency percentiles (samples in ns, sorted here). */
static void report(const char *name, uint32_t *lat, size_t n, uint64_t elapsed_ns)
{
    qsort(lat, n, sizeof *lat, cmp_u32);
    double secs = (double)elapsed_ns / 1e9;
    printf("%-12s %10zu ops %9.0f ops/s  p50 %7.1f us  p99 %8.1f us  p99.9 %8.1f us  max %9.1f us\n", name, n,
           (double)n / secs, lat[n / 2] / 1e3, lat[(size_t)((double)n * 0.99)] / 1e3,
           lat[(size_t)((double)n * 0.999)] / 1e3, lat[n - 1] / 1e3);
}

/* make_key -- fixed-size key from an index (zero-padded decimal, like db_bench). */
static void make_key(char *k, size_t ks, uint64_t i)
{
    char tmp[32];
    int n = snprintf(tmp, sizeof tmp, "%016llu", (unsigned long long)i);
    memset(k, '0', ks);
    size_t len = (size_t)n < ks ? (size_t)n : ks;
    memcpy(k + ks - len, tmp + (size_t)n - len, len);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

int main(int argc, char **argv)
{
    size_t num = 1000000, vsize = 1024, ksize = 16;
    const char *dir = "/tmp/tkv_mini_bench";
    tkv_options *o = tkv_options_new();
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--num") && i + 1 < argc) num = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--value_size") && i + 1 < argc) vsize = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--key_size") && i + 1 < argc) ksize = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--db") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--opt") && i + 1 < argc) {
            char *kv = strdup(argv[++i]), *eq = strchr(kv, '=');
            if (!eq || (*eq = 0, tkv_options_set(o, kv, eq + 1)) != TKV_OK) {
                fprintf(stderr, "bad --opt %s: %s\n", argv[i], tkv_errmsg());
                return 2;
            }
            free(kv);
        } else {
            fprintf(stderr, "usage: %s [--num N] [--value_size B] [--key_size B] [--db DIR] [--opt k=v]...\n", argv[0]);
            return 2;
        }
    }
    if (ksize < 8 || ksize > 64) ksize = 16;
    tkv_destroy(dir);
    tkv_db *db;
    int rc = tkv_open(dir, o, &db);
    if (rc) {
        fprintf(stderr, "open: %s: %s\n", tkv_strerror(rc), tkv_errmsg());
        return 1;
    }
    char *val = malloc(vsize);
    for (size_t i = 0; i < vsize; i++) val[i] = (char)('a' + rnd() % 26); /* half-compressible like db_bench */
    for (size_t i = vsize / 2; i < vsize; i++) val[i] = 'x';
    uint32_t *lat = malloc(num * sizeof *lat);
    char key[64];
    printf("tierkv %s  num=%zu key_size=%zu value_size=%zu  db=%s\n", TKV_VERSION_STRING, num, ksize, vsize, dir);

    uint64_t t0 = now_ns();
    for (size_t i = 0; i < num; i++) {
        make_key(key, ksize, rnd() % num);
        uint64_t s = now_ns();
        rc = tkv_put(db, key, ksize, val, vsize, 0);
        uint64_t e = now_ns();
        if (rc) { fprintf(stderr, "put: %s\n", tkv_errmsg()); return 1; }
        lat[i] = (uint32_t)(e - s > UINT32_MAX ? UINT32_MAX : e - s);
    }
    report("fillrandom", lat, num, now_ns() - t0);
    char *st = tkv_property(db, "tkv.stats");
    const char *wa = strstr(st, "write_amplification");
    const char *stalls = strstr(st, "stalls:");
    if (stalls) printf("  %.*s\n", (int)(strchr(stalls, '\n') - stalls), stalls);
    if (wa) printf("  %.*s\n", (int)(strchr(wa, '\n') - wa), wa);
    tkv_free(st);
    tkv_flush(db);
    st = tkv_property(db, "tkv.levels");
    printf("%s", st);
    tkv_free(st);

    size_t found = 0;
    t0 = now_ns();
    for (size_t i = 0; i < num; i++) {
        make_key(key, ksize, rnd() % num);
        void *v;
        size_t vl;
        uint64_t s = now_ns();
        rc = tkv_get(db, NULL, key, ksize, &v, &vl);
        uint64_t e = now_ns();
        if (rc == TKV_OK) { found++; tkv_free(v); }
        else if (rc != TKV_NOT_FOUND) { fprintf(stderr, "get: %s\n", tkv_errmsg()); return 1; }
        lat[i] = (uint32_t)(e - s > UINT32_MAX ? UINT32_MAX : e - s);
    }
    report("readrandom", lat, num, now_ns() - t0);
    printf("  found %zu of %zu (random keys over the key space: ~63%% expected)\n", found, num);

    tkv_iter *it;
    tkv_iter_new(db, NULL, &it);
    size_t n = 0;
    t0 = now_ns();
    uint64_t prev = t0;
    for (tkv_iter_seek_first(it); tkv_iter_valid(it) && n < num; tkv_iter_next(it)) {
        size_t kl, vl;
        tkv_iter_key(it, &kl);
        tkv_iter_value(it, &vl);
        uint64_t e = now_ns();
        lat[n++] = (uint32_t)(e - prev);
        prev = e;
    }
    if (n) report("readseq", lat, n, now_ns() - t0);
    tkv_iter_free(it);
    st = tkv_property(db, "tkv.stats");
    const char *cache = strstr(st, "block_cache");
    if (cache) printf("  %.*s\n", (int)(strchr(cache, '\n') - cache), cache);
    tkv_free(st);
    tkv_close(db);
    tkv_destroy(dir);
    tkv_options_free(o);
    free(lat);
    free(val);
    return 0;
}
