// SPDX-License-Identifier: Apache-2.0
/*
 * mx_props.c -- the matrix container's property text: tkv.matrix, tkv.pmem
 * and its lines in tkv.stats (mx.h; fields in docs/options.md).
 */
#include "db/mx_int.h"

#include "util/appendf.h"

void mx_stat_counts(tkv_db *db, uint64_t *columns, uint64_t *pool_bytes)
{
    *columns = *pool_bytes = 0;
    if (!db->mx) return;
    pool_stats st;
    pool_get_stats(db->mx->pool, &st);
    *columns = ctr_get(&db->mx->ctr.columns);
    *pool_bytes = (uint64_t)(st.pages_total - st.pages_free) * st.page_size;
}

void mx_stats_line(tkv_db *db, tkv_buf *b, int *oom)
{
    struct mx_state *mx = db->mx;
    if (!mx) return;
    pool_stats st;
    pool_get_stats(mx->pool, &st);
    pm_stats ps;
    pm_get_stats(pool_region(mx->pool), &ps);
    /* busy: a column is running or a compactor waits to be drained (the
     * container is above its trigger) -- benchmarks wait for busy=0. */
    buf_appendf(b, oom, "matrix: rows=%zu pages_used=%u pages_free=%u columns=%llu flush_no_space=%llu busy=%d\n",
                db->sv->rows->n, st.pages_total - st.pages_free, st.pages_free,
                (unsigned long long)ctr_get(&mx->ctr.columns), (unsigned long long)ctr_get(&mx->ctr.flush_no_space),
                mx->inflight != NULL || mx->compactor_max_id != 0);
    buf_appendf(b, oom, "pmem: write_bytes=%llu persist_calls=%llu\n", (unsigned long long)ps.bytes_persisted,
                (unsigned long long)ps.persist_calls);
}

/* writeback_line -- the pool's paced write-back (pmem_writeback, pmem.h). */
static void writeback_line(const pm_stats *ps, tkv_buf *b, int *oom)
{
    /* "errors=", not "failures=": readers find columns' failures= by name */
    buf_appendf(b, oom,
                "writeback: bytes=%llu pending=%llu expired=%llu dropped=%llu errors=%llu device_flushes=%llu\n",
                (unsigned long long)ps->wb_bytes, (unsigned long long)ps->wb_pending,
                (unsigned long long)ps->wb_expired, (unsigned long long)ps->wb_dropped,
                (unsigned long long)ps->wb_failures, (unsigned long long)ps->wb_device_flushes);
    buf_appendf(b, oom, "prefault: bytes=%llu writable=%llu zeroed=%llu\n", (unsigned long long)ps->prefault_bytes,
                (unsigned long long)ps->prefault_write_bytes, (unsigned long long)ps->prefault_zero_bytes);
}

/* seeks_line -- iterator seeks over the rows (rowtable_iters_at). */
static void seeks_line(const row_seek_stats *k, int hints, tkv_buf *b, int *oom)
{
    uint64_t seeks = ctr_get(&k->seeks), used = ctr_get(&k->hints_used), rej = ctr_get(&k->hints_rejected);
    uint64_t cmp = ctr_get(&k->comparisons);
    buf_appendf(b, oom,
                "seeks: count=%llu hints=%s rows_searched=%llu hinted=%llu hint_rejected=%llu comparisons=%llu "
                "comparisons_per_seek=%.2f\n",
                (unsigned long long)seeks, hints ? "on" : "off", (unsigned long long)ctr_get(&k->rows_searched),
                (unsigned long long)used, (unsigned long long)rej, (unsigned long long)cmp,
                seeks ? (double)cmp / (double)seeks : 0.0);
}

/* pmem_report -- the text of tkv.pmem: the pmem mode, the pool's geometry,
 * its disk space, persists and their errors, write-back. */
static void pmem_report(struct mx_state *mx, tkv_buf *b, int *oom)
{
    pool_stats st;
    pool_get_stats(mx->pool, &st);
    pm_region *reg = pool_region(mx->pool);
    pm_stats ps;
    pm_get_stats(reg, &ps);
    pm_mode mode = pm_mode_in_use(reg);
    buf_appendf(b, oom, "mode: %s\n", pm_mode_name(mode));
    buf_appendf(b, oom, "durable: %s\n",
                mode == PM_VOLATILE   ? "no (survives a process crash, not a power cut; opt-in)"
                : mode == PM_EMULATED ? "yes (file system: rows synced at commit)"
                : mode == PM_CRASHSIM ? "simulated (tests)"
                                      : "yes");
    buf_appendf(b, oom, "profile: %s\n", pm_profile_in_use(reg) == PM_PROFILE_OPTANE ? "optane" : "none");
    buf_appendf(b, oom, "path: %s\n", mx->path);
    buf_appendf(b, oom, "pool: size=%llu page_size=%u pages=%u free=%u limbo=%u dir_slots=%u\n",
                (unsigned long long)st.pool_size, st.page_size, st.pages_total, st.pages_free, st.pages_limbo,
                st.dir_slots);
    pool_space_stats sp;
    if (pool_space(mx->pool, &sp) < 0) sp.allocated = 0; /* (fstat failed: reported as 0) */
    buf_appendf(b, oom, "space: allocated=%llu used=%llu discarded=%llu trimmed=%llu no_space=%llu\n",
                (unsigned long long)sp.allocated, (unsigned long long)sp.used, (unsigned long long)sp.discarded,
                (unsigned long long)sp.trimmed, (unsigned long long)sp.reserve_failures);
    buf_appendf(b, oom, "persist: calls=%llu bytes=%llu errors=%llu\n", (unsigned long long)ps.persist_calls,
                (unsigned long long)ps.bytes_persisted, (unsigned long long)ps.persist_errors);
    buf_appendf(b, oom, "sync: calls=%llu ms=%.1f\n", (unsigned long long)ps.syncs, (double)ps.sync_ns / 1e6);
    writeback_line(&ps, b, oom);
}

/* rows_line -- tkv.matrix's first line: the rows of the current view;
 * their entries and DRAM bytes in *entries, *dram. */
static void rows_line(tkv_db *db, tkv_buf *b, int *oom, uint64_t *entries_out, size_t *dram_out)
{
    struct mx_state *mx = db->mx;
    rowset *rs = db->sv->rows;
    version *v = vset_current(db->vs);
    uint64_t entries = 0, live = 0, data = 0;
    size_t dram = 0, in_compactor = 0;
    for (size_t i = 0; i < rs->n; i++) {
        rowtable_props pr;
        rowtable_get_props(rs->rows[i], &pr);
        uint64_t cur = 0;
        version_row_cursor(v, pr.row_id, &cur);
        entries += pr.entries;
        live += pr.entries - cur;
        data += pr.data_bytes;
        dram += pr.dram_bytes;
        in_compactor += pr.row_id <= mx->compactor_max_id;
    }
    buf_appendf(b, oom, "rows: %zu (compactor %zu, receiver %zu) entries=%llu live_entries=%llu data_bytes=%llu\n",
                rs->n, in_compactor, rs->n - in_compactor, (unsigned long long)entries, (unsigned long long)live,
                (unsigned long long)data);
    *entries_out = entries;
    *dram_out = dram;
}

void mx_report(tkv_db *db, int what, tkv_buf *b, int *oom)
{
    struct mx_state *mx = db->mx;
    if (!mx) {
        buf_appendf(b, oom, "l0=sst: no matrix container\n");
        return;
    }
    if (what == 1) {
        pmem_report(mx, b, oom);
        return;
    }
    pool_stats st;
    pool_get_stats(mx->pool, &st);
    const mx_counters *c = &mx->ctr;
    uint64_t entries;
    size_t dram;
    rows_line(db, b, oom, &entries, &dram);
    uint64_t used = (uint64_t)(st.pages_total - st.pages_free) * st.page_size;
    uint64_t cols = ctr_get(&c->columns), hinted = ctr_get(&c->hints_used), rejected = ctr_get(&c->hints_rejected);
    uint64_t lookups = ctr_get(&c->lookups);
    buf_appendf(b, oom, "bytes: used=%llu free=%llu pool=%llu page_size=%u trigger=%d%%\n", (unsigned long long)used,
                (unsigned long long)st.pages_free * st.page_size, (unsigned long long)st.pool_size, st.page_size,
                db->opts.matrix_trigger);
    buf_appendf(b, oom,
                "flush: rows=%llu entries=%llu data_bytes=%llu value_bytes=%llu lz4_values=%llu no_space=%llu "
                "wait_micros=%llu\n",
                (unsigned long long)ctr_get(&c->rows_flushed), (unsigned long long)ctr_get(&c->flush_entries),
                (unsigned long long)ctr_get(&c->flush_data_bytes), (unsigned long long)ctr_get(&c->flush_value_bytes),
                (unsigned long long)ctr_get(&c->flush_lz4_values), (unsigned long long)ctr_get(&c->flush_no_space),
                (unsigned long long)ctr_get(&c->flush_wait_micros));
    pm_stats ps;
    pm_get_stats(pool_region(mx->pool), &ps);
    writeback_line(&ps, b, oom);
    buf_appendf(b, oom,
                "columns: count=%llu compactors=%llu column_bytes=%llu row_bytes=%llu bytes_per_column=%llu "
                "l1_read_bytes=%llu write_bytes=%llu failures=%llu l1_merged_files=%llu l1_merged_bytes=%llu "
                "planned=%llu blocked_kept=%llu\n",
                (unsigned long long)cols, (unsigned long long)ctr_get(&c->compactors),
                (unsigned long long)mx->column_bytes, (unsigned long long)ctr_get(&c->column_row_bytes),
                (unsigned long long)(cols ? ctr_get(&c->column_row_bytes) / cols : 0),
                (unsigned long long)ctr_get(&c->column_l1_read_bytes),
                (unsigned long long)ctr_get(&c->column_write_bytes), (unsigned long long)ctr_get(&c->column_failures),
                (unsigned long long)ctr_get(&c->column_l1_merged_files),
                (unsigned long long)ctr_get(&c->column_l1_merged_bytes), (unsigned long long)ctr_get(&c->picks_planned),
                (unsigned long long)ctr_get(&c->picks_blocked_kept));
    buf_appendf(
        b, oom,
        "parallel: threads=%d in_flight=%u max_in_flight=%llu started_beside=%llu cancelled=%llu boost_thread=%d "
        "boosted=%llu\n",
        mx->max_columns, mx->ncolumns, (unsigned long long)ctr_get(&c->max_in_flight),
        (unsigned long long)ctr_get(&c->columns_parallel), (unsigned long long)ctr_get(&c->column_cancels),
        mx->boost_started, (unsigned long long)ctr_get(&c->columns_boosted));
    buf_appendf(b, oom,
                "lookups: count=%llu rows_filtered=%llu rows_searched=%llu hinted=%llu hint_rejected=%llu "
                "hint_hit_rate=%.4f comparisons_per_lookup=%.2f\n",
                (unsigned long long)lookups, (unsigned long long)ctr_get(&c->rows_filtered),
                (unsigned long long)ctr_get(&c->rows_searched), (unsigned long long)hinted,
                (unsigned long long)rejected, hinted + rejected ? (double)hinted / (double)(hinted + rejected) : 0.0,
                lookups ? (double)ctr_get(&c->comparisons) / (double)lookups : 0.0);
    seeks_line(&c->seeks, db->opts.seek_hints, b, oom);
    uint64_t owned = 0;
    for (size_t i = 0; i < mx->nrows; i++) { /* every open row, also those waiting to be dropped */
        rowtable_props pr;
        rowtable_get_props(mx->rows[i], &pr);
        owned += pr.pages - pr.pages_released;
    }
    buf_appendf(b, oom, "pages: used=%u owned_by_rows=%llu\n", st.pages_total - st.pages_free,
                (unsigned long long)owned);
    buf_appendf(b, oom, "reclaim: rows_dropped=%llu pages_released=%llu pinned_switches=%llu\n",
                (unsigned long long)ctr_get(&c->rows_dropped), (unsigned long long)ctr_get(&c->pages_released),
                (unsigned long long)ctr_get(&c->pinned_switches));
    buf_appendf(b, oom, "dram: handles=%zu bytes (%.4f per entry)\n", dram,
                entries ? (double)dram / (double)entries : 0.0);
}
