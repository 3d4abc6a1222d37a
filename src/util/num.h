// SPDX-License-Identifier: Apache-2.0
/*
 * num.h -- numeric conversions the scheduler and the matrix share: a
 * double rate or estimate to uint64_t, saturating instead of overflowing.
 */
#ifndef TKV_UTIL_NUM_H
#define TKV_UTIL_NUM_H

#include <stdint.h>

/* U64_SAT_FROM -- doubles at or above this become UINT64_MAX in sat_u64:
 * just under 2^64 (1.8447e19), above which a cast to uint64_t is undefined;
 * every double below it converts exactly to its truncated value. */
#define U64_SAT_FROM 1.8e19

/* sat_u64 -- x (>= 0, not NaN) truncated to uint64_t; UINT64_MAX from
 * U64_SAT_FROM on. */
static inline uint64_t sat_u64(double x) { return x >= U64_SAT_FROM ? UINT64_MAX : (uint64_t)x; }

#endif
