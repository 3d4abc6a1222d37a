// SPDX-License-Identifier: Apache-2.0
/*
 * bloom.h -- the whole-table bloom filter over user keys (docs/format-sst.md,
 * "Filter block").
 *
 * Filter contents: m/8 bytes of bit array (bit i is byte i/8, mask 1 << (i%8)),
 * then one byte k (1..30), the number of probes. Probe positions for a key use
 * double hashing on h = tkv_hash64(ukey, 0): h1 = h, h2 = rotl64(h, 32) | 1,
 * bit_j = (h1 + j * h2) mod m for j = 0..k-1 (64-bit wrapping arithmetic).
 * An empty filter (0 bytes) means "no filter": every key may be present.
 */
#ifndef TKV_SST_BLOOM_H
#define TKV_SST_BLOOM_H

#include <stddef.h>
#include <stdint.h>

#include "util/ikey.h"
#include "util/coding.h"

#define BLOOM_MAX_PROBES 30

typedef struct bloom_builder {
    uint64_t *hashes; /* one tkv_hash64 per added key */
    size_t n, cap;
    int bits_per_key; /* <= 0: build an empty ("no filter") filter */
} bloom_builder;

/* bloom_builder_init -- an empty builder. */
void bloom_builder_init(bloom_builder *b, int bits_per_key);
/* bloom_builder_free -- releases its memory. */
void bloom_builder_free(bloom_builder *b);
/* bloom_builder_add -- adds a user key (callers skip repeats of the same key).
 * 0 or TKV_NO_MEMORY. */
int bloom_builder_add(bloom_builder *b, tkv_slice ukey);
/* bloom_builder_finish -- appends the filter for every key added to *out
 * (k = round(bits_per_key * ln 2) clamped to 1..30, m = max(64, n *
 * bits_per_key) rounded up to a multiple of 8). 0 or TKV_NO_MEMORY. */
int bloom_builder_finish(bloom_builder *b, tkv_buf *out);

/* bloom_probes -- k for a bits-per-key setting. */
int bloom_probes(int bits_per_key);
/* bloom_filter_valid -- 1 if `len` bytes can be a filter (empty, or at least
 * one byte of bits and a k byte in 1..30), else 0. */
int bloom_filter_valid(const uint8_t *filter, size_t len);
/* bloom_may_contain -- 0 if ukey is certainly absent, 1 if it may be present.
 * The filter must have passed bloom_filter_valid. */
int bloom_may_contain(const uint8_t *filter, size_t len, tkv_slice ukey);

#endif
