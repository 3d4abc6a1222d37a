// SPDX-License-Identifier: Apache-2.0
/*
 * batch.h -- the write batch: the unit of atomicity, of group commit and of a
 * WAL record's payload.
 *
 * Encoding (also the WAL payload; docs/format-wal.md):
 *   u64 first sequence | u32 count | count x record
 *   record = u8 type (IKEY_VALUE=1, IKEY_DELETION=0, IKEY_RANGE_DELETION=2)
 *            | varint klen | key
 *            [| varint vlen | value]   (value part for IKEY_VALUE; for
 *                                       IKEY_RANGE_DELETION the key is the
 *                                       range's begin and the value its end)
 * The i-th record gets sequence (first sequence + i). A range deletion
 * covers [begin, end), begin < end, both valid user keys.
 */
#ifndef TKV_MEM_BATCH_H
#define TKV_MEM_BATCH_H

#include "util/ikey.h"
#include "util/coding.h"

#define BATCH_HEADER 12

struct tkv_batch {
    tkv_buf rep; /* header + records; rep.len >= BATCH_HEADER once initialised */
};

/* batch_count / batch_seq -- read the header of an encoded batch. */
static inline uint32_t batch_count(const uint8_t *rep) { return dec_u32(rep + 8); }
static inline uint64_t batch_seq(const uint8_t *rep) { return dec_u64(rep); }
static inline void batch_set_seq(uint8_t *rep, uint64_t seq) { enc_u64(rep, seq); }

/* batch_check_range -- validates the arguments of a range deletion: 0 for a
 * range to delete, 1 for an empty one (begin == end: nothing to do, as in
 * RocksDB), TKV_INVALID for a bad key or begin > end. */
int batch_check_range(const void *begin, size_t blen, const void *end, size_t elen);

/* batch_init -- makes an empty batch (header only). */
int batch_init(struct tkv_batch *b);

/* batch_append -- appends the records of encoded batch `src` to `dst`. */
int batch_append(struct tkv_batch *dst, const uint8_t *src, size_t srclen);

/* Called for each record of a batch with its sequence number (for
 * IKEY_RANGE_DELETION: key = begin, value = end). */
typedef int (*batch_fn)(void *arg, uint64_t seq, ikey_type type, tkv_slice key, tkv_slice value);

/* batch_iterate -- validates and walks an encoded batch. Returns the first
 * non-zero value of fn, or TKV_CORRUPTION if the encoding is malformed
 * (truncated record, bad type, count mismatch); fn may already have been
 * called for earlier records, so callers validate first when that matters. */
int batch_iterate(const uint8_t *rep, size_t len, batch_fn fn, void *arg);

/* batch_validate -- batch_iterate with no callback. */
int batch_validate(const uint8_t *rep, size_t len);

#endif
