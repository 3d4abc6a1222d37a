// SPDX-License-Identifier: Apache-2.0
/*
 * rowtable_int.h -- private to the RowTable files (src/matrix/rowtable_*.c;
 * never included anywhere else, the interface is rowtable.h): the byte layout
 * of a row inside its pages (byte layout also in docs/format-matrix.md
 * section 5), the DRAM handle (struct rowtable), the inline accessors that
 * read a row, and the rt_* helpers one file defines for the others.
 *
 * A row's pages, in page-list order, form two streams:
 *   meta stream  = list pages [0, nmeta): row header at offset 0 of page 0
 *                  (pool.h), then the metadata array from meta_off (64-aligned)
 *                  -- one 32-byte entry per key, never across a page end;
 *   data stream  = list pages [nmeta, npages): entries back to back from
 *                  offset 0, `varint ikey_len | ikey | varint vlen | value`
 *                  (with ROWTABLE_FLAG_LZ4, `varint vfield | payload`
 *                  instead of the value: vfield = payload length << 1 | c;
 *                  c = 0: the value; c = 1: `varint raw_len | lz4 block`);
 *                  an entry of at most page_size/8 bytes that does not fit in
 *                  the rest of a page starts on the next page (zero padding),
 *                  so only large entries cross page ends; in format version 2
 *                  the range tombstone block follows the entries (at rd_off,
 *                  rd_len bytes, util/rangedel.h's encoding), and its pages
 *                  are never released while the row lives.
 * Page j of a stream covering [begin, end) has the content range
 * [max(begin, j*ps), min(end, (j+1)*ps)); its checksum (in the header body)
 * covers exactly that range.
 *
 * Invariants:
 *  (1) entries are in strictly increasing ikey_cmp order; their data offsets
 *      strictly increase with the index;
 *  (2) fwd[i] = first index j >= c_old of the older row with
 *      older[j] >= entry[i] (c_old: the older row's cursor at build time), so
 *      fwd is non-decreasing and, for any target T with
 *      entry[i-1] < T <= entry[i], lower_bound_older(T) lies in
 *      [fwd[i-1], fwd[i]] (clamped up by the older row's cursor);
 *  (3) every byte a reader derives from media is bounds-checked against the
 *      row's own geometry before use (checksums are verified once, at open).
 * Who keeps them: (1) and (2) the builder (scan_source and write_entries in
 * rowtable_build.c); on open, verify_meta (rowtable_open.c) checks what the
 * metadata alone shows of them (offsets increase, prefixes and forward
 * pointers do not decrease). The hinted lookups of rowtable_read.c rest on
 * (2). (3): every reader, through rt_entry_decode and rt_cmp_at
 * (rowtable_media.c), and the open-time checks of rowtable_open.c. The
 * released pages of a row form a prefix of each stream: rowtable_drain.c
 * keeps that (rowtable_dead_pages) and checks it (rt_check_released).
 *
 * Which file holds what: rowtable.h's header comment.
 */
#ifndef TKV_MATRIX_ROWTABLE_INT_H
#define TKV_MATRIX_ROWTABLE_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "matrix/pool.h"
#include "matrix/rowtable.h"
#include "util/ikey.h"
#include "util/coding.h"
#include "util/rangedel.h"

/* ---------------------------------------------------------------- layout constants */

/* RowTable body (inside the pool row header, after its 32-byte root). */
#define RB_VERSION     0  /* u32 ROWTABLE_FORMAT_VERSION */
#define RB_META_ESIZE  4  /* u32 ROWTABLE_META_ENTRY_SIZE */
#define RB_N           8  /* u64 entries */
#define RB_MIN_SEQ     16 /* u64 */
#define RB_MAX_SEQ     24 /* u64 */
#define RB_DELETIONS   32 /* u64 */
#define RB_DATA_BYTES  40 /* u64 data stream length */
#define RB_META_OFF    48 /* u64 offset of metadata entry 0 in the meta stream */
#define RB_NMETA       56 /* u32 meta-stream pages */
#define RB_NDATA       60 /* u32 data-stream pages */
#define RB_OLDER_ID    64 /* u64 row the forward pointers point into (0: none) */
#define RB_OLDER_N     72 /* u64 that row's entry count */
#define RB_KEY_BYTES   80 /* u64 */
#define RB_VALUE_BYTES 88 /* u64 */
#define RB_PAGE_CRC    96 /* version 1: u32[npages] content checksum per listed page */
#define RB_FIXED       96
/* Version 2 (a row with range tombstones) has four more fields there, and
 * the page checksums after them: */
#define RB_RD_OFF      96  /* u64 data-stream offset of the range tombstone block (= end of the entries) */
#define RB_RD_LEN      104 /* u64 its length: data_bytes = rd_off + rd_len */
#define RB_RD_COUNT    112 /* u64 tombstones in it (> 0) */
#define RB_RD_CRC      120 /* u32 tkv_checksum of the block */
#define RB_PAGE_CRC_V2 128 /* u32[npages], after a reserved u32 at 124 */
#define RB_FIXED_V2    128

/* rb_fixed / rb_page_crc -- the body's fixed part and where its page
 * checksums start, in format version v (1 or 2). */
static inline uint32_t rb_fixed(uint32_t v) { return v == 1 ? RB_FIXED : RB_FIXED_V2; }
static inline uint32_t rb_page_crc(uint32_t v) { return v == 1 ? RB_PAGE_CRC : RB_PAGE_CRC_V2; }

/* Metadata entry (32 bytes). */
#define ME_PREFIX   0  /* 8 bytes: user key's first min(8, klen) bytes, zero padded (big-endian comparable) */
#define ME_TRAILER  8  /* u64 seq << 8 | type */
#define ME_DATA_OFF 16 /* u64 entry offset in the data stream */
#define ME_FWD      24 /* u32 forward pointer */
#define ME_KLEN     28 /* u32 user key length */

#define META_ALIGN 64 /* meta_off alignment: a cache line, so step (2) never rewrites metadata lines */

/* ---------------------------------------------------------------- the handle */

struct rowtable {
    pool *pl;
    pm_region *reg;
    uint64_t row_id, older_id, older_n;
    uint32_t slot; /* UINT32_MAX while uncommitted */
    uint32_t n;
    uint64_t min_seq, max_seq, deletions, key_bytes, value_bytes;
    uint64_t data_bytes, meta_off;
    uint32_t npages, nmeta, ndata;
    uint32_t page_size, shift;
    uint64_t mask;
    uint32_t *pages;   /* pool page index per list index */
    uint8_t **addr;    /* mapped address per list index */
    uint8_t *released; /* 1 = given back to the pool (mirror of the release bitmap) */
    uint32_t cursor;   /* drain cursor (atomic) */
    uint32_t min_cursor;
    uint64_t *filter; /* DRAM key filter (FILTER_* in rowtable_handle.c): filter_blocks blocks of 512 bits */
    uint32_t filter_blocks;
    uint32_t version;     /* 1, or 2 with range tombstones (the version word without ROWTABLE_FLAG_LZ4) */
    uint8_t lz4;          /* ROWTABLE_FLAG_LZ4: value fields say whether a value is an lz4 block */
    uint64_t lz4_values;  /* values the build stored as lz4 blocks (not on media) */
    uint64_t entries_end; /* where the entries end in the data stream: data_bytes (v1), rd_off (v2) */
    uint64_t rd_off, rd_len;
    rd_list rd;         /* the range tombstones (v2), in DRAM from build or open */
    rd_frags *rd_frags; /* and their fragments (NULL without) */
};

/* RT_PRIVATE -- marks the rt_* functions, shared by the rowtable_*.c files
 * and nothing else: hidden, so libtierkv.so does not export them and calls
 * to them stay direct (and inlinable inside their own file). */
#define RT_PRIVATE __attribute__((visibility("hidden")))

/* rt_alloc -- a zeroed handle for a row of npages pages of pool p (page
 * arrays allocated, nothing read or allocated in the pool); NULL on out of
 * memory. (rowtable_handle.c) */
RT_PRIVATE rowtable *rt_alloc(pool *p, uint32_t npages);
/* rt_take_range_dels -- moves from's format version and range tombstones
 * into r and closes from (the builder sizes a row with them before it has
 * its handle). (rowtable_handle.c) */
RT_PRIVATE void rt_take_range_dels(rowtable *r, rowtable *from);
/* rt_corrupt -- TKV_CORRUPTION naming the pool file, row and slot.
 * (rowtable_media.c) */
RT_PRIVATE __attribute__((format(printf, 2, 3))) int rt_corrupt(const rowtable *r, const char *fmt, ...);

/* ---------------------------------------------------------------- small helpers */

/* round_up / min_u64 / max_u64 -- arithmetic on sizes and offsets. */
static inline uint64_t round_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }
static inline uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static inline uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* be64 -- the big-endian u64 at p (a metadata key prefix). */
static inline uint64_t be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | p[i];
    return v;
}

/* cursor_load -- the row's drain cursor (acquire; rowtable_set_cursor stores it). */
static inline uint32_t cursor_load(const rowtable *r) { return __atomic_load_n(&r->cursor, __ATOMIC_ACQUIRE); }

/* live_from -- the first live entry for a reader whose view has `cursor`:
 * never below the row's own cursor (the floor of what its released pages
 * allow), never past the end. */
static inline uint32_t live_from(const rowtable *r, uint32_t cursor)
{
    uint32_t floor = cursor_load(r);
    if (cursor < floor) cursor = floor;
    return cursor < r->n ? cursor : r->n;
}

/* stream_range -- the content range [*lo, *hi) (offsets within the page) of
 * page j of a stream covering [begin, end). */
static inline void stream_range(uint64_t begin, uint64_t end, uint32_t j, uint32_t ps, uint64_t *lo, uint64_t *hi)
{
    uint64_t ps0 = (uint64_t)j * ps, a = max_u64(begin, ps0), b = min_u64(end, ps0 + ps);
    *lo = a - ps0;
    *hi = b > a ? b - ps0 : a - ps0;
}

/* ---------------------------------------------------------------- media access (rowtable_media.c) */

/* A metadata entry, decoded. */
typedef struct meta {
    uint64_t prefix, trailer, data_off;
    uint32_t fwd, klen;
} meta;

/* meta_ptr -- the bytes of metadata entry i in the meta stream (entries never
 * cross a page end). */
static inline const uint8_t *meta_ptr(const rowtable *r, uint32_t i)
{
    uint64_t off = r->meta_off + (uint64_t)i * ROWTABLE_META_ENTRY_SIZE;
    return r->addr[off >> r->shift] + (off & r->mask);
}

/* meta_load -- decodes metadata entry i (no check: callers check the fields). */
static inline void meta_load(const rowtable *r, uint32_t i, meta *m)
{
    const uint8_t *p = meta_ptr(r, i);
    m->prefix = be64(p + ME_PREFIX);
    m->trailer = dec_u64(p + ME_TRAILER);
    m->data_off = dec_u64(p + ME_DATA_OFF);
    m->fwd = dec_u32(p + ME_FWD);
    m->klen = dec_u32(p + ME_KLEN);
}

/* data_ptr -- [off, off+len) of the data stream if it lies in one page, else
 * NULL. The caller has checked off + len <= data_bytes. */
static inline const uint8_t *data_ptr(const rowtable *r, uint64_t off, uint64_t len)
{
    static const uint8_t empty[1];
    if (len == 0) return empty;
    uint64_t in = off & r->mask;
    if (in + len > r->page_size) return NULL;
    return r->addr[r->nmeta + (off >> r->shift)] + in;
}

/* rt_data_copy -- copies [off, off+len) of the data stream, across page ends. */
RT_PRIVATE void rt_data_copy(const rowtable *r, uint64_t off, uint8_t *dst, uint64_t len);
/* rt_data_cmp -- memcmp of [off, off+n) of the data stream against b. */
RT_PRIVATE int rt_data_cmp(const rowtable *r, uint64_t off, const uint8_t *b, uint64_t n);

/* Where entry i's internal key and value lie in the data stream. */
typedef struct ent_loc {
    uint64_t key_off, key_len; /* internal key */
    uint64_t val_off, val_len; /* the value as stored: the lz4 block of a compressed one */
    uint64_t raw_len;          /* the value's length (= val_len unless lz4) */
    int lz4;
} ent_loc;

/* rt_entry_decode -- locates entry i from its metadata and the data stream,
 * checking every length against the stream and the metadata's key length and
 * trailer. 0 or TKV_CORRUPTION. */
RT_PRIVATE int rt_entry_decode(const rowtable *r, uint32_t i, const meta *m, ent_loc *e);
/* rt_value -- entry i's value (located by rt_entry_decode): in place where it
 * is stored whole in one page, else gathered or decompressed into *buf (its
 * contents replaced). An lz4 block that does not decompress to exactly
 * raw_len bytes is TKV_CORRUPTION. 0, TKV_CORRUPTION or TKV_NO_MEMORY. */
RT_PRIVATE int rt_value(const rowtable *r, uint32_t i, const ent_loc *e, tkv_buf *buf, tkv_slice *v);

/* ---------------------------------------------------------------- comparisons (rowtable_media.c) */

/* A lookup target: user key + trailer (seq << 8 | type), with the 8-byte
 * big-endian prefix the metadata stores. */
typedef struct target {
    const uint8_t *uk;
    size_t un;
    uint64_t trailer, prefix;
} target;

/* target_init -- the target (ukey, trailer), with its metadata prefix. */
static inline void target_init(target *t, tkv_slice ukey, uint64_t trailer)
{
    uint8_t b[8] = {0};
    if (ukey.n) memcpy(b, ukey.p, ukey.n < 8 ? ukey.n : 8);
    t->uk = ukey.p;
    t->un = ukey.n;
    t->trailer = trailer;
    t->prefix = be64(b);
}

/* One search's state: the counters and the first error. */
typedef struct probe {
    const rowtable *r;
    const target *t;
    uint64_t ncmp, nprobe;
    int err;
} probe;

/* rt_cmp_at -- compares entry i with the target in ikey_cmp order (< 0:
 * entry is smaller); *ueq = 1 if their user keys are equal. On a malformed
 * entry sets pr->err and returns 1. */
RT_PRIVATE int rt_cmp_at(probe *pr, uint32_t i, int *ueq);
/* rt_lower_bound -- first index in [lo, hi) whose entry is >= the target,
 * else hi; *hi_ueq: whether the answer holds the target user key (when it
 * was compared). */
RT_PRIVATE uint32_t rt_lower_bound(probe *pr, uint32_t lo, uint32_t hi, int *hi_ueq);

/* ---------------------------------------------------------------- hinted lookups (rowtable_read.c) */

/* rt_search_hint -- the lower bound of the target inside window h of the
 * row, clamped to the live entries [c, n), with the edges it rests on
 * verified (entry pos-1 < target unless pos == c, entry pos >= target unless
 * pos == n). 1 with *pos and *hi_ueq (as rt_lower_bound's) if they hold; 0
 * if the window was wrong (the caller searches the whole row). */
RT_PRIVATE int rt_search_hint(probe *pr, const row_hint *h, uint32_t c, uint32_t n, uint32_t *pos, int *hi_ueq);
/* rt_older_hint -- the window for the next-older row around lower bound pos
 * of this row (live entries from c): the forward pointers of entries pos-1
 * and pos (0 and "the end" past the live entries); zeroed for a row built
 * without an older row. */
RT_PRIVATE void rt_older_hint(const rowtable *r, uint32_t c, uint32_t pos, row_hint *out);

/* ---------------------------------------------------------------- seeks over rows (rowtable_seek.c, rowtable_iter.c) */

/* The seek plan shared by the iterators of rowtable_iters_at. */
typedef struct row_seek row_seek;

/* rt_seek_row -- the lower bound (*pos) of internal key tk (at least
 * IKEY_TRAILER bytes) in row i of plan s, and the first live entry (*lo) it
 * was searched from; with hints, inside the window the plan's answer in row
 * i-1 gives when the rows are sought in order. 0 or TKV_CORRUPTION. */
RT_PRIVATE int rt_seek_row(row_seek *s, size_t i, tkv_slice tk, uint32_t *lo, uint32_t *pos);
/* rt_seek_unref -- drops an iterator's reference to the plan; the last frees it. */
RT_PRIVATE void rt_seek_unref(row_seek *s);
/* rt_iter_new -- an unpositioned iterator over entries [max(from, row
 * cursor), min(to, n)) of r; with plan s (may be NULL), row i of it, whose
 * seeks go through rt_seek_row and which drops its reference to s when
 * destroyed. NULL (message set) on out of memory. */
RT_PRIVATE tkv_it *rt_iter_new(const rowtable *r, uint32_t from, uint32_t to, row_seek *s, size_t i);

/* ---------------------------------------------------------------- key filter (rowtable_handle.c) */

/* rt_filter_alloc -- an empty key filter sized for n keys. 0 or TKV_NO_MEMORY. */
RT_PRIVATE int rt_filter_alloc(rowtable *r, uint64_t n);
/* rt_filter_add -- adds the user key with hash h (rowtable_key_hash). */
RT_PRIVATE void rt_filter_add(rowtable *r, uint64_t h);

/* ---------------------------------------------------------------- released pages (rowtable_drain.c) */

/* rt_check_released -- checks that the released pages are a prefix of each
 * stream and sets min_cursor from them. 0 or TKV_CORRUPTION. */
RT_PRIVATE int rt_check_released(rowtable *r);

#endif
