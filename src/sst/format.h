// SPDX-License-Identifier: Apache-2.0
/*
 * format.h -- on-disk constants of the SSTable format: block handles, the block
 * trailer and the fixed-size footer. The format is documented byte by byte in
 * docs/format-sst.md; keep both in step.
 *
 * File layout (offsets grow downwards):
 *   data block 0 + trailer
 *   ...
 *   data block n-1 + trailer
 *   filter block + trailer
 *   range deletion block + trailer   (format version 2 only)
 *   properties block + trailer
 *   index block + trailer
 *   footer (SST_FOOTER_SIZE bytes)
 */
#ifndef TKV_SST_FORMAT_H
#define TKV_SST_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#include "util/coding.h"

/* Version 1: the format without range tombstones. Version 2: the same plus
 * a range deletion block (after the filter block) and two more properties
 * (its tombstone count and handle); written only for a table that holds
 * range tombstones, so tables without any stay readable by every reader. */
#define SST_FORMAT_VERSION    1u
#define SST_FORMAT_VERSION_RD 2u
/* The magic, stored little-endian as the last 8 bytes of every table: the bytes
 * "tkvSST1\n" on disk. */
#define SST_MAGIC UINT64_C(0x0a31545353766b74)

/* Block trailer: [u8 compression type][u32 checksum], after every block. The
 * checksum is tkv_checksum over the stored block contents followed by the type
 * byte (size + 1 contiguous bytes on disk). */
#define SST_TRAILER_SIZE  5
#define SST_COMPRESS_NONE 0
#define SST_COMPRESS_LZ4  1

/* Footer: 3 handles as fixed u64 pairs (index, filter, properties), u32 format
 * version, u32 checksum of bytes [0, 52), u64 magic. */
#define SST_FOOTER_SIZE         64
#define SST_FOOTER_VERSION_OFF  48
#define SST_FOOTER_CHECKSUM_OFF 52
#define SST_FOOTER_MAGIC_OFF    56

/* The largest varint-encoded block handle (two 10-byte varints). */
#define SST_HANDLE_MAX_LEN 20

/* A block's location: `size` counts the stored contents only, not the trailer
 * that follows them. */
typedef struct block_handle {
    uint64_t offset;
    uint64_t size;
} block_handle;

/* handle_encode -- appends offset and size as varints to dst (at most
 * SST_HANDLE_MAX_LEN bytes); returns the byte after them. */
static inline uint8_t *handle_encode(uint8_t *dst, block_handle h)
{
    dst = enc_varint(dst, h.offset);
    return enc_varint(dst, h.size);
}

/* handle_decode -- reads a varint handle from [p, limit); returns the byte after
 * it or NULL if it is malformed. */
static inline const uint8_t *handle_decode(const uint8_t *p, const uint8_t *limit, block_handle *h)
{
    p = dec_varint(p, limit, &h->offset);
    if (!p) return NULL;
    return dec_varint(p, limit, &h->size);
}

#endif
