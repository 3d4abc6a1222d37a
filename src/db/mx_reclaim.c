// SPDX-License-Identifier: Apache-2.0
/*
 * mx_reclaim.c -- giving the pool's space back: raising rows' own cursors to
 * the release floor of the live versions, releasing dead pages, dropping
 * rows no version lists (invariants 2 and 3 of mx_int.h); and telling how
 * full the pool is, and whether only open views hold it full (mx.h).
 */
#include "db/mx_int.h"

void mx_collect(tkv_db *db)
{
    struct mx_state *mx = db->mx;
    size_t keep = 0;
    for (size_t i = 0; i < mx->nrows; i++) {
        rowtable *r = mx->rows[i];
        uint64_t floor;
        int rc = 0;
        if (!vset_row_floor(db->vs, rowtable_id(r), &floor)) {
            __atomic_store_n(&mx->dram_bytes, mx->dram_bytes - mx_row_dram(r), __ATOMIC_RELAXED);
            rc = rowtable_drop(r); /* invariant 3: slot cleared, then pages freed */
            if (rc == 0) ctr_add(&mx->ctr.rows_dropped, 1);
            if (rc < 0) db_set_bg_error(db, rc);
            continue;
        }
        mx->rows[keep++] = r;
        if (floor > rowtable_cursor(r)) { /* invariant 2 */
            uint32_t released = 0;
            rc = rowtable_set_cursor(r, (uint32_t)floor);
            if (rc == 0) rc = rowtable_release_dead_pages(r, &released);
            ctr_add(&mx->ctr.pages_released, released);
            if (rc < 0) db_set_bg_error(db, rc);
        }
    }
    mx->nrows = keep;
    int prc = pool_error(mx->pool); /* a persist of a flush, column or release failed (msync) */
    if (prc < 0) db_set_bg_error(db, prc);
}

int mx_pinned_full(tkv_db *db)
{
    struct mx_state *mx = db->mx;
    if (!mx || !__atomic_load_n(&db->flush_blocked, __ATOMIC_RELAXED) ||
        __atomic_load_n(&db->open_iterators, __ATOMIC_ACQUIRE) == 0)
        return 0;
    version *v = vset_current(db->vs);
    rowset *rs = db->sv->rows;
    for (size_t i = 0; rs && i < rs->n; i++) {
        uint64_t cur;
        if (!version_row_cursor(v, rowtable_id(rs->rows[i]), &cur)) continue; /* drained and removed */
        if (cur < rowtable_count(rs->rows[i])) return 0; /* columns still have work: ordinary back-pressure */
    }
    ctr_add(&mx->ctr.pinned_switches, 1);
    return 1;
}

/* pending_pages -- the pool pages the memtables not yet in the pool will
 * take (mx_fill): their batch bytes at the pages per batch byte of earlier
 * flushes of full memtables, or, before one, one page per page_size batch
 * bytes plus one. Caller holds mu. */
static double pending_pages(tkv_db *db, const pool_stats *st)
{
    struct mx_state *mx = db->mx;
    const superversion *sv = db->sv;
    uint64_t batch = memtable_batch_bytes(sv->mem);
    size_t from = mx->flush_building && st->pages_allocated != mx->flush_alloc_mark ? 1 : 0;
    for (size_t i = from; i < sv->nimm; i++) batch += memtable_batch_bytes(sv->imm[i]);
    if (!batch) return 0.0;
    uint64_t fb = ctr_get(&mx->ctr.full_flush_batch_bytes), fp = ctr_get(&mx->ctr.full_flush_pages);
    if (fb && fp) return (double)batch * (double)fp / (double)fb;
    return (double)batch / (double)st->page_size + 1.0;
}

double mx_fill(tkv_db *db)
{
    if (!db->mx) return 0.0;
    pool_stats st;
    pool_get_stats(db->mx->pool, &st);
    double pages = st.pages_total
                       ? ((double)(st.pages_total - st.pages_free) + pending_pages(db, &st)) / (double)st.pages_total
                       : 0.0;
    uint64_t share = db->dram.share[BUDGET_ROWS];
    double dram = share ? (double)mx_dram_bytes(db) / (double)share : 0.0;
    if (dram > 1.0) dram = 1.0; /* a lone row may pass its share */
    return dram > pages ? dram : pages;
}

size_t mx_dram_bytes(tkv_db *db) { return db->mx ? __atomic_load_n(&db->mx->dram_bytes, __ATOMIC_RELAXED) : 0; }

int mx_rows_over_budget(tkv_db *db, size_t entries, size_t bytes)
{
    struct mx_state *mx = db->mx;
    uint64_t share = db->dram.share[BUDGET_ROWS];
    if (!share || mx->nrows == 0) return 0; /* no budget, or nothing to drain: a lone row may pass its share */
    pool_stats st;
    pool_get_stats(mx->pool, &st);
    /* the new handle (docs/format-matrix.md section 7): 10 bits of filter per
     * entry in 64-byte blocks, 13 bytes per page, the fields */
    size_t est = (entries * 10 + 511) / 512 * 64 + (bytes / st.page_size + 3) * 13 + 256;
    return mx->dram_bytes + est > share;
}
