// SPDX-License-Identifier: Apache-2.0
/*
 * db_verify.c -- the public verification API: tkv_verify checks a closed
 * database without changing it (the checks themselves: verify.h) and
 * writes the report. Locking: shared flocks on <dir>/LOCK and on the pool
 * file, so that an open database (which holds them exclusively) makes the
 * call TKV_BUSY, and no database opens while the check runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db/verify.h"
#include "util/appendf.h"
#include "util/status.h"

/* lock_shared -- a shared flock on <dir>/LOCK (*fd -1 when there is no such
 * file: no database ever opened the directory, or it was copied without).
 * TKV_BUSY while a database has the directory open. */
static int lock_shared(const char *dir, int *fd)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/LOCK", dir);
    *fd = open(path, O_RDONLY | O_CLOEXEC);
    if (*fd < 0) return errno == ENOENT ? 0 : tkv_err_errno(errno, "open %s", path);
    if (flock(*fd, LOCK_SH | LOCK_NB) == 0) return 0;
    int e = errno;
    close(*fd);
    *fd = -1;
    if (e == EWOULDBLOCK)
        return tkv_err(TKV_BUSY, "database %s is open (%s is locked); tkv_verify checks closed databases only", dir,
                       path);
    return tkv_err_errno(e, "lock %s", path);
}

/* check_dir -- dir exists and holds a tierkv database (IDENTITY, CURRENT or
 * the first MANIFEST). */
static int check_dir(const char *dir)
{
    struct stat sb;
    if (stat(dir, &sb) != 0) {
        if (errno == ENOENT) return tkv_err(TKV_INVALID, "tkv_verify: database %s does not exist", dir);
        return tkv_err_errno(errno, "tkv_verify: stat %s", dir);
    }
    if (!S_ISDIR(sb.st_mode)) return tkv_err(TKV_INVALID, "tkv_verify: %s is not a directory", dir);
    static const char *const names[] = {"IDENTITY", "CURRENT", "MANIFEST-000001"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        if (access(path, F_OK) == 0) return 0;
    }
    return tkv_err(TKV_INVALID, "tkv_verify: %s holds no tierkv database", dir);
}

/* report_text -- the report (format: tierkv.h, tkv_verify); NULL on out of
 * memory. */
static char *report_text(verify_ctx *v)
{
    tkv_buf b = {0};
    int oom = v->oom;
    buf_appendf(&b, &oom, "verify: dir=%s problems=%llu notes=%llu\n", v->dir, (unsigned long long)v->problems,
                (unsigned long long)v->notes);
    if (v->vs) {
        const version *cur = vset_current(v->vs);
        size_t files = 0;
        for (int l = 0; l < VERSION_LEVELS; l++) files += cur->nfiles[l];
        buf_appendf(&b, &oom, "manifest: file=%s records=%llu ssts=%zu rows=%zu log_number=%llu last_seq=%llu\n",
                    v->manifest, (unsigned long long)v->manifest_records, files, cur->nrows,
                    (unsigned long long)vset_log_number(v->vs), (unsigned long long)vset_last_seq(v->vs));
    } else {
        buf_appendf(&b, &oom, "manifest: none read\n");
    }
    buf_appendf(&b, &oom, "wal: files=%llu records=%llu payload_bytes=%llu\n", (unsigned long long)v->wal_files,
                (unsigned long long)v->wal_records, (unsigned long long)v->wal_bytes);
    buf_appendf(&b, &oom, "sst: files=%llu data_blocks=%llu entries=%llu\n", (unsigned long long)v->sst_files,
                (unsigned long long)v->sst_blocks, (unsigned long long)v->sst_entries);
    if (v->pool_checked)
        buf_appendf(&b, &oom, "pool: file=%s rows=%llu pages=%llu entries=%llu\n", v->pool_path,
                    (unsigned long long)v->pool_rows, (unsigned long long)v->pool_pages,
                    (unsigned long long)v->row_entries);
    else buf_appendf(&b, &oom, "pool: none%s%s\n", v->pool_path[0] ? " read: " : "", v->pool_path);
    if (!oom && v->problem_lines.len) oom = buf_append(&b, v->problem_lines.data, v->problem_lines.len) < 0;
    if (v->problems > VERIFY_MAX_LISTED)
        buf_appendf(&b, &oom, "problem: ... and %llu more\n", (unsigned long long)(v->problems - VERIFY_MAX_LISTED));
    if (!oom && v->note_lines.len) oom = buf_append(&b, v->note_lines.data, v->note_lines.len) < 0;
    if (v->notes > VERIFY_MAX_LISTED)
        buf_appendf(&b, &oom, "note: ... and %llu more\n", (unsigned long long)(v->notes - VERIFY_MAX_LISTED));
    char nul = '\0';
    if (!oom) oom = buf_append(&b, &nul, 1) < 0;
    if (oom) {
        buf_free(&b);
        return NULL;
    }
    return (char *)b.data; /* tkv_free'd by the caller */
}

/* run_checks -- the four checks in order; 0, TKV_BUSY or TKV_NO_MEMORY. */
static int run_checks(verify_ctx *v)
{
    TKV_TRY(verify_manifest(v));
    TKV_TRY(verify_wals(v));
    TKV_TRY(verify_ssts(v));
    return verify_pool(v);
}

int tkv_verify(const char *dir, const tkv_options *opts, char **report)
{
    if (report) *report = NULL;
    if (!dir || !*dir) return tkv_err(TKV_INVALID, "tkv_verify: %s directory", dir ? "empty" : "NULL");
    TKV_TRY(check_dir(dir));
    struct tkv_options *defaults = NULL;
    if (!opts) {
        if (!(defaults = malloc(sizeof *defaults))) return tkv_err(TKV_NO_MEMORY, "out of memory");
        options_init_defaults(defaults);
    }
    int lock_fd;
    int rc = lock_shared(dir, &lock_fd);
    if (rc < 0) {
        free(defaults);
        return rc;
    }
    verify_ctx v = {.dir = dir, .opts = opts ? opts : defaults};
    rc = run_checks(&v);
    char *text = rc == 0 ? report_text(&v) : NULL;
    if (rc == 0 && !text) rc = tkv_err(TKV_NO_MEMORY, "out of memory writing the report of tkv_verify");
    if (v.vs) vset_close(v.vs);
    buf_free(&v.problem_lines);
    buf_free(&v.note_lines);
    if (lock_fd >= 0) close(lock_fd);
    free(defaults);
    if (rc < 0) return rc; /* tkv_errmsg() says why */
    if (report) *report = text;
    else free(text);
    if (v.problems == 0) {
        tkv_err_clear();
        return TKV_OK;
    }
    return tkv_err(v.status, "tkv_verify %s: %llu problem%s; the first: %s", dir, (unsigned long long)v.problems,
                   v.problems == 1 ? "" : "s", v.first);
}
