// SPDX-License-Identifier: Apache-2.0
/*
 * test_embed_rocksdb.c -- tierkv as a host program sees it: this test is
 * linked against the shared library (build/libtierkv.so, not the static
 * one the other tests use) and, when `make deps` fetched it, against
 * RocksDB's release library (build/deps/librocksdbjni-linux64.so, which
 * exports RocksDB's C API) -- the pair a daemon migrating from RocksDB to
 * tierkv has linked. Until tierkv stopped linking jemalloc, such a program
 * aborted before main ("free(): invalid pointer").
 *
 *  - embed_internals_hidden: internal names of the library are not visible
 *    to the host (dlsym finds tkv_open, not buf_append or tkv_err);
 *  - embed_host_malloc: the process's malloc is not the library's doing
 *    (no allocator library is loaded; malloc comes from the C library or a
 *    sanitizer runtime);
 *  - embed_with_rocksdb: both stores open in one process at once: put, get,
 *    iterate/scan, close, reopen, with the memory each returns freed as its
 *    API says (RocksDB's error strings with the host's free()).
 *    Skipped, with a message, when the release library was not linked.
 *
 * The RocksDB functions are weak references: the test builds and runs
 * without the library, and finds rocksdb_open NULL then.
 */
#include <dlfcn.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <rocksdb/c.h>

#include "testutil.h"

#pragma weak rocksdb_options_create
#pragma weak rocksdb_options_destroy
#pragma weak rocksdb_options_set_create_if_missing
#pragma weak rocksdb_open
#pragma weak rocksdb_close
#pragma weak rocksdb_writeoptions_create
#pragma weak rocksdb_writeoptions_destroy
#pragma weak rocksdb_readoptions_create
#pragma weak rocksdb_readoptions_destroy
#pragma weak rocksdb_put
#pragma weak rocksdb_get
#pragma weak rocksdb_free
#pragma weak rocksdb_flush
#pragma weak rocksdb_flushoptions_create
#pragma weak rocksdb_flushoptions_destroy
#pragma weak rocksdb_property_value
#pragma weak rocksdb_create_iterator
#pragma weak rocksdb_iter_destroy
#pragma weak rocksdb_iter_seek_to_first
#pragma weak rocksdb_iter_valid
#pragma weak rocksdb_iter_next
#pragma weak rocksdb_destroy_db

static void embed_internals_hidden(void **state)
{
    (void)state;
    void *open_fn = dlsym(RTLD_DEFAULT, "tkv_open");
    assert_non_null(open_fn);
    Dl_info info;
    assert_true(dladdr(open_fn, &info) != 0);
    assert_non_null(strstr(info.dli_fname, "libtierkv.so")); /* really the shared library */
    /* internal functions of the library, by their names in the sources */
    static const char *internal[] = {"buf_append",    "install",   "sst_path",   "edit_init",    "tkv_err",
                                     "tkv_err_errno", "pool_open", "pm_persist", "memtable_new", "arena_alloc"};
    for (size_t i = 0; i < sizeof internal / sizeof internal[0]; i++) {
        void *p = dlsym(RTLD_DEFAULT, internal[i]);
        if (p && dladdr(p, &info) && strstr(info.dli_fname, "libtierkv"))
            fail_msg("libtierkv.so exports the internal function %s", internal[i]);
    }
}

static int find_allocator_lib(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    const char *n = info->dlpi_name ? info->dlpi_name : "";
    if (strstr(n, "jemalloc") || strstr(n, "tcmalloc") || strstr(n, "mimalloc")) {
        snprintf(arg, 256, "%s", n);
        return 1;
    }
    return 0;
}

static void embed_host_malloc(void **state)
{
    (void)state;
    char lib[256] = "";
    dl_iterate_phdr(find_allocator_lib, lib);
    if (lib[0]) fail_msg("an allocator library is loaded: %s", lib);
    void *m = dlsym(RTLD_DEFAULT, "malloc");
    Dl_info info;
    assert_non_null(m);
    assert_true(dladdr(m, &info) != 0);
    const char *from = info.dli_fname ? info.dli_fname : "";
    print_message("malloc comes from %s\n", from);
    assert_null(strstr(from, "tierkv"));
    /* glibc, or a sanitizer's runtime (a shared one, or linked into this executable) */
    int ok = strstr(from, "libc.so") || strstr(from, "libasan") || strstr(from, "libtsan") ||
             strstr(from, "test_embed_rocksdb");
    if (!ok) fail_msg("malloc is defined by %s, neither the C library nor a sanitizer runtime", from);
}

/* tkv_round -- put, get and scan 100 keys in an open tierkv database. */
static void tkv_round(tkv_db *db, int write)
{
    char k[32], v[32];
    for (int i = 0; write && i < 100; i++) {
        int kl = snprintf(k, sizeof k, "key%03d", i), vl = snprintf(v, sizeof v, "tierkv-%d", i);
        assert_int_equal(tkv_put(db, k, (size_t)kl, v, (size_t)vl, 0), TKV_OK);
    }
    for (int i = 0; i < 100; i++) {
        int kl = snprintf(k, sizeof k, "key%03d", i), vl = snprintf(v, sizeof v, "tierkv-%d", i);
        void *got;
        size_t gl;
        assert_int_equal(tkv_get(db, NULL, k, (size_t)kl, &got, &gl), TKV_OK);
        assert_int_equal(gl, (size_t)vl);
        assert_memory_equal(got, v, gl);
        tkv_free(got);
    }
    tkv_iter *it;
    assert_int_equal(tkv_iter_new(db, NULL, &it), TKV_OK);
    int n = 0;
    for (tkv_iter_seek_first(it); tkv_iter_valid(it); tkv_iter_next(it)) n++;
    assert_int_equal(tkv_iter_status(it), TKV_OK);
    tkv_iter_free(it);
    assert_int_equal(n, 100);
}

/* rdb_round -- the same against an open RocksDB. */
static void rdb_round(rocksdb_t *r, int write)
{
    char k[32], v[32], *err = NULL;
    rocksdb_writeoptions_t *wo = rocksdb_writeoptions_create();
    rocksdb_readoptions_t *ro = rocksdb_readoptions_create();
    for (int i = 0; write && i < 100; i++) {
        int kl = snprintf(k, sizeof k, "key%03d", i), vl = snprintf(v, sizeof v, "rocksdb-%d", i);
        rocksdb_put(r, wo, k, (size_t)kl, v, (size_t)vl, &err);
        if (err) fail_msg("rocksdb_put: %s", err);
    }
    for (int i = 0; i < 100; i++) {
        int kl = snprintf(k, sizeof k, "key%03d", i), vl = snprintf(v, sizeof v, "rocksdb-%d", i);
        size_t gl = 0;
        char *got = rocksdb_get(r, ro, k, (size_t)kl, &gl, &err);
        if (err) fail_msg("rocksdb_get: %s", err);
        assert_non_null(got);
        assert_int_equal(gl, (size_t)vl);
        assert_memory_equal(got, v, gl);
        rocksdb_free(got);
    }
    rocksdb_iterator_t *it = rocksdb_create_iterator(r, ro);
    int n = 0;
    for (rocksdb_iter_seek_to_first(it); rocksdb_iter_valid(it); rocksdb_iter_next(it)) n++;
    rocksdb_iter_destroy(it);
    assert_int_equal(n, 100);
    char *prop = rocksdb_property_value(r, "rocksdb.estimate-num-keys"); /* strdup'd: the host's free() */
    assert_non_null(prop);
    free(prop);
    rocksdb_readoptions_destroy(ro);
    rocksdb_writeoptions_destroy(wo);
}

static void embed_with_rocksdb(void **state)
{
    (void)state;
    if (!rocksdb_open) {
        print_message("skipped: RocksDB's release library (build/deps/librocksdbjni-linux64.so) was not linked; "
                      "`make deps` fetches it\n");
        skip();
    }
    char *root = tu_tmpdir("embed");
    char *tdir = tu_path(root, "tierkv"), *rdir = tu_path(root, "rocksdb");
    rocksdb_options_t *ro = rocksdb_options_create();
    char *err = NULL;
    /* an error first: the message is malloc'd inside RocksDB, freed by the host */
    assert_null(rocksdb_open(ro, rdir, &err));
    assert_non_null(err);
    free(err);
    err = NULL;
    rocksdb_options_set_create_if_missing(ro, 1);
    for (int round = 0; round < 2; round++) { /* round 1 reopens both and reads what round 0 wrote */
        rocksdb_t *r = rocksdb_open(ro, rdir, &err);
        if (!r) fail_msg("rocksdb_open %s: %s", rdir, err);
        tkv_options *o = tu_small_options();
        tkv_db *db;
        int rc = tkv_open(tdir, o, &db);
        tkv_options_free(o);
        if (rc != TKV_OK) fail_msg("tkv_open %s: %s", tdir, tkv_errmsg());
        tkv_round(db, round == 0);
        rdb_round(r, round == 0);
        if (round == 0) { /* down a tier in each */
            assert_int_equal(tkv_flush(db), TKV_OK);
            rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
            rocksdb_flush(r, fo, &err);
            rocksdb_flushoptions_destroy(fo);
            if (err) fail_msg("rocksdb_flush: %s", err);
        }
        tkv_round(db, 0);
        rdb_round(r, 0);
        assert_int_equal(tkv_close(db), TKV_OK);
        rocksdb_close(r);
    }
    rocksdb_destroy_db(ro, rdir, &err);
    free(err);
    rocksdb_options_destroy(ro);
    assert_int_equal(tkv_destroy(tdir), TKV_OK);
    free(tdir);
    free(rdir);
    tu_tmpdir_free(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(embed_internals_hidden),
        cmocka_unit_test(embed_host_malloc),
        cmocka_unit_test(embed_with_rocksdb),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
