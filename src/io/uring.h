// SPDX-License-Identifier: Apache-2.0
/*
 * uring.h -- asynchronous reads through io_uring, for the read paths that can
 * keep many reads in flight: tkv_multi_get (every key's block at once) and
 * iterators (the first block of every level at seek, readahead after).
 *
 * Model: a pool of rings, each lent whole to one reader at a time.
 *  - An io_ring_pool (one per database) owns its rings. A reader -- one
 *    tkv_multi_get call, or one user iterator for its whole life -- borrows a
 *    ring with io_ring_acquire and gives it back with io_ring_release.
 *    Invariant 1: while a ring is lent, only its holder submits to it and
 *    reaps from it, so every completion in it belongs to one of the holder's
 *    reads; a completion can never be handed to another waiter (the bug of a
 *    ring shared by threads, where one thread reaps a completion another one
 *    waits for). A ring may change threads between holders, and between calls
 *    of one holder (an iterator used by one thread at a time): no setup flag
 *    ties it to a thread.
 *  - Invariant 2: a ring goes back to the pool with no read in flight
 *    (io_ring_release waits for abandoned ones), so the next holder never
 *    meets a completion that is not its own.
 *  - A read (io_req) takes one of the ring's `depth` slots and buffer pages of
 *    the ring's arena (allocated and touched once per ring, then reused:
 *    fresh pages are slow on the VMs this runs on). With direct I/O the read
 *    covers the aligned range around [off, off + n) (IO_DIRECT_ALIGN), and
 *    `data` points at `off` inside it; reads too large for the arena get
 *    their own aligned buffer (counted: heap_buffers).
 *  - Reads are seen by the I/O layer as preads are: the fault hook
 *    (IO_OP_READ, io.h) and the scheduler's gate are asked before a read is
 *    queued, and bytes, reads and their time from the gate to the reaping
 *    are counted in the file's io_stats class. Errors are those of io_pread:
 *    an errno from the device (EIO...) is TKV_IO_ERROR naming the file and
 *    offset; a short read is finished with pread, and `got` < n only at end
 *    of file -- the caller's checksums decide what the bytes are worth.
 *  - io_ring_pool_new sets up the first ring at once, so a kernel or sandbox
 *    that refuses io_uring (io_uring_disabled, seccomp, a memlock limit) is
 *    known when the database opens. Its fault hook is IO_OP_RING_SETUP.
 *
 * Thread safety: the pool functions are thread-safe; a ring and its reads
 * belong to the holder.
 */
#ifndef TKV_IO_URING_H
#define TKV_IO_URING_H

#include <stddef.h>
#include <stdint.h>

#include "io/io.h"

typedef struct io_ring_pool io_ring_pool;
typedef struct io_ring io_ring;

/* One read. The holder reads the first block of fields; the rest is the
 * ring's. */
typedef struct io_req {
    int done;            /* the result below is valid */
    int rc;              /* 0, or a TKV_* code (tkv_errmsg set on the thread that reaped it) */
    const uint8_t *data; /* the bytes from file offset `off` (inside the ring's buffer) */
    size_t got;          /* how many: n, less only at end of file */
    uint64_t off;        /* as asked */
    size_t n;
    void *user; /* the holder's tag, untouched by the ring */
    /* private to uring.c */
    io_file *f;
    io_stats *st;
    io_class cls;
    int fd, direct, abandoned, retries, taken;
    uint8_t *buf;     /* dev_len bytes, aligned */
    uint64_t dev_off; /* what is asked of the device */
    size_t dev_len;
    int32_t page; /* first arena page, or -1 for a heap buffer */
    uint32_t pages;
    uint64_t t0; /* before the gate */
} io_req;

/* io_ring_pool_new -- a pool of rings of `depth` reads each (2..4096), at
 * most `max_rings` of them, and its first ring. Returns 0, TKV_NO_MEMORY, or
 * the setup's failure: TKV_IO_ERROR (ENOSYS, EPERM...) or TKV_NO_MEMORY
 * (ENOMEM: a memlock limit), tkv_errmsg saying "io_uring setup failed: ...".
 * *out is NULL on error. */
int io_ring_pool_new(unsigned depth, unsigned max_rings, io_ring_pool **out);
/* io_ring_cost -- the most memory one ring of `depth` reads holds: its
 * struct and slots, the kernel's submission and completion rings, and its
 * 1 MiB arena (allocated at its first read). For a DRAM budget (max_rings). */
size_t io_ring_cost(unsigned depth);
/* io_ring_pool_free -- frees every ring; all must have been released. NULL ok. */
void io_ring_pool_free(io_ring_pool *p);

/* io_ring_acquire -- lends a ring (invariant 1); NULL when max_rings are lent
 * or a new ring cannot be set up (counted in busy / setup_failures): the
 * caller reads synchronously. NULL p gives NULL. */
io_ring *io_ring_acquire(io_ring_pool *p);
/* io_ring_release -- waits for the reads still in flight (abandoned ones),
 * then gives the ring back (invariant 2). The holder has freed its reads.
 * Slots the holder did not free are freed here. NULL r is a no-op. */
void io_ring_release(io_ring_pool *p, io_ring *r);

/* io_ring_read -- queues a read of n bytes (n > 0) at off of f (f must stay
 * open until the read is submitted: io_ring_submit, reap, wait or free do
 * it). NULL when every slot is taken: reap first, or read synchronously.
 * A read refused before any I/O (fault hook, gate, no memory) comes back at
 * once with done = 1 and rc < 0; it still holds its slot until io_req_free. */
io_req *io_ring_read(io_ring *r, io_file *f, uint64_t off, size_t n);
/* io_ring_submit -- hands the queued reads to the kernel (one system call;
 * nothing to do is a no-op). */
void io_ring_submit(io_ring *r);
/* io_ring_reap -- submits, then waits for the next read to complete and
 * returns it (done); each read is returned once. NULL when none of the
 * holder's reads is in flight. Reads refused at io_ring_read are not
 * returned (they were done at once). */
io_req *io_ring_reap(io_ring *r);
/* io_ring_wait -- submits, then waits until q is done (completions of other
 * reads that arrive meanwhile mark those done); returns q->rc. */
int io_ring_wait(io_ring *r, io_req *q);
/* io_req_free -- gives back q's slot and buffer. A read still in flight is
 * abandoned: submitted now if it was only queued, and freed by the ring when
 * it completes; q must not be used again. NULL q is a no-op. */
void io_req_free(io_ring *r, io_req *q);
/* io_ring_free_slots -- slots not taken (a holder may plan with it). */
unsigned io_ring_free_slots(const io_ring *r);

/* Counters since the pool was made (relaxed atomics). */
typedef struct io_ring_stats {
    unsigned depth, max_rings;
    uint64_t rings;          /* rings set up (lent or idle) */
    uint64_t lent;           /* rings lent now */
    uint64_t reads, bytes;   /* reads completed, device bytes they read */
    uint64_t max_inflight;   /* the most reads one ring had in flight at once */
    uint64_t short_reads;    /* reads the device answered in part, finished with pread */
    uint64_t retries;        /* EAGAIN/EINTR completions queued again */
    uint64_t abandoned;      /* reads freed while in flight (a moved iterator's readahead) */
    uint64_t heap_buffers;   /* reads too large for the ring's arena */
    uint64_t busy;           /* io_ring_acquire found no ring to lend */
    uint64_t setup_failures; /* rings that could not be set up after the first */
    uint64_t memory;         /* bytes the rings hold: structs, slots, kernel rings, arenas allocated */
} io_ring_stats;
void io_ring_pool_get_stats(io_ring_pool *p, io_ring_stats *out);

#endif
