// SPDX-License-Identifier: Apache-2.0
/*
 * rowtable_handle.c -- a row's DRAM side: the handle (allocation, close,
 * getters and properties) and the key filter built over its user keys
 * (nothing of either is on media; the struct is in rowtable_int.h).
 */
#include "matrix/rowtable_int.h"

#include <stdlib.h>
#include <string.h>

#include "util/checksum.h"
#include "util/status.h"

/* The key filter: a cache-line-blocked bloom filter over the row's user
 * keys, kept in DRAM only (built by the builder and again by rowtable_open;
 * nothing on media). FILTER_BITS_PER_KEY bits per entry, FILTER_PROBES bits
 * set per key inside one 64-byte block, so a lookup costs one cache miss per
 * row -- ~1.2 % false positives. The block comes from the hash's high 32
 * bits, the bits from a multiplicative remix of it, 9 bits each. */
#define FILTER_BITS_PER_KEY 10u
#define FILTER_PROBES       6u
#define FILTER_BLOCK_WORDS  8u

/* ---------------------------------------------------------------- handle */

/* rt_alloc -- a zeroed handle for npages pages of p (page index, address
 * and released arrays allocated); NULL on out of memory. */
rowtable *rt_alloc(pool *p, uint32_t npages)
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

/* rowtable_close -- frees the DRAM handle only. */
void rowtable_close(rowtable *r)
{
    if (!r) return;
    rd_list_free(&r->rd);
    rd_frags_unref(r->rd_frags);
    free(r->filter);
    free(r->pages);
    free(r->addr);
    free(r->released);
    free(r);
}

/* rowtable_id / count / cursor / max_seq / min_seq -- the getters of rowtable.h. */
uint64_t rowtable_id(const rowtable *r) { return r->row_id; }
uint32_t rowtable_count(const rowtable *r) { return r->n; }
uint32_t rowtable_cursor(const rowtable *r) { return cursor_load(r); }
uint64_t rowtable_max_seq(const rowtable *r) { return r->max_seq; }
uint64_t rowtable_min_seq(const rowtable *r) { return r->min_seq; }

const rd_list *rowtable_range_del_list(const rowtable *r) { return &r->rd; }
const rd_frags *rowtable_range_dels(const rowtable *r) { return r->rd_frags; }

/* rt_take_range_dels -- moves from's format version and range tombstones
 * (list, fragments, block place) into r, and closes from. */
void rt_take_range_dels(rowtable *r, rowtable *from)
{
    r->version = from->version;
    r->rd = from->rd;
    r->rd_frags = from->rd_frags;
    r->rd_off = from->rd_off;
    r->rd_len = from->rd_len;
    memset(&from->rd, 0, sizeof from->rd);
    from->rd_frags = NULL;
    rowtable_close(from);
}

/* rowtable_fwd -- the forward pointer of live entry i, from its metadata. */
uint32_t rowtable_fwd(const rowtable *r, uint32_t i)
{
    if (i >= r->n || i < cursor_load(r)) return ROWTABLE_NO_FWD;
    return dec_u32(meta_ptr(r, i) + ME_FWD);
}

/* rowtable_get_props -- the handle's fields, counted released pages and DRAM footprint. */
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
                      (size_t)r->filter_blocks * FILTER_BLOCK_WORDS * sizeof(uint64_t) + 3 * (size_t)r->rd_len;
    out->num_range_dels = r->rd.n;
    out->lz4 = r->lz4;
    out->lz4_values = r->lz4_values;
}

/* ---------------------------------------------------------------- key filter */

/* rt_filter_alloc -- an empty filter sized for n keys. 0 or TKV_NO_MEMORY. */
int rt_filter_alloc(rowtable *r, uint64_t n)
{
    uint64_t blocks = (n * FILTER_BITS_PER_KEY + 511) / 512;
    if (blocks == 0) blocks = 1;
    if (blocks > UINT32_MAX) blocks = UINT32_MAX;
    r->filter = aligned_alloc(64, blocks * FILTER_BLOCK_WORDS * sizeof(uint64_t));
    if (!r->filter)
        return tkv_err(TKV_NO_MEMORY, "out of memory for the key filter of row %llu", (unsigned long long)r->row_id);
    memset(r->filter, 0, blocks * FILTER_BLOCK_WORDS * sizeof(uint64_t));
    r->filter_blocks = (uint32_t)blocks;
    return 0;
}

/* filter_block -- the 64-byte block of the filter for hash h. */
static inline uint64_t *filter_block(const rowtable *r, uint64_t h)
{
    return r->filter + (((h >> 32) * r->filter_blocks) >> 32) * FILTER_BLOCK_WORDS;
}

/* rt_filter_add -- sets the FILTER_PROBES bits of hash h in its block. */
void rt_filter_add(rowtable *r, uint64_t h)
{
    uint64_t *b = filter_block(r, h), g = h * 0x9e3779b97f4a7c15ull;
    for (unsigned j = 0; j < FILTER_PROBES; j++, g >>= 9) b[(g & 511) >> 6] |= 1ull << (g & 63);
}

/* rowtable_may_contain -- 0 if a bit of key_hash is clear (no filter: 1). */
int rowtable_may_contain(const rowtable *r, uint64_t key_hash)
{
    if (!r->filter) return 1;
    const uint64_t *b = filter_block(r, key_hash);
    uint64_t g = key_hash * 0x9e3779b97f4a7c15ull;
    for (unsigned j = 0; j < FILTER_PROBES; j++, g >>= 9)
        if (!(b[(g & 511) >> 6] & (1ull << (g & 63)))) return 0;
    return 1;
}

/* rowtable_key_hash -- the filter's hash of a user key. */
uint64_t rowtable_key_hash(tkv_slice ukey) { return tkv_hash64(ukey.p, ukey.n, 0); }
