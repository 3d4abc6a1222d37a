// SPDX-License-Identifier: Apache-2.0
/*
 * wb.c -- the background write-back thread for buffered client files (wb.h).
 *
 * A fixed ring of ranges under one mutex. The writer side (io_wb_enqueue)
 * only dup()s the descriptor and copies three words in: it never waits for
 * the thread. The thread takes one range at a time and, with the mutex
 * released, writes it back in IO_WB_STEP pieces, fdatasyncs the flush
 * directory (the device-cache flush, wb.h) and closes its descriptor.
 */
#include "io/wb.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/status.h"
#include "util/thread.h"

typedef struct wb_range {
    int fd; /* a dup() owned by the queue until the range is done */
    uint64_t off, len;
    uint64_t
        release_end; /* a release (io_wb_release): blocks past off (the size) up to this go back; 0: a write-back */
} wb_range;

int io_release_blocks(int fd, uint64_t size, uint64_t end)
{
    /* ext4 frees blocks past the size on a truncate to the same size and
     * ignores a hole punched there; other file systems the other way round */
    if (ftruncate(fd, (off_t)size) != 0) return errno;
    (void)fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)size, (off_t)(end - size));
    return 0;
}

/* release_range -- a queued release (release_end set): 0, or the truncate's
 * errno; skipped (0) if the file has been unlinked, its blocks going with it. */
static int release_range(const wb_range *r)
{
    struct stat sb;
    if (fstat(r->fd, &sb) == 0 && sb.st_nlink == 0) return 0;
    return io_release_blocks(r->fd, r->off, r->release_end);
}

struct io_wb {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* the thread waits for work; drain waits for idle */
    wb_range ring[IO_WB_QUEUE];
    uint32_t head, tail; /* ring[tail % N .. head % N) queued */
    int busy;            /* the thread is working on a range it took */
    int stopping;
    pthread_t thread;
    int flush_fd; /* the directory fdatasynced for a device-cache flush */
    io_wb_stats st;
};

static void *wb_main(void *arg)
{
    io_wb *wb = arg;
    pthread_setname_np(pthread_self(), "tkv-wal-wb"); /* for top and perf */
    pthread_mutex_lock(&wb->mu);
    for (;;) {
        while (wb->head == wb->tail && !wb->stopping) pthread_cond_wait(&wb->cv, &wb->mu);
        if (wb->stopping) break;
        wb_range r = wb->ring[wb->tail % IO_WB_QUEUE];
        wb->tail++;
        wb->busy = 1;
        pthread_mutex_unlock(&wb->mu);
        uint64_t started = 0;
        int failed = 0;
        struct stat sb;
        /* an unlinked file (a WAL deleted after its flush) needs no write-back, and its blocks go with it */
        if (r.release_end) {
            failed = release_range(&r) != 0;
        } else if (fstat(r.fd, &sb) != 0 || sb.st_nlink > 0) {
            for (uint64_t o = r.off; o < r.off + r.len; o += IO_WB_STEP) {
                uint64_t n = r.off + r.len - o < IO_WB_STEP ? r.off + r.len - o : IO_WB_STEP;
                if (sync_file_range(r.fd, (off_t)o, (off_t)n,
                                    SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) !=
                    0) {
                    failed = 1;
                    break;
                }
                started += n;
            }
        }
        int synced = 0;
        if (!failed && started) {
            if (fdatasync(wb->flush_fd) != 0) failed = 1;
            else synced = 1;
        }
        close(r.fd);
        pthread_mutex_lock(&wb->mu);
        wb->busy = 0;
        wb->st.done++;
        wb->st.bytes += started;
        wb->st.syncs += (uint64_t)synced;
        wb->st.failures += (uint64_t)failed;
        pthread_cond_broadcast(&wb->cv); /* io_wb_drain */
    }
    pthread_mutex_unlock(&wb->mu);
    return NULL;
}

int io_wb_start(io_wb **out, const char *flush_dir)
{
    *out = NULL;
    io_wb *wb = calloc(1, sizeof *wb);
    if (!wb) return tkv_err(TKV_NO_MEMORY, "out of memory starting the WAL write-back thread");
    if ((wb->flush_fd = open(flush_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
        int e = errno;
        free(wb);
        return tkv_err_errno(e, "opening directory %s for the WAL write-back thread", flush_dir);
    }
    pthread_mutex_init(&wb->mu, NULL);
    pthread_cond_init(&wb->cv, NULL);
    int rc = thread_create(&wb->thread, wb_main, wb, "the WAL write-back thread");
    if (rc < 0) {
        pthread_cond_destroy(&wb->cv);
        pthread_mutex_destroy(&wb->mu);
        close(wb->flush_fd);
        free(wb);
        return rc;
    }
    *out = wb;
    return 0;
}

/* queue -- a dup of fd with (off, len, release_end) at the head; -1 and
 * counted as dropped when there is nothing to do (an empty range), the
 * queue is full or fd cannot be duplicated. */
static int queue(io_wb *wb, int fd, uint64_t off, uint64_t len, uint64_t release_end)
{
    int dupfd = len || release_end ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
    pthread_mutex_lock(&wb->mu);
    if (dupfd < 0 || wb->head - wb->tail >= IO_WB_QUEUE || wb->stopping) {
        wb->st.dropped++;
        pthread_mutex_unlock(&wb->mu);
        if (dupfd >= 0) close(dupfd);
        return -1;
    }
    wb->ring[wb->head % IO_WB_QUEUE] = (wb_range){dupfd, off, len, release_end};
    wb->head++;
    wb->st.queued++;
    pthread_cond_broadcast(&wb->cv);
    pthread_mutex_unlock(&wb->mu);
    return 0;
}

int io_wb_enqueue(io_wb *wb, int fd, uint64_t off, uint64_t len) { return queue(wb, fd, off, len, 0); }

int io_wb_release(io_wb *wb, int fd, uint64_t size, uint64_t end)
{
    if (end <= size) return 0;
    return queue(wb, fd, size, 0, end);
}

uint64_t io_wb_ticket(io_wb *wb)
{
    pthread_mutex_lock(&wb->mu);
    uint64_t t = wb->st.queued;
    pthread_mutex_unlock(&wb->mu);
    return t;
}

int io_wb_passed(io_wb *wb, uint64_t ticket)
{
    pthread_mutex_lock(&wb->mu);
    int passed = wb->st.done >= ticket;
    pthread_mutex_unlock(&wb->mu);
    return passed;
}

void io_wb_get_stats(io_wb *wb, io_wb_stats *out)
{
    pthread_mutex_lock(&wb->mu);
    *out = wb->st;
    out->pending = wb->head - wb->tail + (uint64_t)wb->busy;
    pthread_mutex_unlock(&wb->mu);
}

void io_wb_drain(io_wb *wb)
{
    pthread_mutex_lock(&wb->mu);
    while ((wb->head != wb->tail || wb->busy) && !wb->stopping) pthread_cond_wait(&wb->cv, &wb->mu);
    pthread_mutex_unlock(&wb->mu);
}

void io_wb_stop(io_wb *wb)
{
    if (!wb) return;
    pthread_mutex_lock(&wb->mu);
    wb->stopping = 1;
    pthread_cond_broadcast(&wb->cv);
    pthread_mutex_unlock(&wb->mu);
    pthread_join(wb->thread, NULL);
    /* write-backs still queued are dropped (the kernel writes those pages
     * back); releases are done now: a mapped WAL's file is as long as its
     * mapping until its release truncates it (io.h io_map_appends) */
    for (; wb->tail != wb->head; wb->tail++) {
        wb_range *r = &wb->ring[wb->tail % IO_WB_QUEUE];
        if (r->release_end) (void)release_range(r);
        close(r->fd);
        wb->st.dropped += r->release_end ? 0 : 1;
    }
    close(wb->flush_fd);
    pthread_cond_destroy(&wb->cv);
    pthread_mutex_destroy(&wb->mu);
    free(wb);
}
