// SPDX-License-Identifier: Apache-2.0
/*
 * pmem.c -- the persistent-memory device (emul/pmem.h): one pool file mapped
 * with libpmem, and persist primitives whose meaning depends on the mode.
 *
 * Persistence semantics, per mode (docs/pmem.md has the long form):
 *   PM_PMEM      DAX mapping; pm_persist = cache-line flush (clwb/clflushopt)
 *                + sfence: the bytes survive power loss when it returns.
 *   PM_EMULATED  page-cache mapping; pm_persist = the same flush + fence. The
 *                stores already sit in the page cache, so they survive a
 *                process crash; pm_sync (an fdatasync of the pool file) makes
 *                everything stored before it survive a power cut. The pool
 *                calls it at its commit points (matrix/pool.h).
 *   PM_VOLATILE  PM_EMULATED without sync points: only pm_close's msync makes
 *                the stores survive an OS crash (opt-in).
 *   PM_MSYNC     page-cache mapping; pm_persist/pm_flush = msync of the pages
 *                touching the range: survives an OS crash when it returns.
 *   PM_CRASHSIM  the engine writes a private anonymous copy (the volatile
 *                image); only persisted ranges, widened to 64-byte lines, are
 *                copied into the file mapping (the durable image). After the
 *                cut point, persists copy nothing. The durable image is a plain
 *                page-cache mapping that is never flushed itself: crash tests
 *                reopen the file in the same process, so the page cache is the
 *                "media" there.
 *
 * Optane profile: pm_read_delay spins 300 ns per access; every persist call
 * charges its bytes (line-widened; pm_memcpy_persist: the bytes copied) to a
 * per-region 2 GB/s write budget ("device busy until" timestamp, reserved
 * with a CAS) and spins until its reservation has elapsed, so concurrent
 * writers share the bandwidth. Spinning (not sleeping) is deliberate: a core
 * issuing stores to a saturated Optane DIMM stalls too.
 *
 * Errors: the persist primitives have no error channel (they sit between
 * stores, as a cache flush does). A persist that fails -- an msync in
 * PM_MSYNC, a range outside the pool -- records the region's sticky error
 * and returns; the engine checks pm_error before each commit point that
 * depends on earlier persists and turns the error into a read-only database
 * (TKV_IO_ERROR). Nothing here aborts or prints.
 *
 * The region's helpers live in their own files: the paced write-back
 * (pmem_writeback.c), the prefault thread (pmem_prefault.c) and the pool
 * file's blocks -- sparse creation, reserve, discard (pmem_space.c); the
 * region's fields are in pmem_int.h.
 */
#include "emul/pmem.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <libpmem.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "emul/pmem_int.h"
#include "io/io.h"
#include "util/status.h"

const char *pm_mode_name(pm_mode m)
{
    switch (m) {
    case PM_AUTO:
        return "auto";
    case PM_PMEM:
        return "pmem";
    case PM_EMULATED:
        return "emulated";
    case PM_MSYNC:
        return "msync";
    case PM_CRASHSIM:
        return "crashsim";
    case PM_VOLATILE:
        return "volatile";
    }
    return "unknown";
}

/* ------------------------------------------------------------------ timing */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static void spin_until(uint64_t t)
{
    while (now_ns() < t) cpu_relax();
}

/* pace_reserve -- charges `bytes` to the region's write bandwidth and returns
 * the time at which the transfer is complete: the device is modelled as one
 * queue that starts this transfer when both it is idle and the caller is
 * here (no credit for idle time). 0 without a profile. */
static uint64_t pace_reserve(pm_region *r, uint64_t bytes)
{
    if (r->profile != PM_PROFILE_OPTANE) return 0;
    uint64_t cost =
        bytes / PM_OPTANE_WRITE_BW * 1000000000ull + bytes % PM_OPTANE_WRITE_BW * 1000000000ull / PM_OPTANE_WRITE_BW;
    uint64_t now = now_ns();
    uint64_t old = __atomic_load_n(&r->busy_until_ns, __ATOMIC_RELAXED), end;
    do {
        end = (old > now ? old : now) + cost;
    } while (!__atomic_compare_exchange_n(&r->busy_until_ns, &old, end, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return end;
}

/* ------------------------------------------------------------------ helpers */

/* line_span -- bytes of whole 64-byte lines covering [addr, addr+len). */
static uint64_t line_span(const pm_region *r, const void *addr, size_t len)
{
    uint64_t off = (uint64_t)((const uint8_t *)addr - r->base);
    uint64_t lo = off & ~(uint64_t)(PM_LINE - 1), hi = (off + len + PM_LINE - 1) & ~(uint64_t)(PM_LINE - 1);
    return hi - lo;
}

/* count -- updates the stats and returns this call's persist index. */
static uint64_t count(pm_region *r, uint64_t bytes)
{
    __atomic_fetch_add(&r->bytes_persisted, bytes, __ATOMIC_RELAXED);
    return __atomic_fetch_add(&r->persist_calls, 1, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ errors */

void pm_fail(pm_region *r, int code, const char *fmt, ...)
{
    __atomic_fetch_add(&r->persist_errors, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&r->err_mu);
    if (!r->err) {
        char what[200];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(what, sizeof what, fmt, ap);
        va_end(ap);
        snprintf(r->err_msg, sizeof r->err_msg, "pmem pool %s: %s", r->path, what);
        __atomic_store_n(&r->err, code, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&r->err_mu);
}

int pm_error(pm_region *r)
{
    if (!__atomic_load_n(&r->err, __ATOMIC_ACQUIRE)) return 0;
    pthread_mutex_lock(&r->err_mu);
    int rc = tkv_err(r->err, "%s", r->err_msg);
    pthread_mutex_unlock(&r->err_mu);
    return rc;
}

/* persist_range_ok -- 1 if [addr, addr+len) lies inside the pool; else the
 * persist is skipped and recorded as the region's error (an engine bug, but
 * not a reason to end its host). */
static int persist_range_ok(pm_region *r, const void *addr, size_t len)
{
    if (r->readonly) {
        pm_fail(r, TKV_IO_ERROR, "persist of %zu bytes into a pool opened read-only", len);
        return 0;
    }
    if (pm_in_range(r, addr, len)) return 1;
    pm_fail(r, TKV_IO_ERROR, "persist of %zu bytes at %p, outside the pool's mapping [%p, +%llu)", len, addr,
            (void *)r->base, (unsigned long long)r->size);
    return 0;
}

/* pm_msync -- the persist of PM_MSYNC: msync of the pages under [addr,
 * addr+len). A failure (or one the I/O layer's fault hook injects,
 * IO_OP_MSYNC) becomes the region's sticky error: the range's durability is
 * lost, and the engine turns read-only at its next check (pm_error). */
static void pm_msync(pm_region *r, const void *addr, size_t len)
{
    int e = io_fault_check(IO_OP_MSYNC, r->path, len);
    if (e == 0) {
        errno = 0;
        if (pmem_msync(addr, len) == 0) return;
        e = errno ? errno : EIO;
    }
    pm_fail(r, TKV_IO_ERROR, "msync of %zu bytes at offset %llu failed: %s; their durability is lost", len,
            (unsigned long long)((const uint8_t *)addr - r->base), strerror(e));
}

/* ------------------------------------------------------------------ crash simulation */

/* cs_copy_words -- durable[lo, hi) = volatile[lo, hi), word by word (lo, hi
 * are 64-byte aligned, so an aligned 8-byte store lands atomically in the
 * durable image). Not instrumented by TSan on purpose: like a cache-line
 * write-back, it reads the whole line while other threads may be storing to
 * other bytes of it; the stripe lock orders the copies themselves. */
__attribute__((no_sanitize("thread"))) static void cs_copy_words(pm_region *r, uint64_t lo, uint64_t hi)
{
    const volatile uint64_t *src = (const volatile uint64_t *)(void *)(r->base + lo);
    volatile uint64_t *dst = (volatile uint64_t *)(void *)(r->durable + lo);
    for (uint64_t i = 0, n = (hi - lo) / 8; i < n; i++) dst[i] = src[i];
}

static void cs_lock(uint8_t *l)
{
    while (__atomic_test_and_set(l, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(l, __ATOMIC_RELAXED)) cpu_relax();
}

static void cs_unlock(uint8_t *l) { __atomic_clear(l, __ATOMIC_RELEASE); }

/* cs_persist -- the crashsim persist of [addr, addr+len) whose persist index
 * is idx: copies the covering lines to the durable image unless the cut has
 * passed. Copies go page by page under the page's stripe lock, so two threads
 * persisting disjoint bytes of one line cannot overwrite each other's newer
 * bytes with an older copy (each copy reads the volatile line after taking
 * the lock, i.e. after every store that preceded an earlier copy). */
static void cs_persist(pm_region *r, uint64_t idx, const void *addr, size_t len)
{
    uint64_t cut = __atomic_load_n(&r->cs_cut, __ATOMIC_ACQUIRE);
    if (idx >= cut) {
        if (idx == cut && r->on_cut) r->on_cut(); /* the power cut itself (pm_crashsim_arm) */
        return;
    }
    if (len == 0) return;
    uint64_t off = (uint64_t)((const uint8_t *)addr - r->base);
    uint64_t lo = off & ~(uint64_t)(PM_LINE - 1);
    uint64_t hi = (off + len + PM_LINE - 1) & ~(uint64_t)(PM_LINE - 1);
    while (lo < hi) {
        uint64_t page_end = (lo | (PM_POOL_ALIGN - 1)) + 1;
        uint64_t end = hi < page_end ? hi : page_end;
        uint8_t *l = &r->cs_locks[(lo / PM_POOL_ALIGN) % PM_CS_NLOCKS];
        cs_lock(l);
        cs_copy_words(r, lo, end);
        cs_unlock(l);
        lo = end;
    }
}

/* ------------------------------------------------------------------ open / close */

/* pm_crashsim_arm's settings, applied to every PM_CRASHSIM region opened
 * after the call. */
static uint64_t cs_armed_cut = UINT64_MAX;
static void (*cs_armed_hook)(void);

void pm_crashsim_arm(uint64_t n, void (*on_cut)(void))
{
    cs_armed_hook = on_cut;
    __atomic_store_n(&cs_armed_cut, n, __ATOMIC_RELEASE);
}

/* pm_open_parent_dir -- a read-only descriptor of the directory holding path,
 * or -1 with errno set. */
int pm_open_parent_dir(const char *path)
{
    char *copy = strdup(path);
    if (!copy) {
        errno = ENOMEM;
        return -1;
    }
    int fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int err = errno;
    free(copy);
    errno = err;
    return fd;
}

/* fsync_parent -- makes a newly created pool's directory entry durable. */
static int fsync_parent(const char *path)
{
    int fd = pm_open_parent_dir(path);
    int rc = 0;
    if (fd < 0 || fsync(fd) != 0) rc = tkv_err_errno(errno, "fsync the directory of pool %s", path);
    if (fd >= 0) close(fd);
    return rc;
}

/* map_pool -- maps an existing pool (create = 0) or creates one of `size`
 * bytes (create = 1, O_EXCL; a sparse file: pmem_space.c) and maps it. Sets
 * *exists on EEXIST when creating. A file created here is removed again if
 * it cannot be mapped. */
static int map_pool(pm_region *r, const char *path, uint64_t size, int create, int *exists)
{
    size_t map_len = 0;
    int is_pmem = 0;
    if (create) {
        TKV_TRY(pm_create_file(path, size, exists));
        if (*exists) return 0;
    }
    errno = 0;
    void *p = pmem_map_file(path, 0, 0, 0, &map_len, &is_pmem);
    if (!p) {
        int rc = tkv_err_errno(errno ? errno : EIO, "map pool %s (%s)", path, pmem_errormsg());
        if (create) unlink(path);
        return rc;
    }
    r->durable = p;
    r->map_len = map_len;
    return 0;
}

/* pm_open_alloc -- a zeroed region for path with no mapping yet: profile set,
 * descriptors -1, and (PM_CRASHSIM) the cut point armed by pm_crashsim_arm. */
static int pm_open_alloc(const char *path, pm_mode mode, pm_profile profile, pm_region **out)
{
    pm_region *r = aligned_alloc(_Alignof(pm_region), sizeof *r);
    char *p = strdup(path);
    if (!r || !p) {
        free(r);
        free(p);
        return tkv_err(TKV_NO_MEMORY, "out of memory opening pool %s", path);
    }
    memset(r, 0, sizeof *r);
    r->path = p;
    r->profile = profile;
    r->cs_cut = UINT64_MAX;
    r->fd = -1;
    r->wb_fd = -1;
    r->wb_dir_fd = -1;
    pthread_mutex_init(&r->err_mu, NULL);
    if (mode == PM_CRASHSIM) {
        r->cs_cut = __atomic_load_n(&cs_armed_cut, __ATOMIC_ACQUIRE);
        r->on_cut = cs_armed_hook;
    }
    *out = r;
    return 0;
}

/* pm_open_map -- maps the pool file into r->durable: an existing file (which
 * must be a non-empty regular file of `size` bytes, when size != 0), or a new
 * one of `size` bytes (*made = 1). A creator that loses a race to another
 * creator (EEXIST) maps the other's file on the second attempt. */
static int pm_open_map(pm_region *r, const char *path, uint64_t size, int *made)
{
    int rc = 0;
    struct stat sb;
    *made = 0;
    for (int attempt = 0; attempt < 2 && !r->durable; attempt++) {
        if (stat(path, &sb) == 0) {
            if (!S_ISREG(sb.st_mode)) {
                rc = tkv_err(TKV_INVALID, "pool %s is not a regular file", path);
                break;
            }
            if (size != 0 && (uint64_t)sb.st_size != size) {
                rc = tkv_err(TKV_INVALID, "pool %s is %llu bytes, pmem_size asks for %llu", path,
                             (unsigned long long)sb.st_size, (unsigned long long)size);
                break;
            }
            if (sb.st_size == 0) {
                rc = tkv_err(TKV_INVALID, "pool %s is empty (0 bytes)", path);
                break;
            }
            if ((rc = map_pool(r, path, 0, 0, NULL)) < 0) break;
        } else if (errno != ENOENT) {
            rc = tkv_err_errno(errno, "stat pool %s", path);
            break;
        } else if (size == 0) {
            rc = tkv_err(TKV_INVALID, "pool %s does not exist and no size was given (pmem_size=0)", path);
            break;
        } else if (size % PM_POOL_ALIGN != 0) {
            rc = tkv_err(TKV_INVALID, "pool %s: pmem_size %llu is not a multiple of %u", path, (unsigned long long)size,
                         PM_POOL_ALIGN);
            break;
        } else {
            int exists = 0;
            if ((rc = map_pool(r, path, size, 1, &exists)) < 0) break;
            *made = !exists; /* on EEXIST (a racing creator) the loop maps the existing file */
        }
    }
    if (rc == 0 && !r->durable) rc = tkv_err(TKV_IO_ERROR, "pool %s: created and removed concurrently", path);
    return rc;
}

/* pm_open_check_size -- sets r->size from the mapping and checks it: equal to
 * `size` when one was asked for, and a multiple of PM_POOL_ALIGN. */
static int pm_open_check_size(pm_region *r, const char *path, uint64_t size)
{
    r->size = r->map_len;
    if (size != 0 && r->size != size)
        return tkv_err(TKV_INVALID, "pool %s is %llu bytes, pmem_size asks for %llu", path, (unsigned long long)r->size,
                       (unsigned long long)size);
    if (r->size % PM_POOL_ALIGN != 0)
        return tkv_err(TKV_INVALID, "pool %s is %llu bytes, not a multiple of %u", path, (unsigned long long)r->size,
                       PM_POOL_ALIGN);
    return 0;
}

/* pm_open_resolve_mode -- sets r->mode: PM_AUTO becomes PM_PMEM on a pmem
 * mapping, else PM_EMULATED; PM_PMEM on a mapping that is not pmem is
 * TKV_INVALID. */
static int pm_open_resolve_mode(pm_region *r, const char *path, pm_mode mode)
{
    int rc = 0;
    int is_pmem = pmem_is_pmem(r->durable, r->size);
    if (mode == PM_AUTO) mode = is_pmem ? PM_PMEM : PM_EMULATED;
    if (mode == PM_PMEM && !is_pmem)
        rc = tkv_err(TKV_INVALID, "pool %s is not persistent memory (pmem_mode=pmem); use pmem_mode=auto or emulated",
                     path);
    r->mode = mode;
    return rc;
}

/* pm_open_engine_image -- sets r->base, what the engine reads and writes: the
 * file mapping itself, or in PM_CRASHSIM a private anonymous copy of it (the
 * volatile image). */
static int pm_open_engine_image(pm_region *r, const char *path)
{
    if (r->mode != PM_CRASHSIM) {
        r->base = r->durable;
        return 0;
    }
    void *v = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (v == MAP_FAILED)
        return tkv_err_errno(errno, "pool %s: mapping the crash-simulation image of %llu bytes", path,
                             (unsigned long long)r->size);
    r->base = memcpy(v, r->durable, r->size);
    return 0;
}

/* pm_open_undo -- a failed pm_open: unmaps what was mapped, removes the pool
 * file if this open created it, and frees r. */
static void pm_open_undo(pm_region *r, const char *path, int made)
{
    if (r->base && r->base != r->durable) munmap(r->base, r->size);
    if (r->durable) pmem_unmap(r->durable, r->map_len);
    if (r->fd >= 0) close(r->fd);
    if (made) unlink(path);
    pthread_mutex_destroy(&r->err_mu);
    free(r->path);
    free(r);
}

/* pm_open_start_helpers -- best effort, after a successful open: the
 * write-back descriptors (PM_EMULATED on a file system that writes back) and
 * the prefault thread (not in PM_CRASHSIM: the crash image is an anonymous
 * copy, already touched; not on tmpfs/ramfs, where populating a hole
 * allocates the page -- memory the pool has not reserved, pmem_space.c). */
static void pm_open_start_helpers(pm_region *r, const char *path)
{
    if (r->mode == PM_EMULATED || r->mode == PM_VOLATILE) pm_wb_open(r, path);
    if (r->mode != PM_CRASHSIM && !r->in_memory_fs) pm_prefault_start(r);
}

/* pm_open -- opens, or creates, the pool at path (contract: emul/pmem.h).
 * Steps: allocate the region, map the file, check its size, resolve the mode,
 * open the file for its blocks (sparse or fully allocated), set up the
 * engine's image, fsync the directory of a pool created here
 * (PM_MSYNC, PM_PMEM); a failure in any step undoes the earlier ones. */
int pm_open(const char *path, uint64_t size, pm_mode mode, pm_profile profile, pm_region **out, int *created)
{
    if (out) *out = NULL;
    if (created) *created = 0;
    if (!path || !out) return tkv_err(TKV_INVALID, "pm_open: NULL argument");
    if ((unsigned)mode > PM_VOLATILE) return tkv_err(TKV_INVALID, "pool %s: unknown pmem_mode %d", path, (int)mode);
    if ((unsigned)profile > PM_PROFILE_OPTANE)
        return tkv_err(TKV_INVALID, "pool %s: unknown emul_profile %d", path, (int)profile);

    pm_region *r = NULL;
    TKV_TRY(pm_open_alloc(path, mode, profile, &r));
    int made = 0;
    int rc = pm_open_map(r, path, size, &made);
    if (rc == 0) rc = pm_open_check_size(r, path, size);
    if (rc == 0) rc = pm_open_resolve_mode(r, path, mode);
    if (rc == 0) rc = pm_open_space(r, path, made);
    if (rc == 0) rc = pm_open_engine_image(r, path);
    if (rc == 0 && made && r->mode != PM_VOLATILE && r->mode != PM_CRASHSIM) rc = fsync_parent(path);
    if (rc < 0) {
        pm_open_undo(r, path, made);
        return rc;
    }
    if (created) *created = made;
    pm_open_start_helpers(r, path);
    *out = r;
    return 0;
}

int pm_open_readonly(const char *path, pm_region **out)
{
    *out = NULL;
    if (!path) return tkv_err(TKV_INVALID, "pm_open_readonly: NULL path");
    pm_region *r = NULL;
    TKV_TRY(pm_open_alloc(path, PM_EMULATED, PM_PROFILE_NONE, &r));
    r->readonly = 1;
    r->mode = PM_EMULATED;
    int rc = 0;
    struct stat sb;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &sb) != 0) {
        rc = tkv_err_errno(errno, "open pool %s", path);
    } else if (!S_ISREG(sb.st_mode) || sb.st_size == 0) {
        rc =
            tkv_err(TKV_INVALID, "pool %s is %s", path, S_ISREG(sb.st_mode) ? "empty (0 bytes)" : "not a regular file");
    } else {
        void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) {
            rc = tkv_err_errno(errno, "map pool %s read-only", path);
        } else {
            r->durable = r->base = p;
            r->map_len = (size_t)sb.st_size;
            r->size = (uint64_t)sb.st_size;
        }
    }
    if (fd >= 0) close(fd);
    if (rc < 0) {
        pm_open_undo(r, path, 0);
        return rc;
    }
    *out = r;
    return 0;
}

int pm_close(pm_region *r)
{
    if (!r) return 0;
    pm_prefault_stop(r);
    pm_wb_close(r);
    if (r->mode == PM_CRASHSIM) {
        /* no final copy: what was not persisted is lost, like at a power cut */
        munmap(r->base, r->size);
    } else if ((r->mode == PM_EMULATED || r->mode == PM_VOLATILE) && !r->readonly) {
        pm_msync(r, r->base, r->size); /* a failure is the region's error, returned below */
    }
    int rc = pm_error(r);
    pmem_unmap(r->durable, r->map_len);
    if (r->fd >= 0) close(r->fd);
    pthread_mutex_destroy(&r->err_mu);
    free(r->path);
    free(r);
    return rc;
}

uint8_t *pm_base(pm_region *r) { return r->base; }
uint64_t pm_size(pm_region *r) { return r->size; }
pm_mode pm_mode_in_use(pm_region *r) { return r->mode; }
pm_profile pm_profile_in_use(pm_region *r) { return r->profile; }
uint64_t pm_profile_write_bw(pm_profile p) { return p == PM_PROFILE_OPTANE ? PM_OPTANE_WRITE_BW : 0; }

/* ------------------------------------------------------------------ persist primitives */

/* pm_flush -- in crashsim the range is copied at the flush (a flushed line is
 * treated as durable at once; the flushed-but-not-yet-fenced window of real
 * hardware, where lines flushed before one fence may land in any order, is not
 * modelled). */
void pm_flush(pm_region *r, const void *addr, size_t len)
{
    if (!persist_range_ok(r, addr, len)) return;
    uint64_t idx = count(r, len);
    uint64_t end = pace_reserve(r, line_span(r, addr, len));
    switch (r->mode) {
    case PM_MSYNC:
        pm_msync(r, addr, len);
        break;
    case PM_CRASHSIM:
        cs_persist(r, idx, addr, len);
        break;
    default:
        pmem_flush(addr, len);
        break;
    }
    if (end) spin_until(end);
}

void pm_drain(pm_region *r)
{
    if (r->mode == PM_PMEM || r->mode == PM_EMULATED || r->mode == PM_VOLATILE) pmem_drain();
}

int pm_needs_sync(const pm_region *r) { return r->mode == PM_EMULATED && !r->readonly; }

int pm_write_through(const pm_region *r)
{
    return (r->mode == PM_EMULATED || r->mode == PM_VOLATILE) && !r->readonly && r->fd >= 0;
}

void pm_write_persist(pm_region *r, void *dst, const void *src, size_t n)
{
    if (!pm_write_through(r)) {
        pm_memcpy_persist(r, dst, src, n);
        return;
    }
    if (!persist_range_ok(r, dst, n)) return;
    uint64_t off = (uint64_t)((uint8_t *)dst - r->base);
    (void)count(r, n);
    uint64_t end = pace_reserve(r, n);
    int e = io_fault_check(IO_OP_WRITE, r->path, n);
    if (e < 0) e = ENOSPC; /* the hook's short write: here, nothing is written */
    const uint8_t *s = src;
    for (size_t done = 0; e == 0 && done < n;) {
        ssize_t w = pwrite(r->fd, s + done, n - done, (off_t)(off + done));
        if (w > 0) done += (size_t)w;
        else if (w == 0) e = ENOSPC; /* no progress: a full file system */
        else if (errno != EINTR) e = errno;
    }
    if (end) spin_until(end);
    if (e)
        pm_fail(r, TKV_IO_ERROR, /* ENOSPC too: the owner reserved the range's blocks (pm_reserve) */
                "write of %zu bytes at offset %llu of the pool failed: %s; they are not stored", n,
                (unsigned long long)off, strerror(e));
}

/* pm_sync -- PM_EMULATED's durability point: an fdatasync of the pool file
 * writes every dirty page of the mapping (and the blocks' metadata) to the
 * device. A failure is sticky (after a failed fdatasync the dirty pages'
 * state is unknown). */
int pm_sync(pm_region *r)
{
    if (!pm_needs_sync(r)) return 0;
    int e = pm_error(r);
    if (e < 0) return e;
    uint64_t t0 = now_ns();
    e = io_fault_check(IO_OP_SYNC, r->path, 0);
    if (e == 0 && fdatasync(r->fd) != 0) e = errno ? errno : EIO;
    __atomic_fetch_add(&r->syncs, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&r->sync_ns, now_ns() - t0, __ATOMIC_RELAXED);
    if (e == 0) return 0;
    pm_fail(r, TKV_IO_ERROR, "fdatasync of the pool failed: %s; what was stored since the last sync may not be durable",
            strerror(e));
    return pm_error(r);
}

/* pm_persist -- flush then fence (pmem_persist is exactly pmem_flush +
 * pmem_drain; in msync and crashsim modes the flush already made it durable). */
void pm_persist(pm_region *r, const void *addr, size_t len)
{
    pm_flush(r, addr, len);
    pm_drain(r);
}

/* pm_memcpy_persist -- one persist call (one crashsim index: the whole copy
 * lands or none of it), done in PM_PACE_CHUNK steps under the profile so that
 * concurrent writers interleave on the bandwidth budget. */
void pm_memcpy_persist(pm_region *r, void *dst, const void *src, size_t n)
{
    if (!persist_range_ok(r, dst, n)) return;
    uint64_t idx = count(r, n);
    size_t step = r->profile == PM_PROFILE_OPTANE ? PM_PACE_CHUNK : (n ? n : 1);
    uint8_t *d = dst;
    const uint8_t *s = src;
    for (size_t done = 0; done < n;) {
        size_t c = n - done < step ? n - done : step;
        uint64_t end = pace_reserve(r, c);
        switch (r->mode) {
        case PM_MSYNC:
            memcpy(d + done, s + done, c);
            pm_msync(r, d + done, c);
            break;
        case PM_CRASHSIM:
            memcpy(d + done, s + done, c);
            cs_persist(r, idx, d + done, c);
            break;
        default:
            pmem_memcpy_persist(d + done, s + done, c);
            break;
        }
        if (end) spin_until(end);
        done += c;
    }
}

/* pm_store8_persist -- the commit point: an aligned 8-byte store is atomic
 * in the cache and on the media, so a power cut leaves the old or the new
 * value; in crashsim the durable image is also written in aligned 8-byte
 * words (cs_copy_words). Release order: a reader that sees the new value
 * also sees the stores made before it. */
void pm_store8_persist(pm_region *r, uint64_t *dst, uint64_t value)
{
    if (!persist_range_ok(r, dst, 8)) return;
    if ((uintptr_t)dst & 7u) { /* not atomic on the media: refused (an engine bug) */
        pm_fail(r, TKV_IO_ERROR, "8-byte commit store at offset %llu, not 8-byte aligned",
                (unsigned long long)((uint8_t *)dst - r->base));
        return;
    }
    uint64_t idx = count(r, 8);
    uint64_t end = pace_reserve(r, PM_LINE);
    __atomic_store_n(dst, value, __ATOMIC_RELEASE);
    switch (r->mode) {
    case PM_MSYNC:
        pm_msync(r, dst, 8);
        break;
    case PM_CRASHSIM:
        cs_persist(r, idx, dst, 8);
        break;
    default:
        pmem_persist(dst, 8);
        break;
    }
    if (end) spin_until(end);
}

void pm_read_delay(pm_region *r, unsigned accesses)
{
    if (r->profile != PM_PROFILE_OPTANE || accesses == 0) return;
    spin_until(now_ns() + (uint64_t)accesses * PM_OPTANE_READ_NS);
}

void pm_get_stats(pm_region *r, pm_stats *out)
{
    out->persist_calls = __atomic_load_n(&r->persist_calls, __ATOMIC_RELAXED);
    out->bytes_persisted = __atomic_load_n(&r->bytes_persisted, __ATOMIC_RELAXED);
    out->wb_bytes = __atomic_load_n(&r->wb_bytes, __ATOMIC_RELAXED);
    out->wb_failures = __atomic_load_n(&r->wb_failures, __ATOMIC_RELAXED);
    out->wb_dropped = __atomic_load_n(&r->wb_dropped, __ATOMIC_RELAXED);
    out->wb_expired = __atomic_load_n(&r->wb_expired, __ATOMIC_RELAXED);
    out->wb_pending = __atomic_load_n(&r->wb_pending, __ATOMIC_RELAXED);
    out->wb_device_flushes = __atomic_load_n(&r->wb_device_flushes, __ATOMIC_RELAXED);
    out->prefault_bytes = __atomic_load_n(&r->pf_bytes, __ATOMIC_RELAXED);
    out->prefault_write_bytes = __atomic_load_n(&r->pf_write_bytes, __ATOMIC_RELAXED);
    out->prefault_zero_bytes = __atomic_load_n(&r->pf_zero_bytes, __ATOMIC_RELAXED);
    out->persist_errors = __atomic_load_n(&r->persist_errors, __ATOMIC_RELAXED);
    out->reserve_failures = __atomic_load_n(&r->reserve_failures, __ATOMIC_RELAXED);
    out->discarded_bytes = __atomic_load_n(&r->discarded, __ATOMIC_RELAXED);
    out->syncs = __atomic_load_n(&r->syncs, __ATOMIC_RELAXED);
    out->sync_ns = __atomic_load_n(&r->sync_ns, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------ crashsim control */

/* pm_crashsim_cut_at -- persists with index >= (calls so far + n) are dropped.
 * A no-op outside PM_CRASHSIM. */
void pm_crashsim_cut_at(pm_region *r, uint64_t n)
{
    if (r->mode != PM_CRASHSIM) return;
    uint64_t cut = UINT64_MAX;
    if (n != UINT64_MAX) {
        uint64_t now = __atomic_load_n(&r->persist_calls, __ATOMIC_RELAXED);
        cut = now > UINT64_MAX - n ? UINT64_MAX : now + n;
    }
    __atomic_store_n(&r->cs_cut, cut, __ATOMIC_RELEASE);
}

uint64_t pm_crashsim_persists(pm_region *r) { return __atomic_load_n(&r->persist_calls, __ATOMIC_RELAXED); }
