/*
 * flushlat.c -- how a writer's device-cache flushes hold up reads of the same
 * disk (the measurement behind the bytes_per_sync option, docs/scheduler.md
 * "Fourth run"). Not part of the build:
 *
 *   cc -O2 -o /tmp/flushlat bench/tools/flushlat.c -lpthread
 *   dd if=/dev/urandom of=/var/tmp/rfile bs=1M count=2048 oflag=direct
 *   /tmp/flushlat /var/tmp/rfile /var/tmp/wfile 150 1024 12 64   # fdatasync every 64 MiB
 *   /tmp/flushlat /var/tmp/rfile /var/tmp/wfile 150 1024 12 8    # every 8 MiB
 *
 * Arguments: read file (O_DIRECT 4 KiB random reads at 4000/s, open loop),
 * write file (created, O_DIRECT), write MB/s (0 = no writer), write size KiB,
 * seconds, fdatasync every N MiB written (0 = never). The writer wraps at
 * 2 GiB (truncating the file, so blocks are allocated again). Prints the
 * read latency percentiles and how many reads took over 20 ms.
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
static double wrate;      /* bytes/s */
static size_t wchunk;     /* bytes per write */
static uint64_t sync_mib; /* fdatasync every this many MiB, 0 = never */
static const char *wpath;

static void *writer(void *arg)
{
    (void)arg;
    int fd = open(wpath, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
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
        if (sync_mib && off % (off_t)(sync_mib << 20) == 0 && fdatasync(fd) != 0) perror("fdatasync");
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
    if (argc != 7) {
        fprintf(stderr, "usage: %s READ_FILE WRITE_FILE WRITE_MBps WRITE_KiB SECONDS SYNC_EVERY_MiB\n", argv[0]);
        return 2;
    }
    wpath = argv[2];
    wrate = atof(argv[3]) * 1048576.0;
    wchunk = (size_t)atoi(argv[4]) * 1024;
    double secs = atof(argv[5]);
    sync_mib = (uint64_t)atoll(argv[6]);
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
    uint64_t *lat = malloc(cap * sizeof *lat);
    uint64_t t0 = now_ns(), seed = 88172645463325252ull;
    while (now_ns() - t0 < (uint64_t)(secs * 1e9) && n < cap) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        off_t o = (off_t)(seed % (uint64_t)(size / 4096 - 1)) * 4096;
        uint64_t s = now_ns();
        if (pread(fd, buf, 4096, o) != 4096) perror("pread");
        lat[n++] = now_ns() - s;
        sleep_until(t0 + n * 250000ull); /* 4000 reads/s */
    }
    stop = 1;
    if (wrate > 0) pthread_join(w, NULL);
    qsort(lat, n, sizeof *lat, cmp_u64);
    size_t over = 0;
    for (size_t i = 0; i < n; i++) over += lat[i] > 20000000ull;
    printf("write %.0f MB/s in %zu KiB, fdatasync every %llu MiB: %zu reads, p50 %.0f us, p99 %.0f us, "
           "p99.9 %.0f us, max %.0f us, %zu over 20 ms\n",
           wrate / 1048576, wchunk / 1024, (unsigned long long)sync_mib, n, lat[n / 2] / 1e3, lat[n * 99 / 100] / 1e3,
           lat[n * 999 / 1000] / 1e3, lat[n - 1] / 1e3, over);
    free(lat);
    free(buf);
    close(fd);
    return 0;
}
