// SPDX-License-Identifier: Apache-2.0
/*
 * tkv_admin.c -- the commands that look at a database as a whole through
 * the public API: tkv stats (tkv_property), tkv check (tkv_verify) and
 * tkv checkpoint (tkv_checkpoint) (tkv.h; manuals in tkv.c).
 */
#include "tools/tkv.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

enum { O_QUIET = 1000 };

/* parse -- -o and (check) -q; returns the index of the first operand, or -1
 * after a usage error. */
static int parse(int argc, char **argv, const struct option *lo, tool_common *c, int *quiet)
{
    if (tool_common_init(c)) return -1;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, quiet ? "o:q" : "o:", lo, NULL)) != -1) {
        if (ch == 'o') {
            if (tool_set_option(c, argv[0], optarg)) return -1;
        } else if ((ch == 'q' || ch == O_QUIET) && quiet) {
            *quiet = 1;
        } else {
            char why[300];
            snprintf(why, sizeof why, "unknown option or missing argument: %s", argv[optind - 1]);
            tool_usage(argv[0], why);
            return -1;
        }
    }
    return optind;
}

/* print_property -- one property; 0 or TKV_EXIT_ERROR (unknown, or failed). */
static int print_property(tkv_db *db, const char *name, int header)
{
    char *text = tkv_property(db, name);
    if (!text) return tool_fail("stats", name, TKV_INVALID);
    if (header) printf("== %s\n", name);
    size_t n = strlen(text);
    fputs(text, stdout);
    if (n == 0 || text[n - 1] != '\n') fputc('\n', stdout);
    tkv_free(text);
    return 0;
}

int tkv_cmd_stats(int argc, char **argv)
{
    static const struct option lo[] = {{0, 0, 0, 0}};
    tool_common c;
    int i = parse(argc, argv, lo, &c, NULL), rc = TKV_EXIT_ERROR;
    tkv_db *db = NULL;
    if (i >= 0 && argc - i < 1) tool_usage("stats", "DIR is needed");
    else if (i >= 0) rc = tool_open("stats", argv[i], &c, 1, &db);
    if (db) {
        if (argc - i == 1) rc = print_property(db, "tkv.stats", 0);
        for (int k = i + 1; rc == 0 && k < argc; k++) rc = print_property(db, argv[k], argc - i > 2);
        int r = tkv_close(db);
        if (r != TKV_OK && rc == 0) rc = tool_fail("stats", "close", r);
    }
    tool_common_free(&c);
    return rc;
}

int tkv_cmd_check(int argc, char **argv)
{
    static const struct option lo[] = {{"quiet", no_argument, NULL, O_QUIET}, {0, 0, 0, 0}};
    tool_common c;
    int quiet = 0;
    int i = parse(argc, argv, lo, &c, &quiet), rc = TKV_EXIT_ERROR;
    if (i >= 0 && argc - i != 1) {
        tool_usage("check", "one DIR is needed");
    } else if (i >= 0) {
        char *report = NULL;
        int st = tkv_verify(argv[i], c.opts, &report);
        if (report && !quiet) fputs(report, stdout);
        if (st == TKV_OK) rc = TKV_EXIT_OK;
        else if (report) rc = TKV_EXIT_NEGATIVE; /* problems found: the report lists them */
        else rc = tool_fail("check", argv[i], st);
        tkv_free(report);
        if (rc == TKV_EXIT_NEGATIVE && !quiet) fprintf(stderr, "tkv check: %s\n", tkv_errmsg());
    }
    tool_common_free(&c);
    return rc;
}

int tkv_cmd_checkpoint(int argc, char **argv)
{
    static const struct option lo[] = {{0, 0, 0, 0}};
    tool_common c;
    int i = parse(argc, argv, lo, &c, NULL), rc = TKV_EXIT_ERROR;
    tkv_db *db = NULL;
    if (i >= 0 && argc - i != 2) tool_usage("checkpoint", "DIR and OUT are needed");
    else if (i >= 0) rc = tool_open("checkpoint", argv[i], &c, 1, &db);
    if (db) {
        int st = tkv_checkpoint(db, argv[i + 1]);
        if (st != TKV_OK) {
            char what[4200];
            snprintf(what, sizeof what, "checkpoint of %s into %s", argv[i], argv[i + 1]);
            rc = tool_fail("checkpoint", what, st);
        }
        int r = tkv_close(db);
        if (r != TKV_OK && rc == 0) rc = tool_fail("checkpoint", "close", r);
    }
    tool_common_free(&c);
    return rc;
}
