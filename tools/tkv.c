// SPDX-License-Identifier: Apache-2.0
/*
 * tkv.c -- the tkv command-line tool: main, the command table and every
 * command's manual, and the helpers the commands share (tkv.h). The
 * reference is docs/tkv.md; keep the manuals here and that page in step.
 */
#include "tools/tkv.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- manuals */

#define OPT_O                                                                                                          \
    "    -o KEY=VALUE  a database option (docs/options.md), given to tkv_options_set; repeatable. The\n"               \
    "                  database is opened with create_if_missing=0 unless -o create_if_missing=1.\n"
#define OPT_HEX  "    --hex         keys and values on the command line and in the output are hex digits\n"
#define OPT_HELP "    -h, --help    print this manual\n"
#define ESCAPES                                                                                                        \
    "    Keys and values are printed with printable ASCII as it is, a backslash as \\\\ and every other\n"             \
    "    byte as \\xNN (or in hex with --hex).\n"
#define OPENS                                                                                                          \
    "    The database is opened with tkv_open (recovering it, as any open does); it must not be open in\n"             \
    "    another process.\n"
#define OPENS_RO                                                                                                       \
    "    The database is opened read-only (read_only=1): it reads what is on disk, the WAL of a crashed\n"             \
    "    run included, and changes nothing. It must not be open read-write; other read-only opens may\n"               \
    "    share it.\n"

static const char man_get[] =
    "NAME\n    tkv get -- print the values of keys\n\n"
    "SYNOPSIS\n    tkv get [-o KEY=VALUE]... [--hex] [--raw] DIR KEY...\n\n"
    "DESCRIPTION\n    Prints the value of each KEY of the database in DIR on a line of its own. A key that is\n"
    "    not found prints nothing on stdout and is named on stderr.\n" OPENS_RO ESCAPES "\n"
    "OPTIONS\n" OPT_O OPT_HEX
    "    --raw         print the value's bytes as they are, with no newline (one KEY only)\n" OPT_HELP
    "\nEXIT STATUS\n    0 every key was found, 1 a key was not found, 2 usage error or failure.\n";

static const char man_put[] =
    "NAME\n    tkv put -- set keys to values\n\n"
    "SYNOPSIS\n    tkv put [-o KEY=VALUE]... [--hex] [--sync] DIR KEY VALUE [KEY VALUE]...\n\n"
    "DESCRIPTION\n    Writes every KEY VALUE pair to the database in DIR in one atomic batch (tkv_write).\n"
    "    The writes are in the WAL when the command ends (and the database is closed cleanly).\n" OPENS "\n"
    "OPTIONS\n" OPT_O OPT_HEX "    --sync        write with TKV_SYNC (the WAL is fdatasync'd)\n" OPT_HELP
    "\nEXIT STATUS\n    0 written, 2 usage error or failure.\n";

static const char man_delete[] =
    "NAME\n    tkv delete -- remove keys\n\n"
    "SYNOPSIS\n    tkv delete [-o KEY=VALUE]... [--hex] [--sync] DIR KEY...\n\n"
    "DESCRIPTION\n    Deletes every KEY from the database in DIR in one atomic batch (a key that is absent is\n"
    "    no error).\n" OPENS "\n"
    "OPTIONS\n" OPT_O OPT_HEX "    --sync        write with TKV_SYNC\n" OPT_HELP
    "\nEXIT STATUS\n    0 deleted, 2 usage error or failure.\n";

static const char man_scan[] =
    "NAME\n    tkv scan -- print a range of keys and values\n\n"
    "SYNOPSIS\n    tkv scan [-o KEY=VALUE]... [--hex] [--from KEY] [--to KEY] [--limit N] [--reverse]\n"
    "             [--keys-only] DIR\n\n"
    "DESCRIPTION\n    Prints the entries of the database in DIR in key order, one per line: the key, a tab,\n"
    "    the value. The range is [--from, --to): from the first key >= --from to the last key < --to.\n" OPENS_RO
        ESCAPES "\n"
    "OPTIONS\n" OPT_O OPT_HEX "    --from KEY    start at the first key >= KEY (default: the first key)\n"
    "    --to KEY      stop before the first key >= KEY (default: after the last key)\n"
    "    --limit N     print at most N entries\n"
    "    --reverse     from the last key of the range down to the first\n"
    "    --keys-only   print the keys only\n" OPT_HELP
    "\nEXIT STATUS\n    0 the range was printed, 2 usage error or failure (an iterator error included).\n";

static const char man_stats[] =
    "NAME\n    tkv stats -- print properties of a database\n\n"
    "SYNOPSIS\n    tkv stats [-o KEY=VALUE]... DIR [PROPERTY]...\n\n"
    "DESCRIPTION\n    Opens the database in DIR and prints each PROPERTY (tkv_property; default tkv.stats):\n"
    "    tkv.stats, tkv.levels, tkv.matrix, tkv.pmem, tkv.options, tkv.sched and the numeric properties\n"
    "    of docs/options.md. With several, each is preceded by a line \"== PROPERTY\".\n" OPENS_RO "\n"
    "OPTIONS\n" OPT_O OPT_HELP "\nEXIT STATUS\n    0 printed, 2 usage error, unknown property or failure.\n";

static const char man_check[] =
    "NAME\n    tkv check -- verify every checksum of a closed database\n\n"
    "SYNOPSIS\n    tkv check [-o pmem_path=PATH] [-q] DIR\n\n"
    "DESCRIPTION\n    Runs tkv_verify on the database in DIR and prints its report: the WALs, the MANIFEST,\n"
    "    every SST (every block, index, filter and footer) and the pmem pool (header, every RowTable),\n"
    "    and whether the MANIFEST and the pool agree. Nothing is changed and nothing is recovered; the\n"
    "    database must be closed (while the check runs, an open of it gets TKV_BUSY). Lines \"problem:\"\n"
    "    are damage; lines \"note:\" are what a crash leaves and the next open cleans up.\n\n"
    "OPTIONS\n    -o pmem_path=PATH  where the pool is, if not <DIR>/matrix.pmem or the file <DIR>/POOL names\n"
    "    -q, --quiet   print nothing; the exit status tells\n" OPT_HELP
    "\nEXIT STATUS\n    0 clean, 1 problems found, 2 usage error or the database could not be checked (missing,\n"
    "    not a database, open elsewhere).\n";

static const char man_checkpoint[] =
    "NAME\n    tkv checkpoint -- copy a database into a new directory\n\n"
    "SYNOPSIS\n    tkv checkpoint [-o KEY=VALUE]... DIR OUT\n\n"
    "DESCRIPTION\n    Opens the database in DIR and makes a checkpoint of it in the new directory OUT\n"
    "    (tkv_checkpoint): a database of its own, opened like any other, holding what DIR holds. Its SSTs\n"
    "    are hard links to DIR's (copies when OUT is on another file system); the memtables and the\n"
    "    matrix container's rows become L0 SSTs, and OUT gets an empty pmem pool of its own\n"
    "    (OUT/matrix.pmem). OUT must not exist; it appears only once it is complete.\n" OPENS_RO "\n"
    "OPTIONS\n" OPT_O OPT_HELP
    "\nEXIT STATUS\n    0 the checkpoint is in OUT, 2 usage error or failure (OUT was not made).\n";

static const char man_dump_sst[] =
    "NAME\n    tkv dump-sst -- print the contents of an SST file\n\n"
    "SYNOPSIS\n    tkv dump-sst [--hex] [--summary | --blocks] [--values] FILE\n\n"
    "DESCRIPTION\n    Opens FILE as an SSTable (docs/format-sst.md) and prints its footer (the handles of the\n"
    "    index, filter and properties blocks), its properties, the filter's size and probes, then every\n"
    "    data block (index position, offset, stored and uncompressed size, index separator) with its\n"
    "    entries (key, sequence number, type, value length and the value's first 32 bytes). Every block\n"
    "    is checked as tkv check does; problems are printed as \"problem:\" lines.\n" ESCAPES "\n"
    "OPTIONS\n" OPT_HEX "    --summary     footer, properties and filter only\n"
    "    --blocks      the data blocks without their entries\n"
    "    --values      print whole values\n" OPT_HELP
    "\nEXIT STATUS\n    0 printed and intact, 1 problems found, 2 usage error or FILE is not a readable table.\n";

static const char man_dump_matrix[] =
    "NAME\n    tkv dump-matrix -- print the pmem pool of a database\n\n"
    "SYNOPSIS\n    tkv dump-matrix [-o pmem_path=PATH] [--hex] [--entries] DIR|POOLFILE\n\n"
    "DESCRIPTION\n    Opens the pool of the database in DIR (or the pool file POOLFILE) read-only and prints\n"
    "    its header (geometry, uuid), the pages in use, then every committed row: directory slot, row id,\n"
    "    entries, sequence range, its pages in page-list order (metadata pages first, released pages\n"
    "    marked R), its cursor (from the MANIFEST, when DIR is given), the older row its forward pointers\n"
    "    point into and their range (docs/format-matrix.md). The pool must not be open in a database.\n" ESCAPES "\n"
    "OPTIONS\n    -o pmem_path=PATH  the pool of DIR, if not <DIR>/matrix.pmem or the file <DIR>/POOL names\n" OPT_HEX
    "    --entries     every live entry of every row: index, key, sequence number, type, forward pointer\n" OPT_HELP
    "\nEXIT STATUS\n    0 printed, 1 a row failed to verify, 2 usage error or no readable pool.\n";

static const tkv_command commands[] = {
    {"get", "print the values of keys", man_get, tkv_cmd_get},
    {"put", "set keys to values", man_put, tkv_cmd_put},
    {"delete", "remove keys", man_delete, tkv_cmd_delete},
    {"scan", "print a range of keys and values", man_scan, tkv_cmd_scan},
    {"stats", "print properties (default tkv.stats)", man_stats, tkv_cmd_stats},
    {"check", "verify every checksum of a closed database (tkv_verify)", man_check, tkv_cmd_check},
    {"checkpoint", "copy a database into a new directory (tkv_checkpoint)", man_checkpoint, tkv_cmd_checkpoint},
    {"dump-sst", "print the contents of an SST file", man_dump_sst, tkv_cmd_dump_sst},
    {"dump-matrix", "print the pmem pool: rows, pages, forward pointers", man_dump_matrix, tkv_cmd_dump_matrix},
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const tkv_command *find_command(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (!strcmp(commands[i].name, name)) return &commands[i];
    return NULL;
}

/* main_manual -- tkv --help. */
static void main_manual(FILE *f)
{
    fprintf(f, "NAME\n    tkv -- inspect and edit tierkv databases\n\n"
               "SYNOPSIS\n    tkv COMMAND [OPTION]... ARG...\n    tkv COMMAND --help\n    tkv --help | --version\n\n"
               "COMMANDS\n");
    for (size_t i = 0; i < NCOMMANDS; i++) fprintf(f, "    %-12s  %s\n", commands[i].name, commands[i].summary);
    fprintf(f,
            "\nDESCRIPTION\n    get, put, delete, scan, stats and checkpoint open the database through the public API\n"
            "    (tierkv.h); get, scan, stats and checkpoint open it read-only and change nothing in it. check\n"
            "    runs tkv_verify on a closed database; the dump commands read the files as they are.\n"
            "    \"tkv COMMAND --help\" prints the manual of a command; docs/tkv.md is the reference.\n\n"
            "EXIT STATUS\n    0 success, 1 a negative answer (a key not found, problems found), 2 a usage error\n"
            "    or a failure.\n");
}

/* ---------------------------------------------------------------- shared helpers */

int tool_usage(const char *cmd, const char *why)
{
    const tkv_command *c = find_command(cmd);
    if (why) fprintf(stderr, "tkv %s: %s\n", cmd, why);
    const char *syn = c ? strstr(c->manual, "SYNOPSIS\n    ") : NULL;
    if (syn) {
        syn += strlen("SYNOPSIS\n    ");
        const char *end = strstr(syn, "\n\n");
        fprintf(stderr, "usage: %.*s\n", (int)(end ? end - syn : (long)strlen(syn)), syn);
    }
    fprintf(stderr, "Try 'tkv %s --help'.\n", cmd);
    return TKV_EXIT_ERROR;
}

int tool_help(const char *cmd)
{
    const tkv_command *c = find_command(cmd);
    fputs(c ? c->manual : "", stdout);
    return TKV_EXIT_OK;
}

int tool_fail(const char *cmd, const char *what, int status)
{
    const char *msg = tkv_errmsg();
    fprintf(stderr, "tkv %s: %s: %s%s%s%s\n", cmd, what, tkv_strerror(status), *msg ? " (" : "", msg, *msg ? ")" : "");
    return TKV_EXIT_ERROR;
}

int tool_common_init(tool_common *c)
{
    c->hex = 0;
    c->opts = tkv_options_new();
    if (!c->opts || tkv_options_set(c->opts, "create_if_missing", "0") != TKV_OK) {
        fprintf(stderr, "tkv: out of memory\n");
        tkv_options_free(c->opts);
        c->opts = NULL;
        return TKV_EXIT_ERROR;
    }
    return 0;
}

void tool_common_free(tool_common *c)
{
    tkv_options_free(c->opts);
    c->opts = NULL;
}

int tool_set_option(tool_common *c, const char *cmd, const char *kv)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv) return tool_usage(cmd, "-o takes KEY=VALUE");
    char *name = strndup(kv, (size_t)(eq - kv));
    int rc = name ? tkv_options_set(c->opts, name, eq + 1) : TKV_NO_MEMORY;
    free(name);
    if (rc != TKV_OK) return tool_fail(cmd, kv, rc);
    return 0;
}

int tool_open(const char *cmd, const char *dir, const tool_common *c, int read_only, tkv_db **db)
{
    *db = NULL;
    int rc = read_only ? tkv_options_set(c->opts, "read_only", "1") : TKV_OK;
    if (rc == TKV_OK) rc = tkv_open(dir, c->opts, db);
    if (rc == TKV_OK) return 0;
    char what[4200];
    snprintf(what, sizeof what, "cannot open %s", dir);
    return tool_fail(cmd, what, rc);
}

static int hex_digit(char ch)
{
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

int tool_decode(const tool_common *c, const char *cmd, const char *arg, unsigned char **out, size_t *n)
{
    size_t len = strlen(arg);
    *out = malloc(len + 1);
    if (!*out) {
        fprintf(stderr, "tkv %s: out of memory\n", cmd);
        return TKV_EXIT_ERROR;
    }
    if (!c->hex) {
        memcpy(*out, arg, len + 1);
        *n = len;
        return 0;
    }
    for (size_t i = 0; i < len; i += 2) {
        int hi = hex_digit(arg[i]), lo = i + 1 < len ? hex_digit(arg[i + 1]) : -1;
        if (hi < 0 || lo < 0) {
            free(*out);
            *out = NULL;
            fprintf(stderr, "tkv %s: \"%s\" is not an even number of hex digits (--hex)\n", cmd, arg);
            return TKV_EXIT_ERROR;
        }
        (*out)[i / 2] = (unsigned char)(hi << 4 | lo);
    }
    *n = len / 2;
    return 0;
}

void tool_print(FILE *f, int hex, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        if (hex) fprintf(f, "%02x", b[i]);
        else if (b[i] == '\\') fputs("\\\\", f);
        else if (b[i] >= 0x20 && b[i] < 0x7f) fputc(b[i], f);
        else fprintf(f, "\\x%02x", b[i]);
    }
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv)
{
    if (argc < 2) {
        main_manual(stderr);
        return TKV_EXIT_ERROR;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
        if (argc > 2 && find_command(argv[2])) return tool_help(argv[2]);
        main_manual(stdout);
        return TKV_EXIT_OK;
    }
    if (!strcmp(name, "--version")) {
        printf("tkv (tierkv) %s, library %d\n", TKV_VERSION_STRING, tkv_version());
        return TKV_EXIT_OK;
    }
    const tkv_command *c = find_command(name);
    if (!c) {
        fprintf(stderr, "tkv: unknown command \"%s\"; 'tkv --help' lists them\n", name);
        return TKV_EXIT_ERROR;
    }
    for (int i = 2; i < argc && strcmp(argv[i], "--"); i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return tool_help(name);
    return c->run(argc - 1, argv + 1);
}
