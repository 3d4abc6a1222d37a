// SPDX-License-Identifier: Apache-2.0
/*
 * test_misuse.c -- API misuse must give TKV_INVALID/TKV_BUSY (never a crash)
 * and leave the database working: NULL handles, keys and out pointers; empty
 * and oversized keys; oversized values (checked before the data is touched: the
 * pointer given is an inaccessible page); unknown write flags; unknown options
 * and unparsable values (the message names the option); a directory locked by
 * this process or another; destroy of an open database; create_if_missing=0,
 * error_if_exists=1, and a regular file as the directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

typedef struct fixture {
    char *root; /* temporary directory: the database is root/db */
    char *dir;
    tkv_db *db;
    void *noaccess; /* one PROT_NONE page: touching it is SIGSEGV */
    long works;     /* counter for still_works() */
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    f->root = tu_tmpdir("misuse");
    f->dir = tu_path(f->root, "db");
    tkv_options *o = tu_small_options();
    int rc = tkv_open(f->dir, o, &f->db);
    tkv_options_free(o);
    if (rc != TKV_OK) fail_msg("tkv_open = %d (%s)", rc, tkv_errmsg());
    f->noaccess = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(f->noaccess != MAP_FAILED);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    assert_int_equal(tkv_close(f->db), TKV_OK);
    assert_int_equal(tkv_destroy(f->dir), TKV_OK);
    munmap(f->noaccess, 4096);
    free(f->dir);
    tu_tmpdir_free(f->root);
    free(f);
    return 0;
}

/* still_works -- after an error the database still takes writes and reads,
 * and the sentinel written by setup-time calls is intact. */
static void still_works(fixture *f)
{
    char k[32], v[32];
    int kn = snprintf(k, sizeof k, "works-%ld", f->works), vn = snprintf(v, sizeof v, "v%ld", f->works);
    f->works++;
    int rc = tkv_put(f->db, k, (size_t)kn, v, (size_t)vn, 0);
    if (rc != TKV_OK) fail_msg("database broken after an error: put = %d (%s)", rc, tkv_errmsg());
    void *got = NULL;
    size_t gn = 0;
    rc = tkv_get(f->db, NULL, k, (size_t)kn, &got, &gn);
    if (rc != TKV_OK) fail_msg("database broken after an error: get = %d (%s)", rc, tkv_errmsg());
    assert_int_equal(gn, (size_t)vn);
    assert_memory_equal(got, v, gn);
    tkv_free(got);
}

/* expect_invalid -- rc is TKV_INVALID and tkv_errmsg() says something. */
#define expect_invalid(call)                                                                                           \
    do {                                                                                                               \
        int rc_ = (call);                                                                                              \
        if (rc_ != TKV_INVALID) fail_msg("%s = %d (%s), expected TKV_INVALID", #call, rc_, tkv_strerror(rc_));         \
        if (tkv_errmsg()[0] == '\0') fail_msg("%s: TKV_INVALID with an empty tkv_errmsg()", #call);                    \
    } while (0)

/* expect_absent -- key k (string) is not in the database. */
static void expect_absent(tkv_db *db, const void *k, size_t kn)
{
    void *v = NULL;
    size_t vn = 0;
    int rc = tkv_get(db, NULL, k, kn, &v, &vn);
    if (rc != TKV_NOT_FOUND) fail_msg("key %s: get = %d, expected not found", tu_hex(k, kn), rc);
}

/* ---------------------------------------------------------------- NULL arguments */

static void null_arguments(void **state)
{
    fixture *f = *state;
    void *v = NULL;
    size_t vn = 0;
    tkv_iter *it = NULL;
    tkv_batch *b = tkv_batch_new();
    assert_non_null(b);
    const void *kp[1] = {"k"};
    size_t kl[1] = {1}, vl[1];
    void *vals[1];
    int st[1];

    /* NULL db */
    expect_invalid(tkv_put(NULL, "k", 1, "v", 1, 0));
    expect_invalid(tkv_delete(NULL, "k", 1, 0));
    expect_invalid(tkv_write(NULL, b, 0));
    expect_invalid(tkv_get(NULL, NULL, "k", 1, &v, &vn));
    expect_invalid(tkv_multi_get(NULL, NULL, 1, kp, kl, vals, vl, st));
    expect_invalid(tkv_iter_new(NULL, NULL, &it));
    assert_null(it);
    expect_invalid(tkv_flush(NULL));
    expect_invalid(tkv_compact_range(NULL, NULL, 0, NULL, 0));
    assert_null(tkv_property(NULL, "tkv.stats"));
    assert_null(tkv_snapshot_new(NULL));
    still_works(f);

    /* NULL keys (with a length), NULL values with a length */
    expect_invalid(tkv_put(f->db, NULL, 1, "v", 1, 0));
    expect_invalid(tkv_put(f->db, "k", 1, NULL, 1, 0));
    expect_invalid(tkv_delete(f->db, NULL, 1, 0));
    expect_invalid(tkv_get(f->db, NULL, NULL, 1, &v, &vn));
    expect_invalid(tkv_batch_put(b, NULL, 1, "v", 1));
    expect_invalid(tkv_batch_put(b, "k", 1, NULL, 1));
    expect_invalid(tkv_batch_delete(b, NULL, 1));
    expect_invalid(tkv_batch_put(NULL, "k", 1, "v", 1));
    expect_invalid(tkv_batch_delete(NULL, "k", 1));
    expect_absent(f->db, "k", 1);
    still_works(f);

    /* NULL out pointers */
    expect_invalid(tkv_get(f->db, NULL, "k", 1, NULL, &vn));
    expect_invalid(tkv_get(f->db, NULL, "k", 1, &v, NULL));
    expect_invalid(tkv_iter_new(f->db, NULL, NULL));
    expect_invalid(tkv_write(f->db, NULL, 0));
    expect_invalid(tkv_multi_get(f->db, NULL, 1, NULL, kl, vals, vl, st));
    expect_invalid(tkv_multi_get(f->db, NULL, 1, kp, NULL, vals, vl, st));
    expect_invalid(tkv_multi_get(f->db, NULL, 1, kp, kl, NULL, vl, st));
    expect_invalid(tkv_multi_get(f->db, NULL, 1, kp, kl, vals, NULL, st));
    expect_invalid(tkv_multi_get(f->db, NULL, 1, kp, kl, vals, vl, NULL));
    const void *nullkey[1] = {NULL};
    int rc = tkv_multi_get(f->db, NULL, 1, nullkey, kl, vals, vl, st);
    /* a NULL key inside the array: the whole call or that entry is invalid */
    if (!(rc == TKV_INVALID || (rc == TKV_OK && st[0] == TKV_INVALID)))
        fail_msg("multi_get with a NULL key: rc %d status %d", rc, st[0]);

    /* tkv_open / tkv_options_set */
    tkv_db *db = (tkv_db *)&db;
    expect_invalid(tkv_open(NULL, NULL, &db));
    assert_null(db);
    expect_invalid(tkv_open(f->dir, NULL, NULL));
    tkv_options *o = tkv_options_new();
    expect_invalid(tkv_options_set(NULL, "memtable_size", "1M"));
    expect_invalid(tkv_options_set(o, NULL, "1M"));
    expect_invalid(tkv_options_set(o, "memtable_size", NULL));
    tkv_options_free(o);
    still_works(f);
    tkv_batch_free(b);
}

/* ---------------------------------------------------------------- key and value sizes */

static void key_and_value_sizes(void **state)
{
    fixture *f = *state;
    void *v = NULL;
    size_t vn = 0;
    tkv_batch *b = tkv_batch_new();
    assert_non_null(b);

    /* klen 0 (with a valid pointer) */
    expect_invalid(tkv_put(f->db, "k", 0, "v", 1, 0));
    expect_invalid(tkv_delete(f->db, "k", 0, 0));
    expect_invalid(tkv_get(f->db, NULL, "k", 0, &v, &vn));
    expect_invalid(tkv_batch_put(b, "k", 0, "v", 1));
    expect_invalid(tkv_batch_delete(b, "k", 0));

    /* klen TKV_MAX_KEY_SIZE + 1 and larger: the pointer is an inaccessible
     * page, so a library that reads the key before checking crashes here */
    const size_t badk[] = {TKV_MAX_KEY_SIZE + 1, (size_t)1 << 40, SIZE_MAX};
    for (size_t i = 0; i < sizeof badk / sizeof badk[0]; i++) {
        expect_invalid(tkv_put(f->db, f->noaccess, badk[i], "v", 1, 0));
        expect_invalid(tkv_delete(f->db, f->noaccess, badk[i], 0));
        expect_invalid(tkv_get(f->db, NULL, f->noaccess, badk[i], &v, &vn));
        expect_invalid(tkv_batch_put(b, f->noaccess, badk[i], "v", 1));
        expect_invalid(tkv_batch_delete(b, f->noaccess, badk[i]));
        const void *kp[2] = {"ok", f->noaccess};
        size_t kl[2] = {2, badk[i]}, vl[2];
        void *vals[2];
        int st[2];
        int rc = tkv_multi_get(f->db, NULL, 2, kp, kl, vals, vl, st);
        if (rc == TKV_OK) {
            assert_int_equal(st[0], TKV_NOT_FOUND);
            assert_int_equal(st[1], TKV_INVALID);
        } else {
            assert_int_equal(rc, TKV_INVALID);
        }
    }

    /* vlen > TKV_MAX_VALUE_SIZE: checked before the value is touched */
    const size_t badv[] = {(size_t)TKV_MAX_VALUE_SIZE + 1, (size_t)1 << 40, SIZE_MAX};
    for (size_t i = 0; i < sizeof badv / sizeof badv[0]; i++) {
        expect_invalid(tkv_put(f->db, "big", 3, f->noaccess, badv[i], 0));
        expect_invalid(tkv_batch_put(b, "big", 3, f->noaccess, badv[i]));
    }
    expect_absent(f->db, "big", 3);

    /* the failed calls left the batch empty ("on error the batch is unchanged") */
    assert_int_equal(tkv_write(f->db, b, 0), TKV_OK);
    expect_absent(f->db, "k", 1);
    /* ... and a batch with good ops keeps them after a failed append */
    assert_int_equal(tkv_batch_put(b, "good1", 5, "1", 1), TKV_OK);
    expect_invalid(tkv_batch_put(b, f->noaccess, TKV_MAX_KEY_SIZE + 1, "v", 1));
    expect_invalid(tkv_batch_put(b, "bad", 3, f->noaccess, (size_t)TKV_MAX_VALUE_SIZE + 1));
    expect_invalid(tkv_batch_delete(b, "", 0));
    assert_int_equal(tkv_batch_put(b, "good2", 5, "2", 1), TKV_OK);
    assert_int_equal(tkv_write(f->db, b, 0), TKV_OK);
    assert_int_equal(tkv_get(f->db, NULL, "good1", 5, &v, &vn), TKV_OK);
    tkv_free(v);
    assert_int_equal(tkv_get(f->db, NULL, "good2", 5, &v, &vn), TKV_OK);
    tkv_free(v);
    expect_absent(f->db, "bad", 3);

    /* the boundary itself is fine: a key of exactly TKV_MAX_KEY_SIZE bytes */
    uint8_t *k = malloc(TKV_MAX_KEY_SIZE);
    assert_non_null(k);
    memset(k, 0xab, TKV_MAX_KEY_SIZE);
    assert_int_equal(tkv_put(f->db, k, TKV_MAX_KEY_SIZE, "max", 3, 0), TKV_OK);
    assert_int_equal(tkv_get(f->db, NULL, k, TKV_MAX_KEY_SIZE, &v, &vn), TKV_OK);
    assert_int_equal(vn, 3);
    tkv_free(v);
    assert_int_equal(tkv_delete(f->db, k, TKV_MAX_KEY_SIZE, 0), TKV_OK);
    free(k);
    tkv_batch_free(b);
    still_works(f);
}

/* ---------------------------------------------------------------- write flags */

static void unknown_flags(void **state)
{
    fixture *f = *state;
    tkv_batch *b = tkv_batch_new();
    assert_non_null(b);
    assert_int_equal(tkv_batch_put(b, "fb", 2, "v", 1), TKV_OK);
    const unsigned bad[] = {4u, 8u, 0x100u, 0x80000000u, TKV_SYNC | 4u, ~0u};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        expect_invalid(tkv_put(f->db, "f", 1, "v", 1, bad[i]));
        expect_invalid(tkv_delete(f->db, "w", 1, bad[i]));
        expect_invalid(tkv_write(f->db, b, bad[i]));
    }
    expect_absent(f->db, "f", 1);
    expect_absent(f->db, "fb", 2);
    /* known flags are accepted */
    assert_int_equal(tkv_put(f->db, "f", 1, "v", 1, TKV_SYNC), TKV_OK);
    assert_int_equal(tkv_write(f->db, b, TKV_SYNC), TKV_OK);
    tkv_batch_free(b);
    still_works(f);
}

/* ---------------------------------------------------------------- options */

static void bad_options(void **state)
{
    fixture *f = *state;
    tkv_options *o = tkv_options_new();
    assert_non_null(o);
    expect_invalid(tkv_options_set(o, "no_such_option", "1"));
    if (!strstr(tkv_errmsg(), "no_such_option")) fail_msg("errmsg \"%s\" does not name the option", tkv_errmsg());
    expect_invalid(tkv_options_set(o, "", "1"));
    expect_invalid(tkv_options_set(o, "Memtable_Size", "1M")); /* names are exact */

    const char *bad_sizes[] = {"abc", "-1", "12Q", "", " ", "1.5M", "64 M", "M", "99999999999T", "18446744073709551616",
                               "1MM"};
    for (size_t i = 0; i < sizeof bad_sizes / sizeof bad_sizes[0]; i++) {
        int rc = tkv_options_set(o, "memtable_size", bad_sizes[i]);
        if (rc != TKV_INVALID) fail_msg("memtable_size=\"%s\" gave %d, expected TKV_INVALID", bad_sizes[i], rc);
        if (!strstr(tkv_errmsg(), "memtable_size"))
            fail_msg("memtable_size=\"%s\": errmsg \"%s\" does not name the option", bad_sizes[i], tkv_errmsg());
    }
    const char *bad_bools[] = {"maybe", "2", "-1", "", "truee", "y"};
    for (size_t i = 0; i < sizeof bad_bools / sizeof bad_bools[0]; i++) {
        int rc = tkv_options_set(o, "create_if_missing", bad_bools[i]);
        if (rc != TKV_INVALID) fail_msg("create_if_missing=\"%s\" gave %d, expected TKV_INVALID", bad_bools[i], rc);
        if (!strstr(tkv_errmsg(), "create_if_missing"))
            fail_msg("create_if_missing=\"%s\": errmsg \"%s\" does not name the option", bad_bools[i], tkv_errmsg());
    }

    /* on error the options are unchanged: memtable_size stays 1M */
    assert_int_equal(tkv_options_set(o, "memtable_size", "1M"), TKV_OK);
    expect_invalid(tkv_options_set(o, "memtable_size", "12Q"));
    expect_invalid(tkv_options_set(o, "memtable_size", "1T")); /* beyond the range */
    char *sub = tu_path(f->root, "opts");
    tkv_db *db = NULL;
    assert_int_equal(tkv_open(sub, o, &db), TKV_OK);
    char *p = tkv_property(db, "tkv.options");
    assert_non_null(p);
    if (!strstr(p, "memtable_size=1048576") && !strstr(p, "memtable_size = 1048576") &&
        !strstr(p, "memtable_size: 1048576"))
        fail_msg("after failed sets, tkv.options should still show memtable_size=1048576:\n%s", p);
    tkv_free(p);
    assert_int_equal(tkv_close(db), TKV_OK);
    assert_int_equal(tkv_destroy(sub), TKV_OK);
    free(sub);
    tkv_options_free(o);
    still_works(f);
}

/* ---------------------------------------------------------------- locking */

static void locked_same_process(void **state)
{
    fixture *f = *state;
    tkv_db *db2 = (tkv_db *)&db2;
    int rc = tkv_open(f->dir, NULL, &db2);
    if (rc != TKV_BUSY) fail_msg("second open in the same process = %d (%s), expected TKV_BUSY", rc, tkv_strerror(rc));
    assert_null(db2);
    assert_true(tkv_errmsg()[0] != '\0');
    still_works(f);
    /* the failed open did not release the lock */
    rc = tkv_open(f->dir, NULL, &db2);
    assert_int_equal(rc, TKV_BUSY);
    /* close releases it: reopen works and sees the data */
    assert_int_equal(tkv_close(f->db), TKV_OK);
    f->db = NULL;
    tkv_options *o = tu_small_options();
    assert_int_equal(tkv_open(f->dir, o, &f->db), TKV_OK);
    tkv_options_free(o);
    still_works(f);
    void *v = NULL;
    size_t vn = 0;
    assert_int_equal(tkv_get(f->db, NULL, "works-0", 7, &v, &vn), TKV_OK);
    tkv_free(v);
}

/* child_open -- in a forked child: tries tkv_open(dir) and exits with a code
 * describing the result (10 + -status, or 0 for TKV_OK). */
static int fork_open(const char *dir)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        tkv_db *db = NULL;
        tkv_options *o = tu_small_options(); /* same geometry as the parent's pool */
        int rc = tkv_open(dir, o, &db);
        if (rc == TKV_OK) tkv_close(db);
        _exit(rc == TKV_OK ? 0 : rc < 0 ? 10 - rc : 9);
    }
    int st = 0;
    for (int i = 0; i < 3000; i++) { /* 30 s */
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid) break;
        if (w != 0) fail_msg("waitpid: %d (%s)", (int)w, strerror(errno));
        usleep(10000);
        if (i == 2999) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            fail_msg("tkv_open in a forked child hung for 30 s");
        }
    }
    if (!WIFEXITED(st)) fail_msg("tkv_open in a forked child crashed (status 0x%x)", st);
    int code = WEXITSTATUS(st);
    return code == 0 ? TKV_OK : code == 9 ? 9999 : 10 - code;
}

static void locked_other_process(void **state)
{
    fixture *f = *state;
    int rc = fork_open(f->dir);
    if (rc != TKV_BUSY) fail_msg("open from a forked child = %d (%s), expected TKV_BUSY", rc, tkv_strerror(rc));
    still_works(f);
    /* once closed here, another process may open it */
    assert_int_equal(tkv_close(f->db), TKV_OK);
    f->db = NULL;
    assert_int_equal(fork_open(f->dir), TKV_OK);
    tkv_options *o = tu_small_options();
    assert_int_equal(tkv_open(f->dir, o, &f->db), TKV_OK);
    tkv_options_free(o);
    still_works(f);
}

static void destroy_open_db(void **state)
{
    fixture *f = *state;
    still_works(f);
    int rc = tkv_destroy(f->dir);
    if (rc != TKV_BUSY) fail_msg("tkv_destroy of an open database = %d (%s), expected TKV_BUSY", rc, tkv_strerror(rc));
    void *v = NULL;
    size_t vn = 0;
    assert_int_equal(tkv_get(f->db, NULL, "works-0", 7, &v, &vn), TKV_OK);
    tkv_free(v);
    still_works(f);
    /* nothing was removed: the data is there after a reopen */
    assert_int_equal(tkv_close(f->db), TKV_OK);
    f->db = NULL;
    tkv_options *o = tu_small_options();
    assert_int_equal(tkv_open(f->dir, o, &f->db), TKV_OK);
    tkv_options_free(o);
    assert_int_equal(tkv_get(f->db, NULL, "works-1", 7, &v, &vn), TKV_OK);
    tkv_free(v);
}

/* ---------------------------------------------------------------- open modes */

static void open_modes(void **state)
{
    fixture *f = *state;
    tkv_options *o = tkv_options_new();
    assert_non_null(o);
    struct stat st;

    /* create_if_missing=0 on a missing directory */
    assert_int_equal(tkv_options_set(o, "create_if_missing", "0"), TKV_OK);
    char *missing = tu_path(f->root, "missing");
    tkv_db *db = (tkv_db *)&db;
    expect_invalid(tkv_open(missing, o, &db));
    assert_null(db);
    assert_int_not_equal(stat(missing, &st), 0); /* not created */
    free(missing);

    /* error_if_exists=1 on an existing database (not locked: closed first) */
    still_works(f);
    assert_int_equal(tkv_close(f->db), TKV_OK);
    f->db = NULL;
    assert_int_equal(tkv_options_set(o, "create_if_missing", "1"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "error_if_exists", "1"), TKV_OK);
    db = (tkv_db *)&db;
    expect_invalid(tkv_open(f->dir, o, &db));
    assert_null(db);
    /* ... the database was not touched */
    tkv_options *small = tu_small_options();
    assert_int_equal(tkv_open(f->dir, small, &f->db), TKV_OK);
    tkv_options_free(small);
    void *v = NULL;
    size_t vn = 0;
    assert_int_equal(tkv_get(f->db, NULL, "works-0", 7, &v, &vn), TKV_OK);
    tkv_free(v);
    still_works(f);
    /* error_if_exists=1 on a new directory is fine */
    char *fresh = tu_path(f->root, "fresh");
    assert_int_equal(tkv_open(fresh, o, &db), TKV_OK);
    assert_int_equal(tkv_close(db), TKV_OK);
    assert_int_equal(tkv_destroy(fresh), TKV_OK);
    free(fresh);
    tkv_options_free(o);

    /* a regular file where the directory should be: an error, not a crash */
    char *file = tu_path(f->root, "plainfile");
    int fd = open(file, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "hello\n", 6), 6);
    close(fd);
    db = (tkv_db *)&db;
    int rc = tkv_open(file, NULL, &db);
    if (rc >= 0) fail_msg("tkv_open on a regular file = %d, expected an error", rc);
    assert_null(db);
    assert_true(tkv_errmsg()[0] != '\0');
    assert_int_equal(stat(file, &st), 0); /* left alone */
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_size, 6);
    /* a path below a regular file */
    char *below = tu_path(file, "db");
    db = (tkv_db *)&db;
    rc = tkv_open(below, NULL, &db);
    if (rc >= 0) fail_msg("tkv_open below a regular file = %d, expected an error", rc);
    assert_null(db);
    free(below);
    free(file);
    still_works(f);
}

/* ---------------------------------------------------------------- close with handles */

/* close_with_outstanding -- close with an iterator still open refuses with
 * TKV_BUSY and leaves the handle usable; once the iterators are freed it
 * closes, releasing snapshots still held (LeakSanitizer checks nothing leaks). */
static void close_with_outstanding(void **state)
{
    fixture *f = *state;
    still_works(f);
    tkv_iter *it = NULL;
    assert_int_equal(tkv_iter_new(f->db, NULL, &it), TKV_OK);
    tkv_iter_seek_first(it);
    assert_true(tkv_iter_valid(it));
    const tkv_snapshot *s = tkv_snapshot_new(f->db);
    assert_non_null(s);
    tkv_iter *it2 = NULL;
    assert_int_equal(tkv_iter_new(f->db, s, &it2), TKV_OK);
    assert_int_equal(tkv_close(f->db), TKV_BUSY);
    assert_non_null(strstr(tkv_errmsg(), "iterator"));
    still_works(f); /* nothing was closed */
    tkv_iter_seek_first(it2);
    assert_true(tkv_iter_valid(it2));
    tkv_iter_free(it);
    assert_int_equal(tkv_close(f->db), TKV_BUSY); /* it2 still open */
    tkv_iter_free(it2);
    int rc = tkv_close(f->db); /* releases the snapshot s */
    f->db = NULL;
    if (rc != TKV_OK) fail_msg("tkv_close after freeing iterators = %d (%s)", rc, tkv_errmsg());
    tkv_options *o = tu_small_options();
    rc = tkv_open(f->dir, o, &f->db);
    if (rc != TKV_OK) fail_msg("reopen after tkv_close with an outstanding snapshot = %d (%s)", rc, tkv_errmsg());
    tkv_options_free(o);
    still_works(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(null_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(key_and_value_sizes, setup, teardown),
        cmocka_unit_test_setup_teardown(unknown_flags, setup, teardown),
        cmocka_unit_test_setup_teardown(bad_options, setup, teardown),
        cmocka_unit_test_setup_teardown(locked_same_process, setup, teardown),
        cmocka_unit_test_setup_teardown(locked_other_process, setup, teardown),
        cmocka_unit_test_setup_teardown(destroy_open_db, setup, teardown),
        cmocka_unit_test_setup_teardown(open_modes, setup, teardown),
        cmocka_unit_test_setup_teardown(close_with_outstanding, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
