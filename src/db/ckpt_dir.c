// SPDX-License-Identifier: Apache-2.0
/*
 * ckpt_dir.c -- a checkpoint's directory: built under a temporary name,
 * marked and locked, filled with links or copies, published by rename
 * (ckpt_dir.h, which states the persistence order).
 */
#include "db/ckpt_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/status.h"

#define TMP_INFIX  ".tmp-ckpt-"
#define COPY_CHUNK (1u << 20)

static const char marker_text[] = "tierkv checkpoint being built: not a database until it is renamed\n";

int ckpt_dir_incomplete(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/" CKPT_MARKER_FILE, dir);
    return access(path, F_OK) == 0;
}

/* ckpt_file_name -- 1 for the names a checkpoint puts in its directory. */
static int ckpt_file_name(const char *n)
{
    static const char *exact[] = {"CURRENT", "CURRENT.tmp", "IDENTITY",    "IDENTITY.tmp",
                                  "LOCK",    "LOCK.tmp",    "matrix.pmem", CKPT_MARKER_FILE};
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (!strcmp(n, exact[i])) return 1;
    if (!strncmp(n, "MANIFEST-", 9)) return 1;
    size_t digits = strspn(n, "0123456789");
    return digits > 0 && !strcmp(n + digits, ".sst");
}

/* remove_tree -- removes the checkpoint files in dir, the marker last (so a
 * removal cut short is still recognised as stale), then dir itself (which
 * fails, harmlessly, if something else is in it). */
static void remove_tree(const char *dir)
{
    DIR *dd = opendir(dir);
    struct dirent *e;
    char path[4096];
    while (dd && (e = readdir(dd))) {
        if (!ckpt_file_name(e->d_name) || !strcmp(e->d_name, CKPT_MARKER_FILE)) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        (void)io_remove(path);
    }
    if (dd) closedir(dd);
    snprintf(path, sizeof path, "%s/" CKPT_MARKER_FILE, dir);
    (void)io_remove(path);
    (void)rmdir(dir);
}

/* stale_name -- 1 if `name` is base + TMP_INFIX + "<digits>-<digits>". */
static int stale_name(const char *name, const char *base)
{
    size_t bl = strlen(base), il = strlen(TMP_INFIX);
    if (strncmp(name, base, bl) || strncmp(name + bl, TMP_INFIX, il)) return 0;
    const char *p = name + bl + il;
    size_t a = strspn(p, "0123456789");
    if (!a || p[a] != '-') return 0;
    size_t b = strspn(p + a + 1, "0123456789");
    return b > 0 && p[a + 1 + b] == '\0';
}

/* remove_stale -- removes the temporary directories of earlier checkpoints
 * to the same name that no one builds any more: the marker is there and
 * their lock is free (the builder crashed). Best effort. A directory without
 * the marker is left alone: its builder may be between its mkdir and its
 * lock, or it is complete. */
static void remove_stale(const ckpt_dir *d)
{
    const char *base = strrchr(d->out, '/') ? strrchr(d->out, '/') + 1 : d->out;
    DIR *dd = opendir(d->parent);
    struct dirent *e;
    while (dd && (e = readdir(dd))) {
        if (!stale_name(e->d_name, base)) continue;
        char path[4096];
        if (snprintf(path, sizeof path, "%s/%s", d->parent, e->d_name) >= (int)sizeof path) continue;
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) continue;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0 && faccessat(fd, CKPT_MARKER_FILE, F_OK, 0) == 0) remove_tree(path);
        close(fd); /* releases the lock */
    }
    if (dd) closedir(dd);
}

/* set_names -- d->out, d->parent and d->tmp from out_dir. */
static int set_names(ckpt_dir *d, const char *out_dir)
{
    static uint64_t counter; /* atomic: several checkpoints of this process at once */
    size_t n = strlen(out_dir);
    while (n > 1 && out_dir[n - 1] == '/') n--;
    if (n == 0 || (n == 1 && out_dir[0] == '/'))
        return tkv_err(TKV_INVALID, "tkv_checkpoint: \"%s\" cannot be a checkpoint directory", out_dir);
    if (n > 4000) return tkv_err(TKV_INVALID, "tkv_checkpoint: directory name of %zu bytes is too long", n);
    d->out = strndup(out_dir, n);
    const char *slash = d->out ? strrchr(d->out, '/') : NULL;
    d->parent = slash ? strndup(d->out, slash == d->out ? 1 : (size_t)(slash - d->out)) : strdup(".");
    d->tmp = malloc(n + 64);
    if (!d->out || !d->parent || !d->tmp) return tkv_err(TKV_NO_MEMORY, "out of memory");
    snprintf(d->tmp, n + 64, "%s" TMP_INFIX "%ld-%llu", d->out, (long)getpid(),
             (unsigned long long)__atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
    return 0;
}

/* make_tmp -- mkdir and lock d->tmp. */
static int make_tmp(ckpt_dir *d)
{
    int e = io_fault_check(IO_OP_OPEN, d->tmp, 0);
    if (!e && mkdir(d->tmp, 0755) != 0) e = errno;
    if (e == ENOENT || e == ENOTDIR)
        return tkv_err(TKV_INVALID, "tkv_checkpoint: cannot create %s: %s is not an existing directory", d->out,
                       d->parent);
    if (e) return tkv_err_errno(e, "tkv_checkpoint: cannot create %s", d->tmp);
    d->made = 1;
    d->lock_fd = open(d->tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d->lock_fd < 0) return tkv_err_errno(errno, "open %s", d->tmp);
    /* blocking: another checkpoint's remove_stale holds it only for a look (no marker yet) */
    if (flock(d->lock_fd, LOCK_EX) != 0) return tkv_err_errno(errno, "lock %s", d->tmp);
    return 0;
}

int ckpt_dir_begin(ckpt_dir *d, const char *out_dir, io_stats *st)
{
    memset(d, 0, sizeof *d);
    d->lock_fd = -1;
    d->st = st;
    TKV_TRY(set_names(d, out_dir));
    struct stat sb;
    if (lstat(d->out, &sb) == 0)
        return tkv_err(TKV_INVALID, "tkv_checkpoint: %s already exists (a checkpoint goes into a new directory)",
                       d->out);
    remove_stale(d);
    TKV_TRY(make_tmp(d));
    char path[4200];
    snprintf(path, sizeof path, "%s/" CKPT_MARKER_FILE, d->tmp);
    io_file *f;
    TKV_TRY(io_open_append(path, 0, IO_META, st, &f));
    int rc = io_append(f, marker_text, sizeof marker_text - 1);
    if (rc == 0) rc = io_sync(f);
    int crc = io_close(f);
    if (rc == 0) rc = crc;
    if (rc == 0) rc = io_sync_dir(d->tmp);
    return rc;
}

/* copy_file -- src's first `size` bytes into a new file dst, fdatasync'd. */
static int copy_file(ckpt_dir *d, const char *src, const char *dst, uint64_t size)
{
    io_file *in = NULL, *out = NULL;
    uint8_t *buf = malloc(COPY_CHUNK);
    int rc = buf ? 0 : tkv_err(TKV_NO_MEMORY, "out of memory copying %s", src);
    if (rc == 0) rc = io_open_read(src, IO_COMPACT_DEEP, d->st, &in);
    if (rc == 0) rc = io_open_append(dst, 0, IO_COMPACT_DEEP, d->st, &out);
    for (uint64_t off = 0; rc == 0 && off < size;) {
        size_t want = size - off < COPY_CHUNK ? (size_t)(size - off) : COPY_CHUNK, got = 0;
        rc = io_pread(in, off, buf, want, &got);
        if (rc == 0 && got == 0)
            rc = tkv_err(TKV_CORRUPTION, "%s has %llu bytes, the MANIFEST records %llu", src, (unsigned long long)off,
                         (unsigned long long)size);
        if (rc == 0) rc = io_append(out, buf, got);
        off += got;
    }
    if (rc == 0) rc = io_sync(out);
    int crc = io_close(out);
    if (rc == 0) rc = crc;
    io_close(in);
    free(buf);
    return rc;
}

int ckpt_dir_add(ckpt_dir *d, const char *src, const char *name, uint64_t size)
{
    char dst[4200];
    snprintf(dst, sizeof dst, "%s/%s", d->tmp, name);
    int rc = d->copy ? IO_LINK_UNSUPPORTED : io_link(src, dst);
    if (rc < 0) return rc;
    if (rc == 0) return 0;
    d->copy = 1; /* another file system: the next files will not link either */
    return copy_file(d, src, dst, size);
}

int ckpt_dir_publish(ckpt_dir *d)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/" CKPT_MARKER_FILE, d->tmp);
    TKV_TRY(io_sync_dir(d->tmp)); /* every name in it is durable before the marker goes */
    TKV_TRY(io_remove(path));
    TKV_TRY(io_sync_dir(d->tmp));
    int rc = io_rename_noreplace(d->tmp, d->out);
    if (rc == TKV_INVALID)
        rc = tkv_err(TKV_INVALID, "tkv_checkpoint: %s was created by someone else meanwhile; nothing was changed",
                     d->out);
    TKV_TRY(rc);
    d->made = 0;
    rc = io_sync_dir(d->parent);
    if (rc < 0) { /* the name may not last: take it back, so that an error means no checkpoint */
        char msg[512];
        snprintf(msg, sizeof msg, "%s", tkv_errmsg());
        remove_tree(d->out);
        rc = tkv_err(rc, "%s", msg);
    }
    return rc;
}

void ckpt_dir_end(ckpt_dir *d)
{
    if (d->made) {
        tkv_errmsg_saved saved; /* the caller's error message survives the clean-up */
        tkv_errmsg_save(&saved);
        remove_tree(d->tmp);
        tkv_errmsg_restore(&saved);
    }
    if (d->lock_fd >= 0) close(d->lock_fd);
    free(d->out);
    free(d->tmp);
    free(d->parent);
    memset(d, 0, sizeof *d);
    d->lock_fd = -1;
}
