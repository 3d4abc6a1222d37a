// SPDX-License-Identifier: Apache-2.0
/*
 * workload.h -- key formats and key/operation choosers for tkv_bench:
 * db_bench-style sequential/random keys and YCSB core workloads A-F.
 *
 * Keys: key number i (0 <= i < record count) is formatted as a fixed-size key
 * of key_size bytes (>= 8): "user" style is not used; like db_bench, the
 * number is zero-padded decimal, right-aligned, so key order = number order
 * (fillseq writes in key order, readseq visits keys in number order).
 *
 * Distributions (YCSB's definitions, Gray et al.'s zipfian generator with
 * constant 0.99):
 *   uniform  -- every existing record equally likely;
 *   zipfian  -- scrambled zipfian: popular items are spread over the key space
 *               by hashing the zipfian rank (YCSB ScrambledZipfianGenerator);
 *   latest   -- zipfian over recency: the most recently inserted records are
 *               the most popular (YCSB SkewedLatestGenerator).
 * Record count grows with inserts (workloads D and E), shared by all threads.
 *
 * YCSB core workloads (operation mix; distribution):
 *   A 50 % read, 50 % update                       zipfian
 *   B 95 % read,  5 % update                       zipfian
 *   C 100 % read                                   zipfian
 *   D 95 % read,  5 % insert                       latest
 *   E 95 % scan (length uniform 1..100), 5 % insert zipfian
 *   F 50 % read, 50 % read-modify-write            zipfian
 * `--distribution` may override the default distribution.
 */
#ifndef TKV_BENCH_WORKLOAD_H
#define TKV_BENCH_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

/* splitmix64/xoshiro-style per-thread generator. */
typedef struct wl_rng {
    uint64_t s[4];
} wl_rng;
void wl_rng_seed(wl_rng *r, uint64_t seed);
uint64_t wl_rng_next(wl_rng *r);
/* wl_rng_double -- uniform in [0, 1). */
double wl_rng_double(wl_rng *r);
/* wl_rng_below -- uniform in [0, n). */
uint64_t wl_rng_below(wl_rng *r, uint64_t n);

/* wl_format_key -- writes key number i as key_size bytes into out. */
void wl_format_key(char *out, size_t key_size, uint64_t i);
/* wl_fill_value -- value_size bytes for (key, version): half random, half
 * repeated (compresses ~2:1, as db_bench's default compression ratio 0.5). */
void wl_fill_value(char *out, size_t value_size, uint64_t key, uint64_t version);
/* wl_fill_value_r -- the same with random_pct % of the bytes random (1..100;
 * wl_fill_value is 50): lower values compress better. */
void wl_fill_value_r(char *out, size_t value_size, uint64_t key, uint64_t version, unsigned random_pct);

typedef enum wl_dist { WL_UNIFORM, WL_ZIPFIAN, WL_LATEST } wl_dist;
/* wl_dist_parse -- "uniform" | "zipfian" | "latest"; -1 if unknown. */
int wl_dist_parse(const char *s);
const char *wl_dist_name(wl_dist d);

typedef enum wl_op { WL_READ, WL_UPDATE, WL_INSERT, WL_SCAN, WL_RMW, WL_NOPS } wl_op;
const char *wl_op_name(wl_op op); /* "read", "update", "insert", "scan", "rmw" */

/* A YCSB workload shared by all threads. */
typedef struct wl_ycsb {
    char letter;                            /* 'a'..'f' */
    double read, update, insert, scan, rmw; /* proportions, sum 1 */
    wl_dist dist;
    uint64_t max_scan;        /* scans are 1..max_scan long (uniform) */
    uint64_t initial_records; /* records loaded before the run */
    uint64_t next_insert;     /* atomic: the next key number an insert creates */
    /* zipfian constants: YCSB's 10^10-item space for the scrambled zipfian,
     * the record count for latest (see workload.c) */
    double zipf_theta, zipf_zetan, zipf_zeta2, zipf_alpha, zipf_eta;
    uint64_t zipf_items;
} wl_ycsb;

/* wl_ycsb_init -- workload `letter` ('a'..'f') over `records` loaded records;
 * dist_override < 0 keeps the workload's default. 0 or -1 (bad letter). */
int wl_ycsb_init(wl_ycsb *w, char letter, uint64_t records, int dist_override);
/* wl_ycsb_next_op -- draws the next operation. */
wl_op wl_ycsb_next_op(wl_ycsb *w, wl_rng *r);
/* wl_ycsb_next_key -- the key number an existing-record operation (read,
 * update, scan start, rmw) uses, from the workload's distribution over the
 * records inserted so far. */
uint64_t wl_ycsb_next_key(wl_ycsb *w, wl_rng *r);
/* wl_ycsb_insert_key -- claims the next new key number (thread-safe). */
uint64_t wl_ycsb_insert_key(wl_ycsb *w);
/* wl_ycsb_scan_len -- 1..max_scan, uniform. */
uint64_t wl_ycsb_scan_len(wl_ycsb *w, wl_rng *r);

/* wl_zipf_rank -- a zipfian rank in [0, items) for the constants in w (exposed
 * for the unit test: rank 0 is the most popular). */
uint64_t wl_zipf_rank(const wl_ycsb *w, wl_rng *r, uint64_t items);

#endif
