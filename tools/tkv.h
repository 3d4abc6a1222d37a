// SPDX-License-Identifier: Apache-2.0
/*
 * tkv.h -- what the files of the tkv command-line tool share (docs/tkv.md):
 * the command table, option parsing, opening a database, and the encoding
 * of keys and values on the command line and in the output.
 *
 * Files: tkv.c (main, usage, shared helpers), tkv_data.c (get, put, delete,
 * scan), tkv_admin.c (stats, check, checkpoint), tkv_dump.c (dump-sst, dump-matrix).
 * get/put/delete/scan/stats/check/checkpoint use the public API only (tierkv.h);
 * dump-sst and dump-matrix read the files with the library's internal
 * readers (the tool is linked with libtierkv.a).
 *
 * Exit status of every command: 0 success; 1 a negative answer (a key not
 * found, problems found); 2 a usage error, a database or file that could not
 * be opened, or an operation that failed.
 */
#ifndef TKV_TOOL_H
#define TKV_TOOL_H

#include <stddef.h>
#include <stdio.h>

#include "tierkv.h"

#define TKV_EXIT_OK       0
#define TKV_EXIT_NEGATIVE 1
#define TKV_EXIT_ERROR    2

/* One command: its name, a one-line summary, its manual text, and its
 * function (argc/argv start at the command name). */
typedef struct tkv_command {
    const char *name;
    const char *summary;
    const char *manual;
    int (*run)(int argc, char **argv);
} tkv_command;

/* Options every command that opens a database accepts, parsed by
 * tool_common_opt. */
typedef struct tool_common {
    tkv_options *opts; /* -o key=value applied (create_if_missing=0 first) */
    int hex;           /* --hex: keys and values in and out as hex digits */
} tool_common;

/* tool_common_init -- options with create_if_missing=0 and no --hex. 0, or
 * TKV_EXIT_ERROR (out of memory, message printed). */
int tool_common_init(tool_common *c);
void tool_common_free(tool_common *c);
/* tool_set_option -- applies "key=value" to c->opts; prints the error and
 * returns TKV_EXIT_ERROR if it is malformed or refused. */
int tool_set_option(tool_common *c, const char *cmd, const char *kv);

/* tool_usage -- prints "usage: ..." for cmd (its SYNOPSIS) to stderr and
 * returns TKV_EXIT_ERROR. */
int tool_usage(const char *cmd, const char *why);
/* tool_help -- prints the manual of cmd to stdout; returns TKV_EXIT_OK. */
int tool_help(const char *cmd);
/* tool_fail -- prints "tkv CMD: what: <status> (<tkv_errmsg>)" to stderr and
 * returns TKV_EXIT_ERROR. */
int tool_fail(const char *cmd, const char *what, int status);

/* tool_open -- tkv_open(dir) with c's options, and with read_only=1 when
 * `read_only` (the commands that only read: they change nothing on disk);
 * on failure prints why and returns TKV_EXIT_ERROR. */
int tool_open(const char *cmd, const char *dir, const tool_common *c, int read_only, tkv_db **db);

/* tool_decode -- a key or value given on the command line: its bytes, or
 * with --hex the bytes its hex digits spell (malloc'd into *out, *n). 0, or
 * TKV_EXIT_ERROR with the message printed. */
int tool_decode(const tool_common *c, const char *cmd, const char *arg, unsigned char **out, size_t *n);
/* tool_print -- writes p[0..n) to f: as hex with --hex, else printable ASCII
 * as it is, a backslash as \\ and any other byte as \xNN. */
void tool_print(FILE *f, int hex, const void *p, size_t n);

/* The commands (tkv_data.c, tkv_admin.c, tkv_dump.c). */
int tkv_cmd_get(int argc, char **argv);
int tkv_cmd_put(int argc, char **argv);
int tkv_cmd_delete(int argc, char **argv);
int tkv_cmd_scan(int argc, char **argv);
int tkv_cmd_stats(int argc, char **argv);
int tkv_cmd_check(int argc, char **argv);
int tkv_cmd_checkpoint(int argc, char **argv);
int tkv_cmd_dump_sst(int argc, char **argv);
int tkv_cmd_dump_matrix(int argc, char **argv);

#endif
