// SPDX-License-Identifier: Apache-2.0
/*
 * io.c -- POSIX implementation of the I/O layer with accounting and fault hooks.
 */

#include "io/io.h"
#include "io/io_int.h"
#include "io/wbehind.h"
#include "io/wb.h"
#include "io/wmap.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "sched/clock.h"
#include "util/status.h"

static io_fault_hook g_hook;
static void *g_hook_arg;

const char *io_class_name(io_class c)
{
    static const char *names[IO_NCLASSES] = {"wal", "user-read", "flush", "compact-l0", "compact-deep", "meta"};
    return (unsigned)c < IO_NCLASSES ? names[c] : "?";
}

void io_set_fault_hook(io_fault_hook hook, void *arg)
{
    __atomic_store_n(&g_hook_arg, arg, __ATOMIC_RELEASE);
    __atomic_store_n(&g_hook, hook, __ATOMIC_RELEASE);
}

int io_fault(io_op op, const char *path, size_t len)
{
    io_fault_hook h = __atomic_load_n(&g_hook, __ATOMIC_ACQUIRE);
    if (!h) return 0;
    return h(op, path, len, __atomic_load_n(&g_hook_arg, __ATOMIC_ACQUIRE));
}

int io_fault_check(io_op op, const char *path, size_t len)
{
    int e = io_fault(op, path, len);
    return e > 0 ? e : 0; /* (a short write, -n, means nothing outside io_append) */
}

static void count(uint64_t *ctr, uint64_t n) { __atomic_fetch_add(ctr, n, __ATOMIC_RELAXED); }

void io_count_read_op(io_stats *st, io_class cls, uint64_t t0_ns)
{
    if (!st) return;
    count(&st->read_ops[cls], 1);
    count(&st->read_ns[cls], sched_mono_ns() - t0_ns);
}

static void count_read_op(io_file *f, uint64_t t0_ns) { io_count_read_op(f->stats, f->cls, t0_ns); }

int io_admit(io_file *f, int is_write, size_t n)
{
    if (!f->stats || !f->stats->gate || n == 0) return 0;
    if (is_write) return f->stats->gate(f->stats->gate_arg, f->cls, is_write, n);
    uint64_t t0 = sched_mono_ns(); /* a read's time in the gate (io.h: read_gate_ns) */
    int rc = f->stats->gate(f->stats->gate_arg, f->cls, is_write, n);
    count(&f->stats->read_gate_ns[f->cls], sched_mono_ns() - t0);
    return rc;
}

/* Bytes staged before a direct append file writes to the device. */
#define IO_DIRECT_STAGE (1u << 20)

static size_t align_up(uint64_t x) { return (size_t)((x + IO_DIRECT_ALIGN - 1) & ~(uint64_t)(IO_DIRECT_ALIGN - 1)); }

static int open_file(const char *path, int flags, io_class cls, io_stats *st, io_file **out)
{
    *out = NULL;
    int e = io_fault(IO_OP_OPEN, path, 0);
    if (e > 0) return tkv_err_errno(e, "open %s", path);
    io_file *f = calloc(1, sizeof *f);
    char *p = strdup(path);
    if (!f || !p) {
        free(f);
        free(p);
        return tkv_err(TKV_NO_MEMORY, "out of memory opening %s", path);
    }
    int fd = open(path, flags | O_CLOEXEC, 0644);
    if (fd < 0) {
        int err = errno;
        free(f);
        free(p);
        if (err == EINVAL && (flags & O_DIRECT))
            return tkv_err(TKV_INVALID, "open %s: the filesystem does not support O_DIRECT (direct_io=1)", path);
        return tkv_err_errno(err, "open %s", path);
    }
    f->fd = fd;
    f->cls = cls;
    f->stats = st;
    f->path = p;
    *out = f;
    return 0;
}

int io_open_append(const char *path, int keep, io_class cls, io_stats *st, io_file **out)
{
    return io_open_append_ex(path, keep, 0, cls, st, out);
}

int io_open_append_ex(const char *path, int keep, unsigned flags, io_class cls, io_stats *st, io_file **out)
{
    *out = NULL;
    if ((flags & IO_DIRECT) && keep)
        return tkv_err(TKV_INVALID, "open %s: direct appends cannot keep existing data", path);
    if ((flags & IO_OVERWRITE) && (keep || (flags & IO_DIRECT)))
        return tkv_err(TKV_INVALID, "open %s: overwriting appends are buffered and start at offset 0", path);
    int create = flags & IO_OVERWRITE ? 0 : O_CREAT | (keep ? 0 : O_TRUNC);
    int oflags = (flags & IO_MAPPED ? O_RDWR : O_WRONLY) | create | ((flags & IO_DIRECT) ? O_DIRECT : 0);
    TKV_TRY(open_file(path, oflags, cls, st, out));
    (*out)->flags = flags;
    if (flags & IO_DIRECT) {
        void *b = NULL;
        if (posix_memalign(&b, IO_DIRECT_ALIGN, IO_DIRECT_STAGE) != 0) {
            io_close(*out);
            *out = NULL;
            return tkv_err(TKV_NO_MEMORY, "out of memory for the direct-I/O buffer of %s", path);
        }
        (*out)->dbuf = b;
        if ((flags & IO_WRITE_BEHIND) && posix_memalign(&b, IO_DIRECT_ALIGN, IO_DIRECT_STAGE) == 0) {
            (*out)->dbuf_alt = b;
            (*out)->wbh = io_wbehind_new(); /* NULL: synchronous writes */
        }
    }
    if (keep) {
        uint64_t sz;
        int rc = io_file_size(*out, &sz);
        if (rc < 0) {
            io_close(*out);
            *out = NULL;
            return rc;
        }
        (*out)->size = sz;
        (*out)->synced_upto = sz;
    }
    return 0;
}

int io_open_read(const char *path, io_class cls, io_stats *st, io_file **out)
{
    return open_file(path, O_RDONLY, cls, st, out);
}

int io_open_read_ex(const char *path, unsigned flags, io_class cls, io_stats *st, io_file **out)
{
    TKV_TRY(open_file(path, O_RDONLY | ((flags & IO_DIRECT) ? O_DIRECT : 0), cls, st, out));
    (*out)->flags = flags;
    return 0;
}

int io_probe_direct(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/.direct_io_probe", dir);
    int e = io_fault(IO_OP_OPEN, path, 0);
    int fd = e > 0 ? -1 : open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT | O_CLOEXEC, 0644);
    if (fd < 0) {
        int err = e > 0 ? e : errno;
        unlink(path);
        if (err == EINVAL)
            return tkv_err(TKV_INVALID, "direct_io=1 but the filesystem of %s does not support O_DIRECT", dir);
        return tkv_err_errno(err, "open %s", path);
    }
    close(fd);
    unlink(path);
    return 0;
}

/* pwrite_all -- writes n bytes at off, retrying on EINTR and short writes. */
static int pwrite_all(io_file *f, const uint8_t *b, size_t n, uint64_t off)
{
    size_t done = 0;
    while (done < n) {
        ssize_t w = pwrite(f->fd, b + done, n - done, (off_t)(off + done));
        if (w < 0) {
            if (errno == EINTR) continue;
            return tkv_err_errno(errno, "write %s at offset %llu", f->path, (unsigned long long)(off + done));
        }
        if (w == 0) return tkv_err_errno(ENOSPC, "write %s at offset %llu", f->path, (unsigned long long)(off + done));
        done += (size_t)w;
    }
    return 0;
}

/* direct_flush_tail -- writes the staged partial block(s) padded with zeros
 * to the alignment, then truncates the file back to its logical size. The
 * staged bytes stay in dbuf: the next append rewrites that block. */
static int direct_flush_tail(io_file *f)
{
    if (!f->dbuf_dirty || f->dbuf_len == 0) return 0;
    size_t padded = align_up(f->dbuf_len);
    memset(f->dbuf + f->dbuf_len, 0, padded - f->dbuf_len);
    TKV_TRY(pwrite_all(f, f->dbuf, padded, f->dbuf_off));
    if (ftruncate(f->fd, (off_t)f->size) != 0) return tkv_err_errno(errno, "truncate %s", f->path);
    f->dbuf_dirty = 0;
    return 0;
}

/* sync_step -- the file's incremental sync step (io_stats): 0 = none. */
static uint64_t sync_step(const io_file *f)
{
    if (!f->stats) return 0;
    return f->cls == IO_WAL ? f->stats->wal_bytes_per_sync : f->stats->bytes_per_sync;
}

/* sync_incremental -- bytes_per_sync (io.h): after a write that took the
 * file past synced_upto + bytes_per_sync, syncs what was written so far:
 * fdatasync for a direct file (its data is on the device already; this
 * commits the allocation and flushes the device cache while little is in
 * it), an asynchronous write-back start for a buffered one -- or, for the WAL
 * with io_stats.wb, a write-back and fdatasync on that thread, so that no
 * client thread waits while the range is submitted. */
static int sync_incremental(io_file *f, uint64_t written_upto)
{
    uint64_t every = sync_step(f);
    if (f->map) { /* not past the mapped pages the writer may still hold (wmap.h) */
        uint64_t clean = io_wmap_clean_upto(f->map);
        if (written_upto > clean) written_upto = clean;
    }
    if (!every || written_upto < f->synced_upto + every) return 0;
    uint64_t off = f->synced_upto, len = written_upto - f->synced_upto;
    if (f->flags & IO_DIRECT) {
        if (fdatasync(f->fd) != 0) return tkv_err_errno(errno, "fdatasync %s", f->path);
        count(&f->stats->syncs[f->cls], 1);
    } else if (f->cls == IO_WAL && f->stats->wb) {
        /* Whole IO_WB_ALIGN pieces only: the piece the writer is still
         * appending to is left for the next range. Written back while the
         * writer appended to it, its page lock made the writer's pwrite wait
         * (693 times in a 5M x 100 B fill, up to 15 ms a second). */
        uint64_t end = written_upto & ~(uint64_t)(IO_WB_ALIGN - 1);
        if (end <= off) return 0;
        io_wb_enqueue(f->stats->wb, f->fd, off, end - off); /* a refused range is left to the kernel (counted) */
        written_upto = end;
    } else if (sync_file_range(f->fd, (off_t)off, (off_t)len, SYNC_FILE_RANGE_WRITE) != 0) {
        return tkv_err_errno(errno, "write-back of %s", f->path);
    }
    f->synced_upto = written_upto;
    count(&f->stats->incremental_syncs[f->cls], 1);
    return 0;
}

/* behind_settle -- waits for the stage in flight (IO_WRITE_BEHIND) and
 * reports its error; counts its linked fdatasync as sync_incremental would. */
static int behind_settle(io_file *f)
{
    if (!f->wbh) return 0;
    const char *what;
    uint64_t at;
    int synced;
    int e = io_wbehind_wait(f->wbh, &what, &at, &synced);
    if (synced) {
        f->synced_upto = f->wb_sync_to;
        count(&f->stats->syncs[f->cls], 1);
        count(&f->stats->incremental_syncs[f->cls], 1);
    }
    if (e) return tkv_err_errno(e, "%s %s at offset %llu", what, f->path, (unsigned long long)at);
    return 0;
}

/* stage_write -- writes the full staging buffer: behind the writer when it
 * can (the previous stage's write waited for first: one in flight), else
 * synchronously with its bytes_per_sync step. */
static int stage_write(io_file *f)
{
    if (f->wbh) {
        TKV_TRY(behind_settle(f));
        uint64_t every = sync_step(f);
        uint64_t end = f->dbuf_off + IO_DIRECT_STAGE;
        int sync = every && end >= f->synced_upto + every;
        if (io_wbehind_submit(f->wbh, f->fd, f->dbuf, IO_DIRECT_STAGE, f->dbuf_off, sync) == 0) {
            f->wb_sync_to = sync ? end : 0;
            uint8_t *t = f->dbuf; /* fill the other buffer meanwhile */
            f->dbuf = f->dbuf_alt;
            f->dbuf_alt = t;
            return 0;
        }
        io_wbehind_free(f->wbh); /* io_uring refused: synchronous from now on */
        f->wbh = NULL;
    }
    TKV_TRY(pwrite_all(f, f->dbuf, IO_DIRECT_STAGE, f->dbuf_off));
    return sync_incremental(f, f->dbuf_off + IO_DIRECT_STAGE);
}

/* direct_append -- stages bytes, writing each full staging buffer. */
static int direct_append(io_file *f, const uint8_t *b, size_t n)
{
    while (n > 0) {
        size_t room = IO_DIRECT_STAGE - f->dbuf_len;
        size_t k = n < room ? n : room;
        memcpy(f->dbuf + f->dbuf_len, b, k);
        f->dbuf_dirty = 1;
        f->dbuf_len += k;
        f->size += k;
        b += k;
        n -= k;
        if (f->dbuf_len == IO_DIRECT_STAGE) {
            TKV_TRY(stage_write(f));
            f->dbuf_off += IO_DIRECT_STAGE;
            f->dbuf_len = 0;
            f->dbuf_dirty = 0;
        }
    }
    return 0;
}

/* append_admitted -- io_append after the fault hook and the gate: `limit`
 * (<= n) bytes are written, a short write after them is ENOSPC. */
static int append_admitted(io_file *f, const void *p, size_t n, size_t limit)
{
    if (f->flags & IO_DIRECT) {
        int rc = direct_append(f, p, limit);
        if (f->stats) count(&f->stats->write_bytes[f->cls], limit);
        if (rc < 0) return rc;
        if (limit < n) return tkv_err_errno(ENOSPC, "short write %s", f->path);
        return 0;
    }
    if (f->map) io_wmap_claim(f->map, f->size + limit); /* the helper stays off these pages */
    const uint8_t *b = p;
    size_t done = 0;
    while (done < limit) {
        ssize_t w = pwrite(f->fd, b + done, limit - done, (off_t)(f->size + done));
        if (w < 0) {
            if (errno == EINTR) continue;
            int err = errno;
            f->size += done;
            if (f->map) io_wmap_appended(f->map, f->size, done, 1);
            return tkv_err_errno(err, "write %s at offset %llu", f->path, (unsigned long long)(f->size));
        }
        done += (size_t)w;
    }
    f->size += done;
    if (f->map) io_wmap_appended(f->map, f->size, done, 0);
    if (f->stats) count(&f->stats->write_bytes[f->cls], done);
    if (done < n) return tkv_err_errno(ENOSPC, "short write %s", f->path);
    return sync_incremental(f, f->size);
}

int io_append(io_file *f, const void *p, size_t n)
{
    size_t limit = n;
    int e = io_fault(IO_OP_WRITE, f->path, n);
    if (e > 0) return tkv_err_errno(e, "write %s", f->path);
    if (e < 0) limit = (size_t)-e < n ? (size_t)-e : n;
    TKV_TRY(io_admit(f, 1, limit));
    /* A store into the mapping (a mapped WAL, wmap.h) is a memcpy into the
     * page cache, not device time: it is not timed (write_ns), which saves
     * the write path two of its clock reads (~2 % of the samples of a
     * 100-byte fill). */
    if (!(f->flags & IO_DIRECT) && f->map && limit == n && io_wmap_store(f->map, f->size, p, n)) {
        f->size += n;
        if (f->stats) count(&f->stats->write_bytes[f->cls], n);
        return sync_incremental(f, f->size);
    }
    uint64_t t0 = sched_mono_ns();
    int rc = append_admitted(f, p, n, limit);
    if (f->stats) count(&f->stats->write_ns[f->cls], sched_mono_ns() - t0);
    return rc;
}

/* Each thread keeps one aligned bounce buffer for direct reads (reused: block
 * reads are on the read path, and fresh memory is slow to fault in here);
 * reads larger than BOUNCE_CACHE_MAX use a one-off buffer. */
#define BOUNCE_CACHE_MAX (1u << 20)
typedef struct bounce_cache {
    void *p;
    size_t cap;
} bounce_cache;
static pthread_key_t g_bounce_key;
static pthread_once_t g_bounce_once = PTHREAD_ONCE_INIT;

static void bounce_free(void *arg)
{
    bounce_cache *c = arg;
    free(c->p);
    free(c);
}

static void bounce_key_init(void) { (void)pthread_key_create(&g_bounce_key, bounce_free); }

/* bounce_get -- an aligned buffer of at least len bytes; *owned tells the
 * caller to free it (it is not the thread's cached one). NULL on no memory. */
static void *bounce_get(size_t len, int *owned)
{
    *owned = 0;
    if (len <= BOUNCE_CACHE_MAX) {
        pthread_once(&g_bounce_once, bounce_key_init);
        bounce_cache *c = pthread_getspecific(g_bounce_key);
        if (!c) {
            if (!(c = calloc(1, sizeof *c))) return NULL;
            if (pthread_setspecific(g_bounce_key, c) != 0) {
                free(c);
                return NULL;
            }
        }
        if (c->cap < len) {
            size_t cap = len < (64u << 10) ? (64u << 10) : len;
            void *p = NULL;
            if (posix_memalign(&p, IO_DIRECT_ALIGN, cap) != 0) return NULL;
            free(c->p);
            c->p = p;
            c->cap = cap;
        }
        return c->p;
    }
    void *p = NULL;
    if (posix_memalign(&p, IO_DIRECT_ALIGN, len) != 0) return NULL;
    *owned = 1;
    return p;
}

/* direct_pread -- O_DIRECT read of [off, off+n): reads the enclosing aligned
 * range into an aligned bounce buffer and copies the requested part out.
 * Device bytes (the aligned range) are what is accounted. */
static int direct_pread(io_file *f, uint64_t off, void *buf, size_t n, size_t *got)
{
    uint64_t start = off & ~(uint64_t)(IO_DIRECT_ALIGN - 1);
    size_t len = align_up(off + n) - (size_t)start;
    int owned;
    void *bounce = bounce_get(len ? len : IO_DIRECT_ALIGN, &owned);
    if (!bounce) return tkv_err(TKV_NO_MEMORY, "out of memory reading %s", f->path);
    size_t done = 0;
    while (done < len) {
        ssize_t r = pread(f->fd, (uint8_t *)bounce + done, len - done, (off_t)(start + done));
        if (r < 0) {
            if (errno == EINTR) continue;
            int err = errno;
            if (owned) free(bounce);
            return tkv_err_errno(err, "read %s at offset %llu", f->path, (unsigned long long)(start + done));
        }
        if (r == 0) break;
        done += (size_t)r;
        if ((size_t)r % IO_DIRECT_ALIGN) break; /* end of file */
    }
    size_t skip = (size_t)(off - start);
    size_t avail = done > skip ? done - skip : 0;
    size_t k = avail < n ? avail : n;
    memcpy(buf, (uint8_t *)bounce + skip, k);
    if (owned) free(bounce);
    if (f->stats) count(&f->stats->read_bytes[f->cls], done);
    *got = k;
    return 0;
}

int io_set_readahead(io_file *f, size_t bytes)
{
    free(f->rabuf);
    f->rabuf = NULL;
    f->ra_cap = f->ra_len = 0;
    f->ra_off = 0;
    if (bytes == 0) return 0;
    struct stat sb;
    if (fstat(f->fd, &sb) != 0) return tkv_err_errno(errno, "fstat %s", f->path);
    f->ra_file_size = (uint64_t)sb.st_size;
    size_t cap = align_up(bytes);
    void *p = NULL;
    if (posix_memalign(&p, IO_DIRECT_ALIGN, cap) != 0)
        return tkv_err(TKV_NO_MEMORY, "out of memory for %zu bytes of readahead on %s", cap, f->path);
    f->rabuf = p;
    f->ra_cap = cap;
    return 0;
}

/* ra_fill -- reads the window at `start` (aligned) into rabuf: ra_cap bytes
 * or up to the end of the file. The fault hook and the gate see the window. */
static int ra_fill(io_file *f, uint64_t start)
{
    f->ra_len = 0;
    /* the window, cut at the (aligned) end of the file as it was when the
     * readahead was set: the gate is charged for what is read */
    size_t want = f->ra_cap;
    uint64_t end = align_up(f->ra_file_size);
    if (start >= end) want = IO_DIRECT_ALIGN; /* past the end: one block finds out */
    else if (end - start < want) want = (size_t)(end - start);
    int e = io_fault(IO_OP_READ, f->path, want);
    if (e > 0) return tkv_err_errno(e, "read %s at offset %llu", f->path, (unsigned long long)start);
    uint64_t t0 = sched_mono_ns();
    TKV_TRY(io_admit(f, 0, want));
    size_t done = 0;
    while (done < want) {
        ssize_t r = pread(f->fd, f->rabuf + done, want - done, (off_t)(start + done));
        if (r < 0) {
            if (errno == EINTR) continue;
            return tkv_err_errno(errno, "read %s at offset %llu", f->path, (unsigned long long)(start + done));
        }
        if (r == 0) break;
        done += (size_t)r;
        if ((f->flags & IO_DIRECT) && (size_t)r % IO_DIRECT_ALIGN) break; /* end of file */
    }
    if (f->stats) count(&f->stats->read_bytes[f->cls], done);
    count_read_op(f, t0);
    f->ra_off = start;
    f->ra_len = done;
    return 0;
}

/* ra_pread -- io_pread through the readahead window; 1 if served (rc in
 * *rc), 0 if the request does not fit a window (read it directly). */
static int ra_pread(io_file *f, uint64_t off, void *buf, size_t n, size_t *got, int *rc)
{
    uint64_t start = off & ~(uint64_t)(IO_DIRECT_ALIGN - 1);
    if (n > f->ra_cap - (size_t)(off - start)) return 0;
    int inside = f->ra_len && off >= f->ra_off && off - f->ra_off + n <= f->ra_len;
    /* a window that ended at end of file also answers a read past it */
    int at_eof = f->ra_len && f->ra_len < f->ra_cap && off >= f->ra_off && off - f->ra_off <= f->ra_len;
    if (!inside && !at_eof) {
        *rc = ra_fill(f, start);
        if (*rc < 0) return 1;
    }
    size_t skip = (size_t)(off - f->ra_off);
    size_t k = skip < f->ra_len ? f->ra_len - skip : 0;
    if (k > n) k = n;
    memcpy(buf, f->rabuf + skip, k);
    *got = k;
    *rc = 0;
    return 1;
}

int io_pread(io_file *f, uint64_t off, void *buf, size_t n, size_t *got)
{
    int rc;
    if (f->rabuf && ra_pread(f, off, buf, n, got, &rc)) return rc;
    int e = io_fault(IO_OP_READ, f->path, n);
    if (e > 0) return tkv_err_errno(e, "read %s at offset %llu", f->path, (unsigned long long)off);
    uint64_t t0 = sched_mono_ns();
    TKV_TRY(io_admit(f, 0, n));
    if (f->flags & IO_DIRECT) {
        rc = direct_pread(f, off, buf, n, got);
        if (rc == 0) count_read_op(f, t0);
        return rc;
    }
    size_t done = 0;
    while (done < n) {
        ssize_t r = pread(f->fd, (uint8_t *)buf + done, n - done, (off_t)(off + done));
        if (r < 0) {
            if (errno == EINTR) continue;
            return tkv_err_errno(errno, "read %s at offset %llu", f->path, (unsigned long long)(off + done));
        }
        if (r == 0) break;
        done += (size_t)r;
    }
    if (f->stats) count(&f->stats->read_bytes[f->cls], done);
    count_read_op(f, t0);
    *got = done;
    return 0;
}

int io_preallocate(io_file *f, uint64_t len)
{
    int e = io_fault(IO_OP_FALLOCATE, f->path, (size_t)len);
    if (e > 0) return tkv_err_errno(e, "reserve %llu bytes for %s", (unsigned long long)len, f->path);
    if (len && fallocate(f->fd, FALLOC_FL_KEEP_SIZE, (off_t)f->size, (off_t)len) != 0)
        return tkv_err_errno(errno, "reserve %llu bytes for %s", (unsigned long long)len, f->path);
    return 0;
}

/* unmap_appends -- ends f's mapping (the helper leaves it, it is unmapped); the
 * file stays at the mapping's length (f->disk_end) until io_release_reserved
 * or io_close truncates it. */
static void unmap_appends(io_file *f)
{
    if (!f->map) return;
    io_wmap_detach(f->map);
    f->map = NULL;
}

/* map_fs_ok -- 1 if f's file system overwrites reserved blocks in place, so
 * that a store into a made page never needs new space (ext4, XFS, tmpfs); a
 * copy-on-write one (btrfs) could fail that allocation inside a page fault,
 * a SIGBUS. */
static int map_fs_ok(const io_file *f)
{
    struct statfs sf;
    if (fstatfs(f->fd, &sf) != 0) return 0;
    return sf.f_type == EXT4_SUPER_MAGIC || sf.f_type == XFS_SUPER_MAGIC || sf.f_type == TMPFS_MAGIC;
}

int io_map_appends(io_file *f, uint64_t len)
{
    if (!(f->flags & IO_MAPPED) || (f->flags & IO_DIRECT) || f->map || f->disk_end || !f->stats || !f->stats->wmap ||
        !map_fs_ok(f))
        return 0;
    long pg = sysconf(_SC_PAGESIZE);
    uint64_t a = pg > 0 ? (uint64_t)pg : 4096, end = (f->size + len + a - 1) / a * a;
    if (end <= f->size) return 0;
    if (IO_WMAP_PIECE % a != 0) return 0; /* the helper's pieces must be whole pages (wmap.c io_wmap_claim) */
    uint64_t now = 0;
    TKV_TRY(io_file_size(f, &now));
    int extend = now < end; /* (a recycled log that kept its length is long enough) */
    if (extend && ftruncate(f->fd, (off_t)end) != 0) return tkv_err_errno(errno, "extend %s to map it", f->path);
    int e = io_wmap_attach(f->stats->wmap, f->fd, f->size, end, &f->map);
    if (e) {
        if (extend) (void)ftruncate(f->fd, (off_t)now);
        return tkv_err_errno(e, "map %s for appends", f->path);
    }
    f->disk_end = end;
    return 0;
}

int io_extend_reserved(io_file *f, uint64_t len)
{
    if ((f->flags & IO_DIRECT) || f->map || f->disk_end) return 0;
    uint64_t end = f->size + len, now = 0;
    TKV_TRY(io_file_size(f, &now));
    if (end <= now) return 0; /* (a recycled file: longer already) */
    if (ftruncate(f->fd, (off_t)end) != 0) return tkv_err_errno(errno, "extend %s over its reservation", f->path);
    f->disk_end = end;
    return 0;
}

void io_keep_reserved(io_file *f)
{
    unmap_appends(f);
    f->disk_end = 0; /* io_close leaves the length alone */
}

int io_release_reserved(io_file *f, uint64_t end)
{
    unmap_appends(f); /* no more appends: the helper leaves, the truncate below also cuts the mapped length */
    if (f->disk_end > end) end = f->disk_end;
    if (end <= f->size) return 0;
    /* a WAL's on the write-back thread: on a client thread the truncate
     * waited for the inode lock and, on a file system mounted with discard,
     * for the device's discard: 10-15 ms inside a memtable switch */
    if (f->cls == IO_WAL && f->stats && f->stats->wb && io_wb_release(f->stats->wb, f->fd, f->size, end) == 0) {
        f->disk_end = 0; /* the thread truncates it (io_wb_stop too, if still queued then) */
        return 0;
    }
    int e = io_release_blocks(f->fd, f->size, end);
    if (e == 0) f->disk_end = 0; /* else io_close tries the truncate again */
    return e ? tkv_err_errno(e, "release the blocks reserved past the end of %s", f->path) : 0;
}

int io_sync(io_file *f)
{
    int e = io_fault(IO_OP_SYNC, f->path, 0);
    if (e > 0) return tkv_err_errno(e, "fdatasync %s", f->path);
    uint64_t t0 = sched_mono_ns();
    int rc = behind_settle(f);
    if (rc == 0 && (f->flags & IO_DIRECT)) rc = direct_flush_tail(f);
    if (rc == 0 && fdatasync(f->fd) != 0) rc = tkv_err_errno(errno, "fdatasync %s", f->path);
    if (f->stats) count(&f->stats->write_ns[f->cls], sched_mono_ns() - t0);
    if (rc < 0) return rc;
    if (f->stats) count(&f->stats->syncs[f->cls], 1);
    if (f->map) io_wmap_synced(f->map, f->size);
    f->synced_upto = f->size;
    return 0;
}

int io_file_size(io_file *f, uint64_t *size)
{
    struct stat sb;
    if (fstat(f->fd, &sb) != 0) return tkv_err_errno(errno, "fstat %s", f->path);
    *size = (uint64_t)sb.st_size;
    return 0;
}

int io_close(io_file *f)
{
    if (!f) return 0;
    int rc = 0;
    unmap_appends(f);
    if (f->disk_end > f->size && ftruncate(f->fd, (off_t)f->size) != 0) /* not released: cut the mapped length */
        rc = tkv_err_errno(errno, "truncate %s to its %llu bytes", f->path, (unsigned long long)f->size);
    /* A direct append file writes its staged tail so that, as with buffered
     * files, everything appended is in the file after close (not durable
     * without io_sync). */
    int brc = behind_settle(f);
    if (rc == 0) rc = brc;
    io_wbehind_free(f->wbh); /* waits for nothing now */
    if (f->dbuf && rc == 0) rc = direct_flush_tail(f);
    if (close(f->fd) != 0 && rc == 0) rc = tkv_err_errno(errno, "close %s", f->path);
    free(f->dbuf);
    free(f->dbuf_alt);
    free(f->rabuf);
    free(f->path);
    free(f);
    return rc;
}

int io_read_file(const char *path, io_class cls, io_stats *st, uint8_t **data, size_t *len)
{
    *data = NULL;
    *len = 0;
    io_file *f;
    TKV_TRY(io_open_read(path, cls, st, &f));
    uint64_t sz;
    int rc = io_file_size(f, &sz);
    uint8_t *buf = NULL;
    if (rc == 0) {
        buf = malloc(sz ? sz : 1);
        if (!buf) rc = tkv_err(TKV_NO_MEMORY, "out of memory reading %s (%llu bytes)", path, (unsigned long long)sz);
    }
    size_t got = 0;
    if (rc == 0) rc = io_pread(f, 0, buf, sz, &got);
    io_close(f);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    *data = buf;
    *len = got;
    return 0;
}

int io_write_file_atomic(const char *dir, const char *name, const void *data, size_t len, io_stats *st)
{
    char tmp[4096], dst[4096];
    snprintf(tmp, sizeof tmp, "%s/%s.tmp", dir, name);
    snprintf(dst, sizeof dst, "%s/%s", dir, name);
    io_file *f;
    TKV_TRY(io_open_append(tmp, 0, IO_META, st, &f));
    int rc = io_append(f, data, len);
    if (rc == 0) rc = io_sync(f);
    int crc = io_close(f);
    if (rc == 0) rc = crc;
    if (rc == 0) {
        int e = io_fault(IO_OP_RENAME, dst, 0);
        if (e > 0) rc = tkv_err_errno(e, "rename %s", dst);
        else if (rename(tmp, dst) != 0) rc = tkv_err_errno(errno, "rename %s to %s", tmp, dst);
    }
    if (rc == 0) rc = io_sync_dir(dir);
    if (rc < 0) unlink(tmp);
    return rc;
}

int io_remove(const char *path)
{
    int e = io_fault(IO_OP_REMOVE, path, 0);
    if (e > 0) return tkv_err_errno(e, "remove %s", path);
    if (unlink(path) != 0 && errno != ENOENT) return tkv_err_errno(errno, "remove %s", path);
    return 0;
}

int io_rename(const char *from, const char *to)
{
    int e = io_fault(IO_OP_RENAME, to, 0);
    if (e > 0) return tkv_err_errno(e, "rename %s", to);
    if (rename(from, to) != 0) return tkv_err_errno(errno, "rename %s to %s", from, to);
    return 0;
}

int io_rename_noreplace(const char *from, const char *to)
{
    int e = io_fault(IO_OP_RENAME, to, 0);
    if (e > 0) return tkv_err_errno(e, "rename %s", to);
    if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0) return 0;
    e = errno;
    if (e == EINVAL || e == ENOSYS) { /* no RENAME_NOREPLACE here */
        e = access(to, F_OK) == 0 ? EEXIST : rename(from, to) == 0 ? 0 : errno;
        if (e == 0) return 0;
    }
    if (e == EEXIST || e == ENOTEMPTY) return tkv_err(TKV_INVALID, "%s already exists", to);
    return tkv_err_errno(e, "rename %s to %s", from, to);
}

int io_link(const char *from, const char *to)
{
    int e = io_fault(IO_OP_LINK, to, 0);
    if (e <= 0) e = link(from, to) == 0 ? 0 : errno;
    if (e == 0) return 0;
    if (e == EXDEV || e == EPERM || e == EOPNOTSUPP || e == ENOSYS || e == EMLINK) return IO_LINK_UNSUPPORTED;
    return tkv_err_errno(e, "link %s to %s", from, to);
}

int io_sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return tkv_err_errno(errno, "open directory %s", dir);
    int e = io_fault(IO_OP_SYNC, dir, 0);
    int rc = 0;
    if (e > 0) rc = tkv_err_errno(e, "fsync directory %s", dir);
    else if (fsync(fd) != 0) rc = tkv_err_errno(errno, "fsync directory %s", dir);
    close(fd);
    return rc;
}
