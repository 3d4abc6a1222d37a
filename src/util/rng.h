// SPDX-License-Identifier: Apache-2.0
/*
 * rng.h -- the xoshiro256** step (Blackman and Vigna), shared by the test
 * harness (tests/testutil.c) and tkv_bench (bench/workload.c). Each caller
 * seeds the four state words its own way (splitmix64 expansions); the state
 * must not be all zero.
 */
#ifndef TKV_UTIL_RNG_H
#define TKV_UTIL_RNG_H

#include <stdint.h>

static inline uint64_t rng_rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* xoshiro256ss_next -- advances s[0..3] and returns the next 64-bit output. */
static inline uint64_t xoshiro256ss_next(uint64_t s[4])
{
    uint64_t result = rng_rotl64(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rng_rotl64(s[3], 45);
    return result;
}

#endif
