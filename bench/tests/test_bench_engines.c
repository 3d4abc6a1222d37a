// SPDX-License-Identifier: Apache-2.0
/*
 * test_bench_engines.c -- the storage engines behind tkv_bench (bench/engine.h)
 * checked against an in-memory model, through the engine interface only.
 *
 * For every engine of engine_names() except "null": if available() (tierkv
 * always must be; a missing RocksDB/LevelDB library is reported as
 * "# <engine> unavailable: <why>; skipped"), open it in a temporary directory
 * with small settings (4 MiB memtables, 8 MiB cache), apply ~20k random puts
 * and deletes (16-byte binary keys, 100..1000-byte values) to it and to the
 * model, and compare: get, multi_get, a full forward scan from seek_first,
 * scans from seek keys (with a step back), a full reverse scan from
 * seek_last; then wait_idle and stats, and the same checks after a close and
 * reopen, then (engines with del_range) after range deletions. The
 * interface reports only lengths, so each value's length
 * (random per put) is what identifies it. Plus: the registry, tierkv's
 * option passing, the null engine (every call succeeds, nothing stored) and
 * the devread engine (the device floor: reads blocks of what it was given).
 * An engine with uses_nvm_dir (rocksdb-l0nvm) also gets an nvm_dir, and
 * after the fill its WAL and tables must be there, none in its directory.
 *
 * Reproduce a failure with the printed seed: TKV_TEST_SEED=N.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "bench/engine.h"
#include "tests/testutil.h"

#define KEY_LEN    16
#define N_IDS      6000   /* distinct keys the random operations draw from */
#define N_OPS      20000  /* operations per engine (times TKV_TEST_SCALE) */
#define DEL_PPM    150000 /* 15% deletes */
#define VAL_MIN    100
#define VAL_MAX    1000
#define N_SEEKS    200 /* seek probes per check */
#define SEEK_STEPS 20  /* entries compared after each seek */
#define MG_BATCH   37  /* keys per multi_get (odd, to vary the mix) */

/* make_key -- the 16-byte key of id: 8 mixed bytes (any byte value, so
 * ordering is by unsigned bytes) then the id itself, big-endian. */
static void make_key(uint64_t id, char *k)
{
    uint64_t h = tu_mix64(id ^ UINT64_C(0x5eed));
    for (int i = 0; i < 8; i++) {
        k[i] = (char)(h >> (56 - 8 * i));
        k[8 + i] = (char)(id >> (56 - 8 * i));
    }
}

/* small_config -- the test's engine_config for directory dir. */
static engine_config small_config(const char *dir)
{
    engine_config c;
    memset(&c, 0, sizeof c);
    c.dir = dir;
    c.memtable_bytes = 4u << 20;
    c.memtables = 2;
    c.cache_bytes = 8u << 20;
    c.threads = 1;
    return c;
}

/* ---------------------------------------------------------------- checks */

/* check_gets -- every model key is found with its value length; absent ids
 * are not found. */
static void check_gets(const engine_ops *ops, engine *e, const tu_model *m, tu_rng *r, const char *what)
{
    size_t n = tu_model_count(m);
    for (size_t i = 0; i < n; i++) {
        const void *k;
        size_t kn, vn, got = 0;
        tu_model_at(m, i, &k, &kn, NULL, &vn);
        int rc = ops->get(e, k, kn, &got);
        if (rc != 0)
            fail_msg("%s %s: get of present key %s = %d (%s)", ops->name, what, tu_hex(k, kn), rc,
                     rc < 0 ? ops->last_error() : "not found");
        if (got != vn)
            fail_msg("%s %s: get %s: value length %zu, expected %zu", ops->name, what, tu_hex(k, kn), got, vn);
    }
    for (int i = 0; i < 2000; i++) {
        char k[KEY_LEN];
        make_key(tu_rng_below(r, 2 * N_IDS), k);
        const void *v;
        size_t vn = 0, got = 123;
        int want = tu_model_get(m, k, KEY_LEN, &v, &vn) ? 0 : 1;
        int rc = ops->get(e, k, KEY_LEN, &got);
        if (rc != want)
            fail_msg("%s %s: get %s = %d, expected %d (%s)", ops->name, what, tu_hex(k, KEY_LEN), rc, want,
                     rc < 0 ? ops->last_error() : "");
        if (rc == 0 && got != vn)
            fail_msg("%s %s: get %s: length %zu, expected %zu", ops->name, what, tu_hex(k, KEY_LEN), got, vn);
    }
}

/* check_multi_get -- batches of present and absent keys. */
static void check_multi_get(const engine_ops *ops, engine *e, const tu_model *m, tu_rng *r, const char *what)
{
    char keys[MG_BATCH][KEY_LEN];
    const char *kp[MG_BATCH];
    size_t kns[MG_BATCH];
    int found[MG_BATCH];
    for (int b = 0; b < 100; b++) {
        size_t n = 1 + tu_rng_below(r, MG_BATCH);
        for (size_t i = 0; i < n; i++) {
            make_key(tu_rng_below(r, N_IDS + N_IDS / 4), keys[i]);
            kp[i] = keys[i];
            kns[i] = KEY_LEN;
            found[i] = -1;
        }
        int rc = ops->multi_get(e, n, kp, kns, found);
        if (rc != 0) fail_msg("%s %s: multi_get of %zu keys = %d (%s)", ops->name, what, n, rc, ops->last_error());
        for (size_t i = 0; i < n; i++) {
            int want = tu_model_get(m, keys[i], KEY_LEN, NULL, NULL);
            if (found[i] != want)
                fail_msg("%s %s: multi_get key %zu/%zu %s: found=%d, expected %d", ops->name, what, i, n,
                         tu_hex(keys[i], KEY_LEN), found[i], want);
        }
    }
}

/* expect_entry -- the iterator is valid on model entry i. */
static void expect_entry(const engine_ops *ops, engine_iter *it, const tu_model *m, size_t i, const char *what,
                         const char *how)
{
    if (!ops->iter_valid(it))
        fail_msg("%s %s: %s: iterator invalid at entry %zu of %zu (%s)", ops->name, what, how, i, tu_model_count(m),
                 ops->last_error());
    size_t kn = 0, vn = 0, mkn, mvn;
    ops->iter_entry(it, &kn, &vn);
    tu_model_at(m, i, NULL, &mkn, NULL, &mvn);
    if (kn != mkn || vn != mvn)
        fail_msg("%s %s: %s: entry %zu has key/value lengths %zu/%zu, expected %zu/%zu", ops->name, what, how, i, kn,
                 vn, mkn, mvn);
}

/* check_iterators -- full forward and reverse scans, and seeks. */
static void check_iterators(const engine_ops *ops, engine *e, const tu_model *m, tu_rng *r, const char *what)
{
    size_t n = tu_model_count(m);
    engine_iter *it = ops->iter_new(e);
    if (!it) fail_msg("%s %s: iter_new failed (%s)", ops->name, what, ops->last_error());

    ops->iter_seek_first(it);
    for (size_t i = 0; i < n; i++, ops->iter_next(it)) expect_entry(ops, it, m, i, what, "forward scan");
    if (ops->iter_valid(it)) fail_msg("%s %s: forward scan: valid after %zu entries", ops->name, what, n);

    ops->iter_seek_last(it);
    for (size_t i = n; i-- > 0; ops->iter_prev(it)) expect_entry(ops, it, m, i, what, "reverse scan");
    if (ops->iter_valid(it)) fail_msg("%s %s: reverse scan: valid before the first entry", ops->name, what);

    for (int s = 0; s < N_SEEKS; s++) {
        char k[KEY_LEN];
        if (tu_rng_chance(r, 500000) && n) {
            const void *mk;
            tu_model_at(m, tu_rng_below(r, n), &mk, NULL, NULL, NULL);
            memcpy(k, mk, KEY_LEN); /* an existing key */
        } else {
            tu_rng_fill(r, k, KEY_LEN); /* anywhere, usually between keys */
        }
        size_t pos = tu_model_lower_bound(m, k, KEY_LEN);
        ops->iter_seek(it, k, KEY_LEN);
        if (pos == n) {
            if (ops->iter_valid(it)) fail_msg("%s %s: seek past the last key: valid", ops->name, what);
            continue;
        }
        size_t i = pos;
        for (int step = 0; step < SEEK_STEPS && i < n; step++, i++, ops->iter_next(it))
            expect_entry(ops, it, m, i, what, "scan after seek");
        if (i == n && ops->iter_valid(it)) fail_msg("%s %s: scan after seek: valid past the end", ops->name, what);
        if (i < n) {
            /* Change direction: back to the entry before pos's successor. */
            ops->iter_prev(it);
            expect_entry(ops, it, m, i - 1, what, "prev after seek and next");
        }
    }
    ops->iter_free(it);
}

static void check_all(const engine_ops *ops, engine *e, const tu_model *m, tu_rng *r, const char *what)
{
    check_gets(ops, e, m, r, what);
    check_multi_get(ops, e, m, r, what);
    check_iterators(ops, e, m, r, what);
}

/* ---------------------------------------------------------------- cases */

/* random_ops -- n puts/deletes applied to the engine and the model. */
static void random_ops(const engine_ops *ops, engine *e, tu_model *m, tu_rng *r, size_t n)
{
    char k[KEY_LEN], v[VAL_MAX];
    for (size_t i = 0; i < n; i++) {
        make_key(tu_rng_below(r, N_IDS), k);
        if (tu_rng_chance(r, DEL_PPM)) {
            int rc = ops->del(e, k, KEY_LEN);
            if (rc != 0) fail_msg("%s: delete #%zu = %d (%s)", ops->name, i, rc, ops->last_error());
            tu_model_del(m, k, KEY_LEN);
        } else {
            size_t vn = (size_t)tu_rng_range(r, VAL_MIN, VAL_MAX);
            tu_rng_fill(r, v, vn);
            int rc = ops->put(e, k, KEY_LEN, v, vn);
            if (rc != 0) fail_msg("%s: put #%zu = %d (%s)", ops->name, i, rc, ops->last_error());
            tu_model_put(m, k, KEY_LEN, v, vn);
        }
    }
}

/* range_deletions -- for an engine with del_range: 10 range deletions, each
 * from a random key to that key with its first byte raised (about 1/256 of
 * the key space each), applied to the model too. */
static void range_deletions(const engine_ops *ops, engine *e, tu_model *m, tu_rng *r)
{
    for (int i = 0; i < 10; i++) {
        char a[KEY_LEN], b[KEY_LEN];
        make_key(tu_rng_below(r, N_IDS), a);
        memcpy(b, a, KEY_LEN);
        if ((unsigned char)b[0] == 0xff) continue;
        b[0] = (char)((unsigned char)b[0] + 1);
        int rc = ops->del_range(e, a, KEY_LEN, b, KEY_LEN);
        if (rc != 0) fail_msg("%s: del_range #%d = %d (%s)", ops->name, i, rc, ops->last_error());
        tu_model_del_range(m, a, KEY_LEN, b, KEY_LEN);
    }
}

static void print_stats(const engine_ops *ops, engine *e, const char *what)
{
    engine_stats st;
    memset(&st, 0x5a, sizeof st);
    int rc = ops->stats(e, &st);
    if (rc != 0) fail_msg("%s %s: stats = %d (%s)", ops->name, what, rc, ops->last_error());
    assert_true(st.device_bytes_written >= -1 && st.stall_count >= -1 && st.stall_micros >= -1 &&
                st.pmem_bytes_written >= -1);
    assert_non_null(memchr(st.detail, '\0', sizeof st.detail));
    printf("# %s %s: device_bytes_written=%lld stall_count=%lld stall_micros=%lld pmem_bytes_written=%lld\n#   %s\n",
           ops->name, what, (long long)st.device_bytes_written, (long long)st.stall_count, (long long)st.stall_micros,
           (long long)st.pmem_bytes_written, st.detail);
}

static engine *open_or_fail(const engine_ops *ops, const engine_config *cfg)
{
    char err[1024] = "";
    engine *e = NULL;
    int rc = ops->open(cfg, &e, err, sizeof err);
    if (rc != 0 || !e) fail_msg("%s: open %s = %d (%s)", ops->name, cfg->dir, rc, err);
    const char *d = ops->describe(e);
    assert_non_null(d);
    assert_true(strlen(d) > 0);
    assert_null(strchr(d, '\n'));
    return e;
}

/* count_files -- entries of dir whose names end in suffix (0 if dir is missing). */
static int count_files(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    size_t sl = strlen(suffix);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        size_t l = strlen(de->d_name);
        n += l > sl && !strcmp(de->d_name + l - sl, suffix);
    }
    closedir(d);
    return n;
}

/* check_nvm_placement -- an engine with uses_nvm_dir, with the default
 * 1 GiB target (room for L0 and L1): WAL files in <nvm_dir>/wal, tables in
 * <nvm_dir>/sst, neither in its directory. */
static void check_nvm_placement(const engine_ops *ops, const engine_config *cfg)
{
    char *wal = tu_path(cfg->nvm_dir, "wal"), *sst = tu_path(cfg->nvm_dir, "sst");
    int nvm_logs = count_files(wal, ".log"), nvm_ssts = count_files(sst, ".sst");
    int db_logs = count_files(cfg->dir, ".log"), db_ssts = count_files(cfg->dir, ".sst");
    printf("# %s placement: %s %d .log, %s %d .sst; %s %d .log %d .sst\n", ops->name, wal, nvm_logs, sst, nvm_ssts,
           cfg->dir, db_logs, db_ssts);
    if (nvm_logs < 1 || nvm_ssts < 1 || db_logs || db_ssts)
        fail_msg("%s: WAL and tables should be in %s, not in %s (see the placement line)", ops->name, cfg->nvm_dir,
                 cfg->dir);
    free(wal);
    free(sst);
}

/* test_engine -- the model comparison for the engine named *state. */
static void test_engine(void **state)
{
    const char *name = *state;
    const engine_ops *ops = engine_find(name);
    assert_non_null(ops);
    assert_string_equal(ops->name, name);
    char why[1024] = "";
    if (!ops->available(why, sizeof why)) {
        if (!strcmp(name, "tierkv")) fail_msg("tierkv must always be available: %s", why);
        printf("# %s unavailable: %s; skipped\n", name, why);
        return;
    }
    printf("# %s: %s\n", name, ops->version());
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ tu_mix64((uint64_t)strlen(name) * 131 + (unsigned char)name[0]));
    char tag[64];
    snprintf(tag, sizeof tag, "bench-%s", name);
    char *root = tu_tmpdir(tag);
    char *dir = tu_path(root, "db"), *nvm = tu_path(root, "nvm");
    engine_config cfg = small_config(dir);
    cfg.nvm_dir = nvm; /* rocksdb-l0nvm's; the others ignore it */
    /* Small SSTs and L1 for tierkv, so its compactions run during the test
     * (the other engines ignore tkv_opts). */
    static const char *const tkv_opts[] = {"sst_size=1M", "l1_size=4M"};
    cfg.tkv_opts = tkv_opts;
    cfg.n_tkv_opts = 2;

    engine *e = open_or_fail(ops, &cfg);
    printf("# %s describe: %s\n", name, ops->describe(e));
    tu_model *m = tu_model_new();
    size_t nops = (size_t)N_OPS * tu_scale();
    random_ops(ops, e, m, &r, nops / 2);
    check_all(ops, e, m, &r, "mid-fill");
    random_ops(ops, e, m, &r, nops - nops / 2);
    check_all(ops, e, m, &r, "after fill");

    double t0 = tu_now_ms();
    int rc = ops->wait_idle(e);
    if (rc != 0) fail_msg("%s: wait_idle = %d (%s)", name, rc, ops->last_error());
    printf("# %s: wait_idle took %.0f ms; %zu live keys\n", name, tu_now_ms() - t0, tu_model_count(m));
    check_all(ops, e, m, &r, "after wait_idle");
    print_stats(ops, e, "after fill");
    if (ops->uses_nvm_dir) check_nvm_placement(ops, &cfg);
    ops->close(e);

    e = open_or_fail(ops, &cfg);
    check_all(ops, e, m, &r, "after reopen");
    random_ops(ops, e, m, &r, nops / 10);
    check_all(ops, e, m, &r, "after reopen and more writes");
    if (ops->del_range) { /* tierkv, RocksDB */
        range_deletions(ops, e, m, &r);
        check_all(ops, e, m, &r, "after range deletions");
    }
    rc = ops->wait_idle(e);
    if (rc != 0) fail_msg("%s: wait_idle after reopen = %d (%s)", name, rc, ops->last_error());
    print_stats(ops, e, "after reopen");
    ops->close(e);

    tu_model_free(m);
    free(nvm);
    free(dir);
    tu_tmpdir_free(root);
}

/* test_registry -- engine_names() and engine_find() agree; every engine has
 * a version string and all operations. */
static void test_registry(void **state)
{
    (void)state;
    const char *names = engine_names();
    assert_non_null(names);
    assert_string_equal(names, "tierkv,rocksdb,rocksdb-l0nvm,rocksdb-deb,leveldb,null,devread");
    char buf[256];
    snprintf(buf, sizeof buf, "%s", names);
    int count = 0;
    for (char *save = NULL, *n = strtok_r(buf, ",", &save); n; n = strtok_r(NULL, ",", &save), count++) {
        const engine_ops *ops = engine_find(n);
        if (!ops) fail_msg("engine_names() lists \"%s\" but engine_find does not know it", n);
        assert_string_equal(ops->name, n);
        assert_true(ops->available && ops->version && ops->open && ops->close && ops->describe && ops->put &&
                    ops->del && ops->get && ops->multi_get && ops->iter_new && ops->iter_seek && ops->iter_seek_first &&
                    ops->iter_seek_last && ops->iter_valid && ops->iter_next && ops->iter_prev && ops->iter_entry &&
                    ops->iter_free && ops->wait_idle && ops->stats && ops->last_error);
        char why[512] = "";
        int avail = ops->available(why, sizeof why);
        const char *v = ops->version();
        assert_non_null(v);
        printf("# %-12s %s%s%s\n", n, v, avail ? "" : " -- unavailable: ", avail ? "" : why);
    }
    assert_int_equal(count, 7);
    assert_null(engine_find("nope"));
    assert_null(engine_find(NULL));
    assert_true(engine_find("tierkv")->available(NULL, 0));
}

/* test_tierkv_options -- tkv_opts reach tierkv; a bad one fails open with
 * tierkv's message naming the option. */
static void test_tierkv_options(void **state)
{
    (void)state;
    const engine_ops *ops = engine_find("tierkv");
    char *root = tu_tmpdir("bench-tkvopts");
    char *dir = tu_path(root, "db");
    engine_config cfg = small_config(dir);
    static const char *const bad[] = {"l0_compaction_trigger=0"};
    static const char *const unknown[] = {"no_such_option=1"};
    static const char *const malformed[] = {"sst_size"};
    static const char *const good[] = {"l0_compaction_trigger=3", "sst_size=2M"};
    const char *const *sets[] = {bad, unknown, malformed};
    const char *needle[] = {"l0_compaction_trigger", "no_such_option", "sst_size"};
    for (int i = 0; i < 3; i++) {
        cfg.tkv_opts = sets[i];
        cfg.n_tkv_opts = 1;
        char err[512] = "";
        engine *e = NULL;
        int rc = ops->open(&cfg, &e, err, sizeof err);
        if (rc == 0) fail_msg("tierkv open accepted bad option %s", sets[i][0]);
        assert_null(e);
        if (!strstr(err, needle[i])) fail_msg("tierkv open error \"%s\" does not name %s", err, needle[i]);
        assert_string_equal(err, ops->last_error());
    }
    cfg.tkv_opts = good;
    cfg.n_tkv_opts = 2;
    engine *e = open_or_fail(ops, &cfg);
    const char *d = ops->describe(e);
    if (!strstr(d, "l0_compaction_trigger=3") || !strstr(d, "sst_size=2097152") ||
        !strstr(d, "memtable_size=4194304") || !strstr(d, "block_cache_size=8388608") ||
        !strstr(d, "compression=lz4") || !strstr(d, "bloom_bits_per_key=10"))
        fail_msg("tierkv describe does not show the options given: %s", d);
    ops->close(e);
    free(dir);
    tu_tmpdir_free(root);
}

/* test_null -- every call of the null engine succeeds and stores nothing. */
static void test_null(void **state)
{
    (void)state;
    const engine_ops *ops = engine_find("null");
    assert_non_null(ops);
    char why[128] = "";
    assert_true(ops->available(why, sizeof why));
    engine_config cfg = small_config("/nonexistent/null-engine");
    engine *e = NULL;
    char err[128] = "";
    assert_int_equal(ops->open(&cfg, &e, err, sizeof err), 0);
    assert_non_null(e);
    assert_true(strlen(ops->describe(e)) > 0);
    assert_int_equal(ops->put(e, "k", 1, "v", 1), 0);
    size_t vn = 99;
    assert_int_equal(ops->get(e, "k", 1, &vn), 1);
    assert_int_equal(vn, 0);
    assert_int_equal(ops->del(e, "k", 1), 0);
    const char *keys[3] = {"a", "b", "c"};
    size_t kns[3] = {1, 1, 1};
    int found[3] = {7, 7, 7};
    assert_int_equal(ops->multi_get(e, 3, keys, kns, found), 0);
    assert_int_equal(found[0] + found[1] + found[2], 0);
    engine_iter *it = ops->iter_new(e);
    assert_non_null(it);
    ops->iter_seek_first(it);
    assert_false(ops->iter_valid(it));
    ops->iter_seek_last(it);
    assert_false(ops->iter_valid(it));
    ops->iter_seek(it, "k", 1);
    assert_false(ops->iter_valid(it));
    ops->iter_free(it);
    assert_int_equal(ops->wait_idle(e), 0);
    engine_stats st;
    assert_int_equal(ops->stats(e, &st), 0);
    ops->close(e);
}

/* test_devread -- the devread engine appends the prepopulation, finds
 * nothing before wait_idle, then reads a 4 KiB block per get; puts after the
 * seal are ignored; a reopen reads what the file holds; a file it cannot
 * read is an error, not a found value. */
static void test_devread(void **state)
{
    (void)state;
    const engine_ops *ops = engine_find("devread");
    assert_non_null(ops);
    char why[128] = "";
    assert_true(ops->available(why, sizeof why));
    char *root = tu_tmpdir("bench-devread");
    char *dir = tu_path(root, "db");
    char *data = tu_path(dir, "devread.dat");
    engine_config cfg = small_config(dir);
    cfg.direct_io = 1; /* falls back to the page cache where O_DIRECT is refused */
    engine *e = open_or_fail(ops, &cfg);
    char val[1000];
    memset(val, 'v', sizeof val);
    size_t vn = 99;
    for (int i = 0; i < 3000; i++) {
        char key[16];
        int kn = snprintf(key, sizeof key, "k%06d", i);
        assert_int_equal(ops->put(e, key, (size_t)kn, val, sizeof val), 0);
        if (i == 10) assert_int_equal(ops->get(e, key, (size_t)kn, &vn), 1); /* not sealed: no read */
    }
    assert_int_equal(vn, 0);
    assert_int_equal(ops->wait_idle(e), 0);
    assert_int_equal(tu_file_size(data), 3000 * 1000); /* buffer written and synced */
    engine_stats st;
    assert_int_equal(ops->stats(e, &st), 0);
    assert_int_equal(st.device_bytes_written, 3000 * 1000);
    for (int i = 0; i < 200; i++) {
        char key[16];
        int kn = snprintf(key, sizeof key, "x%d", i);
        assert_int_equal(ops->get(e, key, (size_t)kn, &vn), 0);
        assert_int_equal(vn, 4096);
    }
    const char *keys[2] = {"a", "b"};
    size_t kns[2] = {1, 1};
    int found[2] = {0, 0};
    assert_int_equal(ops->multi_get(e, 2, keys, kns, found), 0);
    assert_int_equal(found[0] + found[1], 2);
    engine_iter *it = ops->iter_new(e); /* no iteration: the empty iterator */
    assert_non_null(it);
    ops->iter_seek_first(it);
    assert_false(ops->iter_valid(it));
    ops->iter_free(it);
    assert_int_equal(ops->put(e, "late", 4, val, sizeof val), 0); /* sealed: ignored */
    assert_int_equal(ops->stats(e, &st), 0);
    assert_non_null(strstr(st.detail, "reads=202 ignored_writes=1"));
    ops->close(e);
    assert_int_equal(tu_file_size(data), 3000 * 1000);

    e = open_or_fail(ops, &cfg); /* a reopen is sealed at once */
    assert_int_equal(ops->get(e, "k000001", 7, &vn), 0);
    assert_int_equal(vn, 4096);
    ops->close(e);

    /* shrink the file under an open engine: a read past the end is an error */
    e = open_or_fail(ops, &cfg);
    assert_int_equal(truncate(data, 0), 0);
    assert_true(ops->get(e, "k000001", 7, &vn) < 0);
    assert_non_null(strstr(ops->last_error(), "short read"));
    ops->close(e);
    free(data);
    free(dir);
    tu_tmpdir_free(root);
}

int main(void)
{
    tu_seed();
    /* One case per engine of the registry (so a new engine is tested
     * without touching this file), then the fixed cases. */
    char names[256];
    snprintf(names, sizeof names, "%s", engine_names());
    struct CMUnitTest tests[16];
    char test_names[16][48];
    size_t n = 0;
    tests[n++] = (struct CMUnitTest){.name = "registry", .test_func = test_registry};
    for (char *save = NULL, *nm = strtok_r(names, ",", &save); nm && n < 13; nm = strtok_r(NULL, ",", &save)) {
        if (!strcmp(nm, "null") || !strcmp(nm, "devread")) continue; /* they store nothing to compare */
        snprintf(test_names[n], sizeof test_names[n], "engine_%s", nm);
        tests[n] = (struct CMUnitTest){.name = test_names[n], .test_func = test_engine, .initial_state = nm};
        n++;
    }
    tests[n++] = (struct CMUnitTest){.name = "tierkv_options", .test_func = test_tierkv_options};
    tests[n++] = (struct CMUnitTest){.name = "null_engine", .test_func = test_null};
    tests[n++] = (struct CMUnitTest){.name = "devread_engine", .test_func = test_devread};
    return _cmocka_run_group_tests("bench_engines", tests, n, NULL, NULL);
}
