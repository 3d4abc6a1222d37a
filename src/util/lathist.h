// SPDX-License-Identifier: Apache-2.0
/*
 * lathist.h -- a lock-free histogram of durations (or any uint64 sample):
 * log-linear buckets, four per power of two (a bucket spans at most 25 % of
 * its lower bound), so percentiles read from it are within 25 % of the true
 * value; count, sum and max exact. Adding is a few relaxed atomic
 * increments, safe from any number of threads; reading takes no lock and
 * may see an add half done (a count one ahead of its bucket), never a torn
 * value.
 */
#ifndef TKV_UTIL_LATHIST_H
#define TKV_UTIL_LATHIST_H

#include <stdint.h>

#define LATHIST_SUB     4u                  /* buckets per power of two */
#define LATHIST_BUCKETS (LATHIST_SUB * 63u) /* every uint64_t has one: the last holds up to UINT64_MAX */

typedef struct lathist {
    uint64_t count, sum, max;
    uint64_t bucket[LATHIST_BUCKETS];
} lathist;

/* A summary of a histogram at one moment. */
typedef struct lathist_summary {
    uint64_t count, sum, max;
    uint64_t p50, p90, p99, p999; /* 0 when count is 0 */
} lathist_summary;

/* lathist_add -- records one sample v. */
void lathist_add(lathist *h, uint64_t v);
/* lathist_summarize -- count, sum, max and percentiles (each the upper edge
 * of the bucket that holds it, at most max). */
void lathist_summarize(const lathist *h, lathist_summary *out);
/* lathist_bucket_of / lathist_bucket_high -- the bucket of v, and the
 * largest value a bucket holds (for tests). */
unsigned lathist_bucket_of(uint64_t v);
uint64_t lathist_bucket_high(unsigned b);

#endif
