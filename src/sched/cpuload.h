// SPDX-License-Identifier: Apache-2.0
/*
 * cpuload.h -- how much CPU the process leaves idle: the share of the
 * machine's CPUs (those the process may run on) that the whole process --
 * client threads and background threads together -- did not use over the
 * last window. Background work that is optional (a second column compaction
 * in parallel) starts only when a core is idle, so it never competes with
 * clients for the CPU.
 *
 * Thread safety: none; the caller serializes (the engine holds db->mu).
 */
#ifndef TKV_SCHED_CPULOAD_H
#define TKV_SCHED_CPULOAD_H

#include <stdint.h>

#define CPULOAD_WINDOW_US 100000u /* a sample covers at least this long */

typedef struct cpuload {
    uint64_t last_wall_us, last_cpu_us; /* at the start of the current window */
    double idle_cpus;                   /* of the last complete window; starts at 0 (busy) */
    int ncpus;
} cpuload;

/* cpuload_init -- counts the CPUs the process may run on; the first
 * window starts now. */
void cpuload_init(cpuload *c, uint64_t now_us);

/* cpuload_idle_cpus -- the CPUs (0..ncpus, fractional) the process left
 * idle over the last complete window of at least CPULOAD_WINDOW_US; a
 * window that has run that long ends now and the next one starts. */
double cpuload_idle_cpus(cpuload *c, uint64_t now_us);

#endif
