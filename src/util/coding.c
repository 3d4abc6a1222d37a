// SPDX-License-Identifier: Apache-2.0
/*
 * coding.c -- the growable byte buffer.
 */
#include "util/coding.h"

#include <stdlib.h>

#include "util/status.h"

int buf_reserve(tkv_buf *b, size_t extra)
{
    if (b->cap - b->len >= extra) return 0;
    size_t need = b->len + extra;
    if (need < b->len) return tkv_err(TKV_NO_MEMORY, "buffer size overflow");
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) cap = cap * 2 > cap ? cap * 2 : need;
    uint8_t *p = b->fixed ? malloc(cap) : realloc(b->data, cap);
    if (!p) return tkv_err(TKV_NO_MEMORY, "out of memory growing a buffer to %zu bytes", cap);
    if (b->fixed && b->len) memcpy(p, b->data, b->len); /* leave the caller's memory for the heap */
    b->fixed = 0;
    b->data = p;
    b->cap = cap;
    return 0;
}

int buf_append(tkv_buf *b, const void *p, size_t n)
{
    TKV_TRY(buf_reserve(b, n));
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

int buf_append_varint(tkv_buf *b, uint64_t v)
{
    TKV_TRY(buf_reserve(b, 10));
    b->len = (size_t)(enc_varint(b->data + b->len, v) - b->data);
    return 0;
}

int buf_append_u32(tkv_buf *b, uint32_t v)
{
    TKV_TRY(buf_reserve(b, 4));
    enc_u32(b->data + b->len, v);
    b->len += 4;
    return 0;
}

int buf_append_u64(tkv_buf *b, uint64_t v)
{
    TKV_TRY(buf_reserve(b, 8));
    enc_u64(b->data + b->len, v);
    b->len += 8;
    return 0;
}

void buf_free(tkv_buf *b)
{
    if (!b->fixed) free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->fixed = 0;
}
