/*
 * mx.c -- the matrix container inside the database (l0=matrix): pool and
 * MANIFEST reconciled at open, flush into RowTables, reads over rows, the
 * column-compaction thread, reclaiming pages and rows (interface: mx.h).
 *
 * Invariants:
 *  (1) A view is a superversion and the version pinned with it, both taken
 *      under db->mu (db_get_view). The rows a view reads are the rowset of
 *      its superversion, at the cursors its version records. Every edit that
 *      changes which rows exist (a flush adds one; a column removes the rows
 *      it drains) is logged and its version installed in the same mu
 *      critical section as the superversion with the matching rowset, so a
 *      pinned pair always agrees: a reader holding the old pair sees a
 *      column's entries in the rows, one holding the new pair sees them in
 *      L1 -- never neither.
 *  (2) A row's own cursor (rowtable_set_cursor) is the smallest cursor any
 *      live version has for it (vset_row_floor); readers pass their view's
 *      cursor, which is never below it. Pages below the own cursor are
 *      released only when it rises -- after the MANIFEST edit carrying the
 *      higher cursor is synced (vset_log_and_apply syncs before it installs)
 *      -- so a crash never finds a released page that its MANIFEST cursor
 *      still covers.
 *  (3) A row is dropped (slot cleared, then its pages freed) once no live
 *      version lists it; until then its handle stays open.
 *  (4) The compactor is the oldest rows (ids <= compactor_max_id; row ids
 *      grow with age). Moving their entries to L1 never leaves an older
 *      version of a key in L0 above a newer one in L1.
 *  (5) Columns run one at a time, each ending every compactor row on a
 *      user-key change (matrix/column.h), so cursors stay aligned.
 *
 * Persist order of a flush (a crash at any point loses nothing):
 *   (1) data and metadata, (2) row header, (3) directory slot -- the row
 *       exists (rowtable_build_at + rowtable_commit);
 *   (4) MANIFEST edit {row cursor 0, log number past the memtable's WAL},
 *       synced -- the commit point of the flush;
 *   (5) WAL files below the log number are deleted.
 *   A crash between (3) and (4) leaves a row the MANIFEST does not list:
 *   mx_open drops it, and the WAL (still covered) is replayed.
 * Persist order of a column:
 *   (1) output SSTs written, synced, directory synced (compact_merge);
 *   (2) MANIFEST edit {L1 inputs deleted, outputs added, each compactor
 *       row's cursor set -- or the row removed when drained}, synced -- the
 *       commit point;
 *   (3) mx_collect: release bits of the pages below the new floors, slot
 *       removal of drained rows. A crash before (3) is finished by mx_open
 *       (re-applied cursors, dropped rows).
 */
#include "db/mx.h"
#include "db/silk.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/compact.h"
#include "matrix/column.h"
#include "util/status.h"

#define DEFAULT_POOL_SIZE (UINT64_C(1) << 30)
/* The pool must hold this many memtables, so that a compactor and a
 * receiver fit (and a single row always fits in an empty pool). */
#define MIN_MEMTABLES_PER_POOL 4
#define RETRY_MIN_US 10000u
#define RETRY_MAX_US 2000000u
#define IDLE_WAIT_US 100000u
/* Column failures after which a shutdown stops waiting for room. */
#define SHUTDOWN_GIVE_UP 3

/* ------------------------------------------------------------ rowsets */

rowset *rowset_new(rowtable *const *rows, size_t n)
{
    rowset *rs = calloc(1, sizeof *rs);
    if (!rs) return NULL;
    rs->rows = calloc(n ? n : 1, sizeof *rs->rows);
    if (!rs->rows) {
        free(rs);
        return NULL;
    }
    if (n) memcpy(rs->rows, rows, n * sizeof *rows);
    rs->n = n;
    rs->refs = 1;
    return rs;
}

rowset *rowset_ref(rowset *rs)
{
    if (rs) __atomic_fetch_add(&rs->refs, 1, __ATOMIC_RELAXED);
    return rs;
}

void rowset_unref(rowset *rs)
{
    if (!rs || __atomic_sub_fetch(&rs->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    free(rs->rows);
    free(rs);
}

/* ------------------------------------------------------------ the registry of row handles */

/* reg_add -- registers an open row handle (ids only grow: appended last). */
static int reg_add(matrix_state *mx, rowtable *r)
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
    return 0;
}

/* current_rows -- the current rowset (never NULL with l0=matrix). */
static rowset *current_rows(tkv_db *db) { return db->sv->rows; }

/* cursor_in -- row r's cursor in version v (TKV_CORRUPTION if v does not
 * list it: invariant 1 broken). */
static int cursor_in(const version *v, const rowtable *r, uint32_t *c)
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

/* ------------------------------------------------------------ open / close */

int mx_open(tkv_db *db)
{
    matrix_state *mx = &db->mx;
    version *v = vset_current(db->vs);
    if (db->opts.l0 != L0_MATRIX) {
        if (v->nrows)
            return tkv_err(TKV_INVALID,
                           "database %s keeps %zu rows in its matrix container; open it with l0=matrix "
                           "(tkv_compact_range under l0=matrix moves them to the SSD tree)",
                           db->dir, v->nrows);
        return 0;
    }
    mx->path = options_pmem_path(&db->opts, db->dir);
    if (!mx->path) return tkv_err(TKV_NO_MEMORY, "out of memory");
    int exists = access(mx->path, F_OK) == 0;
    if (!exists && v->nrows)
        return tkv_err(TKV_CORRUPTION, "the MANIFEST of %s lists %zu rows but the pmem pool %s is missing", db->dir,
                       v->nrows, mx->path);
    uint64_t size = db->opts.pmem_size ? db->opts.pmem_size : exists ? 0 : DEFAULT_POOL_SIZE;
    int created = 0;
    TKV_TRY(pool_open(mx->path, size, (pm_mode)db->opts.pmem_mode, (pm_profile)db->opts.emul_profile, NULL, &mx->pool,
                      &created));
    if (db->opts.pmem_writeback) /* a no-op unless emulated pmem on a disk (pmem.h) */
        TKV_TRY(pm_writeback_start(pool_region(mx->pool), writeback_admit, db, db->opts.pmem_writeback, 0,
                                   db->opts.bytes_per_sync));
    pool_stats st;
    pool_get_stats(mx->pool, &st);
    uint64_t usable = (uint64_t)st.pages_total * st.page_size;
    if (usable < MIN_MEMTABLES_PER_POOL * db->opts.memtable_size)
        return tkv_err(TKV_INVALID,
                       "pmem pool %s has %llu bytes of pages; it must hold at least %d memtables of memtable_size=%llu "
                       "(raise pmem_size or lower memtable_size)",
                       mx->path, (unsigned long long)usable, MIN_MEMTABLES_PER_POOL,
                       (unsigned long long)db->opts.memtable_size);
    mx->column_bytes = db->opts.column_bytes ? db->opts.column_bytes : st.pool_size / 16;
    if (mx->column_bytes < st.page_size) mx->column_bytes = st.page_size;

    pool_row_id *prow;
    size_t np;
    TKV_TRY(pool_rows(mx->pool, &prow, &np));
    /* The pool must be this database's: reconciling another database's pool
     * with our MANIFEST would drop its rows. The MANIFEST records the uuid of
     * the pool it uses (from the first open with l0=matrix on). */
    uint8_t known[16];
    int has_known = vset_pool_uuid(db->vs, known);
    const uint8_t *uuid = pool_uuid(mx->pool);
    if (has_known && memcmp(known, uuid, 16) != 0 && !(created && v->nrows == 0)) {
        free(prow);
        return tkv_err(TKV_INVALID,
                       "pmem pool %s belongs to another database (its uuid differs from the one the MANIFEST of %s "
                       "records); nothing was changed -- set pmem_path to this database's pool",
                       mx->path, db->dir);
    }
    if (!has_known && np > v->nrows) {
        free(prow);
        return tkv_err(TKV_INVALID,
                       "pmem pool %s holds %zu rows that database %s never recorded: it belongs to another database; "
                       "nothing was changed -- set pmem_path to this database's pool",
                       mx->path, np, db->dir);
    }
    if (!has_known || memcmp(known, uuid, 16) != 0) {
        version_edit e;
        edit_init(&e);
        e.has_pool_uuid = 1;
        memcpy(e.pool_uuid, uuid, 16);
        int lrc = vset_log_and_apply(db->vs, &e);
        edit_free(&e);
        if (lrc < 0) {
            free(prow);
            return lrc;
        }
        v = vset_current(db->vs);
    }
    int rc = 0;
    for (size_t i = 0; i < np && rc == 0; i++) {
        uint64_t cur;
        vset_mark_file_number_used(db->vs, prow[i].row_id); /* row ids are never reused */
        if (!version_row_cursor(v, prow[i].row_id, &cur)) {
            /* Committed in the pool, unknown to the MANIFEST: a flush cut
             * short before its edit (its WAL is still replayed) or a drained
             * row not yet dropped. */
            rc = pool_drop_row(mx->pool, prow[i].slot);
            if (rc == 0) ctr_add(&mx->ctr.rows_dropped, 1);
            continue;
        }
        rowtable *r;
        rc = rowtable_open(mx->pool, prow[i].slot, &r);
        if (rc < 0) break;
        rc = reg_add(mx, r);
        if (rc < 0) {
            rowtable_close(r);
            break;
        }
        rc = rowtable_set_cursor(r, (uint32_t)(cur > rowtable_count(r) ? rowtable_count(r) : cur));
        if (rc == 0 && cur > rowtable_count(r))
            rc = tkv_err(TKV_CORRUPTION, "pool %s: row %llu has %u entries but the MANIFEST cursor is %llu", mx->path,
                         (unsigned long long)prow[i].row_id, rowtable_count(r), (unsigned long long)cur);
        uint32_t released = 0;
        if (rc == 0) rc = rowtable_release_dead_pages(r, &released);
        ctr_add(&mx->ctr.pages_released, released);
    }
    free(prow);
    if (rc < 0) return rc;
    for (size_t i = 0; i < v->nrows; i++) {
        int found = 0;
        for (size_t j = 0; j < mx->nrows && !found; j++) found = rowtable_id(mx->rows[j]) == v->rows[i].row_id;
        if (!found)
            return tkv_err(TKV_CORRUPTION, "the MANIFEST of %s lists row %llu, which pmem pool %s does not hold", db->dir,
                           (unsigned long long)v->rows[i].row_id, mx->path);
    }
    return 0;
}

rowset *mx_initial_rowset(tkv_db *db)
{
    matrix_state *mx = &db->mx;
    rowtable **tmp = calloc(mx->nrows ? mx->nrows : 1, sizeof *tmp);
    if (!tmp) return NULL;
    for (size_t i = 0; i < mx->nrows; i++) tmp[i] = mx->rows[mx->nrows - 1 - i];
    rowset *rs = rowset_new(tmp, mx->nrows);
    free(tmp);
    return rs;
}

void mx_close(tkv_db *db)
{
    matrix_state *mx = &db->mx;
    for (size_t i = 0; i < mx->nrows; i++) rowtable_close(mx->rows[i]);
    free(mx->rows);
    mx->rows = NULL;
    mx->nrows = mx->cap = 0;
    pool_close(mx->pool);
    mx->pool = NULL;
    free(mx->path);
    mx->path = NULL;
}

/* ------------------------------------------------------------ flush */

int mx_flush_one(tkv_db *db)
{
    matrix_state *mx = &db->mx;
    superversion *sv = sv_ref(db->sv);
    memtable *m = sv->imm[0];
    /* Data of WALs older than the next memtable's WAL is in this memtable or
     * already in rows / SSTs. */
    uint64_t next_log = sv->nimm > 1 ? sv->imm_wal[1] : db->wal_number;
    rowtable *r = NULL;
    int rc = 0;
    if (memtable_num_entries(m) > 0) {
        mx->rows_at_flush = mx->nrows; /* 0: the pool was empty -- NO_SPACE then means it never fits */
        uint64_t id = vset_new_file_number(db->vs);
        /* The newest row receives the forward pointers; the pinned version
         * keeps its pages from its cursor on (invariant 2). */
        version *v = vset_current(db->vs);
        version_ref(v);
        rowset *rs = current_rows(db);
        rowtable *older = rs->n ? rs->rows[0] : NULL;
        uint32_t older_cursor = 0;
        if (older) rc = cursor_in(v, older, &older_cursor);
        pthread_mutex_unlock(&db->mu);
        if (rc == 0) {
            tkv_it *it = memtable_iter(m);
            rc = it ? rowtable_build_at(mx->pool, id, it, older, older_cursor, &r) /* steps (1), (2) */
                    : tkv_err(TKV_NO_MEMORY, "out of memory flushing");
            it_destroy(it);
        }
        /* emulated pmem: the row's pages go to the pool file from now on,
         * paced (pmem.h), not in the kernel's next write-back burst */
        if (rc == 0 && db->opts.pmem_writeback) rowtable_queue_writeback(r);
        if (rc == 0 && (rc = rowtable_commit(r)) < 0) { /* step (3) */
            rowtable_abandon(r);
            r = NULL;
        }
        pthread_mutex_lock(&db->mu);
        version_unref(v);
        if (rc == TKV_NO_SPACE) {
            sv_unref(sv);
            return MX_NO_SPACE;
        }
    }
    version_edit e;
    edit_init(&e);
    if (rc == 0 && r) rc = edit_set_row_cursor(&e, rowtable_id(r), 0);
    e.has_log_number = 1;
    e.log_number = next_log;
    if (rc == 0) rc = install(db, &e); /* step (4) */
    edit_free(&e);
    rowset *nrs = NULL;
    int registered = 0;
    if (rc == 0 && r) {
        rowset *cur = current_rows(db);
        rowtable **tmp = malloc((cur->n + 1) * sizeof *tmp);
        if (tmp) {
            tmp[0] = r;
            memcpy(tmp + 1, cur->rows, cur->n * sizeof *tmp);
            nrs = rowset_new(tmp, cur->n + 1);
            free(tmp);
        }
        if (!nrs) rc = tkv_err(TKV_NO_MEMORY, "out of memory installing row %llu", (unsigned long long)rowtable_id(r));
        else if ((rc = reg_add(mx, r)) == 0) registered = 1;
    }
    /* The memtable leaves the view only together with the row entering it;
     * if this fails after the edit, reads still find the data in the
     * memtable and the database turns read-only. */
    if (rc == 0) rc = sv_replace(db, 1, nrs);
    rowset_unref(nrs);
    if (rc < 0) {
        /* The row (if committed) stays in the pool: if the edit reached the
         * MANIFEST it is recovered, else the next open drops it. */
        if (r && !registered) rowtable_close(r);
        db_set_bg_error(db, rc);
    } else {
        if (r) {
            rowtable_props pr;
            rowtable_get_props(r, &pr);
            ctr_add(&mx->ctr.rows_flushed, 1);
            ctr_add(&mx->ctr.flush_entries, pr.entries);
            ctr_add(&mx->ctr.flush_data_bytes, pr.data_bytes);
            ctr_add(&db->ctr.flushes, 1);
        }
        mx_collect(db);
        delete_obsolete_files(db); /* step (5) */
    }
    sv_unref(sv);
    pthread_cond_broadcast(&db->bg_cv);
    return rc;
}

int mx_flush_blocked(tkv_db *db)
{
    matrix_state *mx = &db->mx;
    __atomic_store_n(&mx->flush_blocked, 1, __ATOMIC_RELAXED); /* read unlocked by the silk monitor */
    mx_collect(db);
    pthread_cond_broadcast(&db->bg_cv);
    if (mx->rows_at_flush == 0 && mx->nrows == 0) {
        /* Nothing can free room: the memtable did not fit in an empty pool. */
        pool_stats st;
        pool_get_stats(mx->pool, &st);
        tkv_err(TKV_NO_SPACE, "pmem pool %s (%u free pages of %u bytes) cannot hold a flushed memtable even when empty",
                mx->path, st.pages_free, st.page_size);
        db_set_bg_error(db, TKV_NO_SPACE);
        return 0;
    }
    if (db->shutting_down && mx->gave_up) return 0;
    return 1;
}

int mx_pinned_full(tkv_db *db)
{
    matrix_state *mx = &db->mx;
    if (!mx->pool || !mx->flush_blocked || __atomic_load_n(&db->open_iterators, __ATOMIC_ACQUIRE) == 0) return 0;
    version *v = vset_current(db->vs);
    rowset *rs = db->sv->rows;
    for (size_t i = 0; rs && i < rs->n; i++) {
        uint64_t cur;
        if (!version_row_cursor(v, rowtable_id(rs->rows[i]), &cur)) continue; /* drained and removed */
        if (cur < rowtable_count(rs->rows[i])) return 0; /* columns still have work: ordinary back-pressure */
    }
    return 1;
}

/* ------------------------------------------------------------ reads */

int mx_get(tkv_db *db, superversion *sv, version *v, tkv_slice ukey, uint64_t seq, ikey_type *type, tkv_buf *val)
{
    rowset *rs = sv->rows;
    if (!rs || rs->n == 0) return 0;
    uint32_t stack[64], *cur = rs->n <= 64 ? stack : malloc(rs->n * sizeof *cur);
    if (!cur) return tkv_err(TKV_NO_MEMORY, "out of memory reading rows");
    int rc = 0;
    for (size_t i = 0; i < rs->n && rc == 0; i++) rc = cursor_in(v, rs->rows[i], &cur[i]);
    row_get_result res;
    memset(&res, 0, sizeof res);
    if (rc == 0) rc = rowtable_rows_get_at(rs->rows, cur, rs->n, ukey, seq, db->opts.row_filter ? ROWTABLE_ROWS_GET_FILTER : 0, &res, val);
    if (cur != stack) free(cur);
    mx_counters *c = &db->mx.ctr;
    ctr_add(&c->lookups, 1);
    ctr_add(&c->rows_searched, res.rows_searched);
    if (res.hints_used) ctr_add(&c->hints_used, res.hints_used);
    if (res.hints_rejected) ctr_add(&c->hints_rejected, res.hints_rejected);
    ctr_add(&c->comparisons, res.comparisons);
    if (res.rows_filtered) ctr_add(&c->rows_filtered, res.rows_filtered);
    if (rc == 1) *type = res.type;
    return rc;
}

size_t mx_iter_count(const superversion *sv) { return sv->rows ? sv->rows->n : 0; }

int mx_add_iters(superversion *sv, version *v, tkv_it **children, size_t *k)
{
    rowset *rs = sv->rows;
    for (size_t i = 0; rs && i < rs->n; i++) {
        uint32_t c;
        TKV_TRY(cursor_in(v, rs->rows[i], &c));
        children[*k] = rowtable_iter_at(rs->rows[i], c);
        if (!children[*k]) return tkv_err(TKV_NO_MEMORY, "out of memory creating an iterator");
        (*k)++;
    }
    return 0;
}

/* ------------------------------------------------------------ reclaiming */

void mx_collect(tkv_db *db)
{
    matrix_state *mx = &db->mx;
    size_t keep = 0;
    for (size_t i = 0; i < mx->nrows; i++) {
        rowtable *r = mx->rows[i];
        uint64_t floor;
        int rc = 0;
        if (!vset_row_floor(db->vs, rowtable_id(r), &floor)) {
            rc = rowtable_drop(r); /* invariant 3: slot cleared, then pages freed */
            if (rc == 0) ctr_add(&mx->ctr.rows_dropped, 1);
            if (rc < 0) db_set_bg_error(db, rc);
            continue;
        }
        mx->rows[keep++] = r;
        if (floor > rowtable_cursor(r)) { /* invariant 2 */
            uint32_t released = 0;
            rc = rowtable_set_cursor(r, (uint32_t)floor);
            if (rc == 0) rc = rowtable_release_dead_pages(r, &released);
            ctr_add(&mx->ctr.pages_released, released);
            if (rc < 0) db_set_bg_error(db, rc);
        }
    }
    mx->nrows = keep;
}

/* ------------------------------------------------------------ column compaction */

/* A picked column: the compactor rows with their cursors before and after,
 * the L1 files it rewrites, and the version it was picked in (pinned). */
typedef struct column_job {
    version *v;
    size_t k;
    rowtable **rows;        /* compactor rows, newest first */
    uint32_t *from, *to;    /* cursors before / after the column */
    file_meta **l1;         /* L1 inputs (ref'd, being_compacted) */
    size_t nl1;
    uint64_t smallest_snapshot;
    column_plan plan;
} column_job;

static void job_free(column_job *j)
{
    if (!j) return;
    for (size_t i = 0; i < j->nl1; i++) file_meta_unref(j->l1[i]);
    free(j->l1);
    free(j->rows);
    free(j->from);
    column_plan_free(&j->plan);
    if (j->v) version_unref(j->v);
    free(j);
}

/* compactor_wanted -- 1 if a compactor should form now: the pool passed its
 * trigger, a flush waits for room, or tkv_compact_range waits. */
static int compactor_wanted(tkv_db *db)
{
    matrix_state *mx = &db->mx;
    if (mx->flush_blocked || mx->drain_waiters) return 1;
    pool_stats st;
    pool_get_stats(mx->pool, &st);
    uint64_t used = st.pages_total - st.pages_free;
    return used * 100 >= (uint64_t)db->opts.matrix_trigger * st.pages_total;
}

/* pick_column -- the next column of the compactor (forming one if wanted),
 * or NULL: nothing to do, L0 SST files must go first, or an L1 file it
 * needs is busy in a deep compaction (*busy). Caller holds mu. */
static column_job *pick_column(tkv_db *db, int *busy, int *err)
{
    matrix_state *mx = &db->mx;
    version *v = vset_current(db->vs);
    rowset *rs = current_rows(db);
    *busy = 0;
    *err = 0;
    if (v->nfiles[0] > 0) return NULL; /* SST L0 (from l0=sst) compacts first, in the leveled thread */
    size_t k = 0;
    for (size_t i = 0; i < rs->n; i++) k += rowtable_id(rs->rows[i]) <= mx->compactor_max_id;
    if (k == 0) {
        mx->compactor_max_id = 0;
        if (rs->n == 0 || !compactor_wanted(db)) return NULL;
        mx->compactor_max_id = rowtable_id(rs->rows[0]); /* every row there is: the oldest rows */
        ctr_add(&mx->ctr.compactors, 1);
        k = rs->n;
    }
    column_job *j = calloc(1, sizeof *j);
    tkv_slice *l1s = calloc(v->nfiles[1] + 1, sizeof *l1s), *l1l = calloc(v->nfiles[1] + 1, sizeof *l1l);
    if (j) {
        j->rows = calloc(k, sizeof *j->rows);
        j->from = calloc(2 * k, sizeof *j->from);
    }
    if (!j || !j->rows || !j->from || !l1s || !l1l) {
        *err = tkv_err(TKV_NO_MEMORY, "out of memory picking a column");
        goto fail;
    }
    j->to = j->from + k;
    j->v = v;
    version_ref(v);
    for (size_t i = 0; i < rs->n; i++) {
        if (rowtable_id(rs->rows[i]) > mx->compactor_max_id) continue;
        j->rows[j->k] = rs->rows[i];
        if ((*err = cursor_in(v, rs->rows[i], &j->from[j->k])) < 0) goto fail;
        j->k++;
    }
    for (size_t i = 0; i < v->nfiles[1]; i++) {
        const file_meta *f = v->files[1][i];
        l1s[i] = ikey_user(slice(f->smallest.data, f->smallest.len));
        l1l[i] = ikey_user(slice(f->largest.data, f->largest.len));
    }
    column_input in = {j->rows, j->from, j->k, l1s, l1l, v->nfiles[1], mx->column_bytes};
    if ((*err = column_pick(&in, &j->plan)) < 0) goto fail;
    if (j->plan.empty) {
        mx->compactor_max_id = 0; /* cannot happen: drained rows leave the version */
        goto fail;
    }
    memcpy(j->to, j->plan.new_cursors, j->k * sizeof *j->to);
    for (size_t i = j->plan.l1_first; i < j->plan.l1_end; i++)
        if (v->files[1][i]->being_compacted) {
            /* A deep (L1->L2) compaction holds them: with scheduler=silk it
             * is aborted (outputs deleted, inputs untouched) and the column
             * runs as soon as it has let go; fifo waits for it to finish. */
            silk_abort_l1(db, &v->files[1][j->plan.l1_first], j->plan.l1_end - j->plan.l1_first);
            *busy = 1;
            goto fail;
        }
    j->nl1 = j->plan.l1_end - j->plan.l1_first;
    j->l1 = calloc(j->nl1 ? j->nl1 : 1, sizeof *j->l1);
    if (!j->l1) {
        *err = tkv_err(TKV_NO_MEMORY, "out of memory picking a column");
        j->nl1 = 0;
        goto fail;
    }
    for (size_t i = 0; i < j->nl1; i++) {
        j->l1[i] = v->files[1][j->plan.l1_first + i];
        file_meta_ref(j->l1[i]);
        j->l1[i]->being_compacted = 1;
    }
    j->smallest_snapshot = db_smallest_snapshot(db);
    free(l1s);
    free(l1l);
    return j;
fail:
    free(l1s);
    free(l1l);
    job_free(j);
    return NULL;
}

/* run_column -- merges the column (mu NOT held), then installs it (takes
 * mu; returns holding it). Returns 0 or the error; on error the outputs are
 * gone and the cursors untouched. */
static int run_column(tkv_db *db, column_job *j)
{
    matrix_state *mx = &db->mx;
    size_t n = j->k + j->nl1;
    tkv_it **kids = calloc(n ? n : 1, sizeof *kids);
    table **tables = calloc(n ? n : 1, sizeof *tables);
    int rc = 0;
    uint64_t l1_bytes = 0;
    if (!kids || !tables) {
        free(kids);
        free(tables);
        pthread_mutex_lock(&db->mu);
        return tkv_err(TKV_NO_MEMORY, "out of memory starting a column compaction");
    }
    /* rows newest first, then L1: internal keys are unique, so the order
     * only matters for equal keys, which cannot occur */
    for (size_t i = 0; i < j->k; i++) {
        kids[i] = rowtable_iter_range(j->rows[i], j->from[i], j->to[i]);
        if (!kids[i]) kids[i] = error_iter_new(TKV_NO_MEMORY);
    }
    for (size_t i = 0; i < j->nl1; i++) {
        kids[j->k + i] = open_input(db, j->l1[i], IO_COMPACT_L0, &tables[j->k + i]);
        l1_bytes += j->l1[i]->size;
    }
    tkv_it *in = merging_iter_new(kids, n);
    file_meta **done = NULL;
    size_t ndone = 0;
    if (!in) rc = tkv_err(TKV_NO_MEMORY, "out of memory merging a column");
    else rc = compact_merge(db, in, 1, IO_COMPACT_L0, j->v, j->smallest_snapshot, &done, &ndone);
    it_destroy(in);
    for (size_t i = 0; i < n; i++) table_close(tables[i]);
    free(tables);
    if (rc == 0) compact_preload_outputs(db, done, ndone, IO_COMPACT_L0); /* before install: see compact.h */

    version_edit e;
    edit_init(&e);
    uint64_t written = 0;
    size_t removed = 0;
    for (size_t i = 0; rc == 0 && i < j->nl1; i++) rc = edit_delete_file(&e, 1, j->l1[i]->number);
    for (size_t i = 0; rc == 0 && i < ndone; i++) {
        rc = edit_add_file(&e, 1, done[i]);
        written += done[i]->size;
    }
    for (size_t i = 0; rc == 0 && i < j->k; i++) {
        if (j->to[i] == j->from[i]) continue;
        if (j->to[i] == rowtable_count(j->rows[i])) {
            rc = edit_remove_row(&e, rowtable_id(j->rows[i])); /* drained: leaves the version */
            removed++;
        } else {
            rc = edit_set_row_cursor(&e, rowtable_id(j->rows[i]), j->to[i]);
        }
    }
    pthread_mutex_lock(&db->mu);
    int install_failed = 0;
    if (rc == 0) {
        rc = install(db, &e); /* step (2): the commit point */
        install_failed = rc < 0;
    }
    if (rc == 0 && removed) {
        /* invariant 1: the rowset without the drained rows, in the same
         * critical section as the version that removed them */
        rowset *cur = current_rows(db);
        rowtable **tmp = calloc(cur->n ? cur->n : 1, sizeof *tmp);
        size_t m = 0;
        for (size_t i = 0; tmp && i < cur->n; i++) {
            uint64_t c;
            if (version_row_cursor(vset_current(db->vs), rowtable_id(cur->rows[i]), &c)) tmp[m++] = cur->rows[i];
        }
        rowset *nrs = tmp ? rowset_new(tmp, m) : NULL;
        free(tmp);
        rc = nrs ? sv_replace(db, 0, nrs) : tkv_err(TKV_NO_MEMORY, "out of memory after a column compaction");
        rowset_unref(nrs);
        if (rc < 0) install_failed = 1; /* the version is installed: this cannot be undone, stop */
    }
    edit_free(&e);
    if (rc == 0) {
        ctr_add(&mx->ctr.columns, 1);
        ctr_add(&mx->ctr.column_row_bytes, j->plan.row_bytes);
        ctr_add(&mx->ctr.column_row_entries, j->plan.row_entries);
        ctr_add(&mx->ctr.column_l1_read_bytes, l1_bytes);
        ctr_add(&mx->ctr.column_write_bytes, written);
        ctr_add(&db->ctr.compactions[IO_COMPACT_L0], 1);
        ctr_add(&db->ctr.compaction_read_bytes[IO_COMPACT_L0], l1_bytes + j->plan.row_bytes);
        ctr_add(&db->ctr.compaction_write_bytes[IO_COMPACT_L0], written);
    }
    pthread_mutex_unlock(&db->mu);
    compact_discard_outputs(db, done, ndone, rc < 0 && !install_failed);
    pthread_mutex_lock(&db->mu);
    for (size_t i = 0; i < j->nl1; i++) j->l1[i]->being_compacted = 0;
    if (install_failed) db_set_bg_error(db, rc);
    return rc;
}

static void *column_main(void *arg)
{
    tkv_db *db = arg;
    db_background_thread("tkv-column", db);
    matrix_state *mx = &db->mx;
    pthread_mutex_lock(&db->mu);
    for (;;) {
        if (db->shutting_down && (!mx->flush_blocked || mx->gave_up)) break;
        if (db->bg_error) {
            if (db->shutting_down) break;
            db_timed_wait(db, IDLE_WAIT_US);
            continue;
        }
        uint64_t now = db_now_us();
        if (now < mx->retry_at_us) {
            db_timed_wait(db, mx->retry_at_us - now);
            continue;
        }
        int busy, err;
        column_job *j = pick_column(db, &busy, &err);
        if (!j) {
            if (err < 0) {
                db_set_bg_error(db, err);
                continue;
            }
            /* Idle: views that readers released since the last flush or
             * column may let pages and rows go now. */
            mx_collect(db);
            db_timed_wait(db, IDLE_WAIT_US);
            continue;
        }
        mx->column_running = 1;
        pthread_mutex_unlock(&db->mu);
        int rc = run_column(db, j); /* returns holding mu */
        mx->column_running = 0;
        job_free(j); /* unpins its version before mx_collect looks for the oldest live cursors */
        if (rc == 0) {
            mx->failures = 0;
            mx->retry_at_us = 0;
            mx_collect(db);
            delete_obsolete_files(db);
        } else if (!db->bg_error) {
            /* Not committed: outputs removed, cursors untouched. Retry the
             * same column later, backing off; the failure is counted and
             * blocks nothing else (MatrixKV stopped compacting for good). */
            ctr_add(&mx->ctr.column_failures, 1);
            if (rc == TKV_CORRUPTION) db_set_bg_error(db, rc); /* retrying cannot help */
            mx->failures++;
            uint64_t wait = RETRY_MIN_US;
            for (int i = 1; i < mx->failures && wait < RETRY_MAX_US; i++) wait *= 2;
            mx->retry_at_us = db_now_us() + (wait < RETRY_MAX_US ? wait : RETRY_MAX_US);
            if (db->shutting_down && mx->failures >= SHUTDOWN_GIVE_UP) mx->gave_up = 1;
        }
        pthread_cond_broadcast(&db->bg_cv);
    }
    mx->gave_up = 1; /* no more columns: a waiting flush must not wait for one */
    pthread_cond_broadcast(&db->bg_cv);
    pthread_mutex_unlock(&db->mu);
    return NULL;
}

int mx_start(tkv_db *db)
{
    if (!db->mx.pool) return 0;
    if (pthread_create(&db->mx.thread, NULL, column_main, db) != 0)
        return tkv_err(TKV_NO_MEMORY, "cannot start the column-compaction thread");
    db->mx.thread_started = 1;
    return 0;
}

void mx_stop(tkv_db *db)
{
    if (!db->mx.thread_started) return;
    pthread_mutex_lock(&db->mu);
    pthread_cond_broadcast(&db->bg_cv);
    pthread_mutex_unlock(&db->mu);
    pthread_join(db->mx.thread, NULL);
    db->mx.thread_started = 0;
}

int mx_drain(tkv_db *db)
{
    matrix_state *mx = &db->mx;
    if (!mx->pool) return 0;
    rowset *rs = current_rows(db);
    if (rs->n == 0) return 0;
    uint64_t target = rowtable_id(rs->rows[0]);
    mx->drain_waiters++;
    pthread_cond_broadcast(&db->bg_cv);
    int rc = 0;
    for (;;) {
        if (db->bg_error) {
            rc = tkv_err(db->bg_error, "%s", db->bg_errmsg);
            break;
        }
        rs = current_rows(db);
        if (rs->n == 0 || rowtable_id(rs->rows[rs->n - 1]) > target) break; /* the oldest row left is newer */
        db_timed_wait(db, IDLE_WAIT_US);
    }
    mx->drain_waiters--;
    return rc;
}

/* ------------------------------------------------------------ properties */

void mx_stats_line(tkv_db *db, tkv_buf *b, int *oom)
{
    matrix_state *mx = &db->mx;
    if (!mx->pool) return;
    pool_stats st;
    pool_get_stats(mx->pool, &st);
    pm_stats ps;
    pm_get_stats(pool_region(mx->pool), &ps);
    /* busy: a column is running or a compactor waits to be drained (the
     * container is above its trigger) -- benchmarks wait for busy=0. */
    db_appendf(b, oom, "matrix: rows=%zu pages_used=%u pages_free=%u columns=%llu flush_no_space=%llu busy=%d\n",
               current_rows(db)->n, st.pages_total - st.pages_free, st.pages_free,
               (unsigned long long)ctr_get(&mx->ctr.columns), (unsigned long long)ctr_get(&mx->ctr.flush_no_space),
               mx->column_running || mx->compactor_max_id != 0);
    db_appendf(b, oom, "pmem: write_bytes=%llu persist_calls=%llu\n", (unsigned long long)ps.bytes_persisted,
               (unsigned long long)ps.persist_calls);
}

/* writeback_line -- the pool's paced write-back (pmem_writeback, pmem.h). */
static void writeback_line(const pm_stats *ps, tkv_buf *b, int *oom)
{
    /* "errors=", not "failures=": readers find columns' failures= by name */
    db_appendf(b, oom, "writeback: bytes=%llu pending=%llu expired=%llu dropped=%llu errors=%llu device_flushes=%llu\n",
               (unsigned long long)ps->wb_bytes, (unsigned long long)ps->wb_pending,
               (unsigned long long)ps->wb_expired, (unsigned long long)ps->wb_dropped,
               (unsigned long long)ps->wb_failures, (unsigned long long)ps->wb_device_flushes);
}

void mx_report(tkv_db *db, int what, tkv_buf *b, int *oom)
{
    matrix_state *mx = &db->mx;
    if (!mx->pool) {
        db_appendf(b, oom, "l0=sst: no matrix container\n");
        return;
    }
    pool_stats st;
    pool_get_stats(mx->pool, &st);
    const mx_counters *c = &mx->ctr;
    if (what == 1) {
        pm_region *reg = pool_region(mx->pool);
        pm_stats ps;
        pm_get_stats(reg, &ps);
        db_appendf(b, oom, "mode: %s\n", pm_mode_name(pm_mode_in_use(reg)));
        db_appendf(b, oom, "profile: %s\n", pm_profile_in_use(reg) == PM_PROFILE_OPTANE ? "optane" : "none");
        db_appendf(b, oom, "path: %s\n", mx->path);
        db_appendf(b, oom, "pool: size=%llu page_size=%u pages=%u free=%u dir_slots=%u\n",
                   (unsigned long long)st.pool_size, st.page_size, st.pages_total, st.pages_free, st.dir_slots);
        db_appendf(b, oom, "persist: calls=%llu bytes=%llu\n", (unsigned long long)ps.persist_calls,
                   (unsigned long long)ps.bytes_persisted);
        writeback_line(&ps, b, oom);
        return;
    }
    rowset *rs = current_rows(db);
    version *v = vset_current(db->vs);
    uint64_t entries = 0, live = 0, data = 0;
    size_t dram = 0, in_compactor = 0;
    for (size_t i = 0; i < rs->n; i++) {
        rowtable_props pr;
        rowtable_get_props(rs->rows[i], &pr);
        uint64_t cur = 0;
        version_row_cursor(v, pr.row_id, &cur);
        entries += pr.entries;
        live += pr.entries - cur;
        data += pr.data_bytes;
        dram += pr.dram_bytes;
        in_compactor += pr.row_id <= mx->compactor_max_id;
    }
    uint64_t used = (uint64_t)(st.pages_total - st.pages_free) * st.page_size;
    uint64_t cols = ctr_get(&c->columns), hinted = ctr_get(&c->hints_used), rejected = ctr_get(&c->hints_rejected);
    uint64_t lookups = ctr_get(&c->lookups);
    db_appendf(b, oom, "rows: %zu (compactor %zu, receiver %zu) entries=%llu live_entries=%llu data_bytes=%llu\n", rs->n,
               in_compactor, rs->n - in_compactor, (unsigned long long)entries, (unsigned long long)live,
               (unsigned long long)data);
    db_appendf(b, oom, "bytes: used=%llu free=%llu pool=%llu page_size=%u trigger=%d%%\n", (unsigned long long)used,
               (unsigned long long)st.pages_free * st.page_size, (unsigned long long)st.pool_size, st.page_size,
               db->opts.matrix_trigger);
    db_appendf(b, oom, "flush: rows=%llu entries=%llu data_bytes=%llu no_space=%llu wait_micros=%llu\n",
               (unsigned long long)ctr_get(&c->rows_flushed), (unsigned long long)ctr_get(&c->flush_entries),
               (unsigned long long)ctr_get(&c->flush_data_bytes), (unsigned long long)ctr_get(&c->flush_no_space),
               (unsigned long long)ctr_get(&c->flush_wait_micros));
    pm_stats ps;
    pm_get_stats(pool_region(mx->pool), &ps);
    writeback_line(&ps, b, oom);
    db_appendf(b, oom,
               "columns: count=%llu compactors=%llu column_bytes=%llu row_bytes=%llu bytes_per_column=%llu "
               "l1_read_bytes=%llu write_bytes=%llu failures=%llu\n",
               (unsigned long long)cols, (unsigned long long)ctr_get(&c->compactors),
               (unsigned long long)mx->column_bytes, (unsigned long long)ctr_get(&c->column_row_bytes),
               (unsigned long long)(cols ? ctr_get(&c->column_row_bytes) / cols : 0),
               (unsigned long long)ctr_get(&c->column_l1_read_bytes), (unsigned long long)ctr_get(&c->column_write_bytes),
               (unsigned long long)ctr_get(&c->column_failures));
    db_appendf(b, oom,
               "lookups: count=%llu rows_filtered=%llu rows_searched=%llu hinted=%llu hint_rejected=%llu "
               "hint_hit_rate=%.4f comparisons_per_lookup=%.2f\n",
               (unsigned long long)lookups, (unsigned long long)ctr_get(&c->rows_filtered),
               (unsigned long long)ctr_get(&c->rows_searched), (unsigned long long)hinted,
               (unsigned long long)rejected, hinted + rejected ? (double)hinted / (double)(hinted + rejected) : 0.0,
               lookups ? (double)ctr_get(&c->comparisons) / (double)lookups : 0.0);
    uint64_t owned = 0;
    for (size_t i = 0; i < mx->nrows; i++) { /* every open row, also those waiting to be dropped */
        rowtable_props pr;
        rowtable_get_props(mx->rows[i], &pr);
        owned += pr.pages - pr.pages_released;
    }
    db_appendf(b, oom, "pages: used=%u owned_by_rows=%llu\n", st.pages_total - st.pages_free, (unsigned long long)owned);
    db_appendf(b, oom, "reclaim: rows_dropped=%llu pages_released=%llu pinned_switches=%llu\n",
               (unsigned long long)ctr_get(&c->rows_dropped), (unsigned long long)ctr_get(&c->pages_released),
               (unsigned long long)ctr_get(&c->pinned_switches));
    db_appendf(b, oom, "dram: handles=%zu bytes (%.4f per entry)\n", dram, entries ? (double)dram / (double)entries : 0.0);
}
