// SPDX-License-Identifier: Apache-2.0
/*
 * rowtable_media.c -- reading a row's bytes in the pool: data-stream access
 * across page ends, bounds-checked entry decoding (invariant (3) of
 * rowtable_int.h), and the key comparison and binary search that lookups,
 * iterators and the builder's forward pointers all use. (Byte layout and
 * invariants: rowtable_int.h.)
 */
#include "matrix/rowtable_int.h"

#include <lz4.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tierkv.h"
#include "util/status.h"

/* rt_corrupt -- TKV_CORRUPTION naming the pool file, row and slot. */
int rt_corrupt(const rowtable *r, const char *fmt, ...)
{
    char detail[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    char slot[32] = "uncommitted";
    if (r->slot != UINT32_MAX) snprintf(slot, sizeof slot, "directory slot %u", r->slot);
    return tkv_err(TKV_CORRUPTION, "pool %s: row %llu (%s): corrupt RowTable: %s", pool_path(r->pl),
                   (unsigned long long)r->row_id, slot, detail);
}

/* ---------------------------------------------------------------- media access */

/* rt_data_copy -- copies [off, off+len) of the data stream, across page ends. */
void rt_data_copy(const rowtable *r, uint64_t off, uint8_t *dst, uint64_t len)
{
    while (len) {
        uint64_t in = off & r->mask, chunk = min_u64(len, r->page_size - in);
        memcpy(dst, r->addr[r->nmeta + (off >> r->shift)] + in, chunk);
        dst += chunk;
        off += chunk;
        len -= chunk;
    }
}

/* rt_data_cmp -- memcmp of [off, off+n) of the data stream against b. */
int rt_data_cmp(const rowtable *r, uint64_t off, const uint8_t *b, uint64_t n)
{
    while (n) {
        uint64_t in = off & r->mask, chunk = min_u64(n, r->page_size - in);
        int c = memcmp(r->addr[r->nmeta + (off >> r->shift)] + in, b, chunk);
        if (c) return c;
        b += chunk;
        off += chunk;
        n -= chunk;
    }
    return 0;
}

/* read_varint -- the varint at data offset off (< entries_end). */
static int read_varint(const rowtable *r, uint64_t off, uint64_t *v, uint64_t *len)
{
    uint8_t buf[10];
    uint64_t n = min_u64(10, r->entries_end - off);
    const uint8_t *p = data_ptr(r, off, n);
    if (!p) {
        rt_data_copy(r, off, buf, n);
        p = buf;
    }
    const uint8_t *e = dec_varint(p, p + n, v);
    if (!e) return -1;
    *len = (uint64_t)(e - p);
    return 0;
}

/* rt_entry_decode -- locates entry i from its metadata and the data stream,
 * checking every length against the stream and the metadata's key length and
 * trailer. */
int rt_entry_decode(const rowtable *r, uint32_t i, const meta *m, ent_loc *e)
{
    uint64_t ikl, l1, vl, l2;
    if (m->data_off >= r->entries_end)
        return rt_corrupt(r, "entry %u: data offset %llu past the data", i, (unsigned long long)m->data_off);
    if (read_varint(r, m->data_off, &ikl, &l1) < 0 || ikl != (uint64_t)m->klen + IKEY_TRAILER)
        return rt_corrupt(r, "entry %u: key length in data disagrees with the metadata", i);
    e->key_off = m->data_off + l1;
    e->key_len = ikl;
    uint64_t vo = e->key_off + ikl;
    if (vo >= r->entries_end) return rt_corrupt(r, "entry %u: key runs past the data", i);
    if (read_varint(r, vo, &vl, &l2) < 0) return rt_corrupt(r, "entry %u: bad value length", i);
    e->lz4 = 0;
    if (r->lz4) { /* vfield = payload length << 1 | lz4 */
        e->lz4 = (int)(vl & 1);
        vl >>= 1;
    }
    if (vl > TKV_MAX_VALUE_SIZE || vl > r->entries_end - vo - l2) return rt_corrupt(r, "entry %u: bad value length", i);
    e->val_off = vo + l2;
    e->val_len = e->raw_len = vl;
    if (e->lz4) { /* payload = varint raw_len | lz4 block */
        uint64_t raw, l3;
        if (vl == 0 || read_varint(r, e->val_off, &raw, &l3) < 0 || l3 >= vl || raw > TKV_MAX_VALUE_SIZE ||
            raw > (vl - l3) * 255 + 16)
            return rt_corrupt(r, "entry %u: bad compressed value header", i);
        e->val_off += l3;
        e->val_len = vl - l3;
        e->raw_len = raw;
    }
    uint8_t tr[8];
    rt_data_copy(r, e->key_off + m->klen, tr, 8);
    if (dec_u64(tr) != m->trailer) return rt_corrupt(r, "entry %u: trailer in data disagrees with the metadata", i);
    return 0;
}

/* rt_value -- the value of entry i (rowtable_int.h). */
int rt_value(const rowtable *r, uint32_t i, const ent_loc *e, tkv_buf *buf, tkv_slice *v)
{
    const uint8_t *p = data_ptr(r, e->val_off, e->val_len);
    if (!e->lz4 && p) {
        *v = slice(p, e->val_len);
        return 0;
    }
    buf->len = 0;
    if (!e->lz4) { /* a stored value that crosses a page end */
        TKV_TRY(buf_reserve(buf, e->val_len + 1));
        rt_data_copy(r, e->val_off, buf->data, e->val_len);
        buf->len = e->val_len;
        *v = slice(buf->data, e->val_len);
        return 0;
    }
    uint8_t *gather = NULL;
    if (!p) { /* only entries over page_size/8 cross a page end */
        if (!(gather = malloc(e->val_len)))
            return tkv_err(TKV_NO_MEMORY, "out of memory reading a value of row %llu", (unsigned long long)r->row_id);
        rt_data_copy(r, e->val_off, gather, e->val_len);
        p = gather;
    }
    int rc = buf_reserve(buf, e->raw_len + 1);
    if (rc == 0) {
        int d = LZ4_decompress_safe((const char *)p, (char *)buf->data, (int)e->val_len, (int)e->raw_len);
        if (d < 0 || (uint64_t)d != e->raw_len)
            rc = rt_corrupt(r, "entry %u: its lz4 value does not decompress to %llu bytes", i,
                            (unsigned long long)e->raw_len);
    }
    free(gather);
    if (rc < 0) return rc;
    buf->len = e->raw_len;
    *v = slice(buf->data, e->raw_len);
    return 0;
}

/* ---------------------------------------------------------------- comparisons */

/* rt_cmp_at -- compares entry i with the target in ikey_cmp order (< 0: entry
 * is smaller); *ueq = 1 if their user keys are equal. Decided from the
 * metadata alone when the prefixes differ, when a key is at most 8 bytes
 * (prefixes are zero-padded, so equal prefixes then order by length), or
 * for versions of one user key (the trailer is in the metadata); otherwise
 * the key bytes after the prefix are read from the data stream. On a
 * malformed entry sets pr->err and returns 1. */
int rt_cmp_at(probe *pr, uint32_t i, int *ueq)
{
    const rowtable *r = pr->r;
    const target *t = pr->t;
    meta m;
    meta_load(r, i, &m);
    pm_read_delay(r->reg, 1);
    pr->ncmp++;
    pr->nprobe++;
    *ueq = 0;
    if (m.prefix != t->prefix) return m.prefix < t->prefix ? -1 : 1;
    uint64_t common = min_u64(m.klen, t->un);
    if (common > 8) {
        uint64_t koff = m.data_off + varint_len((uint64_t)m.klen + IKEY_TRAILER);
        if (m.data_off >= r->entries_end || koff > r->entries_end || m.klen > r->entries_end - koff) {
            if (!pr->err) pr->err = rt_corrupt(r, "entry %u: key runs past the data", i);
            return 1;
        }
        pm_read_delay(r->reg, 1);
        pr->nprobe++;
        int c = rt_data_cmp(r, koff + 8, t->uk + 8, common - 8);
        if (c) return c;
    }
    if (m.klen != t->un) return m.klen < t->un ? -1 : 1;
    *ueq = 1;
    return m.trailer > t->trailer ? -1 : m.trailer < t->trailer ? 1 : 0;
}

/* rt_lower_bound -- first index in [lo, hi) whose entry is >= the target, else
 * hi. Whenever hi moves to a compared entry, *hi_ueq takes that entry's
 * user-key equality, so the caller learns whether the answer holds the target
 * user key without comparing again. */
uint32_t rt_lower_bound(probe *pr, uint32_t lo, uint32_t hi, int *hi_ueq)
{
    while (lo < hi && !pr->err) {
        uint32_t mid = lo + (hi - lo) / 2;
        int ueq;
        if (rt_cmp_at(pr, mid, &ueq) < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
            *hi_ueq = ueq;
        }
    }
    return lo;
}
