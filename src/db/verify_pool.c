// SPDX-License-Identifier: Apache-2.0
/*
 * verify_pool.c -- tkv_verify's check of the pmem pool (verify.h): the
 * header, the directory, every committed row (pool_open_readonly verifies
 * each row header and that no page is owned twice; rowtable_open the
 * RowTable's fields, page checksums and metadata; an iteration every live
 * entry), and the pool's agreement with the MANIFEST: the same uuid, every
 * listed row present, every cursor possible. The pool is mapped read-only
 * under a shared lock (docs/pmem.md, "The pool file lock").
 */
#include "db/verify.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/mx.h"
#include "matrix/pool.h"
#include "matrix/rowtable.h"
#include "util/status.h"

/* find_pool -- where the pool is: pmem_path when set (as tkv_open decides);
 * else <dir>/matrix.pmem if it exists; else the file <dir>/POOL records (a
 * pool kept elsewhere with pmem_path) if it exists; else none (""). A copy
 * of a database directory thus verifies its own matrix.pmem, not the pool
 * of the directory it was copied from. */
static void find_pool(verify_ctx *v)
{
    char path[PATH_MAX];
    uint8_t uuid[16];
    v->pool_path[0] = '\0';
    if (v->opts->pmem_path[0]) {
        snprintf(v->pool_path, sizeof v->pool_path, "%s", v->opts->pmem_path);
        return;
    }
    snprintf(path, sizeof path, "%s/matrix.pmem", v->dir);
    if (access(path, F_OK) == 0 || (mx_recorded_pool(v->dir, path, sizeof path, uuid) && access(path, F_OK) == 0))
        snprintf(v->pool_path, sizeof v->pool_path, "%s", path);
    tkv_err_clear(); /* a missing POOL file is no error */
}

/* corrupt -- records TKV_CORRUPTION with a printf-style message. */
__attribute__((format(printf, 2, 3))) static void corrupt(verify_ctx *v, const char *fmt, ...)
{
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    tkv_err(TKV_CORRUPTION, "%s", msg);
    verify_problem(v, TKV_CORRUPTION, NULL);
}

/* check_owner -- the pool must be this database's (claim_pool's rule in
 * mx_open.c): 1 if it is (or cannot be told apart), 0 if it belongs to
 * another database (then its rows are not compared with the MANIFEST). */
static int check_owner(verify_ctx *v, pool *p, size_t pool_rows)
{
    uint8_t known[16];
    const version *cur = vset_current(v->vs);
    if (vset_pool_uuid(v->vs, known)) {
        if (memcmp(known, pool_uuid(p), 16) == 0) return 1;
        corrupt(v, "pmem pool %s belongs to another database: its uuid differs from the one %s records", v->pool_path,
                v->manifest);
        return 0;
    }
    if (pool_rows > cur->nrows) {
        corrupt(v,
                "pmem pool %s holds %zu rows and %s, which records no pool uuid, lists %zu: it belongs to another "
                "database",
                v->pool_path, pool_rows, v->manifest, cur->nrows);
        return 0;
    }
    return 1;
}

/* check_entries -- iterates the live entries [cursor, n) of row r: strictly
 * increasing internal keys of a known type, sequence numbers inside the
 * row's range, and as many as the row says. 0 or TKV_NO_MEMORY. */
static int check_entries(verify_ctx *v, rowtable *r, uint32_t cursor, const rowtable_props *pr)
{
    tkv_it *it = rowtable_iter_at(r, cursor);
    if (!it) return tkv_err(TKV_NO_MEMORY, "out of memory iterating row %llu", (unsigned long long)pr->row_id);
    tkv_buf prev = {0};
    uint64_t n = 0;
    int rc = 0;
    const char *bad = NULL;
    for (it_seek_first(it); !bad && rc == 0 && it_valid(it); it_next(it), n++) {
        tkv_slice k = it_key(it);
        uint64_t seq = ikey_seq(k);
        if (n && ikey_cmp(slice(prev.data, prev.len), k) >= 0) bad = "keys out of order";
        else if (ikey_get_type(k) > IKEY_VALUE) bad = "an entry of unknown type";
        else if (seq < pr->min_seq || seq > pr->max_seq) bad = "a sequence number outside the row's range";
        prev.len = 0;
        rc = buf_append(&prev, k.p, k.n);
    }
    if (!bad && rc == 0 && it_status(it) < 0) verify_problem(v, it_status(it), v->pool_path);
    else if (!bad && rc == 0 && n != pr->entries - cursor) bad = "fewer entries than its header says";
    if (bad)
        corrupt(v, "pool %s: row %llu (directory slot %u): corrupt RowTable: %s (entry %llu)", v->pool_path,
                (unsigned long long)pr->row_id, pr->slot, bad, (unsigned long long)(cursor + n - 1));
    it_destroy(it);
    buf_free(&prev);
    v->row_entries += n;
    return rc;
}

/* check_row -- one committed row: opened and verified in full, its cursor
 * against the MANIFEST's (when the pool is this database's), its live
 * entries iterated. 0 or TKV_NO_MEMORY. */
static int check_row(verify_ctx *v, pool *p, const pool_row_id *prow, int compare)
{
    rowtable *r;
    int rc = rowtable_open(p, prow->slot, &r);
    if (rc < 0) {
        verify_problem(v, rc, v->pool_path);
        return rc == TKV_NO_MEMORY ? rc : 0;
    }
    rowtable_props pr;
    rowtable_get_props(r, &pr);
    v->pool_rows++;
    v->pool_pages += pr.pages - pr.pages_released;
    uint64_t cursor = pr.min_cursor, c;
    if (compare && !version_row_cursor(vset_current(v->vs), pr.row_id, &c)) {
        verify_note(v,
                    "pool %s: row %llu (directory slot %u) is not in %s: a flush cut short before its MANIFEST "
                    "edit, or a drained row not yet dropped (the next open drops it)",
                    v->pool_path, (unsigned long long)pr.row_id, pr.slot, v->manifest);
    } else if (compare && c > pr.entries) {
        corrupt(v, "pool %s: row %llu has %u entries but %s puts its cursor at %llu", v->pool_path,
                (unsigned long long)pr.row_id, pr.entries, v->manifest, (unsigned long long)c);
    } else if (compare && c < pr.min_cursor) {
        corrupt(v, "pool %s: row %llu has released the pages of its entries below %u, but %s puts its cursor at %llu",
                v->pool_path, (unsigned long long)pr.row_id, pr.min_cursor, v->manifest, (unsigned long long)c);
    } else if (compare) {
        cursor = c;
    }
    rc = check_entries(v, r, (uint32_t)cursor, &pr);
    rowtable_close(r);
    return rc;
}

/* check_listed -- every row the MANIFEST lists is in the pool. */
static void check_listed(verify_ctx *v, const pool_row_id *rows, size_t n)
{
    const version *cur = vset_current(v->vs);
    for (size_t i = 0; i < cur->nrows; i++) {
        size_t j = 0;
        while (j < n && rows[j].row_id != cur->rows[i].row_id) j++;
        if (j == n)
            corrupt(v, "%s lists row %llu, which pmem pool %s does not hold", v->manifest,
                    (unsigned long long)cur->rows[i].row_id, v->pool_path);
    }
}

/* open_pool -- opens the pool read-only; *p NULL when there is nothing to
 * check (reported or noted). 0, TKV_BUSY or TKV_NO_MEMORY. */
static int open_pool(verify_ctx *v, size_t listed_rows, pool **p)
{
    *p = NULL;
    if (!v->pool_path[0]) {
        if (listed_rows)
            corrupt(v,
                    "%s lists %zu rows but the pmem pool %s/matrix.pmem is missing (set pmem_path if the pool is "
                    "elsewhere)",
                    v->manifest, listed_rows, v->dir);
        return 0;
    }
    int rc = pool_open_readonly(v->pool_path, p);
    if (rc == TKV_BUSY || rc == TKV_NO_MEMORY) return rc;
    if (rc == 1 && listed_rows)
        corrupt(v, "pmem pool %s has no header, but %s lists %zu rows in it", v->pool_path, v->manifest, listed_rows);
    else if (rc == 1)
        verify_note(v, "pmem pool %s was never formatted (its creation was cut short; the next open formats it)",
                    v->pool_path);
    else if (rc < 0) verify_problem(v, rc, v->pool_path);
    return 0;
}

int verify_pool(verify_ctx *v)
{
    find_pool(v);
    pool *p;
    TKV_TRY(open_pool(v, v->vs ? vset_current(v->vs)->nrows : 0, &p));
    if (!p) return 0;
    v->pool_checked = 1;
    pool_row_id *rows;
    size_t n;
    int rc = pool_rows(p, &rows, &n);
    int compare = rc == 0 && v->vs && check_owner(v, p, n);
    for (size_t i = 0; i < n && rc == 0; i++) rc = check_row(v, p, &rows[i], compare);
    if (rc == 0 && compare) check_listed(v, rows, n);
    free(rows);
    pool_close(p); /* read-only: no msync, nothing to report */
    return rc;
}
