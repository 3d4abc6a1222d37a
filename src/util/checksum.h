// SPDX-License-Identifier: Apache-2.0
/*
 * checksum.h -- the one checksum of every tierkv on-media structure: the low
 * 32 bits of XXH3-64 over the covered bytes, optionally seeded.
 */
#ifndef TKV_UTIL_CHECKSUM_H
#define TKV_UTIL_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>
#define XXH_INLINE_ALL
#include <xxhash.h>

/* tkv_checksum -- 32-bit checksum of [p, p+n). */
static inline uint32_t tkv_checksum(const void *p, size_t n) { return (uint32_t)XXH3_64bits(p, n); }

/* tkv_hash64 -- 64-bit hash (bloom filters, cache sharding). */
static inline uint64_t tkv_hash64(const void *p, size_t n, uint64_t seed) { return XXH3_64bits_withSeed(p, n, seed); }

#endif
