// SPDX-License-Identifier: Apache-2.0
/*
 * tkv_data.c -- the commands that read and write data through the public
 * API: tkv get, put, delete and scan (tkv.h; manuals in tkv.c).
 */
#include "tools/tkv.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

enum { O_HEX = 1000, O_RAW, O_SYNC, O_FROM, O_TO, O_LIMIT, O_REVERSE, O_KEYS_ONLY };

/* What the data commands accept (each takes the subset its table lists). */
typedef struct data_args {
    tool_common c;
    int raw, sync, reverse, keys_only;
    const char *from, *to;
    long long limit; /* -1: none */
} data_args;

/* parse -- the options of argv (argv[0] is the command); returns the index
 * of the first operand, or -1 after printing a usage error. */
static int parse(int argc, char **argv, const struct option *longopts, data_args *a)
{
    memset(a, 0, sizeof *a);
    a->limit = -1;
    if (tool_common_init(&a->c)) return -1;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "o:", longopts, NULL)) != -1) {
        char *end;
        switch (ch) {
        case 'o':
            if (tool_set_option(&a->c, argv[0], optarg)) return -1;
            break;
        case O_HEX:
            a->c.hex = 1;
            break;
        case O_RAW:
            a->raw = 1;
            break;
        case O_SYNC:
            a->sync = 1;
            break;
        case O_FROM:
            a->from = optarg;
            break;
        case O_TO:
            a->to = optarg;
            break;
        case O_REVERSE:
            a->reverse = 1;
            break;
        case O_KEYS_ONLY:
            a->keys_only = 1;
            break;
        case O_LIMIT:
            a->limit = strtoll(optarg, &end, 10);
            if (*end || !*optarg || a->limit < 0) {
                tool_usage(argv[0], "--limit takes a number >= 0");
                return -1;
            }
            break;
        default: {
            char why[300];
            snprintf(why, sizeof why, "unknown option or missing argument: %s", argv[optind - 1]);
            tool_usage(argv[0], why);
            return -1;
        }
        }
    }
    return optind;
}

/* ---------------------------------------------------------------- get */

/* get_one -- prints the value of one key; 0 found, 1 not found, 2 error. */
static int get_one(tkv_db *db, const data_args *a, const char *arg)
{
    unsigned char *k;
    size_t kn;
    if (tool_decode(&a->c, "get", arg, &k, &kn)) return TKV_EXIT_ERROR;
    void *val = NULL;
    size_t vn = 0;
    int rc = tkv_get(db, NULL, k, kn, &val, &vn);
    free(k);
    if (rc == TKV_NOT_FOUND) {
        fprintf(stderr, "tkv get: %s: not found\n", arg);
        return TKV_EXIT_NEGATIVE;
    }
    if (rc != TKV_OK) return tool_fail("get", arg, rc);
    if (a->raw) {
        fwrite(val, 1, vn, stdout);
    } else {
        tool_print(stdout, a->c.hex, val, vn);
        fputc('\n', stdout);
    }
    tkv_free(val);
    return TKV_EXIT_OK;
}

int tkv_cmd_get(int argc, char **argv)
{
    static const struct option lo[] = {
        {"hex", no_argument, NULL, O_HEX}, {"raw", no_argument, NULL, O_RAW}, {0, 0, 0, 0}};
    data_args a;
    int i = parse(argc, argv, lo, &a), rc = TKV_EXIT_ERROR;
    if (i >= 0 && argc - i < 2) tool_usage("get", "DIR and at least one KEY are needed");
    else if (i >= 0 && a.raw && argc - i != 2) tool_usage("get", "--raw prints one value: give one KEY");
    else if (i >= 0) {
        tkv_db *db;
        rc = tool_open("get", argv[i], &a.c, 1, &db);
        for (int k = i + 1; db && k < argc; k++) {
            int r = get_one(db, &a, argv[k]);
            if (r > rc) rc = r;
        }
        int crc = tkv_close(db);
        if (crc != TKV_OK) rc = tool_fail("get", "close", crc);
    }
    tool_common_free(&a.c);
    return rc;
}

/* ---------------------------------------------------------------- put / delete */

/* write_batch -- applies the operands of put (KEY VALUE pairs) or delete
 * (KEYs) as one batch. */
static int write_batch(const char *cmd, int is_put, const data_args *a, char **ops, int n, const char *dir)
{
    tkv_batch *b = tkv_batch_new();
    if (!b) return tool_fail(cmd, "batch", TKV_NO_MEMORY);
    int rc = 0;
    for (int i = 0; rc == 0 && i < n; i += is_put ? 2 : 1) {
        unsigned char *k = NULL, *v = NULL;
        size_t kn, vn = 0;
        rc = tool_decode(&a->c, cmd, ops[i], &k, &kn);
        if (rc == 0 && is_put) rc = tool_decode(&a->c, cmd, ops[i + 1], &v, &vn);
        int r = rc ? TKV_OK : is_put ? tkv_batch_put(b, k, kn, v, vn) : tkv_batch_delete(b, k, kn);
        if (r != TKV_OK) rc = tool_fail(cmd, ops[i], r);
        free(k);
        free(v);
    }
    tkv_db *db = NULL;
    if (rc == 0) rc = tool_open(cmd, dir, &a->c, 0, &db);
    if (rc == 0) {
        int r = tkv_write(db, b, a->sync ? TKV_SYNC : 0);
        if (r != TKV_OK) rc = tool_fail(cmd, "write", r);
    }
    if (db) {
        int r = tkv_close(db);
        if (r != TKV_OK && rc == 0) rc = tool_fail(cmd, "close", r);
    }
    tkv_batch_free(b);
    return rc;
}

int tkv_cmd_put(int argc, char **argv)
{
    static const struct option lo[] = {
        {"hex", no_argument, NULL, O_HEX}, {"sync", no_argument, NULL, O_SYNC}, {0, 0, 0, 0}};
    data_args a;
    int i = parse(argc, argv, lo, &a), rc = TKV_EXIT_ERROR;
    if (i >= 0 && (argc - i < 3 || (argc - i - 1) % 2)) tool_usage("put", "DIR and KEY VALUE pairs are needed");
    else if (i >= 0) rc = write_batch("put", 1, &a, argv + i + 1, argc - i - 1, argv[i]);
    tool_common_free(&a.c);
    return rc;
}

int tkv_cmd_delete(int argc, char **argv)
{
    static const struct option lo[] = {
        {"hex", no_argument, NULL, O_HEX}, {"sync", no_argument, NULL, O_SYNC}, {0, 0, 0, 0}};
    data_args a;
    int i = parse(argc, argv, lo, &a), rc = TKV_EXIT_ERROR;
    if (i >= 0 && argc - i < 2) tool_usage("delete", "DIR and at least one KEY are needed");
    else if (i >= 0) rc = write_batch("delete", 0, &a, argv + i + 1, argc - i - 1, argv[i]);
    tool_common_free(&a.c);
    return rc;
}

/* ---------------------------------------------------------------- scan */

/* key_cmp -- the documented key order (memcmp, shorter first on a prefix). */
static int key_cmp(const void *a, size_t an, const void *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : an < bn ? -1 : an > bn;
}

/* scan_range -- prints [from, to) with the iterator, forward or backward. */
static int scan_range(tkv_iter *it, const data_args *a, const unsigned char *from, size_t fn, const unsigned char *to,
                      size_t tn)
{
    if (a->reverse) {
        if (to) {
            tkv_iter_seek(it, to, tn); /* the first key >= to, then one back */
            if (tkv_iter_valid(it)) tkv_iter_prev(it);
            else tkv_iter_seek_last(it);
        } else {
            tkv_iter_seek_last(it);
        }
    } else if (from) {
        tkv_iter_seek(it, from, fn);
    } else {
        tkv_iter_seek_first(it);
    }
    for (long long n = 0; tkv_iter_valid(it) && (a->limit < 0 || n < a->limit); n++) {
        size_t kn, vn;
        const void *k = tkv_iter_key(it, &kn);
        if (!a->reverse && to && key_cmp(k, kn, to, tn) >= 0) break;
        if (a->reverse && from && key_cmp(k, kn, from, fn) < 0) break;
        tool_print(stdout, a->c.hex, k, kn);
        if (!a->keys_only) {
            const void *v = tkv_iter_value(it, &vn);
            fputc('\t', stdout);
            tool_print(stdout, a->c.hex, v, vn);
        }
        fputc('\n', stdout);
        if (a->reverse) tkv_iter_prev(it);
        else tkv_iter_next(it);
    }
    int rc = tkv_iter_status(it);
    return rc == TKV_OK ? 0 : tool_fail("scan", "iterator", rc);
}

int tkv_cmd_scan(int argc, char **argv)
{
    static const struct option lo[] = {{"hex", no_argument, NULL, O_HEX},
                                       {"from", required_argument, NULL, O_FROM},
                                       {"to", required_argument, NULL, O_TO},
                                       {"limit", required_argument, NULL, O_LIMIT},
                                       {"reverse", no_argument, NULL, O_REVERSE},
                                       {"keys-only", no_argument, NULL, O_KEYS_ONLY},
                                       {0, 0, 0, 0}};
    data_args a;
    int i = parse(argc, argv, lo, &a), rc = TKV_EXIT_ERROR;
    unsigned char *from = NULL, *to = NULL;
    size_t fn = 0, tn = 0;
    if (i >= 0 && argc - i != 1) {
        tool_usage("scan", "one DIR is needed");
        i = -1;
    } else if (i >= 0 && ((a.from && tool_decode(&a.c, "scan", a.from, &from, &fn)) ||
                          (a.to && tool_decode(&a.c, "scan", a.to, &to, &tn)))) {
        i = -1;
    }
    tkv_db *db = NULL;
    if (i >= 0 && (rc = tool_open("scan", argv[i], &a.c, 1, &db)) == 0) {
        tkv_iter *it;
        int r = tkv_iter_new(db, NULL, &it);
        rc = r == TKV_OK ? scan_range(it, &a, from, fn, to, tn) : tool_fail("scan", "iterator", r);
        tkv_iter_free(it);
        r = tkv_close(db);
        if (r != TKV_OK && rc == 0) rc = tool_fail("scan", "close", r);
    }
    free(from);
    free(to);
    tool_common_free(&a.c);
    return rc;
}
