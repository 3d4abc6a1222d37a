// SPDX-License-Identifier: Apache-2.0
/*
 * test_footprint.c -- the pmem pool's disk footprint follows its data
 * (issue 23): on a file system the pool file is sparse, a page's blocks are
 * allocated when a row takes it and given back when it is freed, and a full
 * file system is TKV_NO_SPACE, never a SIGBUS.
 *
 *  pool_sparse            a new 256 MiB pool takes a few KiB and the one
 *                         row's worth the prefault thread populated ahead
 *                         (writable: reserved); rows take what
 *                         they use (tkv.pmem "space:" against the file's
 *                         st_blocks); a drained pool gives it back; a pool
 *                         allocated in full (an older build's) shrinks at open
 *  pool_enospc            the pool on a small loop-mounted ext4 (tmpfs if no
 *                         loop device), larger than the file system: the
 *                         flush meets ENOSPC, waits for columns to drain rows
 *                         (their pages' blocks go back), and every write
 *                         lands; no SIGBUS, no error
 *  pool_disk_full         the same file system filled up by another file: no
 *                         row can be written and none can be drained --
 *                         a TKV_NO_SPACE background error (tkv_put, tkv_close),
 *                         nothing lost after space is freed and the database
 *                         reopened
 *
 * The two mounted cases need root and mount(8); without them they are
 * skipped with a message. TKV_TEST_SMALL_FS=tmpfs makes them use tmpfs. Both need a file system with hole punching (the
 * sparse case skips too without it).
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
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

#define MiB (1024ull * 1024ull)

/* ---------------------------------------------------------------- helpers */

static uint64_t file_blocks_bytes(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) fail_msg("stat %s: %s", path, strerror(errno));
    return (uint64_t)st.st_blocks * 512u;
}

/* line_u64 -- the number after `field` on the line of `name` starting with `line`. */
static uint64_t line_u64(tkv_db *db, const char *name, const char *line, const char *field)
{
    char *p = tkv_property(db, name);
    if (!p) fail_msg("tkv_property %s: %s", name, tkv_errmsg());
    const char *l = strstr(p, line);
    if (!l) fail_msg("property %s has no line \"%s\":\n%s", name, line, p);
    const char *end = strchr(l, '\n');
    const char *at = strstr(l, field);
    if (!at || (end && at > end)) fail_msg("line \"%s\" of %s has no \"%s\":\n%s", line, name, field, p);
    unsigned long long v = strtoull(at + strlen(field), NULL, 10);
    tkv_free(p);
    return v;
}

static int prop_has(tkv_db *db, const char *name, const char *needle)
{
    char *p = tkv_property(db, name);
    if (!p) fail_msg("tkv_property %s: %s", name, tkv_errmsg());
    int has = strstr(p, needle) != NULL;
    tkv_free(p);
    return has;
}

static int put_model(tkv_db *db, tu_model *m, uint64_t i, uint64_t r)
{
    char k[32], v[1100];
    int kl = snprintf(k, sizeof k, "key%08llu", (unsigned long long)i);
    int vl = snprintf(v, sizeof v, "v%llu-%llu-", (unsigned long long)i, (unsigned long long)r);
    tu_rng g;
    tu_rng_init(&g, i * 1000003u + r);
    while (vl < 1000) v[vl++] = (char)('a' + tu_rng_below(&g, 26)); /* barely compressible */
    return tu_put_model(db, m, k, (size_t)kl, v, (size_t)vl, 0);
}

/* punch_works -- 1 if the file system of dir gives a punched hole's blocks back. */
static int punch_works(const char *dir)
{
    char *p = tu_path(dir, "punch-probe");
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
    int ok = fd >= 0 && fallocate(fd, 0, 0, 1 << 20) == 0 &&
             fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 1 << 20) == 0;
    if (fd >= 0) close(fd);
    ok = ok && file_blocks_bytes(p) < (1u << 20);
    unlink(p);
    free(p);
    return ok;
}

/* wait_drained -- after tkv_compact_range, the column thread drops the last
 * rows once their job's version is gone: poll until no page is used (10 s). */
static void wait_drained(tkv_db *db)
{
    for (int i = 0; i < 1000 && tu_prop_u64(db, "tkv.matrix", "pages: used=") != 0; i++) usleep(10000);
    assert_int_equal(tu_prop_u64(db, "tkv.matrix", "pages: used="), 0);
}

/* wait_space_back -- after a drain every page is free, and the pool file
 * must shrink back to its header: at once, or once the idle column thread's
 * pool_trim has punched the free pages that a page-cache folio shared with
 * a page in use gave blocks again (5 s). */
static void wait_space_back(const char *pool, const char *what)
{
    uint64_t b = file_blocks_bytes(pool);
    for (int i = 0; i < 500 && b > 1 * MiB; i++) {
        usleep(10000);
        b = file_blocks_bytes(pool);
    }
    if (b > 1 * MiB) fail_msg("%s: the drained pool %s still takes %llu bytes", what, pool, (unsigned long long)b);
}

/* wait_prefault -- waits (5 s at most) until the prefault thread has
 * populated `want` bytes writable, or settled short of it (no change for
 * 100 ms); returns the bytes populated writable. */
static uint64_t wait_prefault(tkv_db *db, uint64_t want)
{
    uint64_t last = UINT64_MAX, pf = 0;
    for (int i = 0, still = 0; i < 500 && still < 10; i++) {
        pf = line_u64(db, "tkv.pmem", "prefault:", "writable=");
        if (pf >= want) break;
        still = pf == last ? still + 1 : 0;
        last = pf;
        usleep(10000);
    }
    return pf;
}

/* ---------------------------------------------------------------- sparse */

static void pool_sparse(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("fp-sparse");
    if (!punch_works(dir)) {
        print_message("skipped: the file system of %s does not punch holes\n", dir);
        tu_tmpdir_free(dir);
        skip();
    }
    char *pool = tu_path(dir, "matrix.pmem");
    tkv_options *o = tu_small_options();
    assert_int_equal(tkv_options_set(o, "l0", "matrix"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "pmem_size", "256M"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "memtable_size", "4M"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "matrix_trigger", "90"), TKV_OK); /* rows stay until drained by hand */
    tkv_db *db = tu_open_ok(dir, o);
    /* the prefault thread populates the first row's pages writable
     * (MADV_POPULATE_WRITE), which reserves their blocks: one memtable's
     * worth (4 MiB) past the header, and nothing else */
    uint64_t pf = wait_prefault(db, 4 * MiB);
    uint64_t alloc0 = line_u64(db, "tkv.pmem", "space:", "allocated="),
             used0 = line_u64(db, "tkv.pmem", "space:", "used=");
    print_message("new 256 MiB pool: allocated=%llu used=%llu (file: %llu), prefault=%llu writable\n",
                  (unsigned long long)alloc0, (unsigned long long)used0, (unsigned long long)file_blocks_bytes(pool),
                  (unsigned long long)pf);
    assert_true(pf <= 4 * MiB);
    assert_true(alloc0 <= 1 * MiB + pf);
    assert_true(file_blocks_bytes(pool) <= 1 * MiB + pf);
    assert_true(used0 > 0 && used0 <= alloc0);

    tu_model *m = tu_model_new();
    for (uint64_t i = 0; i < 20000; i++) assert_int_equal(put_model(db, m, i, 0), TKV_OK); /* ~20 MB */
    assert_int_equal(tkv_flush(db), TKV_OK);
    uint64_t alloc1 = line_u64(db, "tkv.pmem", "space:", "allocated="),
             used1 = line_u64(db, "tkv.pmem", "space:", "used=");
    print_message("after 20 MB of rows: allocated=%llu used=%llu (file: %llu)\n", (unsigned long long)alloc1,
                  (unsigned long long)used1, (unsigned long long)file_blocks_bytes(pool));
    assert_true(used1 >= 16 * MiB);
    assert_true(alloc1 >= used1 - 64 * 1024);         /* the pages in use have their blocks */
    assert_true(alloc1 <= used1 + 1 * MiB + 4 * MiB); /* and nothing much else does (but the prefault's 4 MiB ahead) */
    assert_true(alloc1 < 64 * MiB);

    assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK);
    wait_drained(db);
    wait_space_back(pool, "pool_sparse");
    uint64_t alloc2 = line_u64(db, "tkv.pmem", "space:", "allocated=");
    print_message("drained: allocated=%llu (file: %llu)\n", (unsigned long long)alloc2,
                  (unsigned long long)file_blocks_bytes(pool));
    assert_true(alloc2 <= 1 * MiB);
    tu_check_db(db, NULL, m, "after the drain");
    tu_close_ok(db);

    /* a pool allocated in full (as libpmem created them before): open gives the free pages back */
    int fd = open(pool, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(posix_fallocate(fd, 0, 256 * MiB), 0);
    close(fd);
    assert_true(file_blocks_bytes(pool) >= 256 * MiB);
    db = tu_open_ok(dir, o);
    pf = wait_prefault(db, 4 * MiB);
    print_message("a fully allocated pool, reopened: %llu bytes allocated (prefault %llu writable)\n",
                  (unsigned long long)file_blocks_bytes(pool), (unsigned long long)pf);
    assert_true(pf <= 4 * MiB);
    assert_true(file_blocks_bytes(pool) <= 1 * MiB + pf);
    tu_check_db(db, NULL, m, "reopened");
    tu_close_ok(db);
    tkv_options_free(o);
    tu_model_free(m);
    free(pool);
    tu_tmpdir_free(dir);
}

/* ---------------------------------------------------------------- a small file system */

typedef struct small_fs {
    char *root;  /* a temporary directory holding the two below */
    char *mnt;   /* mount point */
    char *image; /* ext4 image file, or NULL for tmpfs */
    const char *kind;
    int mounted;
    char why[512]; /* why not, when not mounted */
} small_fs;

/* small_fs_mount -- a file system of `mb` MiB: ext4 on a loop device, or
 * tmpfs if that fails. 0, or -1 with why[] (then nothing is mounted; call
 * small_fs_unmount all the same). */
static int small_fs_mount(small_fs *fs, unsigned mb, char *why, size_t whylen)
{
    fs->root = tu_tmpdir("fp-fs");
    fs->mnt = tu_path(fs->root, "mnt");
    fs->image = NULL;
    assert_int_equal(mkdir(fs->mnt, 0755), 0);
    if (geteuid() != 0) {
        snprintf(why, whylen, "not root: cannot mount a small file system");
        return -1;
    }
    char cmd[1024];
    fs->image = tu_path(fs->root, "image");
    snprintf(cmd, sizeof cmd,
             "truncate -s %uM %s && mkfs.ext4 -q -F -m 0 %s >/dev/null 2>&1 && mount -o loop %s %s 2>/dev/null", mb,
             fs->image, fs->image, fs->image, fs->mnt);
    const char *want = getenv("TKV_TEST_SMALL_FS");
    if ((!want || strcmp(want, "tmpfs") != 0) && system(cmd) == 0) {
        fs->kind = "ext4 on a loop device";
        return 0;
    }
    char opt[64];
    snprintf(opt, sizeof opt, "size=%um", mb);
    if (mount("tmpfs", fs->mnt, "tmpfs", 0, opt) == 0) {
        fs->kind = "tmpfs";
        return 0;
    }
    snprintf(why, whylen, "cannot mount a %u MiB ext4 (loop) or tmpfs at %s: %s", mb, fs->mnt, strerror(errno));
    return -1;
}

static void small_fs_unmount(small_fs *fs, int mounted)
{
    if (mounted && umount(fs->mnt) != 0) umount2(fs->mnt, MNT_DETACH); /* busy after a failed test: lazily */
    free(fs->image);
    free(fs->mnt);
    tu_tmpdir_free(fs->root); /* the image too */
}

/* fs_setup / fs_teardown -- cmocka fixtures: a 24 MiB file system for the
 * test (state), unmounted afterwards also when the test failed. */
static int fs_setup(void **state)
{
    small_fs *fs = calloc(1, sizeof *fs);
    assert_non_null(fs);
    fs->mounted = small_fs_mount(fs, 24, fs->why, sizeof fs->why) == 0;
    *state = fs;
    return 0;
}

static int fs_teardown(void **state)
{
    small_fs *fs = *state;
    small_fs_unmount(fs, fs->mounted);
    free(fs);
    return 0;
}

static uint64_t fs_free_bytes(const char *path)
{
    struct statvfs sv;
    assert_int_equal(statvfs(path, &sv), 0);
    return (uint64_t)sv.f_bavail * sv.f_frsize;
}

/* enospc_options -- a pool of pmem_size at pool_path (on the small file
 * system), 1 MiB memtables, columns only when the flush waits for room. */
static tkv_options *enospc_options(const char *pool_path, const char *pmem_size)
{
    tkv_options *o = tu_small_options();
    assert_int_equal(tkv_options_set(o, "l0", "matrix"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "pmem_path", pool_path), TKV_OK);
    assert_int_equal(tkv_options_set(o, "pmem_size", pmem_size), TKV_OK);
    assert_int_equal(tkv_options_set(o, "memtable_size", "1M"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "matrix_trigger", "95"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "column_bytes", "2M"), TKV_OK);
    return o;
}

/* enospc_run -- ~40 MB of rows through a pool of pmem_size on a file
 * system with ~20 MB free: 96M has 128 KiB pages, whose mapping keeps 4 KiB
 * page-cache folios; 1G has 2 MiB pages, mapped with readahead and large
 * folios (emul/pmem_space.c). */
static void enospc_run(small_fs *fs, const char *pmem_size)
{
    char *dir = tu_tmpdir("fp-enospc"), *pool = tu_path(fs->mnt, "pool.pmem");
    uint64_t room = fs_free_bytes(fs->mnt);
    tkv_options *o = enospc_options(pool, pmem_size);
    tkv_db *db = tu_open_ok(dir, o);
    tu_model *m = tu_model_new();
    /* ~40 MB of rows into a pool on a file system with ~20 MB free */
    for (uint64_t i = 0; i < 40000; i++) {
        int rc = put_model(db, m, i % 15000, i / 15000);
        if (rc != TKV_OK) fail_msg("put %llu: %s: %s", (unsigned long long)i, tkv_strerror(rc), tkv_errmsg());
    }
    assert_int_equal(tkv_flush(db), TKV_OK);
    uint64_t refusals = line_u64(db, "tkv.pmem", "space:", "no_space="), alloc = file_blocks_bytes(pool);
    print_message("pmem_size=%s on %s, %llu bytes free: the pool's blocks were refused %llu times; %llu flushes "
                  "waited; %llu columns; pool file now %llu bytes on disk\n",
                  pmem_size, fs->kind, (unsigned long long)room, (unsigned long long)refusals,
                  (unsigned long long)line_u64(db, "tkv.matrix", "flush:", "no_space="),
                  (unsigned long long)tu_prop_u64(db, "tkv.matrix", "columns: count="), (unsigned long long)alloc);
    assert_true(refusals >= 1);                                          /* the file system did run out */
    assert_true(line_u64(db, "tkv.matrix", "flush:", "no_space=") >= 1); /* and the flush waited for columns */
    assert_true(alloc <= room);
    assert_true(prop_has(db, "tkv.stats", "background_error: none"));
    tu_check_db(db, NULL, m, "after ENOSPC in the pool");
    assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK);
    wait_drained(db);
    wait_space_back(pool, "pool_enospc"); /* drained: the space is back */
    print_message("drained: %llu bytes on disk (%llu punched again by pool_trim)\n",
                  (unsigned long long)file_blocks_bytes(pool),
                  (unsigned long long)line_u64(db, "tkv.pmem", "space:", "trimmed="));
    tu_close_reopen_check(db, dir, o, m, "reopened");
    assert_int_equal(tkv_destroy(dir), TKV_OK);
    assert_int_equal(access(pool, F_OK), -1);
    tkv_options_free(o);
    tu_model_free(m);
    free(pool);
    tu_tmpdir_free(dir);
}

static void pool_enospc(void **state)
{
    small_fs *fs = *state;
    if (!fs->mounted) {
        print_message("skipped: %s\n", fs->why);
        skip();
    }
    enospc_run(fs, "96M");
    enospc_run(fs, "1G");
}

/* fill_up -- writes a file at path until the file system is full. */
static void fill_up(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    static char buf[1 << 16];
    memset(buf, 'x', sizeof buf);
    while (write(fd, buf, sizeof buf) > 0) {}
    while (write(fd, buf, 512) > 0) {}
    fsync(fd);
    close(fd);
}

static void pool_disk_full(void **state)
{
    small_fs *fs = *state;
    if (!fs->mounted) {
        print_message("skipped: %s\n", fs->why);
        skip();
    }
    char *dir = tu_tmpdir("fp-full"), *pool = tu_path(fs->mnt, "pool.pmem"), *filler = tu_path(fs->mnt, "filler");
    tkv_options *o = enospc_options(pool, "96M");
    tkv_db *db = tu_open_ok(dir, o);
    tu_close_ok(db);
    fill_up(filler);
    db = tu_open_ok(dir, o); /* the pool's header is already allocated: open needs no space */
    tu_model *m = tu_model_new();
    int rc = TKV_OK;
    uint64_t i;
    for (i = 0; i < 20000 && rc == TKV_OK; i++) rc = put_model(db, m, i, 0);
    print_message("disk full: put %llu: %s: %s\n", (unsigned long long)i, tkv_strerror(rc), tkv_errmsg());
    assert_int_equal(rc, TKV_NO_SPACE); /* the first flush could not get blocks, and nothing could be drained */
    assert_non_null(strstr(tkv_errmsg(), strerror(ENOSPC)));
    rc = tkv_close(db);
    assert_int_equal(rc, TKV_NO_SPACE);
    unlink(filler);
    db = tu_open_ok(dir, o); /* with room again: what was acknowledged comes back from the WAL */
    tu_check_db(db, NULL, m, "reopened after the disk was full");
    assert_int_equal(put_model(db, m, 1, 1), TKV_OK);
    assert_int_equal(tkv_flush(db), TKV_OK);
    tu_close_ok(db);
    assert_int_equal(tkv_destroy(dir), TKV_OK);
    tkv_options_free(o);
    tu_model_free(m);
    free(pool);
    free(filler);
    tu_tmpdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pool_sparse),
        cmocka_unit_test_setup_teardown(pool_enospc, fs_setup, fs_teardown),
        cmocka_unit_test_setup_teardown(pool_disk_full, fs_setup, fs_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
