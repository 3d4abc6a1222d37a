// SPDX-License-Identifier: Apache-2.0
/*
 * coding.h -- little-endian fixed-width and varint encoding helpers, plus a
 * growable byte buffer. All on-media integers in tierkv are little-endian.
 */
#ifndef TKV_UTIL_CODING_H
#define TKV_UTIL_CODING_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline void enc_u16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static inline void enc_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void enc_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }
static inline uint16_t dec_u16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}
static inline uint32_t dec_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static inline uint64_t dec_u64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* varint_len -- bytes needed to encode v as a varint (1..10). */
static inline size_t varint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* enc_varint -- writes v at p (LEB128), returns the byte after it. */
static inline uint8_t *enc_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* dec_varint -- reads a varint from [p, limit); returns the byte after it, or
 * NULL if it is truncated or longer than 10 bytes (never reads past limit). */
static inline const uint8_t *dec_varint(const uint8_t *p, const uint8_t *limit, uint64_t *out)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift <= 63 && p < limit; shift += 7) {
        uint64_t byte = *p++;
        v |= (byte & 0x7f) << shift;
        if (!(byte & 0x80)) {
            *out = v;
            return p;
        }
    }
    return NULL;
}

/* A growable byte buffer. Zero-initialise ({0}) to start empty. A buffer
 * made by buf_init_fixed starts in the caller's memory (`fixed`): it is used
 * while what is written fits, and the first growth past it moves the contents
 * to a heap allocation (fixed = 0), which buf_free then frees as usual; the
 * caller's memory is never freed or reallocated. */
typedef struct tkv_buf {
    uint8_t *data;
    size_t len;
    size_t cap;
    int fixed; /* data is the caller's memory, not ours */
} tkv_buf;

/* buf_init_fixed -- an empty buffer over the caller's mem[0..cap). */
static inline void buf_init_fixed(tkv_buf *b, void *mem, size_t cap)
{
    b->data = (uint8_t *)mem;
    b->len = 0;
    b->cap = mem ? cap : 0;
    b->fixed = 1;
}

/* buf_reserve -- ensures room for `extra` more bytes. 0 or TKV_NO_MEMORY. */
int buf_reserve(tkv_buf *b, size_t extra);
/* buf_append -- appends n bytes. 0 or TKV_NO_MEMORY. */
int buf_append(tkv_buf *b, const void *p, size_t n);
int buf_append_varint(tkv_buf *b, uint64_t v);
int buf_append_u32(tkv_buf *b, uint32_t v);
int buf_append_u64(tkv_buf *b, uint64_t v);
/* buf_free -- releases the memory and empties the buffer. */
void buf_free(tkv_buf *b);

#endif
