// SPDX-License-Identifier: Apache-2.0
/*
 * batch.c -- tkv_batch API and the batch record codec.
 */
#include "mem/batch.h"

#include <stdlib.h>

#include "util/status.h"

int batch_init(struct tkv_batch *b)
{
    b->rep.len = 0;
    TKV_TRY(buf_reserve(&b->rep, BATCH_HEADER));
    memset(b->rep.data, 0, BATCH_HEADER);
    b->rep.len = BATCH_HEADER;
    return 0;
}

tkv_batch *tkv_batch_new(void)
{
    tkv_batch *b = calloc(1, sizeof *b);
    if (!b || batch_init(b) < 0) {
        free(b);
        tkv_err(TKV_NO_MEMORY, "out of memory allocating a batch");
        return NULL;
    }
    return b;
}

void tkv_batch_free(tkv_batch *b)
{
    if (!b) return;
    buf_free(&b->rep);
    free(b);
}

void tkv_batch_clear(tkv_batch *b)
{
    if (!b) return;
    b->rep.len = BATCH_HEADER;
    memset(b->rep.data, 0, BATCH_HEADER);
}

/* check_user_key -- validates a key argument (`what`: "key", "begin", "end"). */
static int check_user_key(const void *key, size_t klen, const char *what)
{
    if (!key) return tkv_err(TKV_INVALID, "NULL %s", what);
    if (klen == 0 || klen > TKV_MAX_KEY_SIZE)
        return tkv_err(TKV_INVALID, "%s length %zu outside [1, %u]", what, klen, TKV_MAX_KEY_SIZE);
    return 0;
}

/* batch_add -- appends one record; the batch is unchanged on failure. */
static int batch_add(tkv_batch *b, ikey_type t, const void *key, size_t klen, const void *val, size_t vlen)
{
    if (!b) return tkv_err(TKV_INVALID, "NULL batch");
    TKV_TRY(check_user_key(key, klen, t == IKEY_RANGE_DELETION ? "begin" : "key"));
    if (t == IKEY_VALUE) {
        if (vlen > TKV_MAX_VALUE_SIZE)
            return tkv_err(TKV_INVALID, "value length %zu exceeds %u", vlen, TKV_MAX_VALUE_SIZE);
        if (!val && vlen) return tkv_err(TKV_INVALID, "NULL value with non-zero length");
    }
    uint32_t n = batch_count(b->rep.data);
    if (n == UINT32_MAX) return tkv_err(TKV_INVALID, "batch holds too many records");
    int has_val = t != IKEY_DELETION;
    size_t need = 1 + 10 + klen + (has_val ? 10 + vlen : 0);
    TKV_TRY(buf_reserve(&b->rep, need));
    uint8_t *p = b->rep.data + b->rep.len;
    *p++ = (uint8_t)t;
    p = enc_varint(p, klen);
    memcpy(p, key, klen);
    p += klen;
    if (has_val) {
        p = enc_varint(p, vlen);
        if (vlen) memcpy(p, val, vlen);
        p += vlen;
    }
    b->rep.len = (size_t)(p - b->rep.data);
    enc_u32(b->rep.data + 8, n + 1);
    return 0;
}

int tkv_batch_put(tkv_batch *b, const void *key, size_t klen, const void *val, size_t vlen)
{
    return batch_add(b, IKEY_VALUE, key, klen, val, vlen);
}

int tkv_batch_delete(tkv_batch *b, const void *key, size_t klen)
{
    return batch_add(b, IKEY_DELETION, key, klen, NULL, 0);
}

int batch_check_range(const void *begin, size_t blen, const void *end, size_t elen)
{
    TKV_TRY(check_user_key(begin, blen, "begin"));
    TKV_TRY(check_user_key(end, elen, "end"));
    int c = ukey_cmp(slice(begin, blen), slice(end, elen));
    if (c > 0) return tkv_err(TKV_INVALID, "range deletion with begin > end (an empty range is begin == end)");
    return c == 0; /* empty: nothing to delete */
}

int tkv_batch_delete_range(tkv_batch *b, const void *begin, size_t blen, const void *end, size_t elen)
{
    if (!b) return tkv_err(TKV_INVALID, "NULL batch");
    int rc = batch_check_range(begin, blen, end, elen);
    if (rc != 0) return rc < 0 ? rc : TKV_OK;
    return batch_add(b, IKEY_RANGE_DELETION, begin, blen, end, elen);
}

int batch_append(struct tkv_batch *dst, const uint8_t *src, size_t srclen)
{
    TKV_TRY(buf_append(&dst->rep, src + BATCH_HEADER, srclen - BATCH_HEADER));
    enc_u32(dst->rep.data + 8, batch_count(dst->rep.data) + batch_count(src));
    return 0;
}

int batch_iterate(const uint8_t *rep, size_t len, batch_fn fn, void *arg)
{
    if (len < BATCH_HEADER) return tkv_err(TKV_CORRUPTION, "batch shorter than its header (%zu bytes)", len);
    uint64_t seq = batch_seq(rep);
    uint32_t count = batch_count(rep), found = 0;
    const uint8_t *p = rep + BATCH_HEADER, *end = rep + len;
    while (p < end) {
        uint8_t t = *p++;
        uint64_t klen, vlen = 0;
        if (t != IKEY_VALUE && t != IKEY_DELETION && t != IKEY_RANGE_DELETION)
            return tkv_err(TKV_CORRUPTION, "batch record %u has unknown type %u", found, t);
        p = dec_varint(p, end, &klen);
        if (!p || klen > (uint64_t)(end - p)) return tkv_err(TKV_CORRUPTION, "batch record %u: bad key length", found);
        tkv_slice key = slice(p, (size_t)klen), val = slice(NULL, 0);
        p += klen;
        if (t != IKEY_DELETION) {
            p = dec_varint(p, end, &vlen);
            if (!p || vlen > (uint64_t)(end - p))
                return tkv_err(TKV_CORRUPTION, "batch record %u: bad value length", found);
            val = slice(p, (size_t)vlen);
            p += vlen;
        }
        if (t == IKEY_RANGE_DELETION && (key.n == 0 || key.n > TKV_MAX_KEY_SIZE || val.n == 0 ||
                                         val.n > TKV_MAX_KEY_SIZE || ukey_cmp(key, val) >= 0))
            return tkv_err(TKV_CORRUPTION, "batch record %u: a range deletion whose begin is not below its end", found);
        if (fn) {
            int rc = fn(arg, seq + found, (ikey_type)t, key, val);
            if (rc) return rc;
        }
        found++;
    }
    if (found != count) return tkv_err(TKV_CORRUPTION, "batch header says %u records, body holds %u", count, found);
    return 0;
}

int batch_validate(const uint8_t *rep, size_t len) { return batch_iterate(rep, len, NULL, NULL); }
