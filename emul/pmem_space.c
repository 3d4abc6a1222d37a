// SPDX-License-Identifier: Apache-2.0
/*
 * pmem_space.c -- the pool file's blocks (contract: pm_reserve, pm_discard,
 * pm_space in emul/pmem.h): a pool on a file system is a sparse file whose
 * blocks are allocated as its owner reserves ranges for use and given back
 * as it discards them, so the file takes the disk space of the data it
 * holds, not of its size.
 *
 * Why reserve at all: a store through a shared mapping into a hole makes
 * the kernel allocate a block at the page fault; if the file system is full
 * that fault is a SIGBUS, which would end the host. fallocate() before a
 * page is handed out turns the same shortage into ENOSPC, a TKV_NO_SPACE the
 * engine handles like a full pool.
 *
 * Invariant: in a sparse region every byte the engine stores to lies in a
 * range its owner reserved (pm_reserve) and has not discarded since.
 *
 * That is not enough by itself: the kernel dirties a page-cache folio as a
 * whole, and on a file system with large folios (ext4 since Linux 6.16) a
 * folio -- aligned to its own size, up to 2 MiB -- can span a reserved page
 * and a free neighbour that is a hole. A store into the reserved part then
 * asks for blocks for the whole folio (delayed allocation at the write
 * fault): on a full file system that is a SIGBUS again, and otherwise the
 * free neighbour gets blocks back. So a sparse region is mapped with
 * MADV_RANDOM from its open on, before anything is read: no readahead, and
 * every folio the mapping's faults create is a single 4 KiB page. (The
 * price: each first touch of a page, and each read of data that is not in
 * the page cache, faults 4 KiB at a time; an owner about to walk a range
 * asks for it ahead with pm_willneed, which also makes 4 KiB folios.) The
 * whole mapping stays that way: large folios in the pool's page area, where
 * no folio could span two 2 MiB pages, were tried and dropped -- each first
 * touch zeroed 2 MiB inside one fault, and on a kernel without preemption
 * that held a CPU for 30-110 ms on a VM. A folio made otherwise (a read of
 * the file by another program) can still span a page and a free neighbour;
 * pool_trim gives back what that costs.
 *
 * On real persistent memory (PM_PMEM, a DAX mapping) the file is allocated
 * in full at creation, as libpmem does, and reserve/discard do nothing: DAX
 * wants stable, contiguous extents. Where fallocate is not supported
 * (EOPNOTSUPP), reserve falls back to posix_fallocate, which writes a zero
 * byte into each block that reads as zero (harmless: the range is not in use
 * yet), and discard does nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "emul/pmem.h"
#include "emul/pmem_int.h"
#include "io/io.h"
#include "util/status.h"

#ifndef FALLOC_FL_KEEP_SIZE
#define FALLOC_FL_KEEP_SIZE 0x01
#endif
#ifndef FALLOC_FL_PUNCH_HOLE
#define FALLOC_FL_PUNCH_HOLE 0x02
#endif

int pm_create_file(const char *path, uint64_t size, int *exists)
{
    *exists = 0;
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        if (errno == EEXIST) {
            *exists = 1;
            return 0;
        }
        return tkv_err_errno(errno, "create pool %s", path);
    }
    int rc = 0;
    if (ftruncate(fd, (off_t)size) != 0)
        rc = tkv_err_errno(errno, "create pool %s: set its size to %llu", path, (unsigned long long)size);
    close(fd);
    if (rc < 0) unlink(path);
    return rc;
}

int pm_open_space(pm_region *r, const char *path, int made)
{
    r->fd = open(path, O_RDWR | O_CLOEXEC);
    if (r->fd < 0) return tkv_err_errno(errno, "open pool %s for its blocks", path);
    r->sparse = r->mode != PM_PMEM;
    if (r->sparse) (void)madvise(r->durable, r->map_len, MADV_RANDOM); /* 4 KiB folios (above); best effort */
    struct statfs sf;
    r->in_memory_fs =
        fstatfs(r->fd, &sf) == 0 && (sf.f_type == 0x01021994 /* tmpfs */ || sf.f_type == 0x858458f6 /* ramfs */);
    if (r->sparse || !made) return 0;
    int e = posix_fallocate(r->fd, 0, (off_t)r->size); /* DAX: the whole file now, as libpmem did */
    return e ? tkv_err_errno(e, "allocate the %llu bytes of pool %s", (unsigned long long)r->size, path) : 0;
}

int pm_reserve(pm_region *r, uint64_t off, uint64_t len)
{
    if (!r->sparse || len == 0) return 0;
    if (off > r->size || len > r->size - off)
        return tkv_err(TKV_INVALID, "pmem pool %s: reserve of [%llu, +%llu) outside the pool", r->path,
                       (unsigned long long)off, (unsigned long long)len);
    int e = io_fault_check(IO_OP_FALLOCATE, r->path, (size_t)len);
    if (e == 0 && fallocate(r->fd, 0, (off_t)off, (off_t)len) != 0) {
        e = errno;
        if (e == EOPNOTSUPP) e = posix_fallocate(r->fd, (off_t)off, (off_t)len);
    }
    if (e == 0) return 0;
    __atomic_fetch_add(&r->reserve_failures, 1, __ATOMIC_RELAXED);
    return tkv_err_errno(e, "pmem pool %s: allocating %llu bytes of the file at offset %llu", r->path,
                         (unsigned long long)len, (unsigned long long)off);
}

void pm_discard(pm_region *r, uint64_t off, uint64_t len)
{
    if (!r->sparse || len == 0 || off > r->size || len > r->size - off) return;
    /* crashsim: after the power cut nothing reaches the media any more */
    if (r->mode == PM_CRASHSIM &&
        __atomic_load_n(&r->persist_calls, __ATOMIC_RELAXED) >= __atomic_load_n(&r->cs_cut, __ATOMIC_ACQUIRE))
        return;
    if (fallocate(r->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0)
        __atomic_fetch_add(&r->discarded, len, __ATOMIC_RELAXED);
}

/* The kernel reads no more than the device's readahead window (read_ahead_kb,
 * or max_sectors_kb if larger; 128 KiB by default) per WILLNEED call and
 * silently drops the rest of the range, so a long range is asked for in
 * pieces no larger than the smallest such window. Each call only submits
 * the reads (PM_WILLNEED_PIECE, pmem_int.h). */
void pm_willneed(pm_region *r, uint64_t off, uint64_t len)
{
    if (r->mode == PM_PMEM || off > r->size || len > r->size - off || len == 0) return;
    for (uint64_t done = 0; done < len; done += PM_WILLNEED_PIECE) {
        uint64_t n = len - done < PM_WILLNEED_PIECE ? len - done : PM_WILLNEED_PIECE;
        (void)posix_fadvise(r->fd, (off_t)(off + done), (off_t)n, POSIX_FADV_WILLNEED); /* best effort */
    }
}

uint64_t pm_data_after(pm_region *r, uint64_t off)
{
    if (!r->sparse || off >= r->size) return UINT64_MAX;
    off_t d = lseek(r->fd, (off_t)off, SEEK_DATA); /* -1: ENXIO (none), or not supported */
    return d < 0 ? UINT64_MAX : (uint64_t)d;
}

int pm_space(pm_region *r, uint64_t *allocated)
{
    struct stat st;
    *allocated = 0;
    if (r->fd < 0 || fstat(r->fd, &st) != 0) return tkv_err_errno(errno, "stat pool %s", r->path);
    *allocated = (uint64_t)st.st_blocks * 512u;
    return 0;
}
