// SPDX-License-Identifier: Apache-2.0
/*
 * pmem_int.h -- the inside of a pm_region (emul/pmem.h), shared by the files
 * of the pmem device: pmem.c (open, close, persist primitives, crash
 * simulation), pmem_writeback.c (the paced write-back thread) and
 * pmem_prefault.c (the prefault thread). Not for use outside emul/.
 */
#ifndef TKV_EMUL_PMEM_INT_H
#define TKV_EMUL_PMEM_INT_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "emul/pmem.h"

#define PM_LINE            64u           /* persistence granularity (cache line) */
#define PM_POOL_ALIGN      4096u         /* pool sizes are multiples of this */
#define PM_CS_NLOCKS       1024u         /* crashsim: striped locks, one stripe per 4 KiB page */
#define PM_OPTANE_READ_NS  300u          /* per pm_read_delay access */
#define PM_OPTANE_WRITE_BW 2000000000ull /* bytes per second */
#define PM_PACE_CHUNK      (256u << 10)  /* pm_memcpy_persist reserves bandwidth in 256 KiB steps (128 us) */
#define PM_ZERO_PIECE_MAX  (64u << 10)   /* pm_prefault_zero: the largest piece (and so folio) it writes */
#define PM_WILLNEED_PIECE  (128u << 10)  /* pm_willneed asks in pieces of this (the kernel's readahead window) */

struct pm_region {
    /* read-mostly */
    uint8_t *base;    /* what the engine sees (the volatile image in crashsim) */
    uint8_t *durable; /* the file mapping */
    uint64_t size;
    size_t map_len;
    pm_mode mode;
    pm_profile profile;
    char *path;
    int fd;           /* read-write descriptor of the pool file (pm_reserve, pm_discard, pm_space) */
    int sparse;       /* 1: blocks are allocated as pages are reserved and given back when discarded (not PM_PMEM) */
    int in_memory_fs; /* the file is on tmpfs or ramfs (a read fault on a hole allocates a page there) */
    int readonly;     /* pm_open_readonly: a PROT_READ mapping; every persist is refused (pm_error) */
    /* the sticky error (pm_error): the first failure is kept; err_mu guards err and err_msg */
    pthread_mutex_t err_mu;
    int err; /* TKV_* code, 0 = none; also read without err_mu (relaxed) */
    char err_msg[256];
    uint64_t persist_errors;              /* failed persist calls (relaxed atomic) */
    uint64_t reserve_failures, discarded; /* relaxed atomics: pm_reserve refusals, bytes given back */
    uint64_t syncs, sync_ns;              /* relaxed atomics: pm_sync's fdatasyncs and their time */
    /* crashsim: persists with an index >= cs_cut copy nothing; on_cut runs
     * at the first one (pm_crashsim_arm) */
    _Alignas(64) uint64_t cs_cut;
    void (*on_cut)(void);
    uint8_t cs_locks[PM_CS_NLOCKS];
    /* stats (persist_calls is also the crashsim persist index) */
    _Alignas(64) uint64_t persist_calls;
    uint64_t bytes_persisted;
    /* optane profile: CLOCK_MONOTONIC ns until which the write bandwidth is taken */
    _Alignas(64) uint64_t busy_until_ns;
    /* paced write-back (pm_writeback_start); wb_mu guards the queue and wb_stop */
    int wb_fd;                  /* read-only descriptor of the pool file, -1: none */
    int wb_dir_fd;              /* the pool's directory: fdatasync of it = a device-cache flush, -1: none */
    uint64_t wb_flush_every;    /* bytes between two device-cache flushes, 0 = none (set before the thread) */
    uint64_t wb_since_flush;    /* bytes written back since the last device-cache flush (thread only) */
    uint64_t wb_device_flushes; /* relaxed atomic */
    pthread_t wb_thread;
    int wb_started, wb_stop;
    pthread_mutex_t wb_mu;
    pthread_cond_t wb_cv;    /* CLOCK_MONOTONIC */
    uint64_t (*wb_queue)[3]; /* ring of {offset, length, CLOCK_MONOTONIC ns queued} */
    size_t wb_head, wb_n;
    pm_admit_fn wb_admit;
    void *wb_arg;
    uint64_t wb_rate, wb_expire_ns;
    uint64_t wb_bytes, wb_failures, wb_dropped, wb_expired, wb_pending; /* relaxed atomics */
    /* prefault thread (prefault_main); pf_mu guards pf_upto, pf_done, pf_busy, pf_stop and the zero fields */
    pthread_t prefault;
    int prefault_started;
    pthread_mutex_t pf_mu;
    pthread_cond_t pf_cv;
    uint64_t pf_upto; /* populate [pf_done, pf_upto) of the mapping (pm_prefault_upto) */
    uint64_t pf_done; /* below it: populated, skipped (pm_prefault_from) or cancelled (pm_prefault_cancel) */
    int pf_busy;      /* a chunk is being populated, outside pf_mu */
    int pf_stop;
    uint64_t pf_bytes;       /* relaxed atomic: bytes the thread has populated */
    uint64_t pf_write_bytes; /* relaxed atomic: of those, populated writable (MADV_POPULATE_WRITE) */
    int pf_clean;            /* pm_prefault_clean: populate readable only; pf_mu */
    uint32_t pf_zero_piece;  /* pm_prefault_zero: create pages by writing zeros in pieces of this size, 0 = no */
    uint64_t pf_zero_floor;  /* no zeros are written below it (pm_prefault_claim); pf_mu */
    uint64_t pf_zeroing;     /* start of the piece being written, UINT64_MAX: none; pf_mu */
    uint64_t pf_zero_bytes;  /* relaxed atomic: bytes whose pages were created so */
};

/* now_ns -- CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* pm_in_range -- 1 if [addr, addr+len) lies inside the region. */
static inline int pm_in_range(const pm_region *r, const void *addr, size_t len)
{
    const uint8_t *p = addr;
    return p >= r->base && len <= r->size && (uint64_t)(p - r->base) <= r->size - len;
}

/* pm_fail -- records the region's sticky error (the first one is kept; the
 * message names the pool) and counts a failed persist. For the persist
 * primitives, which have no error channel: see pm_error (pmem.c). */
void pm_fail(pm_region *r, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* pm_open_parent_dir -- a read-only descriptor of the directory holding
 * path, or -1 with errno set (pmem.c). */
int pm_open_parent_dir(const char *path);

/* pm_wb_open -- the paced write-back's descriptors for the pool at path
 * (PM_EMULATED; none on a file system with nothing to write back to), so
 * that pm_writeback_start can start the thread. Best effort. */
void pm_wb_open(pm_region *r, const char *path);
/* pm_wb_close -- stops the write-back thread (queued ranges are dropped)
 * and closes its descriptors. */
void pm_wb_close(pm_region *r);

/* pm_create_file -- creates the pool file at path, `size` bytes, sparse
 * (O_EXCL; *exists = 1 instead if it is already there) (pmem_space.c). */
int pm_create_file(const char *path, uint64_t size, int *exists);
/* pm_open_space -- opens r->fd, decides whether the region is sparse
 * (every mode but PM_PMEM) and notes a file on tmpfs/ramfs (in_memory_fs);
 * a PM_PMEM pool this open created (made) is allocated in full
 * (pmem_space.c). */
int pm_open_space(pm_region *r, const char *path, int made);

/* pm_prefault_start -- starts the prefault thread (best effort). */
void pm_prefault_start(pm_region *r);
/* pm_prefault_stop -- stops and joins it (a no-op if it never started). */
void pm_prefault_stop(pm_region *r);

#endif
