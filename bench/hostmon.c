// SPDX-License-Identifier: Apache-2.0
/*
 * hostmon.c -- per-interval host counters for tkv_bench (see hostmon.h).
 * Reads /proc/stat, /proc/diskstats and /proc/meminfo; a file that is
 * missing or unparsable leaves its fields at -1 rather than failing the run.
 */
#include "bench/hostmon.h"

#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

static void sample_cpu(hostmon_raw *s)
{
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return;
    /* cpu  user nice system idle iowait irq softirq steal guest guest_nice */
    unsigned long long v[8] = {0};
    if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
               &v[7]) == 8) {
        s->cpu_total = 0;
        for (int i = 0; i < 8; i++) s->cpu_total += v[i]; /* guest time is already inside user */
        s->cpu_idle = v[3];
        s->cpu_iowait = v[4];
        s->cpu_steal = v[7];
        s->have_cpu = 1;
    }
    fclose(f);
}

static void sample_disk(const hostmon *h, hostmon_raw *s)
{
    if (!h->have_dev) return;
    FILE *f = fopen("/proc/diskstats", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        unsigned maj, min;
        char name[64];
        unsigned long long rd, rd_merged, rd_sect, rd_ms, wr, wr_merged, wr_sect, wr_ms, in_flight, io_ticks;
        if (sscanf(line, " %u %u %63s %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &maj, &min, name, &rd,
                   &rd_merged, &rd_sect, &rd_ms, &wr, &wr_merged, &wr_sect, &wr_ms, &in_flight, &io_ticks) != 13)
            continue;
        if (maj != h->dev_major || min != h->dev_minor) continue;
        s->rd_ios = rd;
        s->rd_ms = rd_ms;
        s->wr_ios = wr;
        s->wr_sectors = wr_sect;
        s->wr_ms = wr_ms;
        s->io_ticks = io_ticks;
        s->have_disk = 1;
        break;
    }
    fclose(f);
}

static void sample_meminfo(double *dirty_mb, double *writeback_mb)
{
    *dirty_mb = *writeback_mb = -1;
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return;
    char line[128];
    unsigned long long kb;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "Dirty: %llu kB", &kb) == 1) *dirty_mb = (double)kb / 1024;
        else if (sscanf(line, "Writeback: %llu kB", &kb) == 1) *writeback_mb = (double)kb / 1024;
    }
    fclose(f);
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* hiccup_main -- sleeps HOSTMON_TICK_US, measures the lateness of each
 * wake-up and keeps the largest in h->hiccup_max_ns. */
static void *hiccup_main(void *arg)
{
    hostmon *h = arg;
    const struct timespec tick = {0, HOSTMON_TICK_US * 1000L};
    while (!__atomic_load_n(&h->hiccup_stop, __ATOMIC_RELAXED)) {
        uint64_t t0 = mono_ns();
        nanosleep(&tick, NULL);
        uint64_t slept = mono_ns() - t0, want = (uint64_t)HOSTMON_TICK_US * 1000u;
        uint64_t late = slept > want ? slept - want : 0;
        uint64_t cur = __atomic_load_n(&h->hiccup_max_ns, __ATOMIC_RELAXED);
        while (late > cur &&
               !__atomic_compare_exchange_n(&h->hiccup_max_ns, &cur, late, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    }
    return NULL;
}

void hostmon_stop(hostmon *h)
{
    if (!h->hiccup_running) return;
    __atomic_store_n(&h->hiccup_stop, 1, __ATOMIC_RELAXED);
    pthread_join(h->hiccup_thread, NULL);
    h->hiccup_running = 0;
}

void hostmon_start(hostmon *h, const char *dir)
{
    memset(h, 0, sizeof *h);
    struct stat st;
    if (stat(dir, &st) == 0 && major(st.st_dev) != 0) {
        h->dev_major = major(st.st_dev);
        h->dev_minor = minor(st.st_dev);
        h->have_dev = 1;
    }
    sample_cpu(&h->prev);
    sample_disk(h, &h->prev);
    if (!h->prev.have_disk) h->have_dev = 0;
    h->hiccup_running = pthread_create(&h->hiccup_thread, NULL, hiccup_main, h) == 0;
}

void hostmon_next(hostmon *h, double secs, hostmon_row *out)
{
    hostmon_raw now = {0};
    sample_cpu(&now);
    sample_disk(h, &now);
    const hostmon_raw *p = &h->prev;
    out->cpu_busy_pct = out->iowait_pct = out->steal_pct = -1;
    out->dev_reads_per_s = out->dev_read_await_ms = out->dev_write_mb_per_s = out->dev_write_await_ms = -1;
    out->dev_util_pct = -1;
    if (now.have_cpu && p->have_cpu && now.cpu_total > p->cpu_total) {
        uint64_t tot = now.cpu_total - p->cpu_total;
        uint64_t idle = now.cpu_idle - p->cpu_idle, iow = now.cpu_iowait - p->cpu_iowait;
        uint64_t steal = now.cpu_steal - p->cpu_steal;
        uint64_t busy = tot > idle + iow + steal ? tot - idle - iow - steal : 0;
        out->cpu_busy_pct = 100.0 * (double)busy / (double)tot;
        out->iowait_pct = 100.0 * (double)iow / (double)tot;
        out->steal_pct = 100.0 * (double)steal / (double)tot;
    }
    if (now.have_disk && p->have_disk) {
        uint64_t rd = now.rd_ios - p->rd_ios, wr = now.wr_ios - p->wr_ios;
        out->dev_read_await_ms = rd ? (double)(now.rd_ms - p->rd_ms) / (double)rd : 0;
        out->dev_write_await_ms = wr ? (double)(now.wr_ms - p->wr_ms) / (double)wr : 0;
        if (secs > 0) {
            out->dev_reads_per_s = (double)rd / secs;
            out->dev_write_mb_per_s = (double)(now.wr_sectors - p->wr_sectors) * 512.0 / 1048576.0 / secs;
            out->dev_util_pct = 100.0 * (double)(now.io_ticks - p->io_ticks) / (secs * 1000.0);
            if (out->dev_util_pct > 100) out->dev_util_pct = 100; /* tick granularity */
        }
    }
    sample_meminfo(&out->dirty_mb, &out->writeback_mb);
    out->hiccup_ms = h->hiccup_running ? (double)__atomic_exchange_n(&h->hiccup_max_ns, 0, __ATOMIC_RELAXED) / 1e6 : -1;
    h->prev = now;
}
