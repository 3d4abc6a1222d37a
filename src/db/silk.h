// SPDX-License-Identifier: Apache-2.0
/*
 * silk.h -- the SILK scheduler inside the engine (docs/scheduler.md): the
 * glue between the primitives of src/sched/ and the engine's threads.
 *
 *  - Accounting: io/io.c counts every byte per class where it happens; the
 *    monitor thread (tkv-sched-mon, 10 ms) turns the deltas into windows: client
 *    bytes (IO_WAL writes + IO_USER_READ reads) feed the control law
 *    I = max(floor, T - C - epsilon) (sched/monitor.h), whose published
 *    changes set the internal rate limiter (sched/ratelimit.h). With
 *    sched_latency on, the window's client reads (IO_USER_READ read_ops /
 *    read_ns) also go to the monitor, whose read-latency cap lowers I while
 *    client reads are slower than their baseline (monitor.h).
 *  - Admission: silk_gate is io_stats' gate. Internal classes pass the
 *    limiter (flush and L0->L1 column compaction at high priority, deep
 *    compactions at low), then -- when ssd_bandwidth is set -- every class
 *    passes the emulated device's token bucket. With scheduler=silk the
 *    device queue serves client I/O (WAL, user reads) first and internal
 *    I/O from what is left, with min_internal_bandwidth reserved for it; with
 *    fifo it is one first-come queue.
 *  - Deep compactions (the low pool) register a silk_job; the gate is their
 *    pause point (every read or write, i.e. at least once per output block).
 *    The monitor pauses them during a client peak (I at its floor) or while
 *    writers wait for a flush, unless the deep backlog is urgent (a level at
 *    twice its target: the ageing rule that bounds sorted runs).
 *  - Preemption by L0->L1 work: a column or L0->L1 compaction that needs L1
 *    files a deep job holds asks that job -- and only that job -- to yield
 *    (silk_yield_l1), and marks the files it needs so that no deep pick takes
 *    them while it waits. The job goes on to its next cut point (a boundary
 *    between its input files where no input straddles, compact_run.c), and
 *    commits there what it has done, releasing the rest; it stops at once
 *    (commits at its last cut, or aborts if it has none) when it has gone on
 *    for deep_yield_wait, when deep work is paused, or at shutdown.
 *    Partial commits, yields, the waits and aborts are counted (tkv.sched).
 *  - scheduler=fifo: no limiter, no pause, no abort (stock RocksDB); the
 *    device throttle and the write controller are independent switches.
 *
 * State: private to silk.c (struct silk_state, db->silk).
 * Locking: silk_state.mu guards the job list and pause state; it is never
 * taken while waiting on anything but its own condvar. db->mu may be held
 * when calling silk_yield_l1 / silk_report (they take silk.mu inside it:
 * order db->mu -> silk.mu); the gate never takes db->mu.
 */
#ifndef TKV_DB_SILK_H
#define TKV_DB_SILK_H

#include <stdatomic.h>
#include <stdint.h>

#include "io/io.h"
#include "mem/memtable.h"
#include "sched/wctl.h"
#include "sst/version.h"
#include "util/coding.h"
#include "util/iter.h"

struct tkv_db;

/* Internal status of an aborted deep compaction: never returned to users. */
#define SILK_ABORTED (-1000)

/* A running deep compaction, as the scheduler sees it: its input level and
 * that level's input files (what silk_yield_l1 compares against). Lives on
 * the stack of the thread that runs the job. */
typedef struct silk_job {
    int level;
    file_meta *const *inputs;
    size_t ninputs;
    atomic_int abort;     /* 1: stop at the next pause point (rl_cancel also wakes a token wait) */
    atomic_int yield;     /* 1: L0->L1 work waits for its files: stop at the next cut */
    uint64_t yield_at_us; /* when it was first asked to yield (written before yield is set) */
    int paused;           /* waiting at a pause point now (silk.mu) */
    int committing;       /* merged; no more pauses or aborts (silk.mu; silk_job_committing) */
    uint64_t pauses, resumes;
    struct silk_job *next;
} silk_job;

/* How a deep job ended (silk_job_end). */
typedef enum silk_outcome {
    SILK_JOB_DONE,    /* installed all of its work (or a trivial move) */
    SILK_JOB_PARTIAL, /* stopped at a cut: installed what came before it, released the rest */
    SILK_JOB_STOPPED, /* stopped before its first cut: nothing installed, inputs untouched */
    SILK_JOB_FAILED   /* an error (the background error is set) */
} silk_outcome;

/* The deep-preemption counters (tkv.sched "deep:" and tkv.stats "deep_yield:"). */
typedef struct silk_deep_stats {
    uint64_t yields;          /* jobs asked to yield for L0->L1 work */
    uint64_t partial_commits; /* jobs that stopped at a cut and installed their work before it */
    uint64_t partial_bytes;   /* output bytes those partial commits installed */
    uint64_t aborts;          /* jobs asked to yield that stopped before their first cut */
    uint64_t yield_waits;     /* jobs that released files L0->L1 work waited for */
    uint64_t yield_wait_us;   /* total time from the request to the release */
    uint64_t yield_wait_max_us;
} silk_deep_stats;

/* silk_open -- creates the scheduler of db (after options are final, before
 * any data file is opened) and installs the gate on db->io. Probes T when
 * device_bandwidth=0. */
int silk_open(struct tkv_db *db);
/* silk_start / silk_stop -- the monitor thread. silk_stop also lifts the
 * pause for good: paused deep jobs resume (silk_abort_all, at shutdown,
 * makes them stop at their next pause point with SILK_ABORTED). */
int silk_start(struct tkv_db *db);
void silk_stop(struct tkv_db *db);
/* silk_close -- frees everything (after silk_stop and after every thread
 * that could pass the gate has ended). */
void silk_close(struct tkv_db *db);

/* silk_job_begin / silk_job_end -- a deep compaction of input level `level`
 * with that level's inputs[0..n) (kept by the caller until silk_job_end)
 * runs on this thread between the two calls (the gate finds it through a
 * thread-local). */
void silk_job_begin(struct tkv_db *db, silk_job *j, int level, file_meta *const *inputs, size_t n);
/* silk_job_end -- how the job ended and, for SILK_JOB_PARTIAL, the output
 * bytes it installed (the counters of silk_deep_stats). */
void silk_job_end(struct tkv_db *db, silk_job *j, silk_outcome how, uint64_t kept_bytes);

/* silk_job_cut -- the deep job on this thread has reached a cut point
 * (compact_run.c): every input before it consumed, none after it touched.
 * 1 if it must stop there (asked to yield, or to stop), else 0. 0 on a
 * thread that runs no registered job (tkv_compact_range, tkv-l0). */
int silk_job_cut(struct tkv_db *db);

/* silk_job_committing -- the deep job on this thread has finished its merge
 * and is about to commit (open its outputs for readers, then install them).
 * From here to silk_job_end its I/O is still charged and rate limited as
 * IO_COMPACT_DEEP, but is neither paused nor aborted: an abort now would
 * throw away a finished merge to spare a column the wait for a few index
 * reads, and a failed open would leave the outputs for client reads to open.
 * silk_yield_l1 skips (and does not count) a committing job. */
void silk_job_committing(struct tkv_db *db);

/* silk_yield_l1 -- L0->L1 work needs the L1 files f[0..n) and some are
 * busy: marks all of them wanted for SILK_WANTED_US (no deep pick takes a
 * wanted file; the caller calls again while it waits, at least every
 * SILK_WANTED_US / 2) and asks the deep jobs that hold any of them to yield
 * (silk.h, top). Returns the number of deep jobs holding them (0 with
 * scheduler=fifo: then nothing is marked, and L0->L1 work waits for the
 * jobs to finish). Caller holds db->mu. */
#define SILK_WANTED_US 500000u
int silk_yield_l1(struct tkv_db *db, file_meta *const *f, size_t n);

/* silk_deep_held -- 1 while deep work is paused (a peak, or writers wait;
 * never while urgent). With an env's pool a deep worker picks nothing then
 * and looks again after SILK_HELD_RETRY_US, and a running deep job meets
 * the pause as a stop at its next pause point (it installs its work up to
 * its last cut): a paused job would hold a thread every database shares. */
#define SILK_HELD_RETRY_US 50000u
int silk_deep_held(struct tkv_db *db);

/* silk_abort_all -- shutdown: every running deep job stops at its next
 * pause point; it installs its work up to its last cut (the rest is redone
 * after reopen). */
void silk_abort_all(struct tkv_db *db);

/* silk_get_deep_stats -- the preemption counters. */
void silk_get_deep_stats(struct tkv_db *db, silk_deep_stats *out);

/* silk_flush_sample -- a flush moved `bytes` of memtable in `us` (the write
 * controller's bandwidth samples). */
void silk_flush_sample(struct tkv_db *db, uint64_t bytes, uint64_t us);

/* silk_flush_meter -- wraps the iterator over memtable m that a flush
 * builds from (taking it; NULL on out of memory, or for a NULL it) so that
 * pass `pass` of the build reports its progress over m's keys and values
 * (sched/flushprog.h). silk_flush_built -- that pass is over.
 * silk_flush_ended -- the flush is (the memtable has left the view, or the
 * flush failed). silk_flush_abandoned -- the build stopped short (no room in
 * the pool, an error): nothing runs, the last tail is kept.
 * silk_flush_eta -- 1 and *eta_us, the running flush's time until it frees
 * its memtable, when known; else 0 (the write controller's deadline input,
 * wctl_input.flush_eta_us). */
tkv_it *silk_flush_meter(struct tkv_db *db, tkv_it *it, unsigned pass, const memtable *m);
void silk_flush_built(struct tkv_db *db);
void silk_flush_ended(struct tkv_db *db);
void silk_flush_abandoned(struct tkv_db *db);
int silk_flush_eta(struct tkv_db *db, uint64_t now_us, uint64_t *eta_us);

/* silk_write_delay -- the write controller's answer for a write leader
 * (sched/wctl.h: wctl_delay_us): microseconds to wait before writing. */
uint64_t silk_write_delay(struct tkv_db *db, wctl_write *t, const wctl_input *in, uint64_t bytes, uint64_t now_us);
/* silk_note_write_wait -- a write leader waited `us` in all (pacing and
 * stops) before writing: counted for tkv.sched (stalls over 10 ms, max). */
void silk_note_write_wait(struct tkv_db *db, uint64_t us);
/* silk_note_stop_flush_running -- a write group stopped on a full set of
 * memtables while the flush thread was free to work (counted once per
 * stop; should stay 0: the pace was faster than the flush). */
void silk_note_stop_flush_running(struct tkv_db *db);

/* silk_report -- the tkv.sched property text. Caller holds nothing. */
void silk_report(struct tkv_db *db, tkv_buf *b, int *oom);

/* silk_gate -- io_gate_fn (arg = db). */
int silk_gate(void *arg, io_class cls, int is_write, size_t n);

#endif
