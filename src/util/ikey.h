// SPDX-License-Identifier: Apache-2.0
/*
 * ikey.h -- internal keys: the user key followed by an 8-byte little-endian
 * trailer (sequence << 8 | type).
 *
 * Order (every sorted structure of every tier uses it):
 *   1. user key ascending by memcmp (shorter first on a common prefix);
 *   2. then sequence number descending (newest version first);
 *   3. then type descending.
 * Sequence numbers are 56 bits; 0 is never assigned to a write.
 * A lookup for user key K at snapshot S seeks to ikey(K, S, IKEY_SEEK_TYPE): the
 * first entry at or after it is the newest version of K visible at S, if any.
 */
#ifndef TKV_UTIL_IKEY_H
#define TKV_UTIL_IKEY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/coding.h"

#define IKEY_TRAILER 8
#define IKEY_MAX_SEQ ((UINT64_C(1) << 56) - 1)

/* IKEY_RANGE_DELETION is a record type of write batches (and so of WAL
 * records) only: a range tombstone (util/rangedel.h). It is never the type of
 * an internal key in a sorted structure, whose entries are values and
 * deletions. */
typedef enum ikey_type { IKEY_DELETION = 0, IKEY_VALUE = 1, IKEY_RANGE_DELETION = 2 } ikey_type;
#define IKEY_SEEK_TYPE IKEY_VALUE /* the largest type: sorts first among equal (key, seq) */

/* A borrowed byte range. */
typedef struct tkv_slice {
    const uint8_t *p;
    size_t n;
} tkv_slice;

static inline tkv_slice slice(const void *p, size_t n) { return (tkv_slice){(const uint8_t *)p, n}; }

static inline uint64_t ikey_pack(uint64_t seq, ikey_type t) { return (seq << 8) | (uint64_t)t; }

/* ikey_encode -- writes user key + trailer to dst (klen + 8 bytes). */
static inline void ikey_encode(uint8_t *dst, const void *ukey, size_t klen, uint64_t seq, ikey_type t)
{
    if (klen) memcpy(dst, ukey, klen);
    enc_u64(dst + klen, ikey_pack(seq, t));
}

/* Accessors; `ik` must be at least IKEY_TRAILER bytes (callers validate). */
static inline tkv_slice ikey_user(tkv_slice ik) { return (tkv_slice){ik.p, ik.n - IKEY_TRAILER}; }
static inline uint64_t ikey_trailer(tkv_slice ik) { return dec_u64(ik.p + ik.n - IKEY_TRAILER); }
static inline uint64_t ikey_seq(tkv_slice ik) { return ikey_trailer(ik) >> 8; }
static inline ikey_type ikey_get_type(tkv_slice ik) { return (ikey_type)(ikey_trailer(ik) & 0xff); }

/* ukey_cmp -- memcmp order on user keys.
 * Compared inline, 8 bytes at a time as big-endian words, then byte by byte:
 * a call to memcmp per comparison was 12 % of a writer's time in a 1 KiB
 * fill (its skiplist search compares ~20 nodes per insert), and the keys of
 * a KV store are short. */
static inline int ukey_cmp(tkv_slice a, tkv_slice b)
{
    size_t n = a.n < b.n ? a.n : b.n;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint8_t *p = a.p, *q = b.p;
    for (; n >= 8; n -= 8, p += 8, q += 8) {
        uint64_t x, y;
        memcpy(&x, p, 8);
        memcpy(&y, q, 8);
        if (x != y) return __builtin_bswap64(x) < __builtin_bswap64(y) ? -1 : 1;
    }
    for (; n; n--, p++, q++)
        if (*p != *q) return *p < *q ? -1 : 1;
#else
    int c = n ? memcmp(a.p, b.p, n) : 0;
    if (c) return c;
#endif
    return a.n < b.n ? -1 : a.n > b.n ? 1 : 0;
}

/* ikey_cmp -- the internal key order described above. */
static inline int ikey_cmp(tkv_slice a, tkv_slice b)
{
    int c = ukey_cmp(ikey_user(a), ikey_user(b));
    if (c) return c;
    uint64_t ta = ikey_trailer(a), tb = ikey_trailer(b);
    return ta > tb ? -1 : ta < tb ? 1 : 0;
}

#endif
