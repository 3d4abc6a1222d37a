// SPDX-License-Identifier: Apache-2.0
/*
 * engine_devread.c -- the "devread" engine: the device floor. It stores the
 * prepopulation's values in one flat file and then, for every get, reads one
 * 4 KiB block of that file from the device (O_DIRECT with --direct_io), at a
 * block chosen by a hash of the key. It keeps no index, no cache and does no
 * background work, so a benchmark against it measures what the harness plus
 * this device alone put into every engine's per-second latency: a point read
 * of an engine whose index is in memory costs at least this one block read.
 * Next to the "null" engine (no storage at all) it separates the host's CPU
 * noise from the device's own stalls.
 *
 * Phases, keyed to tkv_bench's calls:
 *   - until the first wait_idle (the prepopulation): put appends the value
 *     to the file through a 1 MiB buffer (buffered writes, no sync); get
 *     finds nothing and does no I/O;
 *   - wait_idle writes the buffer, fdatasyncs the file and seals it: from
 *     then on get reads from the sealed part, and put and delete are counted
 *     and ignored, so the measured run issues reads only (a pure read floor:
 *     no write of this engine competes with them);
 *   - a reopen seals what the file already holds.
 * Values are not returned (get reports a found 4 KiB block); iterators are
 * the empty one (engine_impl.h), never valid. Thread-safe: appends take a mutex, reads are plain preads.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench/engine_impl.h"

#define DR_BLOCK  4096u
#define DR_BUFFER (1u << 20)

struct engine {
    char path[4096];
    int wfd;            /* buffered appends (prepopulation) */
    int rfd;            /* reads: O_DIRECT when the config asks for direct I/O */
    int direct;         /* rfd is O_DIRECT */
    pthread_mutex_t mu; /* buf, buf_len, file_len, sealed's transition */
    unsigned char *buf;
    size_t buf_len;
    uint64_t file_len; /* bytes appended (written + buffered) */
    uint64_t readable; /* sealed bytes, a multiple of DR_BLOCK; 0 before the seal */
    int sealed;
    uint64_t bytes_written, reads, ignored_writes;
    char desc[4096 + 128];
};

static int dr_available(char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    return 1;
}

static const char *dr_version(void) { return "devread (one 4 KiB device read per get; the device floor)"; }

/* flush_locked -- writes the append buffer at the end of the file. mu held. */
static int flush_locked(engine *e)
{
    size_t off = 0;
    uint64_t at = e->file_len - e->buf_len;
    while (off < e->buf_len) {
        ssize_t n = pwrite(e->wfd, e->buf + off, e->buf_len - off, (off_t)(at + off));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return eng_fail(-1, "devread: write %s: %s", e->path, n < 0 ? strerror(errno) : "short write");
        off += (size_t)n;
    }
    e->bytes_written += e->buf_len;
    e->buf_len = 0;
    return 0;
}

/* seal_locked -- makes everything appended durable and readable; later puts
 * are ignored. mu held. */
static int seal_locked(engine *e)
{
    if (e->buf_len && flush_locked(e) != 0) return -1;
    if (fdatasync(e->wfd) != 0) return eng_fail(-1, "devread: fdatasync %s: %s", e->path, strerror(errno));
    __atomic_store_n(&e->readable, e->file_len / DR_BLOCK * DR_BLOCK, __ATOMIC_RELEASE);
    e->sealed = 1;
    return 0;
}

static int dr_open(const engine_config *cfg, engine **out, char *err, size_t errlen)
{
    *out = NULL;
    if (mkdir(cfg->dir, 0755) != 0 && errno != EEXIST)
        return eng_errf(err, errlen, "devread: mkdir %s: %s", cfg->dir, strerror(errno));
    engine *e = calloc(1, sizeof *e);
    if (!e || !(e->buf = malloc(DR_BUFFER))) {
        free(e);
        return eng_errf(err, errlen, "devread open: out of memory");
    }
    pthread_mutex_init(&e->mu, NULL);
    e->wfd = e->rfd = -1;
    snprintf(e->path, sizeof e->path, "%s/devread.dat", cfg->dir);
    e->wfd = open(e->path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (e->wfd >= 0 && cfg->direct_io) {
        e->rfd = open(e->path, O_RDONLY | O_DIRECT | O_CLOEXEC);
        e->direct = e->rfd >= 0;
    }
    if (e->wfd >= 0 && e->rfd < 0) e->rfd = open(e->path, O_RDONLY | O_CLOEXEC); /* tmpfs has no O_DIRECT */
    struct stat st;
    if (e->wfd < 0 || e->rfd < 0 || fstat(e->wfd, &st) != 0) {
        int saved = errno;
        if (e->wfd >= 0) close(e->wfd);
        if (e->rfd >= 0) close(e->rfd);
        pthread_mutex_destroy(&e->mu);
        free(e->buf);
        free(e);
        return eng_errf(err, errlen, "devread: open %s: %s", cfg->dir, strerror(saved));
    }
    e->file_len = (uint64_t)st.st_size;
    if (e->file_len >= DR_BLOCK) { /* a reopen: what is there is the data set */
        e->readable = e->file_len / DR_BLOCK * DR_BLOCK;
        e->sealed = 1;
    }
    snprintf(e->desc, sizeof e->desc, "engine=devread file=%s reads=pread(4096%s) index=none cache=none", e->path,
             e->direct ? ",O_DIRECT" : ",page cache");
    *out = e;
    return 0;
}

static void dr_close(engine *e)
{
    if (!e) return;
    pthread_mutex_lock(&e->mu);
    if (e->buf_len && flush_locked(e) != 0) fprintf(stderr, "tkv_bench: devread close: %s\n", eng_last_error());
    pthread_mutex_unlock(&e->mu);
    close(e->wfd);
    close(e->rfd);
    pthread_mutex_destroy(&e->mu);
    free(e->buf);
    free(e);
}

static const char *dr_describe(engine *e) { return e->desc; }

static int dr_append(engine *e, const char *v, size_t vn)
{
    pthread_mutex_lock(&e->mu);
    int rc = 0;
    if (e->sealed) {
        e->ignored_writes++;
    } else {
        while (vn > 0 && rc == 0) {
            size_t n = DR_BUFFER - e->buf_len < vn ? DR_BUFFER - e->buf_len : vn;
            memcpy(e->buf + e->buf_len, v, n);
            e->buf_len += n;
            e->file_len += n;
            v += n;
            vn -= n;
            if (e->buf_len == DR_BUFFER) rc = flush_locked(e);
        }
    }
    pthread_mutex_unlock(&e->mu);
    return rc;
}

static int dr_put(engine *e, const char *k, size_t kn, const char *v, size_t vn)
{
    (void)k, (void)kn;
    return dr_append(e, v, vn);
}

static int dr_del(engine *e, const char *k, size_t kn)
{
    (void)k, (void)kn;
    return dr_append(e, "", 0);
}

/* key_hash -- FNV-1a, then a 64-bit finaliser so that neighbouring keys
 * land on unrelated blocks. */
static uint64_t key_hash(const char *k, size_t kn)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < kn; i++) h = (h ^ (unsigned char)k[i]) * 1099511628211ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

static int dr_get(engine *e, const char *k, size_t kn, size_t *vn)
{
    *vn = 0;
    uint64_t readable = __atomic_load_n(&e->readable, __ATOMIC_ACQUIRE);
    if (readable == 0) return 1;
    _Alignas(DR_BLOCK) unsigned char block[DR_BLOCK];
    off_t at = (off_t)(key_hash(k, kn) % (readable / DR_BLOCK) * DR_BLOCK);
    for (;;) {
        ssize_t n = pread(e->rfd, block, DR_BLOCK, at);
        if (n < 0 && errno == EINTR) continue;
        if (n != (ssize_t)DR_BLOCK)
            return eng_fail(-1, "devread: read %s at %lld: %s", e->path, (long long)at,
                            n < 0 ? strerror(errno) : "short read");
        break;
    }
    eng_touch(block, sizeof block);
    __atomic_fetch_add(&e->reads, 1, __ATOMIC_RELAXED);
    *vn = DR_BLOCK;
    return 0;
}

static int dr_multi_get(engine *e, size_t n, const char *const *keys, const size_t *kns, int *found)
{
    return eng_multi_get_each(dr_get, e, n, keys, kns, found);
}

static int dr_wait_idle(engine *e)
{
    pthread_mutex_lock(&e->mu);
    int rc = e->sealed ? 0 : seal_locked(e);
    pthread_mutex_unlock(&e->mu);
    return rc;
}

static int dr_stats(engine *e, engine_stats *out)
{
    pthread_mutex_lock(&e->mu);
    out->device_bytes_written = (int64_t)e->bytes_written;
    out->stall_count = 0;
    out->stall_micros = 0;
    out->pmem_bytes_written = -1;
    snprintf(out->detail, sizeof out->detail, "devread: sealed=%d readable=%llu reads=%llu ignored_writes=%llu",
             e->sealed, (unsigned long long)e->readable,
             (unsigned long long)__atomic_load_n(&e->reads, __ATOMIC_RELAXED), (unsigned long long)e->ignored_writes);
    pthread_mutex_unlock(&e->mu);
    return 0;
}

const engine_ops engine_devread_ops = {
    .name = "devread",
    .available = dr_available,
    .version = dr_version,
    .open = dr_open,
    .close = dr_close,
    .describe = dr_describe,
    .put = dr_put,
    .del = dr_del,
    .get = dr_get,
    .multi_get = dr_multi_get,
    .iter_new = eng_empty_iter_new,
    .iter_seek = eng_empty_iter_seek,
    .iter_seek_first = eng_empty_iter_move,
    .iter_seek_last = eng_empty_iter_move,
    .iter_valid = eng_empty_iter_valid,
    .iter_next = eng_empty_iter_move,
    .iter_prev = eng_empty_iter_move,
    .iter_entry = eng_empty_iter_entry,
    .iter_free = eng_empty_iter_free,
    .wait_idle = dr_wait_idle,
    .stats = dr_stats,
    .last_error = eng_last_error,
};
