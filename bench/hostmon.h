// SPDX-License-Identifier: Apache-2.0
/*
 * hostmon.h -- what the host did in each reporting interval of a benchmark,
 * next to the engine's per-second latency: CPU busy / iowait / steal time
 * (/proc/stat), the database device's completed reads and writes, their
 * mean service time and the device's utilisation (/proc/diskstats), and the
 * page cache's dirty and write-back bytes (/proc/meminfo).
 *
 * Why: on a shared VM, single seconds of 20-80 ms appear that no engine
 * causes (the "null" engine, which does no I/O, shows them too). These rows
 * say what else happened in such a second. They are hints, not proof: a
 * per-second mean hides a few slow device reads among thousands. tkv_bench
 * writes them to DIR/host.csv (--csv) and bench/silk_report.py puts them
 * beside each configuration's worst seconds.
 *
 * And a hiccup meter (jHiccup's idea): a thread that sleeps 1 ms at a time
 * and records how late it wakes; a 40 ms hiccup in a second whose CPUs are
 * mostly idle means the process, or the whole VM, was not running.
 *
 * Linux only; every field a host does not provide stays -1. hostmon_next is
 * not thread-safe: one caller (the reporter thread) per hostmon.
 */
#ifndef TKV_BENCH_HOSTMON_H
#define TKV_BENCH_HOSTMON_H

#include <pthread.h>
#include <stdint.h>

/* Raw cumulative counters at one instant (internal to hostmon.c; a struct
 * here so the caller can keep the previous sample by value). */
typedef struct hostmon_raw {
    uint64_t cpu_total, cpu_idle, cpu_iowait, cpu_steal; /* jiffies, all CPUs */
    uint64_t rd_ios, rd_ms, wr_ios, wr_sectors, wr_ms;   /* the device's diskstats */
    uint64_t io_ticks;                                   /* ms with at least one request in flight */
    int have_cpu, have_disk;
} hostmon_raw;

typedef struct hostmon {
    unsigned dev_major, dev_minor; /* device of the database directory */
    int have_dev;                  /* 0: tmpfs, overlay, or no diskstats line */
    hostmon_raw prev;
    /* the hiccup meter: a thread that sleeps HOSTMON_TICK_US at a time and
     * records how late it wakes (jHiccup's idea). A late wake-up while the
     * CPUs are mostly idle means the whole process (or the VM) did not run. */
    pthread_t hiccup_thread;
    int hiccup_running;
    volatile int hiccup_stop;
    uint64_t hiccup_max_ns; /* largest lateness since the last hostmon_next (atomic) */
} hostmon;

#define HOSTMON_TICK_US 1000

/* One interval, computed from two samples. -1 = not available. */
typedef struct hostmon_row {
    double cpu_busy_pct; /* share of all CPUs neither idle, in iowait nor stolen */
    double iowait_pct;
    double steal_pct; /* time the hypervisor ran someone else */
    double dev_reads_per_s;
    double dev_read_await_ms; /* mean time per completed read, queue included */
    double dev_write_mb_per_s;
    double dev_write_await_ms;
    double dev_util_pct; /* share of the interval with a request in flight */
    double hiccup_ms;    /* the hiccup meter's largest lateness over its 1 ms sleep */
    double dirty_mb;     /* at the end of the interval */
    double writeback_mb;
} hostmon_row;

/* hostmon_start -- finds the device holding dir, takes the first sample and
 * starts the hiccup meter (without it if the thread cannot be created:
 * hiccup_ms is then -1). */
void hostmon_start(hostmon *h, const char *dir);

/* hostmon_stop -- stops the hiccup meter. Safe to call more than once. */
void hostmon_stop(hostmon *h);

/* hostmon_next -- samples again and fills *out with the interval of secs
 * seconds since the previous sample (hostmon_start or hostmon_next). */
void hostmon_next(hostmon *h, double secs, hostmon_row *out);

#endif
