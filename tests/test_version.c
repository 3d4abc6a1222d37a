// SPDX-License-Identifier: Apache-2.0
/*
 * test_version.c -- versions, the version set and the MANIFEST: the edit codec
 * (exact bytes, round trips, every truncation and bad tag rejected), level
 * invariants on apply, overlap queries on hand-built levels, recovery after
 * many random edits, live-file pinning (also with concurrent unrefs), torn and
 * corrupted MANIFESTs, CURRENT problems, missing SSTs and injected I/O faults.
 *
 * Reproducing a failure: the test prints "seed=N"; rerun with TKV_TEST_SEED=N.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mem/wal.h"
#include "sst/version.h"
#include "testutil.h"
#include "util/status.h"

/* ---------------------------------------------------------------- helpers */

/* mkfile -- a file_meta (1 ref) covering user keys [lo, hi]. */
static file_meta *mkfile(uint64_t number, const char *lo, const char *hi, uint64_t min_seq, uint64_t max_seq,
                         uint64_t size)
{
    file_meta *f = file_meta_new();
    assert_non_null(f);
    f->number = number;
    f->size = size;
    f->num_entries = number * 3 + 1;
    f->min_seq = min_seq;
    f->max_seq = max_seq;
    uint8_t k[256];
    ikey_encode(k, lo, strlen(lo), max_seq, IKEY_VALUE);
    assert_int_equal(buf_append(&f->smallest, k, strlen(lo) + IKEY_TRAILER), 0);
    ikey_encode(k, hi, strlen(hi), min_seq, IKEY_DELETION);
    assert_int_equal(buf_append(&f->largest, k, strlen(hi) + IKEY_TRAILER), 0);
    return f;
}

/* sst_name -- "<dir>/%06llu.sst" into buf (PATH_MAX). */
static const char *sst_name(const char *dir, uint64_t number, char *buf)
{
    snprintf(buf, PATH_MAX, "%s/%06llu.sst", dir, (unsigned long long)number);
    return buf;
}

/* make_sst -- a fake SST of the recorded size (sparse). */
static void make_sst(const char *dir, const file_meta *f)
{
    char p[PATH_MAX];
    int fd = open(sst_name(dir, f->number, p), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)f->size), 0);
    close(fd);
}

/* add_new -- adds f to the edit at level, creates its SST, drops the caller's ref. */
static void add_new(const char *dir, version_edit *e, int level, file_meta *f)
{
    make_sst(dir, f);
    assert_int_equal(edit_add_file(e, level, f), 0);
    file_meta_unref(f);
}

/* apply1 -- applies an edit adding one file (new number) at level. */
static uint64_t apply_add(version_set *vs, const char *dir, int level, const char *lo, const char *hi, uint64_t min_seq,
                          uint64_t max_seq)
{
    version_edit e;
    edit_init(&e);
    uint64_t num = vset_new_file_number(vs);
    add_new(dir, &e, level, mkfile(num, lo, hi, min_seq, max_seq, 100 + num));
    int rc = vset_log_and_apply(vs, &e);
    if (rc != 0) fail_msg("apply: %s", tkv_errmsg());
    edit_free(&e);
    return num;
}

/* numbers_at -- the file numbers of a level in level order, as a string. */
static const char *numbers_at(const version *v, int level)
{
    static char buf[4][1024];
    static int which;
    char *b = buf[which++ & 3];
    size_t off = 0;
    b[0] = 0;
    for (size_t i = 0; i < v->nfiles[level] && off < 1000; i++)
        off += (size_t)snprintf(b + off, 1024 - off, "%s%llu", i ? "," : "",
                                (unsigned long long)v->files[level][i]->number);
    return b;
}

/* dump_state -- every observable field of vs (counters, files in level order). */
static void dump_state(version_set *vs, tkv_buf *out)
{
    out->len = 0;
    assert_int_equal(buf_append_u64(out, vset_last_seq(vs)), 0);
    assert_int_equal(buf_append_u64(out, vset_log_number(vs)), 0);
    version *v = vset_current(vs);
    for (int l = 0; l < VERSION_LEVELS; l++) {
        assert_int_equal(buf_append_u64(out, 0xffff0000u + (uint64_t)l), 0);
        for (size_t i = 0; i < v->nfiles[l]; i++) {
            const file_meta *f = v->files[l][i];
            uint64_t w[6] = {f->number, f->size, f->num_entries, f->min_seq, f->max_seq, f->smallest.len};
            assert_int_equal(buf_append(out, w, sizeof w), 0);
            assert_int_equal(buf_append(out, f->smallest.data, f->smallest.len), 0);
            assert_int_equal(buf_append_u64(out, f->largest.len), 0);
            assert_int_equal(buf_append(out, f->largest.data, f->largest.len), 0);
        }
    }
    assert_int_equal(buf_append_u64(out, 0xfffe0000u + v->nrows), 0);
    for (size_t i = 0; i < v->nrows; i++) {
        assert_int_equal(buf_append_u64(out, v->rows[i].row_id), 0);
        assert_int_equal(buf_append_u64(out, v->rows[i].cursor), 0);
    }
}

static void assert_same_state(const tkv_buf *a, const tkv_buf *b, const char *what)
{
    if (a->len != b->len || memcmp(a->data, b->data, a->len) != 0)
        fail_msg("%s: state differs (%zu vs %zu bytes)", what, a->len, b->len);
}

/* check_invariants -- L0 newest first; L1+ sorted and disjoint. */
static void check_invariants(const version *v)
{
    for (size_t i = 1; i < v->nfiles[0]; i++) {
        const file_meta *a = v->files[0][i - 1], *b = v->files[0][i];
        assert_true(a->max_seq > b->max_seq || (a->max_seq == b->max_seq && a->number > b->number));
    }
    for (int l = 1; l < VERSION_LEVELS; l++) {
        for (size_t i = 1; i < v->nfiles[l]; i++) {
            const file_meta *a = v->files[l][i - 1], *b = v->files[l][i];
            tkv_slice al = ikey_user(slice(a->largest.data, a->largest.len));
            tkv_slice bs = ikey_user(slice(b->smallest.data, b->smallest.len));
            assert_true(ukey_cmp(al, bs) < 0);
        }
    }
}

static void write_file(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (n) assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static uint8_t *read_file(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)sz + 1);
    assert_non_null(b);
    if (sz) assert_int_equal(fread(b, 1, (size_t)sz, f), (size_t)sz);
    fclose(f);
    *n = (size_t)sz;
    return b;
}

static uint64_t fsize(const char *path)
{
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    return (uint64_t)sb.st_size;
}

static const char *manifest_path(const char *dir, uint64_t number, char *buf)
{
    snprintf(buf, PATH_MAX, "%s/MANIFEST-%06llu", dir, (unsigned long long)number);
    return buf;
}

/* set_current -- writes CURRENT naming MANIFEST-number. */
static void set_current(const char *dir, uint64_t number)
{
    char p[PATH_MAX], c[64];
    snprintf(p, sizeof p, "%s/CURRENT", dir);
    int n = snprintf(c, sizeof c, "MANIFEST-%06llu\n", (unsigned long long)number);
    write_file(p, c, (size_t)n);
}

static void open_ok(const char *dir, version_set **vs)
{
    int rc = vset_open(dir, NULL, vs);
    if (rc != 0) fail_msg("vset_open(%s): %d %s", dir, rc, tkv_errmsg());
}

static void expect_corruption(const char *dir, const char *needle)
{
    version_set *vs = (version_set *)1;
    int rc = vset_open(dir, NULL, &vs);
    if (rc != TKV_CORRUPTION) fail_msg("expected TKV_CORRUPTION, got %d (%s)", rc, tkv_errmsg());
    assert_null(vs);
    if (!strstr(tkv_errmsg(), needle)) fail_msg("message \"%s\" does not name \"%s\"", tkv_errmsg(), needle);
}

/* ---------------------------------------------------------------- codec */

/* random_edit -- an edit using every field kind. */
static void random_edit(tu_rng *r, version_edit *e)
{
    edit_init(e);
    if (tu_rng_below(r, 2)) {
        e->has_log_number = 1;
        e->log_number = tu_rng_next(r) >> tu_rng_below(r, 64);
    }
    if (tu_rng_below(r, 2)) {
        e->has_next_file = 1;
        e->next_file = tu_rng_next(r) >> tu_rng_below(r, 64);
    }
    if (tu_rng_below(r, 2)) {
        e->has_last_seq = 1;
        e->last_seq = tu_rng_below(r, IKEY_MAX_SEQ);
    }
    size_t nd = tu_rng_below(r, 4), na = tu_rng_below(r, 4), nc = tu_rng_below(r, 4), nr = tu_rng_below(r, 3);
    for (size_t i = 0; i < nc; i++) { /* row ids 0..99 set, 100..199 removed: never twice */
        row_key *k = NULL;
        if (tu_rng_below(r, 3) == 0) { /* tag 10: with a range tombstone start */
            char b[32];
            k = row_key_new(
                slice(b, (size_t)snprintf(b, sizeof b, "key%llu", (unsigned long long)tu_rng_below(r, 99))));
            assert_non_null(k);
        }
        assert_int_equal(
            edit_set_row_cursor_rd(e, i * 10 + tu_rng_below(r, 10), tu_rng_next(r) >> tu_rng_below(r, 64), k), 0);
        row_key_unref(k);
    }
    for (size_t i = 0; i < nr; i++) assert_int_equal(edit_remove_row(e, 100 + i * 10 + tu_rng_below(r, 10)), 0);
    for (size_t i = 0; i < nd; i++)
        assert_int_equal(edit_delete_file(e, (int)tu_rng_below(r, VERSION_LEVELS), tu_rng_next(r) >> 20), 0);
    for (size_t i = 0; i < na; i++) {
        char lo[32], hi[32];
        uint64_t a = tu_rng_below(r, 1000), b = a + tu_rng_below(r, 1000);
        snprintf(lo, sizeof lo, "key%06llu", (unsigned long long)a);
        snprintf(hi, sizeof hi, "key%06llu", (unsigned long long)b);
        uint64_t mn = tu_rng_below(r, 1u << 30), mx = mn + tu_rng_below(r, 1u << 20);
        file_meta *f = mkfile(tu_rng_below(r, 1u << 24), lo, hi, mn, mx, tu_rng_next(r) >> 30);
        if (tu_rng_below(r, 4) == 0) { /* empty user key */
            f->smallest.len = 0;
            uint8_t k[8];
            ikey_encode(k, "", 0, mx, IKEY_VALUE);
            assert_int_equal(buf_append(&f->smallest, k, 8), 0);
        }
        if (tu_rng_below(r, 3) == 0) f->num_range_dels = 1 + tu_rng_below(r, 1000); /* tag 9 */
        assert_int_equal(edit_add_file(e, (int)tu_rng_below(r, VERSION_LEVELS), f), 0);
        file_meta_unref(f);
    }
}

static void assert_edit_equal(const version_edit *a, const version_edit *b)
{
    assert_int_equal(a->has_log_number, b->has_log_number);
    assert_int_equal(a->has_next_file, b->has_next_file);
    assert_int_equal(a->has_last_seq, b->has_last_seq);
    if (a->has_log_number) assert_int_equal(a->log_number, b->log_number);
    if (a->has_next_file) assert_int_equal(a->next_file, b->next_file);
    if (a->has_last_seq) assert_int_equal(a->last_seq, b->last_seq);
    assert_int_equal(a->ndeleted, b->ndeleted);
    assert_int_equal(a->nadded, b->nadded);
    assert_int_equal(a->ncursors, b->ncursors);
    assert_int_equal(a->nrows_removed, b->nrows_removed);
    for (size_t i = 0; i < a->ncursors; i++) {
        assert_int_equal(a->cursors[i].row_id, b->cursors[i].row_id);
        assert_int_equal(a->cursors[i].cursor, b->cursors[i].cursor);
        assert_int_equal(!a->cursors[i].rd_start, !b->cursors[i].rd_start);
        if (a->cursors[i].rd_start)
            assert_int_equal(ukey_cmp(row_key_slice(a->cursors[i].rd_start), row_key_slice(b->cursors[i].rd_start)), 0);
    }
    for (size_t i = 0; i < a->nrows_removed; i++) assert_int_equal(a->rows_removed[i], b->rows_removed[i]);
    for (size_t i = 0; i < a->ndeleted; i++) {
        assert_int_equal(a->deleted[i].level, b->deleted[i].level);
        assert_int_equal(a->deleted[i].number, b->deleted[i].number);
    }
    for (size_t i = 0; i < a->nadded; i++) {
        const file_meta *x = a->added[i].f, *y = b->added[i].f;
        assert_int_equal(a->added[i].level, b->added[i].level);
        assert_int_equal(x->number, y->number);
        assert_int_equal(x->size, y->size);
        assert_int_equal(x->num_entries, y->num_entries);
        assert_int_equal(x->num_range_dels, y->num_range_dels);
        assert_int_equal(x->min_seq, y->min_seq);
        assert_int_equal(x->max_seq, y->max_seq);
        assert_int_equal(x->smallest.len, y->smallest.len);
        assert_memory_equal(x->smallest.data, y->smallest.data, x->smallest.len);
        assert_int_equal(x->largest.len, y->largest.len);
        assert_memory_equal(x->largest.data, y->largest.data, x->largest.len);
    }
}

/* The documented example of docs/format-manifest.md, byte for byte. */
static void test_edit_exact_bytes(void **state)
{
    (void)state;
    version_edit e;
    edit_init(&e);
    e.has_log_number = 1;
    e.log_number = 7;
    e.has_next_file = 1;
    e.next_file = 300;
    e.has_last_seq = 1;
    e.last_seq = 5;
    assert_int_equal(edit_delete_file(&e, 1, 4), 0);
    file_meta *f = mkfile(9, "a", "b", 2, 5, 1000);
    f->num_entries = 3;
    assert_int_equal(edit_add_file(&e, 0, f), 0);
    file_meta_unref(f);
    assert_int_equal(f->refs, 1); /* the edit's ref */
    tkv_buf b = {0};
    assert_int_equal(edit_encode(&e, &b), 0);
    static const uint8_t want[] = {
        0x01, 0x07,                                           /* log_number 7 */
        0x02, 0xac, 0x02,                                     /* next_file 300 */
        0x03, 0x05,                                           /* last_seq 5 */
        0x04, 0x01, 0x04,                                     /* deleted L1 #4 */
        0x05, 0x00, 0x09, 0xe8, 0x07, 0x03, 0x02, 0x05,       /* added L0 #9 size 1000 3 entries seqs 2..5 */
        0x09, 'a',  0x01, 0x05, 0,    0,    0,    0,    0, 0, /* smallest ("a", 5, VALUE) */
        0x09, 'b',  0x00, 0x02, 0,    0,    0,    0,    0, 0, /* largest ("b", 2, DELETION) */
        0x00,                                                 /* end */
    };
    assert_int_equal(b.len, sizeof want);
    assert_memory_equal(b.data, want, sizeof want);
    buf_free(&b);
    edit_free(&e);
    /* An empty edit is just the end marker. */
    edit_init(&e);
    assert_int_equal(edit_encode(&e, &b), 0);
    assert_int_equal(b.len, 1);
    assert_int_equal(b.data[0], 0);
    version_edit d;
    assert_int_equal(edit_decode(b.data, b.len, &d), 0);
    assert_int_equal(d.nadded + d.ndeleted + (size_t)d.has_log_number, 0);
    edit_free(&d);
    buf_free(&b);
}

static void test_edit_round_trip(void **state)
{
    (void)state;
    tu_rng r;
    tu_rng_init(&r, tu_seed());
    for (int it = 0; it < 500; it++) {
        version_edit e, d;
        random_edit(&r, &e);
        tkv_buf b = {0}, b2 = {0};
        assert_int_equal(edit_encode(&e, &b), 0);
        assert_int_equal(edit_decode(b.data, b.len, &d), 0);
        assert_edit_equal(&e, &d);
        assert_int_equal(edit_encode(&d, &b2), 0);
        assert_int_equal(b.len, b2.len);
        assert_memory_equal(b.data, b2.data, b.len);
        edit_free(&e);
        edit_free(&d);
        buf_free(&b);
        buf_free(&b2);
    }
}

/* tag_offsets -- offsets of every tag in a record, found by walking it with the
 * documented layout (independently of edit_decode). */
static size_t tag_offsets(const uint8_t *p, size_t n, size_t *offs)
{
    const uint8_t *q = p, *lim = p + n;
    size_t k = 0;
    uint64_t tag = 0, v = 0;
    for (;;) {
        offs[k++] = (size_t)(q - p);
        q = dec_varint(q, lim, &tag);
        assert_non_null(q);
        int nvar = tag == 0 ? 0 : tag <= 3 || tag == 7 ? 1 : tag == 4 || tag == 6 || tag == 10 ? 2 : 6;
        for (int i = 0; i < nvar; i++) assert_non_null(q = dec_varint(q, lim, &v));
        if (tag == 5 || tag == 9)
            for (int i = 0; i < 2; i++) {
                assert_non_null(q = dec_varint(q, lim, &v));
                q += v;
            }
        if (tag == 9) assert_non_null(q = dec_varint(q, lim, &v)); /* the range tombstone count */
        if (tag == 10) {                                           /* the range tombstone start */
            assert_non_null(q = dec_varint(q, lim, &v));
            q += v;
        }
        if (tag == 0) break;
    }
    assert_true(q == lim);
    return k;
}

static void expect_decode_corrupt(const uint8_t *p, size_t n, const char *what, size_t at)
{
    version_edit d;
    int rc = edit_decode(p, n, &d);
    if (rc != TKV_CORRUPTION) fail_msg("%s at %zu: decode returned %d", what, at, rc);
    assert_int_equal(d.nadded + d.ndeleted + d.ncursors + d.nrows_removed, 0); /* left empty */
}

static void test_edit_malformed(void **state)
{
    (void)state;
    tu_rng r;
    tu_rng_init(&r, tu_seed() + 1);
    size_t offs[64];
    for (int it = 0; it < 60; it++) {
        version_edit e;
        random_edit(&r, &e);
        tkv_buf b = {0};
        assert_int_equal(edit_encode(&e, &b), 0);
        edit_free(&e);
        uint8_t *c = malloc(b.len + 16);
        assert_non_null(c);
        /* Every strict prefix (including the empty one). */
        for (size_t t = 0; t < b.len; t++) {
            memcpy(c, b.data, t);
            expect_decode_corrupt(t ? c : b.data, t, "truncation", t);
        }
        /* Every tag replaced by unknown values, and by END (trailing bytes). */
        size_t nt = tag_offsets(b.data, b.len, offs);
        static const uint8_t bad[] = {11, 12, 100, 0x7f}; /* 8 = pool uuid, 9 and 10 tags of range tombstones */
        for (size_t i = 0; i < nt; i++) {
            for (size_t j = 0; j < sizeof bad; j++) {
                memcpy(c, b.data, b.len);
                c[offs[i]] = bad[j];
                expect_decode_corrupt(c, b.len, "unknown tag", offs[i]);
            }
            if (i + 1 < nt) {
                memcpy(c, b.data, b.len);
                c[offs[i]] = 0;
                expect_decode_corrupt(c, b.len, "early end", offs[i]);
            }
        }
        /* Bytes after the end marker. */
        memcpy(c, b.data, b.len);
        c[b.len] = 1;
        expect_decode_corrupt(c, b.len + 1, "trailing byte", b.len);
        /* Random byte flips: decode must return 0 or TKV_CORRUPTION, never crash. */
        for (int k = 0; k < 50; k++) {
            memcpy(c, b.data, b.len);
            c[tu_rng_below(&r, b.len)] ^= (uint8_t)(1u << tu_rng_below(&r, 8));
            version_edit d;
            int rc = edit_decode(c, b.len, &d);
            assert_true(rc == 0 || rc == TKV_CORRUPTION);
            edit_free(&d);
        }
        free(c);
        buf_free(&b);
    }
    /* Semantic checks: level out of range, short key, smallest > largest, min_seq > max_seq. */
    static const uint8_t lvl[] = {0x04, 0x07, 0x01, 0x00};
    expect_decode_corrupt(lvl, sizeof lvl, "level 7", 0);
    static const uint8_t shortkey[] = {0x05, 0x00, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 'a', 0x01, 'a', 0x00};
    expect_decode_corrupt(shortkey, sizeof shortkey, "short key", 0);
    static const uint8_t order[] = {0x05, 0x00, 0x01, 0x01, 0x01, 0x01, 0x01,          /* L0 #1 seqs 1..1 */
                                    9,    'b',  1,    0,    0,    0,    0,    0, 0, 0, /* smallest ("b", 0) */
                                    9,    'a',  1,    0,    0,    0,    0,    0, 0, 0, /* largest ("a", 0) */
                                    0x00};
    expect_decode_corrupt(order, sizeof order, "smallest > largest", 0);
    static const uint8_t seqs[] = {0x05, 0x00, 0x01, 0x01, 0x01, 0x05, 0x02, /* seqs 5..2 */
                                   9,    'a',  1,    0,    0,    0,    0,    0, 0, 0,   9,
                                   'b',  1,    0,    0,    0,    0,    0,    0, 0, 0x00};
    expect_decode_corrupt(seqs, sizeof seqs, "min_seq > max_seq", 0);
    /* The same bytes with seqs 2..5 decode (the examples above fail only for the stated reason). */
    uint8_t okseq[sizeof seqs];
    memcpy(okseq, seqs, sizeof seqs);
    okseq[5] = 2;
    okseq[6] = 5;
    version_edit ok;
    assert_int_equal(edit_decode(okseq, sizeof okseq, &ok), 0);
    assert_int_equal(ok.nadded, 1);
    edit_free(&ok);
    static const uint8_t overlong[] = {0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00};
    expect_decode_corrupt(overlong, sizeof overlong, "overlong varint", 0);
    /* edit_add_file refuses malformed metadata. */
    version_edit e;
    edit_init(&e);
    file_meta *f = mkfile(3, "b", "a", 1, 2, 10);
    assert_int_equal(edit_add_file(&e, 1, f), TKV_INVALID);
    assert_int_equal(edit_add_file(&e, VERSION_LEVELS, f), TKV_INVALID);
    assert_int_equal(edit_delete_file(&e, -1, 3), TKV_INVALID);
    assert_int_equal(e.nadded + e.ndeleted, 0);
    file_meta_unref(f);
    edit_free(&e);
}

/* ---------------------------------------------------------------- levels */

typedef struct fixture {
    char *dir;
} fixture;

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    if (!fx) return -1;
    fx->dir = tu_tmpdir("version");
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    io_set_fault_hook(NULL, NULL);
    tu_tmpdir_free(fx->dir);
    free(fx);
    return 0;
}

static void test_fresh_open(void **state)
{
    fixture *fx = *state;
    io_stats st;
    memset(&st, 0, sizeof st);
    version_set *vs;
    assert_int_equal(vset_open(fx->dir, &st, &vs), 0);
    assert_int_equal(vset_manifest_number(vs), 1);
    assert_int_equal(vset_next_file_number(vs), 2);
    assert_int_equal(vset_last_seq(vs), 0);
    assert_int_equal(vset_log_number(vs), 0);
    for (int l = 0; l < VERSION_LEVELS; l++) assert_int_equal(vset_current(vs)->nfiles[l], 0);
    /* MANIFEST I/O is accounted to IO_META, none to IO_WAL. */
    assert_true(st.write_bytes[IO_META] > WAL_HEADER_SIZE);
    assert_true(st.syncs[IO_META] >= 1);
    assert_int_equal(st.write_bytes[IO_WAL], 0);
    assert_int_equal(st.syncs[IO_WAL], 0);
    char p[PATH_MAX];
    size_t n;
    snprintf(p, sizeof p, "%s/CURRENT", fx->dir);
    uint8_t *c = read_file(p, &n);
    assert_int_equal(n, 16);
    assert_memory_equal(c, "MANIFEST-000001\n", 16);
    free(c);
    uint64_t *live;
    assert_int_equal(vset_live_files(vs, &live, &n), 0);
    assert_int_equal(n, 0);
    free(live);
    vset_close(vs);
    /* Reopen: a new MANIFEST (number 2), the old one deleted. */
    open_ok(fx->dir, &vs);
    assert_int_equal(vset_manifest_number(vs), 2);
    assert_int_equal(vset_next_file_number(vs), 3);
    assert_int_equal(access(manifest_path(fx->dir, 1, p), F_OK), -1);
    assert_int_equal(access(manifest_path(fx->dir, 2, p), F_OK), 0);
    vset_close(vs);
    /* A stale MANIFEST (a crash before a CURRENT switch) is removed by the next open. */
    write_file(manifest_path(fx->dir, 50, p), "junk", 4);
    open_ok(fx->dir, &vs);
    assert_int_equal(vset_manifest_number(vs), 3);
    assert_int_equal(access(manifest_path(fx->dir, 50, p), F_OK), -1);
    assert_int_equal(access(manifest_path(fx->dir, 2, p), F_OK), -1);
    vset_close(vs);
}

static void test_apply_levels(void **state)
{
    fixture *fx = *state;
    version_set *vs;
    open_ok(fx->dir, &vs);
    /* L0: newest first by max_seq, ties: larger number first. */
    uint64_t a = apply_add(vs, fx->dir, 0, "c", "f", 1, 10);  /* 2 */
    uint64_t b = apply_add(vs, fx->dir, 0, "a", "z", 11, 30); /* 3 */
    uint64_t c = apply_add(vs, fx->dir, 0, "b", "d", 5, 20);  /* 4 */
    uint64_t d = apply_add(vs, fx->dir, 0, "x", "y", 7, 20);  /* 5: ties with c, larger number first */
    (void)a;
    (void)b;
    (void)c;
    (void)d;
    assert_string_equal(numbers_at(vset_current(vs), 0), "3,5,4,2");
    /* L1: added out of order, kept sorted by smallest key. */
    version_edit e;
    edit_init(&e);
    add_new(fx->dir, &e, 1, mkfile(vset_new_file_number(vs), "m", "p", 1, 2, 500)); /* 6 */
    add_new(fx->dir, &e, 1, mkfile(vset_new_file_number(vs), "a", "c", 1, 2, 600)); /* 7 */
    add_new(fx->dir, &e, 1, mkfile(vset_new_file_number(vs), "d", "d", 1, 2, 700)); /* 8 */
    add_new(fx->dir, &e, 2, mkfile(vset_new_file_number(vs), "a", "z", 1, 2, 800)); /* 9 */
    assert_int_equal(vset_log_and_apply(vs, &e), 0);
    edit_free(&e);
    version *v = vset_current(vs);
    assert_string_equal(numbers_at(v, 1), "7,8,6");
    assert_string_equal(numbers_at(v, 2), "9");
    assert_int_equal(version_level_bytes(v, 1), 1800);
    assert_int_equal(version_level_bytes(v, 2), 800);
    check_invariants(v);
    /* A compaction-like edit: L0 #2 and L1 #8 replaced by L1 #10; trivial move of #9 to L3. */
    edit_init(&e);
    assert_int_equal(edit_delete_file(&e, 0, 2), 0);
    assert_int_equal(edit_delete_file(&e, 1, 8), 0);
    add_new(fx->dir, &e, 1, mkfile(vset_new_file_number(vs), "d", "f", 1, 10, 900)); /* 10 */
    assert_int_equal(edit_delete_file(&e, 2, 9), 0);
    assert_int_equal(edit_add_file(&e, 3, v->files[2][0]), 0);
    e.has_log_number = 1;
    e.log_number = 42;
    vset_set_last_seq(vs, 77);
    assert_int_equal(vset_log_and_apply(vs, &e), 0);
    assert_int_equal(e.next_file, vset_next_file_number(vs));
    assert_int_equal(e.last_seq, 77);
    edit_free(&e);
    v = vset_current(vs);
    assert_string_equal(numbers_at(v, 0), "3,5,4");
    assert_string_equal(numbers_at(v, 1), "7,10,6");
    assert_string_equal(numbers_at(v, 2), "");
    assert_string_equal(numbers_at(v, 3), "9");
    assert_int_equal(vset_log_number(vs), 42);

    /* Rejected edits: TKV_CORRUPTION, nothing installed, set still usable. */
    struct {
        const char *what, *needle;
        int level;
        const char *lo, *hi;
        int del_level;
        uint64_t del;
    } bad[] = {
        {"overlap inside", "edit would overlap files at L1", 1, "n", "o", -1, 0},
        {"overlap straddles", "edit would overlap files at L1", 1, "e", "k", -1, 0},
        {"touching user key", "edit would overlap files at L1", 1, "p", "q", -1, 0},
        {"covers all", "edit would overlap files at L1", 1, "0", "zz", -1, 0},
        {"delete from wrong level", "000007.sst", -1, NULL, NULL, 2, 7},
        {"delete unknown", "000099.sst", -1, NULL, NULL, 0, 99},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        edit_init(&e);
        if (bad[i].lo)
            add_new(fx->dir, &e, bad[i].level, mkfile(vset_new_file_number(vs), bad[i].lo, bad[i].hi, 1, 1, 10));
        if (bad[i].del_level >= 0) assert_int_equal(edit_delete_file(&e, bad[i].del_level, bad[i].del), 0);
        assert_int_equal(edit_delete_file(&e, 0, 3), 0); /* would succeed on its own */
        int rc = vset_log_and_apply(vs, &e);
        if (rc != TKV_CORRUPTION) fail_msg("%s: rc %d", bad[i].what, rc);
        if (!strstr(tkv_errmsg(), bad[i].needle)) fail_msg("%s: message \"%s\"", bad[i].what, tkv_errmsg());
        assert_ptr_equal(vset_current(vs), v);
        edit_free(&e);
    }
    /* The same number twice (added where it already is at another level). */
    edit_init(&e);
    assert_int_equal(edit_add_file(&e, 5, v->files[1][0]), 0);
    assert_int_equal(vset_log_and_apply(vs, &e), TKV_CORRUPTION);
    assert_non_null(strstr(tkv_errmsg(), "000007.sst twice"));
    edit_free(&e);
    assert_ptr_equal(vset_current(vs), v);
    /* Rejected edits never reached the MANIFEST: a reopen gives the same state. */
    tkv_buf s1 = {0}, s2 = {0};
    apply_add(vs, fx->dir, 1, "q", "r", 1, 1); /* still accepted */
    dump_state(vs, &s1);
    vset_close(vs);
    open_ok(fx->dir, &vs);
    dump_state(vs, &s2);
    assert_same_state(&s1, &s2, "reopen after rejected edits");
    check_invariants(vset_current(vs));
    vset_close(vs);
    buf_free(&s1);
    buf_free(&s2);
}

/* ---------------------------------------------------------------- queries */

static void test_overlapping_and_find(void **state)
{
    (void)state;
    version v;
    memset(&v, 0, sizeof v);
    file_meta *l1[4] = {mkfile(1, "b", "d", 1, 1, 1), mkfile(2, "f", "h", 1, 1, 1), mkfile(3, "j", "j", 1, 1, 1),
                        mkfile(4, "m", "p", 1, 1, 1)};
    file_meta *l0[3] = {mkfile(7, "a", "k", 9, 9, 1), mkfile(6, "x", "z", 5, 8, 1), mkfile(5, "c", "e", 1, 4, 1)};
    v.files[1] = l1;
    v.nfiles[1] = 4;
    v.files[0] = l0;
    v.nfiles[0] = 3;
    struct {
        int level;
        const char *lo, *hi, *want;
    } q[] = {
        {1, "a", "a", ""},      {1, "a", "b", "1"},    {1, "d", "f", "1,2"},       {1, "e", "e", ""},
        {1, "c", "j", "1,2,3"}, {1, "j", "j", "3"},    {1, "k", "l", ""},          {1, "q", "z", ""},
        {1, NULL, "g", "1,2"},  {1, "i", NULL, "3,4"}, {1, NULL, NULL, "1,2,3,4"}, {1, "p", "p", "4"},
        {0, "d", "d", "7,5"},   {0, "l", "w", ""},     {0, "e", "y", "7,6,5"},     {0, NULL, "b", "7"},
        {0, NULL, "d", "7,5"},  {0, "z", NULL, "6"},   {0, NULL, NULL, "7,6,5"},   {2, NULL, NULL, ""},
    };
    for (size_t i = 0; i < sizeof q / sizeof q[0]; i++) {
        tkv_slice lo = slice(q[i].lo ? q[i].lo : "", q[i].lo ? strlen(q[i].lo) : 0);
        tkv_slice hi = slice(q[i].hi ? q[i].hi : "", q[i].hi ? strlen(q[i].hi) : 0);
        file_meta **out = (file_meta **)&v;
        size_t n = 99;
        assert_int_equal(version_overlapping(&v, q[i].level, q[i].lo ? &lo : NULL, q[i].hi ? &hi : NULL, &out, &n), 0);
        char got[64] = "";
        size_t off = 0;
        for (size_t k = 0; k < n; k++)
            off += (size_t)snprintf(got + off, sizeof got - off, "%s%llu", k ? "," : "",
                                    (unsigned long long)out[k]->number);
        if (strcmp(got, q[i].want))
            fail_msg("L%d [%s, %s]: got \"%s\", want \"%s\"", q[i].level, q[i].lo ? q[i].lo : "-inf",
                     q[i].hi ? q[i].hi : "+inf", got, q[i].want);
        if (n == 0) assert_null(out);
        free(out);
    }
    file_meta **out;
    size_t n;
    assert_int_equal(version_overlapping(&v, VERSION_LEVELS, NULL, NULL, &out, &n), TKV_INVALID);
    /* find_file: first file whose largest user key >= key. */
    struct {
        const char *k;
        size_t want;
    } f[] = {{"", 0},  {"a", 0}, {"d", 0},  {"da", 1}, {"e", 1},  {"h", 1},
             {"i", 2}, {"j", 2}, {"ja", 3}, {"p", 3},  {"pa", 4}, {"zzz", 4}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        size_t got = version_find_file(&v, 1, slice(f[i].k, strlen(f[i].k)));
        if (got != f[i].want) fail_msg("find_file(%s) = %zu, want %zu", f[i].k, got, f[i].want);
    }
    assert_int_equal(version_find_file(&v, 3, slice("a", 1)), 0);
    assert_int_equal(version_level_bytes(&v, 1), 4);
    for (int i = 0; i < 4; i++) file_meta_unref(l1[i]);
    for (int i = 0; i < 3; i++) file_meta_unref(l0[i]);
}

/* ---------------------------------------------------------------- recovery after random edits */

#define NSLOT 300

typedef struct mfile {
    uint64_t number;
    int level, lo, hi;
} mfile;

typedef struct model {
    mfile files[2048];
    size_t n;
    uint8_t used[VERSION_LEVELS][NSLOT];
} model;

static void slot_key(int s, char *buf) { snprintf(buf, 16, "k%05d", s); }

static int range_free(const model *m, int level, int lo, int hi)
{
    if (level == 0) return 1;
    for (int s = lo; s <= hi; s++)
        if (m->used[level][s]) return 0;
    return 1;
}

static void mark(model *m, int level, int lo, int hi, uint8_t v)
{
    if (level == 0) return;
    for (int s = lo; s <= hi; s++) m->used[level][s] = v;
}

/* check_model -- the current version holds exactly the model's files. */
static void check_model(version_set *vs, const model *m)
{
    version *v = vset_current(vs);
    check_invariants(v);
    size_t total = 0;
    for (int l = 0; l < VERSION_LEVELS; l++) total += v->nfiles[l];
    assert_int_equal(total, m->n);
    for (size_t i = 0; i < m->n; i++) {
        int found = 0;
        for (size_t k = 0; k < v->nfiles[m->files[i].level]; k++)
            found |= v->files[m->files[i].level][k]->number == m->files[i].number;
        if (!found) fail_msg("file %llu missing from L%d", (unsigned long long)m->files[i].number, m->files[i].level);
    }
}

static void test_reopen_random(void **state)
{
    fixture *fx = *state;
    tu_rng r;
    tu_rng_init(&r, tu_seed() + 2);
    model *m = calloc(1, sizeof *m);
    assert_non_null(m);
    version_set *vs;
    open_ok(fx->dir, &vs);
    uint64_t seq = 1, logno = 0;
    tkv_buf s1 = {0}, s2 = {0};
    int reopens = 0;
    for (int it = 0; it < 300; it++) {
        version_edit e;
        edit_init(&e);
        model next = *m;
        /* deletions (sometimes a trivial move to the next level) */
        size_t nd = next.n ? tu_rng_below(&r, 3) : 0;
        mfile moved[4];
        size_t nmoved = 0;
        for (size_t d = 0; d < nd && next.n; d++) {
            size_t i = tu_rng_below(&r, next.n);
            mfile f = next.files[i];
            assert_int_equal(edit_delete_file(&e, f.level, f.number), 0);
            mark(&next, f.level, f.lo, f.hi, 0);
            next.files[i] = next.files[--next.n];
            if (f.level + 1 < VERSION_LEVELS && tu_rng_below(&r, 3) == 0 &&
                range_free(&next, f.level + 1, f.lo, f.hi)) {
                version *v = vset_current(vs);
                file_meta *fm = NULL;
                for (size_t k = 0; k < v->nfiles[f.level]; k++)
                    if (v->files[f.level][k]->number == f.number) fm = v->files[f.level][k];
                assert_non_null(fm);
                assert_int_equal(edit_add_file(&e, f.level + 1, fm), 0);
                f.level++;
                mark(&next, f.level, f.lo, f.hi, 1);
                moved[nmoved++] = f; /* not a deletion candidate in this edit */
            }
        }
        for (size_t i = 0; i < nmoved; i++) next.files[next.n++] = moved[i];
        /* additions */
        size_t na = tu_rng_below(&r, 4);
        for (size_t a = 0; a < na && next.n < 2000; a++) {
            int level = (int)tu_rng_below(&r, 4);
            int lo = (int)tu_rng_below(&r, NSLOT), hi = lo + (int)tu_rng_below(&r, 6);
            if (hi >= NSLOT) hi = NSLOT - 1;
            if (!range_free(&next, level, lo, hi)) continue;
            char klo[16], khi[16];
            slot_key(lo, klo);
            slot_key(hi, khi);
            uint64_t mn = seq, mx = seq + tu_rng_below(&r, 50);
            seq = mx + 1;
            file_meta *f = mkfile(vset_new_file_number(vs), klo, khi, mn, mx, 1 + tu_rng_below(&r, 100000));
            f->num_entries = tu_rng_below(&r, 1u << 20);
            mark(&next, level, lo, hi, 1);
            next.files[next.n++] = (mfile){f->number, level, lo, hi};
            add_new(fx->dir, &e, level, f);
        }
        if (tu_rng_below(&r, 4) == 0) {
            e.has_log_number = 1;
            e.log_number = logno += tu_rng_below(&r, 5);
        }
        vset_set_last_seq(vs, seq);
        int rc = vset_log_and_apply(vs, &e);
        if (rc != 0) fail_msg("edit %d: %s", it, tkv_errmsg());
        edit_free(&e);
        *m = next;
        check_model(vs, m);
        if (it % 25 == 24) {
            dump_state(vs, &s1);
            uint64_t next_file = vset_next_file_number(vs), old = vset_manifest_number(vs);
            vset_close(vs);
            open_ok(fx->dir, &vs);
            reopens++;
            dump_state(vs, &s2);
            assert_same_state(&s1, &s2, "reopen");
            check_model(vs, m);
            assert_int_equal(vset_manifest_number(vs), next_file);
            assert_int_equal(vset_next_file_number(vs), next_file + 1);
            char p[PATH_MAX];
            assert_int_equal(access(manifest_path(fx->dir, old, p), F_OK), -1);
        }
    }
    assert_true(reopens >= 10);
    /* The live MANIFEST holds one snapshot record after the reopen. */
    vset_close(vs);
    open_ok(fx->dir, &vs);
    char p[PATH_MAX];
    wal_replay_stats rs;
    assert_int_equal(wal_replay(manifest_path(fx->dir, vset_manifest_number(vs), p), NULL, NULL, NULL, &rs), 0);
    assert_int_equal(rs.records, 1);
    check_model(vs, m);
    vset_close(vs);
    buf_free(&s1);
    buf_free(&s2);
    free(m);
}

/* ---------------------------------------------------------------- live files */

static void live_is(version_set *vs, const char *want)
{
    uint64_t *nums;
    size_t n;
    assert_int_equal(vset_live_files(vs, &nums, &n), 0);
    char got[256] = "";
    size_t off = 0;
    for (size_t i = 0; i < n; i++)
        off += (size_t)snprintf(got + off, sizeof got - off, "%s%llu", i ? "," : "", (unsigned long long)nums[i]);
    free(nums);
    if (strcmp(got, want)) fail_msg("live files \"%s\", want \"%s\"", got, want);
}

typedef struct unref_job {
    version **vs;
    size_t n;
} unref_job;

static void *unref_thread(void *arg)
{
    unref_job *j = arg;
    for (size_t i = 0; i < j->n; i++) version_unref(j->vs[i]);
    return NULL;
}

static void test_live_files_pinned(void **state)
{
    fixture *fx = *state;
    version_set *vs;
    open_ok(fx->dir, &vs);
    apply_add(vs, fx->dir, 0, "a", "b", 1, 1); /* 2 */
    apply_add(vs, fx->dir, 1, "a", "b", 1, 1); /* 3 */
    live_is(vs, "2,3");
    version *v1 = vset_current(vs);
    version_ref(v1);
    version_edit e;
    edit_init(&e);
    assert_int_equal(edit_delete_file(&e, 0, 2), 0);
    add_new(fx->dir, &e, 1, mkfile(vset_new_file_number(vs), "c", "d", 1, 1, 10)); /* 4 */
    assert_int_equal(vset_log_and_apply(vs, &e), 0);
    edit_free(&e);
    assert_ptr_not_equal(vset_current(vs), v1);
    assert_string_equal(numbers_at(v1, 0), "2"); /* the pinned version is unchanged */
    live_is(vs, "2,3,4");
    version *v2 = vset_current(vs);
    version_ref(v2);
    edit_init(&e);
    assert_int_equal(edit_delete_file(&e, 1, 3), 0);
    assert_int_equal(vset_log_and_apply(vs, &e), 0);
    edit_free(&e);
    live_is(vs, "2,3,4");
    version_unref(v1);
    live_is(vs, "3,4");
    version_unref(v2);
    live_is(vs, "4");

    /* Many pinned versions released by two threads while live files are listed. */
    enum { NV = 200 };
    version **pinned = malloc(NV * sizeof *pinned);
    assert_non_null(pinned);
    for (int i = 0; i < NV; i++) {
        pinned[i] = vset_current(vs);
        version_ref(pinned[i]);
        edit_init(&e);
        char k[16];
        snprintf(k, sizeof k, "z%05d", i);
        add_new(fx->dir, &e, 0, mkfile(vset_new_file_number(vs), k, k, 1, 1, 10));
        if (i > 0) assert_int_equal(edit_delete_file(&e, 0, vset_current(vs)->files[0][0]->number), 0);
        assert_int_equal(vset_log_and_apply(vs, &e), 0);
        edit_free(&e);
    }
    uint64_t *nums;
    size_t n;
    assert_int_equal(vset_live_files(vs, &nums, &n), 0);
    assert_int_equal(n, NV + 1); /* #4 and every z file some version still holds */
    free(nums);
    unref_job j1 = {pinned, NV / 2}, j2 = {pinned + NV / 2, NV - NV / 2};
    pthread_t t1, t2;
    assert_int_equal(pthread_create(&t1, NULL, unref_thread, &j1), 0);
    assert_int_equal(pthread_create(&t2, NULL, unref_thread, &j2), 0);
    for (int i = 0; i < 200; i++) {
        assert_int_equal(vset_live_files(vs, &nums, &n), 0);
        assert_true(n >= 2 && n <= NV + 1);
        for (size_t k = 1; k < n; k++) assert_true(nums[k - 1] < nums[k]);
        free(nums);
    }
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    char want[32];
    snprintf(want, sizeof want, "4,%llu", (unsigned long long)vset_current(vs)->files[0][0]->number);
    live_is(vs, want);
    free(pinned);
    vset_close(vs);
}

/* ---------------------------------------------------------------- damaged MANIFEST / CURRENT */

/* build_history -- applies a few edits; returns the MANIFEST number, its size
 * before the last edit (*before) and the two states. */
static uint64_t build_history(const char *dir, uint64_t *before, tkv_buf *sa, tkv_buf *sb)
{
    version_set *vs;
    open_ok(dir, &vs);
    apply_add(vs, dir, 0, "a", "m", 1, 5);
    apply_add(vs, dir, 1, "a", "c", 1, 2);
    apply_add(vs, dir, 1, "d", "f", 1, 2);
    vset_set_last_seq(vs, 9);
    apply_add(vs, dir, 2, "a", "z", 1, 2);
    char p[PATH_MAX];
    uint64_t mn = vset_manifest_number(vs);
    dump_state(vs, sa);
    *before = fsize(manifest_path(dir, mn, p));
    version_edit e;
    edit_init(&e);
    assert_int_equal(edit_delete_file(&e, 1, 3), 0);
    add_new(dir, &e, 0, mkfile(vset_new_file_number(vs), "k", "q", 6, 9, 77));
    e.has_log_number = 1;
    e.log_number = 5;
    vset_set_last_seq(vs, 12);
    assert_int_equal(vset_log_and_apply(vs, &e), 0);
    edit_free(&e);
    dump_state(vs, sb);
    vset_close(vs);
    return mn;
}

static void test_torn_tail(void **state)
{
    fixture *fx = *state;
    tkv_buf sa = {0}, sb = {0}, got = {0};
    uint64_t before;
    uint64_t mn = build_history(fx->dir, &before, &sa, &sb);
    char p[PATH_MAX];
    size_t len;
    uint8_t *orig = read_file(manifest_path(fx->dir, mn, p), &len);
    assert_true(len > before + WAL_RECORD_HEADER);
    for (size_t t = (size_t)before; t <= len; t++) {
        /* Restore: the MANIFEST cut at t, CURRENT naming it (the MANIFEST the
         * previous open wrote is deleted as stale by the next open). */
        write_file(manifest_path(fx->dir, mn, p), orig, t);
        set_current(fx->dir, mn);
        version_set *vs;
        open_ok(fx->dir, &vs);
        dump_state(vs, &got);
        assert_same_state(&got, t == len ? &sb : &sa, t == len ? "whole MANIFEST" : "torn last edit");
        assert_int_equal(vset_manifest_number(vs) > mn, 1);
        vset_close(vs);
    }
    /* A torn tail followed by zeros is still a torn tail. */
    uint8_t *z = calloc(1, len + 64);
    assert_non_null(z);
    memcpy(z, orig, before + 3);
    write_file(manifest_path(fx->dir, mn, p), z, len + 64);
    set_current(fx->dir, mn);
    version_set *vs;
    open_ok(fx->dir, &vs);
    dump_state(vs, &got);
    assert_same_state(&got, &sa, "zero-filled tail");
    vset_close(vs);
    free(z);
    free(orig);
    buf_free(&sa);
    buf_free(&sb);
    buf_free(&got);
}

static void test_mid_corruption(void **state)
{
    fixture *fx = *state;
    tkv_buf sa = {0}, sb = {0};
    uint64_t before;
    uint64_t mn = build_history(fx->dir, &before, &sa, &sb);
    char p[PATH_MAX], name[32];
    snprintf(name, sizeof name, "MANIFEST-%06llu", (unsigned long long)mn);
    size_t len;
    uint8_t *orig = read_file(manifest_path(fx->dir, mn, p), &len);
    /* A flipped bit anywhere in a record that is not the last one. Skipped:
     * the high bytes of a record's length field, whose flip sends the declared
     * extent past EOF -- indistinguishable from a torn tail (docs/format-wal.md). */
    uint8_t *c = malloc(len);
    assert_non_null(c);
    uint8_t skip[4096] = {0};
    assert_true(len < sizeof skip);
    for (size_t off = WAL_HEADER_SIZE; off + WAL_RECORD_HEADER <= len;
         off += WAL_RECORD_HEADER + dec_u32(orig + off + 4))
        skip[off + 5] = skip[off + 6] = skip[off + 7] = 1;
    int tried = 0;
    for (size_t off = WAL_HEADER_SIZE; off < before; off++) {
        if (skip[off]) continue;
        memcpy(c, orig, len);
        c[off] ^= (uint8_t)(1u << (off % 8));
        write_file(manifest_path(fx->dir, mn, p), c, len);
        expect_corruption(fx->dir, name);
        tried++;
    }
    assert_true(tried > 100);
    /* A bad file header. */
    memcpy(c, orig, len);
    c[2] ^= 1;
    write_file(manifest_path(fx->dir, mn, p), c, len);
    expect_corruption(fx->dir, name);
    /* The failed opens changed nothing: the intact file still recovers. */
    write_file(manifest_path(fx->dir, mn, p), orig, len);
    version_set *vs;
    open_ok(fx->dir, &vs);
    tkv_buf got = {0};
    dump_state(vs, &got);
    assert_same_state(&got, &sb, "intact MANIFEST after failed opens");
    vset_close(vs);
    free(c);
    free(orig);
    buf_free(&sa);
    buf_free(&sb);
    buf_free(&got);
}

static void test_current_problems(void **state)
{
    fixture *fx = *state;
    tkv_buf sa = {0}, sb = {0};
    uint64_t before;
    uint64_t mn = build_history(fx->dir, &before, &sa, &sb);
    char p[PATH_MAX], cur[PATH_MAX];
    snprintf(cur, sizeof cur, "%s/CURRENT", fx->dir);
    /* CURRENT naming a missing MANIFEST. */
    set_current(fx->dir, 99);
    expect_corruption(fx->dir, "MANIFEST-000099");
    /* Malformed CURRENT. */
    static const char *bad[] = {
        "", "MANIFEST-\n", "MANIFEST-000003", "MANIFEST-00x003\n", "manifest-000003\n", "MANIFEST-000003\n\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        write_file(cur, bad[i], strlen(bad[i]));
        expect_corruption(fx->dir, "CURRENT");
    }
    /* CURRENT missing while a MANIFEST listing files exists. */
    unlink(cur);
    expect_corruption(fx->dir, "CURRENT missing");
    /* ... and when the only MANIFEST is not MANIFEST-000001. */
    set_current(fx->dir, mn);
    version_set *vs;
    open_ok(fx->dir, &vs);
    vset_close(vs);
    unlink(cur);
    expect_corruption(fx->dir, "CURRENT missing");
    buf_free(&sa);
    buf_free(&sb);
    (void)p;
}

/* A crash while creating the database: MANIFEST-000001 written (or torn), no
 * CURRENT yet. Not corruption: the database opens empty. */
static void test_crash_during_create(void **state)
{
    fixture *fx = *state;
    char p[PATH_MAX], cur[PATH_MAX];
    snprintf(cur, sizeof cur, "%s/CURRENT", fx->dir);
    version_set *vs;
    open_ok(fx->dir, &vs);
    vset_close(vs);
    /* MANIFEST-000001 holds an empty snapshot; fake the creation crash. */
    size_t len;
    uint8_t *m = read_file(manifest_path(fx->dir, 1, p), &len);
    unlink(p);
    unlink(cur);
    for (size_t t = 0; t <= len; t += (t < 40 ? 1 : 7)) {
        write_file(manifest_path(fx->dir, 1, p), m, t);
        open_ok(fx->dir, &vs);
        for (int l = 0; l < VERSION_LEVELS; l++) assert_int_equal(vset_current(vs)->nfiles[l], 0);
        assert_true(vset_manifest_number(vs) >= 2);
        uint64_t mnum = vset_manifest_number(vs);
        vset_close(vs);
        unlink(manifest_path(fx->dir, mnum, p));
        unlink(cur);
    }
    free(m);
}

static void test_missing_sst(void **state)
{
    fixture *fx = *state;
    tkv_buf sa = {0}, sb = {0};
    uint64_t before;
    build_history(fx->dir, &before, &sa, &sb);
    version_set *vs;
    open_ok(fx->dir, &vs);
    uint64_t victim = vset_current(vs)->files[1][0]->number;
    uint64_t victim_size = vset_current(vs)->files[1][0]->size;
    uint64_t mn = vset_manifest_number(vs);
    vset_close(vs);
    char p[PATH_MAX], want[64];
    /* Wrong size. */
    assert_int_equal(truncate(sst_name(fx->dir, victim, p), (off_t)victim_size + 1), 0);
    snprintf(want, sizeof want, "%06llu.sst listed in MANIFEST-%06llu", (unsigned long long)victim,
             (unsigned long long)(mn + 0));
    expect_corruption(fx->dir, want);
    /* Missing. */
    unlink(sst_name(fx->dir, victim, p));
    snprintf(want, sizeof want, "%06llu.sst listed in MANIFEST-%06llu is missing", (unsigned long long)victim,
             (unsigned long long)mn);
    expect_corruption(fx->dir, want);
    /* Recreated with the right size: opens again. */
    assert_int_equal(close(open(p, O_CREAT | O_WRONLY, 0644)), 0);
    assert_int_equal(truncate(p, (off_t)victim_size), 0);
    open_ok(fx->dir, &vs);
    vset_close(vs);
    buf_free(&sa);
    buf_free(&sb);
}

/* ---------------------------------------------------------------- faults */

static void test_fault_injection(void **state)
{
    fixture *fx = *state;
    version_set *vs;
    open_ok(fx->dir, &vs);
    apply_add(vs, fx->dir, 1, "a", "b", 1, 1);
    tkv_buf s0 = {0}, s1 = {0}, got = {0};
    dump_state(vs, &s0);
    version *v0 = vset_current(vs);

    /* A failing MANIFEST sync: error returned, nothing installed, set poisoned. */
    tu_fault h = {IO_OP_SYNC, "MANIFEST", 0, -1, EIO, 0}; /* every MANIFEST sync fails */
    io_set_fault_hook(tu_fault_hook, &h);
    version_edit e;
    edit_init(&e);
    uint64_t added = vset_new_file_number(vs);
    add_new(fx->dir, &e, 1, mkfile(added, "c", "d", 2, 2, 55));
    assert_int_equal(vset_log_and_apply(vs, &e), TKV_IO_ERROR);
    assert_int_equal(h.hits, 1);
    edit_free(&e);
    io_set_fault_hook(NULL, NULL);
    assert_ptr_equal(vset_current(vs), v0);
    dump_state(vs, &got);
    assert_same_state(&got, &s0, "after failed sync");
    uint64_t *nums;
    size_t n;
    assert_int_equal(vset_live_files(vs, &nums, &n), 0);
    assert_int_equal(n, 1);
    free(nums);
    edit_init(&e);
    add_new(fx->dir, &e, 2, mkfile(vset_new_file_number(vs), "c", "d", 2, 2, 55));
    assert_int_equal(vset_log_and_apply(vs, &e), TKV_IO_ERROR); /* poisoned: same error */
    assert_non_null(strstr(tkv_errmsg(), "MANIFEST"));
    edit_free(&e);
    assert_ptr_equal(vset_current(vs), v0);
    vset_close(vs);
    /* Reopen: the failed edit may or may not be in the MANIFEST (its write
     * succeeded); either way the set recovers a consistent state. */
    open_ok(fx->dir, &vs);
    dump_state(vs, &got);
    version *v = vset_current(vs);
    assert_true(got.len == s0.len ? memcmp(got.data, s0.data, got.len) == 0
                                  : (v->nfiles[1] == 2 && v->files[1][1]->number == added));
    dump_state(vs, &s0);

    /* A failing MANIFEST write (ENOSPC): TKV_NO_SPACE, nothing installed, poisoned. */
    h = (tu_fault){IO_OP_WRITE, "MANIFEST", 0, -1, ENOSPC, 0};
    io_set_fault_hook(tu_fault_hook, &h);
    edit_init(&e);
    add_new(fx->dir, &e, 3, mkfile(vset_new_file_number(vs), "c", "d", 2, 2, 55));
    assert_int_equal(vset_log_and_apply(vs, &e), TKV_NO_SPACE);
    io_set_fault_hook(NULL, NULL);
    assert_int_equal(vset_log_and_apply(vs, &e), TKV_NO_SPACE);
    edit_free(&e);
    dump_state(vs, &got);
    assert_same_state(&got, &s0, "after failed write");
    vset_close(vs);

    /* Faults during open: the new MANIFEST's sync, then the CURRENT rename.
     * The open fails; CURRENT still names the old MANIFEST, which recovers. */
    static const tu_fault open_faults[] = {
        {IO_OP_SYNC, "MANIFEST", 0, -1, EIO, 0},
        {IO_OP_WRITE, "MANIFEST", 0, -1, ENOSPC, 0},
        {IO_OP_RENAME, "CURRENT", 0, -1, EIO, 0},
        {IO_OP_OPEN, "CURRENT.tmp", 0, -1, EIO, 0},
    };
    for (size_t i = 0; i < sizeof open_faults / sizeof open_faults[0]; i++) {
        h = open_faults[i];
        io_set_fault_hook(tu_fault_hook, &h);
        vs = (version_set *)1;
        int rc = vset_open(fx->dir, NULL, &vs);
        io_set_fault_hook(NULL, NULL);
        assert_true(rc < 0);
        assert_null(vs);
        assert_true(h.hits >= 1);
        open_ok(fx->dir, &vs);
        dump_state(vs, &s1);
        assert_same_state(&s1, &s0, "reopen after a failed open");
        vset_close(vs);
    }
    buf_free(&s0);
    buf_free(&s1);
    buf_free(&got);
}

/* test_row_cursors -- matrix row cursors: exact bytes, set/overwrite/remove
 * through the MANIFEST and across reopen, and the rejected forms. */
static void test_row_cursors(void **state)
{
    fixture *fx = *state;
    /* exact bytes: cursor of row 3 = 300, row 5 removed */
    version_edit e;
    edit_init(&e);
    assert_int_equal(edit_set_row_cursor(&e, 3, 300), 0);
    assert_int_equal(edit_remove_row(&e, 5), 0);
    assert_int_equal(edit_set_row_cursor(&e, 3, 1), TKV_INVALID); /* twice in one edit */
    assert_int_equal(edit_remove_row(&e, 3), TKV_INVALID);
    tkv_buf b = {0};
    assert_int_equal(edit_encode(&e, &b), 0);
    static const uint8_t want[] = {0x06, 0x03, 0xAC, 0x02, 0x07, 0x05, 0x00};
    assert_int_equal(b.len, sizeof want);
    assert_memory_equal(b.data, want, sizeof want);
    edit_free(&e);
    /* a row twice in a record is corruption */
    static const uint8_t dup[] = {0x06, 0x03, 0x01, 0x07, 0x03, 0x00};
    assert_int_equal(edit_decode(dup, sizeof dup, &e), TKV_CORRUPTION);
    assert_non_null(strstr(tkv_errmsg(), "row 3"));

    version_set *vs;
    open_ok(fx->dir, &vs);
    uint64_t c = 99;
    assert_int_equal(version_row_cursor(vset_current(vs), 1, &c), 0);
    for (uint64_t row = 1; row <= 4; row++) {
        edit_init(&e);
        assert_int_equal(edit_set_row_cursor(&e, row, row * 10), 0);
        assert_int_equal(vset_log_and_apply(vs, &e), 0);
        edit_free(&e);
    }
    edit_init(&e); /* advance row 2, drop row 1 */
    assert_int_equal(edit_set_row_cursor(&e, 2, 777), 0);
    assert_int_equal(edit_remove_row(&e, 1), 0);
    assert_int_equal(vset_log_and_apply(vs, &e), 0);
    edit_free(&e);
    edit_init(&e); /* removing an unknown row is a bug: refused, nothing changes */
    assert_int_equal(edit_remove_row(&e, 42), 0);
    assert_int_equal(vset_log_and_apply(vs, &e), TKV_CORRUPTION);
    assert_non_null(strstr(tkv_errmsg(), "row 42"));
    edit_free(&e);
    tkv_buf s0 = {0}, s1 = {0};
    dump_state(vs, &s0);
    vset_close(vs);
    open_ok(fx->dir, &vs); /* the snapshot record carries the cursors */
    dump_state(vs, &s1);
    assert_same_state(&s1, &s0, "row cursors after reopen");
    version *v = vset_current(vs);
    assert_int_equal(v->nrows, 3);
    assert_int_equal(version_row_cursor(v, 1, &c), 0);
    assert_int_equal(version_row_cursor(v, 2, &c), 1);
    assert_int_equal(c, 777);
    assert_int_equal(version_row_cursor(v, 4, &c), 1);
    assert_int_equal(c, 40);
    vset_close(vs);
    buf_free(&b);
    buf_free(&s0);
    buf_free(&s1);
}

/* test_edit_pool_uuid -- the pool uuid tag round-trips and a truncated one is
 * corruption. */
static void test_edit_pool_uuid(void **state)
{
    (void)state;
    version_edit e, d;
    edit_init(&e);
    e.has_pool_uuid = 1;
    for (int i = 0; i < 16; i++) e.pool_uuid[i] = (uint8_t)(i * 7 + 1);
    tkv_buf b = {0};
    assert_int_equal(edit_encode(&e, &b), 0);
    assert_int_equal(edit_decode(b.data, b.len, &d), 0);
    assert_true(d.has_pool_uuid);
    assert_memory_equal(d.pool_uuid, e.pool_uuid, 16);
    edit_free(&d);
    /* cut inside the uuid: tag 8 is followed by fewer than 16 bytes */
    assert_int_equal(edit_decode(b.data, 1 + 10, &d), TKV_CORRUPTION);
    buf_free(&b);
    edit_free(&e);
}

/* test_file_range_dels -- file_meta_add_range_dels widens a file's key and
 * sequence range over its tombstones (the largest key is the last one a
 * tombstone can cover: end minus a final 0x00, else end itself), and tag 9
 * carries the count: byte for byte, and a count of 0 is corruption; tag 10
 * a row's range tombstone start, byte for byte, never empty. */
static void test_file_range_dels(void **state)
{
    (void)state;
    file_meta *f = mkfile(9, "c", "d", 5, 6, 100); /* ("c", 6) .. ("d", 5) */
    rd_tomb t[2] = {{slice("b", 1), slice("cz", 2), 3, 0}, {slice("c", 1), slice("e\0", 2), 9, 0}};
    assert_int_equal(file_meta_add_range_dels(f, t, 2), 0);
    assert_int_equal(f->num_range_dels, 2);
    assert_int_equal(f->min_seq, 3);
    assert_int_equal(f->max_seq, 9);
    assert_int_equal(ukey_cmp(ikey_user(slice(f->smallest.data, f->smallest.len)), slice("b", 1)), 0);
    assert_int_equal(ikey_seq(slice(f->smallest.data, f->smallest.len)), IKEY_MAX_SEQ);
    assert_int_equal(ukey_cmp(ikey_user(slice(f->largest.data, f->largest.len)), slice("e", 1)), 0);
    assert_int_equal(ikey_seq(slice(f->largest.data, f->largest.len)), 0);
    file_meta *g = file_meta_new(); /* tombstones only */
    g->number = 10;
    rd_tomb u = {slice("m", 1), slice("n", 1), 7, 0};
    assert_int_equal(file_meta_add_range_dels(g, &u, 1), 0);
    assert_int_equal(g->min_seq, 7);
    assert_int_equal(g->max_seq, 7);
    assert_int_equal(ukey_cmp(ikey_user(slice(g->largest.data, g->largest.len)), slice("n", 1)), 0);
    version_edit e, d;
    edit_init(&e);
    assert_int_equal(edit_add_file(&e, 1, g), 0);
    tkv_buf b = {0};
    assert_int_equal(edit_encode(&e, &b), 0);
    assert_int_equal(b.data[0], 9);
    assert_int_equal(b.data[b.len - 2], 1); /* the count, before END */
    assert_int_equal(edit_decode(b.data, b.len, &d), 0);
    assert_int_equal(d.added[0].f->num_range_dels, 1);
    edit_free(&d);
    b.data[b.len - 2] = 0;
    assert_int_equal(edit_decode(b.data, b.len, &d), TKV_CORRUPTION);
    buf_free(&b);
    edit_free(&e);
    /* tag 10: row 3, cursor 4, start "k"; a start of 0 bytes is corruption */
    edit_init(&e);
    row_key *k = row_key_new(slice("k", 1));
    assert_int_equal(edit_set_row_cursor_rd(&e, 3, 4, k), 0);
    row_key_unref(k);
    assert_int_equal(edit_encode(&e, &b), 0);
    static const uint8_t want10[] = {10, 3, 4, 1, 'k', 0};
    assert_int_equal(b.len, sizeof want10);
    assert_memory_equal(b.data, want10, sizeof want10);
    uint8_t bad10[] = {10, 3, 4, 0, 0};
    assert_int_equal(edit_decode(bad10, sizeof bad10, &d), TKV_CORRUPTION);
    buf_free(&b);
    edit_free(&e);
    file_meta_unref(f);
    file_meta_unref(g);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edit_exact_bytes),
        cmocka_unit_test(test_edit_round_trip),
        cmocka_unit_test(test_edit_pool_uuid),
        cmocka_unit_test(test_file_range_dels),
        cmocka_unit_test(test_edit_malformed),
        cmocka_unit_test(test_overlapping_and_find),
        cmocka_unit_test_setup_teardown(test_fresh_open, setup, teardown),
        cmocka_unit_test_setup_teardown(test_apply_levels, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reopen_random, setup, teardown),
        cmocka_unit_test_setup_teardown(test_live_files_pinned, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_tail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mid_corruption, setup, teardown),
        cmocka_unit_test_setup_teardown(test_current_problems, setup, teardown),
        cmocka_unit_test_setup_teardown(test_crash_during_create, setup, teardown),
        cmocka_unit_test_setup_teardown(test_missing_sst, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fault_injection, setup, teardown),
        cmocka_unit_test_setup_teardown(test_row_cursors, setup, teardown),
    };
    return cmocka_run_group_tests_name("version", tests, NULL, NULL);
}
