// SPDX-License-Identifier: Apache-2.0
/*
 * uring.c -- the io_uring read path: a pool of rings lent to one reader at a
 * time, each with its slots and its buffer arena (model and invariants in
 * uring.h).
 */
#include "io/uring.h"

#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/io_int.h"
#include "sched/clock.h"
#include "util/status.h"

/* The arena: ARENA_PAGES pages of IO_DIRECT_ALIGN bytes per ring (1 MiB),
 * enough for a 128-key tkv_multi_get or an iterator's readahead on four
 * levels. */
#define ARENA_PAGES 256u
#define ARENA_WORDS (ARENA_PAGES / 64u)
#define MAX_RETRIES 8

struct io_ring {
    struct io_uring u;
    io_ring_pool *pool;
    unsigned depth;
    io_req *slots;        /* depth of them */
    unsigned *free_stack; /* indexes of free slots */
    unsigned nfree;
    unsigned inflight;          /* reads queued or submitted whose completion is not processed */
    unsigned live;              /* of those, the ones not abandoned */
    uint8_t *arena;             /* ARENA_PAGES pages, NULL until first needed */
    uint64_t used[ARENA_WORDS]; /* arena page bitmap, 1 = taken */
    struct io_ring *next;       /* the pool's idle list */
};

struct io_ring_pool {
    pthread_mutex_t mu; /* guards idle, nrings, lent */
    io_ring *idle;
    unsigned nrings, lent;
    unsigned depth, max_rings;
    /* counters (relaxed atomics) */
    uint64_t reads, bytes, max_inflight, short_reads, retries, abandoned, heap_buffers, busy, setup_failures;
    uint64_t arenas; /* rings whose arena is allocated */
};

static void add(uint64_t *c, uint64_t n) { __atomic_fetch_add(c, n, __ATOMIC_RELAXED); }

static size_t align_up(uint64_t x) { return (size_t)((x + IO_DIRECT_ALIGN - 1) & ~(uint64_t)(IO_DIRECT_ALIGN - 1)); }

/* ---------------------------------------------------------------- rings */

static void ring_free(io_ring *r)
{
    if (!r) return;
    io_uring_queue_exit(&r->u);
    free(r->slots);
    free(r->free_stack);
    free(r->arena);
    free(r);
}

/* ring_new -- sets up one ring (the fault hook may refuse, as the kernel
 * would). A ring whose kernel lacks IORING_FEAT_NODROP (Linux < 5.5) is
 * refused: completions could then be lost under load, and a lost completion
 * is a reader that waits forever. */
static int ring_new(unsigned depth, io_ring **out)
{
    *out = NULL;
    int e = io_fault(IO_OP_RING_SETUP, "io_uring", 0);
    if (e > 0) return tkv_err_errno(e, "io_uring setup failed");
    io_ring *r = calloc(1, sizeof *r);
    if (r) {
        r->slots = calloc(depth, sizeof *r->slots);
        r->free_stack = calloc(depth, sizeof *r->free_stack);
    }
    if (!r || !r->slots || !r->free_stack) {
        if (r) {
            free(r->slots);
            free(r->free_stack);
            free(r);
        }
        return tkv_err(TKV_NO_MEMORY, "io_uring setup failed: out of memory");
    }
    struct io_uring_params prm;
    memset(&prm, 0, sizeof prm);
    int rc = io_uring_queue_init_params(depth, &r->u, &prm);
    if (rc == 0 && !(prm.features & IORING_FEAT_NODROP)) {
        io_uring_queue_exit(&r->u);
        rc = -EOPNOTSUPP;
    }
    if (rc < 0) {
        free(r->slots);
        free(r->free_stack);
        free(r);
        return tkv_err_errno(-rc, "io_uring setup failed");
    }
    r->depth = depth;
    for (unsigned i = 0; i < depth; i++) r->free_stack[i] = depth - 1 - i;
    r->nfree = depth;
    *out = r;
    return 0;
}

int io_ring_pool_new(unsigned depth, unsigned max_rings, io_ring_pool **out)
{
    *out = NULL;
    if (depth < 2 || depth > 4096 || max_rings < 1)
        return tkv_err(TKV_INVALID, "io_ring_pool_new: depth %u, max_rings %u", depth, max_rings);
    io_ring_pool *p = calloc(1, sizeof *p);
    if (!p) return tkv_err(TKV_NO_MEMORY, "out of memory for the io_uring pool");
    pthread_mutex_init(&p->mu, NULL);
    p->depth = depth;
    p->max_rings = max_rings;
    io_ring *r;
    int rc = ring_new(depth, &r);
    if (rc < 0) {
        pthread_mutex_destroy(&p->mu);
        free(p);
        return rc;
    }
    r->pool = p;
    p->idle = r;
    p->nrings = 1;
    *out = p;
    return 0;
}

void io_ring_pool_free(io_ring_pool *p)
{
    if (!p) return;
    while (p->idle) {
        io_ring *r = p->idle;
        p->idle = r->next;
        ring_free(r);
    }
    pthread_mutex_destroy(&p->mu);
    free(p);
}

io_ring *io_ring_acquire(io_ring_pool *p)
{
    if (!p) return NULL;
    pthread_mutex_lock(&p->mu);
    io_ring *r = p->idle;
    int make = 0;
    if (r) {
        p->idle = r->next;
    } else if (p->nrings < p->max_rings) {
        make = 1;
        p->nrings++; /* reserved: given back if the setup fails */
    }
    if (r || make) p->lent++;
    pthread_mutex_unlock(&p->mu);
    if (r) return r;
    if (!make) {
        add(&p->busy, 1);
        return NULL;
    }
    if (ring_new(p->depth, &r) < 0) {
        add(&p->setup_failures, 1);
        pthread_mutex_lock(&p->mu);
        p->nrings--;
        p->lent--;
        pthread_mutex_unlock(&p->mu);
        return NULL;
    }
    r->pool = p;
    return r;
}

/* ---------------------------------------------------------------- buffers */

/* arena_mark -- sets (1) or clears (0) pages [first, first + n). */
static void arena_mark(io_ring *r, uint32_t first, uint32_t n, int taken)
{
    for (uint32_t i = first; i < first + n; i++) {
        uint64_t bit = UINT64_C(1) << (i % 64);
        if (taken) r->used[i / 64] |= bit;
        else r->used[i / 64] &= ~bit;
    }
}

/* arena_alloc -- the first run of n free pages (first fit), or -1. The
 * arena is allocated and touched on first use, once per ring. */
static int32_t arena_alloc(io_ring *r, uint32_t n)
{
    if (n == 0 || n > ARENA_PAGES) return -1;
    if (!r->arena) {
        void *a = NULL;
        if (posix_memalign(&a, IO_DIRECT_ALIGN, (size_t)ARENA_PAGES * IO_DIRECT_ALIGN) != 0) return -1;
        memset(a, 0, (size_t)ARENA_PAGES * IO_DIRECT_ALIGN); /* fault the pages in now, not on the read path */
        r->arena = a;
        add(&r->pool->arenas, 1);
    }
    uint32_t run = 0;
    for (uint32_t i = 0; i < ARENA_PAGES; i++) {
        uint64_t w = r->used[i / 64];
        if (i % 64 == 0 && w == UINT64_MAX) { /* a full word */
            run = 0;
            i += 63;
            continue;
        }
        if ((w >> (i % 64)) & 1) {
            run = 0;
            continue;
        }
        if (++run == n) {
            uint32_t first = i + 1 - n;
            arena_mark(r, first, n, 1);
            return (int32_t)first;
        }
    }
    return -1;
}

/* req_buffer -- q->buf for q->dev_len bytes: arena pages, else its own. */
static int req_buffer(io_ring *r, io_req *q)
{
    uint32_t pages = (uint32_t)(align_up(q->dev_len) / IO_DIRECT_ALIGN);
    int32_t first = arena_alloc(r, pages);
    if (first >= 0) {
        q->page = first;
        q->pages = pages;
        q->buf = r->arena + (size_t)first * IO_DIRECT_ALIGN;
        return 0;
    }
    void *b = NULL;
    if (posix_memalign(&b, IO_DIRECT_ALIGN, align_up(q->dev_len)) != 0)
        return tkv_err(TKV_NO_MEMORY, "out of memory for a %zu-byte read of %s", q->dev_len, q->f->path);
    add(&r->pool->heap_buffers, 1);
    q->page = -1;
    q->buf = b;
    return 0;
}

/* slot_free -- gives back q's buffer and slot. */
static void slot_free(io_ring *r, io_req *q)
{
    if (q->page >= 0) arena_mark(r, (uint32_t)q->page, q->pages, 0);
    else free(q->buf);
    q->buf = NULL;
    q->page = -1;
    q->taken = 0;
    r->free_stack[r->nfree++] = (unsigned)(q - r->slots);
}

/* ---------------------------------------------------------------- reads */

/* prep -- puts q's read in the submission queue (submitting what is queued
 * if it is full, which the slot count makes rare). */
static void prep(io_ring *r, io_req *q)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&r->u);
    while (!sqe) {
        io_ring_submit(r);
        sqe = io_uring_get_sqe(&r->u);
    }
    io_uring_prep_read(sqe, q->fd, q->buf, (unsigned)q->dev_len, q->dev_off);
    io_uring_sqe_set_data(sqe, q);
}

io_req *io_ring_read(io_ring *r, io_file *f, uint64_t off, size_t n)
{
    if (r->nfree == 0) return NULL;
    io_req *q = &r->slots[r->free_stack[--r->nfree]];
    memset(q, 0, sizeof *q);
    q->taken = 1;
    q->page = -1;
    q->off = off;
    q->n = n;
    q->f = f;
    q->st = f->stats;
    q->cls = f->cls;
    q->fd = f->fd;
    q->direct = (f->flags & IO_DIRECT) != 0;
    int e = io_fault(IO_OP_READ, f->path, n);
    if (e > 0) {
        q->done = 1;
        q->rc = tkv_err_errno(e, "read %s at offset %llu", f->path, (unsigned long long)off);
        return q;
    }
    q->t0 = sched_mono_ns();
    if ((q->rc = io_admit(f, 0, n)) < 0) {
        q->done = 1;
        return q;
    }
    q->dev_off = off;
    q->dev_len = n;
    if (q->direct) {
        q->dev_off = off & ~(uint64_t)(IO_DIRECT_ALIGN - 1);
        q->dev_len = align_up(off + n) - (size_t)q->dev_off;
    }
    if ((q->rc = req_buffer(r, q)) < 0) {
        q->done = 1;
        return q;
    }
    prep(r, q);
    r->inflight++;
    r->live++;
    uint64_t m = __atomic_load_n(&r->pool->max_inflight, __ATOMIC_RELAXED);
    while (r->inflight > m && !__atomic_compare_exchange_n(&r->pool->max_inflight, &m, r->inflight, 0, __ATOMIC_RELAXED,
                                                           __ATOMIC_RELAXED)) {}
    return q;
}

void io_ring_submit(io_ring *r)
{
    /* io_uring_enter fails only for the ring as a whole: EINTR, or EAGAIN /
     * EBUSY while the kernel is short of memory or holds overflowed
     * completions; the entries stay queued, so trying again is right. */
    while (io_uring_sq_ready(&r->u)) {
        int rc = io_uring_submit(&r->u);
        if (rc < 0 && rc != -EINTR) sched_yield();
    }
}

unsigned io_ring_free_slots(const io_ring *r) { return r->nfree; }

/* finish_short -- the device answered `done` of q's dev_len bytes (and more
 * may exist): reads the rest with pread as io_pread would, stopping at end
 * of file. Returns the total, or -errno. */
static ssize_t finish_short(io_req *q, size_t done)
{
    while (done < q->dev_len) {
        ssize_t k = pread(q->fd, q->buf + done, q->dev_len - done, (off_t)(q->dev_off + done));
        if (k < 0) {
            if (errno == EINTR) continue;
            return -errno;
        }
        if (k == 0) break;
        done += (size_t)k;
        if (q->direct && (size_t)k % IO_DIRECT_ALIGN) break; /* end of file */
    }
    return (ssize_t)done;
}

/* complete -- one completion of q with result res. Returns 1 if q is now
 * done (or freed, when abandoned), 0 if it was queued again. */
static int complete(io_ring *r, io_req *q, int res)
{
    io_ring_pool *p = r->pool;
    if ((res == -EAGAIN || res == -EINTR) && q->retries < MAX_RETRIES) {
        q->retries++;
        add(&p->retries, 1);
        prep(r, q);
        return 0;
    }
    r->inflight--;
    if (!q->abandoned) r->live--;
    ssize_t got = res;
    /* A direct read ends short only at end of file (a length that is not a
     * multiple of the alignment, or nothing); anything else short is the
     * device stopping early, finished as pread would. */
    if (res > 0 && (size_t)res < q->dev_len && !(q->direct && (size_t)res % IO_DIRECT_ALIGN)) {
        add(&p->short_reads, 1);
        got = finish_short(q, (size_t)res);
    }
    if (got >= 0) { /* as io_pread: failed reads are not counted */
        if (q->st) add(&q->st->read_bytes[q->cls], (uint64_t)got);
        io_count_read_op(q->st, q->cls, q->t0);
        add(&p->reads, 1);
        add(&p->bytes, (uint64_t)got);
    }
    if (q->abandoned) {
        slot_free(r, q);
        return 1;
    }
    q->done = 1;
    if (got < 0) {
        q->rc = tkv_err_errno((int)-got, "read %s at offset %llu", q->f->path, (unsigned long long)q->off);
        return 1;
    }
    size_t skip = (size_t)(q->off - q->dev_off);
    size_t avail = (size_t)got > skip ? (size_t)got - skip : 0;
    q->data = q->buf + skip;
    q->got = avail < q->n ? avail : q->n;
    return 1;
}

/* reap_one -- submits, waits for one completion and processes it; the read
 * it completed (NULL if it was queued again). */
static io_req *reap_one(io_ring *r)
{
    io_ring_submit(r);
    struct io_uring_cqe *cqe;
    int rc;
    /* With IORING_FEAT_NODROP (checked at setup) waiting fails only when
     * interrupted. */
    while ((rc = io_uring_wait_cqe(&r->u, &cqe)) < 0) {
        if (rc != -EINTR && rc != -EAGAIN && rc != -ETIME) sched_yield();
        io_ring_submit(r);
    }
    io_req *q = io_uring_cqe_get_data(cqe);
    int res = cqe->res;
    io_uring_cqe_seen(&r->u, cqe);
    int abandoned = q->abandoned;
    if (!complete(r, q, res) || abandoned) return NULL;
    return q;
}

io_req *io_ring_reap(io_ring *r)
{
    while (r->live) {
        io_req *q = reap_one(r);
        if (q) return q;
    }
    return NULL;
}

int io_ring_wait(io_ring *r, io_req *q)
{
    while (!q->done) (void)reap_one(r);
    return q->rc;
}

void io_req_free(io_ring *r, io_req *q)
{
    if (!q) return;
    if (q->done || !q->buf) {
        slot_free(r, q);
        return;
    }
    /* In flight: the buffer must outlive the read. Submitted now, so that
     * the kernel holds the file from here on and the caller may close it. */
    q->abandoned = 1;
    r->live--;
    add(&r->pool->abandoned, 1);
    io_ring_submit(r);
}

void io_ring_release(io_ring_pool *p, io_ring *r)
{
    if (!r) return;
    while (r->inflight) (void)reap_one(r); /* invariant 2 */
    for (unsigned i = 0; i < r->depth && r->nfree < r->depth; i++)
        if (r->slots[i].taken) slot_free(r, &r->slots[i]);
    pthread_mutex_lock(&p->mu);
    r->next = p->idle;
    p->idle = r;
    p->lent--;
    pthread_mutex_unlock(&p->mu);
}

/* ring_fixed_bytes -- a ring's memory without its arena: the struct, its
 * slots, and the kernel's rings (depth SQEs of 64 bytes and their index,
 * 2 x depth CQEs of 16 bytes, and a page of ring headers). */
static size_t ring_fixed_bytes(unsigned depth)
{
    return sizeof(io_ring) + (size_t)depth * (sizeof(io_req) + sizeof(unsigned)) + (size_t)depth * (64 + 4) +
           (size_t)depth * 2 * 16 + 4096;
}

size_t io_ring_cost(unsigned depth) { return ring_fixed_bytes(depth) + (size_t)ARENA_PAGES * IO_DIRECT_ALIGN; }

void io_ring_pool_get_stats(io_ring_pool *p, io_ring_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    out->rings = p->nrings;
    out->lent = p->lent;
    pthread_mutex_unlock(&p->mu);
    out->depth = p->depth;
    out->max_rings = p->max_rings;
    uint64_t *src[] = {&p->reads,     &p->bytes,        &p->max_inflight, &p->short_reads,   &p->retries,
                       &p->abandoned, &p->heap_buffers, &p->busy,         &p->setup_failures};
    uint64_t *dst[] = {&out->reads,     &out->bytes,        &out->max_inflight, &out->short_reads,   &out->retries,
                       &out->abandoned, &out->heap_buffers, &out->busy,         &out->setup_failures};
    for (size_t i = 0; i < sizeof src / sizeof src[0]; i++) *dst[i] = __atomic_load_n(src[i], __ATOMIC_RELAXED);
    out->memory = out->rings * ring_fixed_bytes(p->depth) +
                  __atomic_load_n(&p->arenas, __ATOMIC_RELAXED) * (uint64_t)ARENA_PAGES * IO_DIRECT_ALIGN;
}
