// SPDX-License-Identifier: Apache-2.0
/*
 * test_tkv_cli.c -- the tkv command-line tool ($TKV_BUILD/tkv, default
 * build/tkv), run as a user runs it: every command on a small database,
 * checking its output and its exit status (0 success, 1 a negative answer,
 * 2 usage error or failure): --help and the manuals, put/get/delete/scan
 * (plain, --hex, ranges), get/scan/stats/checkpoint opening read-only (no
 * file changed, shared with read-only handles), stats, checkpoint, check
 * (clean, a flipped byte, an open database), dump-sst (intact and damaged)
 * and dump-matrix.
 */
#include <dirent.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "testutil.h"

static char *g_root;
static char g_tkv[4096];

/* The options the database is created with; the tool gets them with -o. */
#define MT "memtable_size=64K"

/* ---------------------------------------------------------------- running the tool */

typedef struct result {
    int status; /* exit status, or 128 + signal */
    char *out, *err;
} result;

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char *buf = NULL;
    size_t n = 0, cap = 0;
    int ch;
    while ((ch = fgetc(f)) != EOF) {
        if (n + 2 > cap) {
            cap = cap ? cap * 2 : 4096;
            buf = realloc(buf, cap);
            assert_non_null(buf);
        }
        buf[n++] = (char)ch;
    }
    fclose(f);
    if (!buf) buf = calloc(1, 1);
    buf[n] = '\0';
    return buf;
}

/* tkv -- runs the tool with the arguments (NULL-terminated); stdout and
 * stderr are captured. */
static result tkv(const char *arg, ...)
{
    const char *argv[64];
    int n = 0;
    argv[n++] = g_tkv;
    va_list ap;
    va_start(ap, arg);
    for (const char *a = arg; a && n < 63; a = va_arg(ap, const char *)) argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    char *out = tu_path(g_root, "stdout"), *err = tu_path(g_root, "stderr");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644), e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0) _exit(127);
        execv(g_tkv, (char *const *)argv);
        _exit(127);
    }
    int ws;
    assert_int_equal(waitpid(pid, &ws, 0), pid);
    result r = {WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws), slurp(out), slurp(err)};
    free(out);
    free(err);
    return r;
}

static void result_free(result *r)
{
    free(r->out);
    free(r->err);
}

/* expect -- the run exited with `status` and its stdout is exactly `out`
 * (NULL: anything). */
static void expect(result r, int status, const char *out)
{
    if (r.status != status || (out && strcmp(r.out, out) != 0))
        fail_msg("tkv exited %d (expected %d)\nstdout:\n%s\nexpected stdout:\n%s\nstderr:\n%s", r.status, status, r.out,
                 out ? out : "(any)", r.err);
    result_free(&r);
}

/* expect_has -- exited with `status`, and stdout (or stderr) contains `text`. */
static void expect_has(result r, int status, int in_err, const char *text)
{
    const char *s = in_err ? r.err : r.out;
    if (r.status != status || !strstr(s, text))
        fail_msg("tkv exited %d (expected %d); %s should contain \"%s\"\nstdout:\n%s\nstderr:\n%s", r.status, status,
                 in_err ? "stderr" : "stdout", text, r.out, r.err);
    result_free(&r);
}

/* count_lines -- lines of s starting with prefix. */
static size_t count_lines(const char *s, const char *prefix)
{
    size_t n = 0, pl = strlen(prefix);
    for (const char *l = s; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) n += strncmp(l, prefix, pl) == 0;
    return n;
}

/* ---------------------------------------------------------------- databases */

static tkv_options *options(void)
{
    tkv_options *o = tkv_options_new();
    assert_int_equal(tkv_options_set(o, "memtable_size", "64K"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "pmem_size", "16M"), TKV_OK);
    assert_int_equal(tkv_options_set(o, "matrix_trigger", "90"), TKV_OK);
    return o;
}

/* big_db -- a database with an SST (rows drained) and rows in the pool. */
static char *big_db(const char *name)
{
    char *dir = tu_path(g_root, name);
    tkv_options *o = options();
    tkv_db *db = tu_open_ok(dir, o);
    char k[32], v[64];
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < 2000; i++) {
            snprintf(k, sizeof k, "key%05d", i);
            snprintf(v, sizeof v, "value-%d-%05d-%030d", pass, i, i);
            assert_int_equal(tkv_put(db, k, strlen(k), v, strlen(v), 0), TKV_OK);
        }
        if (pass == 0) assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK);
    }
    assert_int_equal(tkv_flush(db), TKV_OK);
    tu_close_ok(db);
    tkv_options_free(o);
    return dir;
}

/* first_file -- dir/<first file ending in suffix>, malloc'd. */
static char *first_file(const char *dir, const char *suffix)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    char *best = NULL;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n > strlen(suffix) && !strcmp(e->d_name + n - strlen(suffix), suffix) &&
            (!best || strcmp(e->d_name, best) < 0)) {
            free(best);
            best = strdup(e->d_name);
        }
    }
    closedir(d);
    if (!best) fail_msg("no *%s in %s", suffix, dir);
    char *p = tu_path(dir, best);
    free(best);
    return p;
}

static void flip(const char *path, off_t off)
{
    int fd = open(path, O_RDWR);
    assert_true(fd >= 0);
    uint8_t b;
    assert_int_equal(pread(fd, &b, 1, off), 1);
    b ^= 0x5a;
    assert_int_equal(pwrite(fd, &b, 1, off), 1);
    close(fd);
}

static int group_setup(void **state)
{
    (void)state;
    const char *b = getenv("TKV_BUILD");
    snprintf(g_tkv, sizeof g_tkv, "%s/tkv", b && *b ? b : "build");
    if (access(g_tkv, X_OK) != 0) {
        fprintf(stderr, "%s is missing: make tool (or make tests) builds it\n", g_tkv);
        return -1;
    }
    g_root = tu_tmpdir("cli");
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    tu_tmpdir_free(g_root);
    return 0;
}

/* ---------------------------------------------------------------- cases */

static void help_and_usage(void **state)
{
    (void)state;
    result r = tkv("--help", NULL);
    for (const char *c = "get\0put\0delete\0scan\0stats\0check\0checkpoint\0dump-sst\0dump-matrix\0"; *c;
         c += strlen(c) + 1)
        if (!strstr(r.out, c)) fail_msg("tkv --help does not list %s:\n%s", c, r.out);
    expect_has(r, 0, 0, "EXIT STATUS");
    expect_has(tkv("scan", "--help", NULL), 0, 0, "SYNOPSIS\n    tkv scan");
    expect_has(tkv("help", "check", NULL), 0, 0, "tkv check -- ");
    expect_has(tkv("--version", NULL), 0, 0, TKV_VERSION_STRING);
    expect_has(tkv(NULL), 2, 1, "COMMANDS");
    expect_has(tkv("frobnicate", NULL), 2, 1, "unknown command");
    expect_has(tkv("get", NULL), 2, 1, "usage: tkv get");
    expect_has(tkv("get", "--bogus", "x", "y", NULL), 2, 1, "--bogus");
    expect_has(tkv("put", "x", "k", NULL), 2, 1, "KEY VALUE pairs");
    expect_has(tkv("scan", "-o", "nonsense", "x", NULL), 2, 1, "KEY=VALUE");
    expect_has(tkv("scan", "-o", "no_such_option=1", "x", NULL), 2, 1, "no_such_option");
}

static void put_get_delete_scan(void **state)
{
    (void)state;
    char *dir = tu_path(g_root, "data");
    /* no database is created unless asked */
    expect_has(tkv("put", "-o", MT, dir, "k", "v", NULL), 2, 1, "does not exist");
    expect(tkv("put", "-o", "create_if_missing=1", "-o", MT, "-o", "pmem_size=16M", dir, "b", "2", "a", "1", "c d",
               "x\ty", NULL),
           0, "");
    expect(tkv("get", "-o", MT, dir, "a", "c d", NULL), 0, "1\nx\\x09y\n");
    expect_has(tkv("get", "-o", MT, dir, "a", "zz", NULL), 1, 1, "zz: not found");
    expect(tkv("get", "-o", MT, "--raw", dir, "c d", NULL), 0, "x\ty");
    expect(tkv("scan", "-o", MT, dir, NULL), 0, "a\t1\nb\t2\nc d\tx\\x09y\n");
    /* --hex in and out: 0x00 0xff as a key */
    expect(tkv("put", "-o", MT, "--hex", "--sync", dir, "00ff", "5c41", NULL), 0, "");
    expect(tkv("get", "-o", MT, "--hex", dir, "00ff", NULL), 0, "5c41\n");
    expect(tkv("scan", "-o", MT, "--keys-only", dir, NULL), 0, "\\x00\\xff\na\nb\nc d\n");
    expect_has(tkv("get", "-o", MT, "--hex", dir, "0g", NULL), 2, 1, "hex digits");
    /* ranges: [from, to), limit, reverse */
    expect(tkv("scan", "-o", MT, "--from", "a", "--to", "c", dir, NULL), 0, "a\t1\nb\t2\n");
    expect(tkv("scan", "-o", MT, "--from", "a", "--limit", "1", "--keys-only", dir, NULL), 0, "a\n");
    expect(tkv("scan", "-o", MT, "--reverse", "--keys-only", "--to", "c", "--from", "a", dir, NULL), 0, "b\na\n");
    expect(tkv("scan", "-o", MT, "--reverse", "--keys-only", "--limit", "2", dir, NULL), 0, "c d\nb\n");
    expect_has(tkv("scan", "-o", MT, "--limit", "x", dir, NULL), 2, 1, "--limit");
    /* delete, atomically, several keys */
    expect(tkv("delete", "-o", MT, dir, "a", "b", "nothing", NULL), 0, "");
    expect(tkv("scan", "-o", MT, "--keys-only", dir, NULL), 0, "\\x00\\xff\nc d\n");
    expect_has(tkv("get", "-o", MT, dir, "a", NULL), 1, 1, "not found");
    /* a database that cannot be opened read-write with these options (the
     * pool holds no 4 memtables of 64M); read-only it can */
    expect_has(tkv("put", dir, "a", "1", NULL), 2, 1, "memtable_size");
    expect(tkv("get", dir, "c d", NULL), 0, "x\\x09y\n");
    free(dir);
}

/* read_only_commands -- get, scan, stats and checkpoint open the database
 * read-only: they see what is only in the WAL, change no file (list,
 * bytes, blocks, times), work beside a read-only handle and not beside a
 * read-write one; put is refused beside a read-only handle. */
static void read_only_commands(void **state)
{
    (void)state;
    char *dir = big_db("read-only");
    tkv_options *o = options();
    tkv_db *db = tu_open_ok(dir, o);
    assert_int_equal(tkv_put(db, "wal-only", 8, "here", 4, 0), TKV_OK); /* stays in the WAL */
    tu_close_ok(db);
    tu_dir_state *before = tu_dir_state_take(dir);
    expect(tkv("get", dir, "wal-only", "key00007", NULL), 0, "here\nvalue-1-00007-000000000000000000000000000007\n");
    expect(tkv("scan", "--from", "key01998", "--keys-only", dir, NULL), 0, "key01998\nkey01999\nwal-only\n");
    expect_has(tkv("stats", dir, "tkv.levels", NULL), 0, 0, "rows: count=");
    expect_has(tkv("stats", "-o", "read_only=0", dir, "tkv.options", NULL), 0, 0, "read_only=1");
    assert_int_equal(tkv_options_set(o, "read_only", "1"), TKV_OK);
    db = tu_open_ok(dir, o); /* a read-only handle: read-only commands share it, put does not */
    expect(tkv("get", dir, "wal-only", NULL), 0, "here\n");
    expect_has(tkv("put", "-o", MT, dir, "k", "v", NULL), 2, 1, "busy");
    tu_close_ok(db);
    tu_dir_state *after = tu_dir_state_take(dir);
    tu_dir_state_expect_same(before, after, "tkv get, scan and stats");
    tu_dir_state_free(before);
    tu_dir_state_free(after);
    /* checkpoint reads read-only too (beside a read-only handle), the WAL's writes included */
    char *out = tu_path(g_root, "read-only-ckpt");
    db = tu_open_ok(dir, o);
    expect(tkv("checkpoint", dir, out, NULL), 0, "");
    tu_close_ok(db);
    expect(tkv("get", out, "wal-only", NULL), 0, "here\n");
    tu_rmrf(out);
    free(out);
    assert_int_equal(tkv_options_set(o, "read_only", "0"), TKV_OK);
    db = tu_open_ok(dir, o);
    expect_has(tkv("get", dir, "wal-only", NULL), 2, 1, "open read-write");
    tu_close_ok(db);
    tkv_options_free(o);
    tu_rmrf(dir);
    free(dir);
}

static void stats(void **state)
{
    (void)state;
    char *dir = big_db("stats");
    result r = tkv("stats", "-o", MT, dir, NULL);
    if (!strstr(r.out, "rows:") && !strstr(r.out, "matrix")) fail_msg("tkv.stats output:\n%s", r.out);
    expect(r, 0, NULL);
    r = tkv("stats", "-o", MT, dir, "tkv.levels", "tkv.options", NULL);
    assert_int_equal(count_lines(r.out, "== "), 2);
    expect_has(r, 0, 0, "memtable_size=65536");
    expect_has(tkv("stats", "-o", MT, dir, "tkv.bogus", NULL), 2, 1, "tkv.bogus");
    tu_rmrf(dir);
    free(dir);
}

static void checkpoint(void **state)
{
    (void)state;
    char *dir = big_db("ckpt-src"), *out = tu_path(g_root, "ckpt-out");
    expect(tkv("checkpoint", "-o", MT, dir, out, NULL), 0, "");
    result a = tkv("scan", "-o", MT, dir, NULL), b = tkv("scan", "-o", MT, out, NULL);
    if (a.status || b.status || strcmp(a.out, b.out) || count_lines(a.out, "key") != 2000)
        fail_msg("the checkpoint's scan differs from the source's (%d, %d):\n%.300s\n---\n%.300s", a.status, b.status,
                 a.out, b.out);
    result_free(&a);
    result_free(&b);
    expect(tkv("check", out, NULL), 0, NULL);
    expect_has(tkv("checkpoint", "-o", MT, dir, out, NULL), 2, 1, "already exists"); /* OUT exists */
    expect_has(tkv("checkpoint", "-o", MT, dir, NULL), 2, 1, "usage: tkv checkpoint");
    tu_rmrf(dir);
    tu_rmrf(out);
    free(dir);
    free(out);
}

static void check(void **state)
{
    (void)state;
    char *dir = big_db("check");
    result r = tkv("check", dir, NULL);
    assert_int_equal(count_lines(r.out, "problem:"), 0);
    expect_has(r, 0, 0, "verify: dir=");
    expect(tkv("check", "-q", dir, NULL), 0, "");
    /* an open database is not checked */
    tkv_options *o = options();
    tkv_db *db = tu_open_ok(dir, o);
    expect_has(tkv("check", dir, NULL), 2, 1, "busy");
    tu_close_ok(db);
    tkv_options_free(o);
    /* a flipped byte in the middle of an SST */
    char *sst = first_file(dir, ".sst");
    flip(sst, 100);
    r = tkv("check", dir, NULL);
    assert_int_equal(count_lines(r.out, "problem:"), 1);
    if (!strstr(r.out, strrchr(sst, '/') + 1)) fail_msg("the problem should name the SST:\n%s", r.out);
    expect_has(r, 1, 1, "problem");
    expect(tkv("check", "-q", dir, NULL), 1, "");
    char *missing = tu_path(g_root, "missing");
    expect_has(tkv("check", missing, NULL), 2, 1, "does not exist");
    expect_has(tkv("check", dir, dir, NULL), 2, 1, "usage");
    free(missing);
    free(sst);
    tu_rmrf(dir);
    free(dir);
}

static void dump_sst(void **state)
{
    (void)state;
    char *dir = big_db("dumpsst");
    char *sst = first_file(dir, ".sst");
    result r = tkv("dump-sst", sst, NULL);
    for (const char *f = "file:\0footer: index=\0properties: entries=2000 \0filter: bytes=\0block 0: offset=0 \0"
                         "check: data_blocks=\0";
         *f; f += strlen(f) + 1)
        if (!strstr(r.out, f)) fail_msg("dump-sst output lacks \"%s\":\n%s", f, r.out);
    assert_int_equal(count_lines(r.out, "  key"), 2000); /* every entry, with its sequence number and type */
    assert_non_null(strstr(r.out, "  key00000 seq="));
    assert_non_null(strstr(r.out, " put vlen=44 value-0-00000-"));
    assert_non_null(strstr(r.out, "entries=2000 problems=0\n"));
    expect(r, 0, NULL);
    r = tkv("dump-sst", "--summary", sst, NULL);
    assert_int_equal(count_lines(r.out, "block "), 0);
    expect(r, 0, NULL);
    r = tkv("dump-sst", "--blocks", sst, NULL);
    assert_true(count_lines(r.out, "block ") > 1);
    assert_int_equal(count_lines(r.out, "  "), 0);
    expect(r, 0, NULL);
    flip(sst, 200); /* a data block */
    r = tkv("dump-sst", "--blocks", sst, NULL);
    assert_int_equal(count_lines(r.out, "problem:"), 1);
    expect_has(r, 1, 0, "checksum mismatch");
    char *ident = tu_path(dir, "IDENTITY");
    expect_has(tkv("dump-sst", ident, NULL), 2, 1, "corruption");
    expect_has(tkv("dump-sst", NULL), 2, 1, "usage");
    free(ident);
    free(sst);
    tu_rmrf(dir);
    free(dir);
}

static void dump_matrix(void **state)
{
    (void)state;
    char *dir = big_db("dumpmatrix");
    tkv_options *o = options();
    tkv_db *db = tu_open_ok(dir, o);
    uint64_t rows = tu_prop_u64(db, "tkv.levels", "rows: count=");
    uint64_t live = tu_prop_u64(db, "tkv.levels", "live_entries=");
    expect_has(tkv("dump-matrix", dir, NULL), 2, 1, "in use"); /* the pool is locked */
    tu_close_ok(db);
    tkv_options_free(o);
    assert_true(rows >= 1);
    result r = tkv("dump-matrix", dir, NULL);
    char want[64];
    snprintf(want, sizeof want, "rows: %llu\n", (unsigned long long)rows);
    if (!strstr(r.out, want) || !strstr(r.out, "header: size=16777216 ") || !strstr(r.out, "manifest_cursor=0"))
        fail_msg("dump-matrix output:\n%s", r.out);
    assert_int_equal(count_lines(r.out, "row "), rows);
    assert_int_equal(count_lines(r.out, "  pages:"), rows);
    assert_int_equal(count_lines(r.out, "  forward:"), rows);
    expect(r, 0, NULL);
    r = tkv("dump-matrix", "--entries", dir, NULL);
    assert_int_equal(count_lines(r.out, "  entry "), live);
    expect(r, 0, NULL);
    char *pool = tu_path(dir, "matrix.pmem");
    r = tkv("dump-matrix", pool, NULL); /* the pool file itself: no MANIFEST cursors */
    assert_int_equal(count_lines(r.out, "row "), rows);
    assert_null(strstr(r.out, "manifest_cursor"));
    expect(r, 0, NULL);
    char *missing = tu_path(g_root, "missing");
    expect_has(tkv("dump-matrix", missing, NULL), 2, 1, "no such file");
    free(missing);
    free(pool);
    tu_rmrf(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(help_and_usage), cmocka_unit_test(put_get_delete_scan), cmocka_unit_test(read_only_commands),
        cmocka_unit_test(stats),          cmocka_unit_test(checkpoint),          cmocka_unit_test(check),
        cmocka_unit_test(dump_sst),       cmocka_unit_test(dump_matrix),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
