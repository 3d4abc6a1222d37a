// SPDX-License-Identifier: Apache-2.0
/*
 * cpuload.c -- the process's idle CPUs over a window (cpuload.h), from
 * CLOCK_PROCESS_CPUTIME_ID (every thread of the process) and the CPUs of
 * its affinity mask.
 */
#include "sched/cpuload.h"

#include <sched.h>
#include <time.h>
#include <unistd.h>

static uint64_t process_cpu_us(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void cpuload_init(cpuload *c, uint64_t now_us)
{
    cpu_set_t set;
    int n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 0;
    if (n <= 0) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
    c->ncpus = n > 0 ? n : 1;
    c->last_wall_us = now_us;
    c->last_cpu_us = process_cpu_us();
    c->idle_cpus = 0;
}

double cpuload_idle_cpus(cpuload *c, uint64_t now_us)
{
    if (now_us - c->last_wall_us < CPULOAD_WINDOW_US) return c->idle_cpus;
    uint64_t cpu = process_cpu_us();
    double used = (double)(cpu - c->last_cpu_us) / (double)(now_us - c->last_wall_us);
    double idle = (double)c->ncpus - used;
    c->idle_cpus = idle < 0 ? 0 : idle;
    c->last_wall_us = now_us;
    c->last_cpu_us = cpu;
    return c->idle_cpus;
}
