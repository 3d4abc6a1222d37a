// SPDX-License-Identifier: Apache-2.0
/*
 * test_matrix_pool.c -- the persistent-memory pool (src/matrix/pool.c,
 * pool_pages.c), with rows built on it:
 *   - pool create/reopen, geometry read from the header, the page-size rule,
 *     damaged headers -> TKV_CORRUPTION naming the pool file;
 *   - page alloc/free, rebuild from committed rows (an uncommitted row's
 *     pages are free after reopen), directory listing;
 *   - the sync barriers a row's build and commit pass, and a failed sync;
 *   - recovery's drop of a row the engine does not know;
 *   - the prefault of the pages a next row would get, and the zeroing of
 *     pages past the high-water mark that never costs data; an idle trim
 *     right after the request does not cancel it.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "io/io.h"
#include "matrix/pool.h"
#include "matrix/rowtable.h"
#include "matrixutil.h"
#include "testutil.h"
#include "util/checksum.h"
#include "util/status.h"

/* prefault_ahead_case -- the pool asks its region to keep resident
 * the pages a next row would get: `ahead` bytes (or the last allocation's
 * size, if larger) past the highest page handed out. Where the pool syncs
 * (PM_EMULATED) those pages are made clean and readable, no zeros written
 * (a sync would write them); else (PM_VOLATILE) writable. */
static void prefault_ahead_case(pm_mode mode)
{
    fixture f = fx_new("pool-prefault");
    pool_options o = {.page_size = 64u << 10, .dir_slots = 4};
    pool *p = open_pool(f.path, 16u << 20, mode, &o);
    const int writable = mode != PM_EMULATED;
    pm_region *reg = pool_region(p);
    uint64_t ps = 64u << 10;
    pm_stats st;
    usleep(20000);
    pm_get_stats(reg, &st);
    assert_int_equal(st.prefault_bytes, 0); /* nothing asked for yet */

    pool_prefault_ahead(p, 3 * ps - 100); /* rounds up to 3 pages */
    uint32_t pg[8];
    /* wait_end -- the counter reaches the expected end, and stays there */
#define WAIT_END(want)                                                                                                 \
    do {                                                                                                               \
        double t0_ = tu_now_ms();                                                                                      \
        do {                                                                                                           \
            pm_get_stats(reg, &st);                                                                                    \
        } while (st.prefault_bytes < (want) && tu_now_ms() - t0_ < 10000 && usleep(1000) == 0);                        \
        if (st.prefault_bytes == 0) { /* no MADV_POPULATE_READ (kernel < 5.14) */                                      \
            pool_close(p);                                                                                             \
            fx_free(&f);                                                                                               \
            skip();                                                                                                    \
        }                                                                                                              \
        usleep(20000);                                                                                                 \
        pm_get_stats(reg, &st);                                                                                        \
        assert_int_equal(st.prefault_bytes, (want));                                                                   \
        assert_int_equal(st.prefault_write_bytes, writable ? (want) : 0); /* writable: a store takes no fault */       \
        if (!writable) assert_int_equal(st.prefault_zero_bytes, 0);                                                    \
    } while (0)
    WAIT_END(3 * ps);                                /* from the first page: the header area stays sparse */
    assert_int_equal(pool_alloc_pages(p, 2, pg), 0); /* pages 0, 1: high water 2, window 3 */
    WAIT_END(5 * ps);
    assert_int_equal(pool_alloc_pages(p, 5, pg), 0); /* pages 2..6: window = the last allocation, 5 */
    WAIT_END(12 * ps);
    pool_free_page(p, 0);
    assert_int_equal(pool_sync(p), 0);           /* the free waits in limbo for a sync (pool.h invariant 8) */
    assert_int_equal(pool_alloc_page(p, pg), 0); /* reuses page 0: below the high-water mark */
    assert_int_equal(pg[0], 0);
    usleep(20000);
    pm_get_stats(reg, &st);
    assert_int_equal(st.prefault_bytes, 12 * ps);
#undef WAIT_END
    /* writable, the prefault populated pages 7..11 with their blocks
     * reserved by the file system; the close punches them, as every free
     * page, rather than write them back: what stays is pages 0..6 and the
     * header. Clean, it reserved nothing. */
    struct stat sb;
    assert_int_equal(stat(f.path, &sb), 0);
    assert_true((uint64_t)sb.st_blocks * 512 >= (writable ? 12 : 7) * ps);
    assert_int_equal(pool_close(p), 0);
    assert_int_equal(stat(f.path, &sb), 0);
    print_message("pool file after close: %llu bytes allocated\n", (unsigned long long)sb.st_blocks * 512);
    assert_true((uint64_t)sb.st_blocks * 512 >= 7 * ps);
    assert_true((uint64_t)sb.st_blocks * 512 <= 7 * ps + 64 * 1024);
    fx_free(&f);
}

/* prefault_settle -- waits until the region's prefault counter stops moving
 * (50 ms without change, 10 s at most) and returns its stats. */
static pm_stats prefault_settle(pm_region *reg)
{
    pm_stats st;
    uint64_t last = UINT64_MAX;
    double t0 = tu_now_ms();
    for (int still = 0; still < 25 && tu_now_ms() - t0 < 10000; usleep(2000)) {
        pm_get_stats(reg, &st);
        still = st.prefault_bytes == last ? still + 1 : 0;
        last = st.prefault_bytes;
    }
    pm_get_stats(reg, &st);
    return st;
}

/* sync_fault -- the I/O layer's fault hook: fails the pool's fdatasync
 * (IO_OP_SYNC on a *.pmem path) while g_sync_fail is set. */
static int g_sync_fail;

static int sync_fault(io_op op, const char *path, size_t len, void *arg)
{
    (void)len;
    (void)arg;
    if (op == IO_OP_SYNC && strstr(path, ".pmem") && __atomic_load_n(&g_sync_fail, __ATOMIC_ACQUIRE)) return EIO;
    return 0;
}

static uint64_t pool_syncs(pool *p)
{
    pm_stats st;
    pm_get_stats(pool_region(p), &st);
    return st.syncs;
}

static void test_pool_geometry(void **state)
{
    (void)state;
    assert_int_equal(pool_default_page_size(16u << 20), 64u << 10);
    assert_int_equal(pool_default_page_size(4u << 20), 64u << 10);
    assert_int_equal(pool_default_page_size(64u << 20), 128u << 10);
    assert_int_equal(pool_default_page_size(100u << 20), 128u << 10); /* 200 KiB rounds down */
    assert_int_equal(pool_default_page_size(1ull << 30), 2u << 20);
    assert_int_equal(pool_default_page_size(64ull << 30), 2u << 20);

    fixture f = fx_new("pool-geom");
    pool *p = NULL;
    int created = 0;
    assert_int_equal(pool_open(f.path, 16u << 20, PM_EMULATED, PM_PROFILE_NONE, NULL, &p, &created), 0);
    assert_true(created);
    pool_stats st;
    pool_get_stats(p, &st);
    assert_int_equal(st.page_size, 64u << 10);
    assert_int_equal(st.dir_slots, POOL_DEFAULT_DIR_SLOTS);
    assert_int_equal(st.pages_free, st.pages_total);
    assert_int_equal(st.rows, 0);
    assert_int_equal(st.pages_total,
                     ((16u << 20) - (64u << 10)) / (64u << 10)); /* header + 8 KiB directory, to a page */
    uint8_t uuid[16];
    memcpy(uuid, pool_uuid(p), 16);
    pool_close(p);

    /* reopen with other options and size 0: geometry comes from the header */
    pool_options o = {.page_size = 4096, .dir_slots = 7};
    assert_int_equal(pool_open(f.path, 0, PM_EMULATED, PM_PROFILE_NONE, &o, &p, &created), 0);
    assert_false(created);
    pool_get_stats(p, &st);
    assert_int_equal(st.page_size, 64u << 10);
    assert_int_equal(st.dir_slots, POOL_DEFAULT_DIR_SLOTS);
    assert_memory_equal(pool_uuid(p), uuid, 16);
    pool_close(p);
    /* a size that differs from the file's */
    assert_int_equal(pool_open(f.path, 32u << 20, PM_EMULATED, PM_PROFILE_NONE, NULL, &p, NULL), TKV_INVALID);
    assert_null(p);
    fx_free(&f);

    /* explicit geometry at creation */
    f = fx_new("pool-geom2");
    assert_int_equal(pool_open(f.path, 1u << 20, PM_EMULATED, PM_PROFILE_NONE, &o, &p, NULL), 0);
    pool_get_stats(p, &st);
    assert_int_equal(st.page_size, 4096);
    assert_int_equal(st.dir_slots, 7);
    assert_int_equal(pool_page_shift(p), 12);
    pool_close(p);
    fx_free(&f);

    /* bad options at creation */
    f = fx_new("pool-geom3");
    pool_options bad = {.page_size = 3000};
    assert_int_equal(pool_open(f.path, 1u << 20, PM_EMULATED, PM_PROFILE_NONE, &bad, &p, NULL), TKV_INVALID);
    unlink(f.path);
    pool_options toomany = {.page_size = 4096};
    assert_int_equal(pool_open(f.path, 8u << 20, PM_EMULATED, PM_PROFILE_NONE, &toomany, &p, NULL), TKV_INVALID);
    assert_non_null(strstr(tkv_errmsg(), f.path));
    fx_free(&f);
}

static void test_pool_corrupt_header(void **state)
{
    (void)state;
    fixture f = fx_new("pool-corrupt");
    pool *p = open_pool(f.path, 4u << 20, PM_EMULATED, NULL);
    pool_close(p);
    int fd = open(f.path, O_RDWR);
    assert_true(fd >= 0);
    uint8_t hdr[4096], save[4096];
    assert_int_equal(pread(fd, save, sizeof save, 0), (ssize_t)sizeof save);

    /* a flipped byte anywhere in the checksummed fields */
    static const size_t offs[] = {0, 9, 17, 25, 29, 33, 41, 49, 60, 73};
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
        memcpy(hdr, save, sizeof hdr);
        hdr[offs[i]] ^= 0x04;
        assert_int_equal(pwrite(fd, hdr, sizeof hdr, 0), (ssize_t)sizeof hdr);
        p = NULL;
        expect_corruption(pool_open(f.path, 0, PM_EMULATED, PM_PROFILE_NONE, NULL, &p, NULL), f.path, "flipped header");
        assert_null(p);
    }
    /* checksum-valid but impossible geometry: page count beyond the file */
    memcpy(hdr, save, sizeof hdr);
    enc_u32(hdr + 28, dec_u32(hdr + 28) + 1);
    enc_u32(hdr + 72, tkv_checksum(hdr, 72));
    assert_int_equal(pwrite(fd, hdr, sizeof hdr, 0), (ssize_t)sizeof hdr);
    expect_corruption(pool_open(f.path, 0, PM_EMULATED, PM_PROFILE_NONE, NULL, &p, NULL), "page count", "geometry");
    /* checksum-valid, page size not a power of two */
    memcpy(hdr, save, sizeof hdr);
    enc_u32(hdr + 24, 65536 + 4096);
    enc_u32(hdr + 72, tkv_checksum(hdr, 72));
    assert_int_equal(pwrite(fd, hdr, sizeof hdr, 0), (ssize_t)sizeof hdr);
    expect_corruption(pool_open(f.path, 0, PM_EMULATED, PM_PROFILE_NONE, NULL, &p, NULL), "page size", "page size");
    /* not a pool at all */
    memset(hdr, 'x', sizeof hdr);
    assert_int_equal(pwrite(fd, hdr, sizeof hdr, 0), (ssize_t)sizeof hdr);
    expect_corruption(pool_open(f.path, 0, PM_EMULATED, PM_PROFILE_NONE, NULL, &p, NULL), "magic", "garbage");
    /* a zeroed header over a directory that names a row: refused, not reformatted */
    memset(hdr, 0, sizeof hdr);
    assert_int_equal(pwrite(fd, hdr, sizeof hdr, 0), (ssize_t)sizeof hdr);
    uint8_t slot0[8], fake[8];
    assert_int_equal(pread(fd, slot0, 8, 4096), 8);
    enc_u64(fake, (UINT64_C(7) << 32) | 1);
    assert_int_equal(pwrite(fd, fake, 8, 4096), 8);
    expect_corruption(pool_open(f.path, 0, PM_EMULATED, PM_PROFILE_NONE, NULL, &p, NULL), "directory is not empty",
                      "zero header over rows");
    assert_null(p);
    assert_int_equal(pwrite(fd, slot0, 8, 4096), 8);
    /* an all-zero header block over an empty directory: a creation cut short -> formatted anew */
    int created = 0;
    assert_int_equal(pool_open(f.path, 0, PM_EMULATED, PM_PROFILE_NONE, NULL, &p, &created), 0);
    assert_true(created);
    pool_close(p);
    close(fd);
    fx_free(&f);
}

static void test_pool_pages(void **state)
{
    (void)state;
    tu_rng rng;
    tu_rng_init(&rng, tu_seed());
    fixture f = fx_new("pool-pages");
    pool_options o = {.page_size = 4096, .dir_slots = 4};
    pool *p = open_pool(f.path, 1u << 20, PM_EMULATED, &o);
    pool_stats st;
    pool_get_stats(p, &st);
    uint32_t total = st.pages_total;

    /* alloc/free accounting, all-or-nothing */
    uint32_t *pg = malloc(total * sizeof *pg);
    assert_non_null(pg);
    assert_int_equal(pool_alloc_pages(p, total, pg), 0);
    for (uint32_t i = 0; i < total; i++) assert_int_equal(pg[i], i); /* lowest first */
    uint32_t one;
    assert_int_equal(pool_alloc_page(p, &one), TKV_NO_SPACE);
    assert_non_null(strstr(tkv_errmsg(), f.path));
    pool_free_page(p, 5);
    pool_free_page(p, 5);          /* double free: ignored */
    pool_free_page(p, total + 10); /* out of range: ignored */
    pool_get_stats(p, &st);
    assert_int_equal(st.pages_free, 1);
    assert_int_equal(pool_alloc_pages(p, 2, pg), TKV_NO_SPACE);
    assert_int_equal(pool_alloc_page(p, &one), 0);
    assert_int_equal(one, 5);
    for (uint32_t i = 0; i < total; i++) pool_free_page(p, i);
    pool_get_stats(p, &st);
    assert_int_equal(st.pages_free, total);
    free(pg);

    /* a committed row and an uncommitted one; reopen: only the committed row's pages are in use */
    uint64_t seq = 0;
    row_data d1 = gen_row(&rng, 300, 5000, &seq, 40, 0), d2 = gen_row(&rng, 300, 5000, &seq, 40, 0);
    rowtable *r1 = build_row(p, 1, &d1, NULL, 1);
    rowtable *r2 = build_row(p, 2, &d2, r1, 0);
    rowtable_props p1, p2;
    rowtable_get_props(r1, &p1);
    rowtable_get_props(r2, &p2);
    assert_true(p1.pages > 2 && p2.pages > 2);
    pool_get_stats(p, &st);
    assert_int_equal(st.pages_free, total - p1.pages - p2.pages);
    assert_int_equal(st.rows, 1);
    rowtable_close(r1);
    rowtable_close(r2); /* left uncommitted, as a crash would */
    pool_close(p);
    p = open_pool(f.path, 0, PM_EMULATED, NULL);
    pool_get_stats(p, &st);
    assert_int_equal(st.pages_free, total - p1.pages);
    assert_int_equal(st.rows, 1);
    check_accounting(p, "after reopen");
    pool_row_id *rows;
    size_t n;
    assert_int_equal(pool_rows(p, &rows, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(rows[0].row_id, 1);
    assert_int_equal(rows[0].npages, p1.pages);
    assert_int_equal(rows[0].pages_released, 0);
    free(rows);

    /* the directory: fill it (4 slots), then one more commit is refused */
    rowtable *rs[4];
    assert_int_equal(open_all(p, rs, 4), 1);
    for (uint64_t id = 2; id <= 4; id++) {
        row_data d = gen_row(&rng, 20, 5000, &seq, 10, 0);
        rs[id - 1] = build_row(p, id, &d, NULL, 1);
        free_row(&d);
    }
    row_data d5 = gen_row(&rng, 20, 5000, &seq, 10, 0);
    rowtable *r5 = build_row(p, 5, &d5, NULL, 0);
    assert_int_equal(rowtable_commit(r5), TKV_NO_SPACE);
    assert_int_equal(rowtable_commit(rs[1]), TKV_INVALID); /* already committed */
    rowtable_abandon(r5);
    /* drop one: its slot and pages come back */
    assert_int_equal(rowtable_drop(rs[2]), 0);
    pool_get_stats(p, &st);
    assert_int_equal(st.rows, 3);
    check_accounting(p, "after drop");
    for (int i = 0; i < 4; i++)
        if (i != 2) rowtable_close(rs[i]);
    pool_close(p);
    p = open_pool(f.path, 0, PM_EMULATED, NULL);
    check_accounting(p, "after drop and reopen");
    pool_get_stats(p, &st);
    assert_int_equal(st.rows, 3);
    pool_close(p);

    free_row(&d1);
    free_row(&d2);
    free_row(&d5);
    fx_free(&f);
}

/* pool.h invariant 8 on a file system: emulated pmem syncs a row's pages
 * before its slot and the slot after, a given-back page waits in limbo
 * (not handed out, not punched) until a sync that began after it, an
 * allocation that needs limbo's pages syncs for them, and a row whose pages
 * cannot be synced is never committed. pmem_mode=volatile does none of it. */
static void test_pool_sync_barriers(void **state)
{
    (void)state;
    tu_rng rng;
    tu_rng_init(&rng, tu_seed());
    fixture f = fx_new("pool-sync");
    pool_options o = {.page_size = 4096, .dir_slots = 4};

    /* volatile: no sync ever, a freed page is reused at once */
    pool *p = open_pool(f.path, 1u << 20, PM_VOLATILE, &o);
    assert_int_equal(pm_needs_sync(pool_region(p)), 0);
    uint32_t a, b;
    assert_int_equal(pool_alloc_page(p, &a), 0);
    pool_free_page(p, a);
    assert_int_equal(pool_alloc_page(p, &b), 0);
    assert_int_equal(b, a);
    assert_int_equal(pool_syncs(p), 0);
    pool_close(p);
    unlink(f.path);

    /* emulated: creation is synced before pool_open returns */
    p = open_pool(f.path, 1u << 20, PM_EMULATED, &o);
    assert_int_equal(pm_needs_sync(pool_region(p)), 1);
    assert_true(pool_syncs(p) >= 1);
    pool_stats st;
    pool_get_stats(p, &st);
    uint32_t total = st.pages_total;
    uint32_t *pg = malloc(total * sizeof *pg);
    assert_non_null(pg);

    /* limbo: a freed page is not handed out before a sync while others are free */
    assert_int_equal(pool_alloc_pages(p, 4, pg), 0);
    uint64_t s0 = pool_syncs(p);
    pool_free_page(p, pg[1]);
    pool_get_stats(p, &st);
    assert_int_equal(st.pages_limbo, 1);
    assert_int_equal(st.pages_free, total - 3); /* counted as free: the next sync frees it */
    assert_int_equal(pool_alloc_page(p, &b), 0);
    assert_true(b != pg[1]);
    assert_int_equal(pool_syncs(p), s0); /* there were free pages: no sync */
    assert_int_equal(pool_sync(p), 0);
    pool_get_stats(p, &st);
    assert_int_equal(st.pages_limbo, 0);
    assert_int_equal(pool_alloc_page(p, &b), 0);
    assert_int_equal(b, pg[1]); /* lowest free first: the synced page */

    /* an allocation that needs limbo's pages syncs for them */
    pool_get_stats(p, &st);
    uint32_t left = st.pages_free;
    assert_int_equal(pool_alloc_pages(p, left, pg + 4), 0);
    pool_free_page(p, pg[0]);
    pool_free_page(p, pg[2]);
    s0 = pool_syncs(p);
    assert_int_equal(pool_alloc_pages(p, 2, pg), 0);
    assert_int_equal(pool_syncs(p), s0 + 1);
    pool_get_stats(p, &st);
    assert_int_equal(st.pages_free, 0);
    for (uint32_t i = 0; i < total; i++) pool_free_page(p, i);
    assert_int_equal(pool_sync(p), 0);

    /* a commit syncs the row before its slot and the slot after it */
    uint64_t seq = 0;
    row_data d = gen_row(&rng, 200, 5000, &seq, 40, 0);
    s0 = pool_syncs(p);
    rowtable *r = build_row(p, 1, &d, NULL, 1);
    assert_int_equal(pool_syncs(p), s0 + 2);
    rowtable_close(r);

    /* a row whose pages cannot be synced is not committed, and the error sticks */
    row_data d2 = gen_row(&rng, 200, 5000, &seq, 40, 0);
    tkv_it *it = iter_of(&d2);
    r = NULL;
    assert_int_equal(rowtable_build(p, 2, it, NULL, &r), 0);
    it_destroy(it);
    __atomic_store_n(&g_sync_fail, 1, __ATOMIC_RELEASE);
    io_set_fault_hook(sync_fault, NULL);
    assert_int_equal(rowtable_commit(r), TKV_IO_ERROR);
    assert_non_null(strstr(tkv_errmsg(), "fdatasync"));
    io_set_fault_hook(NULL, NULL);
    __atomic_store_n(&g_sync_fail, 0, __ATOMIC_RELEASE);
    pool_get_stats(p, &st);
    assert_int_equal(st.rows, 1); /* only row 1 */
    assert_int_equal(pool_error(p), TKV_IO_ERROR);
    assert_int_equal(pool_sync(p), TKV_IO_ERROR); /* sticky: nothing is called durable after a failed sync */
    rowtable_abandon(r);
    assert_int_equal(pool_close(p), TKV_IO_ERROR);
    p = open_pool(f.path, 0, PM_EMULATED, NULL);
    pool_get_stats(p, &st);
    assert_int_equal(st.rows, 1);
    pool_close(p);
    free(pg);
    free_row(&d);
    free_row(&d2);
    fx_free(&f);
}

/* test_pool_drop_row -- recovery's drop of a row the engine does not know:
 * slot cleared, every unreleased page free, the other rows untouched, and
 * the same after a reopen. */
static void test_pool_drop_row(void **state)
{
    (void)state;
    tu_rng rng;
    tu_rng_init(&rng, tu_seed() + 11);
    fixture f = fx_new("rows-drop");
    pool_options o = {.page_size = 4096, .dir_slots = 0};
    pool *p = open_pool(f.path, 1u << 20, PM_EMULATED, &o);
    uint64_t seq = 0;
    row_data d1 = gen_row(&rng, 800, 3000, &seq, 100, 0), d2 = gen_row(&rng, 800, 3000, &seq, 100, 0);
    rowtable *r1 = build_row(p, 1, &d1, NULL, 1), *r2 = build_row(p, 2, &d2, r1, 1);
    pool_stats before;
    pool_get_stats(p, &before);
    /* release part of row 1 first: its released pages must not be freed twice */
    assert_int_equal(rowtable_set_cursor(r1, key_boundary(&d1, d1.n / 2)), 0);
    assert_int_equal(rowtable_release_dead_pages(r1, NULL), 0);
    rowtable_props pr;
    rowtable_get_props(r1, &pr);
    assert_true(pr.pages_released > 0);
    uint32_t slot1 = pr.slot, owned1 = pr.pages - pr.pages_released;
    rowtable_close(r1); /* the engine forgot it */
    assert_int_equal(pool_drop_row(p, slot1), 0);
    pool_stats after;
    pool_get_stats(p, &after);
    assert_int_equal(after.rows, before.rows - 1);
    assert_int_equal(after.pages_free, before.pages_free + pr.pages_released + owned1);
    check_accounting(p, "after drop");
    assert_int_equal(pool_drop_row(p, slot1), TKV_INVALID); /* empty slot */
    rowtable_close(r2);
    pool_close(p);
    p = open_pool(f.path, 0, PM_EMULATED, NULL);
    rowtable *rt[4];
    assert_int_equal(open_all(p, rt, 4), 1);
    assert_int_equal(rowtable_id(rt[0]), 2);
    check_iter(&rng, rt[0], &d2, 0, "survivor");
    check_accounting(p, "reopened");
    rowtable_close(rt[0]);
    pool_close(p);
    free_row(&d1);
    free_row(&d2);
    fx_free(&f);
}

static void test_pool_prefault_ahead(void **state)
{
    (void)state;
    prefault_ahead_case(PM_VOLATILE);
    prefault_ahead_case(PM_EMULATED);
}

/* test_pool_trim_after_ahead -- asking for pages ahead counts as use for
 * the idle trim: a trim right after the open (the engine's idle column
 * thread makes one) does not cancel the prefault of the first row's
 * pages, which then all become resident before any page is handed out;
 * once the pool has been idle long enough, the trim runs. */
static void test_pool_trim_after_ahead(void **state)
{
    (void)state;
    fixture f = fx_new("pool-trim-ahead");
    if (fx_tmpfs(&f)) { /* tmpfs: no prefault thread */
        fx_free(&f);
        skip();
    }
    const uint64_t ps = 64u << 10;
    pool_options o = {.page_size = ps, .dir_slots = 4};
    pool *p = open_pool(f.path, 16u << 20, PM_EMULATED, &o);
    pm_region *reg = pool_region(p);
    assert_int_equal(pool_trim(p, 1), 0); /* nothing asked for, nothing to punch: an idle pool trims */
    pool_prefault_ahead(p, 64 * ps);
    assert_int_equal(pool_trim(p, 60000000), UINT64_MAX); /* busy: the request stands */
    pm_stats st = prefault_settle(reg);
    if (st.prefault_bytes == 0) { /* no MADV_POPULATE_READ (kernel < 5.14) */
        pool_close(p);
        fx_free(&f);
        skip();
    }
    assert_int_equal(st.prefault_bytes, 64 * ps); /* every page of the window, none cancelled */
    assert_int_equal(st.prefault_write_bytes, 0); /* clean: a sync writes none of them */
    unsigned char vec[64 * (64u << 10) / 4096];
    assert_int_equal(mincore(pool_page_addr(p, 0), 64 * ps, vec), 0);
    for (size_t i = 0; i < sizeof vec; i++)
        if (!(vec[i] & 1)) fail_msg("page-cache page %zu of the window is not resident", i);
    usleep(5000);
    assert_true(pool_trim(p, 1000) != UINT64_MAX); /* idle for 1 ms: the trim runs */
    assert_int_equal(pool_close(p), 0);
    fx_free(&f);
}

/* test_pool_prefault_zero -- past the high-water mark the prefault thread
 * creates pages by writing zeros (invariant 7; in a pool that does not
 * sync, PM_VOLATILE), and that never costs data:
 * pages handed out one by one and filled at once, while the thread writes
 * zeros ahead of (and among) them, keep what was stored; after a reopen the
 * pages of a committed row, below the high-water mark, are populated but not
 * zeroed (the row reads back intact) while the pages past it are. */
static void test_pool_prefault_zero(void **state)
{
    (void)state;
    tu_rng rng;
    tu_rng_init(&rng, tu_seed());
    fixture f = fx_new("pool-prefault-zero");
    if (fx_tmpfs(&f)) { /* tmpfs: no prefault thread */
        fx_free(&f);
        skip();
    }
    const uint64_t ps = 64u << 10;
    pool_options o = {.page_size = ps, .dir_slots = 4};
    pool *p = open_pool(f.path, 48u << 20, PM_VOLATILE, &o);
    pm_region *reg = pool_region(p);
    pool_prefault_ahead(p, 8u << 20);
    uint32_t got[400];
    for (uint32_t i = 0; i < 400; i++) {
        assert_int_equal(pool_alloc_page(p, &got[i]), 0);
        memset(pool_page_addr(p, got[i]), (int)(i % 200 + 1), ps);
    }
    pm_stats st = prefault_settle(reg);
    if (st.prefault_bytes == 0) { /* no MADV_POPULATE_READ (kernel < 5.14) */
        pool_close(p);
        fx_free(&f);
        skip();
    }
    print_message("fill: %llu bytes prefaulted, %llu of them created by writing zeros\n",
                  (unsigned long long)st.prefault_bytes, (unsigned long long)st.prefault_zero_bytes);
    assert_true(st.prefault_zero_bytes > 0);
    for (uint32_t i = 0; i < 400; i++) {
        const uint8_t *a = pool_page_addr(p, got[i]);
        for (uint64_t k = 0; k < ps; k += 512)
            if (a[k] != (uint8_t)(i % 200 + 1))
                fail_msg("page %u (handed out %u-th) lost byte %llu", got[i], i, (unsigned long long)k);
        pool_free_page(p, got[i]);
    }

    /* a committed row, reopened: below the high-water mark nothing is touched */
    uint64_t seq = 0;
    row_data d = gen_row(&rng, 2000, 1u << 30, &seq, 1500, 0); /* ~1.5 MB: ~24 pages */
    rowtable *r = build_row(p, 1, &d, NULL, 1);
    rowtable_close(r);
    pool_close(p);
    p = open_pool(f.path, 0, PM_VOLATILE, NULL);
    reg = pool_region(p);
    pool_prefault_ahead(p, 4u << 20);
    st = prefault_settle(reg);
    pool_stats ps_;
    pool_get_stats(p, &ps_);
    print_message("reopen: %llu bytes prefaulted, %llu zero-written, %u pages in use\n",
                  (unsigned long long)st.prefault_bytes, (unsigned long long)st.prefault_zero_bytes,
                  ps_.pages_total - ps_.pages_free);
    /* only past the high-water mark: the row's pages are neither zeroed nor
     * populated (which would read them 4 KiB at a time and dirty them) */
    assert_true(st.prefault_zero_bytes > 0);
    assert_int_equal(st.prefault_bytes, st.prefault_zero_bytes);
    assert_true(st.prefault_bytes <= ((4u << 20) + ps - 1) / ps * ps);
    rowtable *rs[1];
    assert_int_equal(open_all(p, rs, 1), 1);
    check_iter(&rng, rs[0], &d, 0, "after a reopen with zero-writing prefault");
    rowtable_close(rs[0]);
    pool_close(p);
    free_row(&d);
    fx_free(&f);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pool_geometry),      cmocka_unit_test(test_pool_corrupt_header),
        cmocka_unit_test(test_pool_pages),         cmocka_unit_test(test_pool_sync_barriers),
        cmocka_unit_test(test_pool_drop_row),      cmocka_unit_test(test_pool_prefault_ahead),
        cmocka_unit_test(test_pool_prefault_zero), cmocka_unit_test(test_pool_trim_after_ahead),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
