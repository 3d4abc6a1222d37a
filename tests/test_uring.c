// SPDX-License-Identifier: Apache-2.0
/*
 * test_uring.c -- the io_uring read path (io/uring.h) against pread.
 *
 * Reads of random ranges (unaligned, across and past the end of file),
 * buffered and O_DIRECT, many in flight, reaped in completion order or
 * waited for one by one: every byte equals the file's, each read comes back
 * exactly once, and the file's io_stats class counts them as io_pread would.
 * The fault hook and the scheduler's gate see each read before it is queued
 * and their errors come back in it; an errno from the kernel is
 * TKV_IO_ERROR naming the file. A setup the hook refuses (ENOSYS, EPERM,
 * ENOMEM) fails the pool with the matching code. Rings are lent whole:
 * max_rings bounds them, a released ring carries no stray completion (an
 * abandoned read is waited for), and threads sharing a pool each get only
 * their own completions.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "io/io.h"
#include "io/uring.h"
#include "testutil.h"
#include "tierkv.h"
#include "util/status.h"

#define FILE_SIZE ((1300u << 10) + 123u)

typedef struct fixture {
    char *dir, *path;
    uint8_t *data;
} fixture;

static fixture *fixture_new(uint64_t seed)
{
    fixture *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    fx->dir = tu_tmpdir("uring");
    fx->path = tu_path(fx->dir, "f");
    fx->data = malloc(FILE_SIZE);
    assert_non_null(fx->data);
    tu_rng r;
    tu_rng_init(&r, seed);
    tu_rng_fill(&r, fx->data, FILE_SIZE);
    FILE *w = fopen(fx->path, "wb");
    assert_non_null(w);
    assert_int_equal(fwrite(fx->data, 1, FILE_SIZE, w), FILE_SIZE);
    fclose(w);
    return fx;
}

static void fixture_free(fixture *fx)
{
    free(fx->data);
    free(fx->path);
    tu_tmpdir_free(fx->dir);
    free(fx);
}

/* check_req -- q is done and holds exactly what the file has at its range. */
static void check_req(const fixture *fx, const io_req *q)
{
    assert_true(q->done);
    if (q->rc != 0) fail_msg("read at %llu+%zu failed: %d (%s)", (unsigned long long)q->off, q->n, q->rc, tkv_errmsg());
    size_t want = q->off >= FILE_SIZE ? 0 : FILE_SIZE - q->off < q->n ? FILE_SIZE - q->off : q->n;
    if (q->got != want)
        fail_msg("read at %llu+%zu got %zu bytes, the file has %zu there", (unsigned long long)q->off, q->n, q->got,
                 want);
    if (want && memcmp(q->data, fx->data + q->off, want))
        fail_msg("read at %llu+%zu: bytes differ from the file", (unsigned long long)q->off, q->n);
}

/* random_range -- mostly block-like reads, some at and past the end. */
static void random_range(tu_rng *r, uint64_t *off, size_t *n)
{
    uint64_t k = tu_rng_below(r, 20);
    *n = k == 0 ? (size_t)tu_rng_range(r, 1, 300u << 10) : (size_t)tu_rng_range(r, 1, 9000);
    if (k == 1) *off = FILE_SIZE - (uint64_t)tu_rng_below(r, 5000);
    else if (k == 2) *off = FILE_SIZE + (uint64_t)tu_rng_below(r, 9000);
    else *off = tu_rng_below(r, FILE_SIZE);
}

/* reads_match_pread -- rounds of up to `depth` reads in flight, reaped in
 * completion order: each read returned once with the file's bytes; io_stats
 * counts reads and bytes (the aligned range for O_DIRECT) as io_pread does. */
static void reads_match_pread(void **state)
{
    (void)state;
    fixture *fx = fixture_new(tu_seed() + 1);
    tu_rng r;
    tu_rng_init(&r, tu_seed() + 2);
    for (int direct = 0; direct < 2; direct++) {
        io_ring_pool *p;
        assert_int_equal(io_ring_pool_new(32, 4, &p), 0);
        io_ring *ring = io_ring_acquire(p);
        assert_non_null(ring);
        io_stats st = {0}, st_pread = {0};
        io_file *f, *g;
        assert_int_equal(io_open_read_ex(fx->path, direct ? IO_DIRECT : 0, IO_USER_READ, &st, &f), 0);
        assert_int_equal(io_open_read_ex(fx->path, direct ? IO_DIRECT : 0, IO_USER_READ, &st_pread, &g), 0);
        uint8_t *buf = malloc(300u << 10);
        assert_non_null(buf);
        uint64_t nreads = 0;
        for (int round = 0; round < 40; round++) {
            unsigned n = (unsigned)tu_rng_range(&r, 1, 32);
            int seen[32] = {0};
            for (unsigned i = 0; i < n; i++) {
                uint64_t off;
                size_t len;
                random_range(&r, &off, &len);
                io_req *q = io_ring_read(ring, f, off, len);
                assert_non_null(q);
                assert_false(q->done);
                q->user = (void *)(uintptr_t)i;
                size_t got;
                assert_int_equal(io_pread(g, off, buf, len, &got), 0); /* the same read through pread */
            }
            assert_int_equal(io_ring_free_slots(ring), 32 - n);
            io_req *q;
            unsigned back = 0;
            while ((q = io_ring_reap(ring))) {
                unsigned i = (unsigned)(uintptr_t)q->user;
                assert_false(seen[i]);
                seen[i] = 1;
                check_req(fx, q);
                io_req_free(ring, q);
                back++;
            }
            assert_int_equal(back, n);
            nreads += n;
        }
        assert_int_equal(io_ring_free_slots(ring), 32);
        io_req *big = io_ring_read(ring, f, 1000, FILE_SIZE); /* more than the 1 MiB arena: its own buffer */
        assert_int_equal(io_ring_wait(ring, big), 0);
        check_req(fx, big);
        io_req_free(ring, big);
        size_t got;
        uint8_t *whole = malloc(FILE_SIZE);
        assert_int_equal(io_pread(g, 1000, whole, FILE_SIZE, &got), 0);
        free(whole);
        nreads++;
        assert_int_equal(st.read_ops[IO_USER_READ], nreads);
        assert_int_equal(st.read_ops[IO_USER_READ], st_pread.read_ops[IO_USER_READ]);
        assert_int_equal(st.read_bytes[IO_USER_READ], st_pread.read_bytes[IO_USER_READ]);
        io_ring_stats rs;
        io_ring_pool_get_stats(p, &rs);
        assert_int_equal(rs.reads, nreads);
        assert_int_equal(rs.bytes, st.read_bytes[IO_USER_READ]);
        assert_true(rs.max_inflight >= 2 && rs.max_inflight <= 32);
        assert_true(rs.heap_buffers >= 1);
        free(buf);
        io_close(f);
        io_close(g);
        io_ring_release(p, ring);
        io_ring_pool_free(p);
    }
    fixture_free(fx);
}

/* wait_and_abandon -- waiting for one read marks the others that complete
 * meanwhile; reads freed in flight are abandoned and waited for by
 * release, so the next holder of the ring finds every slot free and no
 * completion it did not ask for. A full ring refuses a read (NULL). */
static void wait_and_abandon(void **state)
{
    (void)state;
    fixture *fx = fixture_new(tu_seed() + 3);
    io_ring_pool *p;
    assert_int_equal(io_ring_pool_new(8, 1, &p), 0);
    io_ring *ring = io_ring_acquire(p);
    assert_non_null(ring);
    io_file *f;
    assert_int_equal(io_open_read_ex(fx->path, IO_DIRECT, IO_USER_READ, NULL, &f), 0);
    io_req *q[8];
    for (int i = 0; i < 8; i++) assert_non_null(q[i] = io_ring_read(ring, f, (uint64_t)i * 70001, 5000));
    assert_null(io_ring_read(ring, f, 0, 10)); /* every slot taken */
    assert_int_equal(io_ring_wait(ring, q[5]), 0);
    check_req(fx, q[5]);
    assert_int_equal(io_ring_wait(ring, q[2]), 0);
    check_req(fx, q[2]);
    for (int i = 0; i < 8; i++)
        if (i != 2 && i != 5 && i % 2) io_req_free(ring, q[i]); /* some may still be in flight */
    io_req_free(ring, q[2]);
    io_req_free(ring, q[5]);
    for (int i = 0; i < 8; i += 2)
        if (i != 2) {
            assert_int_equal(io_ring_wait(ring, q[i]), 0);
            check_req(fx, q[i]);
            io_req_free(ring, q[i]);
        }
    io_ring_release(p, ring);
    io_close(f);               /* after the abandoned reads completed */
    ring = io_ring_acquire(p); /* the same ring (max_rings 1) */
    assert_non_null(ring);
    assert_null(io_ring_acquire(p)); /* lent whole: no second holder */
    assert_int_equal(io_ring_free_slots(ring), 8);
    assert_null(io_ring_reap(ring)); /* nothing of anyone else's */
    io_ring_stats rs;
    io_ring_pool_get_stats(p, &rs);
    assert_int_equal(rs.busy, 1);
    assert_int_equal(rs.rings, 1);
    assert_int_equal(rs.lent, 1);
    io_ring_release(p, ring);
    io_ring_pool_free(p);
    fixture_free(fx);
}

/* fault_hook -- fails the 3rd IO_OP_READ it sees with EIO, refuses ring
 * setups with *(int *)arg when set. */
static int g_reads, g_fail_read = -1, g_setup_errno;
static int uring_hook(io_op op, const char *path, size_t len, void *arg)
{
    (void)path;
    (void)len;
    (void)arg;
    if (op == IO_OP_RING_SETUP) return g_setup_errno;
    if (op != IO_OP_READ) return 0;
    return g_reads++ == g_fail_read ? EIO : 0;
}

static int g_gate_calls, g_gate_refuse;
static uint64_t g_gate_bytes;
static int test_gate(void *arg, io_class cls, int is_write, size_t n)
{
    (void)arg;
    assert_int_equal(cls, IO_USER_READ);
    assert_false(is_write);
    g_gate_calls++;
    g_gate_bytes += n;
    return g_gate_refuse ? tkv_err(TKV_BUSY, "gate refused") : 0;
}

/* hook_gate_and_errors -- the fault hook sees every read (and its EIO comes
 * back in the read, done at once, nothing issued); the gate is charged the
 * asked bytes and its refusal is the read's result; the kernel's errno for a
 * read of a directory is TKV_IO_ERROR naming it. */
static void hook_gate_and_errors(void **state)
{
    (void)state;
    fixture *fx = fixture_new(tu_seed() + 4);
    io_ring_pool *p;
    assert_int_equal(io_ring_pool_new(16, 2, &p), 0);
    io_ring *ring = io_ring_acquire(p);
    io_stats st = {0};
    st.gate = test_gate;
    io_file *f;
    assert_int_equal(io_open_read_ex(fx->path, 0, IO_USER_READ, &st, &f), 0);
    g_reads = 0;
    g_fail_read = 2;
    io_set_fault_hook(uring_hook, NULL);
    io_req *q[5];
    for (int i = 0; i < 5; i++) q[i] = io_ring_read(ring, f, (uint64_t)i * 1000, 100);
    io_set_fault_hook(NULL, NULL);
    assert_int_equal(g_reads, 5);
    assert_true(q[2]->done);
    assert_int_equal(q[2]->rc, TKV_IO_ERROR);
    assert_non_null(strstr(tkv_errmsg(), fx->path));
    assert_int_equal(g_gate_calls, 4); /* the refused read never reached the gate */
    assert_int_equal(g_gate_bytes, 400);
    for (int i = 0; i < 5; i++) {
        if (i != 2) assert_int_equal(io_ring_wait(ring, q[i]), 0), check_req(fx, q[i]);
        io_req_free(ring, q[i]);
    }
    assert_int_equal(st.read_ops[IO_USER_READ], 4);
    g_gate_refuse = 1;
    io_req *b = io_ring_read(ring, f, 0, 10);
    assert_true(b->done);
    assert_int_equal(b->rc, TKV_BUSY);
    io_req_free(ring, b);
    g_gate_refuse = 0;
    io_close(f);
    assert_int_equal(io_open_read(fx->dir, IO_USER_READ, NULL, &f), 0); /* a directory: read gives EISDIR */
    io_req *d = io_ring_read(ring, f, 0, 4096);
    assert_non_null(d);
    assert_int_equal(io_ring_wait(ring, d), TKV_IO_ERROR);
    assert_non_null(strstr(tkv_errmsg(), fx->dir));
    io_req_free(ring, d);
    io_close(f);
    io_ring_release(p, ring);
    io_ring_pool_free(p);
    fixture_free(fx);
}

/* setup_refused -- a kernel or sandbox that refuses io_uring, as the fault
 * hook plays it: the pool fails with the errno's code and says why. A ring
 * refused after the first only makes acquire return NULL (counted). */
static void setup_refused(void **state)
{
    (void)state;
    static const struct {
        int e, code;
    } cases[] = {{ENOSYS, TKV_IO_ERROR}, {EPERM, TKV_IO_ERROR}, {ENOMEM, TKV_NO_MEMORY}};
    io_set_fault_hook(uring_hook, NULL);
    for (size_t i = 0; i < 3; i++) {
        g_setup_errno = cases[i].e;
        io_ring_pool *p = (io_ring_pool *)&p;
        assert_int_equal(io_ring_pool_new(16, 2, &p), cases[i].code);
        assert_null(p);
        assert_non_null(strstr(tkv_errmsg(), "io_uring setup failed"));
        assert_non_null(strstr(tkv_errmsg(), strerror(cases[i].e)));
    }
    g_setup_errno = 0;
    io_ring_pool *p;
    assert_int_equal(io_ring_pool_new(16, 2, &p), 0);
    io_ring *a = io_ring_acquire(p);
    assert_non_null(a);
    g_setup_errno = EPERM;
    assert_null(io_ring_acquire(p)); /* the second ring cannot be set up */
    g_setup_errno = 0;
    io_set_fault_hook(NULL, NULL);
    io_ring *b = io_ring_acquire(p);
    assert_non_null(b);
    assert_null(io_ring_acquire(p)); /* max_rings 2 */
    io_ring_stats rs;
    io_ring_pool_get_stats(p, &rs);
    assert_int_equal(rs.setup_failures, 1);
    assert_int_equal(rs.busy, 1);
    assert_int_equal(rs.rings, 2);
    io_ring_release(p, a);
    io_ring_release(p, b);
    io_ring_pool_free(p);
}

/* Threads sharing one pool: each borrows a ring per round and checks that
 * every completion it reaps is one of its own reads with the right bytes. */
typedef struct thr {
    fixture *fx;
    io_ring_pool *p;
    io_file *f;
    uint64_t seed;
    int misses;
} thr;

static void *thread_main(void *arg)
{
    thr *t = arg;
    tu_rng r;
    tu_rng_init(&r, t->seed);
    for (int round = 0; round < 200; round++) {
        io_ring *ring = io_ring_acquire(t->p);
        if (!ring) {
            t->misses++;
            continue;
        }
        unsigned n = (unsigned)tu_rng_range(&r, 1, 16);
        uint64_t mine = 0;
        for (unsigned i = 0; i < n; i++) {
            io_req *q = io_ring_read(ring, t->f, tu_rng_below(&r, FILE_SIZE), (size_t)tu_rng_range(&r, 1, 8192));
            q->user = (void *)(uintptr_t)(t->seed * 100 + i);
            mine |= UINT64_C(1) << i;
        }
        io_req *q;
        while ((q = io_ring_reap(ring))) {
            uintptr_t tag = (uintptr_t)q->user;
            if (tag / 100 != t->seed || !(mine & (UINT64_C(1) << (tag % 100))))
                fail_msg("a completion of another reader");
            mine &= ~(UINT64_C(1) << (tag % 100));
            check_req(t->fx, q);
            io_req_free(ring, q);
        }
        assert_int_equal(mine, 0);
        io_ring_release(t->p, ring);
    }
    return NULL;
}

static void threads_share_pool(void **state)
{
    (void)state;
    fixture *fx = fixture_new(tu_seed() + 5);
    io_ring_pool *p;
    assert_int_equal(io_ring_pool_new(16, 3, &p), 0);
    io_file *f;
    assert_int_equal(io_open_read_ex(fx->path, IO_DIRECT, IO_USER_READ, NULL, &f), 0);
    enum { N = 4 };
    pthread_t th[N];
    thr t[N];
    for (int i = 0; i < N; i++) {
        t[i] = (thr){fx, p, f, (uint64_t)i + 1, 0};
        assert_int_equal(pthread_create(&th[i], NULL, thread_main, &t[i]), 0);
    }
    int misses = 0;
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        misses += t[i].misses;
    }
    io_ring_stats rs;
    io_ring_pool_get_stats(p, &rs);
    assert_int_equal(rs.busy, (uint64_t)misses); /* 4 threads, 3 rings */
    assert_true(rs.rings <= 3);
    assert_int_equal(rs.lent, 0);
    io_close(f);
    io_ring_pool_free(p);
    fixture_free(fx);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reads_match_pread),    cmocka_unit_test(wait_and_abandon),
        cmocka_unit_test(hook_gate_and_errors), cmocka_unit_test(setup_refused),
        cmocka_unit_test(threads_share_pool),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
