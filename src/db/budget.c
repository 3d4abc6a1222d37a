// SPDX-License-Identifier: Apache-2.0
/*
 * budget.c -- splitting dram_budget into the shares of the parts that hold
 * the engine's DRAM, at tkv_open (budget.h).
 */
#include "db/budget.h"

#include <stdio.h>
#include <string.h>

#include "io/uring.h"
#include "util/status.h"

static const char *const PART_NAMES[BUDGET_NPARTS] = {"memtables", "block_cache", "tables", "rows", "rings", "other"};

const char *budget_part_name(budget_part p) { return (unsigned)p < BUDGET_NPARTS ? PART_NAMES[p] : "?"; }

/* size_text -- n as "64M" when it is a whole number of K/M/G/T, else as
 * "3.2M" in the largest unit it reaches (or bytes below 1K). */
static const char *size_text(uint64_t n, char *buf, size_t cap)
{
    static const char units[] = "KMGT";
    int u = -1;
    uint64_t w = n;
    while (w && w % 1024 == 0 && u < 3) {
        w /= 1024;
        u++;
    }
    if (w < 1024 && u >= 0) {
        snprintf(buf, cap, "%llu%c", (unsigned long long)w, units[u]);
        return buf;
    }
    double d = (double)n;
    for (u = -1; d >= 1024.0 && u < 3; u++) d /= 1024.0;
    if (u < 0) snprintf(buf, cap, "%llu", (unsigned long long)n);
    else snprintf(buf, cap, "%.1f%c", d, units[u]);
    return buf;
}

/* ring_count -- the rings the async read path may set up in `share`
 * bytes: 1 .. BUDGET_MAX_RINGS (one even if it does not fit: the sum check
 * then says so), 0 with async_io=off. */
static unsigned ring_count(const struct tkv_options *o, uint64_t share)
{
    if (o->async_io == ASYNC_OFF) return 0;
    uint64_t n = share / io_ring_cost(BUDGET_RING_DEPTH);
    return n < 1 ? 1 : n > BUDGET_MAX_RINGS ? BUDGET_MAX_RINGS : (unsigned)n;
}

/* no_budget -- the shares without a budget: the configured sizes. */
static void no_budget(const struct tkv_options *o, dram_split *out)
{
    out->share[BUDGET_MEMTABLES] = o->memtable_size * (uint64_t)o->memtables;
    out->share[BUDGET_BLOCK_CACHE] = o->block_cache_size;
    out->max_rings = o->async_io == ASYNC_OFF ? 0 : BUDGET_MAX_RINGS;
    out->share[BUDGET_RINGS] = out->max_rings * (uint64_t)io_ring_cost(BUDGET_RING_DEPTH);
    out->user_set[BUDGET_MEMTABLES] = 1;
    out->user_set[BUDGET_BLOCK_CACHE] = 1;
}

/* derived_memtable_size -- a quarter of the budget over the memtables, at
 * most the default (o's value when the user did not set it), at most 1/8 of
 * a pool of a set size, at least 16K, in whole 4K. */
static uint64_t derived_memtable_size(const struct tkv_options *o, uint64_t budget)
{
    uint64_t m = budget / 4 / (uint64_t)o->memtables;
    if (m > o->memtable_size) m = o->memtable_size;
    if (o->l0 == L0_MATRIX && o->pmem_size && m > o->pmem_size / 8) m = o->pmem_size / 8;
    m &= ~(uint64_t)4095;
    return m < (16u << 10) ? 16u << 10 : m;
}

/* too_big -- TKV_INVALID naming every part of s, its size and who set it. */
static int too_big(const dram_split *s, const struct tkv_options *o, uint64_t sum)
{
    char msg[640], a[32], b[32];
    int n =
        snprintf(msg, sizeof msg, "dram_budget=%s cannot hold the parts (%s in all):", size_text(s->total, a, sizeof a),
                 size_text(sum, b, sizeof b));
    for (int p = 0; p < BUDGET_NPARTS && n > 0 && (size_t)n < sizeof msg; p++) {
        const char *why = "";
        if (p == BUDGET_MEMTABLES && s->user_set[p]) why = " (memtable_size or memtables set)";
        if (p == BUDGET_BLOCK_CACHE && s->user_set[p]) why = " (block_cache_size set)";
        if (p == BUDGET_MEMTABLES)
            n += snprintf(msg + n, sizeof msg - (size_t)n, " memtables %d x %s = %s%s,", o->memtables,
                          size_text(o->memtable_size, a, sizeof a), size_text(s->share[p], b, sizeof b), why);
        else
            n += snprintf(msg + n, sizeof msg - (size_t)n, " %s %s%s%s", PART_NAMES[p],
                          size_text(s->share[p], a, sizeof a), why, p + 1 < BUDGET_NPARTS ? "," : "");
    }
    return tkv_err(TKV_INVALID, "%s; lower the sizes set or raise dram_budget", msg);
}

int budget_split(struct tkv_options *o, dram_split *out)
{
    memset(out, 0, sizeof *out);
    out->total = o->dram_budget;
    if (!o->dram_budget) {
        no_budget(o, out);
        return 0;
    }
    uint64_t b = o->dram_budget;
    int mem_set = options_user_set(o, "memtable_size"), cache_set = options_user_set(o, "block_cache_size");
    uint64_t memtable_size = mem_set ? o->memtable_size : derived_memtable_size(o, b);
    out->user_set[BUDGET_MEMTABLES] = mem_set || options_user_set(o, "memtables");
    out->user_set[BUDGET_BLOCK_CACHE] = cache_set;
    out->share[BUDGET_MEMTABLES] = memtable_size * (uint64_t)o->memtables;
    out->share[BUDGET_TABLES] = b / 8;
    out->share[BUDGET_ROWS] = o->l0 == L0_MATRIX ? b / 16 : 0;
    out->max_rings = ring_count(o, b / 16);
    out->share[BUDGET_RINGS] = out->max_rings * (uint64_t)io_ring_cost(BUDGET_RING_DEPTH);
    out->share[BUDGET_OTHER] = b / 16;
    uint64_t sum = 0;
    for (int p = 0; p < BUDGET_NPARTS; p++) sum += p == BUDGET_BLOCK_CACHE ? 0 : out->share[p];
    out->share[BUDGET_BLOCK_CACHE] = cache_set ? o->block_cache_size : sum < b ? b - sum : 0;
    sum += out->share[BUDGET_BLOCK_CACHE];
    if (sum > b) {
        struct tkv_options shown = *o;
        shown.memtable_size = memtable_size;
        return too_big(out, &shown, sum);
    }
    o->memtable_size = memtable_size;
    o->block_cache_size = out->share[BUDGET_BLOCK_CACHE];
    return 0;
}
