// SPDX-License-Identifier: Apache-2.0
/*
 * mx_open.c -- opening the matrix container: the pool, reconciling its rows
 * with the MANIFEST, the registry of open row handles, closing (mx.h;
 * the container's invariants are in mx_int.h).
 */
#include "db/mx_int.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db/silk_pmem.h"
#include "util/status.h"

size_t mx_row_dram(const rowtable *r)
{
    rowtable_props pr;
    rowtable_get_props(r, &pr);
    return pr.dram_bytes;
}

int mx_reg_add(struct mx_state *mx, rowtable *r)
{
    if (mx->nrows == mx->cap) {
        size_t cap = mx->cap ? mx->cap * 2 : 32;
        rowtable **p = realloc(mx->rows, cap * sizeof *p);
        if (!p) return tkv_err(TKV_NO_MEMORY, "out of memory registering a row");
        mx->rows = p;
        mx->cap = cap;
    }
    size_t i = mx->nrows++;
    while (i > 0 && rowtable_id(mx->rows[i - 1]) > rowtable_id(r)) { /* recovery may add out of order */
        mx->rows[i] = mx->rows[i - 1];
        i--;
    }
    mx->rows[i] = r;
    __atomic_store_n(&mx->dram_bytes, mx->dram_bytes + mx_row_dram(r), __ATOMIC_RELAXED); /* read without mu */
    return 0;
}

int mx_cursor_in(const version *v, const rowtable *r, uint32_t *c)
{
    uint64_t cur;
    if (!version_row_cursor(v, rowtable_id(r), &cur) || cur > rowtable_count(r))
        return tkv_err(TKV_CORRUPTION, "row %llu is read in a view whose version does not list it (internal error)",
                       (unsigned long long)rowtable_id(r));
    *c = (uint32_t)cur;
    return 0;
}

/* writeback_admit -- the pool write-back thread's admission (pmem.h): a
 * chunk of flush output through the scheduler's gate (rate limiter,
 * emulated SSD throttle), counted as flush bytes written, which the SILK
 * monitor sees. Returns the gate's error. */
static int writeback_admit(void *arg, size_t n)
{
    tkv_db *db = arg;
    if (db->io.gate) {
        int rc = db->io.gate(db->io.gate_arg, IO_FLUSH, 1, n);
        if (rc < 0) return rc;
    }
    __atomic_fetch_add(&db->io.write_bytes[IO_FLUSH], (uint64_t)n, __ATOMIC_RELAXED);
    return 0;
}

/* open_pool -- opens (or creates) the pool file, starts its paced
 * write-back, checks that it holds MX_MIN_MEMTABLES_PER_POOL memtables and
 * sets the column size. *created: the pool file was made now. */
static int open_pool(tkv_db *db, struct mx_state *mx, size_t manifest_rows, int *created)
{
    int exists = access(mx->path, F_OK) == 0;
    if (!exists && manifest_rows)
        return tkv_err(TKV_CORRUPTION, "the MANIFEST of %s lists %zu rows but the pmem pool %s is missing", db->dir,
                       manifest_rows, mx->path);
    uint64_t size = db->opts.pmem_size ? db->opts.pmem_size : exists ? 0 : MX_DEFAULT_POOL_SIZE;
    TKV_TRY(pool_open(mx->path, size, (pm_mode)db->opts.pmem_mode, (pm_profile)db->opts.emul_profile, NULL, &mx->pool,
                      created));
    pool_set_row_compression(mx->pool, db->opts.row_compression);
    if (db->opts.pmem_writeback) /* a no-op unless emulated pmem on a disk (pmem.h) */
        TKV_TRY(pm_writeback_start(pool_region(mx->pool), writeback_admit, db, db->opts.pmem_writeback, 0,
                                   db->opts.bytes_per_sync));
    pool_stats st;
    pool_get_stats(mx->pool, &st);
    uint64_t usable = (uint64_t)st.pages_total * st.page_size;
    if (usable < MX_MIN_MEMTABLES_PER_POOL * db->opts.memtable_size)
        return tkv_err(TKV_INVALID,
                       "pmem pool %s has %llu bytes of pages; it must hold at least %d memtables of memtable_size=%llu "
                       "(raise pmem_size or lower memtable_size)",
                       mx->path, (unsigned long long)usable, MX_MIN_MEMTABLES_PER_POOL,
                       (unsigned long long)db->opts.memtable_size);
    /* the next row (one memtable's worth of pages) made resident while the
     * memtable it will come from fills */
    pool_prefault_ahead(mx->pool, db->opts.memtable_size);
    mx->column_bytes = db->opts.column_bytes ? db->opts.column_bytes : st.pool_size / 16;
    if (mx->column_bytes < st.page_size) mx->column_bytes = st.page_size;
    /* the scheduler's pmem tier: its bandwidth from the pool's device */
    pm_region *reg = pool_region(mx->pool);
    return silk_pmem_open(db, pm_profile_write_bw(pm_profile_in_use(reg)), pm_mode_in_use(reg) == PM_PMEM);
}

/* open_pool_readonly -- read_only=1: the existing pool mapped read-only
 * under a shared lock (pool_open_readonly: nothing formatted, reserved or
 * given back, no thread). *none when there is no pool to read -- no file,
 * or one whose creation was cut short -- and the MANIFEST lists no rows:
 * then the database has no rows to read. */
static int open_pool_readonly(tkv_db *db, struct mx_state *mx, size_t manifest_rows, int *none)
{
    *none = 0;
    int exists = access(mx->path, F_OK) == 0;
    int rc = exists ? pool_open_readonly(mx->path, &mx->pool) : 1;
    if (rc < 0) return rc;
    if (rc == 1 && manifest_rows)
        return tkv_err(TKV_CORRUPTION, "the MANIFEST of %s lists %zu rows but the pmem pool %s is %s", db->dir,
                       manifest_rows, mx->path, exists ? "unformatted" : "missing");
    if (rc == 1) {
        *none = 1;
        return 0;
    }
    pool_stats st;
    pool_get_stats(mx->pool, &st);
    if (db->opts.pmem_size && db->opts.pmem_size != st.pool_size)
        return tkv_err(TKV_INVALID, "pmem pool %s has %llu bytes, not pmem_size=%llu", mx->path,
                       (unsigned long long)st.pool_size, (unsigned long long)db->opts.pmem_size);
    mx->column_bytes = db->opts.column_bytes ? db->opts.column_bytes : st.pool_size / 16;
    return 0;
}

/* claim_pool -- the pool must be this database's: reconciling another
 * database's pool with our MANIFEST would drop its rows. The MANIFEST
 * records the uuid of the pool it uses (from the first open with
 * l0=matrix on); a pool never recorded is claimed by logging its uuid
 * (not by a read-only handle, which logs nothing). */
static int claim_pool(tkv_db *db, struct mx_state *mx, size_t pool_rows, int created)
{
    version *v = vset_current(db->vs);
    uint8_t known[16];
    int has_known = vset_pool_uuid(db->vs, known);
    const uint8_t *uuid = pool_uuid(mx->pool);
    if (has_known && memcmp(known, uuid, 16) != 0 && !(created && v->nrows == 0))
        return tkv_err(TKV_INVALID,
                       "pmem pool %s belongs to another database (its uuid differs from the one the MANIFEST of %s "
                       "records); nothing was changed -- set pmem_path to this database's pool",
                       mx->path, db->dir);
    if (!has_known && pool_rows > v->nrows)
        return tkv_err(TKV_INVALID,
                       "pmem pool %s holds %zu rows that database %s never recorded: it belongs to another database; "
                       "nothing was changed -- set pmem_path to this database's pool",
                       mx->path, pool_rows, db->dir);
    if ((has_known && memcmp(known, uuid, 16) == 0) || db->opts.read_only) return 0;
    version_edit e;
    edit_init(&e);
    e.has_pool_uuid = 1;
    memcpy(e.pool_uuid, uuid, 16);
    int rc = vset_log_and_apply(db->vs, &e);
    edit_free(&e);
    return rc;
}

/* reconcile_row -- one committed row of the pool: dropped if the MANIFEST
 * does not list it (a flush cut short before its edit -- its WAL is still
 * replayed -- or a drained row not yet dropped); else opened, registered,
 * set to the MANIFEST's cursor, and its pages below the cursor released.
 * A read-only handle leaves the pool as it is: an unlisted row is ignored
 * (its data is in the WAL, or in L1) and no page is released. */
static int reconcile_row(tkv_db *db, struct mx_state *mx, const pool_row_id *prow)
{
    version *v = vset_current(db->vs);
    uint64_t cur;
    vset_mark_file_number_used(db->vs, prow->row_id); /* row ids are never reused */
    if (!version_row_cursor(v, prow->row_id, &cur)) {
        if (db->opts.read_only) return 0;
        int rc = pool_drop_row(mx->pool, prow->slot);
        if (rc == 0) ctr_add(&mx->ctr.rows_dropped, 1);
        return rc;
    }
    rowtable *r;
    TKV_TRY(rowtable_open(mx->pool, prow->slot, &r));
    int rc = mx_reg_add(mx, r);
    if (rc < 0) {
        rowtable_close(r);
        return rc;
    }
    rc = rowtable_set_cursor(r, (uint32_t)(cur > rowtable_count(r) ? rowtable_count(r) : cur));
    if (rc == 0 && cur > rowtable_count(r))
        rc = tkv_err(TKV_CORRUPTION, "pool %s: row %llu has %u entries but the MANIFEST cursor is %llu", mx->path,
                     (unsigned long long)prow->row_id, rowtable_count(r), (unsigned long long)cur);
    uint32_t released = 0;
    if (rc == 0 && !db->opts.read_only) rc = rowtable_release_dead_pages(r, &released);
    ctr_add(&mx->ctr.pages_released, released);
    return rc;
}

/* record_pool -- <dir>/POOL (MX_POOL_FILE) names the pool file (absolute
 * path) and its uuid, so that tkv_destroy finds a pool kept outside the
 * directory (pmem_path). Rewritten, atomically, only when it changes. */
static int record_pool(tkv_db *db, struct mx_state *mx)
{
    char *abs = realpath(mx->path, NULL);
    if (!abs) return tkv_err_errno(errno, "realpath of pmem pool %s", mx->path);
    char text[PATH_MAX + 64];
    int n = snprintf(text, sizeof text, "tierkv pool\npath=%s\nuuid=", abs);
    free(abs);
    const uint8_t *u = pool_uuid(mx->pool);
    for (int i = 0; i < 16 && n > 0 && (size_t)n + 3 < sizeof text; i++) n += snprintf(text + n, 3, "%02x", u[i]);
    if (n <= 0 || (size_t)n + 2 > sizeof text) return tkv_err(TKV_INVALID, "pmem pool path %s is too long", mx->path);
    text[n++] = '\n';
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/" MX_POOL_FILE, db->dir);
    uint8_t *old = NULL;
    size_t len = 0;
    int same = io_read_file(path, IO_META, &db->io, &old, &len) == 0 && len == (size_t)n && !memcmp(old, text, len);
    free(old);
    return same ? 0 : io_write_file_atomic(db->dir, MX_POOL_FILE, text, (size_t)n, &db->io);
}

/* mx_recorded_pool -- parses <dir>/POOL (record_pool writes it). */
int mx_recorded_pool(const char *dir, char *path, size_t n, uint8_t uuid[16])
{
    char file[PATH_MAX];
    snprintf(file, sizeof file, "%s/" MX_POOL_FILE, dir);
    uint8_t *data = NULL;
    size_t len = 0;
    if (io_read_file(file, IO_META, NULL, &data, &len) < 0) return 0;
    char *text = realloc(data, len + 1);
    if (!text) {
        free(data);
        return 0;
    }
    text[len] = '\0';
    char *p = strstr(text, "\npath="), *u = strstr(text, "\nuuid=");
    int ok = p && u;
    if (ok) {
        p += 6;
        size_t plen = strcspn(p, "\n");
        ok = plen > 0 && plen < n;
        if (ok) snprintf(path, n, "%.*s", (int)plen, p);
    }
    for (int i = 0; ok && i < 16; i++) ok = sscanf(u + 6 + 2 * i, "%2hhx", &uuid[i]) == 1;
    free(text);
    return ok;
}

int mx_open(tkv_db *db)
{
    version *v = vset_current(db->vs);
    if (db->opts.l0 != L0_MATRIX) {
        if (v->nrows)
            return tkv_err(TKV_INVALID,
                           "database %s keeps %zu rows in its matrix container; open it with l0=matrix "
                           "(tkv_compact_range under l0=matrix moves them to the SSD tree)",
                           db->dir, v->nrows);
        return 0;
    }
    struct mx_state *mx = calloc(1, sizeof *mx);
    if (!mx) return tkv_err(TKV_NO_MEMORY, "out of memory");
    db->mx = mx; /* freed by mx_close, also after a failed open */
    mx->path = options_pmem_path(&db->opts, db->dir);
    if (!mx->path) return tkv_err(TKV_NO_MEMORY, "out of memory");
    int created = 0, none = 0;
    if (db->opts.read_only) TKV_TRY(open_pool_readonly(db, mx, v->nrows, &none));
    else TKV_TRY(open_pool(db, mx, v->nrows, &created));
    if (none) { /* read-only, no pool and no rows: nothing to read (mx.h: as with l0=sst) */
        mx_close(db);
        return 0;
    }
    pool_row_id *prow;
    size_t np;
    TKV_TRY(pool_rows(mx->pool, &prow, &np));
    int rc = claim_pool(db, mx, np, created);
    if (rc == 0 && !db->opts.read_only) rc = record_pool(db, mx);
    for (size_t i = 0; i < np && rc == 0; i++) rc = reconcile_row(db, mx, &prow[i]);
    free(prow);
    if (rc < 0) return rc;
    v = vset_current(db->vs);
    for (size_t i = 0; i < v->nrows; i++) {
        int found = 0;
        for (size_t j = 0; j < mx->nrows && !found; j++) found = rowtable_id(mx->rows[j]) == v->rows[i].row_id;
        if (!found)
            return tkv_err(TKV_CORRUPTION, "the MANIFEST of %s lists row %llu, which pmem pool %s does not hold",
                           db->dir, (unsigned long long)v->rows[i].row_id, mx->path);
    }
    return 0;
}

uint64_t mx_planned_pool_size(const struct tkv_options *o, const char *dir)
{
    if (o->l0 != L0_MATRIX) return 0;
    if (o->pmem_size) return o->pmem_size;
    char *path = options_pmem_path(o, dir);
    struct stat st;
    uint64_t size = path && stat(path, &st) == 0 && st.st_size > 0 ? (uint64_t)st.st_size : MX_DEFAULT_POOL_SIZE;
    free(path);
    return size;
}

uint64_t mx_pool_size(tkv_db *db)
{
    if (!db->mx || !db->mx->pool) return 0;
    pool_stats st;
    pool_get_stats(db->mx->pool, &st);
    return st.pool_size;
}

rowset *mx_initial_rowset(tkv_db *db, int *rc)
{
    struct mx_state *mx = db->mx;
    *rc = 0;
    if (!mx) return NULL;
    rowtable **tmp = calloc(mx->nrows ? mx->nrows : 1, sizeof *tmp);
    rowset *rs = NULL;
    if (tmp) {
        for (size_t i = 0; i < mx->nrows; i++) tmp[i] = mx->rows[mx->nrows - 1 - i];
        rs = rowset_new(tmp, mx->nrows);
        free(tmp);
    }
    if (!rs) *rc = tkv_err(TKV_NO_MEMORY, "out of memory");
    return rs;
}

int mx_close(tkv_db *db)
{
    struct mx_state *mx = db->mx;
    if (!mx) return 0;
    for (size_t i = 0; i < mx->nrows; i++) rowtable_close(mx->rows[i]);
    free(mx->rows);
    int rc = pool_close(mx->pool);
    free(mx->path);
    free(mx);
    db->mx = NULL;
    return rc;
}
