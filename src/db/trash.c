// SPDX-License-Identifier: Apache-2.0
/*
 * trash.c -- the chunked background deleter (see trash.h).
 *
 * Invariant: every path in the queue is owned by the queue (malloc'd) and is
 * unlinked exactly once, by the thread or by trash_free.
 */
#include "db/trash.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/io.h"
#include "sched/clock.h"
#include "util/thread.h"

#define TRASH_BACKLOG_FILES 8 /* more queued than this: delete without pauses */

typedef struct trash_item {
    char *path;
    struct trash_item *next;
} trash_item;

struct trash {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    trash_item *head, *tail;
    uint64_t chunk, rate;
    int stopping;
    int has_thread;
    pthread_t th;
    trash_stats st;
};

/* delete_chunked -- truncates path down chunk by chunk, pausing so that at
 * most rate bytes/s are released, then unlinks it. With stopping set
 * (trash_free) the rest goes at once. A file with another name (a
 * checkpoint's hard link, tkv_checkpoint) is only unlinked: truncating it
 * would empty the other name's file too, and unlinking frees no blocks. */
static void delete_chunked(trash *t, const char *path)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    int open_errno = fd < 0 ? errno : 0; /* before io_remove can change errno */
    uint64_t freed = 0;
    if (fd >= 0) {
        struct stat sb;
        uint64_t size = fstat(fd, &sb) == 0 && sb.st_nlink <= 1 ? (uint64_t)sb.st_size : 0;
        while (size > t->chunk && !__atomic_load_n(&t->stopping, __ATOMIC_ACQUIRE)) {
            size -= t->chunk;
            if (ftruncate(fd, (off_t)size) != 0) break;
            freed += t->chunk;
            /* paced, unless files pile up faster than the pace (a fast
             * device compacting at full speed): then space comes first */
            if (t->rate && __atomic_load_n(&t->st.pending_files, __ATOMIC_RELAXED) <= TRASH_BACKLOG_FILES)
                sched_sleep_us(t->chunk * 1000000u / t->rate);
        }
        freed += size;
        close(fd);
    }
    int rc = io_remove(path);
    pthread_mutex_lock(&t->mu);
    if (rc < 0 || (fd < 0 && open_errno != ENOENT)) t->st.failures++;
    else {
        t->st.files_deleted++;
        t->st.bytes_deleted += freed;
    }
    pthread_mutex_unlock(&t->mu);
}

static void *trash_main(void *arg)
{
    pthread_setname_np(pthread_self(), "tkv-trash"); /* for top and perf */
    trash *t = arg;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        while (!t->head && !t->stopping) pthread_cond_wait(&t->cv, &t->mu);
        if (!t->head) break; /* stopping and empty */
        trash_item *it = t->head;
        t->head = it->next;
        if (!t->head) t->tail = NULL;
        pthread_mutex_unlock(&t->mu);
        delete_chunked(t, it->path);
        free(it->path);
        free(it);
        pthread_mutex_lock(&t->mu);
        __atomic_fetch_sub(&t->st.pending_files, 1, __ATOMIC_RELAXED); /* read unlocked by delete_chunked */
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

int trash_new(uint64_t chunk, uint64_t rate, trash **out)
{
    trash *t = calloc(1, sizeof *t);
    if (!t) return -ENOMEM;
    pthread_mutex_init(&t->mu, NULL);
    pthread_cond_init(&t->cv, NULL);
    t->chunk = chunk;
    t->rate = rate;
    if (chunk && thread_create(&t->th, trash_main, t, "the trash thread") == 0) t->has_thread = 1; /* else: at once */
    *out = t;
    return 0;
}

void trash_add(trash *t, const char *path)
{
    trash_item *it = t->has_thread ? malloc(sizeof *it) : NULL;
    char *p = it ? strdup(path) : NULL;
    if (!p) { /* no thread (delete_chunk=0) or out of memory: at once */
        free(it);
        int rc = io_remove(path);
        pthread_mutex_lock(&t->mu);
        if (rc < 0) t->st.failures++;
        else t->st.files_deleted++;
        pthread_mutex_unlock(&t->mu);
        return;
    }
    it->path = p;
    it->next = NULL;
    pthread_mutex_lock(&t->mu);
    if (t->tail) t->tail->next = it;
    else t->head = it;
    t->tail = it;
    __atomic_fetch_add(&t->st.pending_files, 1, __ATOMIC_RELAXED);
    pthread_cond_signal(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

void trash_free(trash *t)
{
    if (!t) return;
    if (t->has_thread) {
        pthread_mutex_lock(&t->mu);
        __atomic_store_n(&t->stopping, 1, __ATOMIC_RELEASE); /* the file in progress finishes at once */
        pthread_cond_signal(&t->cv);
        pthread_mutex_unlock(&t->mu);
        pthread_join(t->th, NULL); /* it drains the queue before it exits */
    }
    pthread_cond_destroy(&t->cv);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

void trash_get_stats(trash *t, trash_stats *st)
{
    pthread_mutex_lock(&t->mu);
    *st = t->st;
    pthread_mutex_unlock(&t->mu);
}
