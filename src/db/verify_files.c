// SPDX-License-Identifier: Apache-2.0
/*
 * verify_files.c -- tkv_verify's checks of the files in the database
 * directory (verify.h): recording problems and notes, CURRENT and the
 * MANIFEST, the WALs, and every SST against the MANIFEST's record of it.
 * Every file is opened read-only and read through the engine's own readers
 * (vset_open_readonly, wal_replay, table_open + table_check).
 */
#include "db/verify.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "db/recover.h"
#include "mem/batch.h"
#include "mem/wal.h"
#include "sst/table.h"
#include "util/appendf.h"
#include "util/status.h"

/* ---------------------------------------------------------------- recording */

void verify_problem(verify_ctx *v, int rc, const char *file)
{
    const char *msg = tkv_errmsg();
    if (!*msg) msg = tkv_strerror(rc);
    const char *base = file ? strrchr(file, '/') : NULL;
    base = base ? base + 1 : file;
    char line[1024];
    if (base && !strstr(msg, base)) snprintf(line, sizeof line, "%s: %s", file, msg);
    else snprintf(line, sizeof line, "%s", msg);
    if (v->problems == 0) snprintf(v->first, sizeof v->first, "%s", line);
    /* damage outranks a file that could not be read */
    if (rc == TKV_CORRUPTION || v->problems == 0) v->status = rc == TKV_CORRUPTION ? rc : TKV_IO_ERROR;
    if (++v->problems <= VERIFY_MAX_LISTED) buf_appendf(&v->problem_lines, &v->oom, "problem: %s\n", line);
}

void verify_note(verify_ctx *v, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (++v->notes <= VERIFY_MAX_LISTED) buf_appendf(&v->note_lines, &v->oom, "note: %s\n", line);
}

/* cmp_u64 -- qsort order of file numbers. */
static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int verify_list(const char *dir, const char *suffix, uint64_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return tkv_err_errno(errno, "opendir %s", dir);
    size_t cap = 0;
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        const char *s = e->d_name, *q = s;
        uint64_t num = 0;
        for (; *q >= '0' && *q <= '9' && q - s < 19; q++) num = num * 10 + (uint64_t)(*q - '0');
        if (q == s || strcmp(q, suffix) != 0) continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            uint64_t *p = realloc(*out, cap * sizeof *p);
            if (!p) {
                rc = tkv_err(TKV_NO_MEMORY, "out of memory listing %s", dir);
                break;
            }
            *out = p;
        }
        (*out)[(*n)++] = num;
    }
    closedir(d);
    if (rc == 0 && *n) qsort(*out, *n, sizeof **out, cmp_u64);
    if (rc < 0) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

/* ---------------------------------------------------------------- MANIFEST */

int verify_manifest(verify_ctx *v)
{
    int rc = vset_open_readonly(v->dir, NULL, 0, &v->vs);
    if (rc == TKV_NO_MEMORY) return rc;
    if (rc == 1) {
        verify_note(v, "%s has no MANIFEST yet (its creation was cut short; the next open writes one)", v->dir);
        return 0;
    }
    if (rc < 0) {
        verify_problem(v, rc, NULL); /* the message names CURRENT or the MANIFEST */
        return 0;
    }
    snprintf(v->manifest, sizeof v->manifest, "MANIFEST-%06llu", (unsigned long long)vset_manifest_number(v->vs));
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", v->dir, v->manifest);
    wal_replay_stats st;
    rc = wal_replay(path, NULL, NULL, NULL, &st); /* read once already: only the counts */
    if (rc < 0) {
        verify_problem(v, rc, path);
        return rc == TKV_NO_MEMORY ? rc : 0;
    }
    v->manifest_records = st.records;
    if (st.torn_tail_records)
        verify_note(v, "%s ends in a torn record (%llu bytes): a crash during an append; recovery drops it",
                    v->manifest, (unsigned long long)st.torn_tail_bytes);
    return 0;
}

/* ---------------------------------------------------------------- WALs */

typedef struct wal_check {
    const char *path;
} wal_check;

/* wal_batch -- wal_record_fn: the payload must be a well-formed batch. */
static int wal_batch(void *arg, const uint8_t *payload, size_t n, uint64_t offset)
{
    const wal_check *c = arg;
    if (batch_validate(payload, n) < 0)
        return tkv_err(TKV_CORRUPTION, "WAL %s: record at offset %llu has a valid checksum but a malformed batch",
                       c->path, (unsigned long long)offset);
    return 0;
}

/* wal_verdict -- the notes for one WAL replayed without a problem, and how
 * recovery takes it (the chain rule, recover.h). */
static int wal_verdict(verify_ctx *v, wal_chain *ch, uint64_t num, const wal_replay_stats *st)
{
    const char *why = wal_chain_check(ch, st);
    if (why) {
        verify_note(v, "%06llu.wal is not replayed: %s; recovery drops it (its writes were never synced)",
                    (unsigned long long)num, why);
        return wal_chain_add(ch, num, st, WAL_CHAIN_DROPPED);
    }
    if (st->torn_hole)
        verify_note(v,
                    "%06llu.wal ends in a torn tail with a hole at offset %llu (%llu bytes): pages written "
                    "after its last sync reached the disk out of order; recovery drops them",
                    (unsigned long long)num, (unsigned long long)st->end, (unsigned long long)st->torn_tail_bytes);
    else if (st->torn_tail_records && st->version == WAL_V3)
        verify_note(v,
                    "%06llu.wal (a recycled log) ends at offset %llu; the %llu bytes after it are an older log's "
                    "or an append cut by a crash, and recovery ignores them",
                    (unsigned long long)num, (unsigned long long)st->end, (unsigned long long)st->torn_tail_bytes);
    else if (st->torn_tail_records)
        verify_note(v,
                    "%06llu.wal ends in a torn record (%llu bytes): a crash during an append; recovery "
                    "drops it",
                    (unsigned long long)num, (unsigned long long)st->torn_tail_bytes);
    return wal_chain_add(ch, num, st, WAL_CHAIN_REPLAYED);
}

int verify_wals(verify_ctx *v)
{
    uint64_t *nums;
    size_t n;
    int rc = verify_list(v->dir, ".wal", &nums, &n);
    if (rc < 0) {
        verify_problem(v, rc, v->dir);
        return rc == TKV_NO_MEMORY ? rc : 0;
    }
    uint64_t log_number = v->vs ? vset_log_number(v->vs) : 0;
    wal_chain ch = {.log_number = log_number};
    for (size_t i = 0; i < n && rc != TKV_NO_MEMORY; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%06llu.wal", v->dir, (unsigned long long)nums[i]);
        if (nums[i] < log_number) {
            verify_note(v,
                        "%06llu.wal is older than the MANIFEST's log number %llu: its writes are in the tiers "
                        "below (the next open deletes it, or keeps it to recycle)",
                        (unsigned long long)nums[i], (unsigned long long)log_number);
            continue;
        }
        wal_check c = {path};
        wal_replay_stats st;
        rc = wal_read_header(path, NULL, &st);
        uint64_t named = st.log_number;
        if (rc == 0 && (rc = wal_header_number(path, nums[i], &st)) == 1) { /* as recovery (recover_log) */
            verify_note(v,
                        "%06llu.wal is a recycled log whose header never reached the disk (it names log %llu): "
                        "recovery reads it as empty",
                        (unsigned long long)nums[i], (unsigned long long)named);
            v->wal_files++;
            if (wal_chain_add(&ch, nums[i], &st, WAL_CHAIN_REPLAYED) < 0) rc = TKV_NO_MEMORY;
            continue;
        }
        if (rc == TKV_CORRUPTION) st.version = 0; /* a bad header or a higher number: skipped whole, as recovery */
        else if (rc == 0) rc = wal_replay(path, NULL, wal_batch, &c, &st);
        v->wal_files++;
        v->wal_records += st.records;
        v->wal_bytes += st.payload_bytes;
        if (rc < 0) {
            verify_problem(v, rc, path);
            int how = rc == TKV_CORRUPTION && st.version ? WAL_CHAIN_CUT : WAL_CHAIN_SKIPPED;
            if (wal_chain_add(&ch, nums[i], &st, how) < 0) rc = TKV_NO_MEMORY;
        } else {
            rc = wal_verdict(v, &ch, nums[i], &st);
        }
    }
    wal_chain_free(&ch);
    free(nums);
    return rc == TKV_NO_MEMORY ? rc : 0;
}

/* ---------------------------------------------------------------- SSTs */

/* sst_problem -- table_check's problem callback. */
static void sst_problem(void *arg, int rc) { verify_problem(arg, rc, NULL); /* table_corrupt names the file */ }

/* sst_expected -- the MANIFEST record table t should have: its properties'
 * entries, sequence range and keys, widened over its range tombstones as the
 * writer widened them (file_meta_add_range_dels). 0 or TKV_NO_MEMORY. */
static int sst_expected(const table *t, file_meta *e)
{
    const table_props *p = table_properties(t);
    e->num_entries = p->num_entries;
    e->min_seq = p->min_seq;
    e->max_seq = p->max_seq;
    TKV_TRY(buf_append(&e->smallest, p->smallest.data, p->smallest.len));
    TKV_TRY(buf_append(&e->largest, p->largest.data, p->largest.len));
    const rd_list *rd = table_range_del_list(t);
    return file_meta_add_range_dels(e, rd->t, rd->n);
}

/* sst_against_manifest -- the table against the MANIFEST's record f of it:
 * entries, range tombstones, sequence range, smallest and largest key. 0 or
 * TKV_NO_MEMORY. */
static int sst_against_manifest(verify_ctx *v, const char *path, const table *t, const file_meta *f)
{
    file_meta *e = file_meta_new();
    if (!e || sst_expected(t, e) < 0) {
        file_meta_unref(e);
        return TKV_NO_MEMORY;
    }
    const char *what = NULL;
    if (e->num_entries != f->num_entries) what = "entry count";
    else if (e->num_range_dels != f->num_range_dels) what = "range tombstone count";
    else if (e->min_seq != f->min_seq || e->max_seq != f->max_seq) what = "sequence range";
    else if (e->smallest.len != f->smallest.len || memcmp(e->smallest.data, f->smallest.data, f->smallest.len))
        what = "smallest key";
    else if (e->largest.len != f->largest.len || memcmp(e->largest.data, f->largest.data, f->largest.len))
        what = "largest key";
    file_meta_unref(e);
    if (!what) return 0;
    tkv_err(TKV_CORRUPTION, "%s: its %s differs from the one %s records", path, what, v->manifest);
    verify_problem(v, TKV_CORRUPTION, path);
    return 0;
}

/* verify_sst -- SST `number`: present (with the MANIFEST's size when f is
 * its record), then opened and walked whole (table_check). 0 or
 * TKV_NO_MEMORY. */
static int verify_sst(verify_ctx *v, uint64_t number, const file_meta *f, int level)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/%06llu.sst", v->dir, (unsigned long long)number);
    struct stat sb;
    int rc = 0;
    if (stat(path, &sb) != 0) {
        rc = errno == ENOENT ? tkv_err(TKV_CORRUPTION, "%06llu.sst (L%d), listed in %s, is missing",
                                       (unsigned long long)number, level, v->manifest)
                             : tkv_err_errno(errno, "stat %s", path);
    } else if (f && (uint64_t)sb.st_size != f->size) {
        rc = tkv_err(TKV_CORRUPTION, "%s has %llu bytes, %s records %llu", path, (unsigned long long)sb.st_size,
                     v->manifest, (unsigned long long)f->size);
    }
    io_file *file = NULL;
    table *t = NULL;
    if (rc == 0) rc = io_open_read(path, IO_META, NULL, &file);
    if (rc == 0) rc = table_open(file, (uint64_t)sb.st_size, NULL, &t); /* owns file from here */
    v->sst_files++;
    if (rc < 0) {
        verify_problem(v, rc, path);
        return rc == TKV_NO_MEMORY ? rc : 0;
    }
    table_check_fns fns = {.problem = sst_problem};
    table_check_stats st;
    rc = table_check(t, &fns, v, &st);
    v->sst_blocks += st.data_blocks;
    v->sst_entries += st.entries;
    if (st.problems == 0 && f && sst_against_manifest(v, path, t, f) < 0) rc = TKV_NO_MEMORY;
    table_close(t);
    return rc == TKV_NO_MEMORY ? rc : 0;
}

/* listed -- 1 if SST number is in version cur. */
static int listed(const version *cur, uint64_t number)
{
    for (int l = 0; l < VERSION_LEVELS; l++)
        for (size_t i = 0; i < cur->nfiles[l]; i++)
            if (cur->files[l][i]->number == number) return 1;
    return 0;
}

int verify_ssts(verify_ctx *v)
{
    int rc = 0;
    const version *cur = v->vs ? vset_current(v->vs) : NULL;
    for (int l = 0; cur && l < VERSION_LEVELS && rc == 0; l++)
        for (size_t i = 0; i < cur->nfiles[l] && rc == 0; i++)
            rc = verify_sst(v, cur->files[l][i]->number, cur->files[l][i], l);
    uint64_t *nums = NULL;
    size_t n = 0;
    if (rc == 0 && (rc = verify_list(v->dir, ".sst", &nums, &n)) < 0) {
        verify_problem(v, rc, v->dir);
        return rc == TKV_NO_MEMORY ? rc : 0;
    }
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (!cur) rc = verify_sst(v, nums[i], NULL, -1); /* no MANIFEST: each file on its own */
        else if (!listed(cur, nums[i]))
            verify_note(v,
                        "%06llu.sst is not in %s: an output of a flush or compaction cut short (the next open "
                        "deletes it)",
                        (unsigned long long)nums[i], v->manifest);
    }
    free(nums);
    return rc;
}
