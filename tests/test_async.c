// SPDX-License-Identifier: Apache-2.0
/*
 * test_async.c -- the async read path of a database (async_io, io/uring.h):
 * the batched tkv_multi_get and the iterators' readahead and parallel seek.
 *
 * - fallback: a forced io_uring setup failure (the fault hook's
 *   IO_OP_RING_SETUP) with async_io=auto opens with pread, says so in
 *   tkv.stats and answers every read as the model says; async_io=on refuses
 *   to open with the setup's error.
 * - multi_get: a block wanted by several keys is read once; a key found in a
 *   newer L0 file costs no read of an older one; keys in the memtable cost
 *   none; I/O errors and corrupt blocks give each key the status tkv_get
 *   gives it, never data.
 * - iterators: seeks read the first block of every file at once, scans read
 *   ahead, and both agree with the model, also when every readahead read
 *   fails (block-by-block reads take over); unreadable or corrupt blocks end
 *   a scan with the error, never wrong data.
 * - concurrency: readers on several threads share the pool of rings while a
 *   writer flushes and compacts (run under TSan by `make tsan`).
 * Every answer is also compared with a loop of tkv_get at the same snapshot.
 */
#include <dirent.h>
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
#include <unistd.h>

#include <cmocka.h>

#include "io/io.h"
#include "testutil.h"
#include "tierkv.h"

#define VALUE_SIZE 300

/* key_of / value_of -- key i ("key%08d") and its value for version `ver`. */
static size_t key_of(uint64_t i, char *buf) { return (size_t)sprintf(buf, "key%08llu", (unsigned long long)i); }

static size_t value_of(uint64_t i, int ver, char *buf)
{
    memset(buf, 'a' + (int)(i % 26), VALUE_SIZE);
    int n = sprintf(buf, "v%d-%llu-", ver, (unsigned long long)i);
    buf[n] = '.';
    return VALUE_SIZE;
}

static void put_range(tkv_db *db, tu_model *m, uint64_t lo, uint64_t hi, int ver)
{
    char k[32], v[VALUE_SIZE];
    for (uint64_t i = lo; i < hi; i++) {
        size_t kn = key_of(i, k), vn = value_of(i, ver, v);
        assert_int_equal(tkv_put(db, k, kn, v, vn, 0), TKV_OK);
        if (m) tu_model_put(m, k, kn, v, vn);
    }
}

/* mget_vs_model -- multi_get of n keys (some absent, some repeated) at a
 * snapshot: every status and value equal the model's and tkv_get's. */
static void mget_vs_model(tkv_db *db, const tu_model *m, tu_rng *r, uint64_t nkeys, size_t n)
{
    char kb[128][32];
    const void *kp[128];
    size_t kl[128], vl[128];
    void *vals[128];
    int st[128];
    assert_true(n <= 128);
    for (size_t i = 0; i < n; i++) {
        if (i && tu_rng_chance(r, 100000)) memcpy(kb[i], kb[i - 1], sizeof kb[i]), kl[i] = kl[i - 1];
        else kl[i] = key_of(tu_rng_below(r, nkeys + nkeys / 10), kb[i]);
        kp[i] = kb[i];
    }
    const tkv_snapshot *s = tkv_snapshot_new(db);
    assert_int_equal(tkv_multi_get(db, s, n, kp, kl, vals, vl, st), TKV_OK);
    for (size_t i = 0; i < n; i++) {
        const void *mv;
        size_t mvn;
        int present = tu_model_get(m, kp[i], kl[i], &mv, &mvn);
        if (present ? st[i] != TKV_OK || vl[i] != mvn || memcmp(vals[i], mv, mvn) : st[i] != TKV_NOT_FOUND)
            fail_msg("multi_get[%zu] %.*s: status %d (%s), model %s", i, (int)kl[i], kb[i], st[i], tkv_errmsg(),
                     present ? "has it" : "has not");
        void *gv;
        size_t gn;
        int grc = tkv_get(db, s, kp[i], kl[i], &gv, &gn);
        assert_int_equal(grc, st[i]);
        tkv_free(gv);
        tkv_free(vals[i]);
    }
    tkv_snapshot_free(db, s);
}

/* scan_vs_model -- a seek and up to `steps` nexts agree with the model. */
static void scan_vs_model(tkv_db *db, const tu_model *m, uint64_t start, size_t steps)
{
    char k[32];
    size_t kn = key_of(start, k);
    tkv_iter *it;
    assert_int_equal(tkv_iter_new(db, NULL, &it), TKV_OK);
    tkv_iter_seek(it, k, kn);
    size_t pos = tu_model_lower_bound(m, k, kn);
    for (size_t s = 0; s <= steps; s++, pos++) {
        if (pos >= tu_model_count(m)) {
            assert_false(tkv_iter_valid(it));
            break;
        }
        const void *mk, *mv;
        size_t mkn, mvn, ikn, ivn;
        tu_model_at(m, pos, &mk, &mkn, &mv, &mvn);
        if (!tkv_iter_valid(it))
            fail_msg("iterator invalid at step %zu (status %d: %s)", s, tkv_iter_status(it), tkv_errmsg());
        const void *ik = tkv_iter_key(it, &ikn), *iv = tkv_iter_value(it, &ivn);
        if (tu_keycmp(ik, ikn, mk, mkn) || ivn != mvn || memcmp(iv, mv, mvn))
            fail_msg("scan from %s step %zu: iterator at %s, model at %s", k, s, tu_hex(ik, ikn), tu_hex(mk, mkn));
        tkv_iter_next(it);
    }
    assert_int_equal(tkv_iter_status(it), TKV_OK);
    tkv_iter_free(it);
}

static int g_setup_errno;
static int setup_hook(io_op op, const char *path, size_t len, void *arg)
{
    (void)path;
    (void)len;
    (void)arg;
    return op == IO_OP_RING_SETUP ? g_setup_errno : 0;
}

/* fallback_when_setup_fails -- io_uring refused at setup (EPERM, as with
 * io_uring_disabled=2 or seccomp; ENOMEM, as a memlock limit gives):
 * async_io=auto opens, tkv.stats says reads use pread and why, and
 * multi_gets and scans over SSTs answer as the model; async_io=on refuses
 * the open with the setup's code. With the hook gone, auto uses io_uring. */
static void fallback_when_setup_fails(void **state)
{
    (void)state;
    static const struct {
        int e, code;
    } cases[] = {{EPERM, TKV_IO_ERROR}, {ENOMEM, TKV_NO_MEMORY}};
    for (size_t c = 0; c < 2; c++) {
        char *dir = tu_tmpdir("async-fb");
        tkv_options *o = tu_small_options();
        assert_int_equal(tkv_options_set(o, "block_cache_size", "0"), TKV_OK);
        g_setup_errno = cases[c].e;
        io_set_fault_hook(setup_hook, NULL);
        tkv_db *db = NULL;
        assert_int_equal(tkv_options_set(o, "async_io", "on"), TKV_OK);
        assert_int_equal(tkv_open(dir, o, &db), cases[c].code);
        assert_null(db);
        assert_non_null(strstr(tkv_errmsg(), "async_io=on: io_uring setup failed"));
        assert_int_equal(tkv_options_set(o, "async_io", "auto"), TKV_OK);
        db = tu_open_ok(dir, o);
        io_set_fault_hook(NULL, NULL);
        char *st = tkv_property(db, "tkv.stats");
        char want[160];
        snprintf(want, sizeof want, "async_io: off (reads use pread): io_uring setup failed: %s\n",
                 strerror(cases[c].e));
        if (!strstr(st, want)) fail_msg("tkv.stats lacks \"%s\":\n%s", want, st);
        tkv_free(st);
        tu_model *m = tu_model_new();
        put_range(db, m, 0, 3000, 1);
        assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK); /* into SSTs */
        put_range(db, m, 1000, 1200, 2);                                   /* newer versions in the memtable */
        tu_rng r;
        tu_rng_init(&r, tu_seed() + c);
        for (int i = 0; i < 30; i++) mget_vs_model(db, m, &r, 3000, (size_t)tu_rng_range(&r, 2, 64));
        for (int i = 0; i < 20; i++) scan_vs_model(db, m, tu_rng_below(&r, 3100), 60);
        assert_int_equal(tu_prop_u64(db, "tkv.stats", "multiget_async: keys="), 0);
        tu_check_db(db, NULL, m, "pread fallback");
        tu_close_ok(db);
        db = tu_open_ok(dir, o); /* no hook: io_uring */
        assert_true(tu_prop_u64(db, "tkv.stats", "async_io: io_uring rings=") >= 1);
        for (int i = 0; i < 10; i++) mget_vs_model(db, m, &r, 3000, 32);
        assert_true(tu_prop_u64(db, "tkv.stats", "multiget_async: keys=") > 0);
        tu_close_ok(db);
        tu_model_free(m);
        tkv_options_free(o);
        tu_tmpdir_free(dir);
    }
}

/* sst_db -- a database with l0=sst, no block cache and L0 kept as files
 * (no compaction before 100 of them), async_io=on, direct I/O. */
static tkv_db *sst_db(const char *dir, tkv_options **out)
{
    tkv_options *o = tu_small_options();
    assert_int_equal(tkv_options_set(o, "l0", "sst"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "block_cache_size", "0"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "async_io", "on"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "direct_io", "1"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "memtable_size", "4M"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "l0_compaction_trigger", "100"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "l0_slowdown_trigger", "100"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "l0_stop_trigger", "100"), TKV_OK);
    *out = o;
    return tu_open_ok(dir, o);
}

static uint64_t stat_of(tkv_db *db, const char *field) { return tu_prop_u64(db, "tkv.stats", field); }

/* mget_keys -- multi_get of the keys numbered ids[0..n) (no snapshot);
 * statuses in st, values freed. */
static void mget_keys(tkv_db *db, const uint64_t *ids, size_t n, int *st)
{
    char kb[16][32];
    const void *kp[16] = {0};
    size_t kl[16] = {0}, vl[16];
    void *vals[16];
    assert_true(n <= 16);
    for (size_t i = 0; i < n; i++) {
        kl[i] = key_of(ids[i], kb[i]);
        kp[i] = kb[i];
    }
    assert_int_equal(tkv_multi_get(db, NULL, n, kp, kl, vals, vl, st), TKV_OK);
    for (size_t i = 0; i < n; i++) tkv_free(vals[i]);
}

/* mget_reads_and_levels -- with no block cache, every block costs a read
 * unless the batch shares it: four lookups of one key and three of its
 * neighbours (one block) read it once; a key whose newest version is in the
 * newest L0 file (an older one below) costs one read, and a deletion found
 * there ends the key (not found) without reading below; keys in the
 * memtable cost none. */
static void mget_reads_and_levels(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("async-mg");
    tkv_options *o;
    tkv_db *db = sst_db(dir, &o);
    put_range(db, NULL, 0, 1000, 1);
    assert_int_equal(tkv_flush(db), TKV_OK); /* older L0 file: every key */
    put_range(db, NULL, 500, 600, 2);
    char k[32];
    size_t kn = key_of(550, k);
    assert_int_equal(tkv_delete(db, k, kn, 0), TKV_OK);
    assert_int_equal(tkv_flush(db), TKV_OK); /* newer L0 file: 500..599, 550 deleted */
    put_range(db, NULL, 700, 701, 3);        /* memtable */
    int st[16];
    uint64_t k0 = stat_of(db, " block_reads="), s0 = stat_of(db, " shared=");
    static const uint64_t same[] = {100, 100, 100, 100, 101, 102, 103};
    mget_keys(db, same, 7, st);
    for (int i = 0; i < 7; i++) assert_int_equal(st[i], TKV_OK);
    assert_int_equal(stat_of(db, " block_reads=") - k0, 1);
    assert_int_equal(stat_of(db, " shared=") - s0, 6);

    static const uint64_t newer[] = {520, 550, 700};
    k0 = stat_of(db, " block_reads=");
    mget_keys(db, newer, 3, st);
    assert_int_equal(st[0], TKV_OK);
    assert_int_equal(st[1], TKV_NOT_FOUND);
    assert_int_equal(st[2], TKV_OK);
    /* 520 and 550 share the newer file's block (or two), and neither reads the older file */
    uint64_t used = stat_of(db, " block_reads=") - k0;
    assert_true(used >= 1 && used <= 2);
    void *v;
    size_t vn;
    kn = key_of(520, k);
    assert_int_equal(tkv_get(db, NULL, k, kn, &v, &vn), TKV_OK);
    assert_memory_equal(v, "v2-520-", 7);
    tkv_free(v);
    tu_close_ok(db);
    tkv_options_free(o);
    tu_tmpdir_free(dir);
}

/* Fault hook: fails reads of .sst files with EIO while armed. */
static int g_fail_sst_reads;
static int eio_hook(io_op op, const char *path, size_t len, void *arg)
{
    (void)len;
    (void)arg;
    if (op != IO_OP_READ || !__atomic_load_n(&g_fail_sst_reads, __ATOMIC_ACQUIRE)) return 0;
    size_t n = strlen(path);
    return n > 4 && !strcmp(path + n - 4, ".sst") ? EIO : 0;
}

/* corrupt_at -- flips the byte at `off` of every SST in dir (off < 0:
 * counted from the middle of the file). Returns how many files. */
static int corrupt_at(const char *dir, long off)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 4 || strcmp(e->d_name + l - 4, ".sst")) continue;
        char *p = tu_path(dir, e->d_name);
        int fd = open(p, O_RDWR);
        assert_true(fd >= 0);
        off_t at = off >= 0 ? off : lseek(fd, 0, SEEK_END) / 2;
        uint8_t b;
        assert_int_equal(pread(fd, &b, 1, at), 1);
        b ^= 0x5a;
        assert_int_equal(pwrite(fd, &b, 1, at), 1);
        close(fd);
        free(p);
        n++;
    }
    closedir(d);
    return n;
}

static int corrupt_first_block(const char *dir) { return corrupt_at(dir, 100); }
/* corrupt_mid_block -- a byte in the middle of the file: a data block of a
 * table made of data blocks mostly. */
static int corrupt_mid_block(const char *dir) { return corrupt_at(dir, -1); }

/* mget_errors_like_get -- an EIO on every SST read: the keys that need a
 * block get TKV_IO_ERROR (the memtable's keys still answer); a corrupt
 * first block: its keys get TKV_CORRUPTION, the others their values -- in
 * each case exactly the status tkv_get gives the key. */
static void mget_errors_like_get(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("async-err");
    tkv_options *o;
    tkv_db *db = sst_db(dir, &o);
    put_range(db, NULL, 0, 400, 1);
    assert_int_equal(tkv_flush(db), TKV_OK);
    put_range(db, NULL, 0, 5, 2); /* memtable */
    uint64_t ids[16];
    int st[16];
    for (int i = 0; i < 16; i++) ids[i] = (uint64_t)i * 25;
    ids[1] = 6; /* in the first data block (key 0 is in the memtable too) */
    io_set_fault_hook(eio_hook, NULL);
    __atomic_store_n(&g_fail_sst_reads, 1, __ATOMIC_RELEASE);
    mget_keys(db, ids, 16, st);
    assert_int_equal(st[0], TKV_OK); /* key 0: memtable */
    for (int i = 1; i < 16; i++) assert_int_equal(st[i], TKV_IO_ERROR);
    __atomic_store_n(&g_fail_sst_reads, 0, __ATOMIC_RELEASE);
    io_set_fault_hook(NULL, NULL);
    mget_keys(db, ids, 16, st);
    for (int i = 0; i < 16; i++) assert_int_equal(st[i], TKV_OK);
    tu_close_ok(db);

    assert_int_equal(corrupt_first_block(dir), 1);
    db = tu_open_ok(dir, o);
    mget_keys(db, ids, 16, st);
    int corrupt = 0;
    for (int i = 0; i < 16; i++) {
        char k[32];
        size_t kn = key_of(ids[i], k);
        void *v;
        size_t vn;
        int grc = tkv_get(db, NULL, k, kn, &v, &vn);
        tkv_free(v);
        if (grc != st[i]) fail_msg("key %s: multi_get %d, tkv_get %d", k, st[i], grc);
        corrupt += st[i] == TKV_CORRUPTION;
    }
    assert_true(corrupt >= 1 && corrupt < 16);
    tu_close_ok(db);
    tkv_options_free(o);
    tu_tmpdir_free(dir);
}

/* scans_read_ahead -- l0=sst with three overlapping L0 files and direct
 * I/O, no block cache: every seek queues the first block of each file at
 * once (parallel_seeks), long scans read ahead (readaheads, blocks served
 * from them), and seeks, nexts, direction changes and full scans both ways
 * agree with the model; the same with reads that fail (EIO) whenever they
 * are larger than one block, i.e. every readahead: the scans fall back to
 * block-by-block reads and still agree, with status OK. */
static int g_fail_big_reads;
static int big_read_hook(io_op op, const char *path, size_t len, void *arg)
{
    (void)path;
    (void)arg;
    return op == IO_OP_READ && len > 8192 && __atomic_load_n(&g_fail_big_reads, __ATOMIC_ACQUIRE) ? EIO : 0;
}

static void scans_read_ahead(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("async-scan");
    tkv_options *o;
    tkv_db *db = sst_db(dir, &o);
    tu_model *m = tu_model_new();
    put_range(db, m, 0, 3000, 1);
    assert_int_equal(tkv_flush(db), TKV_OK);
    put_range(db, m, 1000, 2500, 2);
    assert_int_equal(tkv_flush(db), TKV_OK);
    put_range(db, m, 2000, 2200, 3);
    assert_int_equal(tkv_flush(db), TKV_OK);
    tu_rng r;
    tu_rng_init(&r, tu_seed() + 7);
    for (int pass = 0; pass < 2; pass++) {
        __atomic_store_n(&g_fail_big_reads, pass, __ATOMIC_RELEASE);
        io_set_fault_hook(big_read_hook, NULL);
        uint64_t ra0 = stat_of(db, "prefetch: readaheads="), par0 = stat_of(db, " parallel_seeks=");
        for (int i = 0; i < 40; i++) scan_vs_model(db, m, tu_rng_below(&r, 3100), (size_t)tu_rng_range(&r, 1, 400));
        tu_check_db(db, NULL, m, pass ? "scans with failing readahead" : "scans with readahead");
        io_set_fault_hook(NULL, NULL);
        assert_true(stat_of(db, "prefetch: readaheads=") > ra0);
        assert_true(stat_of(db, " parallel_seeks=") > par0);
        if (pass == 0) assert_true(stat_of(db, " readahead_blocks=") > 0);
    }
    tu_close_ok(db);
    tu_model_free(m);
    tkv_options_free(o);
    tu_tmpdir_free(dir);
}

/* ring_stat -- a field of the async_io line (" reads=", " bytes=": what
 * the rings completed). */
static uint64_t ring_stat(tkv_db *db, const char *field)
{
    char *s = tkv_property(db, "tkv.stats");
    assert_non_null(s);
    const char *line = strstr(s, "async_io: io_uring");
    assert_non_null(line);
    const char *r = strstr(line, field);
    assert_non_null(r);
    uint64_t n = strtoull(r + strlen(field), NULL, 10);
    tkv_free(s);
    return n;
}

/* fails reads of 32 KiB or more (readahead windows of 64 KiB; the tables'
 * index and filter blocks, read at open, are smaller) */
static int g_fail_windows;
static int window_read_hook(io_op op, const char *path, size_t len, void *arg)
{
    (void)path;
    (void)arg;
    return op == IO_OP_READ && len >= (32u << 10) && __atomic_load_n(&g_fail_windows, __ATOMIC_ACQUIRE) ? EIO : 0;
}

/* compaction_reads_ahead -- a compaction reads its input SSTs through a
 * ring, two readahead windows in flight (table_iter_sequential), and writes
 * its outputs behind the merge (IO_WRITE_BEHIND): the compacted database
 * agrees with the model before and after a reopen, and the ring did the
 * reads. Again with every readahead window failing (EIO): the
 * windows are dropped, the blocks read one by one, the compaction succeeds
 * and nothing is lost. */
static void compaction_reads_ahead(void **state)
{
    (void)state;
    for (int pass = 0; pass < 2; pass++) {
        char *dir = tu_tmpdir("async-compact");
        tkv_options *o;
        tkv_db *db = sst_db(dir, &o);
        assert_int_equal(tkv_options_set(o, "compaction_readahead", "64K"), TKV_OK);
        tu_close_ok(db);
        db = tu_open_ok(dir, o);
        tu_model *m = tu_model_new();
        put_range(db, m, 0, 12000, 1);
        assert_int_equal(tkv_flush(db), TKV_OK);
        put_range(db, m, 4000, 10000, 2);
        assert_int_equal(tkv_flush(db), TKV_OK);
        put_range(db, m, 9000, 15000, 3);
        assert_int_equal(tkv_flush(db), TKV_OK);
        assert_true(tu_prop_u64(db, "tkv.levels", "L0: files=") >= 3);
        uint64_t reads0 = ring_stat(db, " reads="), bytes0 = ring_stat(db, " bytes=");
        __atomic_store_n(&g_fail_windows, pass, __ATOMIC_RELEASE);
        io_set_fault_hook(window_read_hook, NULL);
        int rc = tkv_compact_range(db, NULL, 0, NULL, 0);
        io_set_fault_hook(NULL, NULL);
        if (rc != TKV_OK) fail_msg("pass %d: compact_range: %d %s", pass, rc, tkv_errmsg());
        assert_int_equal(tu_prop_u64(db, "tkv.levels", "L0: files="), 0);
        /* 3 inputs of tens of 4 KiB blocks each, 64 KiB at a time: reads of
         * windows (pass 0), of single blocks when the windows fail (pass 1) */
        uint64_t reads = ring_stat(db, " reads=") - reads0, bytes = ring_stat(db, " bytes=") - bytes0;
        fprintf(stderr, "# pass %d: %llu ring reads of %llu bytes\n", pass, (unsigned long long)reads,
                (unsigned long long)bytes);
        if (reads < 6) fail_msg("pass %d: the compaction made %llu ring reads", pass, (unsigned long long)reads);
        if (pass == 0 && bytes / reads < (32u << 10))
            fail_msg("pass 0: ring reads of %llu bytes on average", (unsigned long long)(bytes / reads));
        if (pass == 1 && bytes / reads > (8u << 10))
            fail_msg("pass 1: ring reads of %llu bytes on average", (unsigned long long)(bytes / reads));
        tu_check_db(db, NULL, m, pass ? "compacted with failing readahead" : "compacted with readahead");
        tu_close_reopen_check(db, dir, o, m, "compacted, reopened");
        tu_model_free(m);
        tkv_options_free(o);
        tu_tmpdir_free(dir);
    }
}

/* scan_errors -- an SST whose blocks cannot be read (EIO on every read)
 * ends a scan with TKV_IO_ERROR; one with a corrupt block ends it with
 * TKV_CORRUPTION where that block is, after the entries before it: never
 * wrong data. */
static void scan_errors(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("async-scanerr");
    tkv_options *o;
    tkv_db *db = sst_db(dir, &o);
    tu_model *m = tu_model_new();
    put_range(db, m, 0, 2000, 1);
    assert_int_equal(tkv_flush(db), TKV_OK);
    io_set_fault_hook(eio_hook, NULL);
    __atomic_store_n(&g_fail_sst_reads, 1, __ATOMIC_RELEASE);
    tkv_iter *it;
    assert_int_equal(tkv_iter_new(db, NULL, &it), TKV_OK);
    tkv_iter_seek(it, "key", 3);
    assert_false(tkv_iter_valid(it));
    assert_int_equal(tkv_iter_status(it), TKV_IO_ERROR);
    tkv_iter_free(it);
    __atomic_store_n(&g_fail_sst_reads, 0, __ATOMIC_RELEASE);
    io_set_fault_hook(NULL, NULL);
    tu_close_ok(db);
    assert_int_equal(corrupt_mid_block(dir), 1);
    db = tu_open_ok(dir, o);
    assert_int_equal(tkv_iter_new(db, NULL, &it), TKV_OK);
    size_t n = 0;
    for (tkv_iter_seek_first(it); tkv_iter_valid(it); tkv_iter_next(it), n++) {
        const void *mk, *mv;
        size_t mkn, mvn, kn, vn;
        tu_model_at(m, n, &mk, &mkn, &mv, &mvn);
        const void *k = tkv_iter_key(it, &kn), *v = tkv_iter_value(it, &vn);
        assert_int_equal(tu_keycmp(k, kn, mk, mkn), 0);
        assert_true(vn == mvn && !memcmp(v, mv, vn));
    }
    assert_int_equal(tkv_iter_status(it), TKV_CORRUPTION);
    assert_true(n > 100 && n < 2000); /* the blocks before the bad one were read */
    tkv_iter_free(it);
    tu_close_ok(db);
    tu_model_free(m);
    tkv_options_free(o);
    tu_tmpdir_free(dir);
}

/* Concurrent readers: each thread borrows rings (a multi_get's, an
 * iterator's) from the one pool while a writer flushes and compacts
 * another key range, so versions, tables and the table cache change under
 * them. Every answer is checked (the readers' keys never change). */
#define CR_KEYS 4000
static tkv_db *g_cdb;
static int g_cstop;

static void *cr_reader(void *arg)
{
    tu_rng r;
    tu_rng_init(&r, (uint64_t)(uintptr_t)arg);
    char kb[32][32], v[VALUE_SIZE];
    const void *kp[32];
    size_t kl[32], vl[32];
    void *vals[32];
    int st[32];
    for (int round = 0; round < 60; round++) {
        uint64_t ids[32];
        for (int i = 0; i < 32; i++) {
            ids[i] = tu_rng_below(&r, CR_KEYS);
            kl[i] = key_of(ids[i], kb[i]);
            kp[i] = kb[i];
        }
        if (tkv_multi_get(g_cdb, NULL, 32, kp, kl, vals, vl, st) != TKV_OK) fail_msg("multi_get failed");
        for (int i = 0; i < 32; i++) {
            size_t vn = value_of(ids[i], 1, v);
            if (st[i] != TKV_OK || vl[i] != vn || memcmp(vals[i], v, vn))
                fail_msg("multi_get[%d] %s: %d", i, kb[i], st[i]);
            tkv_free(vals[i]);
        }
        tkv_iter *it;
        if (tkv_iter_new(g_cdb, NULL, &it) != TKV_OK) fail_msg("iter_new failed");
        uint64_t at = tu_rng_below(&r, CR_KEYS - 60);
        char k[32];
        size_t kn = key_of(at, k);
        tkv_iter_seek(it, k, kn);
        for (uint64_t i = at; i < at + 50; i++, tkv_iter_next(it)) {
            size_t ikn, ivn;
            kn = key_of(i, k);
            size_t vn = value_of(i, 1, v);
            const void *ik = tkv_iter_key(it, &ikn), *iv = tkv_iter_value(it, &ivn);
            if (!tkv_iter_valid(it) || ikn != kn || memcmp(ik, k, kn) || ivn != vn || memcmp(iv, v, vn))
                fail_msg("scan at %s: wrong entry (status %d)", k, tkv_iter_status(it));
        }
        tkv_iter_free(it);
    }
    return NULL;
}

static void *cr_writer(void *arg)
{
    (void)arg;
    char k[32], v[VALUE_SIZE];
    for (uint64_t i = 0; !__atomic_load_n(&g_cstop, __ATOMIC_ACQUIRE); i++) {
        size_t kn = (size_t)sprintf(k, "w%08llu", (unsigned long long)(i % 3000));
        if (tkv_put(g_cdb, k, kn, v, value_of(i, 2, v), 0) != TKV_OK) fail_msg("writer put");
        if (i % 1500 == 1499 && tkv_flush(g_cdb) != TKV_OK) fail_msg("writer flush");
        if (i % 4000 == 3999 && tkv_compact_range(g_cdb, "w", 1, "x", 1) != TKV_OK) fail_msg("writer compact");
    }
    return NULL;
}

/* concurrent_readers -- three reader threads (multi_gets and scans on one
 * pool of rings) and a writer that flushes and compacts another range. */
static void concurrent_readers(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("async-conc");
    tkv_options *o = tu_small_options();
    assert_int_equal(tkv_options_set(o, "async_io", "on"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "direct_io", "1"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "block_cache_size", "128K"), TKV_OK);
    g_cdb = tu_open_ok(dir, o);
    put_range(g_cdb, NULL, 0, CR_KEYS, 1);
    assert_int_equal(tkv_compact_range(g_cdb, NULL, 0, NULL, 0), TKV_OK);
    __atomic_store_n(&g_cstop, 0, __ATOMIC_RELEASE);
    pthread_t th[4];
    assert_int_equal(pthread_create(&th[3], NULL, cr_writer, NULL), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_create(&th[i], NULL, cr_reader, (void *)(uintptr_t)(tu_seed() + (uint64_t)i)), 0);
    for (int i = 0; i < 3; i++) pthread_join(th[i], NULL);
    __atomic_store_n(&g_cstop, 1, __ATOMIC_RELEASE);
    pthread_join(th[3], NULL);
    assert_true(stat_of(g_cdb, " block_reads=") > 0);
    assert_true(stat_of(g_cdb, " seek_reads=") > 0);
    /* every reader gave its ring back; compactions borrow one while they
     * run, so wait for the background work to finish first */
    assert_true(tu_wait_quiet(g_cdb, 60000));
    assert_int_equal(stat_of(g_cdb, " lent="), 0);
    tu_close_ok(g_cdb);
    tkv_options_free(o);
    tu_tmpdir_free(dir);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fallback_when_setup_fails), cmocka_unit_test(mget_reads_and_levels),
        cmocka_unit_test(mget_errors_like_get),      cmocka_unit_test(scans_read_ahead),
        cmocka_unit_test(compaction_reads_ahead),    cmocka_unit_test(scan_errors),
        cmocka_unit_test(concurrent_readers),
    };
    const char *only = getenv("TKV_TEST_ONLY");
    if (only && *only) cmocka_set_test_filter(only);
    return cmocka_run_group_tests(tests, NULL, NULL);
}
