// SPDX-License-Identifier: Apache-2.0
/*
 * mx_flush.c -- flushing into the matrix container: the oldest immutable
 * memtable becomes one RowTable in the pool, committed by the MANIFEST
 * edit; and the flush thread's waits for room in a full pool (mx.h).
 *
 * Persist order of a flush (a crash at any point loses nothing):
 *   (1) data and metadata, (2) row header, (3) directory slot -- the row
 *       exists (rowtable_build_at + rowtable_commit); on a file system the
 *       commit syncs (1)-(2) before the slot's store and the slot after it
 *       (pool.h invariant 8), so (4) never names a row the device lacks;
 *   (4) MANIFEST edit {row cursor 0, log number past the memtable's WAL},
 *       synced -- the commit point of the flush;
 *   (5) WAL files below the log number are deleted.
 *   A crash between (3) and (4) leaves a row the MANIFEST does not list:
 *   mx_open drops it, and the WAL (still covered) is replayed.
 */
#include "db/mx_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/files.h"
#include "db/silk.h"
#include "db/silk_pmem.h"
#include "db/superversion.h"
#include "sched/clock.h"
#include "util/status.h"

/* build_row -- steps (1)-(3): the memtable m as a new row, the newest one,
 * with forward pointers into the row it is newer than (at the current
 * version's cursor of that row). Called with mu held; released while the
 * row is written and held again on return. *out is NULL on error and for
 * an empty memtable (nothing to build). TKV_NO_SPACE: the pool is full,
 * nothing changed. */
static int build_row(tkv_db *db, memtable *m, rowtable **out)
{
    struct mx_state *mx = db->mx;
    *out = NULL;
    if (memtable_num_entries(m) == 0) return 0;
    mx->rows_at_flush = mx->nrows; /* 0: the pool was empty -- NO_SPACE then means it never fits */
    uint64_t id = vset_new_file_number(db->vs);
    /* The newest row receives the forward pointers; the pinned version
     * keeps its pages from its cursor on (invariant 2). */
    version *v = vset_current(db->vs);
    version_ref(v);
    rowset *rs = db->sv->rows;
    rowtable *older = rs->n ? rs->rows[0] : NULL, *r = NULL;
    uint32_t older_cursor = 0;
    int rc = older ? mx_cursor_in(v, older, &older_cursor) : 0;
    pthread_mutex_unlock(&db->mu);
    if (rc == 0) {
        /* the row's bytes are charged to the scheduler's pmem tier as the
         * build writes them: on the second of its two passes (rowtable.h) */
        tkv_it *it = silk_pmem_meter(db, memtable_iter(m), IO_FLUSH, 1, 2);
        /* and its progress on that pass, for the writers' deadline */
        it = silk_flush_meter(db, it, 2, m);
        rd_list rd = {0}; /* the memtable's range tombstones go into the row whole */
        rc = it ? memtable_range_del_list(m, &rd) : tkv_err(TKV_NO_MEMORY, "out of memory flushing");
        if (rc == 0) rc = rowtable_build_rd(mx->pool, id, it, &rd, older, older_cursor, &r); /* steps (1), (2) */
        rd_list_free(&rd);
        it_destroy(it);
        if (rc == 0) silk_flush_built(db);
        else silk_flush_abandoned(db); /* no room (waits follow) or an error */
    }
    /* a pool on a file system (emulated pmem): the commit syncs the row
     * (pool.h invariant 8); the build started each page's write-back as it
     * finished it, and the header's starts now; volatile pmem:
     * the row's pages go to the pool file from now on, paced (pmem.h), not
     * in the kernel's next write-back burst */
    if (rc == 0 && pm_needs_sync(pool_region(mx->pool))) rowtable_writeout_header(r);
    else if (rc == 0 && db->opts.pmem_writeback) rowtable_queue_writeback(r);
    /* a persist of steps (1)-(2) failed (an msync): the row is not durable,
     * so it is not committed; its data stays in the memtable and the WAL */
    if (rc == 0) rc = pool_error(mx->pool);
    if (rc < 0 && r) {
        rowtable_abandon(r);
        r = NULL;
    }
    if (rc == 0 && (rc = rowtable_commit(r)) < 0) { /* step (3) */
        rowtable_abandon(r);
        r = NULL;
    }
    pthread_mutex_lock(&db->mu);
    version_unref(v);
    *out = r;
    return rc;
}

/* with_new_row -- the current rowset with r in front (newest); NULL on out
 * of memory. */
static rowset *with_new_row(tkv_db *db, rowtable *r)
{
    rowset *cur = db->sv->rows, *nrs = NULL;
    rowtable **tmp = malloc((cur->n + 1) * sizeof *tmp);
    if (tmp) {
        tmp[0] = r;
        memcpy(tmp + 1, cur->rows, cur->n * sizeof *tmp);
        nrs = rowset_new(tmp, cur->n + 1);
        free(tmp);
    }
    return nrs;
}

/* flush_one -- mx_flush_one's work, with mx->flush_building set. */
static int flush_one(tkv_db *db)
{
    struct mx_state *mx = db->mx;
    superversion *sv = sv_ref(db->sv);
    memtable *m = sv->imm[0];
    /* Data of WALs older than the next memtable's WAL is in this memtable or
     * already in rows / SSTs. */
    uint64_t next_log = sv->nimm > 1 ? sv->imm_wal[1] : db->wal_number;
    if (mx_rows_over_budget(db, memtable_num_entries(m), memtable_memory_usage(m))) {
        /* the rows' handles would pass their share of dram_budget: wait for
         * columns to drain and drop rows, as for a full pool */
        mx->rows_at_flush = mx->nrows;
        snprintf(mx->no_space_msg, sizeof mx->no_space_msg,
                 "the rows' DRAM (%zu bytes) is at its share of dram_budget (%llu bytes)", mx_dram_bytes(db),
                 (unsigned long long)db->dram.share[BUDGET_ROWS]);
        sv_unref(sv);
        return MX_NO_SPACE;
    }
    rowtable *r = NULL;
    int rc = build_row(db, m, &r);
    if (rc == TKV_NO_SPACE) { /* no free pages, or no disk for them: wait for columns (mx_flush_blocked) */
        snprintf(mx->no_space_msg, sizeof mx->no_space_msg, "%s", tkv_errmsg());
        sv_unref(sv);
        return MX_NO_SPACE;
    }
    /* the slot's persist (step 3) failed: the row may not exist after a
     * crash, so no edit may name it (the next open drops it) */
    if (rc == 0 && r) rc = pool_error(mx->pool);
    version_edit e;
    edit_init(&e);
    if (rc == 0 && r) rc = edit_set_row_cursor(&e, rowtable_id(r), 0);
    e.has_log_number = 1;
    e.log_number = next_log;
    if (rc == 0) rc = files_install(db, &e); /* step (4) */
    edit_free(&e);
    rowset *nrs = NULL;
    int registered = 0;
    if (rc == 0 && r) {
        if (!(nrs = with_new_row(db, r)))
            rc = tkv_err(TKV_NO_MEMORY, "out of memory installing row %llu", (unsigned long long)rowtable_id(r));
        else if ((rc = mx_reg_add(mx, r)) == 0) registered = 1;
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
            ctr_add(&mx->ctr.flush_value_bytes, pr.value_bytes);
            ctr_add(&mx->ctr.flush_lz4_values, pr.lz4_values);
            ctr_add(&mx->ctr.flush_batch_bytes, memtable_batch_bytes(m));
            if (memtable_memory_usage(m) >= db->opts.memtable_size / 2) { /* not a forced flush's scrap */
                ctr_add(&mx->ctr.full_flush_batch_bytes, memtable_batch_bytes(m));
                ctr_add(&mx->ctr.full_flush_pages, pr.pages);
            }
            ctr_add(&db->ctr.flushes, 1);
        }
        mx_collect(db);
        files_delete_obsolete(db); /* step (5) */
    }
    sv_unref(sv);
    db_bg_signal(db);
    return rc;
}

int mx_flush_one(tkv_db *db)
{
    struct mx_state *mx = db->mx;
    pool_stats st;
    pool_get_stats(mx->pool, &st);
    mx->flush_alloc_mark = st.pages_allocated;
    mx->flush_building = 1;
    int rc = flush_one(db);
    mx->flush_building = 0; /* the row and its memtable have left or entered the view together */
    return rc;
}

int mx_flush_blocked(tkv_db *db)
{
    struct mx_state *mx = db->mx;
    if (!mx->blocked_since) { /* a new episode: counted once */
        mx->blocked_since = sched_mono_us();
        ctr_add(&mx->ctr.flush_no_space, 1);
    }
    __atomic_store_n(&db->flush_blocked, 1, __ATOMIC_RELAXED); /* read unlocked by the silk monitor */
    mx_collect(db);
    db_bg_signal(db);
    if (mx->rows_at_flush == 0 && mx->nrows == 0) {
        /* Nothing can free room: the memtable did not fit in an empty pool,
         * or the file system under the pool is full (no_space_msg says which). */
        pool_stats st;
        pool_get_stats(mx->pool, &st);
        tkv_err(TKV_NO_SPACE,
                "pmem pool %s has no room for a flushed memtable and no row left to drain (%u free pages "
                "of %u bytes): %s",
                mx->path, st.pages_free, st.page_size, mx->no_space_msg);
        db_set_bg_error(db, TKV_NO_SPACE);
        return 0;
    }
    /* shutting down: wait for columns to make room unless they gave up or
     * never started (a tkv_open that failed before mx_start closes the
     * database: nothing would ever make room) */
    if (db->shutting_down && (mx->gave_up || !mx->thread_started)) return 0;
    return 1;
}

void mx_flush_unblocked(tkv_db *db)
{
    struct mx_state *mx = db->mx;
    if (!mx) return;
    if (mx->blocked_since) {
        ctr_add(&mx->ctr.flush_wait_micros, sched_mono_us() - mx->blocked_since);
        mx->blocked_since = 0;
    }
    __atomic_store_n(&db->flush_blocked, 0, __ATOMIC_RELAXED); /* read unlocked by the silk monitor */
}
