// SPDX-License-Identifier: Apache-2.0
/*
 * tkv_dump.c -- tkv dump-sst and tkv dump-matrix: the files of a database
 * as they are, read with the library's internal readers (table_open and
 * table_check for an SST; pool_open_readonly, rowtable_open and the row
 * iterator for the pool; vset_open_readonly for the MANIFEST's cursors).
 * Nothing is written. Formats: docs/format-sst.md, docs/format-matrix.md;
 * manuals in tkv.c.
 */
#include "tools/tkv.h"

#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db/mx.h"
#include "db/options.h"
#include "matrix/pool.h"
#include "matrix/rowtable.h"
#include "sst/table.h"
#include "sst/version.h"

enum { O_HEX = 1000, O_SUMMARY, O_BLOCKS, O_VALUES, O_ENTRIES };

typedef struct dump_args {
    tool_common c;
    int summary, blocks_only, values, entries;
    uint64_t problems, entries_seen;
} dump_args;

/* parse -- returns the index of the one operand, or -1 after a usage error. */
static int parse(int argc, char **argv, const struct option *lo, dump_args *a)
{
    memset(a, 0, sizeof *a);
    if (tool_common_init(&a->c)) return -1;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "o:", lo, NULL)) != -1) {
        switch (ch) {
        case 'o':
            if (tool_set_option(&a->c, argv[0], optarg)) return -1;
            break;
        case O_HEX:
            a->c.hex = 1;
            break;
        case O_SUMMARY:
            a->summary = 1;
            break;
        case O_BLOCKS:
            a->blocks_only = 1;
            break;
        case O_VALUES:
            a->values = 1;
            break;
        case O_ENTRIES:
            a->entries = 1;
            break;
        default: {
            char why[300];
            snprintf(why, sizeof why, "unknown option or missing argument: %s", argv[optind - 1]);
            tool_usage(argv[0], why);
            return -1;
        }
        }
    }
    if (argc - optind != 1) {
        tool_usage(argv[0], "one operand is needed");
        return -1;
    }
    return optind;
}

/* print_ikey -- "<user key> seq=<n> <put|del>" of an internal key. */
static void print_ikey(int hex, tkv_slice k)
{
    if (k.n < IKEY_TRAILER) {
        printf("(none)");
        return;
    }
    tool_print(stdout, hex, k.p, k.n - IKEY_TRAILER);
    ikey_type ty = ikey_get_type(k);
    printf(" seq=%llu %s", (unsigned long long)ikey_seq(k),
           ty == IKEY_VALUE      ? "put"
           : ty == IKEY_DELETION ? "del"
                                 : "type?");
}

/* ---------------------------------------------------------------- dump-sst */

static void sst_problem(void *arg, int rc)
{
    (void)rc;
    dump_args *a = arg;
    a->problems++;
    printf("problem: %s\n", tkv_errmsg());
}

static int sst_block(void *arg, uint64_t i, block_handle h, tkv_slice sep, size_t raw, int compressed)
{
    dump_args *a = arg;
    printf("block %llu: offset=%llu size=%llu raw=%zu %s separator=", (unsigned long long)i,
           (unsigned long long)h.offset, (unsigned long long)h.size, raw, compressed ? "lz4" : "uncompressed");
    print_ikey(a->c.hex, sep);
    printf("\n");
    return 0;
}

static int sst_entry(void *arg, tkv_slice k, tkv_slice v)
{
    dump_args *a = arg;
    a->entries_seen++;
    if (a->blocks_only) return 0;
    printf("  ");
    print_ikey(a->c.hex, k);
    printf(" vlen=%zu", v.n);
    if (v.n) {
        size_t show = a->values || v.n <= 32 ? v.n : 32;
        printf(" ");
        tool_print(stdout, a->c.hex, v.p, show);
        if (show < v.n) printf("...");
    }
    printf("\n");
    return 0;
}

/* sst_header -- the footer, properties and filter of an open table. */
static void sst_header(const char *path, table *t, const dump_args *a)
{
    table_layout lay;
    table_get_layout(t, &lay);
    const table_props *p = table_properties(t);
    printf("file: %s\n", path);
    printf("footer: index=%llu+%llu filter=%llu+%llu properties=%llu+%llu data_end=%llu\n",
           (unsigned long long)lay.index.offset, (unsigned long long)lay.index.size,
           (unsigned long long)lay.filter.offset, (unsigned long long)lay.filter.size,
           (unsigned long long)lay.props.offset, (unsigned long long)lay.props.size, (unsigned long long)lay.data_end);
    printf("properties: entries=%llu deletions=%llu min_seq=%llu max_seq=%llu raw_key_bytes=%llu raw_value_bytes=%llu "
           "data_bytes=%llu data_blocks=%llu compression=%llu compressed_blocks=%llu\n",
           (unsigned long long)p->num_entries, (unsigned long long)p->num_deletions, (unsigned long long)p->min_seq,
           (unsigned long long)p->max_seq, (unsigned long long)p->raw_key_bytes, (unsigned long long)p->raw_value_bytes,
           (unsigned long long)p->data_bytes, (unsigned long long)p->num_data_blocks,
           (unsigned long long)p->compression, (unsigned long long)p->num_compressed_blocks);
    printf("smallest: ");
    print_ikey(a->c.hex, slice(p->smallest.data, p->smallest.len));
    printf("\nlargest: ");
    print_ikey(a->c.hex, slice(p->largest.data, p->largest.len));
    if (lay.filter_bytes)
        printf("\nfilter: bytes=%zu bits=%zu probes=%u\n", lay.filter_bytes, (lay.filter_bytes - 1) * 8,
               lay.filter_probes);
    else printf("\nfilter: none\n");
    printf("index: entries=%llu\n", (unsigned long long)lay.index_entries);
    const rd_list *rd = table_range_del_list(t);
    if (lay.version > 1)
        printf("range_dels: count=%zu block=%llu+%llu\n", rd->n, (unsigned long long)lay.range_dels.offset,
               (unsigned long long)lay.range_dels.size);
    for (size_t i = 0; i < rd->n; i++) { /* sorted by begin */
        printf("range_del: ");
        tool_print(stdout, a->c.hex, rd->t[i].begin.p, rd->t[i].begin.n);
        printf(" .. ");
        tool_print(stdout, a->c.hex, rd->t[i].end.p, rd->t[i].end.n);
        printf(" seq=%llu\n", (unsigned long long)rd->t[i].seq);
    }
}

int tkv_cmd_dump_sst(int argc, char **argv)
{
    static const struct option lo[] = {{"hex", no_argument, NULL, O_HEX},
                                       {"summary", no_argument, NULL, O_SUMMARY},
                                       {"blocks", no_argument, NULL, O_BLOCKS},
                                       {"values", no_argument, NULL, O_VALUES},
                                       {0, 0, 0, 0}};
    dump_args a;
    int i = parse(argc, argv, lo, &a), rc = TKV_EXIT_ERROR;
    io_file *f = NULL;
    table *t = NULL;
    uint64_t size = 0;
    int st = i < 0 ? TKV_OK : io_open_read(argv[i], IO_META, NULL, &f);
    if (st == TKV_OK && f) st = io_file_size(f, &size);
    if (st == TKV_OK && f) st = table_open(f, size, NULL, &t); /* closes f on failure */
    else if (f) io_close(f);
    if (i >= 0 && st != TKV_OK) {
        rc = tool_fail("dump-sst", argv[i], st);
    } else if (t) {
        sst_header(argv[i], t, &a);
        if (!a.summary) {
            table_check_fns fns = {.problem = sst_problem, .block = sst_block, .entry = sst_entry};
            table_check_stats cs;
            (void)table_check(t, &fns, &a, &cs); /* problems were printed as they came */
            printf("check: data_blocks=%llu bad_blocks=%llu entries=%llu problems=%llu\n",
                   (unsigned long long)cs.data_blocks, (unsigned long long)cs.bad_blocks,
                   (unsigned long long)cs.entries, (unsigned long long)cs.problems);
        }
        rc = a.problems ? TKV_EXIT_NEGATIVE : TKV_EXIT_OK;
        table_close(t);
    }
    tool_common_free(&a.c);
    return rc;
}

/* ---------------------------------------------------------------- dump-matrix */

/* pool_of -- the pool file of operand arg (a database directory or a pool
 * file) into path; *vs the MANIFEST's state when arg is a directory that
 * has one. 0 or TKV_EXIT_ERROR. */
static int pool_of(const char *arg, const dump_args *a, char *path, size_t n, version_set **vs)
{
    struct stat sb;
    *vs = NULL;
    if (stat(arg, &sb) != 0) {
        fprintf(stderr, "tkv dump-matrix: %s: no such file or directory\n", arg);
        return TKV_EXIT_ERROR;
    }
    if (!S_ISDIR(sb.st_mode)) {
        snprintf(path, n, "%s", arg);
        return 0;
    }
    char recorded[PATH_MAX];
    uint8_t uuid[16];
    snprintf(path, n, "%s/matrix.pmem", arg);
    if (a->c.opts->pmem_path[0]) /* as tkv_open and tkv_verify decide */
        snprintf(path, n, "%s", a->c.opts->pmem_path);
    else if (access(path, F_OK) != 0 && mx_recorded_pool(arg, recorded, sizeof recorded, uuid))
        snprintf(path, n, "%s", recorded);
    if (vset_open_readonly(arg, NULL, 0, vs) < 0)
        printf("manifest: unreadable (%s); cursors are not shown\n", tkv_errmsg());
    return 0;
}

/* row_pages -- the row's page list in list order, "R" after released ones. */
static void row_pages(pool *p, uint32_t slot)
{
    pool_row pr;
    if (pool_row_read(p, slot, &pr) < 0) return;
    printf("  pages:");
    for (uint32_t j = 0; j < pr.npages; j++)
        printf(" %u%s", pool_row_page(&pr, j), pool_row_released(&pr, j) ? "R" : "");
    printf("\n");
}

/* row_entries -- the forward pointers' range, and with --entries every live
 * entry: index, key, sequence number, type, forward pointer. */
static void row_entries(rowtable *r, const rowtable_props *pr, dump_args *a)
{
    uint32_t lo = UINT32_MAX, hi = 0;
    for (uint32_t i = pr->cursor; i < pr->entries; i++) {
        uint32_t f = rowtable_fwd(r, i);
        if (f < lo) lo = f;
        if (f > hi) hi = f;
    }
    if (!pr->older_row_id || pr->cursor == pr->entries) printf("  forward: none\n");
    else printf("  forward: into row %llu, pointers %u..%u\n", (unsigned long long)pr->older_row_id, lo, hi);
    if (!a->entries) return;
    tkv_it *it = rowtable_iter(r);
    if (!it) {
        printf("  problem: out of memory\n");
        a->problems++;
        return;
    }
    uint32_t i = pr->cursor;
    for (it_seek_first(it); it_valid(it); it_next(it), i++) {
        printf("  entry %u: ", i);
        print_ikey(a->c.hex, it_key(it));
        uint32_t f = rowtable_fwd(r, i);
        if (f == ROWTABLE_NO_FWD) printf(" fwd=none\n");
        else printf(" fwd=%u\n", f);
    }
    if (it_status(it) < 0) {
        a->problems++;
        printf("  problem: %s\n", tkv_errmsg());
    }
    it_destroy(it);
}

/* dump_row -- one committed row: its header fields, pages, cursor and
 * forward pointers (and entries). */
static void dump_row(pool *p, const pool_row_id *prow, version_set *vs, dump_args *a)
{
    printf("row %llu: slot=%u first_page=%u pages=%u released=%u", (unsigned long long)prow->row_id, prow->slot,
           prow->first_page, prow->npages, prow->pages_released);
    uint64_t cur;
    if (vs && version_row_cursor(vset_current(vs), prow->row_id, &cur))
        printf(" manifest_cursor=%llu", (unsigned long long)cur);
    else if (vs) printf(" manifest_cursor=none (not in the MANIFEST: the next open drops it)");
    rowtable *r;
    if (rowtable_open(p, prow->slot, &r) < 0) {
        a->problems++;
        printf("\n  problem: %s\n", tkv_errmsg());
        row_pages(p, prow->slot);
        return;
    }
    rowtable_props pr;
    rowtable_get_props(r, &pr);
    printf(" entries=%u deletions=%llu seq=%llu..%llu key_bytes=%llu value_bytes=%llu\n", pr.entries,
           (unsigned long long)pr.deletions, (unsigned long long)pr.min_seq, (unsigned long long)pr.max_seq,
           (unsigned long long)pr.key_bytes, (unsigned long long)pr.value_bytes);
    printf("  layout: meta_pages=%u data_pages=%u meta_off=%llu meta_bytes=%llu data_bytes=%llu min_cursor=%u "
           "values=%s\n",
           pr.meta_pages, pr.data_pages, (unsigned long long)pr.meta_off, (unsigned long long)pr.meta_bytes,
           (unsigned long long)pr.data_bytes, pr.min_cursor, pr.lz4 ? "lz4" : "raw");
    row_pages(p, prow->slot);
    row_entries(r, &pr, a);
    rowtable_close(r);
}

/* dump_pool -- the header, the pages in use and every committed row. */
static void dump_pool(pool *p, const char *path, version_set *vs, dump_args *a)
{
    pool_header h;
    pool_header_info(p, &h);
    pool_stats st;
    pool_get_stats(p, &st);
    printf("pool: %s\n", path);
    printf("header: size=%llu page_size=%u page_count=%u dir_offset=%llu dir_slots=%u pages_offset=%llu uuid=",
           (unsigned long long)h.pool_size, h.page_size, h.page_count, (unsigned long long)h.dir_offset, h.dir_slots,
           (unsigned long long)h.pages_offset);
    for (int i = 0; i < 16; i++) printf("%02x", h.uuid[i]);
    printf("\npages: in_use=%u free=%u\n", st.pages_total - st.pages_free, st.pages_free);
    pool_row_id *rows;
    size_t n;
    if (pool_rows(p, &rows, &n) < 0) {
        a->problems++;
        printf("problem: %s\n", tkv_errmsg());
        return;
    }
    printf("rows: %zu\n", n);
    for (size_t i = 0; i < n; i++) dump_row(p, &rows[i], vs, a);
    free(rows);
}

int tkv_cmd_dump_matrix(int argc, char **argv)
{
    static const struct option lo[] = {
        {"hex", no_argument, NULL, O_HEX}, {"entries", no_argument, NULL, O_ENTRIES}, {0, 0, 0, 0}};
    dump_args a;
    int i = parse(argc, argv, lo, &a), rc = TKV_EXIT_ERROR;
    char path[PATH_MAX];
    version_set *vs = NULL;
    if (i >= 0 && pool_of(argv[i], &a, path, sizeof path, &vs) == 0) {
        pool *p;
        int st = pool_open_readonly(path, &p);
        if (st == 1) {
            fprintf(stderr, "tkv dump-matrix: pool %s was never formatted (all zero)\n", path);
        } else if (st < 0) {
            rc = tool_fail("dump-matrix", path, st);
        } else {
            dump_pool(p, path, vs, &a);
            pool_close(p);
            rc = a.problems ? TKV_EXIT_NEGATIVE : TKV_EXIT_OK;
        }
    }
    vset_close(vs);
    tool_common_free(&a.c);
    return rc;
}
