// SPDX-License-Identifier: Apache-2.0
/*
 * hist.h -- latency histogram for tkv_bench (HdrHistogram-style log-linear
 * buckets over nanoseconds).
 *
 * Values are nanoseconds. Values below 2^HIST_SUB_BITS are exact; above, each
 * power of two is split into 2^HIST_SUB_BITS equal buckets, so a reported
 * percentile is within 1/2^HIST_SUB_BITS (1.6 %) of the true sample value at
 * that rank. Range: 0 .. 2^HIST_MAX_MAG ns (~ 78 h); larger values clamp to the
 * top bucket (max is still exact). A histogram is ~22 KB, plain data: zero it
 * (hist_reset or memset) to start, merge to combine, no allocation.
 * Not thread-safe: each recording thread owns its histogram.
 */
#ifndef TKV_BENCH_HIST_H
#define TKV_BENCH_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 6
#define HIST_MAX_MAG  48
#define HIST_NBUCKETS ((HIST_MAX_MAG - HIST_SUB_BITS + 1) << HIST_SUB_BITS)

typedef struct hist {
    uint64_t count;
    uint64_t sum;      /* of all values, ns (for the mean) */
    uint64_t min, max; /* exact; min is UINT64_MAX when empty */
    uint64_t buckets[HIST_NBUCKETS];
} hist;

/* hist_reset -- empties h. */
void hist_reset(hist *h);
/* hist_add -- records one value (ns). */
void hist_add(hist *h, uint64_t ns);
/* hist_merge -- dst += src. */
void hist_merge(hist *dst, const hist *src);
/* hist_percentile -- the value at percentile p (0..100) in ns: the smallest
 * recorded value v such that at least p % of the values are <= v, up to the
 * bucket precision (the bucket's midpoint, clamped to [min, max]). p = 100
 * gives max exactly, p = 0 gives min. 0 when empty. */
uint64_t hist_percentile(const hist *h, double p);
/* hist_mean -- mean in ns (0 when empty). */
double hist_mean(const hist *h);

/* Index of the bucket holding v, and the range [lo, hi] of values it holds
 * (exposed for the unit test). */
unsigned hist_bucket_of(uint64_t v);
void hist_bucket_range(unsigned b, uint64_t *lo, uint64_t *hi);

#endif
