// SPDX-License-Identifier: Apache-2.0
/* fuzzpool.c -- pool helpers of the fuzz targets (fuzzpool.h). */
#include "fuzz/fuzzpool.h"

#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzzutil.h"
#include "util/checksum.h"
#include "util/coding.h"

/* Pool header (docs/format-matrix.md section 2). */
#define PH_POOL_SIZE    16
#define PH_PAGE_SIZE    24
#define PH_PAGE_COUNT   28
#define PH_DIR_SLOTS    40
#define PH_PAGES_OFFSET 48
#define PH_CHECKSUM     72
#define DIR_OFF         4096u
/* Row header root (section 4.2). */
#define RH_HDR_LEN  8
#define RH_NPAGES   12
#define RH_BODY_LEN 28
#define ROOT        32u
/* RowTable body (section 5.2), offsets in the body. */
#define RB_N          8
#define RB_DATA_BYTES 40
#define RB_META_OFF   48
#define RB_NMETA      56
#define RB_PAGE_CRC   96

typedef struct geo {
    uint64_t size, pages_off;
    uint32_t ps, count, slots;
} geo;

/* read_geo -- the header's geometry if it is usable for fixing, else 0. */
static int read_geo(const uint8_t *img, size_t n, geo *g)
{
    g->size = n;
    g->ps = dec_u32(img + PH_PAGE_SIZE);
    g->count = dec_u32(img + PH_PAGE_COUNT);
    g->slots = dec_u32(img + PH_DIR_SLOTS);
    g->pages_off = dec_u64(img + PH_PAGES_OFFSET);
    if (g->ps < 4096 || g->ps > (2u << 20) || (g->ps & (g->ps - 1))) return 0;
    if (g->slots > (n - DIR_OFF) / 8 || g->pages_off > n) return 0;
    if (g->count > (n - g->pages_off) / g->ps) return 0;
    return 1;
}

static uint64_t up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/* page_ranges -- the checksum of each listed page of a RowTable row whose
 * header is at b (body at b + ROOT), written into the body. */
static void fix_pages(uint8_t *img, const geo *g, uint8_t *b, uint32_t npages, uint32_t body_len)
{
    uint8_t *body = b + ROOT;
    const uint8_t *list = body + up(body_len, 4);
    if (body_len < RB_PAGE_CRC + 4 * (uint64_t)npages) return;
    uint64_t n = dec_u64(body + RB_N), data_bytes = dec_u64(body + RB_DATA_BYTES),
             meta_off = dec_u64(body + RB_META_OFF);
    uint32_t nmeta = dec_u32(body + RB_NMETA);
    if (n > UINT32_MAX) return;
    uint64_t meta_end = meta_off + n * 32;
    for (uint32_t j = 0; j < npages; j++) {
        uint32_t pg = dec_u32(list + 4 * (size_t)j);
        if (pg >= g->count) continue;
        uint8_t *page = img + g->pages_off + (uint64_t)pg * g->ps;
        uint64_t begin = j < nmeta ? meta_off : 0, end = j < nmeta ? meta_end : data_bytes;
        uint64_t idx = j < nmeta ? j : j - nmeta, ps0 = idx * g->ps;
        uint64_t lo = begin > ps0 ? begin : ps0, hi = end < ps0 + g->ps ? end : ps0 + g->ps;
        if (hi < lo) hi = lo;
        enc_u32(body + RB_PAGE_CRC + 4 * (size_t)j, tkv_checksum(page + (lo - ps0), hi - lo));
    }
}

/* fix_rows -- the checksum of every committed row's header (and, with
 * FZ_FIX_PAGES, its RowTable page checksums first). */
static void fix_rows(uint8_t *img, const geo *g, unsigned flags)
{
    for (uint32_t s = 0; s < g->slots; s++) {
        uint64_t v = dec_u64(img + DIR_OFF + 8 * (size_t)s);
        uint32_t first = (uint32_t)(v & 0xffffffffu) - 1;
        if (v == 0 || first >= g->count) continue;
        uint8_t *b = img + g->pages_off + (uint64_t)first * g->ps;
        uint32_t hdr_len = dec_u32(b + RH_HDR_LEN), npages = dec_u32(b + RH_NPAGES),
                 body_len = dec_u32(b + RH_BODY_LEN);
        if (hdr_len < ROOT + 4 || hdr_len > g->ps || body_len > g->ps || npages > g->ps / 4) continue;
        if (ROOT + up(body_len, 4) + 4 * (uint64_t)npages > g->ps) continue;
        if (flags & FZ_FIX_PAGES) fix_pages(img, g, b, npages, body_len);
        enc_u32(b + hdr_len - 4, tkv_checksum(b, hdr_len - 4));
    }
}

uint8_t *fz_pool_image(const uint8_t *data, size_t n, unsigned flags, size_t *out_n)
{
    if (n == 0 || n > FZ_POOL_MAX) return NULL;
    uint64_t size = up(n, 4096);
    if (n >= PH_POOL_SIZE + 8) {
        uint64_t want = dec_u64(data + PH_POOL_SIZE);
        if (want > size && want <= FZ_POOL_MAX && want % 4096 == 0) size = want;
    }
    uint8_t *img = calloc(1, (size_t)size);
    if (!img) return NULL;
    memcpy(img, data, n);
    geo g;
    if ((flags & (FZ_FIX_ROWS | FZ_FIX_PAGES)) && read_geo(img, (size_t)size, &g)) fix_rows(img, &g, flags);
    if (flags & FZ_FIX) enc_u32(img + PH_CHECKSUM, tkv_checksum(img, PH_CHECKSUM));
    *out_n = (size_t)size;
    return img;
}

const char *fz_pool_write(const uint8_t *img, size_t n)
{
    static char path[512];
    fz_path(path, sizeof path, "pool.pmem");
    fz_write_file(path, img, n, 0);
    return path;
}
