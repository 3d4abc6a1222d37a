// SPDX-License-Identifier: Apache-2.0
/*
 * silk_pmem.c -- the SILK scheduler's pmem tier (silk_pmem.h): the pool's
 * reads and writes counted by class, a monitor and (scheduler=silk) a
 * three-priority limiter of its own at the pmem device's bandwidth.
 *
 * The tier mirrors the SSD's picture: per monitor window, the pool's client
 * bytes (IO_USER_READ: gets and scans served from rows) feed its monitor,
 * whose budget I_pm = max(floor, T_pm - C_pm - epsilon) is the rate of the
 * limiter that flush writes (RL_HIGH) and column reads (RL_MID) pass. Deep
 * compactions never touch the pool.
 */
#include <stdlib.h>
#include <string.h>

#include "db/db_impl.h"
#include "db/silk_pmem.h"
#include "sched/clock.h"
#include "sched/monitor.h"
#include "util/appendf.h"
#include "util/meter_iter.h"
#include "util/status.h"

#define PMEM_DAX_DEFAULT_BW (2000ull * 1000 * 1000) /* real pmem, unconfigured: an Optane DIMM's writes */
#define PMEM_PROBE_BYTES    (4u << 20)              /* the memcpy probe's buffer */
#define PMEM_PROBE_ROUNDS   4
#define PMEM_METER_CHUNK    (64u << 10)
#define PMEM_PERIOD_US      10000u /* the monitor's window (silk.c ticks it) */

typedef struct silk_pmem_ctx {
    tkv_db *db;
    io_class cls;
    int is_write;
} silk_pmem_ctx;

typedef struct silk_pmem silk_pmem;

struct silk_pmem {
    int fifo;           /* scheduler=fifo: counted, not limited */
    uint64_t T;         /* the pmem device's bandwidth, bytes/s */
    const char *source; /* where T came from: "optane", "configured", "probed", "default" */
    monitor *mon;       /* pmem client bytes -> the pmem budget */
    ratelimit *rl;      /* silk only: flush writes and column reads at that budget */
    uint64_t read_bytes[IO_NCLASSES], write_bytes[IO_NCLASSES]; /* relaxed atomics */
    uint64_t window_bytes[IO_NCLASSES];                         /* the last window's (relaxed atomics) */
    uint64_t last_bytes[IO_NCLASSES];  /* totals at the previous window (monitor thread only) */
    silk_pmem_ctx ctx[IO_NCLASSES][2]; /* meter_iter arguments */
};

/* probe_memcpy -- bytes/s of a memcpy of PMEM_PROBE_BYTES, the best of
 * PMEM_PROBE_ROUNDS (the first pays the page faults); 0 on out of memory.
 * Emulated pmem is the page cache, i.e. DRAM: this is what it can take. */
static uint64_t probe_memcpy(void)
{
    uint8_t *a = malloc(PMEM_PROBE_BYTES), *b = malloc(PMEM_PROBE_BYTES);
    uint64_t best = 0;
    if (a && b) {
        memset(a, 0x5a, PMEM_PROBE_BYTES);
        for (int i = 0; i < PMEM_PROBE_ROUNDS; i++) {
            uint64_t t0 = sched_mono_ns();
            memcpy(b, a, PMEM_PROBE_BYTES);
            __asm__ volatile("" : : "r"(b) : "memory"); /* the copy is not optimised away */
            uint64_t ns = sched_mono_ns() - t0;
            uint64_t bw = (uint64_t)((double)PMEM_PROBE_BYTES * 1e9 / (double)(ns ? ns : 1));
            if (bw > best) best = bw;
        }
    }
    free(a);
    free(b);
    return best;
}

/* pmem_bw -- T of the tier and where it came from (silk_pmem.h). */
static uint64_t pmem_bw(const struct tkv_options *o, uint64_t profile_bw, int is_dax, const char **source)
{
    uint64_t t;
    if (o->pmem_bandwidth) {
        *source = "configured";
        return o->pmem_bandwidth;
    }
    if (profile_bw) {
        *source = "optane";
        return profile_bw;
    }
    if (!is_dax && (t = probe_memcpy()) != 0) {
        *source = "probed";
        return t;
    }
    *source = "default";
    return PMEM_DAX_DEFAULT_BW;
}

int silk_pmem_open(tkv_db *db, uint64_t profile_bw, int is_dax)
{
    const struct tkv_options *o = &db->opts;
    if (db->pmem_tier) return 0;
    silk_pmem *pm = calloc(1, sizeof *pm);
    if (!pm) return tkv_err(TKV_NO_MEMORY, "out of memory creating the scheduler's pmem tier");
    pm->fifo = o->scheduler == SCHED_FIFO;
    pm->T = pmem_bw(o, profile_bw, is_dax, &pm->source);
    monitor_options mo;
    monitor_options_default(&mo);
    mo.device_bw = pm->T;
    /* the same floor as the SSD's: at the floor the pipeline memtable ->
     * pool -> L1 drains no faster than the SSD's floor anyway, so the pool
     * must not be the narrower stage */
    mo.min_internal_bw = o->min_internal_bandwidth;
    mo.epsilon = o->sched_epsilon;
    mo.threshold = o->sched_threshold;
    mo.period_us = PMEM_PERIOD_US;
    int rc = monitor_create(&mo, sched_mono_us(), &pm->mon);
    if (rc == 0 && !pm->fifo) {
        rl_options ro;
        rl_options_default(&ro);
        ro.rate = monitor_internal_bw(pm->mon);
        ro.low_reserved = 0; /* no deep work in the pool */
        ro.mid_reserved = o->l0_reserved_bandwidth;
        rc = rl_create(&ro, NULL, &pm->rl);
    }
    for (int c = 0; c < IO_NCLASSES; c++)
        for (int w = 0; w < 2; w++) pm->ctx[c][w] = (silk_pmem_ctx){db, (io_class)c, w};
    db->pmem_tier = pm; /* freed by silk_pmem_close, also after a failure here */
    return rc < 0 ? tkv_err(rc, "out of memory creating the scheduler's pmem tier") : 0;
}

void silk_pmem_charge(tkv_db *db, io_class cls, int is_write, uint64_t n)
{
    silk_pmem *pm = db->pmem_tier;
    if (!pm || n == 0) return;
    /* internal work waits for its tokens first (a shut-down limiter lets it
     * go: close is under way) */
    if (pm->rl && silk_is_internal(cls)) (void)rl_request(pm->rl, silk_prio(cls), n, NULL);
    ctr_add(is_write ? &pm->write_bytes[cls] : &pm->read_bytes[cls], n);
}

/* meter_charge -- meter_fn of silk_pmem_meter. */
static void meter_charge(void *arg, uint64_t bytes)
{
    const silk_pmem_ctx *x = arg;
    silk_pmem_charge(x->db, x->cls, x->is_write, bytes);
}

tkv_it *silk_pmem_meter(tkv_db *db, tkv_it *it, io_class cls, int is_write, unsigned from_pass)
{
    silk_pmem *pm = db->pmem_tier;
    if (!it || !pm) return it;
    return meter_iter_new(it, from_pass, PMEM_METER_CHUNK, meter_charge, &pm->ctx[cls][is_write ? 1 : 0]);
}

void silk_pmem_start(tkv_db *db)
{
    silk_pmem *pm = db->pmem_tier;
    for (int c = 0; pm && c < IO_NCLASSES; c++)
        pm->last_bytes[c] = ctr_get(&pm->read_bytes[c]) + ctr_get(&pm->write_bytes[c]);
}

void silk_pmem_tick(tkv_db *db, uint64_t now_us)
{
    silk_pmem *pm = db->pmem_tier;
    if (!pm) return;
    uint64_t client = 0;
    for (int c = 0; c < IO_NCLASSES; c++) {
        uint64_t t = ctr_get(&pm->read_bytes[c]) + ctr_get(&pm->write_bytes[c]);
        uint64_t d = t - pm->last_bytes[c];
        pm->last_bytes[c] = t;
        __atomic_store_n(&pm->window_bytes[c], d, __ATOMIC_RELAXED);
        if (!silk_is_internal((io_class)c)) client += d;
    }
    if (monitor_sample(pm->mon, client, now_us) && pm->rl) rl_set_rate(pm->rl, monitor_internal_bw(pm->mon));
}

void silk_pmem_close(tkv_db *db)
{
    silk_pmem *pm = db->pmem_tier;
    if (!pm) return;
    db->pmem_tier = NULL;
    rl_free(pm->rl);
    monitor_free(pm->mon);
    free(pm);
}

void silk_pmem_report(tkv_db *db, tkv_buf *b, int *oom)
{
    silk_pmem *pm = db->pmem_tier;
    if (!pm) {
        buf_appendf(b, oom, "pmem: off\n");
        return;
    }
    monitor_stats ms;
    monitor_get_stats(pm->mon, &ms);
    buf_appendf(b, oom, "pmem: T=%llu (%s) C=%llu I=%llu rate_changes=%llu\n", (unsigned long long)pm->T, pm->source,
                (unsigned long long)ms.client_bw, (unsigned long long)(pm->rl ? ms.internal_bw : 0),
                (unsigned long long)ms.changes);
    buf_appendf(b, oom, "pmem_window_bytes:");
    for (int c = 0; c < IO_NCLASSES; c++)
        buf_appendf(b, oom, " %s=%llu", io_class_name((io_class)c), (unsigned long long)ctr_get(&pm->window_bytes[c]));
    buf_appendf(b, oom, "\npmem_total_bytes:");
    for (int c = 0; c < IO_NCLASSES; c++)
        buf_appendf(b, oom, " %s=%llu", io_class_name((io_class)c),
                    (unsigned long long)(ctr_get(&pm->read_bytes[c]) + ctr_get(&pm->write_bytes[c])));
    buf_appendf(b, oom, "\n");
    if (!pm->rl) return;
    rl_stats rs;
    rl_get_stats(pm->rl, &rs);
    buf_appendf(b, oom,
                "pmem_limiter: rate=%llu high_granted=%llu mid_granted=%llu high_waits=%llu mid_waits=%llu "
                "high_wait_us=%llu mid_wait_us=%llu mid_reserved=%llu\n",
                (unsigned long long)rs.rate, (unsigned long long)rs.granted[RL_HIGH],
                (unsigned long long)rs.granted[RL_MID], (unsigned long long)rs.waits[RL_HIGH],
                (unsigned long long)rs.waits[RL_MID], (unsigned long long)rs.wait_us[RL_HIGH],
                (unsigned long long)rs.wait_us[RL_MID], (unsigned long long)rs.mid_reserved);
}

void silk_pmem_stats(tkv_db *db, tkv_buf *b, int *oom)
{
    silk_pmem *pm = db->pmem_tier;
    if (!pm) return;
    for (int c = 0; c < IO_NCLASSES; c++)
        buf_appendf(b, oom, "pmem_io.%s: read_bytes=%llu write_bytes=%llu\n", io_class_name((io_class)c),
                    (unsigned long long)ctr_get(&pm->read_bytes[c]), (unsigned long long)ctr_get(&pm->write_bytes[c]));
}
