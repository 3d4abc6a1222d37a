// SPDX-License-Identifier: Apache-2.0
/*
 * pool.c -- the persistent-memory pool: header, row directory, row headers,
 * open and close (interface and invariants: pool.h; byte layout:
 * docs/format-matrix.md sections 1-4). Pages -- allocation, freeing and
 * their disk blocks -- are in pool_pages.c; the fields both see, in
 * pool_int.h.
 *
 * DRAM state: a bitmap with one bit per page (1 = free) and two counters,
 * rebuilt at open from the committed rows (invariant 2 in pool.h) -- nothing
 * about allocation is persisted except through committed rows, so a crash at
 * any point leaks no page.
 */
#include "matrix/pool.h"
#include "matrix/pool_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "util/checksum.h"
#include "util/coding.h"
#include "util/status.h"

/* ---------------------------------------------------------------- pool header layout */

#define POOL_MAGIC      0x314c4f4f50564b54ull /* "TKVPOOL1" little-endian */
#define PH_MAGIC        0                     /* u64 */
#define PH_VERSION      8                     /* u32 */
#define PH_HEADER_SIZE  12                    /* u32 */
#define PH_POOL_SIZE    16                    /* u64 */
#define PH_PAGE_SIZE    24                    /* u32 */
#define PH_PAGE_COUNT   28                    /* u32 */
#define PH_DIR_OFFSET   32                    /* u64 */
#define PH_DIR_SLOTS    40                    /* u32 */
#define PH_RESERVED     44                    /* u32, 0 */
#define PH_PAGES_OFFSET 48                    /* u64 */
#define PH_UUID         56                    /* 16 bytes */
#define PH_CHECKSUM     72                    /* u32 over [0, 72) */
#define PH_USED         76

/* ---------------------------------------------------------------- row header layout */

#define RH_MAGIC    0  /* u64 POOL_ROW_MAGIC */
#define RH_HDR_LEN  8  /* u32: bytes covered by the checksum, the checksum included */
#define RH_NPAGES   12 /* u32 */
#define RH_ROW_ID   16 /* u64 */
#define RH_KIND     24 /* u16 */
#define RH_RESERVED 26 /* u16, 0 */
#define RH_BODY_LEN 28 /* u32 */
/* body at 32, page list at 32 + round4(body_len), checksum at hdr_len - 4,
 * release bitmap at round8(hdr_len). */

static inline uint64_t *dir_slot(pool *p, uint32_t s)
{
    return (uint64_t *)(void *)(p->base + p->dir_off + 8 * (uint64_t)s);
}

static inline uint64_t slot_load(pool *p, uint32_t s) { return __atomic_load_n(dir_slot(p, s), __ATOMIC_ACQUIRE); }

static inline uint64_t slot_value(uint64_t row_id, uint32_t first_page)
{
    return (row_id & 0xffffffffu) << 32 | ((uint64_t)first_page + 1);
}

uint32_t pool_default_page_size(uint64_t pool_size)
{
    uint64_t want = pool_size / 512, ps = POOL_MIN_PAGE_SIZE;
    while (ps * 2 <= want && ps * 2 <= POOL_MAX_PAGE_SIZE) ps *= 2;
    return (uint32_t)ps;
}

/* max_pages_for -- the most pages a pool with this page size may have, so
 * that a row owning every page still has its header (about 12 bytes per page
 * with the RowTable body) in its first page. */
static uint64_t max_pages_for(uint32_t page_size) { return page_size > 1024 ? (page_size - 1024) / 12 : 0; }

size_t pool_row_header_area(uint32_t body_len, uint32_t npages)
{
    uint64_t hdr_len = POOL_ROW_ROOT_SIZE + round_up(body_len, 4) + 4 * (uint64_t)npages + 4;
    return (size_t)(round_up(hdr_len, 8) + 8 * ((npages + 63) / 64));
}

/* ---------------------------------------------------------------- geometry */

void pool_set_row_compression(pool *p, int lz4) { __atomic_store_n(&p->row_lz4, lz4 != 0, __ATOMIC_RELAXED); }
int pool_row_compression(const pool *p) { return __atomic_load_n(&p->row_lz4, __ATOMIC_RELAXED); }
const char *pool_path(const pool *p) { return p->path; }
pm_region *pool_region(pool *p) { return p->reg; }
uint32_t pool_page_size(const pool *p) { return p->page_size; }
uint32_t pool_page_shift(const pool *p) { return p->page_shift; }
uint32_t pool_page_count(const pool *p) { return p->page_count; }
uint32_t pool_dir_slots(const pool *p) { return p->dir_slots; }
const uint8_t *pool_uuid(const pool *p) { return p->uuid; }
uint8_t *pool_page_addr(pool *p, uint32_t page) { return p->base + p->pages_off + ((uint64_t)page << p->page_shift); }

void pool_get_stats(pool *p, pool_stats *out)
{
    pthread_mutex_lock(&p->mu);
    out->pool_size = p->size;
    out->page_size = p->page_size;
    out->pages_total = p->page_count;
    out->pages_free = p->free_count + (uint32_t)p->limbo_n; /* limbo: free at the next pool_sync */
    out->pages_limbo = (uint32_t)p->limbo_n;
    out->rows = p->rows;
    out->dir_slots = p->dir_slots;
    out->pages_allocated = p->alloc_total;
    pthread_mutex_unlock(&p->mu);
}

/* ---------------------------------------------------------------- header */

static int hdr_corrupt(const pool *p, const char *detail)
{
    return tkv_err(TKV_CORRUPTION, "pool %s: corrupt pool header: %s", p->path, detail);
}

static void make_uuid(uint8_t uuid[16])
{
    if (getrandom(uuid, 16, GRND_NONBLOCK) == 16) return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t a = tkv_hash64(&ts, sizeof ts, (uint64_t)getpid()), b = tkv_hash64(&a, 8, 0x9e3779b97f4a7c15ull);
    memcpy(uuid, &a, 8);
    memcpy(uuid + 8, &b, 8);
}

/* set_geometry -- derives page size, count and offsets for a new pool. */
static int set_geometry(pool *p, const pool_options *o)
{
    uint32_t ps = o && o->page_size ? o->page_size : pool_default_page_size(p->size);
    uint32_t slots = o && o->dir_slots ? o->dir_slots : POOL_DEFAULT_DIR_SLOTS;
    if (ps < POOL_MIN_PAGE_SIZE_OVERRIDE || ps > POOL_MAX_PAGE_SIZE || (ps & (ps - 1)))
        return tkv_err(TKV_INVALID, "pool %s: page size %u is not a power of two in [4 KiB, 2 MiB]", p->path, ps);
    if (slots > POOL_MAX_DIR_SLOTS)
        return tkv_err(TKV_INVALID, "pool %s: %u directory slots, at most %u", p->path, slots, POOL_MAX_DIR_SLOTS);
    p->page_size = ps;
    p->dir_slots = slots;
    p->dir_off = POOL_HEADER_SIZE;
    /* pages start at a multiple of the page size: a page-cache folio (aligned
     * to its own size) no larger than a page then lies within one page, so
     * stores to one page never dirty a free neighbour's part of a folio
     * (invariant 6, pool_trim); the hole before page 0 takes no disk */
    p->pages_off = round_up(p->dir_off + 8 * (uint64_t)slots, ps);
    uint64_t count = p->size > p->pages_off ? (p->size - p->pages_off) / ps : 0;
    if (count < 2)
        return tkv_err(TKV_INVALID,
                       "pool %s: %llu bytes hold fewer than 2 pages of %u bytes after the header and "
                       "directory",
                       p->path, (unsigned long long)p->size, ps);
    if (count > max_pages_for(ps))
        return tkv_err(TKV_INVALID,
                       "pool %s: %llu pages of %u bytes: more than %llu (a row's page list must fit in "
                       "one page); use a larger page size or a smaller pool",
                       p->path, (unsigned long long)count, ps, (unsigned long long)max_pages_for(ps));
    p->page_count = (uint32_t)count;
    return 0;
}

/* format -- writes a new pool: (1) the directory is zeroed and persisted,
 * (2) the header is written and persisted with its magic still zero, (3) the
 * magic is stored with one 8-byte persisted store (the checksum already
 * covers it). A crash before (3) leaves magic 0 and an empty directory, which
 * the next open formats again (pool_open); the header's cache lines can land
 * in any order before (3) without leaving a half-valid header behind. */
static int format(pool *p)
{
    TKV_TRY(pm_reserve(p->reg, 0, pool_meta_end(p))); /* the header and the directory */
    make_uuid(p->uuid);
    memset(p->base + p->dir_off, 0, 8 * (size_t)p->dir_slots);
    pm_persist(p->reg, p->base + p->dir_off, 8 * (size_t)p->dir_slots);
    uint8_t h[POOL_HEADER_SIZE];
    memset(h, 0, sizeof h);
    enc_u64(h + PH_MAGIC, POOL_MAGIC);
    enc_u32(h + PH_VERSION, POOL_FORMAT_VERSION);
    enc_u32(h + PH_HEADER_SIZE, POOL_HEADER_SIZE);
    enc_u64(h + PH_POOL_SIZE, p->size);
    enc_u32(h + PH_PAGE_SIZE, p->page_size);
    enc_u32(h + PH_PAGE_COUNT, p->page_count);
    enc_u64(h + PH_DIR_OFFSET, p->dir_off);
    enc_u32(h + PH_DIR_SLOTS, p->dir_slots);
    enc_u64(h + PH_PAGES_OFFSET, p->pages_off);
    memcpy(h + PH_UUID, p->uuid, 16);
    enc_u32(h + PH_CHECKSUM, tkv_checksum(h, PH_CHECKSUM));
    enc_u64(h + PH_MAGIC, 0);
    pm_memcpy_persist(p->reg, p->base, h, sizeof h);                                 /* (2) */
    pm_store8_persist(p->reg, (uint64_t *)(void *)(p->base + PH_MAGIC), POOL_MAGIC); /* (3) */
    return pm_error(p->reg);
}

/* read_header -- verifies the header block and loads the geometry from it. */
static int read_header(pool *p)
{
    const uint8_t *h = p->base;
    pm_read_delay(p->reg, 1);
    if (dec_u64(h + PH_MAGIC) != POOL_MAGIC) return hdr_corrupt(p, "bad magic (not a tierkv pool)");
    if (tkv_checksum(h, PH_CHECKSUM) != dec_u32(h + PH_CHECKSUM)) return hdr_corrupt(p, "checksum mismatch");
    if (dec_u32(h + PH_VERSION) != POOL_FORMAT_VERSION) {
        return tkv_err(TKV_CORRUPTION, "pool %s: format version %u, this build reads version %u", p->path,
                       dec_u32(h + PH_VERSION), POOL_FORMAT_VERSION);
    }
    uint64_t size = dec_u64(h + PH_POOL_SIZE), dir_off = dec_u64(h + PH_DIR_OFFSET);
    uint64_t pages_off = dec_u64(h + PH_PAGES_OFFSET);
    uint32_t ps = dec_u32(h + PH_PAGE_SIZE), count = dec_u32(h + PH_PAGE_COUNT), slots = dec_u32(h + PH_DIR_SLOTS);
    if (dec_u32(h + PH_HEADER_SIZE) != POOL_HEADER_SIZE || dec_u32(h + PH_RESERVED) != 0)
        return hdr_corrupt(p, "bad header size field");
    if (size != p->size) {
        return tkv_err(TKV_CORRUPTION, "pool %s: header says %llu bytes, the file has %llu", p->path,
                       (unsigned long long)size, (unsigned long long)p->size);
    }
    if (ps < POOL_MIN_PAGE_SIZE_OVERRIDE || ps > POOL_MAX_PAGE_SIZE || (ps & (ps - 1)))
        return hdr_corrupt(p, "page size is not a power of two in [4 KiB, 2 MiB]");
    if (slots < 1 || slots > POOL_MAX_DIR_SLOTS) return hdr_corrupt(p, "directory slot count out of range");
    if (dir_off != POOL_HEADER_SIZE || pages_off % 4096 || pages_off < dir_off + 8 * (uint64_t)slots)
        return hdr_corrupt(p, "directory or page area offset out of place");
    if (count < 2 || count > max_pages_for(ps) || pages_off > size || (size - pages_off) / ps < count)
        return hdr_corrupt(p, "page count does not fit the pool");
    p->page_size = ps;
    p->page_count = count;
    p->dir_slots = slots;
    p->dir_off = dir_off;
    p->pages_off = pages_off;
    memcpy(p->uuid, h + PH_UUID, 16);
    return 0;
}

int pool_file_uuid(const char *path, uint8_t uuid[16])
{
    uint8_t h[PH_USED];
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return tkv_err_errno(errno, "open pool %s", path);
    ssize_t n = pread(fd, h, sizeof h, 0);
    int e = errno;
    close(fd);
    if (n < 0) return tkv_err_errno(e, "read the header of pool %s", path);
    if (n != (ssize_t)sizeof h || dec_u64(h + PH_MAGIC) != POOL_MAGIC ||
        tkv_checksum(h, PH_CHECKSUM) != dec_u32(h + PH_CHECKSUM))
        return tkv_err(TKV_CORRUPTION, "%s has no valid tierkv pool header", path);
    memcpy(uuid, h + PH_UUID, 16);
    return 0;
}

static int all_zero(const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (b[i]) return 0;
    return 1;
}

/* ---------------------------------------------------------------- row headers */

static int row_corrupt(const pool *p, uint64_t row_id, uint32_t slot, uint32_t first_page, const char *detail)
{
    char where[64] = "";
    if (slot != UINT32_MAX) snprintf(where, sizeof where, ", directory slot %u", slot);
    return tkv_err(TKV_CORRUPTION, "pool %s: row %llu (header at page %u%s): corrupt row header: %s", p->path,
                   (unsigned long long)row_id, first_page, where, detail);
}

/* row_parse -- reads and verifies the row header at first_page. id_hint is
 * the row id used in messages before the header's own is trusted. */
static int row_parse(pool *p, uint32_t first_page, uint32_t slot, uint64_t id_hint, pool_row *out)
{
    if (first_page >= p->page_count) return row_corrupt(p, id_hint, slot, first_page, "page index out of range");
    const uint8_t *b = pool_page_addr(p, first_page);
    pm_read_delay(p->reg, 1);
    if (dec_u64(b + RH_MAGIC) != POOL_ROW_MAGIC) return row_corrupt(p, id_hint, slot, first_page, "bad magic");
    uint32_t hdr_len = dec_u32(b + RH_HDR_LEN), npages = dec_u32(b + RH_NPAGES), body_len = dec_u32(b + RH_BODY_LEN);
    if (npages < 1 || npages > p->page_count || body_len > p->page_size)
        return row_corrupt(p, id_hint, slot, first_page, "page count or body length out of range");
    uint64_t want_len = POOL_ROW_ROOT_SIZE + round_up(body_len, 4) + 4 * (uint64_t)npages + 4;
    if (hdr_len != want_len || pool_row_header_area(body_len, npages) > p->page_size)
        return row_corrupt(p, id_hint, slot, first_page, "header length inconsistent");
    if (tkv_checksum(b, hdr_len - 4) != dec_u32(b + hdr_len - 4))
        return row_corrupt(p, id_hint, slot, first_page, "checksum mismatch");
    uint64_t row_id = dec_u64(b + RH_ROW_ID);
    if (row_id == 0 || dec_u16(b + RH_RESERVED) != 0)
        return row_corrupt(p, id_hint, slot, first_page, "row id 0 or reserved field set");
    out->slot = slot;
    out->row_id = row_id;
    out->kind = dec_u16(b + RH_KIND);
    out->first_page = first_page;
    out->npages = npages;
    out->body = b + POOL_ROW_ROOT_SIZE;
    out->body_len = body_len;
    out->pages = b + POOL_ROW_ROOT_SIZE + round_up(body_len, 4);
    out->release_bitmap = (const uint64_t *)(const void *)(b + round_up(hdr_len, 8));
    if (pool_row_page(out, 0) != first_page)
        return row_corrupt(p, row_id, slot, first_page, "page list does not start with the header page");
    for (uint32_t j = 0; j < npages; j++)
        if (pool_row_page(out, j) >= p->page_count)
            return row_corrupt(p, row_id, slot, first_page, "page index out of range");
    /* release bitmap: never the header page, no bit past npages */
    uint32_t words = (npages + 63) / 64;
    if (pool_row_released(out, 0)) return row_corrupt(p, row_id, slot, first_page, "header page marked released");
    uint64_t last = __atomic_load_n(&out->release_bitmap[words - 1], __ATOMIC_ACQUIRE);
    if (npages % 64 && (last >> (npages % 64)))
        return row_corrupt(p, row_id, slot, first_page, "release bitmap has bits past the page list");
    return 0;
}

int pool_row_read(pool *p, uint32_t slot, pool_row *out)
{
    if (slot >= p->dir_slots) return tkv_err(TKV_INVALID, "pool %s: directory slot %u out of range", p->path, slot);
    uint64_t v = slot_load(p, slot);
    if (v == 0) return tkv_err(TKV_INVALID, "pool %s: directory slot %u is empty", p->path, slot);
    uint32_t first = (uint32_t)(v & 0xffffffffu) - 1, check = (uint32_t)(v >> 32);
    TKV_TRY(row_parse(p, first, slot, check, out));
    if ((uint32_t)out->row_id != check) {
        return row_corrupt(p, check, slot, first, "the header names another row (stale directory slot)");
    }
    return 0;
}

int pool_row_read_page(pool *p, uint32_t first_page, pool_row *out)
{
    return row_parse(p, first_page, UINT32_MAX, 0, out);
}

int pool_row_write_header(pool *p, uint64_t row_id, uint16_t kind, const void *body, uint32_t body_len,
                          const uint32_t *pages, uint32_t npages)
{
    if (row_id == 0 || npages == 0)
        return tkv_err(TKV_INVALID, "pool %s: row header with row id 0 or no pages", p->path);
    size_t area = pool_row_header_area(body_len, npages);
    if (area > p->page_size) {
        return tkv_err(TKV_INVALID, "pool %s: row %llu header needs %zu bytes, a page has %u", p->path,
                       (unsigned long long)row_id, area, p->page_size);
    }
    uint8_t *h = calloc(1, area);
    if (!h) return tkv_err(TKV_NO_MEMORY, "pool %s: out of memory encoding a row header", p->path);
    uint32_t hdr_len = (uint32_t)(POOL_ROW_ROOT_SIZE + round_up(body_len, 4) + 4 * (uint64_t)npages + 4);
    enc_u64(h + RH_MAGIC, POOL_ROW_MAGIC);
    enc_u32(h + RH_HDR_LEN, hdr_len);
    enc_u32(h + RH_NPAGES, npages);
    enc_u64(h + RH_ROW_ID, row_id);
    enc_u16(h + RH_KIND, kind);
    enc_u32(h + RH_BODY_LEN, body_len);
    if (body_len) memcpy(h + POOL_ROW_ROOT_SIZE, body, body_len);
    uint8_t *list = h + POOL_ROW_ROOT_SIZE + round_up(body_len, 4);
    for (uint32_t j = 0; j < npages; j++) enc_u32(list + 4 * (size_t)j, pages[j]);
    enc_u32(h + hdr_len - 4, tkv_checksum(h, hdr_len - 4));
    /* the release bitmap after the checksum is all zero (calloc) */
    pm_memcpy_persist(p->reg, pool_page_addr(p, pages[0]), h, area);
    free(h);
    return 0;
}

/* ---------------------------------------------------------------- directory */

int pool_commit_row(pool *p, uint32_t first_page, uint64_t row_id, uint32_t *slot)
{
    pool_row r;
    if (row_id == 0) return tkv_err(TKV_INVALID, "pool %s: row id 0 cannot be committed", p->path);
    /* invariant 8 (a): the row's pages and header are on the device before
     * its slot can be (nothing is stored yet if this fails) */
    TKV_TRY(pool_sync(p));
    pthread_mutex_lock(&p->mu);
    int rc = row_parse(p, first_page, UINT32_MAX, row_id, &r);
    if (rc < 0) goto out;
    if (r.row_id != row_id) {
        rc = tkv_err(TKV_INVALID, "pool %s: commit of row %llu, but page %u holds row %llu", p->path,
                     (unsigned long long)row_id, first_page, (unsigned long long)r.row_id);
        goto out;
    }
    uint32_t free_slot = UINT32_MAX;
    for (uint32_t s = 0; s < p->dir_slots; s++) {
        uint64_t v = slot_load(p, s);
        if (v == 0) {
            if (free_slot == UINT32_MAX) free_slot = s;
        } else if ((uint32_t)(v & 0xffffffffu) - 1 == first_page) {
            rc = tkv_err(TKV_INVALID, "pool %s: row %llu is already committed (slot %u)", p->path,
                         (unsigned long long)row_id, s);
            goto out;
        }
    }
    if (free_slot == UINT32_MAX) {
        rc = tkv_err(TKV_NO_SPACE, "pool %s: row directory full (%u rows)", p->path, p->dir_slots);
        goto out;
    }
    /* the commit point: one 8-byte persisted store */
    pm_store8_persist(p->reg, dir_slot(p, free_slot), slot_value(row_id, first_page));
    p->rows++;
    *slot = free_slot;
out:
    pthread_mutex_unlock(&p->mu);
    /* invariant 8 (b): the slot is on the device before the caller names the
     * row anywhere else (the MANIFEST). If this sync fails the slot is
     * committed in the page cache, the pool's error is sticky, and the
     * caller installs nothing: the row is dropped at the next open. */
    if (rc == 0) rc = pool_sync(p);
    return rc;
}

int pool_remove_row(pool *p, uint32_t slot)
{
    pthread_mutex_lock(&p->mu);
    int rc = 0;
    if (slot >= p->dir_slots || slot_load(p, slot) == 0) {
        rc = tkv_err(TKV_INVALID, "pool %s: remove of directory slot %u, which is %s", p->path, slot,
                     slot >= p->dir_slots ? "out of range" : "empty");
    } else {
        pm_store8_persist(p->reg, dir_slot(p, slot), 0); /* the removal's commit point */
        p->rows--;
    }
    pthread_mutex_unlock(&p->mu);
    return rc;
}

int pool_drop_row(pool *p, uint32_t slot)
{
    pool_row r;
    TKV_TRY(pool_row_read(p, slot, &r)); /* verified at pool_open: its page list is trustworthy */
    uint32_t *pages = malloc(((size_t)r.npages ? r.npages : 1) * sizeof *pages);
    if (!pages) return tkv_err(TKV_NO_MEMORY, "pool %s: out of memory dropping a row", p->path);
    uint32_t n = 0;
    for (uint32_t j = 0; j < r.npages; j++)
        if (!pool_row_released(&r, j)) pages[n++] = pool_row_page(&r, j);
    int rc = pool_remove_row(p, slot);                                       /* (1) the removal's commit point */
    for (uint32_t j = 0; rc == 0 && j < n; j++) pool_free_page(p, pages[j]); /* (2) invariant 5 */
    free(pages);
    return rc;
}

int pool_row_release(pool *p, uint32_t first_page, uint32_t j)
{
    pool_row r;
    pthread_mutex_lock(&p->mu);
    int rc = row_parse(p, first_page, UINT32_MAX, 0, &r);
    if (rc < 0) goto out;
    if (j == 0 || j >= r.npages) {
        rc = tkv_err(TKV_INVALID, "pool %s: row %llu: release of page %u of %u (page 0 holds the header)", p->path,
                     (unsigned long long)r.row_id, j, r.npages);
        goto out;
    }
    if (pool_row_released(&r, j)) goto out;
    /* (1) persist the release bit: from here the page is free after a reopen */
    uint64_t *word = (uint64_t *)(uintptr_t)&r.release_bitmap[j / 64];
    pm_store8_persist(p->reg, word, __atomic_load_n(word, __ATOMIC_ACQUIRE) | 1ull << (j % 64));
    /* (2) its blocks back to the file system (invariant 6), (3) hand it out again */
    pool_give_back(p, pool_row_page(&r, j));
out:
    pthread_mutex_unlock(&p->mu);
    return rc;
}

int pool_rows(pool *p, pool_row_id **rows, size_t *n)
{
    *rows = NULL;
    *n = 0;
    pthread_mutex_lock(&p->mu);
    int rc = 0;
    pool_row_id *out = NULL;
    if (p->rows) {
        out = malloc(p->rows * sizeof *out);
        if (!out) {
            rc = tkv_err(TKV_NO_MEMORY, "pool %s: out of memory listing rows", p->path);
            goto done;
        }
    }
    size_t k = 0;
    for (uint32_t s = 0; s < p->dir_slots && k < p->rows; s++) {
        if (slot_load(p, s) == 0) continue;
        pool_row r;
        rc = pool_row_read(p, s, &r);
        if (rc < 0) goto done;
        uint32_t rel = 0;
        for (uint32_t j = 1; j < r.npages; j++) rel += (uint32_t)pool_row_released(&r, j);
        out[k++] = (pool_row_id){s, r.row_id, r.first_page, r.npages, rel};
    }
    *rows = out;
    *n = k;
    out = NULL;
done:
    pthread_mutex_unlock(&p->mu);
    free(out);
    return rc;
}

/* ---------------------------------------------------------------- open / close */

/* rebuild -- invariant 2: every page is free except those listed, and not
 * released, by a committed row. Verifies each committed row's header. */
static int rebuild(pool *p)
{
    size_t words = ((size_t)p->page_count + 63) / 64;
    p->free_bits = calloc(words, 8);
    if (!p->free_bits) return tkv_err(TKV_NO_MEMORY, "pool %s: out of memory for the page bitmap", p->path);
    for (uint32_t pg = 0; pg < p->page_count; pg++) page_set_free(p, pg);
    p->free_count = p->page_count;
    p->rows = 0;
    for (uint32_t s = 0; s < p->dir_slots; s++) {
        if (slot_load(p, s) == 0) continue;
        pool_row r;
        TKV_TRY(pool_row_read(p, s, &r));
        for (uint32_t j = 0; j < r.npages; j++) {
            if (pool_row_released(&r, j)) continue;
            uint32_t pg = pool_row_page(&r, j);
            if (!page_is_free(p, pg)) {
                return row_corrupt(p, r.row_id, s, r.first_page,
                                   "its page list names a page another row (or itself) already owns");
            }
            page_set_used(p, pg);
            p->free_count--;
            if (pg >= p->high_water) p->high_water = pg + 1;
        }
        p->rows++;
    }
    return 0;
}

/* check_unformatted -- *unformatted = 1 for an existing file whose header
 * has no magic: a creation cut short -- unless its directory area holds
 * anything: then it is a pool whose header was damaged, and formatting it
 * would throw its rows away (TKV_CORRUPTION). Blocks are reserved before a
 * read (a read of a hole allocates on tmpfs: a SIGBUS on a full one): the
 * header, which an existing pool has already, so a full file system does
 * not stop its open. */
static int check_unformatted(pool *p, int file_created, int *unformatted)
{
    TKV_TRY(pm_reserve(p->reg, 0, POOL_HEADER_SIZE));
    *unformatted = !file_created && dec_u64(p->base + PH_MAGIC) == 0;
    if (!*unformatted) return 0;
    uint64_t dir_area = (uint64_t)POOL_MAX_DIR_SLOTS * 8;
    if (dir_area > p->size - POOL_HEADER_SIZE) dir_area = p->size - POOL_HEADER_SIZE;
    TKV_TRY(pm_reserve(p->reg, POOL_HEADER_SIZE, dir_area));
    if (!all_zero(p->base + POOL_HEADER_SIZE, (size_t)dir_area))
        return tkv_err(TKV_CORRUPTION,
                       "pool %s: the header has no magic but the row directory is not empty (damaged header; "
                       "not formatting it)",
                       p->path);
    return 0;
}

/* pool_lock -- opens path for its flock (p->lock_fd) and takes `how`
 * (LOCK_EX or LOCK_SH) without waiting: 0, TKV_BUSY naming `holder` when
 * someone holds a conflicting lock, or the system's error. */
static int pool_lock(pool *p, const char *path, int how, const char *holder)
{
    p->lock_fd = open(path, O_RDONLY | O_CLOEXEC);
    if (p->lock_fd < 0) return tkv_err_errno(errno, "pool %s: open for locking", path);
    if (flock(p->lock_fd, how | LOCK_NB) == 0) return 0;
    int e = errno;
    return e == EWOULDBLOCK ? tkv_err(TKV_BUSY, "pool %s is in use by %s", path, holder)
                            : tkv_err_errno(e, "pool %s: flock", path);
}

/* pool_new -- an unmapped, unlocked pool for path (what pool_open and
 * pool_open_readonly start from); pool_close frees it. */
static int pool_new(const char *path, pool **out)
{
    pool *p = calloc(1, sizeof *p);
    if (!p) return tkv_err(TKV_NO_MEMORY, "pool %s: out of memory", path);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->trim_cv, NULL);
    p->trim_page = POOL_PAGE_NONE;
    p->lock_fd = -1;
    if (!(p->path = strdup(path))) {
        pool_close(p);
        return tkv_err(TKV_NO_MEMORY, "pool %s: out of memory", path);
    }
    *out = p;
    return 0;
}

int pool_open(const char *path, uint64_t size, pm_mode mode, pm_profile profile, const pool_options *o, pool **out,
              int *created)
{
    *out = NULL;
    if (created) *created = 0;
    if (!path) return tkv_err(TKV_INVALID, "pool_open: NULL path");
    pool *p;
    TKV_TRY(pool_new(path, &p));
    int rc, file_created = 0;
    rc = pm_open(path, size, mode, profile, &p->reg, &file_created);
    if (rc < 0) goto fail;
    /* One opener at a time: the database directory's LOCK does not cover a
     * pmem_path outside the directory. (flock is per open file description,
     * so a second open in this process conflicts too.) */
    if ((rc = pool_lock(p, path, LOCK_EX, "another open database")) < 0) goto fail;
    p->base = pm_base(p->reg);
    p->size = pm_size(p->reg);
    if (p->size < POOL_HEADER_SIZE) {
        rc = tkv_err(file_created ? TKV_INVALID : TKV_CORRUPTION, "pool %s: %llu bytes, smaller than the header", path,
                     (unsigned long long)p->size);
        goto fail;
    }
    int unformatted = 0;
    rc = check_unformatted(p, file_created, &unformatted);
    if (rc < 0) goto fail;
    if (file_created || unformatted) {
        rc = set_geometry(p, o);
        if (rc == 0) rc = format(p);
        /* the header (its uuid goes into the MANIFEST next) and the empty
         * directory are on the device before pool_open returns */
        if (rc == 0) rc = pm_sync(p->reg);
        if (rc < 0) goto fail;
        if (created) *created = 1;
    } else {
        rc = read_header(p);
        if (rc == 0) rc = pm_reserve(p->reg, 0, pool_meta_end(p)); /* the directory (allocated already) */
        if (rc < 0) goto fail;
    }
    p->page_shift = (uint32_t)__builtin_ctz(p->page_size);
    /* the whole mapping keeps the 4 KiB folios pm_open gave it, the page
     * area too (docs/pmem.md: 2 MiB folios made the prefault thread hold a
     * CPU for tens of milliseconds per folio); rowtable_willneed reads ahead
     * where a reader walks a row */
    rc = rebuild(p);
    /* After a process crash the page cache holds releases and removals the
     * device may not have: sync them before punching the pages they freed
     * (invariant 8). */
    p->barriers = pm_needs_sync(p->reg);
    if (rc == 0) rc = pm_sync(p->reg);
    if (rc < 0) goto fail;
    pool_discard_free(p);
    p->writable = 1;
    *out = p;
    return 0;
fail:
    pool_close(p);
    return rc;
}

/* pool_open_readonly -- pool_open's checks on a read-only mapping under a
 * shared lock; nothing is formatted, reserved or given back. */
int pool_open_readonly(const char *path, pool **out)
{
    *out = NULL;
    if (!path) return tkv_err(TKV_INVALID, "pool_open_readonly: NULL path");
    pool *p;
    TKV_TRY(pool_new(path, &p));
    int rc;
    /* shared: refused while a database holds the pool (its lock is
     * exclusive), and an open of the pool is refused while this one lasts */
    if ((rc = pool_lock(p, path, LOCK_SH, "an open database")) < 0) goto fail;
    if ((rc = pm_open_readonly(path, &p->reg)) < 0) goto fail;
    p->base = pm_base(p->reg);
    p->size = pm_size(p->reg);
    if (p->size < POOL_HEADER_SIZE) {
        rc = tkv_err(TKV_CORRUPTION, "pool %s: %llu bytes, smaller than the header", path, (unsigned long long)p->size);
        goto fail;
    }
    if (dec_u64(p->base + PH_MAGIC) == 0) {
        uint64_t dir_area = (uint64_t)POOL_MAX_DIR_SLOTS * 8;
        if (dir_area > p->size - POOL_HEADER_SIZE) dir_area = p->size - POOL_HEADER_SIZE;
        rc = all_zero(p->base + POOL_HEADER_SIZE, (size_t)dir_area)
                 ? 1 /* a creation cut short: pool_open formats it */
                 : tkv_err(TKV_CORRUPTION,
                           "pool %s: the header has no magic but the row directory is not empty "
                           "(damaged header)",
                           path);
        goto fail;
    }
    if ((rc = read_header(p)) < 0) goto fail;
    p->page_shift = (uint32_t)__builtin_ctz(p->page_size);
    if ((rc = rebuild(p)) < 0) goto fail;
    *out = p;
    return 0;
fail:
    pool_close(p);
    return rc;
}

/* pool_header_info -- the geometry and identity pool_open read from the header. */
void pool_header_info(const pool *p, pool_header *out)
{
    out->pool_size = p->size;
    out->page_size = p->page_size;
    out->page_count = p->page_count;
    out->dir_offset = p->dir_off;
    out->dir_slots = p->dir_slots;
    out->pages_offset = p->pages_off;
    memcpy(out->uuid, p->uuid, sizeof out->uuid);
}

/* pool_dir_slot -- the raw value of directory slot s. */
uint64_t pool_dir_slot(pool *p, uint32_t s) { return s < p->dir_slots ? slot_load(p, s) : 0; }

int pool_close(pool *p)
{
    if (!p) return 0;
    if (p->writable && pm_error(p->reg) == 0) {
        /* Free pages give their blocks back before pm_close's msync, so
         * that what is dirty in them (rows drained since their last
         * write-back, the pages the prefault thread populated ahead) is not
         * written back for nothing. Their releases were persisted before
         * they went free (invariant 4), as for pool_trim. */
        pm_prefault_cancel(p->reg);
        if (pool_sync(p) == 0) { /* invariant 8: limbo's releases on the device, then punched */
            pthread_mutex_lock(&p->mu);
            pool_limbo_flush(p);
            pthread_mutex_unlock(&p->mu);
            pool_discard_free(p);
        }
    }
    int rc = pm_close(p->reg);
    if (p->lock_fd >= 0) close(p->lock_fd); /* releases the flock */
    pthread_cond_destroy(&p->trim_cv);
    pthread_mutex_destroy(&p->mu);
    free(p->free_bits);
    free(p->limbo);
    free(p->path);
    free(p);
    return rc;
}

int pool_error(pool *p) { return pm_error(p->reg); }
