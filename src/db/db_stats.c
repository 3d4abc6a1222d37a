// SPDX-License-Identifier: Apache-2.0
/*
 * db_stats.c -- the public statistics API: tkv_statistics and the names of
 * its counters and histograms (tierkv.h). Reads counters and histograms
 * without a lock; the tiers' sizes come from a pinned view.
 */
#include <string.h>

#include "db/db_impl.h"
#include "db/files.h"
#include "db/mx.h"
#include "db/superversion.h"
#include "util/status.h"

static const char *const TICKER_NAMES[TKV_TICKER_COUNT] = {
    "puts",
    "deletes",
    "bytes_written",
    "write_batches",
    "wal_syncs",
    "gets",
    "gets_found",
    "iterators",
    "stalls",
    "stall_micros",
    "flushes",
    "columns",
    "compactions",
    "compaction_read_bytes",
    "compaction_write_bytes",
    "memtable_bytes",
    "pool_bytes",
    "sst_bytes",
    "events_dropped",
    "range_deletes",
};

static const char *const HIST_NAMES[TKV_HIST_COUNT] = {
    "get_ns", "write_ns", "stall_ns", "flush_ns", "column_ns", "compaction_ns",
};

const char *tkv_ticker_name(int id) { return id >= 0 && id < TKV_TICKER_COUNT ? TICKER_NAMES[id] : NULL; }
const char *tkv_histogram_name(int id) { return id >= 0 && id < TKV_HIST_COUNT ? HIST_NAMES[id] : NULL; }

/* sum_classes -- the sum of a per-I/O-class counter over every class. */
static uint64_t sum_classes(const uint64_t *c)
{
    uint64_t s = 0;
    for (int i = 0; i < IO_NCLASSES; i++) s += ctr_get(&c[i]);
    return s;
}

/* sst_bytes -- the bytes of every live SST of the current version. */
static uint64_t sst_bytes(tkv_db *db)
{
    uint64_t seq;
    version *v;
    superversion *sv = sv_get_view(db, NULL, &seq, &v);
    uint64_t b = 0;
    for (int l = 0; l < VERSION_LEVELS; l++) b += version_level_bytes(v, l);
    files_unpin(db, v, 0);
    sv_unref(sv);
    return b;
}

int tkv_statistics(tkv_db *db, uint64_t *tickers, size_t ntickers, tkv_histogram_data *hists, size_t nhists)
{
    if (!db) return tkv_err(TKV_INVALID, "tkv_statistics: NULL db");
    if ((ntickers && !tickers) || (nhists && !hists))
        return tkv_err(TKV_INVALID, "tkv_statistics: NULL array with a count");
    const db_counters *c = &db->ctr;
    if (ntickers) {
        uint64_t t[TKV_TICKER_COUNT] = {0};
        t[TKV_TICKER_PUTS] = ctr_get(&c->user_puts);
        t[TKV_TICKER_DELETES] = ctr_get(&c->user_deletes);
        t[TKV_TICKER_BYTES_WRITTEN] = ctr_get(&c->user_bytes_written);
        t[TKV_TICKER_WRITE_BATCHES] = ctr_get(&c->batches);
        t[TKV_TICKER_WAL_SYNCS] = ctr_get(&c->wal_syncs);
        t[TKV_TICKER_GETS] = ctr_get(&c->gets);
        t[TKV_TICKER_GETS_FOUND] = ctr_get(&c->gets_found);
        t[TKV_TICKER_ITERATORS] = ctr_get(&c->iterators_created);
        t[TKV_TICKER_STALLS] = __atomic_load_n(&db->hist[TKV_HIST_STALL].count, __ATOMIC_RELAXED);
        t[TKV_TICKER_STALL_MICROS] = ctr_get(&c->stall_micros);
        t[TKV_TICKER_FLUSHES] = ctr_get(&c->flushes);
        uint64_t columns, pool_bytes;
        mx_stat_counts(db, &columns, &pool_bytes);
        t[TKV_TICKER_COLUMNS] = columns;
        t[TKV_TICKER_COMPACTIONS] = sum_classes(c->compactions) - t[TKV_TICKER_COLUMNS];
        t[TKV_TICKER_COMPACTION_READ_BYTES] = sum_classes(c->compaction_read_bytes);
        t[TKV_TICKER_COMPACTION_WRITE_BYTES] = sum_classes(c->compaction_write_bytes);
        t[TKV_TICKER_MEMTABLE_BYTES] = __atomic_load_n(&db->mem_bytes, __ATOMIC_RELAXED);
        t[TKV_TICKER_POOL_BYTES] = pool_bytes;
        t[TKV_TICKER_SST_BYTES] = sst_bytes(db);
        t[TKV_TICKER_EVENTS_DROPPED] = events_dropped(db->events);
        t[TKV_TICKER_RANGE_DELETES] = ctr_get(&c->user_range_deletes);
        for (size_t i = 0; i < ntickers; i++) tickers[i] = i < TKV_TICKER_COUNT ? t[i] : 0;
    }
    for (size_t i = 0; i < nhists; i++) {
        memset(&hists[i], 0, sizeof hists[i]);
        if (i >= TKV_HIST_COUNT) continue;
        lathist_summary s;
        lathist_summarize(&db->hist[i], &s);
        hists[i] = (tkv_histogram_data){s.count, s.sum, s.max, s.p50, s.p90, s.p99, s.p999};
    }
    return TKV_OK;
}
