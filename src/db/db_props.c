// SPDX-License-Identifier: Apache-2.0
/*
 * db_props.c -- the public property API: tkv_property and the text of every
 * property (tkv.stats, tkv.levels, tkv.memory, tkv.options; tkv.matrix and tkv.pmem
 * come from mx_props.c, tkv.sched from silk.c). Fields: docs/options.md.
 */
#include <stdlib.h>
#include <string.h>

#include "db/db_impl.h"
#include "db/files.h"
#include "db/mx.h"
#include "db/silk.h"
#include "db/silk_pmem.h"
#include "db/superversion.h"
#include "io/wb.h"
#include "io/wmap.h"
#include "util/appendf.h"
#include "util/status.h"

/* cache_lines -- tkv.stats' block cache, table cache and trash lines. */
static void cache_lines(tkv_db *db, tkv_buf *b, int *oom)
{
    cache_stats cs;
    cache_get_stats(db->block_cache, &cs);
    buf_appendf(b, oom, "block_cache: capacity=%zu usage=%zu hits=%llu misses=%llu hit_rate=%.4f\n", cs.capacity,
                cs.usage, (unsigned long long)cs.hits, (unsigned long long)cs.misses,
                cs.hits + cs.misses ? (double)cs.hits / (double)(cs.hits + cs.misses) : 0.0);
    table_cache_stats ts;
    table_cache_get_stats(db->tc, &ts);
    buf_appendf(b, oom, "table_cache: open=%zu client_opens=%llu preloads=%llu load_waits=%llu\n", ts.open,
                (unsigned long long)ts.client_opens, (unsigned long long)ts.preloads,
                (unsigned long long)ts.load_waits);
    trash_stats tr;
    trash_get_stats(db->trash, &tr);
    buf_appendf(b, oom, "trash: files_deleted=%llu bytes_deleted=%llu pending_files=%llu failures=%llu\n",
                (unsigned long long)tr.files_deleted, (unsigned long long)tr.bytes_deleted,
                (unsigned long long)tr.pending_files, (unsigned long long)tr.failures);
}

/* async_lines -- tkv.stats' async_io line (the io_uring pool, or why reads
 * use pread) and the counters of the batched multi_get and the iterators'
 * readahead. */
static void async_lines(tkv_db *db, tkv_buf *b, int *oom)
{
    const db_counters *c = &db->ctr;
    if (!db->rings) {
        buf_appendf(b, oom, "async_io: off (reads use pread): %s\n", db->async_off);
    } else {
        io_ring_stats rs;
        io_ring_pool_get_stats(db->rings, &rs);
        buf_appendf(
            b, oom,
            "async_io: io_uring rings=%llu lent=%llu depth=%u max_rings=%u reads=%llu bytes=%llu max_inflight=%llu "
            "short_reads=%llu retries=%llu abandoned=%llu heap_buffers=%llu busy=%llu setup_failures=%llu\n",
            (unsigned long long)rs.rings, (unsigned long long)rs.lent, rs.depth, rs.max_rings,
            (unsigned long long)rs.reads, (unsigned long long)rs.bytes, (unsigned long long)rs.max_inflight,
            (unsigned long long)rs.short_reads, (unsigned long long)rs.retries, (unsigned long long)rs.abandoned,
            (unsigned long long)rs.heap_buffers, (unsigned long long)rs.busy, (unsigned long long)rs.setup_failures);
    }
    buf_appendf(b, oom, "multiget_async: keys=%llu block_reads=%llu shared=%llu cache_hits=%llu full_waits=%llu\n",
                (unsigned long long)ctr_get(&c->mget_async_keys), (unsigned long long)ctr_get(&c->mget_reads),
                (unsigned long long)ctr_get(&c->mget_shared), (unsigned long long)ctr_get(&c->mget_cache_hits),
                (unsigned long long)ctr_get(&c->mget_full_waits));
    buf_appendf(b, oom, "prefetch: readaheads=%llu readahead_blocks=%llu seek_reads=%llu parallel_seeks=%llu\n",
                (unsigned long long)ctr_get(&c->prefetch.reads), (unsigned long long)ctr_get(&c->prefetch.blocks),
                (unsigned long long)ctr_get(&c->prefetch.seek_reads), (unsigned long long)ctr_get(&c->seek_parallel));
}

/* dram_used -- each part's DRAM now (budget.h; BUDGET_OTHER is not
 * measured: 0); returns their sum. */
static uint64_t dram_used(tkv_db *db, uint64_t used[BUDGET_NPARTS], cache_stats *cs, table_cache_stats *ts,
                          io_ring_stats *rs)
{
    cache_get_stats(db->block_cache, cs);
    table_cache_get_stats(db->tc, ts);
    io_ring_pool_get_stats(db->rings, rs);
    size_t spare;
    arena_spares_get(&db->mem_spares, &spare, NULL, NULL, NULL);
    used[BUDGET_MEMTABLES] = __atomic_load_n(&db->mem_bytes, __ATOMIC_RELAXED) + spare;
    used[BUDGET_BLOCK_CACHE] = cs->usage;
    used[BUDGET_TABLES] = ts->bytes;
    used[BUDGET_ROWS] = mx_dram_bytes(db);
    used[BUDGET_RINGS] = rs->memory;
    used[BUDGET_OTHER] = 0;
    uint64_t sum = 0;
    for (int p = 0; p < BUDGET_NPARTS; p++) sum += used[p];
    return sum;
}

/* dram_line -- tkv.stats' dram line: the budget and each part's usage. */
static void dram_line(tkv_db *db, tkv_buf *b, int *oom)
{
    uint64_t used[BUDGET_NPARTS];
    cache_stats cs;
    table_cache_stats ts;
    io_ring_stats rs;
    uint64_t sum = dram_used(db, used, &cs, &ts, &rs);
    buf_appendf(b, oom, "dram: budget=%llu used=%llu", (unsigned long long)db->dram.total, (unsigned long long)sum);
    for (int p = 0; p < BUDGET_OTHER; p++)
        buf_appendf(b, oom, " %s=%llu", budget_part_name((budget_part)p), (unsigned long long)used[p]);
    buf_appendf(b, oom, "\n");
}

/* memory_report -- the text of tkv.memory: per part its share of the DRAM
 * budget (or its configured size), its usage, and what bounds it. */
static void memory_report(tkv_db *db, tkv_buf *b, int *oom)
{
    const dram_split *d = &db->dram;
    uint64_t used[BUDGET_NPARTS];
    cache_stats cs;
    table_cache_stats ts;
    io_ring_stats rs;
    uint64_t sum = dram_used(db, used, &cs, &ts, &rs);
    unsigned long long u[BUDGET_NPARTS], sh[BUDGET_NPARTS];
    for (int p = 0; p < BUDGET_NPARTS; p++) {
        u[p] = used[p];
        sh[p] = d->share[p];
    }
    buf_appendf(b, oom, "budget: total=%llu used=%llu%s\n", (unsigned long long)d->total, (unsigned long long)sum,
                d->total ? "" : " (no dram_budget)");
    buf_appendf(b, oom, "memtables: share=%llu used=%llu set=%d memtable_size=%llu memtables=%d\n", sh[0], u[0],
                d->user_set[BUDGET_MEMTABLES], (unsigned long long)db->opts.memtable_size, db->opts.memtables);
    buf_appendf(b, oom, "block_cache: share=%llu used=%llu set=%d pinned=%zu\n", sh[1], u[1],
                d->user_set[BUDGET_BLOCK_CACHE], cs.pinned);
    buf_appendf(b, oom, "tables: share=%llu used=%llu open=%zu max_open_files=%d\n", sh[2], u[2], ts.open,
                db->opts.max_open_files);
    buf_appendf(b, oom, "rows: share=%llu used=%llu\n", sh[3], u[3]);
    buf_appendf(b, oom, "rings: share=%llu used=%llu rings=%llu max_rings=%u\n", sh[4], u[4],
                (unsigned long long)rs.rings, d->max_rings);
    buf_appendf(b, oom, "other: share=%llu (a reserve for working memory; not measured)\n", sh[5]);
}

/* wal_io_lines -- the WAL's write-back and mapping counters (tkv.stats). */
static void wal_io_lines(tkv_db *db, tkv_buf *b, int *oom)
{
    if (db->io.wb) {
        io_wb_stats ws;
        io_wb_get_stats(db->io.wb, &ws);
        buf_appendf(b, oom,
                    "wal_writeback: ranges=%llu bytes=%llu syncs=%llu refused=%llu errors=%llu queued_now=%llu\n",
                    (unsigned long long)ws.queued, (unsigned long long)ws.bytes, (unsigned long long)ws.syncs,
                    (unsigned long long)ws.dropped, (unsigned long long)ws.failures, (unsigned long long)ws.pending);
    }
    if (db->io.wmap) {
        io_wmap_stats ms;
        io_wmap_get_stats(db->io.wmap, &ms);
        buf_appendf(b, oom,
                    "wal_mmap: files=%llu stored=%llu written=%llu made=%llu writer_waits=%llu taken=%llu "
                    "errors=%llu\n",
                    (unsigned long long)ms.files, (unsigned long long)ms.mapped_bytes,
                    (unsigned long long)ms.written_bytes, (unsigned long long)ms.made_bytes,
                    (unsigned long long)ms.writer_waits, (unsigned long long)ms.taken_bytes,
                    (unsigned long long)ms.failures);
    }
}

/* stats_report -- the text of tkv.stats. Caller holds mu. */
static void stats_report(tkv_db *db, superversion *sv, tkv_buf *b, int *oom)
{
    const db_counters *c = &db->ctr;
    size_t imm_bytes = 0;
    uint64_t imm_entries = 0;
    for (size_t i = 0; i < sv->nimm; i++) {
        imm_bytes += memtable_memory_usage(sv->imm[i]);
        imm_entries += memtable_num_entries(sv->imm[i]);
    }
    buf_appendf(b, oom, "tierkv %s stats\n", TKV_VERSION_STRING);
    buf_appendf(b, oom, "sequence.last: %llu\n", (unsigned long long)__atomic_load_n(&db->last_seq, __ATOMIC_ACQUIRE));
    buf_appendf(b, oom, "memtable.active: entries=%llu bytes=%zu\n", (unsigned long long)memtable_num_entries(sv->mem),
                memtable_memory_usage(sv->mem));
    buf_appendf(b, oom, "memtable.immutable: count=%zu entries=%llu bytes=%zu\n", sv->nimm,
                (unsigned long long)imm_entries, imm_bytes);
    buf_appendf(b, oom, "memtable.switches: %llu\n", (unsigned long long)ctr_get(&c->memtable_switches));
    size_t spare;
    uint64_t reused, freed, reserved;
    arena_spares_get(&db->mem_spares, &spare, &reused, &freed, &reserved);
    buf_appendf(b, oom, "memtable.spares: bytes=%zu reused=%llu freed=%llu reserved=%llu\n", spare,
                (unsigned long long)reused, (unsigned long long)freed, (unsigned long long)reserved);
    buf_appendf(b, oom, "writes: puts=%llu deletes=%llu batches=%llu groups=%llu user_bytes=%llu\n",
                (unsigned long long)ctr_get(&c->user_puts), (unsigned long long)ctr_get(&c->user_deletes),
                (unsigned long long)ctr_get(&c->batches), (unsigned long long)ctr_get(&c->groups),
                (unsigned long long)ctr_get(&c->user_bytes_written));
    buf_appendf(b, oom, "wal: records=%llu syncs=%llu recycled=%llu\n", (unsigned long long)ctr_get(&c->wal_records),
                (unsigned long long)ctr_get(&c->wal_syncs), (unsigned long long)ctr_get(&c->wal_recycled));
    buf_appendf(b, oom, "reads: gets=%llu found=%llu multigets=%llu iterators=%llu\n",
                (unsigned long long)ctr_get(&c->gets), (unsigned long long)ctr_get(&c->gets_found),
                (unsigned long long)ctr_get(&c->multigets), (unsigned long long)ctr_get(&c->iterators_created));
    async_lines(db, b, oom);
    buf_appendf(
        b, oom, "recovery: records=%llu torn_records=%llu torn_bytes=%llu dropped_logs=%llu dropped_bytes=%llu\n",
        (unsigned long long)ctr_get(&c->recovered_records), (unsigned long long)ctr_get(&c->recovered_torn_records),
        (unsigned long long)ctr_get(&c->recovered_torn_bytes), (unsigned long long)ctr_get(&c->recovered_dropped_logs),
        (unsigned long long)ctr_get(&c->recovered_dropped_bytes));
    version *v = vset_current(db->vs); /* caller holds mu */
    for (int l = 0; l < VERSION_LEVELS; l++) {
        if (!v->nfiles[l] && l > 1) continue;
        buf_appendf(b, oom, "level.L%d: files=%zu bytes=%llu%s", l, v->nfiles[l],
                    (unsigned long long)version_level_bytes(v, l), l == 0 ? "\n" : "");
        if (l > 0) buf_appendf(b, oom, " target=%llu\n", (unsigned long long)options_level_target(&db->opts, l));
    }
    buf_appendf(b, oom, "flush: count=%llu bytes_written=%llu\n", (unsigned long long)ctr_get(&c->flushes),
                (unsigned long long)ctr_get(&c->flush_bytes));
    for (int k = IO_COMPACT_L0; k <= IO_COMPACT_DEEP; k++)
        buf_appendf(b, oom, "compaction.%s: count=%llu input_bytes=%llu output_bytes=%llu\n",
                    io_class_name((io_class)k), (unsigned long long)ctr_get(&c->compactions[k]),
                    (unsigned long long)ctr_get(&c->compaction_read_bytes[k]),
                    (unsigned long long)ctr_get(&c->compaction_write_bytes[k]));
    buf_appendf(b, oom, "compaction.trivial_moves: %llu\n", (unsigned long long)ctr_get(&c->trivial_moves));
    silk_deep_stats ds;
    silk_get_deep_stats(db, &ds);
    buf_appendf(b, oom, "compaction.deep_yields: yields=%llu partial_commits=%llu partial_bytes=%llu aborts=%llu\n",
                (unsigned long long)ds.yields, (unsigned long long)ds.partial_commits,
                (unsigned long long)ds.partial_bytes, (unsigned long long)ds.aborts);
    cache_lines(db, b, oom);
    mx_stats_line(db, b, oom);
    buf_appendf(b, oom, "stalls: slowdowns=%llu stops=%llu stall_micros=%llu\n",
                (unsigned long long)ctr_get(&c->stall_slowdowns), (unsigned long long)ctr_get(&c->stall_stops),
                (unsigned long long)ctr_get(&c->stall_micros));
    uint64_t dev_written = 0;
    for (int i = 0; i < IO_NCLASSES; i++) {
        buf_appendf(b, oom, "io.%s: read_bytes=%llu write_bytes=%llu syncs=%llu\n", io_class_name((io_class)i),
                    (unsigned long long)ctr_get(&db->io.read_bytes[i]),
                    (unsigned long long)ctr_get(&db->io.write_bytes[i]), (unsigned long long)ctr_get(&db->io.syncs[i]));
        dev_written += ctr_get(&db->io.write_bytes[i]);
    }
    wal_io_lines(db, b, oom);    /* after the lines above: tests read their fields by first match */
    silk_pmem_stats(db, b, oom); /* after io.*: "pmem_io.flush:" also contains "io.flush:" */
    uint64_t user = ctr_get(&c->user_bytes_written);
    buf_appendf(b, oom, "write_amplification: %.3f (device bytes written / user bytes written, since open)\n",
                user ? (double)dev_written / (double)user : 0.0);
    buf_appendf(b, oom, "background_error: %s\n", db->bg_error ? tkv_strerror(db->bg_error) : "none");
    dram_line(db, b, oom); /* last: tests read fields by first match */
}

/* levels_report -- the text of tkv.levels for a pinned view (sv, v). */
static void levels_report(superversion *sv, version *v, tkv_buf *b, int *oom)
{
    buf_appendf(b, oom, "mem: entries=%llu bytes=%zu\n", (unsigned long long)memtable_num_entries(sv->mem),
                memtable_memory_usage(sv->mem));
    for (size_t i = sv->nimm; i-- > 0;)
        buf_appendf(b, oom, "imm%zu: entries=%llu bytes=%zu wal=%llu\n", sv->nimm - i,
                    (unsigned long long)memtable_num_entries(sv->imm[i]), memtable_memory_usage(sv->imm[i]),
                    (unsigned long long)sv->imm_wal[i]);
    if (sv->rows) {
        uint64_t entries = 0, live = 0, bytes = 0, rd = 0;
        for (size_t i = 0; i < sv->rows->n; i++) {
            rowtable_props pr;
            rowtable_get_props(sv->rows->rows[i], &pr);
            uint64_t cur = 0;
            version_row_cursor(v, pr.row_id, &cur);
            entries += pr.entries;
            live += pr.entries - cur;
            bytes += pr.data_bytes;
            rd += pr.num_range_dels;
        }
        buf_appendf(b, oom, "rows: count=%zu entries=%llu live_entries=%llu data_bytes=%llu range_dels=%llu\n",
                    sv->rows->n, (unsigned long long)entries, (unsigned long long)live, (unsigned long long)bytes,
                    (unsigned long long)rd);
    }
    for (int l = 0; l < VERSION_LEVELS; l++) {
        uint64_t entries = 0, rd = 0;
        for (size_t i = 0; i < v->nfiles[l]; i++) {
            entries += v->files[l][i]->num_entries;
            rd += v->files[l][i]->num_range_dels;
        }
        buf_appendf(b, oom, "L%d: files=%zu bytes=%llu entries=%llu range_dels=%llu\n", l, v->nfiles[l],
                    (unsigned long long)version_level_bytes(v, l), (unsigned long long)entries, (unsigned long long)rd);
    }
}

char *tkv_property(tkv_db *db, const char *name)
{
    if (!db || !name) {
        tkv_err(TKV_INVALID, "tkv_property: NULL %s", db ? "name" : "db");
        return NULL;
    }
    if (!strcmp(name, "tkv.options")) return options_describe(&db->opts);
    uint64_t seq;
    version *v;
    superversion *sv = sv_get_view(db, NULL, &seq, &v);
    tkv_buf b = {0};
    int oom = 0, known = 1;
    if (!strcmp(name, "tkv.stats")) {
        pthread_mutex_lock(&db->mu);
        stats_report(db, sv, &b, &oom);
        pthread_mutex_unlock(&db->mu);
    } else if (!strcmp(name, "tkv.levels")) {
        levels_report(sv, v, &b, &oom);
    } else if (!strcmp(name, "tkv.matrix") || !strcmp(name, "tkv.pmem")) {
        pthread_mutex_lock(&db->mu);
        mx_report(db, !strcmp(name, "tkv.pmem"), &b, &oom);
        pthread_mutex_unlock(&db->mu);
    } else if (!strcmp(name, "tkv.memory")) {
        memory_report(db, &b, &oom);
    } else if (!strcmp(name, "tkv.sched")) {
        silk_report(db, &b, &oom);
    } else if (!strcmp(name, "tkv.num-entries-active-mem")) {
        buf_appendf(&b, &oom, "%llu", (unsigned long long)memtable_num_entries(sv->mem));
    } else if (!strcmp(name, "tkv.num-immutable-mem")) {
        buf_appendf(&b, &oom, "%zu", sv->nimm);
    } else if (!strcmp(name, "tkv.last-sequence")) {
        buf_appendf(&b, &oom, "%llu", (unsigned long long)seq);
    } else {
        known = 0;
    }
    sv_unref(sv);
    files_unpin(db, v, 0);
    if (!known) {
        tkv_err(TKV_INVALID, "unknown property \"%s\"", name);
        return NULL;
    }
    if (oom || buf_append(&b, "", 1) < 0) {
        buf_free(&b);
        tkv_err(TKV_NO_MEMORY, "out of memory building property %s", name);
        return NULL;
    }
    return (char *)b.data;
}
