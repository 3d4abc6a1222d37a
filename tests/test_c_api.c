// SPDX-License-Identifier: Apache-2.0
/*
 * test_c_api.c -- every function of include/tierkv.h called from C with its
 * documented behaviour checked, in the manner of LevelDB's db/c_test.c:
 * version, status strings and the thread-local error message, options,
 * open/close/destroy, put/get/delete, batches, multi_get, snapshots, iterators,
 * flush, compact_range, properties, verify, and the NULL-accepting free functions.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "testutil.h"

/* Each case gets a fresh directory (state) and an open database in it. */
typedef struct fixture {
    char *root; /* temporary directory: the database is root/db */
    char *dir;
    tkv_db *db;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->root = tu_tmpdir("capi");
    f->dir = tu_path(f->root, "db");
    tkv_options *o = tu_small_options();
    int rc = tkv_open(f->dir, o, &f->db);
    tkv_options_free(o);
    if (rc != TKV_OK) fail_msg("tkv_open = %d (%s)", rc, tkv_errmsg());
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    assert_int_equal(tkv_close(f->db), TKV_OK);
    assert_int_equal(tkv_destroy(f->dir), TKV_OK);
    free(f->dir);
    tu_tmpdir_free(f->root);
    free(f);
    return 0;
}

/* put_s / expect -- string helpers. */
static void put_s(tkv_db *db, const char *k, const char *v)
{
    int rc = tkv_put(db, k, strlen(k), v, strlen(v), 0);
    if (rc != TKV_OK) fail_msg("put %s = %d (%s)", k, rc, tkv_errmsg());
}

/* expect -- get(k) at snap is v (NULL: not found). */
static void expect(tkv_db *db, const tkv_snapshot *snap, const char *k, const char *v)
{
    void *val = (void *)&val; /* garbage that must be overwritten */
    size_t vlen = 4242;
    int rc = tkv_get(db, snap, k, strlen(k), &val, &vlen);
    if (!v) {
        if (rc != TKV_NOT_FOUND) fail_msg("get %s = %d (%s), expected not found", k, rc, tkv_strerror(rc));
        assert_null(val);
        assert_int_equal(vlen, 0);
        return;
    }
    if (rc != TKV_OK) fail_msg("get %s = %d (%s; %s), expected \"%s\"", k, rc, tkv_strerror(rc), tkv_errmsg(), v);
    assert_int_equal(vlen, strlen(v));
    assert_memory_equal(val, v, vlen);
    assert_int_equal(((char *)val)[vlen], '\0'); /* NUL-terminated for convenience */
    tkv_free(val);
}

/* expect_iter -- the iterator is at (k, v), or invalid with status OK if k is NULL. */
static void expect_iter(tkv_iter *it, const char *k, const char *v)
{
    if (!k) {
        assert_false(tkv_iter_valid(it));
        assert_int_equal(tkv_iter_status(it), TKV_OK);
        return;
    }
    assert_true(tkv_iter_valid(it));
    size_t kn = 0, vn = 0;
    const void *kp = tkv_iter_key(it, &kn), *vp = tkv_iter_value(it, &vn);
    if (kn != strlen(k) || memcmp(kp, k, kn)) fail_msg("iterator at %s, expected key %s", tu_hex(kp, kn), k);
    if (vn != strlen(v) || memcmp(vp, v, vn)) fail_msg("iterator value %s, expected %s", tu_hex(vp, vn), v);
    assert_int_equal(tkv_iter_status(it), TKV_OK);
}

/* ---------------------------------------------------------------- version, status */

static void version_and_status(void **state)
{
    (void)state;
    assert_int_equal(tkv_version(), TKV_VERSION_NUMBER);
    assert_int_equal(TKV_VERSION_NUMBER, TKV_VERSION_MAJOR * 10000 + TKV_VERSION_MINOR * 100 + TKV_VERSION_PATCH);
    char vs[32];
    snprintf(vs, sizeof vs, "%d.%d.%d", TKV_VERSION_MAJOR, TKV_VERSION_MINOR, TKV_VERSION_PATCH);
    assert_string_equal(vs, TKV_VERSION_STRING);

    assert_string_equal(tkv_strerror(TKV_OK), "OK");
    assert_string_equal(tkv_strerror(TKV_NOT_FOUND), "not found");
    assert_string_equal(tkv_strerror(TKV_INVALID), "invalid argument");
    const int codes[] = {TKV_OK,         TKV_NOT_FOUND, TKV_TRUNCATED, TKV_INVALID,   TKV_IO_ERROR,
                         TKV_CORRUPTION, TKV_NO_SPACE,  TKV_BUSY,      TKV_NO_MEMORY, TKV_READ_ONLY};
    const size_t ncodes = sizeof codes / sizeof codes[0];
    for (size_t i = 0; i < ncodes; i++) {
        const char *s = tkv_strerror(codes[i]);
        assert_non_null(s);
        assert_true(strlen(s) > 0);
        if (!strcmp(s, "unknown status")) fail_msg("tkv_strerror(%d) is \"unknown status\"", codes[i]);
        for (size_t j = 0; j < i; j++)
            if (!strcmp(s, tkv_strerror(codes[j])))
                fail_msg("tkv_strerror(%d) == tkv_strerror(%d) == \"%s\"", codes[i], codes[j], s);
    }
    const int unknown[] = {3, 42, -8, -100, 1 << 30, -(1 << 30)};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
        assert_string_equal(tkv_strerror(unknown[i]), "unknown status");
}

/* ---------------------------------------------------------------- errmsg */

static void *errmsg_thread(void *arg)
{
    char *out = arg;
    /* a thread that has seen no error gets "" */
    snprintf(out, 256, "%s", tkv_errmsg());
    return NULL;
}

static void *errmsg_thread2(void *arg)
{
    char *out = arg;
    tkv_options *o = tkv_options_new();
    int rc = tkv_options_set(o, "thread_two_bogus_option", "1");
    snprintf(out, 256, "%d|%s", rc, tkv_errmsg());
    tkv_options_free(o);
    return NULL;
}

static void errmsg_thread_local(void **state)
{
    fixture *f = *state;
    char other[256] = "unset";
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, errmsg_thread, other), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_string_equal(other, "");

    tkv_options *o = tkv_options_new();
    assert_int_equal(tkv_options_set(o, "bogus_option_name", "1"), TKV_INVALID);
    tkv_options_free(o);
    char mine[256];
    snprintf(mine, sizeof mine, "%s", tkv_errmsg());
    if (!strstr(mine, "bogus_option_name")) fail_msg("errmsg \"%s\" does not name the option", mine);

    /* another thread's error does not change this thread's message */
    assert_int_equal(pthread_create(&t, NULL, errmsg_thread2, other), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    assert_true(!strncmp(other, "-1|", 3));
    assert_non_null(strstr(other, "thread_two_bogus_option"));
    assert_string_equal(tkv_errmsg(), mine);

    /* the message stays valid until this thread's next failing call:
     * successful calls leave it alone */
    put_s(f->db, "a", "1");
    expect(f->db, NULL, "a", "1");
    expect(f->db, NULL, "absent", NULL); /* TKV_NOT_FOUND is not an error */
    assert_string_equal(tkv_errmsg(), mine);
}

/* ---------------------------------------------------------------- options */

static void options_set_and_free(void **state)
{
    fixture *f = *state;
    tkv_options *o = tkv_options_new();
    assert_non_null(o);
    assert_int_equal(tkv_options_set(o, "memtable_size", "1G"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "memtable_size", "64M"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "memtable_size", "65536"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "memtable_size", "64k"), TKV_OK);
    const char *bools[] = {"1", "0", "true", "false", "on", "off", "yes", "no", "TRUE", "Off"};
    for (size_t i = 0; i < sizeof bools / sizeof bools[0]; i++)
        if (tkv_options_set(o, "create_if_missing", bools[i]) != TKV_OK)
            fail_msg("create_if_missing=%s rejected: %s", bools[i], tkv_errmsg());
    assert_int_equal(tkv_options_set(o, "create_if_missing", "1"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "error_if_exists", "false"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "memtable_size", "1M"), TKV_OK);
    /* "tkv.options" reports the effective options of a database opened with o */
    char *sub = tu_path(f->root, "opts");
    tkv_db *db = NULL;
    assert_int_equal(tkv_open(sub, o, &db), TKV_OK);
    tkv_options_free(o); /* copied by tkv_open: freeing it now is allowed */
    put_s(db, "x", "y");
    char *p = tkv_property(db, "tkv.options");
    assert_non_null(p);
    if (!strstr(p, "memtable_size") || !strstr(p, "1048576"))
        fail_msg("tkv.options does not show memtable_size=1M (1048576):\n%s", p);
    tkv_free(p);
    expect(db, NULL, "x", "y");
    assert_int_equal(tkv_close(db), TKV_OK);
    assert_int_equal(tkv_destroy(sub), TKV_OK);
    free(sub);
}

/* ---------------------------------------------------------------- verify */

/* verify -- tkv_verify refuses an open database (TKV_BUSY, no report) and
 * checks a closed one: TKV_OK and a report freed with tkv_free. */
static void verify(void **state)
{
    fixture *f = *state;
    char *report = (char *)&report; /* garbage that must be overwritten */
    assert_int_equal(tkv_verify(f->dir, NULL, &report), TKV_BUSY);
    assert_null(report);
    char *sub = tu_path(f->root, "verified");
    tkv_options *o = tu_small_options();
    tkv_db *db;
    assert_int_equal(tkv_open(sub, o, &db), TKV_OK);
    put_s(db, "k", "v");
    assert_int_equal(tkv_close(db), TKV_OK);
    assert_int_equal(tkv_verify(sub, o, &report), TKV_OK);
    assert_non_null(report);
    assert_int_equal(strncmp(report, "verify: ", 8), 0);
    assert_non_null(strstr(report, "problems=0"));
    tkv_free(report);
    assert_int_equal(tkv_verify(sub, NULL, NULL), TKV_OK); /* opts and report may be NULL */
    tkv_options_free(o);
    assert_int_equal(tkv_destroy(sub), TKV_OK);
    assert_int_equal(tkv_verify(sub, NULL, NULL), TKV_INVALID); /* no database there */
    free(sub);
}

/* ---------------------------------------------------------------- open, close, destroy */

static void open_close_destroy(void **state)
{
    fixture *f = *state;
    char *sub = tu_path(f->root, "db1");
    struct stat st;
    assert_int_equal(tkv_destroy(sub), TKV_OK); /* does not exist: OK */
    assert_int_not_equal(stat(sub, &st), 0);

    /* default options (opts NULL) create the directory */
    tkv_db *db = (tkv_db *)&st; /* garbage */
    assert_int_equal(tkv_open(sub, NULL, &db), TKV_OK);
    assert_non_null(db);
    assert_int_equal(stat(sub, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    put_s(db, "persist", "me");
    put_s(db, "gone", "soon");
    assert_int_equal(tkv_delete(db, "gone", 4, 0), TKV_OK);
    assert_int_equal(tkv_close(db), TKV_OK);

    /* reopen: data survives a clean close */
    db = NULL;
    assert_int_equal(tkv_open(sub, NULL, &db), TKV_OK);
    expect(db, NULL, "persist", "me");
    expect(db, NULL, "gone", NULL);
    assert_int_equal(tkv_close(db), TKV_OK);

    assert_int_equal(tkv_close(NULL), TKV_OK);

    /* destroy removes the database and the (now empty) directory */
    assert_int_equal(tkv_destroy(sub), TKV_OK);
    assert_int_not_equal(stat(sub, &st), 0);
    /* a new database there is empty */
    assert_int_equal(tkv_open(sub, NULL, &db), TKV_OK);
    expect(db, NULL, "persist", NULL);
    assert_int_equal(tkv_close(db), TKV_OK);
    assert_int_equal(tkv_destroy(sub), TKV_OK);

    /* destroy leaves files it does not own (and so the directory) alone */
    assert_int_equal(tkv_open(sub, NULL, &db), TKV_OK);
    assert_int_equal(tkv_close(db), TKV_OK);
    char *mine = tu_path(sub, "user-notes.txt");
    FILE *fp = fopen(mine, "w");
    assert_non_null(fp);
    fputs("not tierkv's\n", fp);
    fclose(fp);
    assert_int_equal(tkv_destroy(sub), TKV_OK);
    assert_int_equal(stat(mine, &st), 0);
    free(mine);
    free(sub);
}

/* ---------------------------------------------------------------- put, get, delete */

static void put_get_delete(void **state)
{
    fixture *f = *state;
    expect(f->db, NULL, "foo", NULL);
    put_s(f->db, "foo", "hello");
    expect(f->db, NULL, "foo", "hello");
    put_s(f->db, "foo", "world"); /* overwrite */
    expect(f->db, NULL, "foo", "world");
    assert_int_equal(tkv_put(f->db, "bar", 3, "v", 1, TKV_SYNC), TKV_OK);
    expect(f->db, NULL, "bar", "v");
    assert_int_equal(tkv_delete(f->db, "foo", 3, 0), TKV_OK);
    expect(f->db, NULL, "foo", NULL);
    assert_int_equal(tkv_delete(f->db, "foo", 3, TKV_SYNC), TKV_OK); /* absent: no-op */
    assert_int_equal(tkv_delete(f->db, "never", 5, 0), TKV_OK);
    expect(f->db, NULL, "bar", "v");

    /* an empty value is a value, not a delete */
    assert_int_equal(tkv_put(f->db, "empty", 5, "", 0, 0), TKV_OK);
    expect(f->db, NULL, "empty", "");

    /* binary keys and values, embedded NULs, prefix keys */
    const uint8_t k1[] = {0x00}, k2[] = {0x00, 0x00}, k3[] = {0xff, 0x00, 0xff};
    const uint8_t v3[] = {0x00, 0x01, 0x00, 0xfe};
    assert_int_equal(tkv_put(f->db, k1, 1, "one", 3, 0), TKV_OK);
    assert_int_equal(tkv_put(f->db, k2, 2, "two", 3, 0), TKV_OK);
    assert_int_equal(tkv_put(f->db, k3, 3, v3, sizeof v3, 0), TKV_OK);
    void *v = NULL;
    size_t vn = 0;
    assert_int_equal(tkv_get(f->db, NULL, k1, 1, &v, &vn), TKV_OK);
    assert_int_equal(vn, 3);
    assert_memory_equal(v, "one", 3);
    tkv_free(v);
    assert_int_equal(tkv_get(f->db, NULL, k2, 2, &v, &vn), TKV_OK);
    assert_memory_equal(v, "two", 3);
    tkv_free(v);
    assert_int_equal(tkv_get(f->db, NULL, k3, 3, &v, &vn), TKV_OK);
    assert_int_equal(vn, sizeof v3);
    assert_memory_equal(v, v3, sizeof v3);
    tkv_free(v);
    assert_int_equal(tkv_get(f->db, NULL, k3, 2, &v, &vn), TKV_NOT_FOUND); /* prefix of k3 */

    /* the largest key and a 1 MiB value */
    uint8_t *big = malloc(TKV_MAX_KEY_SIZE);
    assert_non_null(big);
    memset(big, 'K', TKV_MAX_KEY_SIZE);
    size_t bvn = 1u << 20;
    uint8_t *bv = malloc(bvn);
    assert_non_null(bv);
    for (size_t i = 0; i < bvn; i++) bv[i] = (uint8_t)(i * 7 + 3);
    assert_int_equal(tkv_put(f->db, big, TKV_MAX_KEY_SIZE, bv, bvn, 0), TKV_OK);
    big[TKV_MAX_KEY_SIZE - 1] = 'L'; /* a second max-size key, sorting after the first */
    assert_int_equal(tkv_put(f->db, big, TKV_MAX_KEY_SIZE, "second", 6, 0), TKV_OK);
    big[TKV_MAX_KEY_SIZE - 1] = 'K';
    /* in the memtable, after a flush, after a full compaction, after a reopen */
    for (int stage = 0; stage < 4; stage++) {
        if (stage == 1) assert_int_equal(tkv_flush(f->db), TKV_OK);
        if (stage == 2) assert_int_equal(tkv_compact_range(f->db, NULL, 0, NULL, 0), TKV_OK);
        if (stage == 3) {
            assert_int_equal(tkv_close(f->db), TKV_OK);
            tkv_options *o = tu_small_options();
            assert_int_equal(tkv_open(f->dir, o, &f->db), TKV_OK);
            tkv_options_free(o);
        }
        assert_int_equal(tkv_get(f->db, NULL, big, TKV_MAX_KEY_SIZE, &v, &vn), TKV_OK);
        assert_int_equal(vn, bvn);
        assert_memory_equal(v, bv, bvn);
        tkv_free(v);
        assert_int_equal(tkv_get(f->db, NULL, big, TKV_MAX_KEY_SIZE - 1, &v, &vn), TKV_NOT_FOUND);
        big[TKV_MAX_KEY_SIZE - 1] = 'L';
        assert_int_equal(tkv_get(f->db, NULL, big, TKV_MAX_KEY_SIZE, &v, &vn), TKV_OK);
        assert_int_equal(vn, 6);
        assert_memory_equal(v, "second", 6);
        tkv_free(v);
        big[TKV_MAX_KEY_SIZE - 1] = 'K';
        expect(f->db, NULL, "empty", "");
        expect(f->db, NULL, "foo", NULL);
        expect(f->db, NULL, "bar", "v");
        tkv_iter *it = NULL;
        assert_int_equal(tkv_iter_new(f->db, NULL, &it), TKV_OK);
        tkv_iter_seek(it, big, TKV_MAX_KEY_SIZE);
        assert_true(tkv_iter_valid(it));
        size_t kn = 0;
        const void *kp = tkv_iter_key(it, &kn);
        assert_int_equal(kn, TKV_MAX_KEY_SIZE);
        assert_memory_equal(kp, big, kn);
        tkv_iter_value(it, &vn);
        assert_int_equal(vn, bvn);
        tkv_iter_next(it);
        assert_true(tkv_iter_valid(it));
        tkv_iter_value(it, &vn);
        assert_int_equal(vn, 6);
        tkv_iter_free(it);
    }
    free(big);
    free(bv);
}

/* ---------------------------------------------------------------- batches */

static void batches(void **state)
{
    fixture *f = *state;
    put_s(f->db, "b-del", "old");
    put_s(f->db, "b-keep", "old");
    tkv_batch *b = tkv_batch_new();
    assert_non_null(b);
    assert_int_equal(tkv_write(f->db, b, 0), TKV_OK); /* empty batch */

    assert_int_equal(tkv_batch_put(b, "b1", 2, "v1", 2), TKV_OK);
    assert_int_equal(tkv_batch_put(b, "b2", 2, "v2", 2), TKV_OK);
    assert_int_equal(tkv_batch_delete(b, "b-del", 5), TKV_OK);
    assert_int_equal(tkv_batch_put(b, "b1", 2, "v1-later", 8), TKV_OK); /* later op wins */
    assert_int_equal(tkv_batch_delete(b, "b2", 2), TKV_OK);
    assert_int_equal(tkv_batch_put(b, "b3", 2, "", 0), TKV_OK);
    /* the batch copies its input: scribbling on our buffers changes nothing */
    char kbuf[8] = "b4", vbuf[8] = "v4";
    assert_int_equal(tkv_batch_put(b, kbuf, 2, vbuf, 2), TKV_OK);
    memcpy(kbuf, "zz", 2);
    memcpy(vbuf, "XX", 2);
    expect(f->db, NULL, "b1", NULL); /* nothing applied before tkv_write */
    assert_int_equal(tkv_write(f->db, b, 0), TKV_OK);
    expect(f->db, NULL, "b1", "v1-later");
    expect(f->db, NULL, "b2", NULL);
    expect(f->db, NULL, "b3", "");
    expect(f->db, NULL, "b4", "v4");
    expect(f->db, NULL, "zz", NULL);
    expect(f->db, NULL, "b-del", NULL);
    expect(f->db, NULL, "b-keep", "old");

    /* `b` is not modified by tkv_write: writing it again re-applies it */
    put_s(f->db, "b1", "changed");
    put_s(f->db, "b-del", "back");
    assert_int_equal(tkv_write(f->db, b, TKV_SYNC), TKV_OK);
    expect(f->db, NULL, "b1", "v1-later");
    expect(f->db, NULL, "b-del", NULL);

    /* clear empties it for reuse */
    tkv_batch_clear(b);
    put_s(f->db, "b1", "after-clear");
    assert_int_equal(tkv_write(f->db, b, 0), TKV_OK);
    expect(f->db, NULL, "b1", "after-clear");
    assert_int_equal(tkv_batch_put(b, "c1", 2, "x", 1), TKV_OK);
    assert_int_equal(tkv_write(f->db, b, 0), TKV_OK);
    expect(f->db, NULL, "c1", "x");
    expect(f->db, NULL, "b2", NULL);
    expect(f->db, NULL, "b1", "after-clear"); /* cleared ops are gone */

    /* a batch is atomic for readers: an iterator created before it sees none */
    tkv_batch_clear(b);
    for (int i = 0; i < 100; i++) {
        char k[16];
        int kn = snprintf(k, sizeof k, "atom%03d", i);
        assert_int_equal(tkv_batch_put(b, k, (size_t)kn, "1", 1), TKV_OK);
    }
    tkv_iter *it = NULL;
    assert_int_equal(tkv_iter_new(f->db, NULL, &it), TKV_OK);
    assert_int_equal(tkv_write(f->db, b, 0), TKV_OK);
    tkv_iter_seek(it, "atom", 4);
    if (tkv_iter_valid(it)) {
        size_t kn;
        const char *k = tkv_iter_key(it, &kn);
        assert_false(kn >= 4 && !memcmp(k, "atom", 4));
    }
    tkv_iter_free(it);
    assert_int_equal(tkv_iter_new(f->db, NULL, &it), TKV_OK);
    int n = 0;
    for (tkv_iter_seek(it, "atom", 4); tkv_iter_valid(it); tkv_iter_next(it)) {
        size_t kn;
        const char *k = tkv_iter_key(it, &kn);
        if (kn < 4 || memcmp(k, "atom", 4)) break;
        n++;
    }
    assert_int_equal(n, 100);
    tkv_iter_free(it);
    tkv_batch_free(b);
}

/* ---------------------------------------------------------------- multi_get */

static void multi_get(void **state)
{
    fixture *f = *state;
    put_s(f->db, "m1", "one");
    put_s(f->db, "m3", "three");
    put_s(f->db, "m4", "");
    put_s(f->db, "m5", "x");
    assert_int_equal(tkv_delete(f->db, "m5", 2, 0), TKV_OK);
    const char *ks[] = {"m1", "m2", "m3", "m4", "m5", "m1", "nope"};
    const char *want[] = {"one", NULL, "three", "", NULL, "one", NULL};
    enum { N = 7 };
    const void *kp[N];
    size_t kl[N], vl[N];
    void *vals[N];
    int st[N];
    for (int i = 0; i < N; i++) {
        kp[i] = ks[i];
        kl[i] = strlen(ks[i]);
        vals[i] = (void *)&vals; /* garbage */
        vl[i] = 999;
        st[i] = 999;
    }
    assert_int_equal(tkv_multi_get(f->db, NULL, N, kp, kl, vals, vl, st), TKV_OK);
    for (int i = 0; i < N; i++) {
        if (!want[i]) {
            assert_int_equal(st[i], TKV_NOT_FOUND);
            assert_null(vals[i]);
            assert_int_equal(vl[i], 0);
        } else {
            assert_int_equal(st[i], TKV_OK);
            assert_int_equal(vl[i], strlen(want[i]));
            assert_memory_equal(vals[i], want[i], vl[i]);
            assert_int_equal(((char *)vals[i])[vl[i]], '\0');
            tkv_free(vals[i]);
        }
    }
    /* at a snapshot */
    const tkv_snapshot *s = tkv_snapshot_new(f->db);
    assert_non_null(s);
    put_s(f->db, "m2", "two");
    assert_int_equal(tkv_delete(f->db, "m1", 2, 0), TKV_OK);
    assert_int_equal(tkv_multi_get(f->db, s, 2, kp, kl, vals, vl, st), TKV_OK);
    assert_int_equal(st[0], TKV_OK);
    assert_memory_equal(vals[0], "one", 3);
    tkv_free(vals[0]);
    assert_int_equal(st[1], TKV_NOT_FOUND);
    assert_int_equal(tkv_multi_get(f->db, NULL, 2, kp, kl, vals, vl, st), TKV_OK);
    assert_int_equal(st[0], TKV_NOT_FOUND);
    assert_int_equal(st[1], TKV_OK);
    assert_memory_equal(vals[1], "two", 3);
    tkv_free(vals[1]);
    tkv_snapshot_free(f->db, s);
    /* n == 0 is valid */
    assert_int_equal(tkv_multi_get(f->db, NULL, 0, kp, kl, vals, vl, st), TKV_OK);
}

/* ---------------------------------------------------------------- snapshots */

static void snapshots(void **state)
{
    fixture *f = *state;
    put_s(f->db, "s1", "a");
    put_s(f->db, "s2", "a");
    const tkv_snapshot *s1 = tkv_snapshot_new(f->db);
    assert_non_null(s1);
    put_s(f->db, "s1", "b");
    assert_int_equal(tkv_delete(f->db, "s2", 2, 0), TKV_OK);
    put_s(f->db, "s3", "b");
    const tkv_snapshot *s2 = tkv_snapshot_new(f->db);
    assert_non_null(s2);
    put_s(f->db, "s1", "c");
    put_s(f->db, "s2", "c");

    expect(f->db, s1, "s1", "a");
    expect(f->db, s1, "s2", "a");
    expect(f->db, s1, "s3", NULL);
    expect(f->db, s2, "s1", "b");
    expect(f->db, s2, "s2", NULL);
    expect(f->db, s2, "s3", "b");
    expect(f->db, NULL, "s1", "c");
    expect(f->db, NULL, "s2", "c");

    /* snapshots survive flush and compaction */
    assert_int_equal(tkv_flush(f->db), TKV_OK);
    assert_int_equal(tkv_compact_range(f->db, NULL, 0, NULL, 0), TKV_OK);
    expect(f->db, s1, "s1", "a");
    expect(f->db, s2, "s2", NULL);

    /* iterators over a snapshot */
    tkv_iter *it = NULL;
    assert_int_equal(tkv_iter_new(f->db, s1, &it), TKV_OK);
    tkv_iter_seek(it, "s", 1);
    expect_iter(it, "s1", "a");
    tkv_iter_next(it);
    expect_iter(it, "s2", "a");
    tkv_iter_next(it);
    expect_iter(it, NULL, NULL);
    tkv_iter_free(it);

    tkv_snapshot_free(f->db, s1);
    expect(f->db, s2, "s1", "b"); /* freeing one leaves the other intact */
    tkv_snapshot_free(f->db, s2);
    tkv_snapshot_free(f->db, NULL);
    assert_null(tkv_snapshot_new(NULL));
}

/* ---------------------------------------------------------------- iterators */

static void iterators(void **state)
{
    fixture *f = *state;
    tkv_iter *it = (tkv_iter *)&it;
    /* empty database */
    assert_int_equal(tkv_iter_new(f->db, NULL, &it), TKV_OK);
    assert_non_null(it);
    assert_false(tkv_iter_valid(it)); /* starts unpositioned */
    tkv_iter_seek_first(it);
    expect_iter(it, NULL, NULL);
    tkv_iter_seek_last(it);
    expect_iter(it, NULL, NULL);
    tkv_iter_seek(it, "a", 1);
    expect_iter(it, NULL, NULL);
    tkv_iter_free(it);

    put_s(f->db, "b", "vb");
    put_s(f->db, "d", "vd");
    put_s(f->db, "dd", "vdd");
    put_s(f->db, "f", "vf");
    put_s(f->db, "x", "tmp");
    assert_int_equal(tkv_delete(f->db, "x", 1, 0), TKV_OK);
    assert_int_equal(tkv_iter_new(f->db, NULL, &it), TKV_OK);
    put_s(f->db, "c", "late"); /* not seen: the view was fixed at tkv_iter_new */
    assert_int_equal(tkv_delete(f->db, "f", 1, 0), TKV_OK);

    tkv_iter_seek_first(it);
    expect_iter(it, "b", "vb");
    tkv_iter_next(it);
    expect_iter(it, "d", "vd");
    tkv_iter_next(it);
    expect_iter(it, "dd", "vdd");
    tkv_iter_prev(it);
    expect_iter(it, "d", "vd");
    tkv_iter_next(it);
    tkv_iter_next(it);
    expect_iter(it, "f", "vf");
    tkv_iter_next(it);
    expect_iter(it, NULL, NULL); /* "x" is deleted */

    tkv_iter_seek_last(it);
    expect_iter(it, "f", "vf");
    tkv_iter_prev(it);
    expect_iter(it, "dd", "vdd");
    tkv_iter_prev(it);
    tkv_iter_prev(it);
    expect_iter(it, "b", "vb");
    tkv_iter_prev(it);
    expect_iter(it, NULL, NULL);

    tkv_iter_seek(it, "c", 1); /* between keys */
    expect_iter(it, "d", "vd");
    tkv_iter_seek(it, "d", 1); /* exact */
    expect_iter(it, "d", "vd");
    tkv_iter_seek(it, "d\0", 2); /* just after "d", before "dd" */
    expect_iter(it, "dd", "vdd");
    tkv_iter_seek(it, "a", 1);
    expect_iter(it, "b", "vb");
    tkv_iter_seek(it, "g", 1);
    expect_iter(it, NULL, NULL);
    tkv_iter_seek(it, "e", 1);
    tkv_iter_prev(it); /* prev after seek */
    expect_iter(it, "dd", "vdd");
    tkv_iter_free(it);

    /* a new iterator sees the later writes */
    assert_int_equal(tkv_iter_new(f->db, NULL, &it), TKV_OK);
    tkv_iter_seek(it, "bb", 2);
    expect_iter(it, "c", "late");
    tkv_iter_seek_last(it);
    expect_iter(it, "dd", "vdd");
    tkv_iter_free(it);
    tkv_iter_free(NULL);
}

/* ---------------------------------------------------------------- maintenance */

static void flush_and_compact(void **state)
{
    fixture *f = *state;
    char k[32], v[128];
    for (int i = 0; i < 3000; i++) { /* several 64K memtables */
        snprintf(k, sizeof k, "fc%05d", i);
        snprintf(v, sizeof v, "value-%d-%0100d", i, i);
        put_s(f->db, k, v);
    }
    for (int i = 0; i < 3000; i += 3) {
        snprintf(k, sizeof k, "fc%05d", i);
        assert_int_equal(tkv_delete(f->db, k, strlen(k), 0), TKV_OK);
    }
    assert_int_equal(tkv_flush(f->db), TKV_OK);
    assert_int_equal(tkv_compact_range(f->db, NULL, 0, NULL, 0), TKV_OK);
    assert_int_equal(tkv_compact_range(f->db, "fc00100", 7, "fc00200", 7), TKV_OK);
    assert_int_equal(tkv_compact_range(f->db, "fc01000", 7, NULL, 0), TKV_OK);
    assert_int_equal(tkv_compact_range(f->db, NULL, 0, "fc00050", 7), TKV_OK);
    assert_int_equal(tkv_flush(f->db), TKV_OK); /* nothing new to flush */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < 3000; i++) {
            snprintf(k, sizeof k, "fc%05d", i);
            snprintf(v, sizeof v, "value-%d-%0100d", i, i);
            expect(f->db, NULL, k, i % 3 == 0 ? NULL : v);
        }
        /* and after a reopen */
        assert_int_equal(tkv_close(f->db), TKV_OK);
        f->db = NULL;
        tkv_options *o = tu_small_options();
        assert_int_equal(tkv_open(f->dir, o, &f->db), TKV_OK);
        tkv_options_free(o);
    }
}

/* ---------------------------------------------------------------- properties */

static void properties(void **state)
{
    fixture *f = *state;
    put_s(f->db, "p", "q");
    const char *names[] = {"tkv.stats", "tkv.levels", "tkv.options"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *p = tkv_property(f->db, names[i]);
        if (!p) fail_msg("tkv_property(%s) = NULL (%s)", names[i], tkv_errmsg());
        assert_true(strlen(p) > 0);
        tkv_free(p);
    }
    char *p = tkv_property(f->db, "tkv.num-entries-active-mem");
    if (!p) fail_msg("tkv_property(tkv.num-entries-active-mem) = NULL (%s)", tkv_errmsg());
    char *end;
    unsigned long long n = strtoull(p, &end, 10);
    if (end == p || n < 1) fail_msg("tkv.num-entries-active-mem = \"%s\", expected a number >= 1", p);
    tkv_free(p);

    assert_null(tkv_property(f->db, "tkv.no-such-property"));
    if (!strstr(tkv_errmsg(), "tkv.no-such-property"))
        fail_msg("errmsg after an unknown property: \"%s\"", tkv_errmsg());
    assert_null(tkv_property(f->db, ""));
}

/* ---------------------------------------------------------------- free(NULL) */

static void free_null(void **state)
{
    (void)state;
    tkv_free(NULL);
    tkv_options_free(NULL);
    tkv_batch_free(NULL);
    tkv_iter_free(NULL);
    tkv_snapshot_free(NULL, NULL);
    assert_int_equal(tkv_close(NULL), TKV_OK);
    /* new/free pairs */
    tkv_options *o = tkv_options_new();
    assert_non_null(o);
    tkv_options_free(o);
    tkv_batch *b = tkv_batch_new();
    assert_non_null(b);
    tkv_batch_clear(b);
    tkv_batch_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(version_and_status),
        cmocka_unit_test_setup_teardown(errmsg_thread_local, setup, teardown),
        cmocka_unit_test_setup_teardown(options_set_and_free, setup, teardown),
        cmocka_unit_test_setup_teardown(open_close_destroy, setup, teardown),
        cmocka_unit_test_setup_teardown(put_get_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(batches, setup, teardown),
        cmocka_unit_test_setup_teardown(multi_get, setup, teardown),
        cmocka_unit_test_setup_teardown(snapshots, setup, teardown),
        cmocka_unit_test_setup_teardown(iterators, setup, teardown),
        cmocka_unit_test_setup_teardown(flush_and_compact, setup, teardown),
        cmocka_unit_test_setup_teardown(properties, setup, teardown),
        cmocka_unit_test_setup_teardown(verify, setup, teardown),
        cmocka_unit_test(free_null),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
