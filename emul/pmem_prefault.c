/*
 * pmem_prefault.c -- the prefault thread of a pool mapping (contract:
 * pm_prefault_upto in emul/pmem.h): makes the prefix of the mapping its
 * owner asks for resident ahead of the stores that will need it.
 */
#include <pthread.h>
#include <sys/mman.h>

#include "emul/pmem.h"
#include "emul/pmem_int.h"
#include "util/thread.h"

/* The prefault thread: the first touch of a page of a file mapping costs a
 * page-cache allocation and a zeroing of the page (a few microseconds on a
 * VM), which would land on the flush that writes a new row. The thread does
 * it ahead with MADV_POPULATE_READ, PREFAULT_CHUNK at a time: it maps pages
 * without dirtying them (no write-back, no I/O accounted) and never changes
 * their contents, so it may run beside the engine's stores.
 * It populates only the prefix [0, pf_upto) the owner asked for
 * (pm_prefault_upto: the pool asks for one row's worth of pages past the
 * highest page it has handed out), not the whole mapping: populating a
 * 1 GiB pool that a run barely uses took half of all CPU samples of a short
 * fill on two cores. It runs at the lowest CPU priority (nice 19), so it
 * takes idle cycles only; a page it has not reached yet is faulted by the
 * store that needs it, as without the thread. */
#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#define PREFAULT_CHUNK (2u << 20)

static void *prefault_main(void *arg)
{
    thread_background("tkv-prefault", 19); /* named for top and perf */
    pm_region *r = arg;
    uint64_t done = 0;
    pthread_mutex_lock(&r->pf_mu);
    for (;;) {
        while (!r->pf_stop && done >= r->pf_upto) pthread_cond_wait(&r->pf_cv, &r->pf_mu);
        if (r->pf_stop) break;
        uint64_t end = r->pf_upto;
        pthread_mutex_unlock(&r->pf_mu);
        int failed = 0;
        while (done < end && !failed && !__atomic_load_n(&r->pf_stop, __ATOMIC_RELAXED)) {
            uint64_t len = end - done < PREFAULT_CHUNK ? end - done : PREFAULT_CHUNK;
            failed = madvise(r->base + done, len, MADV_POPULATE_READ) != 0; /* an older kernel: no prefault */
            if (!failed) __atomic_fetch_add(&r->pf_bytes, len, __ATOMIC_RELAXED);
            done += len;
        }
        pthread_mutex_lock(&r->pf_mu);
        if (failed) break;
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
        pthread_cond_signal(&r->pf_cv);
    }
    pthread_mutex_unlock(&r->pf_mu);
}

void pm_prefault_start(pm_region *r)
{
    pthread_mutex_init(&r->pf_mu, NULL);
    pthread_cond_init(&r->pf_cv, NULL);
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
    __atomic_store_n(&r->pf_stop, 1, __ATOMIC_RELAXED);
    pthread_cond_signal(&r->pf_cv);
    pthread_mutex_unlock(&r->pf_mu);
    pthread_join(r->prefault, NULL);
    pthread_cond_destroy(&r->pf_cv);
    pthread_mutex_destroy(&r->pf_mu);
    r->prefault_started = 0;
}
