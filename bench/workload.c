// SPDX-License-Identifier: Apache-2.0
/*
 * workload.c -- keys, values and YCSB key/operation choosers for tkv_bench
 * (see workload.h).
 *
 * Random numbers: xoshiro256** seeded through splitmix64 (one generator per
 * thread; the workload itself holds no generator).
 *
 * Zipfian ranks follow YCSB's ZipfianGenerator (Gray et al., "Quickly
 * generating billion-record synthetic databases", SIGMOD 1994) with
 * theta = 0.99:
 *   zeta(n) = sum_{i=1..n} i^-theta,  alpha = 1 / (1 - theta),
 *   eta = (1 - (2/n)^(1-theta)) / (1 - zeta(2)/zeta(n)),
 *   u uniform in [0,1): rank 0 if u*zeta(n) < 1, rank 1 if < 1 + 0.5^theta,
 *   else floor(n * (eta*u - eta + 1)^alpha).
 * Ranks 0 and 1 have exactly the Zipf probabilities; the others follow Gray's
 * continuous approximation (e.g. over 1000 items the top-10 share is 0.398
 * instead of the exact zeta(10)/zeta(1000) = 0.382), as in YCSB.
 *
 * zeta(n) is computed in O(1): the exact sum of the first 1024 terms plus an
 * Euler-Maclaurin tail (integral, endpoint and two derivative terms; error
 * < 1e-12 absolute for every n, checked against direct summation). It gives
 * zeta(10^10) = 26.4690282017515; YCSB's hard-coded ZETAN = 26.46902820178302
 * (a naive double summation) differs by 3e-11. For the scrambled zipfian we
 * use YCSB's constant as is.
 *
 * Distributions (key numbers over the n = next_insert records "so far"):
 *   uniform -- wl_rng_below(n).
 *   zipfian -- YCSB ScrambledZipfianGenerator: a rank over a fixed space of
 *     10^10 items (zetan = ZETAN), hashed with YCSB's FNV-1a-64 (Java
 *     Math.abs of the signed hash), modulo M. M is the record count while it
 *     has not grown (workloads A, B, C, F: exactly YCSB); once inserts grow it
 *     (workload E), M is the smallest initial_records * 2^k >= n and a key
 *     >= n is redrawn. That keeps the set of hot keys stable while records are
 *     added (a plain "mod n" would reshuffle every hot key on every insert);
 *     YCSB does the same with M = records + 2 * expected inserts and redrawing
 *     keys beyond the last insert.
 *   latest -- YCSB SkewedLatestGenerator: key = (n - 1) - rank, the rank drawn
 *     over n items. The constants for n (zetan, eta) are recomputed exactly
 *     (O(1), see above) whenever a thread sees a different n; they are cached
 *     per thread (thread-local, keyed by the workload and n), so there is no
 *     lock and no stale zeta. The zipf_* fields of the workload keep the
 *     constants over initial_records. (YCSB grows zeta incrementally under a
 *     lock and keeps eta's (2/n) term at the initial count, a known quirk; we
 *     use the current n in both.)
 * "Records so far" is next_insert: a key claimed by an insert that has not
 * finished yet may be drawn (a read of it may find nothing).
 */
#include "bench/workload.h"
#include "util/rng.h"

#include <math.h>
#include <pthread.h>
#include <string.h>

/* ---------------------------------------------------------------- rng */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

void wl_rng_seed(wl_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

uint64_t wl_rng_next(wl_rng *r) { return xoshiro256ss_next(r->s); }

double wl_rng_double(wl_rng *r) { return (double)(wl_rng_next(r) >> 11) * 0x1p-53; }

/* wl_rng_below -- Lemire's multiply-shift with rejection: unbiased. */
uint64_t wl_rng_below(wl_rng *r, uint64_t n)
{
    if (n == 0) return 0;
    unsigned __int128 m = (unsigned __int128)wl_rng_next(r) * n;
    uint64_t low = (uint64_t)m;
    if (low < n) {
        uint64_t threshold = -n % n;
        while (low < threshold) {
            m = (unsigned __int128)wl_rng_next(r) * n;
            low = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

/* ---------------------------------------------------------------- keys, values */

/* wl_format_key -- i in decimal, right-aligned and zero-padded to key_size
 * bytes. A key of fewer than 20 bytes cannot hold every uint64_t: then only
 * the low key_size digits are kept (i mod 10^key_size), which stays order
 * preserving for i < 10^key_size (the caller keeps key numbers below that). */
void wl_format_key(char *out, size_t key_size, uint64_t i)
{
    char *p = out + key_size;
    while (p > out && i != 0) {
        *--p = (char)('0' + i % 10);
        i /= 10;
    }
    if (p > out) memset(out, '0', (size_t)(p - out));
}

/* wl_fill_value_r -- the first ceil(size * random_pct / 100) bytes (at
 * least 1) come from a splitmix64 stream seeded by a hash of (key,
 * version), 8 bytes per step; the rest repeats them from the start, so an
 * LZ-style compressor finds long matches and keeps about random_pct % of
 * the value. */
void wl_fill_value_r(char *out, size_t value_size, uint64_t key, uint64_t version, unsigned random_pct)
{
    if (value_size == 0) return;
    if (random_pct == 0) random_pct = 1;
    if (random_pct > 100) random_pct = 100;
    uint64_t x = key * UINT64_C(0xd6e8feb86659fd93);
    x ^= splitmix64(&(uint64_t){version ^ UINT64_C(0x6a09e667f3bcc909)});
    size_t half = (value_size * random_pct + 99) / 100, i = 0;
    for (; i + 8 <= half; i += 8) {
        uint64_t w = splitmix64(&x);
        memcpy(out + i, &w, 8);
    }
    if (i < half) {
        uint64_t w = splitmix64(&x);
        memcpy(out + i, &w, half - i);
    }
    for (size_t at = half; at < value_size;) { /* the random part again, as often as it fits */
        size_t n = value_size - at < half ? value_size - at : half;
        memcpy(out + at, out, n);
        at += n;
    }
}

void wl_fill_value(char *out, size_t value_size, uint64_t key, uint64_t version)
{
    wl_fill_value_r(out, value_size, key, version, 50);
}

/* ---------------------------------------------------------------- names */

static const char *const dist_names[] = {"uniform", "zipfian", "latest"};
static const char *const op_names[] = {"read", "update", "insert", "scan", "rmw"};

int wl_dist_parse(const char *s)
{
    if (!s) return -1;
    for (int i = 0; i < 3; i++)
        if (strcmp(s, dist_names[i]) == 0) return i;
    return -1;
}

const char *wl_dist_name(wl_dist d) { return (unsigned)d < 3 ? dist_names[d] : "?"; }

const char *wl_op_name(wl_op op) { return (unsigned)op < WL_NOPS ? op_names[op] : "?"; }

/* ---------------------------------------------------------------- zeta */

#define ZIPF_THETA      0.99
#define ZIPF_HEAD       1024 /* terms summed exactly */
#define SCRAMBLED_ITEMS UINT64_C(10000000000)
#define SCRAMBLED_ZETAN 26.46902820178302 /* YCSB's zeta(10^10, 0.99) */

static pthread_once_t head_once = PTHREAD_ONCE_INIT;
static double zeta_head; /* sum_{i=1..ZIPF_HEAD} i^-theta */

static void head_init(void)
{
    double s = 0;
    for (int i = ZIPF_HEAD; i >= 1; i--) s += pow((double)i, -ZIPF_THETA);
    zeta_head = s;
}

/* zeta_n -- sum_{i=1..n} i^-theta for theta = ZIPF_THETA: exact summation up
 * to ZIPF_HEAD, then Euler-Maclaurin from K = ZIPF_HEAD to n:
 *   sum_{K<i<=n} f(i) = int_K^n f + (f(n) - f(K))/2 + (f'(n) - f'(K))/12
 *                       - (f'''(n) - f'''(K))/720 + O(K^(-theta-5))
 * with f(x) = x^-theta. */
static double zeta_n(uint64_t n)
{
    const double th = ZIPF_THETA;
    if (n <= ZIPF_HEAD) {
        double s = 0;
        for (uint64_t i = n; i >= 1; i--) s += pow((double)i, -th);
        return s;
    }
    pthread_once(&head_once, head_init);
    double K = ZIPF_HEAD, N = (double)n;
    double aK = pow(K, 1 - th), aN = pow(N, 1 - th); /* x^(1-theta) */
    double fK = aK / K, fN = aN / N;                 /* x^-theta */
    double d1K = -th * fK / K, d1N = -th * fN / N;   /* f' */
    double c3 = -th * (th + 1) * (th + 2);
    double d3K = c3 * fK / (K * K * K), d3N = c3 * fN / (N * N * N); /* f''' */
    double tail = (aN - aK) / (1 - th) + (fN - fK) / 2 + (d1N - d1K) / 12 - (d3N - d3K) / 720;
    return zeta_head + tail;
}

/* zipf_eta -- Gray's eta for n items. */
static double zipf_eta(double theta, double zeta2, double zetan, uint64_t n)
{
    if (n <= 2) return 0; /* 0/0; unused: ranks 0 and 1 are drawn exactly */
    return (1 - pow(2.0 / (double)n, 1 - theta)) / (1 - zeta2 / zetan);
}

/* zipf_draw -- Gray's rank formula over `items` with the given constants. */
static uint64_t zipf_draw(double theta, double alpha, double zetan, double eta, uint64_t items, wl_rng *r)
{
    double u = wl_rng_double(r);
    double uz = u * zetan;
    if (uz < 1.0) return 0;
    if (items >= 2 && uz < 1.0 + pow(0.5, theta)) return 1;
    double v = (double)items * pow(eta * u - eta + 1, alpha);
    uint64_t rank = v > 0 ? (uint64_t)v : 0;
    return rank < items ? rank : items - 1;
}

uint64_t wl_zipf_rank(const wl_ycsb *w, wl_rng *r, uint64_t items)
{
    if (items <= 1) return 0;
    return zipf_draw(w->zipf_theta, w->zipf_alpha, w->zipf_zetan, w->zipf_eta, items, r);
}

/* ---------------------------------------------------------------- YCSB */

int wl_ycsb_init(wl_ycsb *w, char letter, uint64_t records, int dist_override)
{
    static const struct {
        double read, update, insert, scan, rmw;
        wl_dist dist;
    } defs[6] = {
        {0.50, 0.50, 0, 0, 0, WL_ZIPFIAN}, /* a */
        {0.95, 0.05, 0, 0, 0, WL_ZIPFIAN}, /* b */
        {1.00, 0, 0, 0, 0, WL_ZIPFIAN},    /* c */
        {0.95, 0, 0.05, 0, 0, WL_LATEST},  /* d */
        {0, 0, 0.05, 0.95, 0, WL_ZIPFIAN}, /* e */
        {0.50, 0, 0, 0, 0.50, WL_ZIPFIAN}, /* f */
    };
    if (letter >= 'A' && letter <= 'F') letter = (char)(letter - 'A' + 'a');
    if (letter < 'a' || letter > 'f' || dist_override > WL_LATEST) return -1;
    int k = letter - 'a';
    memset(w, 0, sizeof *w);
    w->letter = letter;
    w->read = defs[k].read;
    w->update = defs[k].update;
    w->insert = defs[k].insert;
    w->scan = defs[k].scan;
    w->rmw = defs[k].rmw;
    w->dist = dist_override < 0 ? defs[k].dist : (wl_dist)dist_override;
    w->max_scan = 100;
    w->initial_records = records;
    w->next_insert = records;

    w->zipf_theta = ZIPF_THETA;
    w->zipf_alpha = 1.0 / (1.0 - ZIPF_THETA);
    w->zipf_zeta2 = zeta_n(2);
    if (w->dist == WL_ZIPFIAN) {
        /* scrambled: ranks over YCSB's fixed 10^10 item space */
        w->zipf_items = SCRAMBLED_ITEMS;
        w->zipf_zetan = SCRAMBLED_ZETAN;
    } else {
        w->zipf_items = records;
        w->zipf_zetan = zeta_n(records);
    }
    w->zipf_eta = zipf_eta(ZIPF_THETA, w->zipf_zeta2, w->zipf_zetan, w->zipf_items);
    return 0;
}

wl_op wl_ycsb_next_op(wl_ycsb *w, wl_rng *r)
{
    double u = wl_rng_double(r);
    if ((u -= w->read) < 0) return WL_READ;
    if ((u -= w->update) < 0) return WL_UPDATE;
    if ((u -= w->insert) < 0) return WL_INSERT;
    if ((u -= w->scan) < 0) return WL_SCAN;
    if ((u -= w->rmw) < 0) return WL_RMW;
    /* rounding in the sum of the proportions: the last non-zero one */
    if (w->rmw > 0) return WL_RMW;
    if (w->scan > 0) return WL_SCAN;
    if (w->insert > 0) return WL_INSERT;
    if (w->update > 0) return WL_UPDATE;
    return WL_READ;
}

/* fnv_hash64 -- YCSB's Utils.fnvhash64: FNV-1a over the 8 little-endian
 * bytes of val, then Java's Math.abs of the signed result. */
static uint64_t fnv_hash64(uint64_t val)
{
    uint64_t h = UINT64_C(0xCBF29CE484222325);
    for (int i = 0; i < 8; i++) {
        h ^= val & 0xff;
        val >>= 8;
        h *= UINT64_C(1099511628211);
    }
    return (int64_t)h < 0 ? -h : h; /* Math.abs(Long.MIN_VALUE) stays 2^63 */
}

/* Per-thread cache of the latest generator's constants for one n. */
static _Thread_local struct {
    const wl_ycsb *w;
    uint64_t n;
    double zetan, eta;
} latest_cache;

static uint64_t next_latest(wl_ycsb *w, wl_rng *r, uint64_t n)
{
    if (n == 1) return 0;
    if (latest_cache.w != w || latest_cache.n != n) {
        double zetan = n == w->zipf_items ? w->zipf_zetan : zeta_n(n);
        latest_cache.w = w;
        latest_cache.n = n;
        latest_cache.zetan = zetan;
        latest_cache.eta = zipf_eta(w->zipf_theta, w->zipf_zeta2, zetan, n);
    }
    uint64_t rank = zipf_draw(w->zipf_theta, w->zipf_alpha, latest_cache.zetan, latest_cache.eta, n, r);
    return (n - 1) - rank;
}

static uint64_t next_scrambled(wl_ycsb *w, wl_rng *r, uint64_t n)
{
    uint64_t m = w->initial_records ? w->initial_records : 1;
    while (m < n) m <<= 1;
    for (int tries = 0;; tries++) {
        uint64_t rank = zipf_draw(w->zipf_theta, w->zipf_alpha, w->zipf_zetan, w->zipf_eta, w->zipf_items, r);
        uint64_t key = fnv_hash64(rank) % m;
        if (key < n) return key;
        /* each draw lands below n with probability ~ n/M > 1/2: giving up after
         * 64 redraws (probability ~ 1e-17) only bounds the loop */
        if (tries >= 64) return key % n;
    }
}

uint64_t wl_ycsb_next_key(wl_ycsb *w, wl_rng *r)
{
    uint64_t n = __atomic_load_n(&w->next_insert, __ATOMIC_ACQUIRE);
    if (n == 0) return 0;
    switch (w->dist) {
    case WL_ZIPFIAN:
        return next_scrambled(w, r, n);
    case WL_LATEST:
        return next_latest(w, r, n);
    case WL_UNIFORM:
    default:
        return wl_rng_below(r, n);
    }
}

uint64_t wl_ycsb_insert_key(wl_ycsb *w) { return __atomic_fetch_add(&w->next_insert, 1, __ATOMIC_ACQ_REL); }

uint64_t wl_ycsb_scan_len(wl_ycsb *w, wl_rng *r) { return 1 + wl_rng_below(r, w->max_scan ? w->max_scan : 1); }
