/*
 * rowtable.c -- RowTables: build (two passes over a sorted source), commit,
 * open/verify, hinted point lookups, iterators, drain cursor and page release
 * (interface: rowtable.h; byte layout: docs/format-matrix.md section 5).
 *
 * A row's pages, in page-list order, form two streams:
 *   meta stream  = list pages [0, nmeta): row header at offset 0 of page 0
 *                  (pool.h), then the metadata array from meta_off (64-aligned)
 *                  -- one 32-byte entry per key, never across a page end;
 *   data stream  = list pages [nmeta, npages): entries back to back from
 *                  offset 0, `varint ikey_len | ikey | varint vlen | value`;
 *                  an entry of at most page_size/8 bytes that does not fit in
 *                  the rest of a page starts on the next page (zero padding),
 *                  so only large entries cross page ends.
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
 */
#include "matrix/rowtable.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tierkv.h"
#include "util/checksum.h"
#include "util/status.h"

/* ---------------------------------------------------------------- layout constants */

/* RowTable body (inside the pool row header, after its 32-byte root). */
#define RB_VERSION 0      /* u32 ROWTABLE_FORMAT_VERSION */
#define RB_META_ESIZE 4   /* u32 ROWTABLE_META_ENTRY_SIZE */
#define RB_N 8            /* u64 entries */
#define RB_MIN_SEQ 16     /* u64 */
#define RB_MAX_SEQ 24     /* u64 */
#define RB_DELETIONS 32   /* u64 */
#define RB_DATA_BYTES 40  /* u64 data stream length */
#define RB_META_OFF 48    /* u64 offset of metadata entry 0 in the meta stream */
#define RB_NMETA 56       /* u32 meta-stream pages */
#define RB_NDATA 60       /* u32 data-stream pages */
#define RB_OLDER_ID 64    /* u64 row the forward pointers point into (0: none) */
#define RB_OLDER_N 72     /* u64 that row's entry count */
#define RB_KEY_BYTES 80   /* u64 */
#define RB_VALUE_BYTES 88 /* u64 */
#define RB_PAGE_CRC 96    /* u32[npages] content checksum per listed page */
#define RB_FIXED 96

/* Metadata entry (32 bytes). */
#define ME_PREFIX 0    /* 8 bytes: user key's first min(8, klen) bytes, zero padded (big-endian comparable) */
#define ME_TRAILER 8   /* u64 seq << 8 | type */
#define ME_DATA_OFF 16 /* u64 entry offset in the data stream */
#define ME_FWD 24      /* u32 forward pointer */
#define ME_KLEN 28     /* u32 user key length */

#define META_ALIGN 64  /* meta_off alignment: a cache line, so step (2) never rewrites metadata lines */

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
    uint64_t *filter;  /* DRAM key filter (FILTER_* below): filter_blocks blocks of 512 bits */
    uint32_t filter_blocks;
};

/* The key filter: a cache-line-blocked bloom filter over the row's user
 * keys, kept in DRAM only (built by the builder and again by rowtable_open;
 * nothing on media). FILTER_BITS_PER_KEY bits per entry, FILTER_PROBES bits
 * set per key inside one 64-byte block, so a lookup costs one cache miss per
 * row -- ~1.2 % false positives. The block comes from the hash's high 32
 * bits, the bits from a multiplicative remix of it, 9 bits each. */
#define FILTER_BITS_PER_KEY 10u
#define FILTER_PROBES 6u
#define FILTER_BLOCK_WORDS 8u

static inline uint64_t round_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }
static inline uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static inline uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

static inline uint64_t be64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | p[i];
    return v;
}

static inline uint32_t cursor_load(const rowtable *r) { return __atomic_load_n(&r->cursor, __ATOMIC_ACQUIRE); }

/* rt_corrupt -- TKV_CORRUPTION naming the pool file, row and slot. */
__attribute__((format(printf, 2, 3))) static int rt_corrupt(const rowtable *r, const char *fmt, ...)
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

typedef struct meta {
    uint64_t prefix, trailer, data_off;
    uint32_t fwd, klen;
} meta;

static inline const uint8_t *meta_ptr(const rowtable *r, uint32_t i)
{
    uint64_t off = r->meta_off + (uint64_t)i * ROWTABLE_META_ENTRY_SIZE;
    return r->addr[off >> r->shift] + (off & r->mask);
}

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

/* data_copy -- copies [off, off+len) of the data stream, across page ends. */
static void data_copy(const rowtable *r, uint64_t off, uint8_t *dst, uint64_t len)
{
    while (len) {
        uint64_t in = off & r->mask, chunk = min_u64(len, r->page_size - in);
        memcpy(dst, r->addr[r->nmeta + (off >> r->shift)] + in, chunk);
        dst += chunk;
        off += chunk;
        len -= chunk;
    }
}

/* data_cmp -- memcmp of [off, off+n) of the data stream against b. */
static int data_cmp(const rowtable *r, uint64_t off, const uint8_t *b, uint64_t n)
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

/* read_varint -- the varint at data offset off (< data_bytes). */
static int read_varint(const rowtable *r, uint64_t off, uint64_t *v, uint64_t *len)
{
    uint8_t buf[10];
    uint64_t n = min_u64(10, r->data_bytes - off);
    const uint8_t *p = data_ptr(r, off, n);
    if (!p) {
        data_copy(r, off, buf, n);
        p = buf;
    }
    const uint8_t *e = dec_varint(p, p + n, v);
    if (!e) return -1;
    *len = (uint64_t)(e - p);
    return 0;
}

/* Where entry i's internal key and value lie in the data stream. */
typedef struct ent_loc {
    uint64_t key_off, key_len; /* internal key */
    uint64_t val_off, val_len;
} ent_loc;

/* entry_decode -- locates entry i from its metadata and the data stream,
 * checking every length against the stream and the metadata's key length and
 * trailer. */
static int entry_decode(const rowtable *r, uint32_t i, const meta *m, ent_loc *e)
{
    uint64_t ikl, l1, vl, l2;
    if (m->data_off >= r->data_bytes) return rt_corrupt(r, "entry %u: data offset %llu past the data", i, (unsigned long long)m->data_off);
    if (read_varint(r, m->data_off, &ikl, &l1) < 0 || ikl != (uint64_t)m->klen + IKEY_TRAILER)
        return rt_corrupt(r, "entry %u: key length in data disagrees with the metadata", i);
    e->key_off = m->data_off + l1;
    e->key_len = ikl;
    uint64_t vo = e->key_off + ikl;
    if (vo >= r->data_bytes) return rt_corrupt(r, "entry %u: key runs past the data", i);
    if (read_varint(r, vo, &vl, &l2) < 0 || vl > TKV_MAX_VALUE_SIZE || vl > r->data_bytes - vo - l2)
        return rt_corrupt(r, "entry %u: bad value length", i);
    e->val_off = vo + l2;
    e->val_len = vl;
    uint8_t tr[8];
    data_copy(r, e->key_off + m->klen, tr, 8);
    if (dec_u64(tr) != m->trailer) return rt_corrupt(r, "entry %u: trailer in data disagrees with the metadata", i);
    return 0;
}

/* ---------------------------------------------------------------- comparisons */

/* A lookup target: user key + trailer (seq << 8 | type), with the 8-byte
 * big-endian prefix the metadata stores. */
typedef struct target {
    const uint8_t *uk;
    size_t un;
    uint64_t trailer, prefix;
} target;

static void target_init(target *t, tkv_slice ukey, uint64_t trailer)
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

/* cmp_at -- compares entry i with the target in ikey_cmp order (< 0: entry
 * is smaller); *ueq = 1 if their user keys are equal. Decided from the
 * metadata alone when the prefixes differ, when a key is at most 8 bytes
 * (prefixes are zero-padded, so equal prefixes then order by length), or
 * for versions of one user key (the trailer is in the metadata); otherwise
 * the key bytes after the prefix are read from the data stream. On a
 * malformed entry sets pr->err and returns 1. */
static int cmp_at(probe *pr, uint32_t i, int *ueq)
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
        if (m.data_off >= r->data_bytes || koff > r->data_bytes || m.klen > r->data_bytes - koff) {
            if (!pr->err) pr->err = rt_corrupt(r, "entry %u: key runs past the data", i);
            return 1;
        }
        pm_read_delay(r->reg, 1);
        pr->nprobe++;
        int c = data_cmp(r, koff + 8, t->uk + 8, common - 8);
        if (c) return c;
    }
    if (m.klen != t->un) return m.klen < t->un ? -1 : 1;
    *ueq = 1;
    return m.trailer > t->trailer ? -1 : m.trailer < t->trailer ? 1 : 0;
}

/* lower_bound -- first index in [lo, hi) whose entry is >= the target, else
 * hi. Whenever hi moves to a compared entry, *hi_ueq takes that entry's
 * user-key equality, so the caller learns whether the answer holds the target
 * user key without comparing again. */
static uint32_t lower_bound(probe *pr, uint32_t lo, uint32_t hi, int *hi_ueq)
{
    while (lo < hi && !pr->err) {
        uint32_t mid = lo + (hi - lo) / 2;
        int ueq;
        if (cmp_at(pr, mid, &ueq) < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
            *hi_ueq = ueq;
        }
    }
    return lo;
}

/* search_window -- the lower bound in [lo, hi) of a hint window: probes
 * downward from hi at distances 1, 2, 4, ... until an entry below the target
 * brackets the answer, then binary-searches the bracket. The cost is
 * O(log(hi - answer)), not O(log(hi - lo)): the low end of a window from
 * forward pointers holds every older version of the newer row's previous
 * user key (all below the target when the user keys differ), which for a hot
 * key can be many, while the answer sits near hi. Keeps lower_bound's
 * contract, and: if the result pos > lo, entry pos-1 was compared < target. */
static uint32_t search_window(probe *pr, uint32_t lo, uint32_t hi, int *hi_ueq)
{
    for (uint32_t step = 1; hi > lo && !pr->err; step *= 2) {
        uint32_t at = hi - lo > step ? hi - step : lo;
        int ueq;
        if (cmp_at(pr, at, &ueq) < 0) {
            lo = at + 1;
            break;
        }
        hi = at;
        *hi_ueq = ueq;
    }
    return lower_bound(pr, lo, hi, hi_ueq);
}

/* ---------------------------------------------------------------- handle */

static rowtable *rt_alloc(pool *p, uint32_t npages)
{
    rowtable *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->pl = p;
    r->reg = pool_region(p);
    r->slot = UINT32_MAX;
    r->npages = npages;
    r->page_size = pool_page_size(p);
    r->shift = pool_page_shift(p);
    r->mask = (uint64_t)r->page_size - 1;
    r->pages = calloc(npages, sizeof *r->pages);
    r->addr = calloc(npages, sizeof *r->addr);
    r->released = calloc(npages, 1);
    if (!r->pages || !r->addr || !r->released) {
        rowtable_close(r);
        return NULL;
    }
    return r;
}

/* ---------------------------------------------------------------- key filter */

/* filter_alloc -- an empty filter sized for n keys. 0 or TKV_NO_MEMORY. */
static int filter_alloc(rowtable *r, uint64_t n)
{
    uint64_t blocks = (n * FILTER_BITS_PER_KEY + 511) / 512;
    if (blocks == 0) blocks = 1;
    if (blocks > UINT32_MAX) blocks = UINT32_MAX;
    r->filter = aligned_alloc(64, blocks * FILTER_BLOCK_WORDS * sizeof(uint64_t));
    if (!r->filter) return tkv_err(TKV_NO_MEMORY, "out of memory for the key filter of row %llu", (unsigned long long)r->row_id);
    memset(r->filter, 0, blocks * FILTER_BLOCK_WORDS * sizeof(uint64_t));
    r->filter_blocks = (uint32_t)blocks;
    return 0;
}

static inline uint64_t *filter_block(const rowtable *r, uint64_t h)
{
    return r->filter + (((h >> 32) * r->filter_blocks) >> 32) * FILTER_BLOCK_WORDS;
}

static void filter_add(rowtable *r, uint64_t h)
{
    uint64_t *b = filter_block(r, h), g = h * 0x9e3779b97f4a7c15ull;
    for (unsigned j = 0; j < FILTER_PROBES; j++, g >>= 9) b[(g & 511) >> 6] |= 1ull << (g & 63);
}

int rowtable_may_contain(const rowtable *r, uint64_t key_hash)
{
    if (!r->filter) return 1;
    const uint64_t *b = filter_block(r, key_hash);
    uint64_t g = key_hash * 0x9e3779b97f4a7c15ull;
    for (unsigned j = 0; j < FILTER_PROBES; j++, g >>= 9)
        if (!(b[(g & 511) >> 6] & (1ull << (g & 63)))) return 0;
    return 1;
}

uint64_t rowtable_key_hash(tkv_slice ukey) { return tkv_hash64(ukey.p, ukey.n, 0); }

void rowtable_close(rowtable *r)
{
    if (!r) return;
    free(r->filter);
    free(r->pages);
    free(r->addr);
    free(r->released);
    free(r);
}

uint64_t rowtable_id(const rowtable *r) { return r->row_id; }
uint32_t rowtable_count(const rowtable *r) { return r->n; }
uint32_t rowtable_cursor(const rowtable *r) { return cursor_load(r); }
uint64_t rowtable_max_seq(const rowtable *r) { return r->max_seq; }
uint64_t rowtable_min_seq(const rowtable *r) { return r->min_seq; }

uint32_t rowtable_fwd(const rowtable *r, uint32_t i)
{
    if (i >= r->n || i < cursor_load(r)) return ROWTABLE_NO_FWD;
    return dec_u32(meta_ptr(r, i) + ME_FWD);
}

void rowtable_get_props(const rowtable *r, rowtable_props *out)
{
    memset(out, 0, sizeof *out);
    out->row_id = r->row_id;
    out->older_row_id = r->older_id;
    out->slot = r->slot;
    out->entries = r->n;
    out->cursor = cursor_load(r);
    out->min_cursor = r->min_cursor;
    out->deletions = r->deletions;
    out->min_seq = r->min_seq;
    out->max_seq = r->max_seq;
    out->key_bytes = r->key_bytes;
    out->value_bytes = r->value_bytes;
    out->data_bytes = r->data_bytes;
    out->meta_bytes = (uint64_t)r->n * ROWTABLE_META_ENTRY_SIZE;
    out->meta_off = r->meta_off;
    out->pages = r->npages;
    out->meta_pages = r->nmeta;
    out->data_pages = r->ndata;
    for (uint32_t j = 0; j < r->npages; j++) out->pages_released += r->released[j];
    out->dram_bytes = sizeof *r + (size_t)r->npages * (sizeof *r->pages + sizeof *r->addr + 1) +
                      (size_t)r->filter_blocks * FILTER_BLOCK_WORDS * sizeof(uint64_t);
}

/* ---------------------------------------------------------------- build */

/* entry_size -- encoded bytes of an entry in the data stream. */
static inline uint64_t entry_size(uint64_t ikey_len, uint64_t vlen)
{
    return varint_len(ikey_len) + ikey_len + varint_len(vlen) + vlen;
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

/* stream_range -- the content range [*lo, *hi) (offsets within the page) of
 * page j of a stream covering [begin, end). */
static inline void stream_range(uint64_t begin, uint64_t end, uint32_t j, uint32_t ps, uint64_t *lo, uint64_t *hi)
{
    uint64_t ps0 = (uint64_t)j * ps, a = max_u64(begin, ps0), b = min_u64(end, ps0 + ps);
    *lo = a - ps0;
    *hi = b > a ? b - ps0 : a - ps0;
}

/* A writer over one stream of a row being built. */
typedef struct pstream {
    rowtable *r;
    uint32_t base;        /* list index of the stream's page 0 */
    uint64_t begin, end;  /* content range of the stream */
    uint64_t pos;
    uint32_t *crc;        /* per list index */
} pstream;

/* ps_finish -- step (1) for one page: persist its content range and record
 * its checksum. */
static void ps_finish(pstream *s, uint32_t j)
{
    rowtable *r = s->r;
    uint64_t lo, hi;
    stream_range(s->begin, s->end, j, r->page_size, &lo, &hi);
    uint8_t *a = r->addr[s->base + j];
    if (hi > lo) pm_persist(r->reg, a + lo, hi - lo);
    s->crc[s->base + j] = tkv_checksum(a + lo, hi - lo);
}

static void ps_write(pstream *s, const uint8_t *src, uint64_t len)
{
    rowtable *r = s->r;
    while (len) {
        uint64_t in = s->pos & r->mask, chunk = min_u64(len, r->page_size - in);
        memcpy(r->addr[s->base + (s->pos >> r->shift)] + in, src, chunk);
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
    memset(r->addr[s->base + (s->pos >> r->shift)] + (s->pos & r->mask), 0, to - s->pos);
    s->pos = to;
    if ((s->pos & r->mask) == 0) ps_finish(s, (uint32_t)(s->pos >> r->shift) - 1);
}

/* ps_close -- finishes the last, partly filled page. */
static void ps_close(pstream *s)
{
    if (s->pos & s->r->mask) ps_finish(s, (uint32_t)(s->pos >> s->r->shift));
}

/* Totals of pass 1. */
typedef struct build_totals {
    uint64_t n, data_bytes, min_seq, max_seq, deletions, key_bytes, value_bytes;
} build_totals;

/* scan_source -- pass 1: validates the source (order, sizes) and computes
 * the totals and the exact data-stream length (with padding). */
static int scan_source(pool *p, uint64_t row_id, tkv_it *src, build_totals *t)
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
        uint64_t seq = ikey_seq(k), esz = entry_size(k.n, v.n);
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
static int write_entries(rowtable *r, tkv_it *src, const rowtable *older, uint32_t older_cursor, uint32_t *crc)
{
    pstream data = {r, r->nmeta, 0, r->data_bytes, 0, crc};
    pstream mst = {r, 0, r->meta_off, r->meta_off + (uint64_t)r->n * ROWTABLE_META_ENTRY_SIZE, r->meta_off, crc};
    uint32_t oj = older ? older_cursor : 0, on = older ? older->n : 0;
    target t;
    probe pr = {older, &t, 0, 0, 0};
    uint32_t i = 0;
    tkv_slice prev_ukey = {NULL, 0};
    tkv_buf prev_buf = {0}; /* the previous user key, when it may not stay valid */
    uint8_t me[ROWTABLE_META_ENTRY_SIZE], hdr[20];
    for (it_seek_first(src); it_valid(src); it_next(src), i++) {
        tkv_slice k = it_key(src), v = it_value(src);
        uint64_t esz = entry_size(k.n, v.n), start = entry_place(data.pos, esz, r->page_size);
        if (i >= r->n || start + esz > r->data_bytes || k.n < IKEY_TRAILER) {
            buf_free(&prev_buf);
            return tkv_err(TKV_INVALID, "pool %s: row %llu: the source changed between the two build passes",
                           pool_path(r->pl), (unsigned long long)r->row_id);
        }
        tkv_slice uk = ikey_user(k);
        if (i == 0 || ukey_cmp(uk, prev_ukey) != 0) { /* one filter entry per user key */
            filter_add(r, rowtable_key_hash(uk));
            prev_buf.len = 0;
            if (buf_append(&prev_buf, uk.p, uk.n) < 0) return tkv_err(TKV_NO_MEMORY, "out of memory building a row");
            prev_ukey = slice(prev_buf.data, prev_buf.len);
        }
        /* forward pointer: advance through the older row to entry i's lower bound */
        uint32_t fwd = ROWTABLE_NO_FWD;
        if (older) {
            target_init(&t, ikey_user(k), ikey_trailer(k));
            int ueq;
            while (oj < on && cmp_at(&pr, oj, &ueq) < 0) oj++;
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
        h = enc_varint(hdr, v.n);
        ps_write(&data, hdr, (uint64_t)(h - hdr));
        ps_write(&data, v.p, v.n);

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
    if (i != r->n || data.pos != r->data_bytes)
        return tkv_err(TKV_INVALID, "pool %s: row %llu: the source changed between the two build passes",
                       pool_path(r->pl), (unsigned long long)r->row_id);
    ps_close(&data);
    ps_close(&mst);
    return 0;
}

/* encode_body -- the RowTable body of the row header. */
static void encode_body(const rowtable *r, const uint32_t *crc, uint8_t *b)
{
    enc_u32(b + RB_VERSION, ROWTABLE_FORMAT_VERSION);
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
    for (uint32_t j = 0; j < r->npages; j++) enc_u32(b + RB_PAGE_CRC + 4 * (size_t)j, crc[j]);
}

/* layout -- page counts and meta_off for n entries and data_bytes of data:
 * the header (whose size grows with the page count) and the metadata share
 * the meta stream, so iterate to the fixed point (page counts only grow). */
static void layout(uint64_t n, uint64_t data_bytes, uint32_t ps, uint64_t *npages, uint64_t *nmeta, uint64_t *ndata,
                   uint64_t *meta_off)
{
    *ndata = (data_bytes + ps - 1) / ps;
    uint64_t np = *ndata + 1;
    for (;;) {
        uint64_t area = pool_row_header_area((uint32_t)min_u64(RB_FIXED + 4 * np, UINT32_MAX),
                                             (uint32_t)min_u64(np, UINT32_MAX));
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
 *       (pm_persist per page as it fills, in write_entries);
 *   (2) the row header -- fields, page list, page checksums, header checksum,
 *       zeroed release bitmap -- is written and persisted (one
 *       pm_memcpy_persist, pool_row_write_header);
 *   (3) the caller commits the directory slot (rowtable_commit): the 8-byte
 *       persisted store that makes the row exist.
 */
int rowtable_build(pool *p, uint64_t row_id, tkv_it *src, const rowtable *older, rowtable **out)
{
    return rowtable_build_at(p, row_id, src, older, older ? cursor_load(older) : 0, out);
}

int rowtable_build_at(pool *p, uint64_t row_id, tkv_it *src, const rowtable *older, uint32_t older_cursor,
                      rowtable **out)
{
    *out = NULL;
    if (!p || !src || row_id == 0)
        return tkv_err(TKV_INVALID, "rowtable_build: NULL pool/source or row id 0");
    if (older && older->pl != p)
        return tkv_err(TKV_INVALID, "pool %s: row %llu: the older row belongs to another pool", pool_path(p),
                       (unsigned long long)row_id);
    if (older) { /* never read below what the older row's released pages allow */
        uint32_t floor = cursor_load(older);
        if (older_cursor < floor) older_cursor = floor;
        if (older_cursor > older->n) older_cursor = older->n;
    }
    build_totals tot;
    TKV_TRY(scan_source(p, row_id, src, &tot));

    uint32_t ps = pool_page_size(p);
    uint64_t npages, nmeta, ndata, meta_off;
    layout(tot.n, tot.data_bytes, ps, &npages, &nmeta, &ndata, &meta_off);
    if (npages > pool_page_count(p) || pool_row_header_area((uint32_t)(RB_FIXED + 4 * npages), (uint32_t)npages) > ps) {
        return tkv_err(TKV_NO_SPACE, "pool %s: row %llu needs %llu pages of %u bytes, the pool has %u", pool_path(p),
                       (unsigned long long)row_id, (unsigned long long)npages, ps, pool_page_count(p));
    }
    rowtable *r = rt_alloc(p, (uint32_t)npages);
    uint32_t *crc = calloc(npages, sizeof *crc);
    uint8_t *body = calloc(1, RB_FIXED + 4 * npages);
    int rc = TKV_NO_MEMORY, allocated = 0;
    if (!r || !crc || !body) {
        tkv_err(rc, "pool %s: row %llu: out of memory building the row", pool_path(p), (unsigned long long)row_id);
        goto fail;
    }
    r->row_id = row_id;
    r->n = (uint32_t)tot.n;
    r->min_seq = tot.min_seq;
    r->max_seq = tot.max_seq;
    r->deletions = tot.deletions;
    r->key_bytes = tot.key_bytes;
    r->value_bytes = tot.value_bytes;
    r->data_bytes = tot.data_bytes;
    r->meta_off = meta_off;
    r->nmeta = (uint32_t)nmeta;
    r->ndata = (uint32_t)ndata;
    r->older_id = older ? older->row_id : 0;
    r->older_n = older ? older->n : 0;
    rc = filter_alloc(r, tot.n);
    if (rc < 0) goto fail;
    rc = pool_alloc_pages(p, r->npages, r->pages);
    if (rc < 0) goto fail;
    allocated = 1;
    for (uint32_t j = 0; j < r->npages; j++) {
        r->addr[j] = pool_page_addr(p, r->pages[j]);
        crc[j] = tkv_checksum("", 0); /* pages left with no content (e.g. no metadata in page 0) */
    }
    rc = write_entries(r, src, older, older_cursor, crc); /* step (1) */
    if (rc < 0) goto fail;
    encode_body(r, crc, body);
    rc = pool_row_write_header(p, row_id, POOL_ROW_KIND_ROWTABLE, body, (uint32_t)(RB_FIXED + 4 * npages), r->pages,
                               r->npages); /* step (2) */
    if (rc < 0) goto fail;
    free(crc);
    free(body);
    *out = r;
    return 0;
fail:
    if (allocated)
        for (uint32_t j = 0; j < r->npages; j++) pool_free_page(p, r->pages[j]);
    rowtable_close(r);
    free(crc);
    free(body);
    return rc;
}

int rowtable_commit(rowtable *r)
{
    if (r->slot != UINT32_MAX)
        return tkv_err(TKV_INVALID, "pool %s: row %llu is already committed", pool_path(r->pl), (unsigned long long)r->row_id);
    uint32_t slot;
    TKV_TRY(pool_commit_row(r->pl, r->pages[0], r->row_id, &slot)); /* step (3) */
    r->slot = slot;
    return 0;
}

void rowtable_queue_writeback(const rowtable *r)
{
    for (uint32_t j = 0; j < r->npages; j++)
        if (!r->released[j]) pm_writeback_enqueue(r->reg, r->addr[j], r->page_size);
}

void rowtable_abandon(rowtable *r)
{
    if (!r) return;
    if (r->slot == UINT32_MAX)
        for (uint32_t j = 0; j < r->npages; j++) pool_free_page(r->pl, r->pages[j]);
    rowtable_close(r);
}

int rowtable_drop(rowtable *r)
{
    if (!r) return 0;
    int rc = 0;
    if (r->slot != UINT32_MAX) rc = pool_remove_row(r->pl, r->slot); /* (1) the removal's commit point */
    if (rc == 0)
        for (uint32_t j = 0; j < r->npages; j++) /* (2) invariant 5 of pool.h: only after (1) */
            if (!r->released[j]) pool_free_page(r->pl, r->pages[j]);
    rowtable_close(r);
    return rc;
}

/* ---------------------------------------------------------------- open / verify */

/* first_entry_of_meta_page -- index of the first entry whose metadata lies
 * in meta page j or later (capped at n). */
static uint32_t first_entry_of_meta_page(const rowtable *r, uint32_t j)
{
    uint64_t start = (uint64_t)j * r->page_size;
    if (start <= r->meta_off) return 0;
    return (uint32_t)min_u64(r->n, (start - r->meta_off) / ROWTABLE_META_ENTRY_SIZE);
}

/* check_released -- the released pages are a prefix of the metadata pages
 * after the header page and a prefix of the data pages (the cursor only
 * advances); computes min_cursor, the first entry none of whose bytes lie in
 * a released page. */
static int check_released(rowtable *r)
{
    uint32_t jm = 1, jd = 0;
    while (jm < r->nmeta && r->released[jm]) jm++;
    for (uint32_t j = jm; j < r->nmeta; j++)
        if (r->released[j]) return rt_corrupt(r, "released metadata pages are not a prefix");
    while (jd < r->ndata && r->released[r->nmeta + jd]) jd++;
    for (uint32_t j = jd; j < r->ndata; j++)
        if (r->released[r->nmeta + j]) return rt_corrupt(r, "released data pages are not a prefix");
    uint32_t lo = jm > 1 ? first_entry_of_meta_page(r, jm) : 0, hi = r->n;
    uint64_t rel_end = (uint64_t)jd * r->page_size;
    if (jd > 0) { /* first entry at or after lo starting at or after rel_end */
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (dec_u64(meta_ptr(r, mid) + ME_DATA_OFF) < rel_end) lo = mid + 1;
            else hi = mid;
        }
    }
    r->min_cursor = lo;
    return 0;
}

/* verify_pages -- the checksum of every page not released. */
static int verify_pages(rowtable *r, const uint8_t *body)
{
    uint64_t meta_end = r->meta_off + (uint64_t)r->n * ROWTABLE_META_ENTRY_SIZE;
    for (uint32_t j = 0; j < r->npages; j++) {
        if (r->released[j]) continue;
        int is_meta = j < r->nmeta;
        uint64_t lo, hi;
        if (is_meta) stream_range(r->meta_off, meta_end, j, r->page_size, &lo, &hi);
        else stream_range(0, r->data_bytes, j - r->nmeta, r->page_size, &lo, &hi);
        pm_read_delay(r->reg, 1);
        if (tkv_checksum(r->addr[j] + lo, hi - lo) != dec_u32(body + RB_PAGE_CRC + 4 * (size_t)j))
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
        if (m.data_off >= r->data_bytes || r->data_bytes - m.data_off < 10 || m.klen > TKV_MAX_KEY_SIZE)
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
    TKV_TRY(filter_alloc(r, r->n - r->min_cursor));
    tkv_buf key = {0};
    for (uint32_t i = r->min_cursor; i < r->n; i++) {
        meta m;
        ent_loc e;
        meta_load(r, i, &m);
        int rc = entry_decode(r, i, &m, &e);
        const uint8_t *kp = rc == 0 ? data_ptr(r, e.key_off, m.klen) : NULL;
        if (rc == 0 && !kp) {
            key.len = 0;
            if ((rc = buf_reserve(&key, m.klen)) == 0) {
                data_copy(r, e.key_off, key.data, m.klen);
                kp = key.data;
            }
        }
        if (rc < 0) {
            buf_free(&key);
            return rc;
        }
        filter_add(r, rowtable_key_hash(slice(kp, m.klen))); /* versions of a key add the same bits */
    }
    buf_free(&key);
    return 0;
}

int rowtable_open(pool *p, uint32_t slot, rowtable **out)
{
    *out = NULL;
    pool_row pr;
    TKV_TRY(pool_row_read(p, slot, &pr));
    rowtable *r = rt_alloc(p, pr.npages);
    if (!r) return tkv_err(TKV_NO_MEMORY, "pool %s: out of memory opening row %llu", pool_path(p), (unsigned long long)pr.row_id);
    r->row_id = pr.row_id;
    r->slot = slot;
    int rc;
    const uint8_t *b = pr.body;
    if (pr.kind != POOL_ROW_KIND_ROWTABLE || pr.body_len != RB_FIXED + 4 * (uint64_t)pr.npages) {
        rc = rt_corrupt(r, "not a RowTable header (kind %u, body %u bytes)", pr.kind, pr.body_len);
        goto fail;
    }
    if (dec_u32(b + RB_VERSION) != ROWTABLE_FORMAT_VERSION || dec_u32(b + RB_META_ESIZE) != ROWTABLE_META_ENTRY_SIZE) {
        rc = rt_corrupt(r, "format version %u / entry size %u unknown", dec_u32(b + RB_VERSION), dec_u32(b + RB_META_ESIZE));
        goto fail;
    }
    uint64_t n = dec_u64(b + RB_N), older_n = dec_u64(b + RB_OLDER_N);
    r->min_seq = dec_u64(b + RB_MIN_SEQ);
    r->max_seq = dec_u64(b + RB_MAX_SEQ);
    r->deletions = dec_u64(b + RB_DELETIONS);
    r->data_bytes = dec_u64(b + RB_DATA_BYTES);
    r->meta_off = dec_u64(b + RB_META_OFF);
    r->nmeta = dec_u32(b + RB_NMETA);
    r->ndata = dec_u32(b + RB_NDATA);
    r->older_id = dec_u64(b + RB_OLDER_ID);
    r->key_bytes = dec_u64(b + RB_KEY_BYTES);
    r->value_bytes = dec_u64(b + RB_VALUE_BYTES);
    uint64_t ps = r->page_size;
    uint64_t want_meta_off = round_up(pool_row_header_area(pr.body_len, pr.npages), META_ALIGN);
    if (n > ROWTABLE_MAX_ENTRIES || older_n > ROWTABLE_MAX_ENTRIES || r->deletions > n ||
        (n && (r->min_seq > r->max_seq || r->max_seq > IKEY_MAX_SEQ)) || r->meta_off != want_meta_off ||
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
    if ((rc = check_released(r)) < 0 || (rc = verify_pages(r, b)) < 0 || (rc = verify_meta(r)) < 0) goto fail;
    r->cursor = r->min_cursor;
    if ((rc = filter_rebuild(r)) < 0) goto fail;
    *out = r;
    return 0;
fail:
    rowtable_close(r);
    return rc;
}

/* ---------------------------------------------------------------- lookups */

/* live_from -- the first live entry for a reader whose view has `cursor`:
 * never below the row's own cursor (the floor of what its released pages
 * allow), never past the end. */
static inline uint32_t live_from(const rowtable *r, uint32_t cursor)
{
    uint32_t floor = cursor_load(r);
    if (cursor < floor) cursor = floor;
    return cursor < r->n ? cursor : r->n;
}

int rowtable_get(const rowtable *r, tkv_slice ukey, uint64_t snap, const row_hint *hint_in, row_get_result *res,
                 tkv_buf *value, row_hint *hint_out)
{
    return rowtable_get_at(r, 0, ukey, snap, hint_in, res, value, hint_out);
}

int rowtable_get_at(const rowtable *r, uint32_t cursor, tkv_slice ukey, uint64_t snap, const row_hint *hint_in,
                    row_get_result *res, tkv_buf *value, row_hint *hint_out)
{
    if (snap > IKEY_MAX_SEQ) snap = IKEY_MAX_SEQ;
    target t;
    target_init(&t, ukey, ikey_pack(snap, IKEY_SEEK_TYPE));
    probe pr = {r, &t, 0, 0, 0};
    uint32_t c = live_from(r, cursor), n = r->n, lo = c, hi = n;
    int hi_ueq = 0, rc = 0;
    res->rows_searched++;

    /* The hint: clamp it to the live entries, search inside it, then verify
     * the edges the answer rests on. The lower bound is proven when entry
     * pos-1 < T (or pos is the cursor) and entry pos >= T (or pos == n); the
     * search compared entry pos-1 if pos > hl and entry pos if pos < hh, so
     * only an answer on the window's edge needs one more comparison
     * (the upper one also tells whether entry pos holds the user key). If an
     * edge does not hold, the window was wrong: search the whole row. */
    uint32_t pos = 0;
    int hinted = 0;
    if (hint_in && hint_in->row_id != 0 && hint_in->row_id == r->row_id) {
        uint32_t hl = hint_in->lo > c ? hint_in->lo : c, hh = hint_in->hi < n ? hint_in->hi : n;
        if (hl > n) hl = n;
        if (hh < hl) hh = hl; /* a window below the cursor: the answer is the cursor */
        int ueq = 0;
        pos = search_window(&pr, hl, hh, &hi_ueq);
        hinted = 1;
        if (pos == hl && hl > c && !pr.err && cmp_at(&pr, hl - 1, &ueq) >= 0) hinted = 0;
        if (hinted && pos == hh && hh < n && !pr.err) {
            if (cmp_at(&pr, hh, &ueq) < 0) hinted = 0;
            else hi_ueq = ueq;
        }
        if (hinted) {
            res->hints_used++;
        } else {
            hi_ueq = 0;
            res->hints_rejected++;
        }
    }
    if (!hinted) pos = lower_bound(&pr, lo, hi, &hi_ueq);
    if (pr.err) {
        rc = pr.err;
        goto done;
    }
    /* pos < n: entry pos was compared (or verified as the window's top edge),
     * so hi_ueq says whether it holds the target user key -- and being >= T
     * it is then the newest version with seq <= snap. */
    if (pos < n && hi_ueq) {
        meta m;
        meta_load(r, pos, &m);
        res->type = (ikey_type)(m.trailer & 0xff);
        res->seq = m.trailer >> 8;
        rc = 1;
        if (value) {
            value->len = 0;
            if (res->type == IKEY_VALUE) {
                ent_loc e;
                pm_read_delay(r->reg, 1);
                pr.nprobe++;
                if ((rc = entry_decode(r, pos, &m, &e)) < 0) goto done;
                if ((rc = buf_reserve(value, e.val_len + 1)) < 0) goto done;
                data_copy(r, e.val_off, value->data, e.val_len);
                value->len = e.val_len;
                rc = 1;
            }
        }
    }
    if (hint_out) {
        if (r->older_id == 0) {
            *hint_out = (row_hint){0, 0, 0};
        } else {
            hint_out->row_id = r->older_id;
            hint_out->lo = pos > c ? dec_u32(meta_ptr(r, pos - 1) + ME_FWD) : 0;
            hint_out->hi = pos < n ? dec_u32(meta_ptr(r, pos) + ME_FWD) : UINT32_MAX;
        }
    }
done:
    res->comparisons += pr.ncmp;
    res->media_probes += pr.nprobe;
    return rc;
}

int rows_get(rowtable *const *rows, size_t k, tkv_slice ukey, uint64_t snap, row_get_result *res, tkv_buf *value)
{
    return rows_get_at(rows, NULL, k, ukey, snap, 0, res, value);
}

int rows_get_at(rowtable *const *rows, const uint32_t *cursors, size_t k, tkv_slice ukey, uint64_t snap,
                unsigned flags, row_get_result *res, tkv_buf *value)
{
    uint64_t h = flags & ROWS_GET_FILTER ? rowtable_key_hash(ukey) : 0;
    row_hint hint = {0, 0, 0};
    int found = 0;
    uint64_t best_seq = 0;
    ikey_type best_type = IKEY_VALUE;
    if (snap > IKEY_MAX_SEQ) snap = IKEY_MAX_SEQ;
    for (size_t i = 0; i < k; i++) {
        const rowtable *r = rows[i];
        if (!r) continue;
        if (found && r->max_seq <= best_seq) break; /* every older entry is older than the answer */
        uint32_t c = cursors ? cursors[i] : 0;
        if (r->n == 0 || r->min_seq > snap || live_from(r, c) == r->n) {
            hint = (row_hint){0, 0, 0};
            continue;
        }
        if ((flags & ROWS_GET_FILTER) && !rowtable_may_contain(r, h)) {
            res->rows_filtered++;
            hint = (row_hint){0, 0, 0}; /* the next row has no window: a binary search if it is searched */
            continue;
        }
        int rc = rowtable_get_at(r, c, ukey, snap, &hint, res, found ? NULL : value, &hint);
        if (rc < 0) return rc;
        if (rc == 1 && (!found || res->seq > best_seq)) {
            if (found && value && res->type == IKEY_VALUE) { /* overlapping rows: fetch the better value */
                row_hint none = {0, 0, 0};
                rc = rowtable_get_at(r, c, ukey, snap, &none, res, value, NULL);
                if (rc < 0) return rc;
            } else if (found && value) {
                value->len = 0;
            }
            found = 1;
            best_seq = res->seq;
            best_type = res->type;
            res->row_index = i;
        } else if (found) {
            res->seq = best_seq;
            res->type = best_type;
        }
    }
    return found;
}

/* ---------------------------------------------------------------- iterator */

typedef struct row_iter {
    tkv_it base;
    const rowtable *r;
    uint32_t from;    /* the view's cursor (rowtable_iter_at), 0 for rowtable_iter */
    uint32_t to;      /* entries [to, n) are outside the iterator (rowtable_iter_range) */
    uint32_t pos, lo; /* lo: the first live entry, computed at the last seek */
    int valid, status;
    tkv_slice k, v;
    tkv_buf kbuf, vbuf; /* entries that cross a page end are gathered here */
} row_iter;

/* ri_load -- positions on entry pos (or invalid if outside [lo, n)). */
static void ri_load(row_iter *it)
{
    const rowtable *r = it->r;
    it->valid = 0;
    if (it->status || it->pos < it->lo || it->pos >= it->to) return;
    meta m;
    ent_loc e;
    meta_load(r, it->pos, &m);
    pm_read_delay(r->reg, 2);
    int rc = entry_decode(r, it->pos, &m, &e);
    if (rc < 0) {
        it->status = rc;
        return;
    }
    const uint8_t *kp = data_ptr(r, e.key_off, e.key_len), *vp = data_ptr(r, e.val_off, e.val_len);
    if (!kp) {
        it->kbuf.len = 0;
        if ((rc = buf_reserve(&it->kbuf, e.key_len)) < 0) goto fail;
        data_copy(r, e.key_off, it->kbuf.data, e.key_len);
        kp = it->kbuf.data;
    }
    if (!vp) {
        it->vbuf.len = 0;
        if ((rc = buf_reserve(&it->vbuf, e.val_len)) < 0) goto fail;
        data_copy(r, e.val_off, it->vbuf.data, e.val_len);
        vp = it->vbuf.data;
    }
    it->k = slice(kp, e.key_len);
    it->v = slice(vp, e.val_len);
    it->valid = 1;
    return;
fail:
    it->status = rc;
}

static int ri_valid(tkv_it *i) { return ((row_iter *)i)->valid; }

static void ri_seek_first(tkv_it *i)
{
    row_iter *it = (row_iter *)i;
    it->lo = it->pos = live_from(it->r, it->from);
    ri_load(it);
}

static void ri_seek_last(tkv_it *i)
{
    row_iter *it = (row_iter *)i;
    it->lo = live_from(it->r, it->from);
    it->pos = it->to ? it->to - 1 : 0;
    ri_load(it);
}

static void ri_seek(tkv_it *i, tkv_slice target_key)
{
    row_iter *it = (row_iter *)i;
    it->valid = 0;
    if (target_key.n < IKEY_TRAILER) {
        it->status = tkv_err(TKV_INVALID, "pool %s: row %llu: seek target of %zu bytes is not an internal key",
                             pool_path(it->r->pl), (unsigned long long)it->r->row_id, target_key.n);
        return;
    }
    target t;
    target_init(&t, ikey_user(target_key), ikey_trailer(target_key));
    probe pr = {it->r, &t, 0, 0, 0};
    int ueq = 0;
    it->lo = live_from(it->r, it->from);
    it->pos = lower_bound(&pr, it->lo, it->to > it->lo ? it->to : it->lo, &ueq);
    if (pr.err) {
        it->status = pr.err;
        return;
    }
    ri_load(it);
}

static void ri_next(tkv_it *i)
{
    row_iter *it = (row_iter *)i;
    if (!it->valid) return;
    it->pos++;
    ri_load(it);
}

static void ri_prev(tkv_it *i)
{
    row_iter *it = (row_iter *)i;
    if (!it->valid) return;
    if (it->pos == it->lo) {
        it->valid = 0;
        return;
    }
    it->pos--;
    ri_load(it);
}

static tkv_slice ri_key(tkv_it *i) { return ((row_iter *)i)->k; }
static tkv_slice ri_value(tkv_it *i) { return ((row_iter *)i)->v; }
static int ri_status(tkv_it *i) { return ((row_iter *)i)->status; }

static void ri_destroy(tkv_it *i)
{
    row_iter *it = (row_iter *)i;
    buf_free(&it->kbuf);
    buf_free(&it->vbuf);
    free(it);
}

static const tkv_it_ops row_iter_ops = {
    .valid = ri_valid,
    .seek_first = ri_seek_first,
    .seek_last = ri_seek_last,
    .seek = ri_seek,
    .next = ri_next,
    .prev = ri_prev,
    .key = ri_key,
    .value = ri_value,
    .status = ri_status,
    .destroy = ri_destroy,
};

tkv_it *rowtable_iter(const rowtable *r) { return rowtable_iter_range(r, 0, UINT32_MAX); }

tkv_it *rowtable_iter_at(const rowtable *r, uint32_t cursor) { return rowtable_iter_range(r, cursor, UINT32_MAX); }

tkv_it *rowtable_iter_range(const rowtable *r, uint32_t from, uint32_t to)
{
    row_iter *it = calloc(1, sizeof *it);
    if (!it) {
        tkv_err(TKV_NO_MEMORY, "pool %s: row %llu: out of memory for an iterator", pool_path(r->pl),
                (unsigned long long)r->row_id);
        return NULL;
    }
    it->base.ops = &row_iter_ops;
    it->r = r;
    it->from = from;
    it->to = to < r->n ? to : r->n;
    return &it->base;
}

/* ---------------------------------------------------------------- column support */

int rowtable_lower_bound(const rowtable *r, uint32_t from, tkv_slice ukey, uint32_t *out)
{
    /* (ukey, the largest trailer) is the first internal key of ukey. */
    target t;
    target_init(&t, ukey, UINT64_MAX);
    probe pr = {r, &t, 0, 0, 0};
    int ueq = 0;
    uint32_t pos = lower_bound(&pr, live_from(r, from), r->n, &ueq);
    if (pr.err) return pr.err;
    *out = pos;
    return 0;
}

int rowtable_upper_bound(const rowtable *r, uint32_t from, tkv_slice ukey, uint32_t *out)
{
    /* (ukey, trailer 0) is the last internal key of ukey: the lower bound of
     * it is past every version of ukey except one with trailer 0 (seq 0 is
     * never assigned, but a corrupt-free row could still hold it). */
    target t;
    target_init(&t, ukey, 0);
    probe pr = {r, &t, 0, 0, 0};
    int ueq = 0;
    uint32_t lo = live_from(r, from);
    uint32_t pos = lower_bound(&pr, lo, r->n, &ueq);
    if (pr.err) return pr.err;
    if (pos < r->n && ueq) pos++;
    *out = pos;
    return 0;
}

int rowtable_data_offset(const rowtable *r, uint32_t i, uint64_t *off)
{
    if (i > r->n || i < cursor_load(r))
        return tkv_err(TKV_INVALID, "pool %s: row %llu: entry %u outside the live entries [%u, %u]", pool_path(r->pl),
                       (unsigned long long)r->row_id, i, cursor_load(r), r->n);
    *off = i == r->n ? r->data_bytes : dec_u64(meta_ptr(r, i) + ME_DATA_OFF);
    return 0;
}

int rowtable_user_key(const rowtable *r, uint32_t i, tkv_buf *out)
{
    if (i >= r->n || i < cursor_load(r))
        return tkv_err(TKV_INVALID, "pool %s: row %llu: entry %u outside the live entries [%u, %u)", pool_path(r->pl),
                       (unsigned long long)r->row_id, i, cursor_load(r), r->n);
    meta m;
    ent_loc e;
    meta_load(r, i, &m);
    TKV_TRY(entry_decode(r, i, &m, &e));
    out->len = 0;
    TKV_TRY(buf_reserve(out, m.klen ? m.klen : 1));
    data_copy(r, e.key_off, out->data, m.klen);
    out->len = m.klen;
    return 0;
}

/* ---------------------------------------------------------------- drain cursor */

/* same_user_key -- *same = entries a and b have the same user key. Prefix and
 * length decide most cases from the metadata alone; equal prefixes of keys
 * longer than the prefix compare the key bytes in the data. */
static int same_user_key(const rowtable *r, uint32_t a, uint32_t b, int *same)
{
    meta ma, mb;
    meta_load(r, a, &ma);
    meta_load(r, b, &mb);
    *same = 0;
    if (ma.prefix != mb.prefix || ma.klen != mb.klen) return 0;
    if (ma.klen <= 8) {
        *same = 1;
        return 0;
    }
    ent_loc ea, eb;
    TKV_TRY(entry_decode(r, a, &ma, &ea));
    TKV_TRY(entry_decode(r, b, &mb, &eb));
    uint8_t *buf = malloc(ma.klen);
    if (!buf) return tkv_err(TKV_NO_MEMORY, "out of memory comparing keys of row %llu", (unsigned long long)r->row_id);
    data_copy(r, ea.key_off, buf, ma.klen);
    *same = data_cmp(r, eb.key_off, buf, ma.klen) == 0;
    free(buf);
    return 0;
}

int rowtable_set_cursor(rowtable *r, uint32_t cursor)
{
    if (cursor > r->n)
        return tkv_err(TKV_INVALID, "pool %s: row %llu: cursor %u past its %u entries", pool_path(r->pl),
                       (unsigned long long)r->row_id, cursor, r->n);
    if (cursor < r->min_cursor)
        return rt_corrupt(r, "cursor %u is below entry %u, whose earlier pages were already released", cursor,
                          r->min_cursor);
    uint32_t cur = cursor_load(r);
    if (cursor < cur)
        return tkv_err(TKV_INVALID, "pool %s: row %llu: cursor may not move back from %u to %u", pool_path(r->pl),
                       (unsigned long long)r->row_id, cur, cursor);
    /* A cursor between two versions of one user key would leave the older
     * versions visible in the row while the newer ones moved to L1: a stale
     * read (MatrixKV's column bug). Column compaction must end on a user-key
     * change; a cursor that does not is refused. */
    if (cursor > 0 && cursor < r->n) {
        int same;
        TKV_TRY(same_user_key(r, cursor - 1, cursor, &same));
        if (same)
            return tkv_err(TKV_INVALID, "pool %s: row %llu: cursor %u would split the versions of one user key",
                           pool_path(r->pl), (unsigned long long)r->row_id, cursor);
    }
    __atomic_store_n(&r->cursor, cursor, __ATOMIC_RELEASE);
    return 0;
}

/*
 * rowtable_dead_pages -- with cursor c, metadata page j >= 1 is dead when
 * every entry whose metadata lies in pages <= j is below c; data page d is
 * dead when it ends at or before the first byte of entry c (all of them when
 * c == n). Both sets are prefixes, so releases keep check_released's
 * invariant.
 */
size_t rowtable_dead_pages(const rowtable *r, uint32_t *list, size_t cap)
{
    uint32_t c = cursor_load(r);
    size_t cnt = 0;
    if (c == 0) return 0;
    for (uint32_t j = 1; j < r->nmeta; j++) {
        if (first_entry_of_meta_page(r, j + 1) > c) break; /* (n for the last metadata page) */
        if (!r->released[j] && cnt++ < cap) list[cnt - 1] = j;
    }
    uint64_t first_live = c < r->n ? dec_u64(meta_ptr(r, c) + ME_DATA_OFF) : UINT64_MAX;
    for (uint32_t d = 0; d < r->ndata; d++) {
        if (c < r->n && (uint64_t)(d + 1) * r->page_size > first_live) break;
        uint32_t j = r->nmeta + d;
        if (!r->released[j] && cnt++ < cap) list[cnt - 1] = j;
    }
    return cnt;
}

int rowtable_release_dead_pages(rowtable *r, uint32_t *released)
{
    if (released) *released = 0;
    if (r->slot == UINT32_MAX)
        return tkv_err(TKV_INVALID, "pool %s: row %llu: release of pages of an uncommitted row", pool_path(r->pl),
                       (unsigned long long)r->row_id);
    size_t n = rowtable_dead_pages(r, NULL, 0);
    if (n == 0) return 0;
    uint32_t *list = malloc(n * sizeof *list);
    if (!list) return tkv_err(TKV_NO_MEMORY, "pool %s: out of memory releasing pages", pool_path(r->pl));
    n = rowtable_dead_pages(r, list, n);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        rc = pool_row_release(r->pl, r->pages[0], list[i]);
        if (rc == 0) {
            r->released[list[i]] = 1;
            if (released) (*released)++;
        }
    }
    free(list);
    int rc2 = check_released(r); /* min_cursor follows the releases */
    return rc ? rc : rc2;
}
