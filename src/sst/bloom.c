// SPDX-License-Identifier: Apache-2.0
/*
 * bloom.c -- whole-table bloom filter with double hashing over tkv_hash64
 * (layout in bloom.h).
 */
#include "sst/bloom.h"

#include <stdlib.h>

#include "util/checksum.h"
#include "util/status.h"

void bloom_builder_init(bloom_builder *b, int bits_per_key)
{
    memset(b, 0, sizeof *b);
    b->bits_per_key = bits_per_key;
}

void bloom_builder_free(bloom_builder *b)
{
    free(b->hashes);
    b->hashes = NULL;
    b->n = b->cap = 0;
}

int bloom_probes(int bits_per_key)
{
    /* k = round(bits_per_key * ln 2), clamped to 1..30 */
    int k = (int)(bits_per_key * 0.69314718056 + 0.5);
    return k < 1 ? 1 : k > BLOOM_MAX_PROBES ? BLOOM_MAX_PROBES : k;
}

int bloom_builder_add(bloom_builder *b, tkv_slice ukey)
{
    if (b->bits_per_key <= 0) return 0;
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 1024;
        uint64_t *h = realloc(b->hashes, cap * sizeof *h);
        if (!h) return tkv_err(TKV_NO_MEMORY, "out of memory growing a bloom filter builder");
        b->hashes = h;
        b->cap = cap;
    }
    b->hashes[b->n++] = tkv_hash64(ukey.p, ukey.n, 0);
    return 0;
}

static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

/* Probe sequence of hash h over m bits (double hashing, see bloom.h). */
static inline void set_bits(uint8_t *bits, uint64_t m, int k, uint64_t h)
{
    uint64_t delta = rotl64(h, 32) | 1;
    for (int j = 0; j < k; j++, h += delta) {
        uint64_t pos = h % m;
        bits[pos >> 3] |= (uint8_t)(1u << (pos & 7));
    }
}

static inline int test_bits(const uint8_t *bits, uint64_t m, int k, uint64_t h)
{
    uint64_t delta = rotl64(h, 32) | 1;
    for (int j = 0; j < k; j++, h += delta) {
        uint64_t pos = h % m;
        if (!(bits[pos >> 3] & (1u << (pos & 7)))) return 0;
    }
    return 1;
}

int bloom_builder_finish(bloom_builder *b, tkv_buf *out)
{
    if (b->bits_per_key <= 0) return 0; /* the empty "no filter" filter */
    uint64_t mbits = (uint64_t)b->n * (uint64_t)b->bits_per_key;
    if (mbits < 64) mbits = 64;
    size_t nbytes = (size_t)((mbits + 7) / 8);
    mbits = (uint64_t)nbytes * 8;
    int k = bloom_probes(b->bits_per_key);
    TKV_TRY(buf_reserve(out, nbytes + 1));
    uint8_t *bits = out->data + out->len;
    memset(bits, 0, nbytes);
    for (size_t i = 0; i < b->n; i++) set_bits(bits, mbits, k, b->hashes[i]);
    bits[nbytes] = (uint8_t)k;
    out->len += nbytes + 1;
    return 0;
}

int bloom_filter_valid(const uint8_t *filter, size_t len)
{
    if (len == 0) return 1;
    if (len < 2) return 0;
    uint8_t k = filter[len - 1];
    return k >= 1 && k <= BLOOM_MAX_PROBES;
}

int bloom_may_contain(const uint8_t *filter, size_t len, tkv_slice ukey)
{
    if (len < 2) return 1;
    uint64_t mbits = (uint64_t)(len - 1) * 8;
    return test_bits(filter, mbits, filter[len - 1], tkv_hash64(ukey.p, ukey.n, 0));
}
