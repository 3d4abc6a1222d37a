// SPDX-License-Identifier: Apache-2.0
/*
 * rowtable_build.c -- writing a row: two passes over a sorted source (check
 * and measure, then write data, metadata and forward pointers page by
 * page), the header, and the commit of the directory slot; also abandoning
 * an uncommitted row and queueing a flushed row for write-back. The persist
 * order is at rowtable_build below; the byte layout and the invariants the
 * builder establishes ((1) and (2)) are in rowtable_int.h.
 */
#include "matrix/rowtable_int.h"

#include <lz4.h>
#include <stdlib.h>
#include <string.h>

#include "tierkv.h"
#include "util/checksum.h"
#include "util/status.h"

/* ---------------------------------------------------------------- data placement and stream writers */

/* entry_size -- encoded bytes of an entry in the data stream: vfield is the
 * number before the value's bytes (the value's length, or with
 * ROWTABLE_FLAG_LZ4 the payload's length << 1 | c), payload those bytes. */
static inline uint64_t entry_size(uint64_t ikey_len, uint64_t vfield, uint64_t payload)
{
    return varint_len(ikey_len) + ikey_len + varint_len(vfield) + payload;
}

/* ---------------------------------------------------------------- value compression */

/* The values of a row built with ROWTABLE_FLAG_LZ4 (pool_set_row_compression
 * on). Pass 1 compresses each value of at least VC_MIN bytes into `out` and
 * keeps the block only if the entry's payload (varint raw length + block)
 * is at least 1/8 smaller than the value; pass 2 writes the kept blocks in the
 * same order (the two passes read the same source in the same order, so entry
 * i's block is the next one in `out`). Once VC_PROBE values have been tried,
 * a row whose values saved less than 1/8 of their bytes stops trying: values
 * that do not compress cost one probe per row, not one per value. The blocks
 * are held in DRAM between the passes (at most the values' size). */
#define VC_MIN   32
#define VC_PROBE 64

typedef struct vcomp {
    int on;           /* the row is built with ROWTABLE_FLAG_LZ4 */
    int trying;       /* values are still offered to lz4 */
    LZ4_stream_t *ls; /* reset (LZ4_resetStream_fast) before each value */
    tkv_buf out;      /* kept blocks, back to back */
    uint32_t *clen;   /* per entry: its kept block's length, 0 = stored as is */
    size_t clen_cap;  /* entries clen has room for */
    uint64_t tried, tried_bytes, saved, kept;
    uint64_t rpos; /* pass 2: the next block in out */
} vcomp;

static void vc_free(vcomp *c)
{
    if (c->ls) LZ4_freeStream(c->ls);
    buf_free(&c->out);
    free(c->clen);
    memset(c, 0, sizeof *c);
}

/* vc_field -- the value field of value v whose kept block has cl bytes
 * (0: stored as is): what pass 1 sizes (vc_value) and pass 2 writes. */
static void vc_field(const vcomp *c, tkv_slice v, uint32_t cl, uint64_t *vfield, uint64_t *payload)
{
    *payload = cl ? varint_len(v.n) + cl : v.n;
    *vfield = !c->on ? v.n : cl ? *payload << 1 | 1 : (uint64_t)v.n << 1;
}

/* vc_value -- pass 1 for entry i's value v: *vfield and *payload of its
 * value field. 0 or TKV_NO_MEMORY. */
static int vc_value(vcomp *c, uint64_t i, tkv_slice v, uint64_t *vfield, uint64_t *payload)
{
    vc_field(c, v, 0, vfield, payload);
    if (!c->on) return 0;
    if (i >= c->clen_cap) {
        size_t cap = c->clen_cap ? 2 * c->clen_cap : 4096;
        uint32_t *n = realloc(c->clen, cap * sizeof *n);
        if (!n) return TKV_NO_MEMORY;
        c->clen = n;
        c->clen_cap = cap;
    }
    c->clen[i] = 0;
    if (!c->trying || v.n < VC_MIN || v.n > LZ4_MAX_INPUT_SIZE) return 0;
    if (c->tried >= VC_PROBE && c->saved * 8 < c->tried_bytes) {
        c->trying = 0;
        return 0;
    }
    uint64_t hl = varint_len(v.n), room = v.n - v.n / 8 - hl;
    TKV_TRY(buf_reserve(&c->out, room));
    LZ4_resetStream_fast(c->ls);
    int n =
        LZ4_compress_fast_continue(c->ls, (const char *)v.p, (char *)c->out.data + c->out.len, (int)v.n, (int)room, 1);
    c->tried++;
    c->tried_bytes += v.n;
    if (n <= 0) return 0; /* saves less than 1/8 */
    c->clen[i] = (uint32_t)n;
    c->out.len += (size_t)n;
    c->saved += v.n - hl - (uint64_t)n;
    c->kept++;
    vc_field(c, v, (uint32_t)n, vfield, payload);
    return 0;
}

/* entry_place -- where an entry of esz bytes starts when the data stream is
 * at dpos: entries of at most page_size/8 bytes never cross a page end (they
 * move to the next page, the rest of this one is zero padding); larger ones
 * start at once and span pages. */
static inline uint64_t entry_place(uint64_t dpos, uint64_t esz, uint32_t ps)
{
    uint64_t room = ps - (dpos & ((uint64_t)ps - 1));
    return esz > room && esz <= ps / 8 ? dpos + room : dpos;
}

/* A writer over one stream of a row being built. Where the pool writes
 * through its file (pm_write_through: emulated pmem), each page is filled
 * in `stage`, a page-sized DRAM buffer, and written with one
 * pm_write_persist when it is finished: no page fault per 4 KiB of the
 * mapping (which took a third of the flush thread's time once the pool
 * stopped making pages ahead). Else stores go to the mapping directly. */
typedef struct pstream {
    rowtable *r;
    uint32_t base;       /* list index of the stream's page 0 */
    uint64_t begin, end; /* content range of the stream */
    uint64_t pos;
    uint32_t *crc;  /* per list index */
    uint8_t *stage; /* NULL: stores into the mapping */
} pstream;

/* ps_dst -- where the byte at stream position pos is stored now. */
static inline uint8_t *ps_dst(const pstream *s, uint64_t pos)
{
    const rowtable *r = s->r;
    return (s->stage ? s->stage : r->addr[s->base + (pos >> r->shift)]) + (pos & r->mask);
}

/* ps_finish -- step (1) for one page: persist its content range and record
 * its checksum. On a file system the page's write-back starts now
 * (pm_writeout), so that the device writes the row while the build goes on
 * and the commit's sync (pool.h invariant 8) waits for the last pages only:
 * a sync of the whole row at the commit held the flush thread for as long
 * again as the build. A staged page's content range was written whole by
 * the stream (entries and padding), so no stale byte of the stage goes out. */
static void ps_finish(pstream *s, uint32_t j)
{
    rowtable *r = s->r;
    uint64_t lo, hi;
    stream_range(s->begin, s->end, j, r->page_size, &lo, &hi);
    uint8_t *a = r->addr[s->base + j];
    const uint8_t *content = s->stage ? s->stage : a;
    s->crc[s->base + j] = tkv_checksum(content + lo, hi - lo);
    if (hi > lo && s->stage) pm_write_persist(r->reg, a + lo, s->stage + lo, hi - lo);
    else if (hi > lo) pm_persist(r->reg, a + lo, hi - lo);
    if (hi > lo && pm_needs_sync(r->reg)) pm_writeout(r->reg, a + lo, hi - lo);
}

/* ps_write -- appends len bytes, finishing each page it fills. */
static void ps_write(pstream *s, const uint8_t *src, uint64_t len)
{
    rowtable *r = s->r;
    while (len) {
        uint64_t in = s->pos & r->mask, chunk = min_u64(len, r->page_size - in);
        memcpy(ps_dst(s, s->pos), src, chunk);
        s->pos += chunk;
        src += chunk;
        len -= chunk;
        if ((s->pos & r->mask) == 0) ps_finish(s, (uint32_t)(s->pos >> r->shift) - 1);
    }
}

/* ps_pad_to -- zero padding up to `to` (at most the next page end). */
static void ps_pad_to(pstream *s, uint64_t to)
{
    rowtable *r = s->r;
    if (to == s->pos) return;
    memset(ps_dst(s, s->pos), 0, to - s->pos);
    s->pos = to;
    if ((s->pos & r->mask) == 0) ps_finish(s, (uint32_t)(s->pos >> r->shift) - 1);
}

/* ps_close -- finishes the last, partly filled page. */
static void ps_close(pstream *s)
{
    if (s->pos & s->r->mask) ps_finish(s, (uint32_t)(s->pos >> s->r->shift));
}

/* vc_write -- pass 2: the value field and the value (or its kept block, the
 * next one in c->out) into the data stream. */
static void vc_write(vcomp *c, pstream *data, tkv_slice v, uint32_t cl, uint64_t vfield)
{
    uint8_t hdr[20];
    uint8_t *h = enc_varint(hdr, vfield);
    if (cl) h = enc_varint(h, v.n);
    ps_write(data, hdr, (uint64_t)(h - hdr));
    if (cl) {
        ps_write(data, c->out.data + c->rpos, cl);
        c->rpos += cl;
    } else {
        ps_write(data, v.p, v.n);
    }
}

/* ---------------------------------------------------------------- the two passes */

/* Totals of pass 1. */
typedef struct build_totals {
    uint64_t n, data_bytes, min_seq, max_seq, deletions, key_bytes, value_bytes;
} build_totals;

/* scan_source -- pass 1: validates the source (order, sizes) and computes
 * the totals and the exact data-stream length (with padding). */
static int scan_source(pool *p, uint64_t row_id, tkv_it *src, vcomp *vc, build_totals *t)
{
    uint32_t ps = pool_page_size(p);
    tkv_buf prev = {0};
    int rc = 0;
    memset(t, 0, sizeof *t);
    t->min_seq = UINT64_MAX;
    for (it_seek_first(src); it_valid(src); it_next(src)) {
        tkv_slice k = it_key(src), v = it_value(src);
        if (k.n < IKEY_TRAILER || k.n - IKEY_TRAILER > TKV_MAX_KEY_SIZE || v.n > TKV_MAX_VALUE_SIZE) {
            rc = tkv_err(TKV_INVALID, "pool %s: row %llu: entry %llu: key of %zu or value of %zu bytes out of range",
                         pool_path(p), (unsigned long long)row_id, (unsigned long long)t->n, k.n, v.n);
            goto out;
        }
        ikey_type ty = ikey_get_type(k);
        if (ty != IKEY_VALUE && ty != IKEY_DELETION) {
            rc = tkv_err(TKV_INVALID, "pool %s: row %llu: entry %llu: unknown type %d", pool_path(p),
                         (unsigned long long)row_id, (unsigned long long)t->n, (int)ty);
            goto out;
        }
        if (t->n && ikey_cmp(slice(prev.data, prev.len), k) >= 0) {
            rc = tkv_err(TKV_INVALID, "pool %s: row %llu: entry %llu: keys not in strictly increasing order",
                         pool_path(p), (unsigned long long)row_id, (unsigned long long)t->n);
            goto out;
        }
        prev.len = 0;
        if ((rc = buf_append(&prev, k.p, k.n)) < 0) goto out;
        if (++t->n > ROWTABLE_MAX_ENTRIES) {
            rc = tkv_err(TKV_INVALID, "pool %s: row %llu: more than %u entries", pool_path(p),
                         (unsigned long long)row_id, ROWTABLE_MAX_ENTRIES);
            goto out;
        }
        uint64_t vfield, payload;
        if ((rc = vc_value(vc, t->n - 1, v, &vfield, &payload)) < 0) {
            rc = tkv_err(rc, "pool %s: row %llu: out of memory compressing values", pool_path(p),
                         (unsigned long long)row_id);
            goto out;
        }
        uint64_t seq = ikey_seq(k), esz = entry_size(k.n, vfield, payload);
        t->data_bytes = entry_place(t->data_bytes, esz, ps) + esz;
        if (seq < t->min_seq) t->min_seq = seq;
        if (seq > t->max_seq) t->max_seq = seq;
        t->deletions += ty == IKEY_DELETION;
        t->key_bytes += k.n - IKEY_TRAILER;
        t->value_bytes += v.n;
    }
    rc = it_status(src);
    if (t->n == 0) t->min_seq = 0;
out:
    buf_free(&prev);
    return rc;
}

/* write_entries -- pass 2, step (1): data and metadata entries into the
 * row's pages (persisted page by page as each fills), forward pointers by a
 * linear merge with `older` (<= n_new + n_old comparisons in all). */
static int write_entries(rowtable *r, tkv_it *src, const rowtable *older, uint32_t older_cursor, const tkv_buf *rdb,
                         vcomp *vc, uint32_t *crc, uint8_t *stage)
{
    pstream data = {r, r->nmeta, 0, r->data_bytes, 0, crc, stage};
    pstream mst = {r,
                   0,
                   r->meta_off,
                   r->meta_off + (uint64_t)r->n * ROWTABLE_META_ENTRY_SIZE,
                   r->meta_off,
                   crc,
                   stage ? stage + r->page_size : NULL};
    uint32_t oj = older ? older_cursor : 0, on = older ? older->n : 0;
    target t;
    probe pr = {older, &t, 0, 0, 0};
    uint32_t i = 0;
    tkv_slice prev_ukey = {NULL, 0};
    tkv_buf prev_buf = {0}; /* the previous user key, when it may not stay valid */
    uint8_t me[ROWTABLE_META_ENTRY_SIZE], hdr[20];
    for (it_seek_first(src); it_valid(src); it_next(src), i++) {
        tkv_slice k = it_key(src), v = it_value(src);
        uint32_t cl = vc->on && i < r->n ? vc->clen[i] : 0;
        uint64_t vfield, payload;
        vc_field(vc, v, cl, &vfield, &payload);
        uint64_t esz = entry_size(k.n, vfield, payload), start = entry_place(data.pos, esz, r->page_size);
        if (i >= r->n || start + esz > r->entries_end || k.n < IKEY_TRAILER || vc->rpos + cl > vc->out.len) {
            buf_free(&prev_buf);
            return tkv_err(TKV_INVALID, "pool %s: row %llu: the source changed between the two build passes",
                           pool_path(r->pl), (unsigned long long)r->row_id);
        }
        tkv_slice uk = ikey_user(k);
        if (i == 0 || ukey_cmp(uk, prev_ukey) != 0) { /* one filter entry per user key */
            rt_filter_add(r, rowtable_key_hash(uk));
            prev_buf.len = 0;
            if (buf_append(&prev_buf, uk.p, uk.n) < 0) return tkv_err(TKV_NO_MEMORY, "out of memory building a row");
            prev_ukey = slice(prev_buf.data, prev_buf.len);
        }
        /* forward pointer: advance through the older row to entry i's lower bound */
        uint32_t fwd = ROWTABLE_NO_FWD;
        if (older) {
            target_init(&t, ikey_user(k), ikey_trailer(k));
            int ueq;
            while (oj < on && rt_cmp_at(&pr, oj, &ueq) < 0) oj++;
            if (pr.err) {
                buf_free(&prev_buf);
                return pr.err;
            }
            fwd = oj;
        }
        ps_pad_to(&data, start);
        uint8_t *h = enc_varint(hdr, k.n);
        ps_write(&data, hdr, (uint64_t)(h - hdr));
        ps_write(&data, k.p, k.n);
        vc_write(vc, &data, v, cl, vfield);

        memset(me, 0, sizeof me);
        size_t ukn = k.n - IKEY_TRAILER;
        memcpy(me + ME_PREFIX, k.p, ukn < 8 ? ukn : 8);
        enc_u64(me + ME_TRAILER, ikey_trailer(k));
        enc_u64(me + ME_DATA_OFF, start);
        enc_u32(me + ME_FWD, fwd);
        enc_u32(me + ME_KLEN, (uint32_t)ukn);
        ps_write(&mst, me, sizeof me);
    }
    buf_free(&prev_buf);
    TKV_TRY(it_status(src));
    if (rdb->len && data.pos == r->entries_end) ps_write(&data, rdb->data, rdb->len); /* the range tombstones */
    if (i != r->n || data.pos != r->data_bytes)
        return tkv_err(TKV_INVALID, "pool %s: row %llu: the source changed between the two build passes",
                       pool_path(r->pl), (unsigned long long)r->row_id);
    ps_close(&data);
    ps_close(&mst);
    return 0;
}

/* ---------------------------------------------------------------- build, commit, abandon */

/* encode_body -- the RowTable body of the row header (format version
 * r->version; rdb: the range tombstone block of version 2). */
static void encode_body(const rowtable *r, const uint32_t *crc, const tkv_buf *rdb, uint8_t *b)
{
    enc_u32(b + RB_VERSION, r->version | (r->lz4 ? ROWTABLE_FLAG_LZ4 : 0));
    enc_u32(b + RB_META_ESIZE, ROWTABLE_META_ENTRY_SIZE);
    enc_u64(b + RB_N, r->n);
    enc_u64(b + RB_MIN_SEQ, r->min_seq);
    enc_u64(b + RB_MAX_SEQ, r->max_seq);
    enc_u64(b + RB_DELETIONS, r->deletions);
    enc_u64(b + RB_DATA_BYTES, r->data_bytes);
    enc_u64(b + RB_META_OFF, r->meta_off);
    enc_u32(b + RB_NMETA, r->nmeta);
    enc_u32(b + RB_NDATA, r->ndata);
    enc_u64(b + RB_OLDER_ID, r->older_id);
    enc_u64(b + RB_OLDER_N, r->older_n);
    enc_u64(b + RB_KEY_BYTES, r->key_bytes);
    enc_u64(b + RB_VALUE_BYTES, r->value_bytes);
    if (r->version > 1) {
        enc_u64(b + RB_RD_OFF, r->rd_off);
        enc_u64(b + RB_RD_LEN, r->rd_len);
        enc_u64(b + RB_RD_COUNT, r->rd.n);
        enc_u32(b + RB_RD_CRC, tkv_checksum(rdb->data, rdb->len));
    }
    for (uint32_t j = 0; j < r->npages; j++) enc_u32(b + rb_page_crc(r->version) + 4 * (size_t)j, crc[j]);
}

/* layout -- page counts and meta_off for n entries and data_bytes of data:
 * the header (whose size grows with the page count) and the metadata share
 * the meta stream, so iterate to the fixed point (page counts only grow). */
static void layout(uint64_t n, uint64_t data_bytes, uint32_t fixed, uint32_t ps, uint64_t *npages, uint64_t *nmeta,
                   uint64_t *ndata, uint64_t *meta_off)
{
    *ndata = (data_bytes + ps - 1) / ps;
    uint64_t np = *ndata + 1;
    for (;;) {
        uint64_t area =
            pool_row_header_area((uint32_t)min_u64(fixed + 4 * np, UINT32_MAX), (uint32_t)min_u64(np, UINT32_MAX));
        *meta_off = round_up(area, META_ALIGN);
        *nmeta = (*meta_off + n * ROWTABLE_META_ENTRY_SIZE + ps - 1) / ps;
        if (*nmeta + *ndata <= np) break;
        np = *nmeta + *ndata;
    }
    *npages = np;
}

/*
 * rowtable_build -- persist order (a crash anywhere before step 3 leaves no
 * row, and its pages are free at the next open by pool.h invariant 2):
 *   (1) every data page and every metadata range is written and persisted
 *       (per page as it fills, in write_entries: pm_write_persist of the
 *       staged page, or pm_persist of the mapping's);
 *   (2) the row header -- fields, page list, page checksums, header checksum,
 *       zeroed release bitmap -- is written and persisted (one
 *       pm_memcpy_persist, pool_row_write_header);
 *   (3) the caller commits the directory slot (rowtable_commit): the 8-byte
 *       persisted store that makes the row exist.
 */
int rowtable_build(pool *p, uint64_t row_id, tkv_it *src, const rowtable *older, rowtable **out)
{
    return rowtable_build_rd(p, row_id, src, NULL, older, older ? cursor_load(older) : 0, out);
}

int rowtable_build_at(pool *p, uint64_t row_id, tkv_it *src, const rowtable *older, uint32_t older_cursor,
                      rowtable **out)
{
    return rowtable_build_rd(p, row_id, src, NULL, older, older_cursor, out);
}

/* add_range_dels -- format version 2 when rd has tombstones: they go into
 * the handle (sorted, with their fragments) and, encoded, into *rdb; they
 * widen the totals' sequence range. 0, TKV_INVALID, TKV_NO_MEMORY. */
static int add_range_dels(rowtable *r, const rd_list *rd, build_totals *tot, tkv_buf *rdb)
{
    r->version = ROWTABLE_FORMAT_VERSION;
    if (!rd || rd->n == 0) return 0;
    for (size_t i = 0; i < rd->n; i++) {
        const rd_tomb *t = &rd->t[i];
        if (t->begin.n == 0 || t->begin.n > RD_MAX_KEY || t->end.n == 0 || t->end.n > RD_MAX_KEY ||
            ukey_cmp(t->begin, t->end) >= 0 || t->seq == 0 || t->seq > IKEY_MAX_SEQ)
            return tkv_err(TKV_INVALID, "pool %s: row %llu: malformed range tombstone", pool_path(r->pl),
                           (unsigned long long)r->row_id);
        if (tot->n == 0 && i == 0) tot->min_seq = tot->max_seq = t->seq;
        if (t->seq < tot->min_seq) tot->min_seq = t->seq;
        if (t->seq > tot->max_seq) tot->max_seq = t->seq;
    }
    TKV_TRY(rd_list_append(&r->rd, rd->t, rd->n));
    rd_list_sort(&r->rd);
    TKV_TRY(rd_encode(r->rd.t, r->rd.n, rdb));
    if (!(r->rd_frags = rd_frags_new(r->rd.t, r->rd.n, UINT64_MAX))) return TKV_NO_MEMORY;
    r->version = ROWTABLE_FORMAT_VERSION_RD;
    r->rd_off = tot->data_bytes;
    r->rd_len = rdb->len;
    return 0;
}

/* prepare_range_dels -- *tmp, a handle holding rd's tombstones (format
 * version 2 when there are some: add_range_dels) before the row's layout,
 * which they size, is known; *rdb their encoded block. */
static int prepare_range_dels(pool *p, uint64_t row_id, const rd_list *rd, build_totals *tot, rowtable **tmp,
                              tkv_buf *rdb)
{
    rowtable *t = rt_alloc(p, 1);
    int rc = t ? 0 : tkv_err(TKV_NO_MEMORY, "pool %s: out of memory building a row", pool_path(p));
    if (t) t->row_id = row_id;
    if (rc == 0) rc = add_range_dels(t, rd, tot, rdb);
    if (rc < 0) {
        rowtable_close(t);
        buf_free(rdb);
        return rc;
    }
    *tmp = t;
    return 0;
}

/* build_prepare -- pass 1 with the pool's row compression (*vc), then the
 * range tombstones (*tmp, *rdb); on an error nothing is left held. */
static int build_prepare(pool *p, uint64_t row_id, tkv_it *src, const rd_list *rd, vcomp *vc, build_totals *tot,
                         rowtable **tmp, tkv_buf *rdb)
{
    if (pool_row_compression(p)) {
        vc->on = vc->trying = 1;
        if (!(vc->ls = LZ4_createStream()))
            return tkv_err(TKV_NO_MEMORY, "pool %s: row %llu: out of memory building the row", pool_path(p),
                           (unsigned long long)row_id);
    }
    int rc = scan_source(p, row_id, src, vc, tot);
    if (rc == 0) rc = prepare_range_dels(p, row_id, rd, tot, tmp, rdb);
    if (rc < 0) vc_free(vc);
    return rc;
}

/* set_fields -- the handle's fields of a row being built. */
static void set_fields(rowtable *r, uint64_t row_id, const build_totals *tot, size_t rd_len, uint64_t meta_off,
                       uint64_t nmeta, uint64_t ndata, const rowtable *older)
{
    r->row_id = row_id;
    r->n = (uint32_t)tot->n;
    r->min_seq = tot->min_seq;
    r->max_seq = tot->max_seq;
    r->deletions = tot->deletions;
    r->key_bytes = tot->key_bytes;
    r->value_bytes = tot->value_bytes;
    r->entries_end = tot->data_bytes;
    r->data_bytes = tot->data_bytes + rd_len;
    r->meta_off = meta_off;
    r->nmeta = (uint32_t)nmeta;
    r->ndata = (uint32_t)ndata;
    r->older_id = older ? older->row_id : 0;
    r->older_n = older ? older->n : 0;
}

/* rowtable_build_rd -- the build itself: pass 1, layout, page allocation,
 * steps (1) and (2); on any error every page allocated is freed. */
int rowtable_build_rd(pool *p, uint64_t row_id, tkv_it *src, const rd_list *rd, const rowtable *older,
                      uint32_t older_cursor, rowtable **out)
{
    *out = NULL;
    if (!p || !src || row_id == 0) return tkv_err(TKV_INVALID, "rowtable_build: NULL pool/source or row id 0");
    if (older && older->pl != p)
        return tkv_err(TKV_INVALID, "pool %s: row %llu: the older row belongs to another pool", pool_path(p),
                       (unsigned long long)row_id);
    if (older) { /* never read below what the older row's released pages allow */
        uint32_t floor = cursor_load(older);
        if (older_cursor < floor) older_cursor = floor;
        if (older_cursor > older->n) older_cursor = older->n;
    }
    build_totals tot = {0};
    vcomp vc = {0};
    rowtable *tmp = NULL;
    tkv_buf rdb = {0};
    TKV_TRY(build_prepare(p, row_id, src, rd, &vc, &tot, &tmp, &rdb));
    uint32_t ps = pool_page_size(p), fixed = rb_fixed(tmp->version);
    uint64_t npages, nmeta, ndata, meta_off;
    layout(tot.n, tot.data_bytes + rdb.len, fixed, ps, &npages, &nmeta, &ndata, &meta_off);
    if (npages > pool_page_count(p) || pool_row_header_area((uint32_t)(fixed + 4 * npages), (uint32_t)npages) > ps) {
        rowtable_close(tmp);
        buf_free(&rdb);
        vc_free(&vc);
        return tkv_err(TKV_NO_SPACE, "pool %s: row %llu needs %llu pages of %u bytes, the pool has %u", pool_path(p),
                       (unsigned long long)row_id, (unsigned long long)npages, ps, pool_page_count(p));
    }
    rowtable *r = rt_alloc(p, (uint32_t)npages);
    uint32_t *crc = calloc(npages, sizeof *crc);
    uint8_t *body = calloc(1, fixed + 4 * npages);
    /* one page of each stream, where pages are written through the file */
    uint8_t *stage = pm_write_through(pool_region(p)) ? malloc(2 * (size_t)ps) : NULL;
    int allocated = 0, rc = TKV_NO_MEMORY;
    if (!r || !crc || !body || (!stage && pm_write_through(pool_region(p)))) {
        rowtable_close(tmp);
        tkv_err(rc, "pool %s: row %llu: out of memory building the row", pool_path(p), (unsigned long long)row_id);
        goto fail;
    }
    rt_take_range_dels(r, tmp); /* frees tmp */
    set_fields(r, row_id, &tot, rdb.len, meta_off, nmeta, ndata, older);
    r->lz4 = (uint8_t)vc.on;
    r->lz4_values = vc.kept;
    rc = rt_filter_alloc(r, tot.n);
    if (rc < 0) goto fail;
    rc = pool_alloc_pages(p, r->npages, r->pages);
    if (rc < 0) goto fail;
    allocated = 1;
    for (uint32_t j = 0; j < r->npages; j++) {
        r->addr[j] = pool_page_addr(p, r->pages[j]);
        crc[j] = tkv_checksum("", 0); /* pages left with no content (e.g. no metadata in page 0) */
    }
    rc = write_entries(r, src, older, older_cursor, &rdb, &vc, crc, stage); /* step (1) */
    if (rc < 0) goto fail;
    encode_body(r, crc, &rdb, body);
    rc = pool_row_write_header(p, row_id, POOL_ROW_KIND_ROWTABLE, body, (uint32_t)(fixed + 4 * npages), r->pages,
                               r->npages); /* step (2) */
    if (rc < 0) goto fail;
    free(crc);
    free(body);
    free(stage);
    buf_free(&rdb);
    vc_free(&vc);
    *out = r;
    return 0;
fail:
    if (allocated)
        for (uint32_t j = 0; j < r->npages; j++) pool_free_page(p, r->pages[j]);
    rowtable_close(r);
    free(crc);
    free(body);
    free(stage);
    buf_free(&rdb);
    vc_free(&vc);
    return rc;
}

/* rowtable_commit -- step (3): the row's directory slot. */
int rowtable_commit(rowtable *r)
{
    if (r->slot != UINT32_MAX)
        return tkv_err(TKV_INVALID, "pool %s: row %llu is already committed", pool_path(r->pl),
                       (unsigned long long)r->row_id);
    uint32_t slot;
    TKV_TRY(pool_commit_row(r->pl, r->pages[0], r->row_id, &slot)); /* step (3) */
    r->slot = slot;
    return 0;
}

/* rowtable_queue_writeback -- every page not released, to the paced write-back. */
void rowtable_queue_writeback(const rowtable *r)
{
    for (uint32_t j = 0; j < r->npages; j++)
        if (!r->released[j]) pm_writeback_enqueue(r->reg, r->addr[j], r->page_size);
}

/* rowtable_writeout_header -- the header area of page 0 ([0, meta_off)),
 * written back now (pm_writeout), for the commit's sync (pool.h invariant 8). */
void rowtable_writeout_header(const rowtable *r) { pm_writeout(r->reg, r->addr[0], r->meta_off); }

/* rowtable_abandon -- frees an uncommitted row's pages, then the handle (of
 * a committed row, only the handle). */
void rowtable_abandon(rowtable *r)
{
    if (!r) return;
    if (r->slot == UINT32_MAX)
        for (uint32_t j = 0; j < r->npages; j++) pool_free_page(r->pl, r->pages[j]);
    rowtable_close(r);
}
