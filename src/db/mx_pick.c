// SPDX-License-Identifier: Apache-2.0
/*
 * mx_pick.c -- choosing the next column of the matrix container's
 * compactor (mx_column.c runs it): the compactor's rows from their cursors
 * (or those the column in flight before it leaves), the L1 files the column
 * rewrites (matrix/column.h plans it), its range tombstones' extent
 * (mx_colrd.c), and the claim on those L1 files -- or, when a deep
 * compaction holds some of them, the request that it yield them.
 *
 * A pick that such a file blocked is remembered (mx_state.blocked): until
 * the version or the columns in flight change, or the deep job lets one of
 * the files go, the next pick only asks the job again and returns NULL,
 * without planning. Planning reads keys from every compactor row and runs
 * with db->mu held: in a 16M x 1 KiB fill a blocked column was re-planned on
 * every wake-up of the column threads, 2-20 ms each, while writers waited
 * for the mutex.
 */
#include "db/mx_int.h"

#include <stdlib.h>
#include <string.h>

#include "db/files.h"
#include "db/silk.h"
#include "matrix/column.h"
#include "util/status.h"

/* mx_job_free -- see mx_int.h. */
void mx_job_free(column_job *j)
{
    if (!j) return;
    for (size_t i = 0; j->rd_from && i < j->k; i++) row_key_unref(j->rd_from[i]);
    free(j->rd_from);
    row_key_unref(j->rd_to);
    for (size_t i = 0; i < j->nl1; i++) file_meta_unref(j->l1[i]);
    free(j->l1);
    free(j->rows);
    free(j->from);
    column_plan_free(&j->plan);
    if (j->v) version_unref(j->v);
    free(j);
}

/* compactor_wanted -- 1 if a compactor should form now: the pool (or, under
 * a DRAM budget, the rows' DRAM) passed its trigger, a flush waits for
 * room, or tkv_compact_range waits. */
static int compactor_wanted(tkv_db *db)
{
    struct mx_state *mx = db->mx;
    if (__atomic_load_n(&db->flush_blocked, __ATOMIC_RELAXED) || mx->drain_waiters) return 1;
    pool_stats st;
    pool_get_stats(mx->pool, &st);
    uint64_t used = st.pages_total - st.pages_free;
    if (used * 100 >= (uint64_t)db->opts.matrix_trigger * st.pages_total) return 1;
    /* under a DRAM budget, the rows' handles past the trigger's share of theirs */
    uint64_t share = db->dram.share[BUDGET_ROWS];
    return share && (uint64_t)mx_dram_bytes(db) * 100 >= (uint64_t)db->opts.matrix_trigger * share;
}

/* take_l1 -- claims the L1 files the planned column rewrites (ref'd,
 * being_compacted), or sets *busy when a deep (L1->L2) compaction holds
 * some: with scheduler=silk the jobs that hold them are asked to yield
 * (silk_yield_l1: each stops at its next cut point and installs its work up
 * to there, or stops at once when it may not go on), the column's files are
 * kept from new deep picks, and the column runs as soon as they are free
 * (the column thread picks again every MX_IDLE_WAIT_US at most, asking
 * again); fifo waits for the jobs to finish. Caller holds mu. */
static int take_l1(tkv_db *db, version *v, column_job *j, int *busy)
{
    for (size_t i = j->plan.l1_first; i < j->plan.l1_end; i++)
        if (v->files[1][i]->being_compacted) {
            silk_yield_l1(db, &v->files[1][j->plan.l1_first], j->plan.l1_end - j->plan.l1_first);
            *busy = 1;
            return 0;
        }
    size_t n = j->plan.l1_end - j->plan.l1_first;
    j->l1 = calloc(n ? n : 1, sizeof *j->l1);
    if (!j->l1) return tkv_err(TKV_NO_MEMORY, "out of memory picking a column");
    j->nl1 = n;
    for (size_t i = 0; i < j->nl1; i++) {
        j->l1[i] = v->files[1][j->plan.l1_first + i];
        file_meta_ref(j->l1[i]);
        j->l1[i]->being_compacted = 1;
    }
    return 0;
}

/* The L1 files as column_pick sees them (matrix/column.h): key ranges,
 * sizes, entry counts, and which a deep compaction holds. */
typedef struct l1_view {
    tkv_slice *smallest, *largest;
    uint64_t *bytes, *entries;
    uint8_t *busy;
} l1_view;

static void l1_view_free(l1_view *w)
{
    free(w->smallest);
    free(w->largest);
    free(w->bytes);
    free(w->entries);
    free(w->busy);
}

/* l1_view_of -- v's L1 files for column_pick, and the input that asks for
 * columns of target bytes that take in small L1 neighbours (step 5) up to
 * sst_size. Caller holds mu (being_compacted). */
static int l1_view_of(tkv_db *db, version *v, l1_view *w, column_input *in, uint64_t target)
{
    size_t n = v->nfiles[1] + 1;
    w->smallest = calloc(n, sizeof *w->smallest);
    w->largest = calloc(n, sizeof *w->largest);
    w->bytes = calloc(n, sizeof *w->bytes);
    w->entries = calloc(n, sizeof *w->entries);
    w->busy = calloc(n, sizeof *w->busy);
    if (!w->smallest || !w->largest || !w->bytes || !w->entries || !w->busy)
        return tkv_err(TKV_NO_MEMORY, "out of memory picking a column");
    for (size_t i = 0; i < v->nfiles[1]; i++) {
        const file_meta *f = v->files[1][i];
        w->smallest[i] = ikey_user(slice(f->smallest.data, f->smallest.len));
        w->largest[i] = ikey_user(slice(f->largest.data, f->largest.len));
        w->bytes[i] = f->size;
        w->entries[i] = f->num_entries;
        w->busy[i] = (uint8_t)(f->being_compacted != 0);
    }
    in->l1_smallest = w->smallest;
    in->l1_largest = w->largest;
    in->nl1 = v->nfiles[1];
    in->target_bytes = target;
    in->l1_bytes = w->bytes;
    in->l1_entries = w->entries;
    in->l1_busy = w->busy;
    in->sst_size = db->opts.sst_size;
    in->compactor_entries = db->mx->compactor_entries;
    return 0;
}

/* inflight_tail -- the column picked last of those in flight, or NULL. */
static column_job *inflight_tail(const struct mx_state *mx)
{
    column_job *t = mx->inflight;
    while (t && t->next) t = t->next;
    return t;
}

/* cursor_after -- row r's cursor once column t has committed: 1 and *c if
 * t covers r, else 0 (no column in flight, or r is not among its rows). */
static int cursor_after(const column_job *t, const rowtable *r, uint32_t *c)
{
    for (size_t i = 0; t && i < t->k; i++)
        if (t->rows[i] == r) {
            *c = t->to[i];
            return 1;
        }
    return 0;
}

/* column_end_key -- the largest user key column t's outputs can hold: the
 * larger of its rows' range end and its L1 inputs' largest key. The next
 * column must stay above it, L1 merges of small neighbours included, or
 * the two would write overlapping L1 files. */
static tkv_slice column_end_key(const column_job *t)
{
    tkv_slice end = slice(t->plan.hi.data, t->plan.hi.len);
    for (size_t i = 0; i < t->nl1; i++) {
        tkv_slice l = ikey_user(slice(t->l1[i]->largest.data, t->l1[i]->largest.len));
        if (ukey_cmp(l, end) > 0) end = l;
    }
    return end;
}

/* rd_starts -- each row's range tombstone start before column j: where the
 * column in flight before it (tail) ends, else the version's (the larger,
 * should they differ). Caller holds mu. */
static int rd_starts(const version *v, const column_job *tail, column_job *j)
{
    j->rd_from = calloc(j->k ? j->k : 1, sizeof *j->rd_from);
    if (!j->rd_from) return tkv_err(TKV_NO_MEMORY, "out of memory picking a column");
    for (size_t i = 0; i < j->k; i++) {
        row_key *s = (row_key *)version_row_rd_start(v, rowtable_id(j->rows[i]));
        if (tail && tail->rd_to && (!s || ukey_cmp(row_key_slice(tail->rd_to), row_key_slice(s)) > 0)) s = tail->rd_to;
        row_key_ref(s);
        j->rd_from[i] = s;
    }
    return 0;
}

/* tombstones_only -- an empty plan (no entry left in the compactor rows)
 * whose rows still hold range tombstones past their starts becomes the
 * compactor's last column, of those tombstones only (mx_colrd.c). */
static void tombstones_only(column_job *j)
{
    if (!mx_rd_left(j->rows, j->rd_from, j->k)) return;
    j->plan.empty = 0;
    j->plan.to_end = 1;
    for (size_t i = 0; i < j->k; i++) j->plan.new_cursors[i] = rowtable_count(j->rows[i]);
    j->plan.l1_first = j->plan.l1_end = 0;
}

/* column_range_dels -- the column's range tombstones (mx_colrd.c): its end
 * E (j->rd_to; none for the compactor's last column), then its run of L1
 * files widened over the files the rows' tombstones in [start, E) meet.
 * Caller holds mu. */
static int column_range_dels(column_job *j, const l1_view *w, size_t nl1)
{
    if (j->plan.empty) tombstones_only(j);
    if (j->plan.empty) return 0;
    tkv_buf e = {0}, lo = {0}, hi = {0};
    int rc = 0, have = 0;
    if (!j->plan.to_end) {
        tkv_slice m = slice(j->plan.hi.data, j->plan.hi.len);
        for (size_t i = j->plan.l1_first; i < j->plan.l1_end; i++)
            if (ukey_cmp(w->largest[i], m) > 0) m = w->largest[i];
        uint8_t zero = 0;
        if ((rc = buf_append(&e, m.p, m.n)) == 0 && (rc = buf_append(&e, &zero, 1)) == 0 &&
            !(j->rd_to = row_key_new(slice(e.data, e.len))))
            rc = TKV_NO_MEMORY;
    }
    tkv_slice *starts = calloc(j->k ? j->k : 1, sizeof *starts), end = row_key_slice(j->rd_to);
    if (rc == 0 && !starts) rc = tkv_err(TKV_NO_MEMORY, "out of memory picking a column");
    for (size_t i = 0; rc == 0 && i < j->k; i++) starts[i] = row_key_slice(j->rd_from[i]);
    if (rc == 0) rc = mx_rd_extent(j->rows, starts, j->k, j->rd_to ? &end : NULL, &lo, &hi, &have);
    if (rc == 0 && have)
        mx_rd_widen(w->smallest, w->largest, nl1, slice(lo.data, lo.len), slice(hi.data, hi.len), &j->plan.l1_first,
                    &j->plan.l1_end);
    free(starts);
    buf_free(&e);
    buf_free(&lo);
    buf_free(&hi);
    return rc;
}

/* mx_pick_forget -- see mx_int.h. */
void mx_pick_forget(struct mx_state *mx)
{
    if (mx->blocked.v) version_unref(mx->blocked.v);
    memset(&mx->blocked, 0, sizeof mx->blocked);
}

/* remember_blocked -- the pick planned in v after tail needs v's L1 files
 * [first, end), and a deep compaction holds some of them. */
static void remember_blocked(struct mx_state *mx, version *v, const column_job *tail, size_t first, size_t end)
{
    mx_pick_forget(mx);
    version_ref(v);
    mx->blocked.v = v;
    mx->blocked.tail = tail;
    mx->blocked.ncolumns = mx->ncolumns;
    mx->blocked.l1_first = first;
    mx->blocked.l1_end = end;
}

/* still_blocked -- 1 if the remembered pick would be planned the same and
 * blocked again: the same version (so the same rows, cursors and L1 files)
 * and the same columns in flight, and a file it needs still busy. Then the
 * jobs holding them are asked again (silk_yield_l1 wants a call every
 * SILK_WANTED_US / 2; the column threads wake at least every
 * MX_IDLE_WAIT_US). Otherwise the memo is dropped. */
static int still_blocked(tkv_db *db, version *v, const column_job *tail)
{
    struct mx_state *mx = db->mx;
    if (!mx->blocked.v) return 0;
    if (mx->blocked.v == v && mx->blocked.tail == tail && mx->blocked.ncolumns == mx->ncolumns)
        for (size_t i = mx->blocked.l1_first; i < mx->blocked.l1_end; i++)
            if (v->files[1][i]->being_compacted) {
                silk_yield_l1(db, &v->files[1][mx->blocked.l1_first], mx->blocked.l1_end - mx->blocked.l1_first);
                return 1;
            }
    mx_pick_forget(mx);
    return 0;
}

/* pick_column -- mx_pick_column's planning (mx_int.h), with *busy and *err
 * already 0; a pick that busy L1 files block is remembered. Caller holds mu. */
static column_job *pick_column(tkv_db *db, int *busy, int *err)
{
    struct mx_state *mx = db->mx;
    ctr_add(&mx->ctr.picks_planned, 1);
    version *v = vset_current(db->vs);
    rowset *rs = db->sv->rows;
    if (v->nfiles[0] > 0) return NULL; /* SST L0 (from l0=sst) compacts first, in the leveled thread */
    column_job *tail = inflight_tail(mx);
    if (tail && (tail->plan.to_end || tail->cancelled)) return NULL; /* nothing to pick until it is done */
    size_t k = 0;
    for (size_t i = 0; i < rs->n; i++) k += rowtable_id(rs->rows[i]) <= mx->compactor_max_id;
    if (k == 0 && tail) return NULL;
    if (k == 0) {
        mx->compactor_max_id = 0;
        if (rs->n == 0 || !compactor_wanted(db)) return NULL;
        mx->compactor_max_id = rowtable_id(rs->rows[0]); /* every row there is: the oldest rows */
        ctr_add(&mx->ctr.compactors, 1);
        k = rs->n;
        mx->compactor_entries = 0;
        for (size_t i = 0; i < rs->n; i++) mx->compactor_entries += rowtable_count(rs->rows[i]);
    }
    column_job *j = calloc(1, sizeof *j);
    l1_view w = {0};
    if (j) {
        j->rows = calloc(k, sizeof *j->rows);
        j->from = calloc(2 * k, sizeof *j->from);
    }
    if (!j || !j->rows || !j->from) {
        *err = tkv_err(TKV_NO_MEMORY, "out of memory picking a column");
        goto fail;
    }
    j->to = j->from + k;
    j->v = v;
    version_ref(v);
    for (size_t i = 0; i < rs->n; i++) {
        if (rowtable_id(rs->rows[i]) > mx->compactor_max_id) continue;
        j->rows[j->k] = rs->rows[i];
        if (!cursor_after(tail, rs->rows[i], &j->from[j->k]) &&
            (*err = mx_cursor_in(v, rs->rows[i], &j->from[j->k])) < 0)
            goto fail;
        j->k++;
    }
    column_input in = {.rows = j->rows, .cursors = j->from, .nrows = j->k};
    if ((*err = rd_starts(v, tail, j)) < 0) goto fail;
    if ((*err = l1_view_of(db, v, &w, &in, mx->column_bytes)) < 0) goto fail;
    tkv_slice end = tail ? column_end_key(tail) : slice(NULL, 0);
    for (size_t i = 0; tail && i < v->nfiles[1]; i++)
        if (ukey_cmp(w.smallest[i], end) <= 0) w.busy[i] = 1; /* never merge across the column in flight */
    if ((*err = column_pick(&in, &j->plan)) < 0) goto fail;
    if ((*err = column_range_dels(j, &w, v->nfiles[1])) < 0) goto fail;
    for (size_t i = j->plan.l1_first; tail && !j->plan.empty && i < j->plan.l1_end; i++)
        if (ukey_cmp(w.smallest[i], end) <= 0) *busy = 1; /* (cannot happen: columns align to L1 files) */
    if (*busy) goto fail;
    if (j->plan.empty) {
        if (!tail) mx->compactor_max_id = 0; /* cannot happen: drained rows leave the version */
        goto fail;
    }
    memcpy(j->to, j->plan.new_cursors, j->k * sizeof *j->to);
    if ((*err = take_l1(db, v, j, busy)) < 0) goto fail;
    if (*busy) {
        remember_blocked(mx, v, tail, j->plan.l1_first, j->plan.l1_end);
        goto fail;
    }
    j->smallest_snapshot = files_smallest_snapshot(db);
    l1_view_free(&w);
    return j;
fail:
    l1_view_free(&w);
    mx_job_free(j);
    return NULL;
}

/* mx_pick_column -- see mx_int.h. */
column_job *mx_pick_column(tkv_db *db, int *busy, int *err)
{
    *busy = 0;
    *err = 0;
    if (still_blocked(db, vset_current(db->vs), inflight_tail(db->mx))) {
        ctr_add(&db->mx->ctr.picks_blocked_kept, 1);
        *busy = 1;
        return NULL;
    }
    return pick_column(db, busy, err);
}
