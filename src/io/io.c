/*
 * io.c -- POSIX implementation of the I/O layer with accounting and fault hooks.
 */

#include "io/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* fault -- asks the hook about an operation; 0 = proceed. */
static int fault(io_op op, const char *path, size_t len)
{
    io_fault_hook h = __atomic_load_n(&g_hook, __ATOMIC_ACQUIRE);
    if (!h) return 0;
    return h(op, path, len, __atomic_load_n(&g_hook_arg, __ATOMIC_ACQUIRE));
}

static void count(uint64_t *ctr, uint64_t n) { __atomic_fetch_add(ctr, n, __ATOMIC_RELAXED); }

static int open_file(const char *path, int flags, io_class cls, io_stats *st, io_file **out)
{
    *out = NULL;
    int e = fault(IO_OP_OPEN, path, 0);
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
    TKV_TRY(open_file(path, O_WRONLY | O_CREAT | (keep ? 0 : O_TRUNC), cls, st, out));
    if (keep) {
        uint64_t sz;
        int rc = io_file_size(*out, &sz);
        if (rc < 0) {
            io_close(*out);
            *out = NULL;
            return rc;
        }
        (*out)->size = sz;
    }
    return 0;
}

int io_open_read(const char *path, io_class cls, io_stats *st, io_file **out)
{
    return open_file(path, O_RDONLY, cls, st, out);
}

int io_append(io_file *f, const void *p, size_t n)
{
    size_t limit = n;
    int e = fault(IO_OP_WRITE, f->path, n);
    if (e > 0) return tkv_err_errno(e, "write %s", f->path);
    if (e < 0) limit = (size_t)-e < n ? (size_t)-e : n;
    const uint8_t *b = p;
    size_t done = 0;
    while (done < limit) {
        ssize_t w = pwrite(f->fd, b + done, limit - done, (off_t)(f->size + done));
        if (w < 0) {
            if (errno == EINTR) continue;
            int err = errno;
            f->size += done;
            return tkv_err_errno(err, "write %s at offset %llu", f->path, (unsigned long long)(f->size));
        }
        done += (size_t)w;
    }
    f->size += done;
    if (f->stats) count(&f->stats->write_bytes[f->cls], done);
    if (done < n) return tkv_err_errno(ENOSPC, "short write %s", f->path);
    return 0;
}

int io_pread(io_file *f, uint64_t off, void *buf, size_t n, size_t *got)
{
    int e = fault(IO_OP_READ, f->path, n);
    if (e > 0) return tkv_err_errno(e, "read %s at offset %llu", f->path, (unsigned long long)off);
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
    *got = done;
    return 0;
}

int io_sync(io_file *f)
{
    int e = fault(IO_OP_SYNC, f->path, 0);
    if (e > 0) return tkv_err_errno(e, "fdatasync %s", f->path);
    if (fdatasync(f->fd) != 0) return tkv_err_errno(errno, "fdatasync %s", f->path);
    if (f->stats) count(&f->stats->syncs[f->cls], 1);
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
    if (close(f->fd) != 0) rc = tkv_err_errno(errno, "close %s", f->path);
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
        int e = fault(IO_OP_RENAME, dst, 0);
        if (e > 0)
            rc = tkv_err_errno(e, "rename %s", dst);
        else if (rename(tmp, dst) != 0)
            rc = tkv_err_errno(errno, "rename %s to %s", tmp, dst);
    }
    if (rc == 0) rc = io_sync_dir(dir);
    if (rc < 0) unlink(tmp);
    return rc;
}

int io_remove(const char *path)
{
    int e = fault(IO_OP_REMOVE, path, 0);
    if (e > 0) return tkv_err_errno(e, "remove %s", path);
    if (unlink(path) != 0 && errno != ENOENT) return tkv_err_errno(errno, "remove %s", path);
    return 0;
}

int io_sync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return tkv_err_errno(errno, "open directory %s", dir);
    int e = fault(IO_OP_SYNC, dir, 0);
    int rc = 0;
    if (e > 0)
        rc = tkv_err_errno(e, "fsync directory %s", dir);
    else if (fsync(fd) != 0)
        rc = tkv_err_errno(errno, "fsync directory %s", dir);
    close(fd);
    return rc;
}
