// SPDX-License-Identifier: Apache-2.0
/*
 * lathist.c -- the log-linear histogram of lathist.h. Bucket b < 4 holds the
 * value b; above, with e = floor(log2 v) >= 2, v falls in bucket
 * 4 * (e - 1) + (the two bits below its top bit).
 */
#include "util/lathist.h"

unsigned lathist_bucket_of(uint64_t v)
{
    if (v < LATHIST_SUB) return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v);
    return LATHIST_SUB * (e - 1u) + (unsigned)((v >> (e - 2u)) & (LATHIST_SUB - 1u));
}

uint64_t lathist_bucket_high(unsigned b)
{
    if (b < LATHIST_SUB) return b;
    unsigned e = b / LATHIST_SUB + 1u, sub = b % LATHIST_SUB;
    uint64_t lo = (uint64_t)(LATHIST_SUB + sub) << (e - 2u);
    return lo + ((UINT64_C(1) << (e - 2u)) - 1u); /* the last bucket ends at UINT64_MAX exactly */
}

void lathist_add(lathist *h, uint64_t v)
{
    __atomic_fetch_add(&h->bucket[lathist_bucket_of(v)], 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&h->sum, v, __ATOMIC_RELAXED);
    uint64_t m = __atomic_load_n(&h->max, __ATOMIC_RELAXED);
    while (v > m && !__atomic_compare_exchange_n(&h->max, &m, v, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    __atomic_fetch_add(&h->count, 1, __ATOMIC_RELAXED);
}

/* percentile -- the upper edge of the bucket holding the sample of rank
 * ceil(q * n) (1-based) of the n counted in b[]. */
static uint64_t percentile(const uint64_t *b, uint64_t n, double q, uint64_t max)
{
    uint64_t rank = (uint64_t)(q * (double)n);
    if ((double)rank < q * (double)n) rank++;
    if (rank == 0) rank = 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < LATHIST_BUCKETS; i++) {
        seen += b[i];
        if (seen >= rank) {
            uint64_t hi = lathist_bucket_high(i);
            return hi < max ? hi : max;
        }
    }
    return max;
}

void lathist_summarize(const lathist *h, lathist_summary *out)
{
    uint64_t b[LATHIST_BUCKETS], n = 0;
    for (unsigned i = 0; i < LATHIST_BUCKETS; i++) n += b[i] = __atomic_load_n(&h->bucket[i], __ATOMIC_RELAXED);
    out->count = n; /* the buckets' own total: consistent with the percentiles */
    out->sum = __atomic_load_n(&h->sum, __ATOMIC_RELAXED);
    out->max = __atomic_load_n(&h->max, __ATOMIC_RELAXED);
    if (n == 0) {
        out->p50 = out->p90 = out->p99 = out->p999 = 0;
        return;
    }
    out->p50 = percentile(b, n, 0.50, out->max);
    out->p90 = percentile(b, n, 0.90, out->max);
    out->p99 = percentile(b, n, 0.99, out->max);
    out->p999 = percentile(b, n, 0.999, out->max);
}
