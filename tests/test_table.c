// SPDX-License-Identifier: Apache-2.0
/*
 * test_table.c -- SSTables (src/sst/table_builder.c, table_reader.c): tables of
 * 0..200k entries (many versions of one user key across block boundaries,
 * deletions, empty and 100 KB values), with and without lz4 (compressible and
 * incompressible values) and with and without a block cache, checked after
 * reopening against the input by table_get, forward and reverse iteration and
 * random seeks; properties; concurrent readers; the per-thread reuse of
 * block buffers (block_mem.c), across threads too; builder argument and I/O
 * errors; and damage: a flipped bit in each kind of block, truncations and
 * checksum-valid garbage all give TKV_CORRUPTION naming the file, never wrong
 * data or a crash.
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
#include <unistd.h>

#include <cmocka.h>

#include "io/io.h"
#include "sst/block.h"
#include "sst/cache.h"
#include "sst/format.h"
#include "sst/table.h"
#include "sst/table_int.h"
#include "testutil.h"
#include "util/checksum.h"
#include "util/status.h"

/* ---------------------------------------------------------------- input */

typedef struct ent {
    uint8_t *k; /* internal key */
    size_t kn;
    uint8_t *v;
    size_t vn;
} ent;

typedef struct spec {
    size_t n;         /* entries */
    int compressible; /* values from a small vocabulary (lz4 shrinks them) */
    int big_values;   /* some 100 KB values */
    int hot_key;      /* one user key with ~600 versions (spans many blocks) */
    size_t max_value; /* small values are 0..max_value bytes */
} spec;

static const char *const words[] = {"alpha ", "beta ", "gamma ", "delta ", "tierkv ", "block ", "lsm ", "key "};

static void fill_value(tu_rng *r, uint8_t *v, size_t n, int compressible)
{
    if (!compressible) {
        tu_rng_fill(r, v, n);
        return;
    }
    size_t i = 0;
    while (i < n) {
        const char *w = words[tu_rng_below(r, 8)];
        size_t wl = strlen(w);
        if (wl > n - i) wl = n - i;
        memcpy(v + i, w, wl);
        i += wl;
    }
}

/* ukey_of -- the user key of user number ux: "k%010u" + a suffix of 0..12
 * letters that depends on ux only (so absent keys can be rebuilt). */
static size_t ukey_of(unsigned ux, char *out)
{
    int n = sprintf(out, "k%010u", ux);
    unsigned sl = (unsigned)(tu_mix64(ux) % 13);
    for (unsigned i = 0; i < sl; i++) out[n + (int)i] = (char)('a' + tu_mix64(ux * 31u + i) % 26);
    return (size_t)n + sl;
}

/* gen -- spec.n entries in ikey order. User numbers advance by 3 (so ux+1 and
 * ux+2 are absent keys); sequence numbers decrease within a user key. */
static ent *gen(const spec *s, tu_rng *r)
{
    ent *e = calloc(s->n ? s->n : 1, sizeof *e);
    assert_non_null(e);
    size_t i = 0;
    unsigned ux = 3;
    size_t hot_at = s->hot_key ? s->n / 3 : SIZE_MAX;
    size_t big_left = s->big_values ? 12 : 0;
    char u[32];
    while (i < s->n) {
        size_t versions = 1;
        uint64_t c = tu_rng_below(r, 100);
        if (i >= hot_at) {
            versions = 600;
            hot_at = SIZE_MAX;
        } else if (c >= 80) {
            versions = 2 + (size_t)tu_rng_below(r, 3);
        }
        size_t un = ukey_of(ux, u);
        uint64_t seq = 10 + tu_rng_below(r, UINT64_C(1) << 40) + 4 * versions;
        for (size_t v = 0; v < versions && i < s->n; v++, i++) {
            ikey_type t = tu_rng_below(r, 10) == 0 ? IKEY_DELETION : IKEY_VALUE;
            e[i].kn = un + IKEY_TRAILER;
            e[i].k = malloc(e[i].kn);
            assert_non_null(e[i].k);
            ikey_encode(e[i].k, u, un, seq, t);
            seq -= 1 + tu_rng_below(r, 3);
            size_t vn = 0;
            if (t == IKEY_VALUE && tu_rng_below(r, 20) != 0) {
                vn = (size_t)tu_rng_below(r, s->max_value + 1);
                if (big_left && tu_rng_below(r, s->n / 16 + 1) == 0) {
                    vn = 100 * 1024 + (size_t)tu_rng_below(r, 100);
                    big_left--;
                }
            }
            e[i].vn = vn;
            e[i].v = malloc(vn ? vn : 1);
            assert_non_null(e[i].v);
            fill_value(r, e[i].v, vn, s->compressible);
        }
        ux += 3;
    }
    return e;
}

static void free_ents(ent *e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(e[i].k);
        free(e[i].v);
    }
    free(e);
}

static tkv_slice ekey(const ent *e) { return slice(e->k, e->kn); }

/* ---------------------------------------------------------------- build / open */

static uint64_t build_table(const char *path, const ent *e, size_t n, const table_options *o)
{
    io_file *f;
    assert_int_equal(io_open_append(path, 0, IO_FLUSH, NULL, &f), 0);
    table_builder *b;
    assert_int_equal(table_builder_new(f, o, &b), 0);
    uint64_t last = 0;
    for (size_t i = 0; i < n; i++) {
        int rc = table_builder_add(b, ekey(&e[i]), slice(e[i].v, e[i].vn));
        if (rc) fail_msg("add %zu: %d %s", i, rc, tkv_errmsg());
        /* without compression the estimate never shrinks (with lz4 it drops
         * when a block is written smaller than it was estimated) */
        uint64_t sz = table_builder_file_size(b);
        if (o->compression == SST_COMPRESS_NONE) assert_true(sz >= last);
        last = sz;
    }
    assert_int_equal(table_builder_num_entries(b), n);
    assert_int_equal(table_builder_finish(b), 0);
    uint64_t size = f->size;
    assert_int_equal(table_builder_file_size(b), size);
    /* finished: further adds are refused */
    if (n) assert_int_equal(table_builder_add(b, ekey(&e[n - 1]), slice("", 0)), TKV_INVALID);
    table_builder_free(b);
    assert_int_equal(io_sync(f), 0);
    assert_int_equal(io_close(f), 0);
    return size;
}

static table *open_table(const char *path, uint64_t size, tkv_cache *cache)
{
    io_file *f;
    assert_int_equal(io_open_read(path, IO_USER_READ, NULL, &f), 0);
    table *t;
    int rc = table_open(f, size, cache, &t);
    if (rc) fail_msg("table_open %s: %d %s", path, rc, tkv_errmsg());
    return t;
}

/* ---------------------------------------------------------------- checks */

static size_t lower_bound(const ent *e, size_t n, tkv_slice target)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ikey_cmp(ekey(&e[mid]), target) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static void expect_entry(tkv_it *it, const ent *e, size_t i, const char *what)
{
    if (!it_valid(it))
        fail_msg("%s: entry %zu expected, iterator invalid (status %d %s)", what, i, it_status(it), tkv_errmsg());
    tkv_slice k = it_key(it), v = it_value(it);
    if (k.n != e[i].kn || memcmp(k.p, e[i].k, k.n))
        fail_msg("%s: entry %zu key %s, want %s", what, i, tu_hex(k.p, k.n), tu_hex(e[i].k, e[i].kn));
    if (v.n != e[i].vn || (v.n && memcmp(v.p, e[i].v, v.n))) fail_msg("%s: entry %zu value differs", what, i);
}

static void expect_get(table *t, tkv_slice uk, uint64_t seq, const ent *e, size_t n, size_t want, tkv_buf *val,
                       const char *what)
{
    ikey_type ty = (ikey_type)99;
    int rc = table_get(t, uk, seq, &ty, val);
    if (rc < 0)
        fail_msg("%s: get %s@%llu: error %d %s", what, tu_hex(uk.p, uk.n), (unsigned long long)seq, rc, tkv_errmsg());
    if (want == SIZE_MAX) {
        if (rc != 0)
            fail_msg("%s: get %s@%llu found something, want nothing", what, tu_hex(uk.p, uk.n),
                     (unsigned long long)seq);
        return;
    }
    assert_true(want < n);
    if (rc != 1)
        fail_msg("%s: get %s@%llu not found, want entry %zu", what, tu_hex(uk.p, uk.n), (unsigned long long)seq, want);
    if (ty != ikey_get_type(ekey(&e[want]))) fail_msg("%s: entry %zu type %d", what, want, (int)ty);
    if (val->len != e[want].vn || (val->len && memcmp(val->data, e[want].v, val->len)))
        fail_msg("%s: get of entry %zu returned a different value (%zu bytes, want %zu)", what, want, val->len,
                 e[want].vn);
}

/* verify -- everything in table t against e[0..n); expect_filter: the table
 * has a bloom filter, which must turn away nearly all absent keys. */
static void verify(table *t, const ent *e, size_t n, tu_rng *r, int expect_filter, const char *what)
{
    /* properties */
    const table_props *p = table_properties(t);
    uint64_t dels = 0, kb = 0, vb = 0, mins = UINT64_MAX, maxs = 0;
    for (size_t i = 0; i < n; i++) {
        dels += ikey_get_type(ekey(&e[i])) == IKEY_DELETION;
        kb += e[i].kn;
        vb += e[i].vn;
        uint64_t s = ikey_seq(ekey(&e[i]));
        if (s < mins) mins = s;
        if (s > maxs) maxs = s;
    }
    assert_int_equal(p->num_entries, n);
    assert_int_equal(p->num_deletions, dels);
    assert_int_equal(p->raw_key_bytes, kb);
    assert_int_equal(p->raw_value_bytes, vb);
    if (n) {
        assert_int_equal(p->min_seq, mins);
        assert_int_equal(p->max_seq, maxs);
        assert_int_equal(p->smallest.len, e[0].kn);
        assert_memory_equal(p->smallest.data, e[0].k, e[0].kn);
        assert_int_equal(p->largest.len, e[n - 1].kn);
        assert_memory_equal(p->largest.data, e[n - 1].k, e[n - 1].kn);
        assert_true(p->num_data_blocks >= 1);
        assert_true(p->data_bytes >= p->num_data_blocks * (SST_TRAILER_SIZE + 4));
    } else {
        assert_int_equal(p->num_data_blocks, 0);
        assert_int_equal(p->smallest.len, 0);
        assert_int_equal(p->largest.len, 0);
    }

    /* point reads: every version at its own sequence, just below it, the newest
     * at the maximum sequence, and nothing below the oldest */
    tkv_buf val = {0};
    size_t distinct = 0;
    for (size_t i = 0; i < n; i++) {
        tkv_slice k = ekey(&e[i]), uk = ikey_user(k);
        uint64_t s = ikey_seq(k);
        int first_of_key = i == 0 || ukey_cmp(ikey_user(ekey(&e[i - 1])), uk) != 0;
        distinct += first_of_key;
        int last_of_key = i + 1 == n || ukey_cmp(ikey_user(ekey(&e[i + 1])), uk) != 0;
        expect_get(t, uk, s, e, n, i, &val, what);
        expect_get(t, uk, s - 1, e, n, last_of_key ? SIZE_MAX : i + 1, &val, what);
        if (first_of_key) expect_get(t, uk, IKEY_MAX_SEQ, e, n, i, &val, what);
        if (first_of_key) expect_get(t, uk, UINT64_MAX, e, n, i, &val, what);
    }
    /* absent user keys: between, before the first and after the last */
    table_read_stats st0, st1;
    table_get_read_stats(t, &st0);
    size_t absent = 0;
    char u[32];
    for (size_t i = 0; i < n; i += 1 + i % 3) {
        /* each user key's neighbours once: probing them once per version of a
         * hot key would count one false positive hundreds of times */
        if (i > 0 && ukey_cmp(ikey_user(ekey(&e[i - 1])), ikey_user(ekey(&e[i]))) == 0) continue;
        /* the user number of entry i is parsed back from its key */
        unsigned ux = (unsigned)strtoul((const char *)e[i].k + 1, NULL, 10);
        for (unsigned d = 1; d <= 2; d++) {
            size_t un = ukey_of(ux + d, u);
            expect_get(t, slice(u, un), IKEY_MAX_SEQ, e, n, SIZE_MAX, &val, what);
            absent++;
        }
    }
    expect_get(t, slice("a", 1), IKEY_MAX_SEQ, e, n, SIZE_MAX, &val, what);
    expect_get(t, slice("", 0), IKEY_MAX_SEQ, e, n, SIZE_MAX, &val, what);
    expect_get(t, slice("zzz", 3), IKEY_MAX_SEQ, e, n, SIZE_MAX, &val, what);
    table_get_read_stats(t, &st1);
    /* Only a filter over many keys has a false-positive rate close to theory:
     * a filter over a few dozen keys is a few hundred bits and its realized
     * rate varies widely from one key set to another. */
    if (expect_filter && absent > 1000 && distinct >= 2000) {
        /* the filter (10 bits/key by default) turns away nearly all of them */
        uint64_t neg = st1.bloom_negatives - st0.bloom_negatives;
        if (neg * 100 < absent * 95)
            fail_msg("%s: bloom rejected only %llu of %zu absent keys", what, (unsigned long long)neg, absent);
    }
    buf_free(&val);

    /* full forward and reverse iteration */
    tkv_it *it = table_iter(t);
    assert_non_null(it);
    size_t i = 0;
    for (it_seek_first(it); it_valid(it); it_next(it), i++) expect_entry(it, e, i, what);
    assert_int_equal(it_status(it), 0);
    assert_int_equal(i, n);
    for (it_seek_last(it); it_valid(it); it_prev(it)) expect_entry(it, e, --i, what);
    assert_int_equal(it_status(it), 0);
    assert_int_equal(i, 0);

    /* random seeks, each followed by a few steps either way */
    uint8_t tk[64];
    for (int s = 0; s < 3000; s++) {
        tkv_slice target;
        size_t j = n ? (size_t)tu_rng_below(r, n) : 0;
        uint64_t kind = tu_rng_below(r, 4);
        if (n && kind == 0) {
            target = ekey(&e[j]);
        } else if (n && kind == 1) { /* same user key, a random sequence */
            tkv_slice uk = ikey_user(ekey(&e[j]));
            ikey_encode(tk, uk.p, uk.n, tu_rng_below(r, UINT64_C(1) << 41), IKEY_SEEK_TYPE);
            target = slice(tk, uk.n + IKEY_TRAILER);
        } else { /* a user key absent from the table */
            size_t un = ukey_of((unsigned)tu_rng_below(r, 3 * (unsigned)n + 10), u);
            ikey_encode(tk, u, un, IKEY_MAX_SEQ, IKEY_SEEK_TYPE);
            target = slice(tk, un + IKEY_TRAILER);
        }
        size_t pos = lower_bound(e, n, target);
        it_seek(it, target);
        if (pos == n) {
            assert_false(it_valid(it));
            continue;
        }
        expect_entry(it, e, pos, "seek");
        for (int step = 0; step < 6; step++) {
            if (tu_rng_below(r, 2)) {
                it_next(it);
                if (++pos == n) {
                    assert_false(it_valid(it));
                    break;
                }
            } else {
                it_prev(it);
                if (pos == 0) {
                    assert_false(it_valid(it));
                    break;
                }
                pos--;
            }
            expect_entry(it, e, pos, "seek+step");
        }
    }
    assert_int_equal(it_status(it), 0);
    /* a seek target that is not an internal key */
    it_seek(it, slice("abc", 3));
    assert_false(it_valid(it));
    assert_int_equal(it_status(it), TKV_INVALID);
    it_destroy(it);
}

/* run_case -- generate, build, reopen without and with a cache, verify. */
static void run_case(const spec *s, const table_options *o, int with_cache, const char *what, table_props *props_out)
{
    tu_rng r;
    tu_rng_init(&r, tu_seed() ^ tu_mix64(s->n * 131 + (size_t)o->compression));
    ent *e = gen(s, &r);
    char *dir = tu_tmpdir("sst");
    char *path = tu_path(dir, "000001.sst");
    uint64_t size = build_table(path, e, s->n, o);
    tkv_cache *cache = with_cache ? cache_new(8u << 20, 2) : NULL;
    table *t = open_table(path, size, cache);
    verify(t, e, s->n, &r, o->bloom_bits_per_key > 0, what);
    if (props_out) {
        *props_out = *table_properties(t);
        props_out->smallest = props_out->largest = (tkv_buf){0};
    }
    table_read_stats st;
    table_get_read_stats(t, &st);
    if (cache && s->n > 100) assert_true(st.block_cache_hits > 0);
    if (!cache) assert_int_equal(st.block_cache_hits, 0);
    table_close(t);
    cache_free(cache);
    free(path);
    tu_tmpdir_free(dir);
    free_ents(e, s->n);
}

/* ---------------------------------------------------------------- cases */

static void test_table_small(void **state)
{
    (void)state;
    const size_t sizes[] = {0, 1, 2, 3, 17, 100, 1000};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        for (int variant = 0; variant < 4; variant++) {
            spec s = {.n = sizes[i], .compressible = variant & 1, .max_value = 100};
            table_options o;
            table_options_default(&o);
            o.compression = variant & 1;
            char what[64];
            snprintf(what, sizeof what, "%zu entries, variant %d", sizes[i], variant);
            run_case(&s, &o, variant >> 1, what, NULL);
        }
    }
}

static void test_table_versions_deletions(void **state)
{
    (void)state;
    spec s = {.n = 20000, .hot_key = 1, .max_value = 200};
    table_options o;
    table_options_default(&o);
    table_props p;
    run_case(&s, &o, 0, "20k versions, no cache", &p);
    assert_true(p.num_data_blocks > 100);
    assert_int_equal(p.num_compressed_blocks, 0);
    assert_int_equal(p.compression, 0);
    run_case(&s, &o, 1, "20k versions, cache", NULL);
    /* small blocks and every restart interval of interest */
    o.block_size = 256;
    o.restart_interval = 1;
    s.n = 5000;
    run_case(&s, &o, 1, "block 256, restart 1", NULL);
    o.restart_interval = 2;
    run_case(&s, &o, 0, "block 256, restart 2", NULL);
    o.block_size = 1; /* one entry per block */
    o.restart_interval = 16;
    s.n = 2000;
    run_case(&s, &o, 0, "one entry per block", &p);
    assert_int_equal(p.num_data_blocks, 2000);
}

static void test_table_lz4(void **state)
{
    (void)state;
    table_options o;
    table_options_default(&o);
    o.compression = SST_COMPRESS_LZ4;
    table_props p;
    spec s = {.n = 20000, .compressible = 1, .hot_key = 1, .max_value = 300};
    run_case(&s, &o, 1, "lz4 compressible, cache", &p);
    print_message("compressible: %llu of %llu blocks compressed, %llu data bytes for %llu raw\n",
                  (unsigned long long)p.num_compressed_blocks, (unsigned long long)p.num_data_blocks,
                  (unsigned long long)p.data_bytes, (unsigned long long)(p.raw_key_bytes + p.raw_value_bytes));
    assert_int_equal(p.compression, 1);
    assert_true(p.num_compressed_blocks * 10 >= p.num_data_blocks * 9);
    assert_true(p.data_bytes * 10 < (p.raw_key_bytes + p.raw_value_bytes) * 7);
    run_case(&s, &o, 0, "lz4 compressible, no cache", NULL);

    s.compressible = 0;
    run_case(&s, &o, 0, "lz4 incompressible, no cache", &p);
    print_message("incompressible: %llu of %llu blocks compressed\n", (unsigned long long)p.num_compressed_blocks,
                  (unsigned long long)p.num_data_blocks);
    assert_true(p.num_compressed_blocks * 10 < p.num_data_blocks);
    run_case(&s, &o, 1, "lz4 incompressible, cache", NULL);
}

static void test_table_big_values(void **state)
{
    (void)state;
    table_options o;
    table_options_default(&o);
    for (int v = 0; v < 4; v++) {
        o.compression = v & 1;
        spec s = {.n = 400, .compressible = (v >> 1) & 1, .big_values = 1, .max_value = 2000};
        table_props p;
        run_case(&s, &o, v & 1, "100 KB values", &p);
        assert_true(p.raw_value_bytes > 5 * 100 * 1024); /* several big values made it in */
    }
}

static void test_table_200k(void **state)
{
    (void)state;
    table_options o;
    table_options_default(&o);
    o.compression = SST_COMPRESS_LZ4;
    spec s = {.n = 200000, .compressible = 1, .hot_key = 1, .big_values = 1, .max_value = 120};
    double t0 = tu_now_ms();
    run_case(&s, &o, 1, "200k", NULL);
    print_message("200k entries: %.0f ms\n", tu_now_ms() - t0);
}

/* no filter (bloom_bits_per_key 0): every key "may" be present; reads still
 * correct. */
static void test_table_no_filter(void **state)
{
    (void)state;
    tu_rng r;
    tu_rng_init(&r, tu_seed() + 7);
    spec s = {.n = 3000, .max_value = 50};
    ent *e = gen(&s, &r);
    char *dir = tu_tmpdir("sst");
    char *path = tu_path(dir, "nofilter.sst");
    table_options o;
    table_options_default(&o);
    o.bloom_bits_per_key = 0;
    uint64_t size = build_table(path, e, s.n, &o);
    table *t = open_table(path, size, NULL);
    assert_true(table_may_contain(t, slice("absent", 6)));
    verify(t, e, s.n, &r, 0, "no filter");
    table_read_stats st;
    table_get_read_stats(t, &st);
    assert_int_equal(st.bloom_negatives, 0);
    table_close(t);
    /* with a filter the same absent key is rejected */
    o.bloom_bits_per_key = 10;
    size = build_table(path, e, s.n, &o);
    t = open_table(path, size, NULL);
    int rejected = 0;
    char u[32];
    for (unsigned ux = 4; ux < 3000; ux += 3) rejected += !table_may_contain(t, slice(u, ukey_of(ux, u)));
    assert_true(rejected > 900);
    table_close(t);
    free(path);
    tu_tmpdir_free(dir);
    free_ents(e, s.n);
}

/* A cache far smaller than the table: blocks are evicted while iterators and
 * gets still hold them pinned (ASan would catch a use after free). */
static void test_table_small_cache_pinning(void **state)
{
    (void)state;
    tu_rng r;
    tu_rng_init(&r, tu_seed() + 8);
    spec s = {.n = 10000, .hot_key = 1, .max_value = 100};
    ent *e = gen(&s, &r);
    char *dir = tu_tmpdir("sst");
    char *path = tu_path(dir, "pin.sst");
    table_options o;
    table_options_default(&o);
    uint64_t size = build_table(path, e, s.n, &o);
    tkv_cache *cache = cache_new(8192, 0);
    table *t = open_table(path, size, cache);
    tkv_it *a = table_iter(t), *b = table_iter(t), *c = table_iter(t);
    size_t ia = 0, ib = s.n - 1;
    it_seek_first(a);
    it_seek_last(b);
    tkv_buf val = {0};
    while (it_valid(a)) {
        expect_entry(a, e, ia, "forward under eviction");
        expect_entry(b, e, ib, "reverse under eviction");
        size_t j = (size_t)tu_rng_below(&r, s.n);
        it_seek(c, ekey(&e[j]));
        expect_entry(c, e, j, "seek under eviction");
        expect_get(t, ikey_user(ekey(&e[j])), ikey_seq(ekey(&e[j])), e, s.n, j, &val, "get under eviction");
        it_next(a);
        it_prev(b);
        ia++;
        ib--;
    }
    assert_int_equal(ia, s.n);
    assert_false(it_valid(b));
    assert_int_equal(it_status(a) | it_status(b) | it_status(c), 0);
    it_destroy(a);
    it_destroy(b);
    it_destroy(c);
    cache_stats cs;
    cache_get_stats(cache, &cs);
    assert_true(cs.evictions > 0);
    assert_int_equal(cs.pinned, 0); /* every handle given back */
    buf_free(&val);
    table_close(t);
    cache_free(cache);
    free(path);
    tu_tmpdir_free(dir);
    free_ents(e, s.n);
}

/* ---------------------------------------------------------------- concurrency */

typedef struct reader_arg {
    table *t;
    const ent *e;
    size_t n;
    uint64_t seed;
    size_t bad;
} reader_arg;

static void *reader(void *p)
{
    reader_arg *a = p;
    tu_rng r;
    tu_rng_init(&r, a->seed);
    tkv_buf val = {0};
    for (int i = 0; i < 20000; i++) {
        size_t j = (size_t)tu_rng_below(&r, a->n);
        tkv_slice k = ekey(&a->e[j]);
        ikey_type ty;
        int rc = table_get(a->t, ikey_user(k), ikey_seq(k), &ty, &val);
        if (rc != 1 || ty != ikey_get_type(k) || val.len != a->e[j].vn ||
            (val.len && memcmp(val.data, a->e[j].v, val.len)))
            a->bad++;
        if (i % 1000 == 0) { /* and a short scan */
            tkv_it *it = table_iter(a->t);
            it_seek(it, k);
            for (size_t s = j; s < j + 50 && s < a->n; s++, it_next(it))
                if (!it_valid(it) || it_key(it).n != a->e[s].kn || memcmp(it_key(it).p, a->e[s].k, a->e[s].kn))
                    a->bad++;
            it_destroy(it);
        }
    }
    buf_free(&val);
    return NULL;
}

static void test_table_concurrent_reads(void **state)
{
    (void)state;
    tu_rng r;
    tu_rng_init(&r, tu_seed() + 9);
    spec s = {.n = 20000, .max_value = 100, .hot_key = 1};
    ent *e = gen(&s, &r);
    char *dir = tu_tmpdir("sst");
    char *path = tu_path(dir, "conc.sst");
    table_options o;
    table_options_default(&o);
    o.compression = SST_COMPRESS_LZ4;
    uint64_t size = build_table(path, e, s.n, &o);
    for (int with_cache = 0; with_cache < 2; with_cache++) {
        tkv_cache *cache = with_cache ? cache_new(64 * 1024, 2) : NULL;
        table *t = open_table(path, size, cache);
        pthread_t th[4];
        reader_arg args[4];
        for (int i = 0; i < 4; i++) {
            args[i] = (reader_arg){t, e, s.n, tu_seed() + (uint64_t)i * 77, 0};
            assert_int_equal(pthread_create(&th[i], NULL, reader, &args[i]), 0);
        }
        for (int i = 0; i < 4; i++) {
            pthread_join(th[i], NULL);
            assert_int_equal(args[i].bad, 0);
        }
        table_read_stats st;
        table_get_read_stats(t, &st);
        assert_true(st.bloom_checks >= 80000);
        if (with_cache) assert_true(st.block_cache_hits > 0);
        table_close(t);
        cache_free(cache);
    }
    free(path);
    tu_tmpdir_free(dir);
    free_ents(e, s.n);
}

/* ---------------------------------------------------------------- block memory */

/* The checks below run on threads of their own (each starts with an empty
 * stash). A cmocka assertion cannot fail there -- it would jump into the main
 * thread's frame -- so a thread returns the first failed condition as a
 * string and test_block_mem fails with it. */
#define TSTR2(x) #x
#define TSTR(x)  TSTR2(x)
#define TCHECK(c)                                                                                                      \
    do {                                                                                                               \
        if (!(c)) return (void *)("test_table.c:" TSTR(__LINE__) ": " #c);                                             \
    } while (0)

/* fill_check -- writes a pattern over b's whole capacity and checks it back
 * (ASan: the capacity is really there). 1 if it reads back. */
static int fill_check(cached_block *b, uint8_t seed)
{
    memset(b->data, seed, b->cap);
    for (size_t i = 0; i < b->cap; i += 97)
        if (b->data[i] != seed) return 0;
    return 1;
}

/* A thread's freed block buffers come back to it: best fit first, only when
 * they are large enough and not much larger, never more than 8 kept, large
 * ones never kept. */
static void *block_mem_thread(void *arg)
{
    (void)arg;
    cached_block *a = block_mem_alloc(4000);
    TCHECK(a != NULL);
    TCHECK((a->size) == (4000));
    TCHECK(a->cap >= 4000 && a->cap < 4000 + 256);
    TCHECK(fill_check(a, 1));
    block_mem_free(a);
    cached_block *b = block_mem_alloc(3900); /* fits in a's buffer: reused */
    TCHECK(b == a);
    TCHECK((b->size) == (3900));
    cached_block *c = block_mem_alloc(9000); /* nothing kept fits */
    TCHECK(c != b && c->cap >= 9000 && c->cap < 9000 + 256);
    TCHECK(fill_check(c, 2));
    block_mem_free(b);
    block_mem_free(c);
    cached_block *d = block_mem_alloc(8000); /* best fit: c's, not b's (too small) */
    TCHECK(d == c);
    cached_block *e = block_mem_alloc(3500); /* b's */
    TCHECK(e == b);
    block_mem_free(d);
    block_mem_free(e);
    /* a kept buffer far larger than the block is not handed out: the cache
     * charges the block's size, which would understate the memory */
    cached_block *f = block_mem_alloc(1000); /* (malloc may place it where b was: compare capacities) */
    TCHECK(f->cap >= 1000 && f->cap < 1000 + 256);
    block_mem_free(f);
    /* more than 8 freed: the stash keeps 8, the rest go back to malloc */
    cached_block *many[12];
    for (int i = 0; i < 12; i++) {
        many[i] = block_mem_alloc(1000 + (size_t)i);
        TCHECK(fill_check(many[i], (uint8_t)i));
    }
    for (int i = 0; i < 12; i++) block_mem_free(many[i]);
    /* a large block is plain malloc and never handed out again */
    cached_block *big = block_mem_alloc(1u << 20);
    TCHECK(big != NULL);
    TCHECK((big->cap) == (1u << 20));
    TCHECK(fill_check(big, 3));
    block_mem_free(big);
    cached_block *big2 = block_mem_alloc(100u << 10);
    TCHECK((big2->cap) == (100u << 10));
    block_mem_free(big2);
    block_mem_free(NULL);
    return NULL;
}

/* Blocks made on one thread and freed on another (the block cache's
 * evictions): the freeing thread reuses them; thread exit frees what it kept
 * (ASan's leak check). */
typedef struct handoff {
    cached_block *blk[64];
} handoff;

static void *block_mem_consumer(void *arg)
{
    handoff *h = arg;
    for (int i = 0; i < 64; i++) {
        TCHECK((h->blk[i]->data[0]) == ((uint8_t)i));
        block_mem_free(h->blk[i]);
    }
    for (int i = 0; i < 64; i++) {
        cached_block *b = block_mem_alloc(2000);
        TCHECK(fill_check(b, (uint8_t)i));
        block_mem_free(b);
    }
    return NULL;
}

static void test_block_mem(void **state)
{
    (void)state;
    pthread_t th;
    void *failed = NULL;
    assert_int_equal(pthread_create(&th, NULL, block_mem_thread, NULL), 0);
    assert_int_equal(pthread_join(th, &failed), 0);
    if (failed) fail_msg("%s", (const char *)failed);
    handoff h;
    for (int i = 0; i < 64; i++) {
        h.blk[i] = block_mem_alloc(2000 + (size_t)i * 10);
        assert_non_null(h.blk[i]);
        assert_true(fill_check(h.blk[i], (uint8_t)i));
    }
    assert_int_equal(pthread_create(&th, NULL, block_mem_consumer, &h), 0);
    assert_int_equal(pthread_join(th, &failed), 0);
    if (failed) fail_msg("%s", (const char *)failed);
}

/* ---------------------------------------------------------------- builder errors */

static void test_table_builder_errors(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("sst");
    char *path = tu_path(dir, "err.sst");
    io_file *f;
    assert_int_equal(io_open_append(path, 0, IO_FLUSH, NULL, &f), 0);
    table_builder *b;
    table_options o;
    table_options_default(&o);
    o.block_size = 0;
    assert_int_equal(table_builder_new(f, &o, &b), TKV_INVALID);
    assert_non_null(strstr(tkv_errmsg(), "block_size"));
    table_options_default(&o);
    o.restart_interval = 0;
    assert_int_equal(table_builder_new(f, &o, &b), TKV_INVALID);
    table_options_default(&o);
    o.compression = 2;
    assert_int_equal(table_builder_new(f, &o, &b), TKV_INVALID);
    table_options_default(&o);
    o.bloom_bits_per_key = -1;
    assert_int_equal(table_builder_new(f, &o, &b), TKV_INVALID);

    assert_int_equal(table_builder_new(f, NULL, &b), 0);
    uint8_t k1[16], k2[16], k3[16];
    ikey_encode(k1, "bbbb", 4, 10, IKEY_VALUE);
    ikey_encode(k2, "bbbb", 4, 9, IKEY_VALUE); /* older version of bbbb: after k1 */
    ikey_encode(k3, "aaaa", 4, 50, IKEY_VALUE);
    assert_int_equal(table_builder_add(b, slice(k1, 12), slice("v1", 2)), 0);
    assert_int_equal(table_builder_add(b, slice(k1, 12), slice("v1", 2)), TKV_INVALID); /* equal */
    assert_int_equal(table_builder_add(b, slice(k3, 12), slice("v3", 2)), TKV_INVALID); /* smaller */
    assert_int_equal(table_builder_add(b, slice("short", 5), slice("", 0)), TKV_INVALID);
    uint8_t bad[12];
    memcpy(bad, "cccc", 4);
    enc_u64(bad + 4, ikey_pack(5, IKEY_VALUE) | 7); /* unknown type */
    assert_int_equal(table_builder_add(b, slice(bad, 12), slice("", 0)), TKV_INVALID);
    /* the rejected calls changed nothing */
    assert_int_equal(table_builder_add(b, slice(k2, 12), slice("v2", 2)), 0);
    assert_int_equal(table_builder_num_entries(b), 2);
    assert_int_equal(table_builder_finish(b), 0);
    assert_int_equal(table_builder_finish(b), TKV_INVALID);
    uint64_t size = table_builder_file_size(b);
    table_builder_free(b);
    io_close(f);
    table *t = open_table(path, size, NULL);
    tkv_buf val = {0};
    ikey_type ty;
    assert_int_equal(table_get(t, slice("bbbb", 4), 100, &ty, &val), 1);
    assert_memory_equal(val.data, "v1", 2);
    assert_int_equal(table_get(t, slice("bbbb", 4), 9, &ty, &val), 1);
    assert_memory_equal(val.data, "v2", 2);
    assert_int_equal(table_get(t, slice("bbbb", 4), 8, &ty, &val), 0);
    assert_int_equal(table_get(t, slice("aaaa", 4), 100, &ty, &val), 0);
    buf_free(&val);
    table_close(t);

    /* ENOSPC while writing: the error is returned and sticks */
    for (int after = 0; after < 4; after++) {
        assert_int_equal(io_open_append(path, 0, IO_FLUSH, NULL, &f), 0);
        tu_fault plan = {IO_OP_WRITE, path, after, -1, ENOSPC, 0}; /* `after` writes, then ENOSPC */
        io_set_fault_hook(tu_fault_hook, &plan);
        table_options_default(&o);
        o.block_size = 64;
        assert_int_equal(table_builder_new(f, &o, &b), 0);
        int rc = 0;
        uint8_t k[32];
        char u[16];
        for (unsigned i = 0; i < 200 && rc == 0; i++) {
            int n = sprintf(u, "key%06u", i);
            ikey_encode(k, u, (size_t)n, 1, IKEY_VALUE);
            rc = table_builder_add(b, slice(k, (size_t)n + 8), slice("some value bytes", 16));
        }
        if (rc == 0) rc = table_builder_finish(b);
        assert_int_equal(rc, TKV_NO_SPACE);
        assert_non_null(strstr(tkv_errmsg(), path));
        assert_int_equal(table_builder_add(b, slice(k1, 12), slice("", 0)), TKV_NO_SPACE);
        assert_int_equal(table_builder_finish(b), TKV_NO_SPACE);
        io_set_fault_hook(NULL, NULL);
        table_builder_abandon(b);
        io_close(f);
    }
    table_builder_free(NULL);
    table_builder_abandon(NULL);
    table_close(NULL);
    free(path);
    tu_tmpdir_free(dir);
}

/* ---------------------------------------------------------------- damage */

static uint8_t *read_all(const char *path, size_t *len)
{
    uint8_t *d;
    assert_int_equal(io_read_file(path, IO_META, NULL, &d, len), 0);
    return d;
}

static void write_all(const char *path, const uint8_t *d, size_t len)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    if (len) assert_int_equal(fwrite(d, 1, len, fp), len);
    assert_int_equal(fclose(fp), 0);
}

/* check_damaged -- opens the (damaged) table at path as if it were `size`
 * bytes: either table_open fails, or every read returns correct data or
 * TKV_CORRUPTION. All errors must be TKV_CORRUPTION naming the file. Returns
 * -1 if the open failed, else the number of errors seen while reading. */
static int check_damaged(const char *path, uint64_t size, tkv_cache *cache, const ent *e, size_t n, const char *what)
{
    io_file *f;
    assert_int_equal(io_open_read(path, IO_USER_READ, NULL, &f), 0);
    table *t;
    tkv_err_clear();
    int rc = table_open(f, size, cache, &t);
    if (rc < 0) {
        if (rc != TKV_CORRUPTION) fail_msg("%s: table_open gave %d (%s), want TKV_CORRUPTION", what, rc, tkv_errmsg());
        if (!strstr(tkv_errmsg(), path)) fail_msg("%s: message does not name the file: %s", what, tkv_errmsg());
        assert_null(t);
        return -1;
    }
    int errors = 0;
    tkv_it *it = table_iter(t);
    size_t i = 0;
    for (it_seek_first(it); it_valid(it); it_next(it), i++) {
        assert_true(i < n);
        expect_entry(it, e, i, what);
    }
    if ((rc = it_status(it)) != 0) {
        if (rc != TKV_CORRUPTION || !strstr(tkv_errmsg(), path))
            fail_msg("%s: iterator status %d (%s)", what, rc, tkv_errmsg());
        errors++;
    } else {
        assert_int_equal(i, n);
    }
    it_destroy(it);
    it = table_iter(t);
    i = n;
    for (it_seek_last(it); it_valid(it); it_prev(it)) {
        assert_true(i > 0);
        expect_entry(it, e, --i, what);
    }
    if ((rc = it_status(it)) != 0) {
        if (rc != TKV_CORRUPTION || !strstr(tkv_errmsg(), path))
            fail_msg("%s: reverse iterator status %d (%s)", what, rc, tkv_errmsg());
        errors++;
    }
    it_destroy(it);
    tkv_buf val = {0};
    for (size_t j = 0; j < n; j++) {
        tkv_slice k = ekey(&e[j]);
        ikey_type ty;
        rc = table_get(t, ikey_user(k), ikey_seq(k), &ty, &val);
        if (rc < 0) {
            if (rc != TKV_CORRUPTION || !strstr(tkv_errmsg(), path))
                fail_msg("%s: get status %d (%s)", what, rc, tkv_errmsg());
            errors++;
            continue;
        }
        if (rc != 1 || ty != ikey_get_type(k) || val.len != e[j].vn || (val.len && memcmp(val.data, e[j].v, val.len)))
            fail_msg("%s: get of entry %zu returned wrong data (rc %d)", what, j, rc);
    }
    buf_free(&val);
    table_close(t);
    return errors;
}

typedef struct layout {
    block_handle index, filter, props;
    uint64_t data_end;
} layout;

static layout parse_layout(const uint8_t *d, size_t len)
{
    const uint8_t *ft = d + len - SST_FOOTER_SIZE;
    layout l = {
        {dec_u64(ft), dec_u64(ft + 8)}, {dec_u64(ft + 16), dec_u64(ft + 24)}, {dec_u64(ft + 32), dec_u64(ft + 40)}, 0};
    l.data_end = l.filter.offset;
    assert_true(l.props.offset > l.filter.offset && l.index.offset > l.props.offset);
    assert_int_equal(l.index.offset + l.index.size + SST_TRAILER_SIZE, len - SST_FOOTER_SIZE);
    return l;
}

/* flip -- toggles one bit of the file in place. */
static void flip(const char *path, uint64_t bit)
{
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    uint8_t c;
    assert_int_equal(pread(fd, &c, 1, (off_t)(bit / 8)), 1);
    c ^= (uint8_t)(1u << (bit % 8));
    assert_int_equal(pwrite(fd, &c, 1, (off_t)(bit / 8)), 1);
    close(fd);
}

static void damage_case(int compression, int with_cache)
{
    tu_rng r;
    tu_rng_init(&r, tu_seed() + 10 + (uint64_t)compression);
    spec s = {.n = 3000, .compressible = 1, .max_value = 60, .hot_key = 1};
    ent *e = gen(&s, &r);
    char *dir = tu_tmpdir("sst");
    char *path = tu_path(dir, "000042.sst");
    table_options o;
    table_options_default(&o);
    o.compression = compression;
    uint64_t size = build_table(path, e, s.n, &o);
    tkv_cache *cache = with_cache ? cache_new(1 << 20, 1) : NULL;
    size_t len;
    uint8_t *orig = read_all(path, &len);
    assert_int_equal(len, size);
    layout l = parse_layout(orig, len);
    assert_int_equal(check_damaged(path, size, cache, e, s.n, "undamaged"), 0);

    char what[96];
    /* data blocks: the table opens, reads of the damaged block fail */
    for (int i = 0; i < 24; i++) {
        uint64_t bit = tu_rng_below(&r, l.data_end * 8);
        flip(path, bit);
        snprintf(what, sizeof what, "data bit %llu", (unsigned long long)bit);
        if (check_damaged(path, size, cache, e, s.n, what) <= 0) fail_msg("%s: damage went unnoticed", what);
        flip(path, bit);
    }
    /* metadata blocks (with their trailers) and every bit of the footer:
     * table_open itself fails */
    struct {
        const char *name;
        uint64_t off, len;
        int tries;
    } regions[] = {
        {"filter", l.filter.offset, l.filter.size + SST_TRAILER_SIZE, 24},
        {"properties", l.props.offset, l.props.size + SST_TRAILER_SIZE, 24},
        {"index", l.index.offset, l.index.size + SST_TRAILER_SIZE, 24},
        {"footer", len - SST_FOOTER_SIZE, SST_FOOTER_SIZE, SST_FOOTER_SIZE * 8},
    };
    for (size_t ri = 0; ri < 4; ri++) {
        for (int i = 0; i < regions[ri].tries; i++) {
            uint64_t bit = ri == 3 ? regions[ri].off * 8 + (uint64_t)i
                                   : regions[ri].off * 8 + tu_rng_below(&r, regions[ri].len * 8);
            flip(path, bit);
            snprintf(what, sizeof what, "%s bit %llu", regions[ri].name, (unsigned long long)bit);
            int errs = check_damaged(path, size, cache, e, s.n, what);
            if (errs != -1) fail_msg("%s: table_open succeeded on a damaged %s", what, regions[ri].name);
            flip(path, bit);
        }
    }
    /* truncations, opened with the truncated size and with the original one */
    const uint64_t cuts[] = {0, 1, 63, 64, 65, len / 2, l.data_end, len - SST_FOOTER_SIZE, len - 1};
    char *tpath = tu_path(dir, "000043.sst");
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        write_all(tpath, orig, (size_t)cuts[i]);
        snprintf(what, sizeof what, "truncated to %llu", (unsigned long long)cuts[i]);
        assert_int_equal(check_damaged(tpath, cuts[i], cache, e, s.n, what), -1);
        assert_int_equal(check_damaged(tpath, size, cache, e, s.n, what), -1);
    }
    /* a truncation that loses only data blocks' tail while the footer claims
     * more: the file shorter than the size recorded elsewhere */
    write_all(tpath, orig, (size_t)l.data_end / 2);
    assert_int_equal(check_damaged(tpath, size, cache, e, s.n, "short file"), -1);
    assert_int_equal(check_damaged(path, size, cache, e, s.n, "restored"), 0);
    free(tpath);
    free(orig);
    cache_free(cache);
    free(path);
    tu_tmpdir_free(dir);
    free_ents(e, s.n);
}

static void test_table_damage_plain(void **state)
{
    (void)state;
    damage_case(SST_COMPRESS_NONE, 0);
    damage_case(SST_COMPRESS_NONE, 1);
}

static void test_table_damage_lz4(void **state)
{
    (void)state;
    damage_case(SST_COMPRESS_LZ4, 0);
    damage_case(SST_COMPRESS_LZ4, 1);
}

/* reseal -- recomputes the trailer checksum of the block at h in d. */
static void reseal(uint8_t *d, block_handle h)
{
    enc_u32(d + h.offset + h.size + 1, tkv_checksum(d + h.offset, (size_t)h.size + 1));
}

/* Damage that the checksum cannot see (checksums recomputed): lz4 garbage,
 * malformed block structure, bad filter/properties/index contents. Each is
 * TKV_CORRUPTION naming the file, never a crash or wrong data. */
static void test_table_checksum_valid_garbage(void **state)
{
    (void)state;
    tu_rng r;
    tu_rng_init(&r, tu_seed() + 11);
    spec s = {.n = 2000, .compressible = 1, .max_value = 80};
    ent *e = gen(&s, &r);
    char *dir = tu_tmpdir("sst");
    char *path = tu_path(dir, "000077.sst");
    char *gpath = tu_path(dir, "000078.sst");
    for (int comp = 0; comp < 2; comp++) {
        table_options o;
        table_options_default(&o);
        o.compression = comp;
        uint64_t size = build_table(path, e, s.n, &o);
        size_t len;
        uint8_t *orig = read_all(path, &len);
        uint8_t *d = malloc(len);
        layout l = parse_layout(orig, len);
        /* the first data block's handle, from the index block */
        block_iter ix = {0};
        assert_int_equal(block_iter_init(&ix, orig + l.index.offset, (size_t)l.index.size, "idx", 0), 0);
        block_iter_seek_first(&ix);
        assert_true(block_iter_valid(&ix));
        block_handle h0 = {0, 0};
        tkv_slice hv = block_iter_value(&ix);
        assert_non_null(handle_decode(hv.p, hv.p + hv.n, &h0));
        block_iter_clear(&ix);
        assert_int_equal(h0.offset, 0);
        assert_int_equal(orig[h0.size], comp); /* the compression type in the trailer */

        const char *cases[] = {"restart count", "restart count 2", "shared prefix at restart 0", "short first key",
                               "lz4 size + 1",  "lz4 size - 1",    "lz4 stream of 0xff"};
        for (int c = comp ? 4 : 0; c < (comp ? 7 : 4); c++) {
            memcpy(d, orig, len);
            uint64_t ulen = 0;
            const uint8_t *pl = dec_varint(d, d + h0.size, &ulen);
            assert_non_null(pl);
            size_t vl = (size_t)(pl - d);
            switch (c) {
            case 0:
                enc_u32(d + h0.size - 4, 0xfffffff0u);
                break;
            case 1:
                enc_u32(d + h0.size - 4, (uint32_t)(h0.size / 4));
                break;
            case 2:
                d[0] = 1;
                break; /* entry 0: shared = 1 */
            case 3:
                d[1] = 3;
                break; /* entry 0: non_shared = 3 (< trailer) */
            case 4:    /* same varint length, one more byte claimed */
            case 5: {
                uint8_t tmp[10];
                size_t nl = (size_t)(enc_varint(tmp, c == 4 ? ulen + 1 : ulen - 1) - tmp);
                assert_int_equal(nl, vl);
                memcpy(d, tmp, nl);
                break;
            }
            case 6:
                memset(d + vl, 0xff, (size_t)h0.size - vl);
                break;
            }
            reseal(d, h0);
            write_all(gpath, d, len);
            char what[80];
            snprintf(what, sizeof what, "garbage data block (%s)", cases[c]);
            if (check_damaged(gpath, size, NULL, e, s.n, what) <= 0) fail_msg("%s: not detected", what);
            assert_non_null(strstr(tkv_errmsg(), "offset 0"));
        }
        /* compression type 7 */
        memcpy(d, orig, len);
        d[h0.size] = 7;
        reseal(d, h0);
        write_all(gpath, d, len);
        assert_true(check_damaged(gpath, size, NULL, e, s.n, "unknown compression") > 0);
        assert_non_null(strstr(tkv_errmsg(), "compression"));

        /* filter with a bad probe count */
        memcpy(d, orig, len);
        d[l.filter.offset + l.filter.size - 1] = 0;
        reseal(d, l.filter);
        write_all(gpath, d, len);
        assert_int_equal(check_damaged(gpath, size, NULL, e, s.n, "filter k=0"), -1);
        /* properties: num_deletions > num_entries (same varint length) */
        memcpy(d, orig, len);
        {
            const uint8_t *pp = d + l.props.offset, *plim = pp + l.props.size;
            uint64_t ne = 0, nd = 0;
            const uint8_t *q = dec_varint(pp, plim, &ne);
            const uint8_t *q2 = dec_varint(q, plim, &nd);
            assert_int_equal(ne, s.n);
            uint8_t tmp[10];
            size_t nl = (size_t)(enc_varint(tmp, ne + 1) - tmp);
            assert_int_equal(nl, (size_t)(q2 - q));
            memcpy(d + (q - d), tmp, nl);
        }
        reseal(d, l.props);
        write_all(gpath, d, len);
        assert_int_equal(check_damaged(gpath, size, NULL, e, s.n, "properties counts"), -1);
        assert_non_null(strstr(tkv_errmsg(), "properties"));
        /* properties: a varint that swallows the next field (no crash) */
        memcpy(d, orig, len);
        d[l.props.offset + 1] |= 0x80;
        reseal(d, l.props);
        write_all(gpath, d, len);
        check_damaged(gpath, size, NULL, e, s.n, "properties shifted");
        /* index: a restart count that does not fit */
        memcpy(d, orig, len);
        enc_u32(d + l.index.offset + l.index.size - 4, 0x7fffffff);
        reseal(d, l.index);
        write_all(gpath, d, len);
        assert_int_equal(check_damaged(gpath, size, NULL, e, s.n, "index restarts"), -1);
        /* index: a handle pointing into the metadata (first entry's value
         * offset byte set past the data area) */
        memcpy(d, orig, len);
        {
            block_iter bi = {0};
            assert_int_equal(block_iter_init(&bi, d + l.index.offset, (size_t)l.index.size, "idx", 0), 0);
            block_iter_seek_last(&bi);
            tkv_slice v = block_iter_value(&bi);
            size_t voff = (size_t)(v.p - d);
            block_iter_clear(&bi);
            uint8_t hb[SST_HANDLE_MAX_LEN];
            block_handle real = {0, 0}, bogus;
            assert_non_null(handle_decode(v.p, v.p + v.n, &real));
            bogus = (block_handle){l.data_end - 3, real.size};
            size_t hn = (size_t)(handle_encode(hb, bogus) - hb);
            if (hn == v.n) {
                memcpy(d + voff, hb, hn);
                reseal(d, l.index);
                write_all(gpath, d, len);
                assert_int_equal(check_damaged(gpath, size, NULL, e, s.n, "index handle"), -1);
            }
        }
        free(d);
        free(orig);
    }
    free(gpath);
    free(path);
    tu_tmpdir_free(dir);
    free_ents(e, s.n);
}

/* ---------------------------------------------------------------- range tombstones */

/* build_rd -- a table of e[0..n) and the tombstones of l at path (format
 * version 2 when l has any). */
static uint64_t build_rd(const char *path, const ent *e, size_t n, const rd_list *l)
{
    io_file *f;
    assert_int_equal(io_open_append(path, 0, IO_FLUSH, NULL, &f), 0);
    table_builder *b;
    assert_int_equal(table_builder_new(f, NULL, &b), 0);
    for (size_t i = 0; i < n; i++) assert_int_equal(table_builder_add(b, ekey(&e[i]), slice(e[i].v, e[i].vn)), 0);
    assert_int_equal(table_builder_add_range_dels(b, l->t, l->n), 0);
    rd_tomb bad = {slice("b", 1), slice("a", 1), 5, 0};
    assert_int_equal(table_builder_add_range_dels(b, &bad, 1), TKV_INVALID); /* begin > end: refused, no change */
    assert_int_equal(table_builder_finish(b), 0);
    assert_int_equal(table_builder_add_range_dels(b, l->t, l->n), TKV_INVALID); /* finished */
    uint64_t size = f->size;
    table_builder_free(b);
    assert_int_equal(io_close(f), 0);
    return size;
}

/* test_table_range_dels -- the range deletion block: tables with entries and
 * tombstones, with tombstones only, and with none (format version 1, no
 * block) read back their tombstones sorted, their fragments, entries and
 * properties, and pass table_check; every flipped bit of the block (or its
 * trailer) makes table_open fail with TKV_CORRUPTION naming the file. */
static void test_table_range_dels(void **state)
{
    (void)state;
    tu_rng r;
    tu_rng_init(&r, tu_seed() + 77);
    spec s = {.n = 500, .max_value = 40};
    ent *e = gen(&s, &r);
    char *dir = tu_tmpdir("sst-rd");
    char *path = tu_path(dir, "000043.sst");
    rd_list l = {0};
    for (uint64_t i = 0; i < 30; i++) {
        char a[32], b[32];
        unsigned x = (unsigned)tu_rng_below(&r, 1000);
        ukey_of(x, a);
        ukey_of(x + 1 + (unsigned)tu_rng_below(&r, 100), b);
        assert_int_equal(rd_list_add(&l, slice(a, 11), slice(b, 11), 1000 + i, 0), 0);
    }
    for (int kind = 0; kind < 3; kind++) { /* entries and tombstones, tombstones only, entries only */
        size_t n = kind == 1 ? 0 : s.n;
        rd_list none = {0};
        const rd_list *tl = kind == 2 ? &none : &l;
        uint64_t size = build_rd(path, e, n, tl);
        table *t = open_table(path, size, NULL);
        table_layout lay;
        table_get_layout(t, &lay);
        assert_int_equal(lay.version, kind == 2 ? 1 : 2);
        assert_int_equal(table_properties(t)->num_range_dels, tl->n);
        assert_int_equal(table_properties(t)->num_entries, n);
        const rd_list *got = table_range_del_list(t);
        assert_int_equal(got->n, tl->n);
        for (size_t i = 1; i < got->n; i++) assert_true(ukey_cmp(got->t[i - 1].begin, got->t[i].begin) <= 0);
        if (kind == 2) assert_null(table_range_dels(t));
        for (size_t i = 0; i < tl->n; i++)
            assert_true(rd_frags_covering(table_range_dels(t), tl->t[i].begin, UINT64_MAX) >= tl->t[i].seq);
        assert_int_equal(table_check(t, NULL, NULL, NULL), 0);
        tkv_buf val = {0};
        ikey_type ty;
        for (size_t i = 0; i < n; i += 7) {
            tkv_slice k = ekey(&e[i]);
            assert_int_equal(table_get(t, ikey_user(k), ikey_seq(k), &ty, &val), 1);
        }
        buf_free(&val);
        table_close(t);
    }
    uint64_t size = build_rd(path, e, s.n, &l);
    size_t len;
    uint8_t *orig = read_all(path, &len);
    table *t = open_table(path, size, NULL);
    table_layout lay;
    table_get_layout(t, &lay);
    table_close(t);
    uint64_t from = lay.range_dels.offset * 8, to = (lay.range_dels.offset + lay.range_dels.size + 5) * 8;
    for (uint64_t bit = from; bit < to; bit += 1 + tu_rng_below(&r, 13)) {
        flip(path, bit);
        char what[64];
        snprintf(what, sizeof what, "range deletion block bit %llu", (unsigned long long)bit);
        assert_int_equal(check_damaged(path, size, NULL, e, s.n, what), -1);
        assert_non_null(strstr(tkv_errmsg(), "range deletion block"));
        flip(path, bit);
    }
    free(orig);
    rd_list_free(&l);
    free_ents(e, s.n);
    assert_int_equal(unlink(path), 0);
    free(path);
    tu_tmpdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_small),
        cmocka_unit_test(test_table_versions_deletions),
        cmocka_unit_test(test_table_lz4),
        cmocka_unit_test(test_table_big_values),
        cmocka_unit_test(test_table_200k),
        cmocka_unit_test(test_table_no_filter),
        cmocka_unit_test(test_table_small_cache_pinning),
        cmocka_unit_test(test_table_concurrent_reads),
        cmocka_unit_test(test_block_mem),
        cmocka_unit_test(test_table_builder_errors),
        cmocka_unit_test(test_table_damage_plain),
        cmocka_unit_test(test_table_damage_lz4),
        cmocka_unit_test(test_table_checksum_valid_garbage),
        cmocka_unit_test(test_table_range_dels),
    };
    return cmocka_run_group_tests_name("table", tests, NULL, NULL);
}
