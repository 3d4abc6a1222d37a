// SPDX-License-Identifier: Apache-2.0
/*
 * test_pmem.c -- the persistent-memory device layer (emul/pmem.h).
 *
 * Covers: create / reopen / size rules and error messages; persistence of
 * EMULATED and MSYNC pools across close and reopen; the crash simulation
 * (only persisted 64-byte lines reach the durable image, cuts at the N-th
 * persist, atomic 8-byte commit stores, a cut at every point of a sequence
 * compared with an independent model, and concurrent persists of disjoint
 * bytes sharing lines); the Optane profile's read latency and write bandwidth
 * (lower bounds only: the machine is shared); the counters; the paced
 * write-back of emulated pools (chunks, rate, refusal, close, tmpfs); the
 * prefault thread (the prefix it populates, writable: stores to it take no
 * fault; a start it keeps off; cancel; pages created by writing zeros only
 * past the floor, and never over a range claimed while it runs); pm_willneed
 * of a range longer than the kernel's readahead window reads all of it;
 * pm_write_persist in every mode, and its failure as the sticky error.
 *
 * The crash-test pattern for the modules above (see cs_durable_after): run a
 * workload on a fresh PM_CRASHSIM pool with a cut after k persists, close,
 * and inspect what a reopen sees -- for every k from 0 to the number of
 * persists the workload makes.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "emul/pmem.h"
#include "io/io.h"
#include "testutil.h"
#include "tierkv.h"

#define KiB 1024u
#define MiB (1024u * 1024u)

/* ------------------------------------------------------------------ helpers */

/* open_ok -- pm_open that must succeed. */
static pm_region *open_ok(const char *path, uint64_t size, pm_mode mode, pm_profile prof, int *created)
{
    pm_region *r = NULL;
    int rc = pm_open(path, size, mode, prof, &r, created);
    if (rc != TKV_OK)
        fail_msg("pm_open(%s, %llu, %s): %s: %s", path, (unsigned long long)size, pm_mode_name(mode), tkv_strerror(rc),
                 tkv_errmsg());
    assert_non_null(r);
    return r;
}

/* durable_image -- a malloc'd copy of what a reopen of the pool shows (opened
 * in PM_EMULATED, i.e. the file's bytes). */
static uint8_t *durable_image(const char *path, uint64_t *size)
{
    pm_region *r = open_ok(path, 0, PM_EMULATED, PM_PROFILE_NONE, NULL);
    *size = pm_size(r);
    uint8_t *copy = malloc(*size);
    assert_non_null(copy);
    memcpy(copy, pm_base(r), *size);
    pm_close(r);
    return copy;
}

static int all_equal(const uint8_t *p, size_t n, uint8_t v)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v) return 0;
    return 1;
}

/* cs_workload -- a sequence of writes and persists on a crashsim pool. */
typedef void (*cs_workload)(pm_region *r, void *arg);

/* cs_durable_after -- the crash-test harness: creates a fresh PM_CRASHSIM pool
 * of `size` bytes at path, cuts power after `cut` persists (UINT64_MAX: never),
 * runs the workload, closes the pool (losing everything not persisted) and
 * returns a malloc'd copy of the durable image; *persists gets the number of
 * persist calls the workload made. The pool file is removed. */
static uint8_t *cs_durable_after(const char *path, uint64_t size, uint64_t cut, cs_workload w, void *arg,
                                 uint64_t *persists)
{
    unlink(path);
    int created = 0;
    pm_region *r = open_ok(path, size, PM_CRASHSIM, PM_PROFILE_NONE, &created);
    assert_int_equal(created, 1);
    assert_int_equal(pm_mode_in_use(r), PM_CRASHSIM);
    pm_crashsim_cut_at(r, cut);
    w(r, arg);
    if (persists) *persists = pm_crashsim_persists(r);
    pm_close(r);
    uint64_t got;
    uint8_t *img = durable_image(path, &got);
    assert_int_equal(got, size);
    unlink(path);
    return img;
}

/* ------------------------------------------------------------------ open / reopen */

/* roundtrip_modes -- EMULATED and MSYNC: created flag, persisted bytes
 * survive close + reopen, size 0 learns the size, the same size reopens. */
static void roundtrip_modes(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("pmem");
    tu_rng rng;
    tu_rng_init(&rng, tu_seed());
    const pm_mode modes[] = {PM_EMULATED, PM_MSYNC};
    for (size_t m = 0; m < 2; m++) {
        char *path = tu_path(dir, pm_mode_name(modes[m]));
        const uint64_t size = 1 * MiB;
        int created = -1;
        pm_region *r = open_ok(path, size, modes[m], PM_PROFILE_NONE, &created);
        assert_int_equal(created, 1);
        assert_int_equal(pm_mode_in_use(r), modes[m]);
        assert_int_equal(pm_profile_in_use(r), PM_PROFILE_NONE);
        assert_int_equal(pm_size(r), size);
        assert_true(all_equal(pm_base(r), size, 0)); /* zero-filled */
        uint8_t *expect = malloc(size);
        assert_non_null(expect);
        tu_rng_fill(&rng, expect, size);
        memcpy(pm_base(r), expect, size / 2);
        pm_persist(r, pm_base(r), size / 2);
        pm_memcpy_persist(r, pm_base(r) + size / 2, expect + size / 2, size / 4);
        memcpy(pm_base(r) + 3 * size / 4, expect + 3 * size / 4, size / 4);
        pm_flush(r, pm_base(r) + 3 * size / 4, size / 8);
        pm_flush(r, pm_base(r) + 7 * size / 8, size / 8);
        pm_drain(r);
        pm_close(r);

        struct stat sb;
        assert_int_equal(stat(path, &sb), 0);
        assert_int_equal((uint64_t)sb.st_size, size);
        r = open_ok(path, 0, modes[m], PM_PROFILE_NONE, &created); /* size 0: learn it */
        assert_int_equal(created, 0);
        assert_int_equal(pm_size(r), size);
        assert_memory_equal(pm_base(r), expect, size);
        pm_close(r);
        r = open_ok(path, size, modes[m], PM_PROFILE_NONE, NULL); /* the same size: fine; created may be NULL */
        assert_memory_equal(pm_base(r), expect, size);
        pm_close(r);
        free(expect);
        free(path);
    }
    /* PM_AUTO picks PM_PMEM on DAX, else PM_EMULATED */
    char *path = tu_path(dir, "auto");
    pm_region *r = open_ok(path, 64 * KiB, PM_AUTO, PM_PROFILE_NONE, NULL);
    assert_true(pm_mode_in_use(r) == PM_EMULATED || pm_mode_in_use(r) == PM_PMEM);
    printf("# PM_AUTO on %s -> %s\n", dir, pm_mode_name(pm_mode_in_use(r)));
    pm_close(r);
    assert_string_equal(pm_mode_name(PM_CRASHSIM), "crashsim");
    assert_string_equal(pm_mode_name(PM_MSYNC), "msync");
    free(path);
    tu_tmpdir_free(dir);
}

/* open_errors -- each refusal is TKV_INVALID (or an error for a missing
 * pool), names the file, leaves *out NULL, and leaves no file behind. */
static void open_errors(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("pmem");
    char *path = tu_path(dir, "pool");
    pm_region *r = open_ok(path, 1 * MiB, PM_EMULATED, PM_PROFILE_NONE, NULL);
    pm_close(r);

    /* size mismatch: both sizes in the message */
    r = (pm_region *)1;
    int created = -1;
    assert_int_equal(pm_open(path, 2 * MiB, PM_EMULATED, PM_PROFILE_NONE, &r, &created), TKV_INVALID);
    assert_null(r);
    assert_int_equal(created, 0);
    printf("# %s\n", tkv_errmsg());
    assert_non_null(strstr(tkv_errmsg(), "1048576"));
    assert_non_null(strstr(tkv_errmsg(), "2097152"));
    assert_non_null(strstr(tkv_errmsg(), path));

    /* not a multiple of 4096: refused, nothing created */
    char *odd = tu_path(dir, "odd");
    r = (pm_region *)1;
    assert_int_equal(pm_open(odd, 10000, PM_EMULATED, PM_PROFILE_NONE, &r, NULL), TKV_INVALID);
    assert_null(r);
    assert_non_null(strstr(tkv_errmsg(), "4096"));
    struct stat sb;
    assert_int_equal(stat(odd, &sb), -1);

    /* missing file, size 0 */
    char *missing = tu_path(dir, "missing");
    r = (pm_region *)1;
    int rc = pm_open(missing, 0, PM_EMULATED, PM_PROFILE_NONE, &r, NULL);
    assert_true(rc < 0);
    assert_null(r);
    assert_non_null(strstr(tkv_errmsg(), missing));
    assert_int_equal(stat(missing, &sb), -1);

    /* a directory is no pool */
    r = (pm_region *)1;
    assert_int_equal(pm_open(dir, 0, PM_EMULATED, PM_PROFILE_NONE, &r, NULL), TKV_INVALID);
    assert_null(r);

    /* bad enum values */
    assert_int_equal(pm_open(path, 0, (pm_mode)42, PM_PROFILE_NONE, &r, NULL), TKV_INVALID);
    assert_int_equal(pm_open(path, 0, PM_EMULATED, (pm_profile)42, &r, NULL), TKV_INVALID);

    /* PM_PMEM on an ordinary file system: refused, and the new file removed */
    r = open_ok(path, 0, PM_AUTO, PM_PROFILE_NONE, NULL);
    int real_pmem = pm_mode_in_use(r) == PM_PMEM;
    pm_close(r);
    if (real_pmem) {
        printf("# %s is real pmem: PM_PMEM refusal not testable here\n", dir);
    } else {
        char *fresh = tu_path(dir, "fresh");
        r = (pm_region *)1;
        assert_int_equal(pm_open(fresh, 64 * KiB, PM_PMEM, PM_PROFILE_NONE, &r, &created), TKV_INVALID);
        assert_null(r);
        assert_int_equal(created, 0);
        printf("# %s\n", tkv_errmsg());
        assert_non_null(strstr(tkv_errmsg(), "not persistent memory"));
        assert_non_null(strstr(tkv_errmsg(), fresh));
        assert_int_equal(stat(fresh, &sb), -1);
        assert_int_equal(pm_open(path, 0, PM_PMEM, PM_PROFILE_NONE, &r, NULL), TKV_INVALID);
        assert_int_equal(stat(path, &sb), 0); /* an existing pool is never removed */
        free(fresh);
    }
    free(missing);
    free(odd);
    free(path);
    tu_tmpdir_free(dir);
}

/* ------------------------------------------------------------------ crash simulation */

/* crashsim_persisted_only -- A (persisted) survives, B (written only) does
 * not; a crashsim reopen starts from the durable image. */
static void crashsim_persisted_only(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("pmem");
    char *path = tu_path(dir, "pool");
    int created = 0;
    pm_region *r = open_ok(path, 64 * KiB, PM_CRASHSIM, PM_PROFILE_NONE, &created);
    assert_int_equal(created, 1);
    uint8_t *b = pm_base(r);
    memset(b, 'A', 100);
    pm_persist(r, b, 100);
    memset(b + 4096, 'B', 100);
    assert_true(all_equal(b + 4096, 100, 'B')); /* the engine sees its own stores */
    pm_close(r);

    uint64_t size;
    uint8_t *img = durable_image(path, &size);
    assert_int_equal(size, 64 * KiB);
    assert_true(all_equal(img, 100, 'A'));
    assert_true(all_equal(img + 4096, 100, 0));
    free(img);

    r = open_ok(path, 0, PM_CRASHSIM, PM_PROFILE_NONE, &created);
    assert_int_equal(created, 0);
    assert_true(all_equal(pm_base(r), 100, 'A'));
    assert_true(all_equal(pm_base(r) + 4096, 100, 0));
    pm_close(r);
    free(path);
    tu_tmpdir_free(dir);
}

/* crashsim_lines -- persisting 1 byte makes its whole 64-byte line durable,
 * not its neighbours; a range crossing a line boundary takes both lines. */
static void crashsim_lines(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("pmem");
    char *path = tu_path(dir, "pool");
    pm_region *r = open_ok(path, 64 * KiB, PM_CRASHSIM, PM_PROFILE_NONE, NULL);
    uint8_t *b = pm_base(r);
    memset(b, 0xab, 1024);
    pm_persist(r, b + 64 + 10, 1); /* line 1 */
    pm_persist(r, b + 255, 2);     /* lines 3 and 4 */
    pm_flush(r, b + 512 + 63, 1);  /* line 8 */
    pm_drain(r);
    pm_persist(r, b + 700, 0); /* nothing */
    pm_close(r);
    uint64_t size;
    uint8_t *img = durable_image(path, &size);
    for (unsigned line = 0; line < 16; line++) {
        int durable = line == 1 || line == 3 || line == 4 || line == 8;
        if (!all_equal(img + line * 64, 64, durable ? 0xab : 0))
            fail_msg("line %u: expected %s, got %s", line, durable ? "durable" : "lost", tu_hex(img + line * 64, 64));
    }
    assert_true(all_equal(img + 1024, size - 1024, 0));
    free(img);
    free(path);
    tu_tmpdir_free(dir);
}

/* cut3_workload -- five 64-byte records on separate lines, one persist each,
 * then a sixth record with pm_memcpy_persist. */
static void cut3_workload(pm_region *r, void *arg)
{
    (void)arg;
    uint8_t *b = pm_base(r);
    for (int i = 0; i < 5; i++) {
        memset(b + 128 * i, 'a' + i, 64);
        pm_persist(r, b + 128 * i, 64);
    }
    uint8_t rec[64];
    memset(rec, 'z', sizeof rec);
    pm_memcpy_persist(r, b + 1024, rec, sizeof rec);
}

/* crashsim_cut -- cut_at(3): the first three persists land, later ones do
 * not, all are counted; the cut is relative to the calls made so far. */
static void crashsim_cut(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("pmem");
    char *path = tu_path(dir, "pool");
    uint64_t persists = 0;
    uint8_t *img = cs_durable_after(path, 64 * KiB, 3, cut3_workload, NULL, &persists);
    assert_int_equal(persists, 6);
    for (int i = 0; i < 5; i++) assert_true(all_equal(img + 128 * i, 64, i < 3 ? 'a' + i : 0));
    assert_true(all_equal(img + 1024, 64, 0));
    free(img);

    /* cut at once; never */
    img = cs_durable_after(path, 64 * KiB, 0, cut3_workload, NULL, &persists);
    assert_true(all_equal(img, 64 * KiB, 0));
    free(img);
    img = cs_durable_after(path, 64 * KiB, UINT64_MAX, cut3_workload, NULL, &persists);
    for (int i = 0; i < 5; i++) assert_true(all_equal(img + 128 * i, 64, 'a' + i));
    assert_true(all_equal(img + 1024, 64, 'z'));
    free(img);

    /* relative: two persists, then cut_at(1): the third lands, the fourth not */
    pm_region *r = open_ok(path, 64 * KiB, PM_CRASHSIM, PM_PROFILE_NONE, NULL);
    uint8_t *b = pm_base(r);
    for (int i = 0; i < 4; i++) {
        if (i == 2) pm_crashsim_cut_at(r, 1);
        memset(b + 64 * i, '0' + i, 64);
        pm_persist(r, b + 64 * i, 64);
    }
    assert_int_equal(pm_crashsim_persists(r), 4);
    pm_close(r);
    uint64_t size;
    img = durable_image(path, &size);
    for (int i = 0; i < 4; i++) assert_true(all_equal(img + 64 * i, 64, i < 3 ? '0' + i : 0));
    free(img);
    free(path);
    tu_tmpdir_free(dir);
}

/* crashsim_store8 -- the commit store is durable, counts as a persist, takes
 * its line with it, and after a cut leaves the old value. */
static void crashsim_store8(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("pmem");
    char *path = tu_path(dir, "pool");
    pm_region *r = open_ok(path, 64 * KiB, PM_CRASHSIM, PM_PROFILE_NONE, NULL);
    uint8_t *b = pm_base(r);
    uint64_t *slot = (uint64_t *)(void *)(b + 4096 + 8);
    b[4096] = 0x5a; /* same line, not persisted by itself */
    pm_store8_persist(r, slot, 0x1122334455667788ull);
    assert_int_equal(*slot, 0x1122334455667788ull);
    assert_int_equal(pm_crashsim_persists(r), 1);
    pm_crashsim_cut_at(r, 0);
    pm_store8_persist(r, slot, 0xdeadbeefull);
    assert_int_equal(*slot, 0xdeadbeefull); /* the volatile image has it */
    assert_int_equal(pm_crashsim_persists(r), 2);
    pm_close(r);
    uint64_t size, v;
    uint8_t *img = durable_image(path, &size);
    memcpy(&v, img + 4096 + 8, 8);
    assert_int_equal(v, 0x1122334455667788ull);
    assert_int_equal(img[4096], 0x5a);
    free(img);
    free(path);
    tu_tmpdir_free(dir);
}

/* The every-cut test: a scripted sequence of writes and ten persist calls of
 * every kind, run once per cut point; an independent byte model (vol, dur)
 * predicts the durable image. */
enum { OP_WRITE, OP_PERSIST, OP_FLUSH_DRAIN, OP_MEMCPY, OP_STORE8 };
typedef struct cs_op {
    int kind;
    uint32_t off, len;
    uint8_t fill; /* OP_WRITE / OP_MEMCPY fill byte; OP_STORE8: value byte */
} cs_op;

static const cs_op k_script[] = {
    {OP_WRITE, 0, 200, 1},         {OP_PERSIST, 0, 200, 0},  /* 1: lines 0-3 */
    {OP_WRITE, 300, 30, 2},        {OP_WRITE, 4000, 200, 3}, /* unpersisted for now */
    {OP_PERSIST, 320, 1, 0},       /* 2: line 5 only (bytes 320..329); 300..319 in line 4 stay lost */
    {OP_MEMCPY, 8192, 5000, 4},    /* 3 */
    {OP_STORE8, 16384, 8, 5},      /* 4 */
    {OP_FLUSH_DRAIN, 4090, 20, 0}, /* 5: lines 63 and 64 */
    {OP_WRITE, 16384 + 16, 8, 6},  {OP_STORE8, 16384 + 8, 8, 7}, /* 6: carries the write in its line */
    {OP_PERSIST, 300, 30, 0},                                    /* 7: lines 4 and 5 */
    {OP_MEMCPY, 30000, 100, 8},                                  /* 8 */
    {OP_WRITE, 40000, 4096, 9},    {OP_PERSIST, 40000, 4096, 0}, /* 9 */
    {OP_STORE8, 16384, 8, 10},                                   /* 10: overwrite the commit word */
};
#define K_SCRIPT_PERSISTS 10

/* script_workload -- runs k_script on the pool. */
static void script_workload(pm_region *r, void *arg)
{
    (void)arg;
    uint8_t *b = pm_base(r);
    for (size_t i = 0; i < sizeof k_script / sizeof k_script[0]; i++) {
        const cs_op *op = &k_script[i];
        uint8_t buf[5000];
        switch (op->kind) {
        case OP_WRITE:
            memset(b + op->off, op->fill, op->len);
            break;
        case OP_PERSIST:
            pm_persist(r, b + op->off, op->len);
            break;
        case OP_FLUSH_DRAIN:
            pm_flush(r, b + op->off, op->len);
            pm_drain(r);
            break;
        case OP_MEMCPY:
            memset(buf, op->fill, op->len);
            pm_memcpy_persist(r, b + op->off, buf, op->len);
            break;
        case OP_STORE8:
            pm_store8_persist(r, (uint64_t *)(void *)(b + op->off), 0x0101010101010101ull * op->fill);
            break;
        }
    }
}

/* script_model -- the durable image the first `cut` persists of k_script
 * leave: a persist of [off, off+len) copies the whole 64-byte lines it touches
 * from the volatile model. */
static void script_model(uint8_t *vol, uint8_t *dur, size_t size, unsigned cut)
{
    memset(vol, 0, size);
    memset(dur, 0, size);
    unsigned n = 0;
    for (size_t i = 0; i < sizeof k_script / sizeof k_script[0]; i++) {
        const cs_op *op = &k_script[i];
        if (op->kind == OP_WRITE || op->kind == OP_MEMCPY || op->kind == OP_STORE8)
            memset(vol + op->off, op->fill, op->len);
        if (op->kind == OP_WRITE) continue;
        if (n++ >= cut) continue;
        size_t lo = op->off / 64 * 64, hi = (op->off + op->len + 63) / 64 * 64;
        memcpy(dur + lo, vol + lo, hi - lo);
    }
    assert_int_equal(n, K_SCRIPT_PERSISTS);
}

/* crashsim_every_cut -- for every cut point 0..10 (and none) the durable
 * image equals the model's. */
static void crashsim_every_cut(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("pmem");
    char *path = tu_path(dir, "pool");
    const size_t size = 64 * KiB;
    uint8_t *vol = malloc(size), *dur = malloc(size), *prev = calloc(1, size);
    assert_true(vol && dur && prev);
    for (unsigned cut = 0; cut <= K_SCRIPT_PERSISTS + 1; cut++) {
        uint64_t persists = 0;
        uint8_t *img = cs_durable_after(path, size, cut, script_workload, NULL, &persists);
        assert_int_equal(persists, K_SCRIPT_PERSISTS);
        script_model(vol, dur, size, cut);
        for (size_t i = 0; i < size; i++)
            if (img[i] != dur[i])
                fail_msg("cut %u: byte %zu is %u, model says %u (near: %s)", cut, i, img[i], dur[i],
                         tu_hex(img + i / 64 * 64, 64));
        if (cut > 0 && cut <= K_SCRIPT_PERSISTS)
            assert_memory_not_equal(img, prev, size); /* each persist lands something */
        memcpy(prev, img, size);
        free(img);
    }
    free(vol);
    free(dur);
    free(prev);
    free(path);
    tu_tmpdir_free(dir);
}

/* Concurrent persists: NTH threads own interleaved 16-byte chunks, so every
 * line is shared by all of them; each thread writes and persists its chunks
 * one by one, ROUNDS times over with new bytes. A line copy that raced with a
 * newer copy of the same line would put back older bytes (a lost update); the
 * window is a few nanoseconds, hence the many rounds. */
#define NTH    4
#define CHUNK  16
#define ROUNDS 4
typedef struct mt_arg {
    pm_region *r;
    unsigned t;
} mt_arg;

static uint8_t mt_byte(unsigned t, unsigned round, size_t chunk, size_t i)
{
    return (uint8_t)(tu_mix64((chunk * 131 + i) * 7 + round) * 2 + t + 1);
}

static void *mt_thread(void *p)
{
    mt_arg *a = p;
    uint8_t *b = pm_base(a->r);
    size_t nchunks = pm_size(a->r) / CHUNK;
    for (unsigned round = 0; round < ROUNDS; round++)
        for (size_t c = a->t; c < nchunks; c += NTH) {
            for (size_t i = 0; i < CHUNK; i++) b[c * CHUNK + i] = mt_byte(a->t, round, c, i);
            pm_persist(a->r, b + c * CHUNK, CHUNK);
        }
    return NULL;
}

static void crashsim_threads(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("pmem");
    char *path = tu_path(dir, "pool");
    const uint64_t size = 1 * MiB;
    pm_region *r = open_ok(path, size, PM_CRASHSIM, PM_PROFILE_NONE, NULL);
    pthread_t th[NTH];
    mt_arg args[NTH];
    for (unsigned t = 0; t < NTH; t++) {
        args[t] = (mt_arg){r, t};
        assert_int_equal(pthread_create(&th[t], NULL, mt_thread, &args[t]), 0);
    }
    for (unsigned t = 0; t < NTH; t++) assert_int_equal(pthread_join(th[t], NULL), 0);
    assert_int_equal(pm_crashsim_persists(r), ROUNDS * size / CHUNK);
    pm_stats st;
    pm_get_stats(r, &st);
    assert_int_equal(st.bytes_persisted, ROUNDS * size);
    pm_close(r);
    uint64_t got;
    uint8_t *img = durable_image(path, &got);
    size_t bad = 0, first = SIZE_MAX;
    for (size_t c = 0; c < size / CHUNK; c++)
        for (size_t i = 0; i < CHUNK; i++)
            if (img[c * CHUNK + i] != mt_byte((unsigned)(c % NTH), ROUNDS - 1, c, i)) {
                bad++;
                if (first == SIZE_MAX) first = c * CHUNK + i;
            }
    if (bad) fail_msg("%zu bytes lost, the first at %zu", bad, first);
    free(img);
    free(path);
    tu_tmpdir_free(dir);
}

/* ------------------------------------------------------------------ profile, stats */

/* Two writers sharing the bandwidth: each starts at a barrier and records
 * when its 16 MiB pm_memcpy_persist began and ended. */
typedef struct pace_arg {
    pm_region *r;
    unsigned t;
    pthread_barrier_t *bar;
    double start, end;
} pace_arg;

static void *pace_thread(void *p)
{
    pace_arg *a = p;
    static uint8_t src[16 * MiB];
    pthread_barrier_wait(a->bar);
    a->start = tu_now_ms();
    pm_memcpy_persist(a->r, pm_base(a->r) + (size_t)a->t * 16 * MiB, src, sizeof src);
    a->end = tu_now_ms();
    return NULL;
}

/* optane_profile -- 1000 reads take >= 0.25 ms; 64 MiB of pm_memcpy_persist
 * takes >= 90 % of 64 MiB / 2 GB/s, also when two threads share it; without
 * the profile both are free or much faster (printed, not asserted). */
static void optane_profile(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("pmem");
    char *path = tu_path(dir, "pool");
    const size_t n = 64 * MiB;
    const double floor_ms = 0.9 * (double)n / 2e9 * 1e3;
    uint8_t *src = malloc(n);
    assert_non_null(src);
    memset(src, 0x3c, n);
    double ms[2];
    for (int prof = 0; prof < 2; prof++) {
        pm_region *r = open_ok(path, prof ? 0 : n, PM_EMULATED, prof ? PM_PROFILE_OPTANE : PM_PROFILE_NONE, NULL);
        assert_int_equal(pm_profile_in_use(r), prof ? PM_PROFILE_OPTANE : PM_PROFILE_NONE);
        pm_memcpy_persist(r, pm_base(r), src, n); /* warm: page faults */
        double t0 = tu_now_ms();
        pm_read_delay(r, 1000);
        double rd = tu_now_ms() - t0;
        t0 = tu_now_ms();
        for (int i = 0; i < 10000; i++) pm_read_delay(r, 1);
        double rd1 = (tu_now_ms() - t0) * 1e6 / 10000;
        t0 = tu_now_ms();
        pm_memcpy_persist(r, pm_base(r), src, n);
        ms[prof] = tu_now_ms() - t0;
        t0 = tu_now_ms();
        pm_persist(r, pm_base(r), 4 * MiB);
        double ps = tu_now_ms() - t0;
        printf("# %s: read_delay(1000) %.3f ms, read_delay(1) %.0f ns, memcpy_persist 64 MiB %.1f ms (%.2f GB/s), "
               "persist 4 MiB %.2f ms\n",
               prof ? "optane" : "none", rd, rd1, ms[prof], (double)n / ms[prof] / 1e6, ps);
        assert_memory_equal(pm_base(r) + n - 4096, src, 4096);
        if (prof) {
            assert_true(rd >= 0.25);
            assert_true(rd1 >= 250);
            assert_true(ms[1] >= floor_ms);
            assert_true(ps >= 0.9 * 4 * MiB / 2e9 * 1e3);
            /* two writers share the 2 GB/s: from the first start to the last
             * end at least 32 MiB / 2 GB/s pass, however they overlap */
            pthread_t th[2];
            pthread_barrier_t bar;
            pthread_barrier_init(&bar, NULL, 2);
            pace_arg args[2] = {{r, 0, &bar, 0, 0}, {r, 1, &bar, 0, 0}};
            for (int t = 0; t < 2; t++) assert_int_equal(pthread_create(&th[t], NULL, pace_thread, &args[t]), 0);
            for (int t = 0; t < 2; t++) assert_int_equal(pthread_join(th[t], NULL), 0);
            pthread_barrier_destroy(&bar);
            double first = args[0].start < args[1].start ? args[0].start : args[1].start;
            double last = args[0].end > args[1].end ? args[0].end : args[1].end;
            printf("# optane: 2 threads x 16 MiB: %.1f ms (each %.1f, %.1f ms)\n", last - first,
                   args[0].end - args[0].start, args[1].end - args[1].start);
            assert_true(last - first >= 0.9 * 32.0 * MiB / 2e9 * 1e3);
        } else {
            assert_true(rd < 0.25); /* a no-op: far below even on a busy machine */
        }
        pm_close(r);
    }
    free(src);
    free(path);
    tu_tmpdir_free(dir);
}

/* stats_counters -- calls and bytes of each primitive; drain and read_delay
 * count nothing. */
static void stats_counters(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("pmem");
    const pm_mode modes[] = {PM_EMULATED, PM_MSYNC, PM_CRASHSIM};
    for (size_t m = 0; m < 3; m++) {
        char *path = tu_path(dir, pm_mode_name(modes[m]));
        pm_region *r = open_ok(path, 64 * KiB, modes[m], PM_PROFILE_NONE, NULL);
        pm_stats st;
        pm_get_stats(r, &st);
        assert_int_equal(st.persist_calls, 0);
        assert_int_equal(st.bytes_persisted, 0);
        uint8_t *b = pm_base(r), src[1000] = {0};
        pm_persist(r, b, 100);
        pm_flush(r, b + 200, 10);
        pm_drain(r);
        pm_memcpy_persist(r, b + 1024, src, sizeof src);
        pm_store8_persist(r, (uint64_t *)(void *)(b + 4096), 7);
        pm_read_delay(r, 5);
        pm_get_stats(r, &st);
        assert_int_equal(st.persist_calls, 4);
        assert_int_equal(st.bytes_persisted, 100 + 10 + 1000 + 8);
        assert_int_equal(pm_crashsim_persists(r), 4);
        pm_close(r);
        free(path);
    }
    tu_tmpdir_free(dir);
}

/* ------------------------------------------------------------------ paced write-back */

typedef struct wb_log {
    uint64_t calls, bytes, max_chunk; /* atomics: the write-back thread updates them */
    int refuse;                       /* admit returns an error */
} wb_log;

static int wb_admit(void *arg, size_t n)
{
    wb_log *l = arg;
    __atomic_fetch_add(&l->calls, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add(&l->bytes, n, __ATOMIC_RELAXED);
    uint64_t m = __atomic_load_n(&l->max_chunk, __ATOMIC_RELAXED);
    while (n > m && !__atomic_compare_exchange_n(&l->max_chunk, &m, n, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    return l->refuse ? TKV_IO_ERROR : 0;
}

/* wait_written -- polls until nothing is pending (at most 20 s); the stats. */
static pm_stats wait_written(pm_region *r)
{
    pm_stats st;
    for (int i = 0; i < 2000; i++) {
        pm_get_stats(r, &st);
        if (st.wb_pending == 0) return st;
        usleep(10000);
    }
    fail_msg("write-back still has %llu bytes pending after 20 s", (unsigned long long)st.wb_pending);
    return st;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* mapped_pages -- how many 4 KiB pages of [a, a+len) have a page-table
 * entry in this process (/proc/self/pagemap bit 63, readable without
 * privileges). */
static size_t mapped_pages(const uint8_t *a, size_t len)
{
    int fd = open("/proc/self/pagemap", O_RDONLY);
    assert_true(fd >= 0);
    size_t n = 0;
    for (size_t off = 0; off < len; off += 4096) {
        uint64_t e = 0;
        off_t at = (off_t)(((uintptr_t)(a + off) / 4096) * sizeof e);
        assert_int_equal(pread(fd, &e, sizeof e, at), (ssize_t)sizeof e);
        n += (size_t)(e >> 63);
    }
    close(fd);
    return n;
}

/* on_tmpfs -- 1 if dir is on tmpfs (no write-back, no prefault thread). */
static int on_tmpfs(const char *dir)
{
    struct statfs sf;
    assert_int_equal(statfs(dir, &sf), 0);
    return sf.f_type == 0x01021994;
}

/* paced_writeback -- pm_writeback_start / _enqueue on an emulated pool on a
 * disk: every queued byte is admitted in chunks of at most 2 MiB and
 * written back, no faster than the rate (a lower bound on the time only:
 * the machine is shared), the pool's contents unchanged; an admission that
 * refuses drops the bytes (counted), nothing written; a device-cache flush
 * follows every flush_every bytes written back (8 MiB, 1 MiB; 0: none); a close with work
 * queued behind a slow rate returns promptly. A tmpfs pool has nothing to
 * write back: no thread, no admission. */
static void paced_writeback(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("pmem-wb");
    char *path = tu_path(dir, "pool");
    if (on_tmpfs(dir)) { /* TMPDIR on tmpfs: only the tmpfs half below applies */
        print_message("paced_writeback: %s is tmpfs; the disk half is skipped\n", dir);
    } else {
        pm_region *r = open_ok(path, 16 * MiB, PM_EMULATED, PM_PROFILE_NONE, NULL);
        uint8_t *b = pm_base(r);
        for (size_t i = 0; i < 16 * MiB; i++) b[i] = (uint8_t)(i * 7 + 3);
        wb_log log = {0};
        assert_int_equal(pm_writeback_start(r, wb_admit, &log, 8 * MiB, 0, 8 * MiB), 0);
        double t0 = now_s();
        pm_writeback_enqueue(r, b + 4 * MiB, 5 * MiB);
        pm_writeback_enqueue(r, b + 12 * MiB, 4 * KiB);
        pm_stats st = wait_written(r);
        double took = now_s() - t0;
        assert_int_equal(st.wb_bytes, 5 * MiB + 4 * KiB);
        assert_int_equal(st.wb_failures, 0);
        assert_int_equal(st.wb_device_flushes, 0); /* under 8 MiB */
        assert_int_equal(st.wb_dropped, 0);
        assert_int_equal(__atomic_load_n(&log.bytes, __ATOMIC_RELAXED), 5 * MiB + 4 * KiB);
        assert_int_equal(__atomic_load_n(&log.calls, __ATOMIC_RELAXED), 21); /* 20 x 256 KiB, 4 KiB */
        assert_int_equal(__atomic_load_n(&log.max_chunk, __ATOMIC_RELAXED), 256 * KiB);
        /* at 8 MiB/s the last chunk starts 5 MiB / 8 MiB/s = 0.625 s in */
        if (took < 0.6) fail_msg("5 MiB at 8 MiB/s written back in %.3f s", took);
        /* the written-back pages left the page tables before the write-back
         * (wb_unmap: no TLB shootdown per page), the others stayed */
        assert_int_equal(mapped_pages(b + 4 * MiB, 5 * MiB), 0);
        assert_int_equal(mapped_pages(b + 12 * MiB, 4 * KiB), 0);
        assert_int_equal(mapped_pages(b, 4 * MiB), 4 * MiB / 4096);
        assert_int_equal(mapped_pages(b + 9 * MiB, 3 * MiB), 3 * MiB / 4096);
        /* and they fault back in: stores after the write-back reach the file */
        for (size_t i = 4 * MiB; i < 5 * MiB; i++) b[i] = (uint8_t)(i * 7 + 3);
        assert_int_equal(mapped_pages(b + 4 * MiB, 1 * MiB), 1 * MiB / 4096);
        pm_close(r);
        uint64_t size;
        uint8_t *img = durable_image(path, &size);
        for (size_t i = 0; i < 16 * MiB; i++)
            if (img[i] != (uint8_t)(i * 7 + 3)) fail_msg("byte %zu changed by the write-back", i);
        free(img);

        /* refused admission: dropped, nothing written */
        r = open_ok(path, 0, PM_EMULATED, PM_PROFILE_NONE, NULL);
        wb_log no = {.refuse = 1};
        assert_int_equal(pm_writeback_start(r, wb_admit, &no, 0, 0, 8 * MiB), 0);
        pm_writeback_enqueue(r, pm_base(r), 1 * MiB);
        st = wait_written(r);
        assert_int_equal(st.wb_bytes, 0);
        assert_int_equal(st.wb_dropped, 1 * MiB);
        pm_close(r);

        /* a device-cache flush after every 8 MiB written back, none before */
        r = open_ok(path, 0, PM_EMULATED, PM_PROFILE_NONE, NULL);
        wb_log fl = {0};
        assert_int_equal(pm_writeback_start(r, wb_admit, &fl, 0, 0, 8 * MiB), 0);
        pm_writeback_enqueue(r, pm_base(r), 16 * MiB);
        st = wait_written(r);
        assert_int_equal(st.wb_bytes, 16 * MiB);
        assert_int_equal(st.wb_failures, 0);
        assert_int_equal(st.wb_device_flushes, 2);
        pm_writeback_enqueue(r, pm_base(r), 4 * MiB);
        st = wait_written(r);
        assert_int_equal(st.wb_device_flushes, 2); /* 4 MiB since the last one */
        pm_close(r);

        /* the step is the caller's: 1 MiB gives one flush per MiB, 0 none */
        r = open_ok(path, 0, PM_EMULATED, PM_PROFILE_NONE, NULL);
        assert_int_equal(pm_writeback_start(r, NULL, NULL, 0, 0, 1 * MiB), 0);
        pm_writeback_enqueue(r, pm_base(r), 5 * MiB + 512 * KiB);
        st = wait_written(r);
        assert_int_equal(st.wb_bytes, 5 * MiB + 512 * KiB);
        assert_int_equal(st.wb_device_flushes, 5);
        pm_close(r);
        r = open_ok(path, 0, PM_EMULATED, PM_PROFILE_NONE, NULL);
        assert_int_equal(pm_writeback_start(r, NULL, NULL, 0, 0, 0), 0);
        pm_writeback_enqueue(r, pm_base(r), 9 * MiB);
        st = wait_written(r);
        assert_int_equal(st.wb_bytes, 9 * MiB);
        assert_int_equal(st.wb_device_flushes, 0);
        pm_close(r);

        /* expiry: at 1 MiB/s the second range waits 0.5 s behind the first
         * (512 KiB); queued more than 300 ms before, it is skipped. The
         * queue cap: 8 s of work at 1 MiB/s, so a 9th MiB is dropped. */
        r = open_ok(path, 0, PM_EMULATED, PM_PROFILE_NONE, NULL);
        wb_log ex = {0};
        assert_int_equal(pm_writeback_start(r, wb_admit, &ex, 1 * MiB, 300, 8 * MiB), 0);
        pm_writeback_enqueue(r, pm_base(r), 512 * KiB);
        pm_writeback_enqueue(r, pm_base(r) + 1 * MiB, 7 * MiB);
        pm_writeback_enqueue(r, pm_base(r) + 8 * MiB, 1 * MiB);
        st = wait_written(r);
        assert_int_equal(st.wb_bytes, 512 * KiB);
        assert_int_equal(st.wb_expired, 7 * MiB);
        assert_int_equal(st.wb_dropped, 1 * MiB);
        assert_int_equal(__atomic_load_n(&ex.bytes, __ATOMIC_RELAXED), 512 * KiB); /* never admitted: the rest */
        pm_close(r);

        /* a close behind a slow rate does not wait for the queue */
        r = open_ok(path, 0, PM_EMULATED, PM_PROFILE_NONE, NULL);
        assert_int_equal(pm_writeback_start(r, NULL, NULL, 1 * MiB, 0, 8 * MiB), 0);
        pm_writeback_enqueue(r, pm_base(r), 4 * MiB);
        usleep(50000);
        t0 = now_s();
        pm_close(r);
        took = now_s() - t0;
        if (took > 1.5) fail_msg("close took %.3f s with write-back queued", took);
    }
    free(path);
    tu_tmpdir_free(dir);

    /* tmpfs: no write-back at all */
    if (access("/dev/shm", W_OK) == 0) {
        char shm[64];
        snprintf(shm, sizeof shm, "/dev/shm/tkv-test-wb-%d", (int)getpid());
        unlink(shm);
        pm_region *r = open_ok(shm, 4 * MiB, PM_EMULATED, PM_PROFILE_NONE, NULL);
        wb_log log = {0};
        assert_int_equal(pm_writeback_start(r, wb_admit, &log, 0, 0, 8 * MiB), 0);
        pm_writeback_enqueue(r, pm_base(r), 1 * MiB);
        usleep(20000);
        pm_stats st;
        pm_get_stats(r, &st);
        assert_int_equal(st.wb_pending, 0);
        assert_int_equal(st.wb_bytes, 0);
        assert_int_equal(__atomic_load_n(&log.calls, __ATOMIC_RELAXED), 0);
        pm_close(r);
        unlink(shm);
    }
}

/* disk_tmpdir -- a fresh temporary directory for a test that needs a pool
 * on a disk file system (page cache that can be evicted, a prefault
 * thread); on tmpfs the directory is removed and the test skipped. */
static char *disk_tmpdir(const char *tag)
{
    char *dir = tu_tmpdir(tag);
    if (on_tmpfs(dir)) {
        tu_tmpdir_free(dir);
        skip();
    }
    return dir;
}

/* ------------------------------------------------------------------ prefault */

/* resident_pages -- how many of the 4 KiB pages of [off, off+len) of r's
 * mapping are in the page cache (mincore). */
static size_t resident_pages(pm_region *r, uint64_t off, uint64_t len)
{
    size_t n = (size_t)(len / 4096);
    unsigned char *vec = malloc(n ? n : 1);
    assert_non_null(vec);
    if (mincore(pm_base(r) + off, len, vec) != 0) fail_msg("mincore: %s", strerror(errno));
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += vec[i] & 1;
    free(vec);
    return k;
}

/* wait_prefaulted -- polls the counter until it reaches want (10 s at most). */
static uint64_t wait_prefaulted(pm_region *r, uint64_t want)
{
    pm_stats st;
    double t0 = tu_now_ms();
    do {
        pm_get_stats(r, &st);
        if (st.prefault_bytes >= want) break;
        usleep(2000);
    } while (tu_now_ms() - t0 < 10000);
    return st.prefault_bytes;
}

/* prefault_prefix -- pm_prefault_upto makes exactly the requested prefix of
 * a new pool resident, grows it on request, never shrinks it, and leaves the
 * rest of the file out of the page cache (a pool on a disk file system, where
 * a fresh file's pages are not resident until touched). */
static void prefault_prefix(void **state)
{
    (void)state;
    char *dir = disk_tmpdir("pm-prefault"); /* on tmpfs: every page of the file is resident */
    char *path = tu_path(dir, "pool");
    pm_region *r = open_ok(path, 128 * MiB, PM_EMULATED, PM_PROFILE_NONE, NULL);
    usleep(50000); /* a thread that populated on its own would have started by now */
    pm_stats st;
    pm_get_stats(r, &st);
    assert_int_equal(st.prefault_bytes, 0);
    assert_int_equal(resident_pages(r, 0, 128 * MiB), 0);

    pm_prefault_upto(r, 4 * MiB);
    uint64_t got = wait_prefaulted(r, 4 * MiB);
    if (got == 0) { /* a kernel without MADV_POPULATE_READ (before 5.14): the thread gave up */
        pm_close(r);
        free(path);
        tu_tmpdir_free(dir);
        skip();
    }
    assert_int_equal(got, 4 * MiB);
    assert_int_equal(resident_pages(r, 0, 4 * MiB), 4 * MiB / 4096);
    /* the kernel's readahead may take in up to about twice read_ahead_kb
     * past the end (8 MiB on a virtio disk here); nothing far beyond */
    assert_int_equal(resident_pages(r, 40 * MiB, 88 * MiB), 0);

    pm_prefault_upto(r, 2 * MiB); /* a smaller request changes nothing */
    pm_prefault_upto(r, 20 * MiB);
    assert_int_equal(wait_prefaulted(r, 20 * MiB), 20 * MiB);
    assert_int_equal(resident_pages(r, 0, 20 * MiB), 20 * MiB / 4096);
    assert_int_equal(resident_pages(r, 56 * MiB, 72 * MiB), 0);
    pm_prefault_upto(r, 1ull << 40); /* past the end: clamped to the pool */
    assert_int_equal(wait_prefaulted(r, 128 * MiB), 128 * MiB);
    assert_int_equal(resident_pages(r, 0, 128 * MiB), 128 * MiB / 4096);
    pm_close(r);

    /* close with a large request outstanding: the thread stops, close returns */
    r = open_ok(path, 0, PM_EMULATED, PM_PROFILE_NONE, NULL);
    pm_prefault_upto(r, 128 * MiB);
    pm_close(r);
    free(path);
    tu_tmpdir_free(dir);
}

/* willneed_long_range -- pm_willneed of a range many times the device's
 * readahead window (read_ahead_kb: 128 KiB by default, 8 MiB on this VM's
 * virtio disk) brings all of it into the page cache, not only the first
 * window (the kernel drops the rest of a longer WILLNEED); the rest of the
 * file stays out. */
static void willneed_long_range(void **state)
{
    (void)state;
    char *dir = disk_tmpdir("pm-willneed"); /* on tmpfs: nothing can be evicted */
    char *path = tu_path(dir, "pool");
    pm_region *r = open_ok(path, 128 * MiB, PM_EMULATED, PM_PROFILE_NONE, NULL);
    assert_int_equal(pm_reserve(r, 0, 96 * MiB), 0);
    for (uint64_t off = 0; off < 96 * MiB; off += 4096) pm_base(r)[off] = (uint8_t)(off >> 12 | 1);
    pm_close(r);
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    assert_int_equal(fdatasync(fd), 0);
    assert_int_equal(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    close(fd);
    r = open_ok(path, 0, PM_EMULATED, PM_PROFILE_NONE, NULL);
    size_t before = resident_pages(r, 0, 128 * MiB);
    assert_true(before <= 16); /* what the open read, at most */

    pm_willneed(r, 8 * MiB, 64 * MiB);
    size_t got = 0, want = 64 * MiB / 4096;
    for (double t0 = tu_now_ms(); tu_now_ms() - t0 < 10000; usleep(2000))
        if ((got = resident_pages(r, 8 * MiB, 64 * MiB)) >= want) break;
    assert_int_equal(got, want);
    /* nothing far past the range (the kernel may read ahead a window more) */
    assert_true(resident_pages(r, 88 * MiB, 40 * MiB) <= before);
    for (uint64_t off = 8 * MiB; off < 72 * MiB; off += 4096)
        assert_int_equal(pm_base(r)[off], (uint8_t)(off >> 12 | 1));
    pm_close(r);
    free(path);
    tu_tmpdir_free(dir);
}

/* write_persist_modes -- pm_write_persist stores the bytes, seen through
 * the mapping and by a reopen, in every mode: through the file where
 * pm_write_through (emulated, volatile), through the mapping in msync and
 * crashsim (where only a persisted range reaches the durable image). */
static void write_persist_modes(void **state)
{
    (void)state;
    const pm_mode modes[] = {PM_EMULATED, PM_VOLATILE, PM_MSYNC, PM_CRASHSIM};
    uint8_t src[3 * 4096 + 100];
    for (size_t i = 0; i < sizeof src; i++) src[i] = (uint8_t)(i * 7 + 3);
    for (size_t m = 0; m < sizeof modes / sizeof modes[0]; m++) {
        char *dir = tu_tmpdir("pm-write");
        char *path = tu_path(dir, "pool");
        pm_region *r = open_ok(path, 4 * MiB, modes[m], PM_PROFILE_NONE, NULL);
        assert_int_equal(pm_write_through(r), modes[m] == PM_EMULATED || modes[m] == PM_VOLATILE);
        uint64_t off = 1 * MiB + 40;
        assert_int_equal(pm_reserve(r, 1 * MiB, 1 * MiB), 0);
        pm_write_persist(r, pm_base(r) + off, src, sizeof src);
        assert_int_equal(pm_error(r), 0);
        assert_memory_equal(pm_base(r) + off, src, sizeof src);
        pm_stats st;
        pm_get_stats(r, &st);
        assert_int_equal(st.persist_calls, 1);
        pm_close(r);
        r = open_ok(path, 0, PM_EMULATED, PM_PROFILE_NONE, NULL);
        assert_memory_equal(pm_base(r) + off, src, sizeof src);
        pm_close(r);
        free(path);
        tu_tmpdir_free(dir);
    }
}

static int fail_pool_write(io_op op, const char *path, size_t len, void *arg)
{
    (void)len;
    (void)arg;
    return op == IO_OP_WRITE && strstr(path, "pool") ? EIO : 0;
}

/* write_persist_error -- a write through the file that fails is the
 * region's sticky error (TKV_IO_ERROR naming the write), not a crash or a
 * silent loss; a range outside the region is refused the same way. */
static void write_persist_error(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("pm-write-err");
    char *path = tu_path(dir, "pool");
    pm_region *r = open_ok(path, 4 * MiB, PM_EMULATED, PM_PROFILE_NONE, NULL);
    uint8_t src[4096];
    memset(src, 0x5a, sizeof src);
    io_set_fault_hook(fail_pool_write, NULL);
    pm_write_persist(r, pm_base(r) + 8192, src, sizeof src);
    io_set_fault_hook(NULL, NULL);
    assert_int_equal(pm_error(r), TKV_IO_ERROR);
    assert_non_null(strstr(tkv_errmsg(), "write of 4096 bytes at offset 8192"));
    assert_int_equal(pm_base(r)[8192], 0);
    pm_close(r);

    r = open_ok(path, 0, PM_EMULATED, PM_PROFILE_NONE, NULL);
    pm_write_persist(r, pm_base(r) + 4 * MiB - 100, src, sizeof src); /* past the end */
    assert_int_equal(pm_error(r), TKV_IO_ERROR);
    pm_close(r);
    free(path);
    tu_tmpdir_free(dir);
}

/* thread_faults -- page faults the calling thread has taken (minor and
 * major: a fault on a file hole that had to go through the page cache's
 * readahead counts as major). */
static long thread_faults(void)
{
    struct rusage u;
    assert_int_equal(getrusage(RUSAGE_THREAD, &u), 0);
    return u.ru_minflt + u.ru_majflt;
}

/* touch_pages -- reads every 4 KiB page of [off, off+len) (mapping it, if it
 * was not, read-only; and under ASan faulting its shadow in), then stores
 * one byte to each and returns the page faults the stores took: 0 for a
 * page mapped writable already, 1 for one mapped read-only (the file
 * system's page_mkwrite). */
static long touch_pages(pm_region *r, uint64_t off, uint64_t len)
{
    volatile uint8_t *b = pm_base(r);
    unsigned sum = 0;
    for (uint64_t o = off; o < off + len; o += 4096) sum += b[o];
    assert_int_equal(sum, 0); /* a new pool reads as zero */
    long f0 = thread_faults();
    for (uint64_t o = off; o < off + len; o += 4096) b[o] = 0x5a;
    return thread_faults() - f0;
}

/* prefault_writable -- the prefix is populated writable (MADV_POPULATE_WRITE):
 * a store to each of its pages takes no fault, where a page outside it takes
 * one; pm_prefault_from keeps the thread off the start of the mapping;
 * pm_prefault_cancel stops a request midway, nothing is populated after it
 * returns, and the next request goes on from there without redoing a byte. */
static void prefault_writable(void **state)
{
    (void)state;
    char *dir = disk_tmpdir("pm-prefault-w"); /* on tmpfs: no prefault thread there */
    char *path = tu_path(dir, "pool");
    /* does this kernel have MADV_POPULATE_WRITE (Linux 5.14)? */
    void *probe = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(probe != MAP_FAILED);
    int has_populate_write = madvise(probe, 4096, 23 /* MADV_POPULATE_WRITE */) == 0;
    munmap(probe, 4096);
    if (!has_populate_write) {
        print_message("skipped: the kernel has no MADV_POPULATE_WRITE\n");
        free(path);
        tu_tmpdir_free(dir);
        skip();
    }
    pm_region *r = open_ok(path, 128 * MiB, PM_EMULATED, PM_PROFILE_NONE, NULL);
    pm_prefault_from(r, 4 * MiB);
    pm_prefault_upto(r, 12 * MiB);
    uint64_t got = wait_prefaulted(r, 8 * MiB);
    pm_stats st;
    pm_get_stats(r, &st);
    assert_int_equal(got, 8 * MiB);
    assert_int_equal(st.prefault_write_bytes, 8 * MiB);
    assert_int_equal(resident_pages(r, 0, 4 * MiB), 0); /* below the start: untouched */
    long in = touch_pages(r, 4 * MiB, 8 * MiB), out = touch_pages(r, 64 * MiB, 8 * MiB);
    print_message("faults storing to 2048 pages: %ld populated writable, %ld only read before\n", in, out);
    assert_true(in <= 8);
    assert_true(out >= 1024);

    /* cancel a large request at once: nothing moves once it has returned */
    pm_prefault_upto(r, 128 * MiB);
    pm_prefault_cancel(r);
    pm_get_stats(r, &st);
    uint64_t at_cancel = st.prefault_bytes;
    usleep(100000);
    pm_get_stats(r, &st);
    assert_int_equal(st.prefault_bytes, at_cancel);
    assert_true(at_cancel >= 8 * MiB && at_cancel <= 124 * MiB);
    /* the next request goes on where the thread stopped: 124 MiB in all, none twice */
    pm_prefault_upto(r, 128 * MiB);
    assert_int_equal(wait_prefaulted(r, 124 * MiB), 124 * MiB);
    usleep(20000);
    pm_get_stats(r, &st);
    assert_int_equal(st.prefault_bytes, 124 * MiB);
    pm_prefault_from(r, 2 * MiB); /* never backwards */
    pm_prefault_upto(r, 128 * MiB);
    usleep(20000);
    pm_get_stats(r, &st);
    assert_int_equal(st.prefault_bytes, 124 * MiB);
    pm_close(r);
    free(path);
    tu_tmpdir_free(dir);
}

/* hold_zero_write -- a fault hook that holds the prefault thread inside its
 * first zero write (IO_OP_FALLOCATE on a pool file) for 100 ms. */
typedef struct zero_hold {
    int inside;
} zero_hold;
static int hold_zero_write(io_op op, const char *path, size_t len, void *arg)
{
    (void)len;
    zero_hold *h = arg;
    if (op == IO_OP_FALLOCATE && strstr(path, "pool") && !__atomic_exchange_n(&h->inside, 1, __ATOMIC_ACQ_REL))
        usleep(100000);
    return 0;
}

/* prefault_zero -- with pm_prefault_zero the thread creates the pages it
 * populates by writing zeros, but only at or past the floor
 * (pm_prefault_claim): data below the floor is kept, past it the pages read
 * as zero and take no fault on a store. Then a race: the thread zero-writes
 * ahead while this thread claims and fills 64 KiB pieces of the same range
 * one after the other; every byte it filled is still there afterwards (a
 * zero write in flight below the floor is waited for, none starts there).
 * Last, deterministically: a claim made while a zero write is held in
 * flight (fault hook) returns only after it, and nothing stored after the
 * claim is zeroed. */
static void prefault_zero(void **state)
{
    (void)state;
    char *dir = disk_tmpdir("pm-prefault-z"); /* on tmpfs: no prefault thread there */
    char *path = tu_path(dir, "pool");
    pm_region *r = open_ok(path, 64 * MiB, PM_EMULATED, PM_PROFILE_NONE, NULL);
    uint8_t *b = pm_base(r);
    for (size_t i = 0; i < 8 * MiB; i++) b[i] = (uint8_t)(i % 251 + 1);
    pm_prefault_claim(r, 6 * MiB);
    pm_prefault_zero(r, 64 * KiB);
    pm_prefault_upto(r, 16 * MiB);
    uint64_t got = wait_prefaulted(r, 16 * MiB);
    if (got == 0) { /* no MADV_POPULATE_READ (before 5.14) */
        pm_close(r);
        free(path);
        tu_tmpdir_free(dir);
        skip();
    }
    usleep(20000);
    pm_stats st;
    pm_get_stats(r, &st);
    assert_int_equal(st.prefault_bytes, 16 * MiB);
    assert_int_equal(st.prefault_zero_bytes, 10 * MiB); /* [6, 16) MiB */
    for (size_t i = 0; i < 6 * MiB; i++)
        if (b[i] != (uint8_t)(i % 251 + 1)) fail_msg("byte %zu below the floor changed", i);
    for (size_t i = 6 * MiB; i < 8 * MiB; i++)
        if (b[i] != 0) fail_msg("byte %zu past the floor was not zeroed", i);
    assert_int_equal(touch_pages(r, 8 * MiB, 8 * MiB), 0); /* zeros, mapped writable */

    /* the race: claims and fills behind (and through) the thread's writes */
    pm_prefault_upto(r, 64 * MiB);
    for (uint64_t off = 16 * MiB; off < 64 * MiB; off += 64 * KiB) {
        pm_prefault_claim(r, off + 64 * KiB);
        memset(b + off, (int)(0xa0 + (off >> 16) % 16), 64 * KiB);
    }
    assert_int_equal(wait_prefaulted(r, 64 * MiB), 64 * MiB);
    usleep(20000);
    for (uint64_t off = 16 * MiB; off < 64 * MiB; off += 4096)
        if (b[off] != (uint8_t)(0xa0 + (off >> 16) % 16) || b[off + 4095] != (uint8_t)(0xa0 + (off >> 16) % 16))
            fail_msg("the page at %llu lost what was stored after its claim", (unsigned long long)off);
    pm_get_stats(r, &st);
    print_message("race: %llu of 48 MiB zero-written by the thread before the claims reached them\n",
                  (unsigned long long)(st.prefault_zero_bytes - 10 * MiB));
    /* a claim over a zero write in flight waits for it: the fault hook holds
     * the thread inside one piece's write for 100 ms */
    pm_close(r);
    r = open_ok(path, 0, PM_EMULATED, PM_PROFILE_NONE, NULL);
    b = pm_base(r);
    zero_hold hold = {0};
    io_set_fault_hook(hold_zero_write, &hold);
    pm_prefault_zero(r, 64 * KiB);
    pm_prefault_upto(r, 32 * MiB);
    for (double t0 = tu_now_ms(); !__atomic_load_n(&hold.inside, __ATOMIC_ACQUIRE) && tu_now_ms() - t0 < 10000;)
        usleep(1000);
    assert_true(__atomic_load_n(&hold.inside, __ATOMIC_ACQUIRE));
    double t0 = tu_now_ms();
    pm_prefault_claim(r, 64 * MiB);
    double waited = tu_now_ms() - t0;
    memset(b, 0x77, 32 * MiB);
    assert_int_equal(wait_prefaulted(r, 32 * MiB), 32 * MiB);
    io_set_fault_hook(NULL, NULL);
    for (uint64_t off = 0; off < 32 * MiB; off += 4096)
        if (b[off] != 0x77) fail_msg("the page at %llu was zeroed after the claim returned", (unsigned long long)off);
    print_message("claim over a held zero write returned after %.1f ms\n", waited);
    if (waited < 50) fail_msg("the claim returned after %.1f ms, while a zero write was held for 100 ms", waited);
    pm_close(r);
    /* and the file holds what was stored */
    uint64_t size;
    uint8_t *img = durable_image(path, &size);
    for (uint64_t off = 0; off < 32 * MiB; off += 4096)
        if (img[off] != 0x77) fail_msg("file byte %llu", (unsigned long long)off);
    free(img);
    free(path);
    tu_tmpdir_free(dir);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(roundtrip_modes),
        cmocka_unit_test(open_errors),
        cmocka_unit_test(crashsim_persisted_only),
        cmocka_unit_test(crashsim_lines),
        cmocka_unit_test(crashsim_cut),
        cmocka_unit_test(crashsim_store8),
        cmocka_unit_test(crashsim_every_cut),
        cmocka_unit_test(crashsim_threads),
        cmocka_unit_test(optane_profile),
        cmocka_unit_test(stats_counters),
        cmocka_unit_test(paced_writeback),
        cmocka_unit_test(prefault_prefix),
        cmocka_unit_test(prefault_writable),
        cmocka_unit_test(prefault_zero),
        cmocka_unit_test(willneed_long_range),
        cmocka_unit_test(write_persist_modes),
        cmocka_unit_test(write_persist_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
