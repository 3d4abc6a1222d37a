// SPDX-License-Identifier: Apache-2.0
/*
 * rowtable_drain.c -- a row drained by column compaction: the drain cursor
 * (moves forward only, never between two versions of one user key), the
 * pages that lie wholly below it and their release to the pool, the
 * released-pages invariant that open checks, and the drop of a fully
 * drained row. When each may be called (reader and MANIFEST conditions):
 * rowtable.h.
 */
#include "matrix/rowtable_int.h"

#include <stdlib.h>

#include "util/status.h"

/* ---------------------------------------------------------------- released pages */

/* first_entry_of_meta_page -- index of the first entry whose metadata lies
 * in meta page j or later (capped at n). */
static uint32_t first_entry_of_meta_page(const rowtable *r, uint32_t j)
{
    uint64_t start = (uint64_t)j * r->page_size;
    if (start <= r->meta_off) return 0;
    return (uint32_t)min_u64(r->n, (start - r->meta_off) / ROWTABLE_META_ENTRY_SIZE);
}

/* rt_check_released -- the released pages are a prefix of the metadata pages
 * after the header page and a prefix of the data pages (the cursor only
 * advances); computes min_cursor, the first entry none of whose bytes lie in
 * a released page. */
int rt_check_released(rowtable *r)
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
    TKV_TRY(rt_entry_decode(r, a, &ma, &ea));
    TKV_TRY(rt_entry_decode(r, b, &mb, &eb));
    uint8_t *buf = malloc(ma.klen);
    if (!buf) return tkv_err(TKV_NO_MEMORY, "out of memory comparing keys of row %llu", (unsigned long long)r->row_id);
    rt_data_copy(r, ea.key_off, buf, ma.klen);
    *same = rt_data_cmp(r, eb.key_off, buf, ma.klen) == 0;
    free(buf);
    return 0;
}

/* rowtable_set_cursor -- moves the cursor forward, onto a user-key change. */
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
     * change; a cursor that does not is refused. A cursor set again where it
     * is (recovery re-applies the MANIFEST's) was checked when it got there:
     * the entry before it may lie in released pages, whose blocks pool_trim
     * gives back (zeros), so it is not read again. */
    if (cursor > cur && cursor < r->n) {
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
 * dead when it ends at or before the first byte of entry c (when c == n: of
 * the range tombstone block, or all of them in a row without one). Both sets
 * are prefixes, so releases keep rt_check_released's invariant.
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
    /* the range tombstone block (version 2) stays: it lies after the entries */
    uint64_t first_live = c < r->n ? dec_u64(meta_ptr(r, c) + ME_DATA_OFF) : r->rd_len ? r->rd_off : UINT64_MAX;
    for (uint32_t d = 0; d < r->ndata; d++) {
        if (first_live != UINT64_MAX && (uint64_t)(d + 1) * r->page_size > first_live) break;
        uint32_t j = r->nmeta + d;
        if (!r->released[j] && cnt++ < cap) list[cnt - 1] = j;
    }
    return cnt;
}

/* rowtable_release_dead_pages -- each dead page released (pool_row_release:
 * its release bit persisted, then the page freed); min_cursor follows. */
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
    int rc2 = rt_check_released(r); /* min_cursor follows the releases */
    return rc ? rc : rc2;
}

/* ---------------------------------------------------------------- drop */

/* rowtable_drop -- the removal's persist order: (1) the directory slot
 * cleared and persisted, (2) only then the pages freed (pool.h invariant 5),
 * (3) the handle closed. */
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
