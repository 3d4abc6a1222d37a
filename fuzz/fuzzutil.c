// SPDX-License-Identifier: Apache-2.0
/* fuzzutil.c -- the fuzz targets' shared helpers (fuzzutil.h). */
#include "fuzz/fuzzutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mem/wal.h"
#include "util/checksum.h"
#include "util/ikey.h"
#include "util/status.h"

void fz_fail(const char *file, int line, const char *msg)
{
    fprintf(stderr, "%s:%d: fuzz property failed: %s\n", file, line, msg);
    abort();
}

int fz_note(const char *what, int rc)
{
    static int on = -1;
    if (on < 0) on = getenv("TKV_FUZZ_DEBUG") != NULL;
    if (on) fprintf(stderr, "%s: %d %s\n", what, rc, rc < 0 ? tkv_errmsg() : "");
    return rc;
}

static char fz_dirbuf[256];

void fz_clear_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
            fz_clear_dir(path);
            rmdir(path);
        } else {
            unlink(path);
        }
    }
    closedir(d);
}

static void fz_remove_dir(void)
{
    if (!fz_dirbuf[0]) return;
    fz_clear_dir(fz_dirbuf);
    rmdir(fz_dirbuf);
}

const char *fz_dir(void)
{
    if (fz_dirbuf[0]) return fz_dirbuf;
    const char *base = getenv("TMPDIR");
    struct stat sb;
    if ((!base || !*base) && stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) && access("/dev/shm", W_OK) == 0)
        base = "/dev/shm";
    if (!base || !*base) base = "/tmp";
    snprintf(fz_dirbuf, sizeof fz_dirbuf, "%s/tkv-fuzz-XXXXXX", base);
    if (!mkdtemp(fz_dirbuf)) fz_fail(__FILE__, __LINE__, "mkdtemp");
    atexit(fz_remove_dir);
    return fz_dirbuf;
}

const char *fz_path(char *buf, size_t cap, const char *name)
{
    snprintf(buf, cap, "%s/%s", fz_dir(), name);
    return buf;
}

void fz_write_file(const char *path, const void *p, size_t n, uint64_t extend_to)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) fz_fail(__FILE__, __LINE__, "open scratch file");
    const uint8_t *b = p;
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, b + done, n - done);
        if (w <= 0) fz_fail(__FILE__, __LINE__, "write scratch file");
        done += (size_t)w;
    }
    if (extend_to > n && ftruncate(fd, (off_t)extend_to) != 0) fz_fail(__FILE__, __LINE__, "ftruncate");
    close(fd);
}

/* touch -- reads every byte of s (ASan sees a bad pointer or length). */
static unsigned touch(tkv_slice s)
{
    unsigned x = 0;
    for (size_t i = 0; i < s.n; i++) x += s.p[i];
    return x;
}

/* Keys met by the forward scan, kept for the seeks. */
typedef struct keyset {
    tkv_buf *k;
    size_t n;
} keyset;

size_t fz_walk(tkv_it *it, tkv_slice extra, size_t max_seeks)
{
    volatile unsigned sink = 0;
    keyset ks = {calloc(max_seeks ? max_seeks : 1, sizeof(tkv_buf)), 0};
    size_t fwd = 0, back = 0;
    for (it_seek_first(it); it_valid(it); it_next(it)) {
        tkv_slice k = it_key(it);
        sink += touch(k) + touch(it_value(it));
        if (ks.k && ks.n < max_seeks && buf_append(&ks.k[ks.n], k.p, k.n) == 0) ks.n++;
        fwd++;
    }
    int st_fwd = it_status(it);
    for (it_seek_last(it); it_valid(it); it_prev(it)) {
        sink += touch(it_key(it)) + touch(it_value(it));
        back++;
    }
    int st_back = it_status(it);
    if (st_fwd == 0 && st_back == 0) fz_check(fwd == back, "forward and backward scans disagree");
    for (size_t i = 0; i < ks.n; i++) {
        if (ks.k[i].len < IKEY_TRAILER) continue;
        it_seek(it, slice(ks.k[i].data, ks.k[i].len));
        if (it_valid(it)) sink += touch(it_key(it)) + touch(it_value(it));
        buf_free(&ks.k[i]);
    }
    free(ks.k);
    if (extra.n >= IKEY_TRAILER) {
        it_seek(it, extra);
        if (it_valid(it)) {
            sink += touch(it_key(it));
            it_prev(it);
        }
    }
    (void)sink;
    return fwd;
}

/* fix_records -- each record from off on whose declared length fits gets its checksum recomputed. */
static void fix_records(uint8_t *buf, size_t n, size_t off)
{
    while (n - off >= WAL_RECORD_HEADER) {
        size_t len = dec_u32(buf + off + 4);
        if (len > n - off - WAL_RECORD_HEADER) break;
        enc_u32(buf + off, tkv_checksum(buf + off + 4, 4 + len));
        off += WAL_RECORD_HEADER + len;
    }
}

static const uint8_t wal_magic[8] = {'T', 'K', 'V', 'W', 'A', 'L', 0x00, 0x01};

void fz_fix_framing(uint8_t *buf, size_t n)
{
    if (n < WAL_HEADER_SIZE) return;
    memcpy(buf, wal_magic, sizeof wal_magic);
    enc_u32(buf + 8, WAL_V1);
    enc_u32(buf + 12, tkv_checksum(buf, 12));
    fix_records(buf, n, WAL_HEADER_SIZE);
}

void fz_fix_framing_v2(uint8_t *buf, size_t n, int fix_slot)
{
    if (n < WAL_V2_HEADER_SIZE) return;
    memcpy(buf, wal_magic, sizeof wal_magic);
    enc_u32(buf + 8, WAL_V2);
    enc_u32(buf + 12, tkv_checksum(buf, 12));
    enc_u32(buf + 40, tkv_checksum(buf, 40));
    if (fix_slot) enc_u32(buf + WAL_V2_FRONTIER_OFF + 8, tkv_checksum(buf + WAL_V2_FRONTIER_OFF, 8));
    fix_records(buf, n, WAL_V2_HEADER_SIZE);
}
