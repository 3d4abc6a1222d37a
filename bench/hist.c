// SPDX-License-Identifier: Apache-2.0
/*
 * hist.c -- log-linear latency histogram for tkv_bench (see hist.h).
 *
 * Bucket layout (S = HIST_SUB_BITS = 6, 64 sub-buckets):
 *   v < 128:            bucket v (exact: width 1);
 *   2^m <= v < 2^(m+1), m >= 7:
 *                       shift s = m - 6, bucket (s << 6) + (v >> s), i.e.
 *                       the octave is split into 64 buckets of width 2^s.
 * Equivalently s = 57 - clz(v | 127) for every v, so hist_bucket_of is a clz,
 * a shift and an add (no branch but the clamp). Values >= 2^HIST_MAX_MAG are
 * counted in the last bucket (its nominal range ends at 2^HIST_MAX_MAG - 1).
 *
 * Error bound. A percentile is answered with the midpoint
 * lo + floor((hi - lo) / 2) of the bucket [lo, hi] holding the sample x at the
 * requested rank, clamped to [min, max] (which keeps it inside [lo, hi]). So
 *   |reported - x| <= ceil((hi - lo) / 2) <= 2^(s-1)  and  x >= lo >= 2^(s+6),
 * hence |reported - x| <= x / 128 (0.78 %): exact below 128 ns, and at most
 * 1/128 relative error above, for every x < 2^HIST_MAX_MAG ns (~78 h).
 * (hist.h promises 1/64; this is twice as tight.) p = 0 and p = 100 return the
 * exact min and max. Beyond 2^HIST_MAX_MAG only the exact max is meaningful.
 *
 * Rank: the sample at rank ceil(p/100 * count) (1-based, at least 1), i.e. the
 * smallest recorded v with at least p % of the values <= v. p/100 * count is
 * computed in double and a relative slack of 1e-12 absorbs its rounding error
 * (so 99.9 % of 1000 gives rank 999, not 1000).
 */
#include "bench/hist.h"

#include <math.h>
#include <string.h>

#define HIST_SUB   (1u << HIST_SUB_BITS)
#define HIST_LIMIT (UINT64_C(1) << HIST_MAX_MAG) /* first clamped value */

void hist_reset(hist *h)
{
    memset(h, 0, sizeof *h);
    h->min = UINT64_MAX;
}

unsigned hist_bucket_of(uint64_t v)
{
    if (v >= HIST_LIMIT) v = HIST_LIMIT - 1;
    /* v | 127 makes the msb >= 7 so that s >= 0; values below 128 get s = 0
     * and land in bucket v. */
    unsigned s = 57u - (unsigned)__builtin_clzll(v | 127u);
    return (s << HIST_SUB_BITS) + (unsigned)(v >> s);
}

void hist_bucket_range(unsigned b, uint64_t *lo, uint64_t *hi)
{
    if (b >= HIST_NBUCKETS) b = HIST_NBUCKETS - 1;
    if (b < 2 * HIST_SUB) {
        *lo = *hi = b;
        return;
    }
    unsigned s = (b >> HIST_SUB_BITS) - 1;
    uint64_t sub = b & (HIST_SUB - 1);
    *lo = (HIST_SUB + sub) << s;
    *hi = *lo + (UINT64_C(1) << s) - 1;
}

void hist_add(hist *h, uint64_t ns)
{
    /* count == 0: also right for a memset-zeroed histogram (min 0, not
     * UINT64_MAX), which hist.h allows */
    if (ns < h->min || h->count == 0) h->min = ns;
    h->count++;
    h->sum += ns;
    if (ns > h->max) h->max = ns;
    h->buckets[hist_bucket_of(ns)]++;
}

void hist_merge(hist *dst, const hist *src)
{
    if (src->count == 0) return;
    if (src->min < dst->min || dst->count == 0) dst->min = src->min;
    dst->count += src->count;
    dst->sum += src->sum;
    if (src->max > dst->max) dst->max = src->max;
    for (unsigned i = 0; i < HIST_NBUCKETS; i++) dst->buckets[i] += src->buckets[i];
}

/* rank_of -- 1-based rank ceil(p/100 * count) in [1, count] (see header). */
static uint64_t rank_of(double p, uint64_t count)
{
    double x = p / 100.0 * (double)count;
    x -= x * 1e-12;
    double c = ceil(x);
    if (c < 1.0) return 1;
    if (c >= (double)count) return count;
    return (uint64_t)c;
}

uint64_t hist_percentile(const hist *h, double p)
{
    if (h->count == 0) return 0;
    if (!(p > 0.0)) return h->min; /* also NaN */
    if (p >= 100.0) return h->max;
    uint64_t rank = rank_of(p, h->count), seen = 0;
    for (unsigned b = 0; b < HIST_NBUCKETS; b++) {
        seen += h->buckets[b];
        if (seen >= rank) {
            uint64_t lo, hi;
            hist_bucket_range(b, &lo, &hi);
            uint64_t v = lo + (hi - lo) / 2;
            if (v < h->min) v = h->min;
            if (v > h->max) v = h->max;
            return v;
        }
    }
    return h->max; /* unreachable when the buckets sum to count */
}

double hist_mean(const hist *h) { return h->count ? (double)h->sum / (double)h->count : 0.0; }
