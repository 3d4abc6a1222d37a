// SPDX-License-Identifier: Apache-2.0
/*
 * rowtable_open.c -- opening a committed row at recovery: the header fields
 * against each other and the pool geometry, the checksum of every page not
 * released, the live metadata, then the DRAM key filter rebuilt from the
 * live keys. Never reads outside the pool on garbage (invariant (3) of
 * rowtable_int.h); which pages are released, and the first entry still
 * whole, come from rt_check_released (rowtable_drain.c).
 */
#include "matrix/rowtable_int.h"

#include <stdlib.h>

#include "tierkv.h"
#include "util/checksum.h"
#include "util/status.h"

/* ---------------------------------------------------------------- verification */

/* verify_pages -- the checksum of every page not released. The pages are
 * asked for first, in runs (pool_willneed_pages): on a file system the
 * mapping has no readahead (pmem_space.c), and a cold pool read by the
 * checksum's faults alone comes in 4 KiB at a time. */
static int verify_pages(rowtable *r, const uint8_t *body)
{
    for (uint32_t j = 0; j < r->npages;) {
        uint32_t k = j;
        while (k < r->npages && !r->released[k]) k++;
        if (k > j) pool_willneed_pages(r->pl, r->pages + j, k - j);
        j = k + 1;
    }
    uint64_t meta_end = r->meta_off + (uint64_t)r->n * ROWTABLE_META_ENTRY_SIZE;
    for (uint32_t j = 0; j < r->npages; j++) {
        if (r->released[j]) continue;
        int is_meta = j < r->nmeta;
        uint64_t lo, hi;
        if (is_meta) stream_range(r->meta_off, meta_end, j, r->page_size, &lo, &hi);
        else stream_range(0, r->data_bytes, j - r->nmeta, r->page_size, &lo, &hi);
        pm_read_delay(r->reg, 1);
        if (tkv_checksum(r->addr[j] + lo, hi - lo) != dec_u32(body + rb_page_crc(r->version) + 4 * (size_t)j))
            return rt_corrupt(r, "checksum mismatch in %s page %u (pool page %u)", is_meta ? "metadata" : "data",
                              is_meta ? j : j - r->nmeta, r->pages[j]);
    }
    return 0;
}

/* verify_meta -- the live metadata entries are well formed: data offsets
 * strictly increase and leave room for an entry, key lengths are in range,
 * prefixes do not decrease, types and sequence numbers are valid, forward
 * pointers do not decrease and stay within the older row. */
static int verify_meta(rowtable *r)
{
    meta m, prev = {0};
    for (uint32_t i = r->min_cursor; i < r->n; i++) {
        meta_load(r, i, &m);
        uint64_t seq = m.trailer >> 8, ty = m.trailer & 0xff;
        if (m.data_off >= r->entries_end || r->entries_end - m.data_off < 10 || m.klen > TKV_MAX_KEY_SIZE)
            return rt_corrupt(r, "entry %u: data offset or key length out of range", i);
        if (ty > IKEY_VALUE || seq < r->min_seq || seq > r->max_seq)
            return rt_corrupt(r, "entry %u: bad type or sequence number", i);
        if (r->older_id ? m.fwd > r->older_n : m.fwd != ROWTABLE_NO_FWD)
            return rt_corrupt(r, "entry %u: forward pointer out of range", i);
        if (i > r->min_cursor && (m.data_off <= prev.data_off || m.prefix < prev.prefix || m.fwd < prev.fwd))
            return rt_corrupt(r, "entry %u: out of order with entry %u", i, i - 1);
        prev = m;
    }
    return 0;
}

/* filter_rebuild -- the key filter of an opened row, from its live entries
 * (the keys are read from the data stream, verified by verify_pages). */
static int filter_rebuild(rowtable *r)
{
    TKV_TRY(rt_filter_alloc(r, r->n - r->min_cursor));
    tkv_buf key = {0};
    for (uint32_t i = r->min_cursor; i < r->n; i++) {
        meta m;
        ent_loc e;
        meta_load(r, i, &m);
        int rc = rt_entry_decode(r, i, &m, &e);
        const uint8_t *kp = rc == 0 ? data_ptr(r, e.key_off, m.klen) : NULL;
        if (rc == 0 && !kp) {
            key.len = 0;
            if ((rc = buf_reserve(&key, m.klen)) == 0) {
                rt_data_copy(r, e.key_off, key.data, m.klen);
                kp = key.data;
            }
        }
        if (rc < 0) {
            buf_free(&key);
            return rc;
        }
        rt_filter_add(r, rowtable_key_hash(slice(kp, m.klen))); /* versions of a key add the same bits */
    }
    buf_free(&key);
    return 0;
}

/* load_range_dels -- format version 2: the range tombstone block, whose
 * pages are never released (rt_check_released's prefixes end before it) and
 * whose pages' checksums verify_pages checked, against its own checksum,
 * decoded (every tombstone well formed, as many as the header says) into
 * r->rd and its fragments. */
static int load_range_dels(rowtable *r, const uint8_t *body)
{
    if (r->version < ROWTABLE_FORMAT_VERSION_RD) return 0;
    uint32_t first = r->nmeta + (uint32_t)(r->rd_off >> r->shift);
    if (r->released[first]) return rt_corrupt(r, "the page of its range tombstone block was released");
    uint8_t *b = malloc(r->rd_len ? r->rd_len : 1);
    if (!b) return tkv_err(TKV_NO_MEMORY, "out of memory opening row %llu", (unsigned long long)r->row_id);
    rt_data_copy(r, r->rd_off, b, r->rd_len);
    pm_read_delay(r->reg, 1);
    const char *why = "checksum mismatch";
    int rc = tkv_checksum(b, r->rd_len) == dec_u32(body + RB_RD_CRC) ? rd_decode(b, r->rd_len, &r->rd, &why) : 1;
    free(b);
    if (rc == 0 && r->rd.n != dec_u64(body + RB_RD_COUNT)) {
        why = "tombstone count differs from the header's";
        rc = 1;
    }
    if (rc > 0) return rt_corrupt(r, "range tombstone block: %s", why);
    if (rc == 0 && !(r->rd_frags = rd_frags_new(r->rd.t, r->rd.n, UINT64_MAX))) rc = TKV_NO_MEMORY;
    return rc;
}

/* read_version -- the body's format version (1 or 2, either with or without
 * ROWTABLE_FLAG_LZ4) and, in 2, the place
 * of the range tombstone block, checked against the data stream. */
static int read_version(rowtable *r, const pool_row *pr)
{
    const uint8_t *b = pr->body;
    uint32_t word = dec_u32(b + RB_VERSION);
    r->lz4 = (word & ROWTABLE_FLAG_LZ4) != 0;
    r->version = word & ~ROWTABLE_FLAG_LZ4;
    if ((r->version != ROWTABLE_FORMAT_VERSION && r->version != ROWTABLE_FORMAT_VERSION_RD) ||
        dec_u32(b + RB_META_ESIZE) != ROWTABLE_META_ENTRY_SIZE)
        return rt_corrupt(r, "format version 0x%x / entry size %u unknown", word, dec_u32(b + RB_META_ESIZE));
    if (pr->kind != POOL_ROW_KIND_ROWTABLE || pr->body_len != rb_fixed(r->version) + 4 * (uint64_t)pr->npages)
        return rt_corrupt(r, "not a RowTable header (kind %u, body %u bytes)", pr->kind, pr->body_len);
    r->data_bytes = dec_u64(b + RB_DATA_BYTES);
    r->entries_end = r->data_bytes;
    if (r->version == ROWTABLE_FORMAT_VERSION) return 0;
    r->rd_off = dec_u64(b + RB_RD_OFF);
    r->rd_len = dec_u64(b + RB_RD_LEN);
    if (r->rd_off > r->data_bytes || r->rd_len != r->data_bytes - r->rd_off || r->rd_len == 0 ||
        dec_u64(b + RB_RD_COUNT) == 0 || dec_u64(b + RB_RD_COUNT) > r->rd_len)
        return rt_corrupt(r, "range tombstone block fields inconsistent with the data stream");
    r->entries_end = r->rd_off;
    return 0;
}

/* ---------------------------------------------------------------- open */

/* rowtable_open -- reads the row header of `slot`, checks it, fills the
 * handle, then verifies the pages and metadata and rebuilds the filter. */
int rowtable_open(pool *p, uint32_t slot, rowtable **out)
{
    *out = NULL;
    pool_row pr;
    TKV_TRY(pool_row_read(p, slot, &pr));
    rowtable *r = rt_alloc(p, pr.npages);
    if (!r)
        return tkv_err(TKV_NO_MEMORY, "pool %s: out of memory opening row %llu", pool_path(p),
                       (unsigned long long)pr.row_id);
    r->row_id = pr.row_id;
    r->slot = slot;
    int rc;
    const uint8_t *b = pr.body;
    if ((rc = read_version(r, &pr)) < 0) goto fail;
    uint64_t n = dec_u64(b + RB_N), older_n = dec_u64(b + RB_OLDER_N);
    r->min_seq = dec_u64(b + RB_MIN_SEQ);
    r->max_seq = dec_u64(b + RB_MAX_SEQ);
    r->deletions = dec_u64(b + RB_DELETIONS);
    r->meta_off = dec_u64(b + RB_META_OFF);
    r->nmeta = dec_u32(b + RB_NMETA);
    r->ndata = dec_u32(b + RB_NDATA);
    r->older_id = dec_u64(b + RB_OLDER_ID);
    r->key_bytes = dec_u64(b + RB_KEY_BYTES);
    r->value_bytes = dec_u64(b + RB_VALUE_BYTES);
    uint64_t ps = r->page_size;
    uint64_t want_meta_off = round_up(pool_row_header_area(pr.body_len, pr.npages), META_ALIGN);
    if (n > ROWTABLE_MAX_ENTRIES || older_n > ROWTABLE_MAX_ENTRIES || r->deletions > n ||
        ((n || r->rd_len) && (r->min_seq > r->max_seq || r->max_seq > IKEY_MAX_SEQ)) || r->meta_off != want_meta_off ||
        r->nmeta < 1 || (uint64_t)r->nmeta + r->ndata != pr.npages ||
        r->nmeta != (r->meta_off + n * ROWTABLE_META_ENTRY_SIZE + ps - 1) / ps ||
        r->data_bytes > (uint64_t)r->ndata * ps || r->ndata != r->data_bytes / ps + (r->data_bytes % ps != 0)) {
        rc = rt_corrupt(r, "header fields inconsistent with each other or the pool geometry");
        goto fail;
    }
    r->n = (uint32_t)n;
    r->older_n = older_n;
    for (uint32_t j = 0; j < r->npages; j++) {
        r->pages[j] = pool_row_page(&pr, j); /* < page_count: checked by the pool */
        r->addr[j] = pool_page_addr(p, r->pages[j]);
        r->released[j] = (uint8_t)pool_row_released(&pr, j);
    }
    if ((rc = rt_check_released(r)) < 0 || (rc = verify_pages(r, b)) < 0 || (rc = verify_meta(r)) < 0 ||
        (rc = load_range_dels(r, b)) < 0)
        goto fail;
    r->cursor = r->min_cursor;
    if ((rc = filter_rebuild(r)) < 0) goto fail;
    *out = r;
    return 0;
fail:
    rowtable_close(r);
    return rc;
}
