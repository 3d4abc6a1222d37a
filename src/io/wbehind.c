// SPDX-License-Identifier: Apache-2.0
/*
 * wbehind.c -- write-behind for a direct append file through a private
 * io_uring ring (wbehind.h).
 */
#include "io/wbehind.h"

#include <errno.h>
#include <liburing.h>
#include <stdlib.h>
#include <unistd.h>

#include "io/io_int.h"

enum { TAG_WRITE = 1, TAG_SYNC = 2 };

struct io_wbehind {
    struct io_uring ring;
    int dead;          /* a submission failed: the ring is gone, the file writes synchronously */
    unsigned inflight; /* completions still to reap: 0, 1 or 2 */
    int sync_asked;    /* the submission asked for an fdatasync */
    int sync_sent;     /* ... and it went to the kernel (linked after the write) */
    int fd;
    const uint8_t *buf;
    size_t n;
    uint64_t off;
};

io_wbehind *io_wbehind_new(void)
{
    io_wbehind *w = calloc(1, sizeof *w);
    if (!w) return NULL;
    /* the ring-setup fault point covers this ring too: a test that refuses
     * io_uring gets synchronous writes */
    if (io_fault(IO_OP_RING_SETUP, "io_uring", 0) > 0 || io_uring_queue_init(4, &w->ring, 0) != 0) {
        free(w);
        return NULL;
    }
    return w;
}

int io_wbehind_submit(io_wbehind *w, int fd, const uint8_t *buf, size_t n, uint64_t off, int sync)
{
    if (w->dead || w->inflight) return EBUSY;
    struct io_uring_sqe *sqe = io_uring_get_sqe(&w->ring);
    if (!sqe) return EAGAIN;
    io_uring_prep_write(sqe, fd, buf, (unsigned)n, off);
    io_uring_sqe_set_data64(sqe, TAG_WRITE);
    unsigned want = 1;
    if (sync) {
        struct io_uring_sqe *s2 = io_uring_get_sqe(&w->ring);
        if (s2) { /* runs only after the write completed in full */
            sqe->flags |= IOSQE_IO_LINK;
            io_uring_prep_fsync(s2, fd, IORING_FSYNC_DATASYNC);
            io_uring_sqe_set_data64(s2, TAG_SYNC);
            want = 2;
        }
    }
    int r;
    do r = io_uring_submit(&w->ring); /* EAGAIN (kernel short of resources): synchronous, not a spin */
    while (r == -EINTR);
    if (r <= 0) {
        /* nothing started; the prepared entries must never be sent later:
         * the ring goes, and the caller writes synchronously from now on */
        io_uring_queue_exit(&w->ring);
        w->dead = 1;
        return r < 0 ? -r : EIO;
    }
    w->inflight = (unsigned)r;
    w->sync_asked = sync;
    w->sync_sent = r == 2 && want == 2;
    w->fd = fd;
    w->buf = buf;
    w->n = n;
    w->off = off;
    return 0;
}

/* finish_write -- bytes [done, n) of the submission with pwrite. */
static int finish_write(io_wbehind *w, size_t done, uint64_t *at)
{
    while (done < w->n) {
        ssize_t r = pwrite(w->fd, w->buf + done, w->n - done, (off_t)(w->off + done));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            *at = w->off + done;
            return r < 0 ? errno : ENOSPC;
        }
        done += (size_t)r;
    }
    return 0;
}

int io_wbehind_wait(io_wbehind *w, const char **what, uint64_t *at, int *synced)
{
    *synced = 0;
    if (!w->inflight) return 0;
    int wres = 0, sres = -ECANCELED, err = 0;
    while (w->inflight) {
        struct io_uring_cqe *cqe;
        int r = io_uring_wait_cqe(&w->ring, &cqe);
        if (r == -EINTR) continue;
        if (r < 0) { /* the ring itself failed: what reached the device is unknown */
            w->inflight = 0;
            *what = "write";
            *at = w->off;
            return -r;
        }
        if (io_uring_cqe_get_data64(cqe) == TAG_WRITE) wres = cqe->res;
        else sres = cqe->res;
        io_uring_cqe_seen(&w->ring, cqe);
        w->inflight--;
    }
    *what = "write";
    *at = w->off;
    if (wres == -EAGAIN || wres == -EINTR) {
        err = finish_write(w, 0, at); /* not started: write it all here */
    } else if (wres < 0) {
        return -wres;
    } else if ((size_t)wres < w->n) {
        err = finish_write(w, (size_t)wres, at); /* short: the linked fdatasync was cancelled */
    }
    if (err) return err;
    if (!w->sync_asked) return 0;
    *what = "fdatasync";
    if (!w->sync_sent || sres == -ECANCELED || sres == -EAGAIN || sres == -EINTR) {
        while (fdatasync(w->fd) != 0)
            if (errno != EINTR) return errno;
    } else if (sres < 0) {
        return -sres;
    }
    *synced = 1;
    return 0;
}

void io_wbehind_free(io_wbehind *w)
{
    if (!w) return;
    if (!w->dead) {
        const char *what;
        uint64_t at;
        int synced;
        (void)io_wbehind_wait(w, &what, &at, &synced);
        io_uring_queue_exit(&w->ring);
    }
    free(w);
}
