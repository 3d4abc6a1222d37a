// SPDX-License-Identifier: Apache-2.0
/*
 * silk_pmem.h -- the SILK scheduler's pmem tier: the matrix container's
 * reads and writes of the pool, counted by class and metered against the
 * pmem device's bandwidth, apart from the SSD's (docs/scheduler.md, "The
 * pmem tier").
 *
 * The pool is mapped memory: its reads and writes make no I/O call for
 * io.c to count, so the matrix container charges them here, by class, against the pmem device's bandwidth -- a
 * second monitor (client pmem bytes C_pm -> I_pm = max(floor, T_pm - C_pm -
 * epsilon)) and, with scheduler=silk, a second three-priority limiter at
 * I_pm that flush writes (RL_HIGH) and column reads (RL_MID) pass; apart
 * from the SSD's budget. Client pmem reads are counted, never limited.
 *
 * State: struct silk_pmem (db->pmem_tier), private to silk_pmem.c; set up
 * by silk_pmem_open before any thread that charges or ticks starts, freed
 * by silk_pmem_close after they have ended. Counters are relaxed atomics.
 */
#ifndef TKV_DB_SILK_PMEM_H
#define TKV_DB_SILK_PMEM_H

#include <stdint.h>

#include "io/io.h"
#include "sched/ratelimit.h"
#include "util/coding.h"
#include "util/iter.h"

struct tkv_db;

/* silk_is_internal -- a class of internal (background) work. */
static inline int silk_is_internal(io_class c) { return c == IO_FLUSH || c == IO_COMPACT_L0 || c == IO_COMPACT_DEEP; }

/* silk_prio -- the limiter priority of an internal class: flushes first,
 * then L0->L1 work (columns), then deep compactions (SILK's order). */
static inline rl_prio silk_prio(io_class c) { return c == IO_FLUSH ? RL_HIGH : c == IO_COMPACT_L0 ? RL_MID : RL_LOW; }

/* silk_pmem_open -- the pool is open (mx_open): the tier's bandwidth is
 * pmem_bandwidth if set, the Optane profile's write bandwidth with
 * emul_profile=optane (`profile_bw`, nonzero), a default for real pmem
 * (`is_dax`), else a short memcpy probe (emulated pmem is DRAM). Before
 * silk_start. TKV_NO_MEMORY. */
int silk_pmem_open(struct tkv_db *db, uint64_t profile_bw, int is_dax);

/* silk_pmem_charge -- n bytes of class cls were (or are about to be) read
 * (is_write 0) or written in the pool: counted; an internal class with
 * scheduler=silk first waits for the pmem limiter's tokens. A no-op
 * without the tier. */
void silk_pmem_charge(struct tkv_db *db, io_class cls, int is_write, uint64_t n);

/* silk_pmem_meter -- `it` wrapped so that the entries it yields are
 * charged (silk_pmem_charge, in 64 KiB chunks) as class cls, from its pass
 * `from_pass` on (util/meter_iter.h); `it` itself without the tier. NULL
 * (it destroyed) on out of memory, or when it is NULL. */
tkv_it *silk_pmem_meter(struct tkv_db *db, tkv_it *it, io_class cls, int is_write, unsigned from_pass);

/* silk_pmem_stats -- tkv.stats' "pmem_io.<class>:" lines (none without
 * the tier). */
void silk_pmem_stats(struct tkv_db *db, tkv_buf *b, int *oom);

/* silk_pmem_start -- the monitor thread is about to start: the windows
 * count from the totals now. */
void silk_pmem_start(struct tkv_db *db);
/* silk_pmem_tick -- one monitor window of the tier (the monitor thread). */
void silk_pmem_tick(struct tkv_db *db, uint64_t now_us);
/* silk_pmem_report -- tkv.sched's pmem lines ("pmem: off" without the tier). */
void silk_pmem_report(struct tkv_db *db, tkv_buf *b, int *oom);
/* silk_pmem_close -- frees the tier (after every thread that charges). */
void silk_pmem_close(struct tkv_db *db);

#endif
