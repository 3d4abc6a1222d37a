// SPDX-License-Identifier: Apache-2.0
/*
 * throttle.h -- a slower "drive" for every engine alike: tkv_bench moves
 * itself into a block-I/O cgroup whose limits cap the device that holds the
 * databases at a given number of bytes per second for reads and, separately,
 * for writes (the kernel's blk-throttle). Unlike tierkv's ssd_bandwidth
 * option, it applies to RocksDB and LevelDB too, so a SILK-style experiment
 * (a 200 MB/s drive) compares engines on the same device.
 *
 * What it covers: I/O the process submits itself -- O_DIRECT reads and
 * writes, reads that miss the page cache, fsync/fdatasync write-back.
 * What it does not (cgroup v1): write-back of buffered writes by the
 * kernel's flusher threads (a WAL without per-write sync, an emulated pmem
 * pool's page-cache mapping). Use --direct_io so table I/O is covered.
 *
 * Needs root and the cgroup v1 blkio controller (/sys/fs/cgroup/blkio);
 * throttle_enter fails with a message otherwise (cgroup v2's io.max is not
 * implemented). Not thread-safe: call from the main thread between benchmarks.
 */
#ifndef TKV_BENCH_THROTTLE_H
#define TKV_BENCH_THROTTLE_H

#include <stddef.h>
#include <stdint.h>

/* throttle_enter -- caps the device holding `dir` at bps bytes/s (reads and
 * writes each) for the whole process. 0, or -1 with a message in err. */
int throttle_enter(const char *dir, uint64_t bps, char *err, size_t errlen);

/* throttle_leave -- moves the process back to the cgroup it started in and
 * removes the throttled one. Safe to call when not throttled. */
void throttle_leave(void);

/* throttle_describe -- "blkio v1 254:0 200000000 B/s" or "off". */
const char *throttle_describe(void);

#endif
