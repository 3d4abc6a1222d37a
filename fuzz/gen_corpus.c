// SPDX-License-Identifier: Apache-2.0
/*
 * gen_corpus.c -- writes the seed corpora of the fuzz targets
 * (fuzz/corpus/<target>/) from files the library itself writes: tables from
 * the table builder, a WAL and MANIFESTs from real databases, pools with
 * RowTables from the row builder; plus a few edge cases per target. Each
 * seed is the target's flags byte followed by the bytes. Run by
 * `make fuzz-corpus` (which rewrites the seeds it names; inputs added by
 * hand, such as regressions, are kept).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "db/options.h"
#include "fuzz/fuzzpool.h"
#include "fuzz/fuzzsst.h"
#include "fuzz/fuzzutil.h"
#include "matrix/pool.h"
#include "matrix/rowtable.h"
#include "mem/wal.h"
#include "sst/block.h"
#include "tierkv.h"
#include "util/checksum.h"
#include "util/status.h"
#include "util/vec_iter.h"

static const char *root;

static void die(const char *what)
{
    fprintf(stderr, "gen_corpus: %s: %s\n", what, tkv_errmsg());
    exit(1);
}

/* seed -- root/target/name = flags byte + p[0..n). */
static void seed(const char *target, const char *name, uint8_t flags, const void *p, size_t n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root, target);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/%s", root, target, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(&flags, 1, 1, f) != 1 || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0) die(path);
}

/* ---------------------------------------------------------------- SSTables */

static void gen_sst(void)
{
    const fz_sst *s = fz_sst_base();
    seed("sst_table", "base", 0, s->file, s->size);
    seed("sst_table", "base-fix", FZ_FIX, s->file, s->size);
    const uint8_t *foot = s->file + s->size - SST_FOOTER_SIZE;
    seed("sst_footer", "real", 0, foot, SST_FOOTER_SIZE);
    seed("sst_footer", "real-fix", FZ_FIX, foot, SST_FOOTER_SIZE);
    static const uint8_t zeros[SST_FOOTER_SIZE];
    seed("sst_footer", "relative-zero", FZ_FIX | 2, zeros, sizeof zeros);
    table_footer ft = s->ft;
    seed("sst_index", "raw", 0, s->file + ft.index.offset, (size_t)ft.index.size + SST_TRAILER_SIZE);
    seed("sst_index", "contents", FZ_FIX, s->file + ft.index.offset, (size_t)ft.index.size);
    seed("sst_index", "empty", FZ_FIX, "\0\0\0\0", 4);
    seed("sst_filter", "raw", 0, s->file + ft.filter.offset, (size_t)ft.filter.size + SST_TRAILER_SIZE);
    seed("sst_filter", "contents", FZ_FIX, s->file + ft.filter.offset, (size_t)ft.filter.size);
    seed("sst_filter", "none", FZ_FIX, "", 0);
    /* Data blocks, as stored and (lz4 ones) decompressed. */
    block_iter ix = {0};
    if (block_iter_init(&ix, s->file + ft.index.offset, (size_t)ft.index.size, "base", 0) < 0) die("index");
    int i = 0;
    for (block_iter_seek_first(&ix); block_iter_valid(&ix) && i < 4; block_iter_next(&ix), i++) {
        block_handle h;
        tkv_slice v = block_iter_value(&ix);
        handle_decode(v.p, v.p + v.n, &h);
        char name[32];
        snprintf(name, sizeof name, "data%d", i);
        seed("sst_block", name, 0, s->file + h.offset, (size_t)h.size + SST_TRAILER_SIZE);
        cached_block *blk;
        if (table_decode_block("base", h, s->file + h.offset, (size_t)h.size + SST_TRAILER_SIZE, "data block", NULL,
                               &blk) < 0)
            die("data block");
        snprintf(name, sizeof name, "data%d-lz4", i);
        seed("sst_block", name, 2, blk->data, blk->size);
        block_mem_free(blk);
    }
    block_iter_clear(&ix);
    seed("sst_block", "index", 0, s->file + ft.index.offset, (size_t)ft.index.size + SST_TRAILER_SIZE);
    uint8_t empty[4 + SST_TRAILER_SIZE] = {0};
    seed("sst_block", "empty-fix", FZ_FIX, empty, sizeof empty);
}

/* ---------------------------------------------------------------- databases: WAL, MANIFEST */

/* gen_wal_variants -- from a real version-2 WAL (data[0..n)): the same log
 * with its synced frontier at its 3rd record and a hole (zeros) over its
 * 6th record, then with the hole before the frontier -- a torn hole and a
 * corruption (docs/format-wal.md) -- and one cut to its header. */
static void gen_wal_variants(const char *tag, const uint8_t *data, size_t n)
{
    if (n < WAL_V2_HEADER_SIZE || dec_u32(data + 8) != WAL_V2) die("the database's WAL is not version 2");
    size_t off[8], k = 0;
    for (size_t o = WAL_V2_HEADER_SIZE; k < 8 && n - o >= WAL_RECORD_HEADER;) {
        size_t len = dec_u32(data + o + 4);
        if (len > n - o - WAL_RECORD_HEADER) break;
        off[k++] = o;
        o += WAL_RECORD_HEADER + len;
    }
    if (k < 8) die("the database's WAL has fewer than 8 records");
    uint8_t *b = malloc(n);
    if (!b) die("malloc");
    char name[256];
    for (int before = 0; before <= 1; before++) {
        memcpy(b, data, n);
        uint8_t *slot = b + WAL_V2_FRONTIER_OFF;
        enc_u64(slot, before ? off[7] : off[3]);
        enc_u32(slot + 8, tkv_checksum(slot, 8));
        memset(b + off[5], 0, off[6] - off[5]);
        snprintf(name, sizeof name, "%s-v2-hole-%s", tag, before ? "before-frontier" : "after-frontier");
        seed("wal", name, 0, b, n);
    }
    snprintf(name, sizeof name, "%s-v2-header-only", tag);
    seed("wal", name, FZ_FIX | 2, data, WAL_V2_HEADER_SIZE);
    free(b);
}

/* copy_named -- seeds every file of dir whose name starts with prefix or ends with suffix. */
static void copy_named(const char *dir, const char *prefix, const char *suffix, const char *target, const char *tag,
                       uint8_t flags)
{
    DIR *d = opendir(dir);
    if (!d) die(dir);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t ln = strlen(e->d_name), ls = suffix ? strlen(suffix) : 0;
        int match =
            prefix ? !strncmp(e->d_name, prefix, strlen(prefix)) : ln > ls && !strcmp(e->d_name + ln - ls, suffix);
        if (!match) continue;
        char path[1024], name[256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        uint8_t *data;
        size_t n;
        if (io_read_file(path, IO_META, NULL, &data, &n) < 0) die(path);
        wal_replay_stats st;
        if (!strcmp(target, "wal") && wal_replay(path, NULL, NULL, NULL, &st) == 0 && st.end < n)
            n = (size_t)st.end; /* not the zeros of a mapped log's reservation: the corpus stays small */
        snprintf(name, sizeof name, "%s-%s", tag, e->d_name);
        seed(target, name, flags, data, n);
        if (!strcmp(target, "wal") && !flags) gen_wal_variants(tag, data, n);
        if (!strcmp(target, "manifest") && !flags) { /* each record is a version_edit seed */
            size_t off = WAL_HEADER_SIZE;
            for (int r = 0; n >= WAL_HEADER_SIZE && n - off >= WAL_RECORD_HEADER; r++) {
                size_t len = dec_u32(data + off + 4);
                if (len > n - off - WAL_RECORD_HEADER) break;
                snprintf(name, sizeof name, "%s-record%d", tag, r);
                if (r < 4) seed("version_edit", name, 0, data + off + WAL_RECORD_HEADER, len);
                off += WAL_RECORD_HEADER + len;
            }
        }
        free(data);
    }
    closedir(d);
}

static void set(tkv_options *o, const char *k, const char *v)
{
    if (tkv_options_set(o, k, v) != TKV_OK) die(k);
}

/* gen_db -- a database of the given l0; its WAL while open, its MANIFEST after a flush. */
static void gen_db(const char *l0)
{
    char dir[600];
    snprintf(dir, sizeof dir, "%s/db-%s", fz_dir(), l0);
    tkv_options *o = tkv_options_new();
    set(o, "l0", l0);
    set(o, "memtable_size", "64K");
    set(o, "pmem_size", "4M");
    set(o, "sst_size", "64K");
    tkv_db *db;
    if (tkv_open(dir, o, &db) != TKV_OK) die("tkv_open");
    tkv_batch *b = tkv_batch_new();
    char k[32], v[64];
    for (int i = 0; i < 400; i++) {
        int kl = snprintf(k, sizeof k, "user%06d", (i * 7919) % 1000);
        int vl = snprintf(v, sizeof v, "value-%d-%s", i, i % 3 ? "x" : "yyyyyyyyyyyyyyyyyyyy");
        if (i % 11 == 5) tkv_batch_delete(b, k, (size_t)kl);
        else tkv_batch_put(b, k, (size_t)kl, v, (size_t)vl);
        if (i % (1 + i % 4) == 0 && tkv_write(db, b, 0) != TKV_OK) die("tkv_write");
        if (i % (1 + i % 4) == 0) tkv_batch_clear(b);
    }
    tkv_write(db, b, 0);
    tkv_batch_free(b);
    if (!strcmp(l0, "sst")) {
        copy_named(dir, NULL, ".wal", "wal", l0, 0);
        copy_named(dir, NULL, ".wal", "wal", "fix", FZ_FIX | 2); /* 2: fuzz_wal.c FZ_V2 (the WALs are version 2) */
    }
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 300; i++) {
            int kl = snprintf(k, sizeof k, "user%06d", i * 3 + round);
            tkv_put(db, k, (size_t)kl, "v", 1, 0);
        }
        if (tkv_flush(db) != TKV_OK) die("tkv_flush");
    }
    if (!strcmp(l0, "sst")) tkv_compact_range(db, NULL, 0, NULL, 0);
    copy_named(dir, "MANIFEST-", NULL, "manifest", l0, 0);
    char tag[32];
    snprintf(tag, sizeof tag, "%s-files", l0);
    copy_named(dir, "MANIFEST-", NULL, "manifest", tag, FZ_FIX | 2);
    tkv_close(db);
    tkv_options_free(o);
    tkv_destroy(dir);
}

/* ---------------------------------------------------------------- pools and RowTables */

/* build_row -- row `id` of n entries "r<id>-key%04d" (every 5th a deletion,
 * one large value that crosses pages), forward pointers into `older`. */
static rowtable *build_row(pool *p, uint64_t id, int n, const rowtable *older)
{
    tkv_slice *ks = calloc((size_t)n, sizeof *ks), *vs = calloc((size_t)n, sizeof *vs);
    uint8_t *mem = calloc((size_t)n, 32 + 1200);
    for (int i = 0; i < n; i++) {
        uint8_t *ik = mem + (size_t)i * (32 + 1200), *val = ik + 32;
        int kl = snprintf((char *)ik, 32, "r%llu-key%04d", (unsigned long long)(id % 2), i * 3);
        ikey_type t = i % 5 == 4 ? IKEY_DELETION : IKEY_VALUE;
        ikey_encode(ik, ik, (size_t)kl, id * 1000 + (uint64_t)i, t);
        size_t vl = t == IKEY_DELETION ? 0 : i == 7 ? 1100 : 20 + (size_t)i % 30;
        memset(val, 'a' + i % 26, vl);
        ks[i] = slice(ik, (size_t)kl + IKEY_TRAILER);
        vs[i] = slice(val, vl);
    }
    tkv_it *src = vec_iter_new(ks, vs, (size_t)n);
    rowtable *r;
    if (!src || rowtable_build(p, id, src, older, &r) < 0 || rowtable_commit(r) < 0) die("rowtable_build");
    it_destroy(src);
    free(ks);
    free(vs);
    free(mem);
    return r;
}

/* gen_pool -- a pool of two rows, the older one half drained; with lz4 the
 * rows' values that compress are lz4 blocks (ROWTABLE_FLAG_LZ4), and only the
 * rowtable target's seeds are written. */
static void gen_pool(int lz4)
{
    char path[600];
    snprintf(path, sizeof path, "%s/gen.pmem", fz_dir());
    pool_options po = {4096, 8};
    pool *p;
    if (pool_open(path, 128u << 10, PM_EMULATED, PM_PROFILE_NONE, &po, &p, NULL) < 0) die("pool_open");
    pool_set_row_compression(p, lz4);
    rowtable *r1 = build_row(p, 1, 60, NULL);
    rowtable *r2 = build_row(p, 2, 40, r1);
    /* r1 drained halfway: its dead pages released (the release bitmap). */
    if (rowtable_set_cursor(r1, 30) < 0 || rowtable_release_dead_pages(r1, NULL) < 0) die("release");
    rowtable_close(r2);
    rowtable_close(r1);
    if (pool_close(p) < 0) die("pool_close");
    uint8_t *img;
    size_t n;
    if (io_read_file(path, IO_META, NULL, &img, &n) < 0) die(path);
    while (n > 4096 && img[n - 1] == 0) n--; /* the target zero-extends to the header's size */
    if (lz4) {
        seed("rowtable", "rows-lz4", 0, img, n);
        seed("rowtable", "rows-lz4-fix", FZ_FIX | FZ_FIX_ROWS | FZ_FIX_PAGES, img, n);
    } else {
        seed("pool", "rows", 0, img, n);
        seed("pool", "rows-fix", FZ_FIX | FZ_FIX_ROWS, img, n);
        seed("pool", "header-only", FZ_FIX, img, 4096);
        seed("rowtable", "rows", 0, img, n);
        seed("rowtable", "rows-fix", FZ_FIX | FZ_FIX_ROWS | FZ_FIX_PAGES, img, n);
    }
    free(img);
    io_remove(path);
}

/* ---------------------------------------------------------------- options */

static void gen_options(void)
{
    tkv_options *o = tkv_options_new();
    char *desc = options_describe(o);
    seed("options", "defaults", 0, desc, strlen(desc));
    free(desc);
    tkv_options_free(o);
    static const char *const texts[][2] = {
        {"sizes", "memtable_size=64K\nblock_size=4kb\nsst_size=1G\nl1_size=0\nbytes_per_sync=1T\n"},
        {"enums", "l0=SST\ncompression=lz4\npmem_mode=crashsim\nscheduler=fifo\nasync_io=off\n"},
        {"bools", "wal=yes\nsync=off\ndirect_io=TRUE\nrow_filter=0\n"},
        {"bad", "memtables=1\nmemtable_size=99999999999999999999\nblock_size=-1\nnope=1\nl0\n=\ncompression=zstd\n"},
        {"strings", "pmem_path=/tmp/x=y.pmem\npmem_path=\nbackground_nice=19\n"},
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++)
        seed("options", texts[i][0], 0, texts[i][1], strlen(texts[i][1]));
}

int main(int argc, char **argv)
{
    root = argc > 1 ? argv[1] : "fuzz/corpus";
    mkdir(root, 0755);
    gen_sst();
    gen_db("sst");
    gen_db("matrix");
    gen_pool(0);
    gen_pool(1);
    gen_options();
    /* Edge cases shared by the file targets. */
    seed("wal", "empty", 0, "", 0);
    seed("wal", "header-only", FZ_FIX, "TKVWAL\0\1\1\0\0\0\0\0\0\0", 16);
    seed("manifest", "empty", 0, "", 0);
    seed("version_edit", "end-only", 0, "\0", 1);
    printf("gen_corpus: seeds written under %s\n", root);
    return 0;
}
