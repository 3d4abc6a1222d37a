// SPDX-License-Identifier: Apache-2.0
/*
 * flushlat.c -- how a writer's device-cache flushes hold up reads of the same
 * disk (the measurement behind the bytes_per_sync default: beside 30 MB/s of
 * direct writes, 4 KiB reads had a median per-second p99 of 3.4 ms with a
 * flush every 1 MiB and 13.7 ms with one every 8 MiB). Not part of the build:
 *
 *   cc -O2 -o /tmp/flushlat bench/tools/flushlat.c -lpthread
 *   dd if=/dev/urandom of=/var/tmp/rfile bs=1M count=2048 oflag=direct
 *   /tmp/flushlat /var/tmp/rfile /var/tmp/wfile 150 1024 12 64   # fdatasync every 64 MiB
 *   /tmp/flushlat /var/tmp/rfile /var/tmp/wfile 30 1024 15 8     # every 8 MiB
 *   /tmp/flushlat /var/tmp/rfile /var/tmp/wfile 30 1024 15 1M    # every 1 MiB
 *   /tmp/flushlat /var/tmp/rfile /var/tmp/wfile 6 4 15 8M buffered   # a WAL
 *
 * Arguments: read file (O_DIRECT 4 KiB random reads at 4000/s, open loop:
 * each latency is counted from the read's intended time, so a stall also
 * counts against the reads it delayed),
 * write file (created), write MB/s (0 = no writer), write size KiB,
 * seconds, fdatasync every N written (a number is MiB; a K or M suffix says
 * which; 0 = never), and optionally "buffered": the writer appends through
 * the page cache and, at each sync step, writes the step back
 * (sync_file_range, waiting) and then fdatasyncs, as tierkv's WAL write-back
 * thread does; without it the writes are O_DIRECT. The writer wraps at 2 GiB
 * (truncating the file, so blocks are allocated again). Prints the read
 * latency percentiles, how many reads took over 20 ms, and the median and
 * largest of the per-second p99s.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void sleep_until(uint64_t t)
{
    uint64_t n = now_ns();
    if (n >= t) return;
    struct timespec ts = {(time_t)((t - n) / 1000000000ull), (long)((t - n) % 1000000000ull)};
    nanosleep(&ts, NULL);
}

static volatile int stop;
static double wrate;        /* bytes/s */
static size_t wchunk;       /* bytes per write */
static uint64_t sync_bytes; /* fdatasync every this many bytes, 0 = never */
static int buffered;        /* page-cache writes + write-back steps (the WAL's way) */
static const char *wpath;

static void *writer(void *arg)
{
    (void)arg;
    int fd = open(wpath, O_WRONLY | O_CREAT | O_TRUNC | (buffered ? 0 : O_DIRECT), 0644);
    void *b = NULL;
    if (fd < 0 || posix_memalign(&b, 4096, wchunk) != 0) {
        perror("writer");
        exit(1);
    }
    memset(b, 1, wchunk);
    uint64_t t0 = now_ns(), done = 0;
    off_t off = 0;
    while (!stop) {
        sleep_until(t0 + (uint64_t)((double)done / wrate * 1e9));
        if (pwrite(fd, b, wchunk, off) < 0) {
            perror("pwrite");
            break;
        }
        off += (off_t)wchunk;
        done += wchunk;
        if (sync_bytes && (uint64_t)off % sync_bytes == 0) {
            if (buffered &&
                sync_file_range(fd, off - (off_t)sync_bytes, (off_t)sync_bytes,
                                SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) != 0)
                perror("sync_file_range");
            if (fdatasync(fd) != 0) perror("fdatasync");
        }
        if (off >= (off_t)2048 << 20) {
            off = 0;
            if (ftruncate(fd, 0) != 0) perror("ftruncate");
        }
    }
    close(fd);
    unlink(wpath);
    free(b);
    return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    if (argc != 7 && !(argc == 8 && strcmp(argv[7], "buffered") == 0)) {
        fprintf(stderr, "usage: %s READ_FILE WRITE_FILE WRITE_MBps WRITE_KiB SECONDS SYNC_EVERY[K|M] [buffered]\n",
                argv[0]);
        return 2;
    }
    buffered = argc == 8;
    wpath = argv[2];
    wrate = atof(argv[3]) * 1048576.0;
    wchunk = (size_t)atoi(argv[4]) * 1024;
    double secs = atof(argv[5]);
    char *unit;
    sync_bytes = strtoull(argv[6], &unit, 10) << (*unit == 'K' || *unit == 'k' ? 10 : 20);
    if (wrate > 0 &&
        (wchunk == 0 || sync_bytes % wchunk)) { /* the writer syncs when its offset is a multiple of the step */
        fprintf(stderr, "%s: the sync step must be a multiple of the write size\n", argv[0]);
        return 2;
    }
    int fd = open(argv[1], O_RDONLY | O_DIRECT);
    off_t size = fd >= 0 ? lseek(fd, 0, SEEK_END) : -1;
    void *buf = NULL;
    if (fd < 0 || size < 8192 || posix_memalign(&buf, 4096, 4096) != 0) {
        perror(argv[1]);
        return 1;
    }
    pthread_t w;
    if (wrate > 0 && pthread_create(&w, NULL, writer, NULL) != 0) return 1;
    size_t cap = (size_t)(secs * 4000) + 16, n = 0;
    uint64_t *lat = malloc(cap * sizeof *lat), *sec_p99 = calloc((size_t)secs + 2, sizeof *sec_p99);
    size_t sec_start = 0, nsec = 0;
    uint64_t t0 = now_ns(), seed = 88172645463325252ull;
    while (now_ns() - t0 < (uint64_t)(secs * 1e9) && n < cap) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        off_t o = (off_t)(seed % (uint64_t)(size / 4096 - 1)) * 4096;
        uint64_t due = t0 + n * 250000ull; /* open loop: latency from the read's intended time */
        if (pread(fd, buf, 4096, o) != 4096) perror("pread");
        lat[n++] = now_ns() - due;
        if (n - sec_start == 4000) { /* one second of reads: its p99 */
            qsort(lat + sec_start, 4000, sizeof *lat, cmp_u64);
            sec_p99[nsec++] = lat[sec_start + 3960];
            sec_start = n;
        }
        sleep_until(t0 + n * 250000ull); /* 4000 reads/s */
    }
    stop = 1;
    if (wrate > 0) pthread_join(w, NULL);
    qsort(lat, n, sizeof *lat, cmp_u64);
    size_t over = 0;
    for (size_t i = 0; i < n; i++) over += lat[i] > 20000000ull;
    qsort(sec_p99, nsec, sizeof *sec_p99, cmp_u64);
    printf("write %.0f MB/s in %zu KiB%s, fdatasync every %llu KiB: %zu reads, p50 %.0f us, p99 %.0f us, "
           "p99.9 %.0f us, max %.0f us, %zu over 20 ms; per-second p99 median %.0f us, max %.0f us\n",
           wrate / 1048576, wchunk / 1024, buffered ? " buffered" : " direct", (unsigned long long)(sync_bytes >> 10),
           n, lat[n / 2] / 1e3, lat[n * 99 / 100] / 1e3, lat[n * 999 / 1000] / 1e3, lat[n - 1] / 1e3, over,
           nsec ? sec_p99[nsec / 2] / 1e3 : 0, nsec ? sec_p99[nsec - 1] / 1e3 : 0);
    free(sec_p99);
    free(lat);
    free(buf);
    close(fd);
    return 0;
}
