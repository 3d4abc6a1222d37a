// SPDX-License-Identifier: Apache-2.0
/*
 * pmem_prefault.c -- the prefault thread of a pool mapping (contract:
 * pm_prefault_upto in emul/pmem.h): makes the prefix of the mapping its
 * owner asks for resident ahead of the stores that will need it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include "emul/pmem.h"
#include "emul/pmem_int.h"
#include "io/io.h"
#include "util/thread.h"

/* The prefault thread: the first touch of a page of a file mapping costs a
 * page-cache allocation and a zeroing of the page (a few microseconds on a
 * VM), and the first store to it a write fault on top (the file system's
 * page_mkwrite: delayed-allocation reservation, buffer heads), both of which
 * would land on the flush that writes a new row. The thread does it ahead
 * with MADV_POPULATE_WRITE, PREFAULT_CHUNK at a time: the pages are mapped
 * writable and marked dirty, their contents unchanged, so it may run beside
 * the engine's stores. With only MADV_POPULATE_READ (mapped read-only, not
 * dirtied), the flush still took a write fault per page: 43 % of the flush
 * thread's CPU samples in a 300k x 1 KiB fill.
 * The price of dirtying ahead: the file system reserves the blocks of the
 * prefix (delayed allocation) before the pool hands its pages out, and a
 * page no row stores to within dirty_expire_centisecs is written back by the
 * kernel once (unchanged contents). A chunk that cannot be populated
 * writable (a full file system: the fault would be a SIGBUS, madvise says
 * EFAULT) is populated readable instead; a kernel without
 * MADV_POPULATE_WRITE (EINVAL) gets readable chunks from then on; and one
 * without either (before Linux 5.14) gets no prefault.
 * Past the zero floor (pm_prefault_zero, pm_prefault_claim) it first
 * creates the pages by writing zeros (zero_chunk), which is cheaper.
 * Where the owner wants clean pages (pm_prefault_clean: it syncs), it
 * makes them through the file instead and maps nothing (clean_chunk).
 * It populates only [pf_done, pf_upto): what the owner asked for
 * (pm_prefault_from moves the start, pm_prefault_upto the end)
 * (pm_prefault_upto: the pool asks for one row's worth of pages past the
 * highest page it has handed out), not the whole mapping: populating a
 * 1 GiB pool that a run barely uses took half of all CPU samples of a short
 * fill on two cores. It runs at the lowest CPU priority (nice 19), so it
 * takes idle cycles only; a page it has not reached yet is faulted by the
 * store that needs it, as without the thread. */
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
#define PREFAULT_CHUNK (2u << 20)

/* populate_chunk -- populates [p, p+len): writable if it can (*write_ok
 * cleared for good on EINVAL), else readable. 1 = writable, 0 = readable,
 * -1 = neither. */
static int populate_chunk(uint8_t *p, size_t len, int *write_ok)
{
    if (*write_ok) {
        if (madvise(p, len, MADV_POPULATE_WRITE) == 0) return 1;
        if (errno == EINVAL) *write_ok = 0; /* the kernel has no MADV_POPULATE_WRITE */
    }
    return madvise(p, len, MADV_POPULATE_READ) == 0 ? 0 : -1;
}

/* clean_chunk -- pm_prefault_clean's chunk: creates the page-cache pages of
 * [at, at+len) of the file clean, through the file (POSIX_FADV_WILLNEED in
 * pm_willneed's pieces, 4 KiB folios; a hole reads as zeros, nothing is
 * dirtied or written), not through the mapping. Why not
 * MADV_POPULATE_READ, as before: it holds the process's mmap lock for the
 * whole chunk, and this thread runs at nice 19, so it was often preempted
 * holding it while a writer's memtable block (malloc: mmap) waited to take
 * it for writing. Once the pool's request at open was no longer cancelled
 * (pool_prefault_ahead), the thread ran while the first memtable filled,
 * and on a busy VM (load 4-7) writes of the first memtable were 11-36 ms
 * late in 6 of 9 runs (1 of 6 without the request, 1 of 3 with this). The
 * pages are not mapped ahead then: a reader's first touch of one maps it (a
 * minor fault). 0, or -1 if the kernel refused the first piece (the thread
 * stops, as when it cannot populate at all). */
static int clean_chunk(pm_region *r, uint64_t at, uint64_t len)
{
    if (posix_fadvise(r->fd, (off_t)at, (off_t)(len < PM_WILLNEED_PIECE ? len : PM_WILLNEED_PIECE),
                      POSIX_FADV_WILLNEED) != 0)
        return -1;
    if (len > PM_WILLNEED_PIECE) pm_willneed(r, at + PM_WILLNEED_PIECE, len - PM_WILLNEED_PIECE);
    return 0;
}

/* zero_chunk -- creates the page-cache pages of [at, at+len) of the file by
 * writing zeros (pm_prefault_zero), in pieces of `piece` bytes aligned to it
 * so that no folio the writes create is larger than a piece or crosses a
 * piece boundary. Why: MADV_POPULATE_WRITE over a hole creates one 4 KiB
 * folio per fault, ~2 us a page on this VM; writes of 64 KiB create the
 * same pages for ~0.8 us (the thread's CPU fell by 44 %). The populate that
 * follows then only maps them. Blocks are taken as a reservation takes
 * them, so the fault hook's IO_OP_FALLOCATE answer applies (asked for each
 * piece, while it is marked in flight).
 * The handshake with pm_prefault_claim, piece by piece under pf_mu: a piece
 * is written only if it lies at or past pf_zero_floor, and pf_zeroing
 * names it while the write is in flight, so a claim that raises the floor
 * past it waits for that one write and no later write lands below the
 * floor. Stops at the first piece below the floor or the first failed
 * write (a full file system: the populate alone does the rest). */
static void zero_chunk(pm_region *r, uint64_t at, uint64_t len, uint32_t piece)
{
    static const uint8_t zeros[PM_ZERO_PIECE_MAX];
    for (uint64_t off = at, end = at + len; off < end;) {
        uint64_t lim = (off / piece + 1) * piece;
        if (lim > end) lim = end;
        pthread_mutex_lock(&r->pf_mu);
        int go = off >= r->pf_zero_floor && !r->pf_stop;
        if (go) r->pf_zeroing = off;
        pthread_mutex_unlock(&r->pf_mu);
        if (!go) return;
        ssize_t w = -1;
        if (io_fault_check(IO_OP_FALLOCATE, r->path, (size_t)(lim - off)) == 0) {
            do w = pwrite(r->fd, zeros, (size_t)(lim - off), (off_t)off);
            while (w < 0 && errno == EINTR);
        }
        pthread_mutex_lock(&r->pf_mu);
        r->pf_zeroing = UINT64_MAX;
        pthread_cond_broadcast(&r->pf_cv); /* a pm_prefault_claim may be waiting */
        pthread_mutex_unlock(&r->pf_mu);
        if (w <= 0) return;
        __atomic_fetch_add(&r->pf_zero_bytes, (uint64_t)w, __ATOMIC_RELAXED);
        off += (uint64_t)w;
    }
}

/* The thread works one chunk at a time, outside pf_mu: pf_done is where it
 * has got to, pf_busy says a chunk is in flight (so that
 * pm_prefault_cancel can wait for it). */
static void *prefault_main(void *arg)
{
    thread_background("tkv-prefault", 19, 0); /* named for top and perf */
    pm_region *r = arg;
    int write_ok = 1;
    pthread_mutex_lock(&r->pf_mu);
    for (;;) {
        while (!r->pf_stop && r->pf_done >= r->pf_upto) pthread_cond_wait(&r->pf_cv, &r->pf_mu);
        if (r->pf_stop) break;
        uint64_t at = r->pf_done, len = r->pf_upto - at < PREFAULT_CHUNK ? r->pf_upto - at : PREFAULT_CHUNK;
        r->pf_busy = 1;
        uint32_t piece = r->pf_clean ? 0 : r->pf_zero_piece;
        int no_write = r->pf_clean;
        pthread_mutex_unlock(&r->pf_mu);
        if (piece && write_ok) zero_chunk(r, at, len, piece);
        int got = no_write ? clean_chunk(r, at, len) : populate_chunk(r->base + at, len, &write_ok);
        if (got >= 0) __atomic_fetch_add(&r->pf_bytes, len, __ATOMIC_RELAXED);
        if (got > 0) __atomic_fetch_add(&r->pf_write_bytes, len, __ATOMIC_RELAXED);
        pthread_mutex_lock(&r->pf_mu);
        r->pf_busy = 0;
        r->pf_done = at + len;
        pthread_cond_broadcast(&r->pf_cv); /* a pm_prefault_cancel may be waiting */
        if (got < 0) break;                /* an older kernel: no prefault */
    }
    pthread_mutex_unlock(&r->pf_mu);
    return NULL;
}

void pm_prefault_upto(pm_region *r, uint64_t end)
{
    if (!r->prefault_started) return;
    if (end > r->size) end = r->size;
    pthread_mutex_lock(&r->pf_mu);
    if (end > r->pf_upto) {
        r->pf_upto = end;
        pthread_cond_broadcast(&r->pf_cv);
    }
    pthread_mutex_unlock(&r->pf_mu);
}

/* wait_chunk -- waits until no chunk is in flight (pf_mu held): pf_done
 * only moves at the end of one. */
static void wait_chunk(pm_region *r)
{
    while (r->pf_busy) pthread_cond_wait(&r->pf_cv, &r->pf_mu);
}

void pm_prefault_from(pm_region *r, uint64_t start)
{
    if (!r->prefault_started) return;
    if (start > r->size) start = r->size;
    pthread_mutex_lock(&r->pf_mu);
    wait_chunk(r);
    if (start > r->pf_done) r->pf_done = start;
    if (r->pf_upto < r->pf_done) r->pf_upto = r->pf_done;
    pthread_mutex_unlock(&r->pf_mu);
}

void pm_prefault_cancel(pm_region *r)
{
    if (!r->prefault_started) return;
    pthread_mutex_lock(&r->pf_mu);
    if (r->pf_upto > r->pf_done) r->pf_upto = r->pf_done; /* nothing more of this request */
    wait_chunk(r);
    pthread_mutex_unlock(&r->pf_mu);
}

void pm_prefault_zero(pm_region *r, uint32_t piece)
{
    if (!r->prefault_started || (r->mode != PM_EMULATED && r->mode != PM_VOLATILE) || r->base != r->durable ||
        !r->sparse)
        return;
    if (piece > PM_ZERO_PIECE_MAX) piece = PM_ZERO_PIECE_MAX;
    if (piece < 4096 || (piece & (piece - 1))) piece = 0;
    pthread_mutex_lock(&r->pf_mu);
    r->pf_zero_piece = piece;
    pthread_mutex_unlock(&r->pf_mu);
}

void pm_prefault_clean(pm_region *r)
{
    if (!r->prefault_started) return;
    pthread_mutex_lock(&r->pf_mu);
    r->pf_clean = 1;
    pthread_mutex_unlock(&r->pf_mu);
}

void pm_prefault_claim(pm_region *r, uint64_t end)
{
    if (!r->prefault_started) return;
    pthread_mutex_lock(&r->pf_mu);
    if (end > r->pf_zero_floor) r->pf_zero_floor = end;
    while (r->pf_zeroing < end) pthread_cond_wait(&r->pf_cv, &r->pf_mu);
    pthread_mutex_unlock(&r->pf_mu);
}

void pm_prefault_start(pm_region *r)
{
    pthread_mutex_init(&r->pf_mu, NULL);
    pthread_cond_init(&r->pf_cv, NULL);
    r->pf_zeroing = UINT64_MAX;
    r->prefault_started = thread_create(&r->prefault, prefault_main, r, "the prefault thread") == 0; /* best effort */
    if (!r->prefault_started) {
        pthread_cond_destroy(&r->pf_cv);
        pthread_mutex_destroy(&r->pf_mu);
    }
}

void pm_prefault_stop(pm_region *r)
{
    if (!r->prefault_started) return;
    pthread_mutex_lock(&r->pf_mu);
    r->pf_stop = 1;
    pthread_cond_broadcast(&r->pf_cv);
    pthread_mutex_unlock(&r->pf_mu);
    pthread_join(r->prefault, NULL);
    pthread_cond_destroy(&r->pf_cv);
    pthread_mutex_destroy(&r->pf_mu);
    r->prefault_started = 0;
}
