// SPDX-License-Identifier: Apache-2.0
/*
 * pmem_writeback.c -- the paced write-back of an emulated pool (contract:
 * pm_writeback_start in emul/pmem.h): one thread per region writes queued
 * ranges of the pool file back with sync_file_range, at most `rate` bytes/s,
 * each chunk admitted by the engine's scheduler first, and flushes the
 * device's write cache every flush_every bytes.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "emul/pmem.h"
#include "emul/pmem_int.h"
#include "sched/clock.h"
#include "util/status.h"
#include "util/thread.h"

/* open_writeback_fd -- a descriptor for the paced write-back, or -1 when
 * there is nothing to write back to: the pool lives in memory (tmpfs,
 * ramfs) or the file cannot be opened again. */
#define FS_TMPFS_MAGIC 0x01021994
#define FS_RAMFS_MAGIC 0x858458f6
static int open_writeback_fd(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    struct statfs sf;
    if (fstatfs(fd, &sf) != 0 || sf.f_type == FS_TMPFS_MAGIC || sf.f_type == FS_RAMFS_MAGIC) {
        close(fd);
        return -1;
    }
    return fd;
}

void pm_wb_open(pm_region *r, const char *path)
{
    r->wb_fd = open_writeback_fd(path);
    if (r->wb_fd >= 0) r->wb_dir_fd = pm_open_parent_dir(path); /* for the device-cache flushes (wb_flush_every) */
}

#define WB_QUEUE_CAP 4096u /* queued ranges (a row queues one per pool page) */
/* Bytes admitted and written back per step. Small: the scheduler's device
 * throttle grants a step in one piece, and a client read that arrives just
 * after a large grant waits for the bucket to refill (2 MiB at 200 MB/s:
 * 10 ms, which showed as a 10 ms valley p99). */
#define WB_CHUNK (256u << 10)
/* At most this many seconds of work (at the rate) are queued; beyond it a
 * range is dropped and left to the kernel (a bulk load faster than the rate
 * would otherwise leave minutes of stale work behind it). */
#define WB_QUEUE_SECONDS 8u
/* A range queued this long ago is skipped: the kernel has written it back
 * by now (dirty_expire_centisecs, 30 s by default) or will at once, so
 * pacing it would only spend the rate on clean pages. */
#define WB_EXPIRE_DEFAULT_MS 20000u

/* wb_wait_until -- waits on wb_cv until CLOCK_MONOTONIC ns `t` or stop
 * (wb_mu held). */
static void wb_wait_until(pm_region *r, uint64_t t)
{
    for (uint64_t n = now_ns(); !r->wb_stop && n < t; n = now_ns())
        sched_cond_wait_us(&r->wb_cv, &r->wb_mu, (t - n + 999) / 1000);
}

/* wb_unmap -- drops this process's page-table entries of the whole pages
 * in [off, off+n) before they are written back, so that the write-back does
 * not write-protect them one by one: cleaning a mapped page takes its entry
 * away with a TLB flush on every CPU (an IPI), one per page-cache folio, and
 * the pool's folios are 4 KiB (pmem_space.c) -- 16k shootdowns per 64 MiB
 * row, which cost the client thread more CPU than the write-back itself.
 * MADV_DONTNEED on a shared file mapping zaps the range in one batched TLB
 * flush and moves the entries' dirty bits to the page cache; nothing is
 * lost, and a later access faults the page back in (a minor fault). Only
 * where the engine's image is the file mapping (PM_EMULATED); in
 * PM_CRASHSIM the durable mapping is not what the engine stores to. */
static void wb_unmap(pm_region *r, uint64_t off, uint64_t n)
{
    if ((r->mode != PM_EMULATED && r->mode != PM_VOLATILE) || r->base != r->durable) return;
    long pg = sysconf(_SC_PAGESIZE);
    if (pg <= 0) return;
    uint64_t m = (uint64_t)pg - 1, lo = (off + m) & ~m, hi = (off + n) & ~m;
    if (lo < hi) (void)madvise(r->durable + lo, hi - lo, MADV_DONTNEED); /* best effort */
}

void pm_writeout(pm_region *r, const void *addr, size_t len)
{
    if ((r->mode != PM_EMULATED && r->mode != PM_VOLATILE) || r->readonly || len == 0 || !pm_in_range(r, addr, len))
        return;
    uint64_t off = (uint64_t)((const uint8_t *)addr - r->base);
    wb_unmap(r, off, len);
    (void)sync_file_range(r->fd, (off_t)off, (off_t)len, SYNC_FILE_RANGE_WRITE); /* best effort: pm_sync waits */
}

/* writeback_main -- the paced write-back thread (pm_writeback_start). */
static void *writeback_main(void *arg)
{
    pthread_setname_np(pthread_self(), "tkv-pool-wb"); /* for top and perf */
    pm_region *r = arg;
    uint64_t next_ns = now_ns(); /* the rate's schedule: no credit for idle time */
    pthread_mutex_lock(&r->wb_mu);
    for (;;) {
        while (!r->wb_stop && r->wb_n == 0) pthread_cond_wait(&r->wb_cv, &r->wb_mu);
        if (r->wb_stop) break;
        if (r->wb_rate) {
            wb_wait_until(r, next_ns);
            if (r->wb_stop) break;
        }
        uint64_t off = r->wb_queue[r->wb_head][0], len = r->wb_queue[r->wb_head][1];
        if (now_ns() - r->wb_queue[r->wb_head][2] > r->wb_expire_ns) {
            r->wb_head = (r->wb_head + 1) % WB_QUEUE_CAP;
            r->wb_n--;
            __atomic_fetch_add(&r->wb_expired, len, __ATOMIC_RELAXED);
            __atomic_fetch_sub(&r->wb_pending, len, __ATOMIC_RELAXED);
            continue;
        }
        uint64_t n = len < WB_CHUNK ? len : WB_CHUNK;
        if (n == len) { /* the range is done with this step */
            r->wb_head = (r->wb_head + 1) % WB_QUEUE_CAP;
            r->wb_n--;
        } else {
            r->wb_queue[r->wb_head][0] += n;
            r->wb_queue[r->wb_head][1] -= n;
        }
        pthread_mutex_unlock(&r->wb_mu);
        int admitted = !r->wb_admit || r->wb_admit(r->wb_arg, (size_t)n) >= 0;
        if (admitted) wb_unmap(r, off, n);
        if (!admitted) __atomic_fetch_add(&r->wb_dropped, n, __ATOMIC_RELAXED); /* the engine is closing */
        else if (sync_file_range(r->wb_fd, (off_t)off, (off_t)n,
                                 SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) != 0)
            __atomic_fetch_add(&r->wb_failures, 1, __ATOMIC_RELAXED);
        else {
            __atomic_fetch_add(&r->wb_bytes, n, __ATOMIC_RELAXED);
            r->wb_since_flush += n;
            if (r->wb_flush_every && r->wb_since_flush >= r->wb_flush_every && r->wb_dir_fd >= 0) {
                r->wb_since_flush = 0;
                if (fdatasync(r->wb_dir_fd) != 0) __atomic_fetch_add(&r->wb_failures, 1, __ATOMIC_RELAXED);
                else __atomic_fetch_add(&r->wb_device_flushes, 1, __ATOMIC_RELAXED);
            }
        }
        __atomic_fetch_sub(&r->wb_pending, n, __ATOMIC_RELAXED);
        if (r->wb_rate) {
            uint64_t now = now_ns();
            if (next_ns < now) next_ns = now;
            next_ns += n * 1000000000ull / r->wb_rate;
        }
        pthread_mutex_lock(&r->wb_mu);
    }
    pthread_mutex_unlock(&r->wb_mu);
    return NULL;
}

int pm_writeback_start(pm_region *r, pm_admit_fn admit, void *arg, uint64_t rate, unsigned expire_ms,
                       uint64_t flush_every)
{
    if (r->wb_fd < 0 || r->wb_started) return 0;
    r->wb_queue = calloc(WB_QUEUE_CAP, sizeof *r->wb_queue);
    if (!r->wb_queue) return tkv_err(TKV_NO_MEMORY, "out of memory for the write-back queue of pool %s", r->path);
    pthread_mutex_init(&r->wb_mu, NULL);
    sched_cond_init(&r->wb_cv); /* CLOCK_MONOTONIC timed waits (wb_wait_until) */
    r->wb_admit = admit;
    r->wb_arg = arg;
    r->wb_rate = rate;
    r->wb_flush_every = flush_every;
    r->wb_expire_ns = (uint64_t)(expire_ms ? expire_ms : WB_EXPIRE_DEFAULT_MS) * 1000000ull;
    if (thread_create(&r->wb_thread, writeback_main, r, "the pool's write-back thread") < 0) {
        pthread_cond_destroy(&r->wb_cv);
        pthread_mutex_destroy(&r->wb_mu);
        free(r->wb_queue);
        r->wb_queue = NULL;
        char why[160];
        snprintf(why, sizeof why, "%s", tkv_errmsg());
        return tkv_err(TKV_NO_MEMORY, "pool %s: %s", r->path, why);
    }
    r->wb_started = 1;
    return 0;
}

void pm_writeback_enqueue(pm_region *r, const void *addr, size_t len)
{
    if (!r->wb_started || len == 0 || !pm_in_range(r, addr, len)) return;
    uint64_t off = (uint64_t)((const uint8_t *)addr - r->base);
    pthread_mutex_lock(&r->wb_mu);
    uint64_t pending = __atomic_load_n(&r->wb_pending, __ATOMIC_RELAXED);
    if (r->wb_n == WB_QUEUE_CAP || (r->wb_rate && pending + len > r->wb_rate * WB_QUEUE_SECONDS)) {
        __atomic_fetch_add(&r->wb_dropped, len, __ATOMIC_RELAXED);
    } else {
        size_t tail = (r->wb_head + r->wb_n) % WB_QUEUE_CAP;
        r->wb_queue[tail][0] = off;
        r->wb_queue[tail][1] = len;
        r->wb_queue[tail][2] = now_ns();
        r->wb_n++;
        __atomic_fetch_add(&r->wb_pending, len, __ATOMIC_RELAXED);
        pthread_cond_signal(&r->wb_cv);
    }
    pthread_mutex_unlock(&r->wb_mu);
}

void pm_wb_close(pm_region *r)
{
    if (r->wb_started) {
        pthread_mutex_lock(&r->wb_mu);
        r->wb_stop = 1;
        pthread_cond_broadcast(&r->wb_cv);
        pthread_mutex_unlock(&r->wb_mu);
        pthread_join(r->wb_thread, NULL);
        pthread_cond_destroy(&r->wb_cv);
        pthread_mutex_destroy(&r->wb_mu);
        free(r->wb_queue);
    }
    if (r->wb_fd >= 0) close(r->wb_fd);
    if (r->wb_dir_fd >= 0) close(r->wb_dir_fd);
}
