// SPDX-License-Identifier: Apache-2.0
/*
 * flush.c -- the flush thread: immutable memtables become rows of the
 * matrix container (mx_flush.c) or L0 SSTs, oldest first (flush.h).
 *
 * Persistence order of an SST flush (files.h): the SST is written and
 * synced and the directory synced (flush_sst), then the edit (file added +
 * log number advanced past this memtable's WAL) is logged to the MANIFEST,
 * then the memtable leaves the superversion, then old WALs go.
 */
#include "db/flush.h"

#include <stdlib.h>

#include "db/compact_merge.h"
#include "db/files.h"
#include "db/mx.h"
#include "db/output.h"
#include "db/silk.h"
#include "db/superversion.h"
#include "sched/clock.h"
#include "util/status.h"
#include "util/thread.h"

/* flush_sst -- writes memtable m to a new L0 SST, synced, its directory
 * synced (mu NOT held). On success *out is the new file, still pending and
 * referenced (NULL if m held no entries). */
static int flush_sst(tkv_db *db, memtable *m, file_meta **out)
{
    *out = NULL;
    tkv_it *it = silk_flush_meter(db, memtable_iter(m), 1, m); /* progress for the writers' deadline */
    if (!it) return tkv_err(TKV_NO_MEMORY, "out of memory flushing");
    output o;
    rd_list rd = {0};
    int rc = output_open(db, &o, IO_FLUSH, 0);
    for (it_seek_first(it); rc == 0 && it_valid(it); it_next(it)) rc = output_add(&o, it_key(it), it_value(it));
    if (rc == 0) rc = it_status(it);
    it_destroy(it);
    if (rc == 0) rc = memtable_range_del_list(m, &rd); /* the range tombstones go along whole */
    if (rc == 0) rc = output_add_range_dels(&o, rd.t, rd.n);
    rd_list_free(&rd);
    if (rc == 0) silk_flush_built(db);
    else silk_flush_abandoned(db);
    if (rc == 0) rc = output_finish(&o);
    if (rc == 0) rc = io_sync_dir(db->dir);
    if (rc < 0 || output_empty(&o)) {
        output_discard(db, &o);
        return rc;
    }
    ctr_add(&db->ctr.flushes, 1);
    ctr_add(&db->ctr.flush_bytes, o.f->size);
    *out = output_take(&o);
    return 0;
}

/* flush_one_sst -- flushes the oldest immutable memtable to an L0 SST.
 * Caller holds mu; it is released during the write. */
static int flush_one_sst(tkv_db *db)
{
    superversion *sv = sv_ref(db->sv);
    memtable *m = sv->imm[0];
    /* Data of WALs older than the next memtable's WAL is in this memtable or
     * already in SSTs. */
    uint64_t next_log = sv->nimm > 1 ? sv->imm_wal[1] : db->wal_number;
    pthread_mutex_unlock(&db->mu);
    file_meta *f = NULL;
    int rc = flush_sst(db, m, &f);
    pthread_mutex_lock(&db->mu);
    int install_failed = 0;
    if (rc == 0) {
        version_edit e;
        edit_init(&e);
        if (f) rc = edit_add_file(&e, 0, f);
        e.has_log_number = 1;
        e.log_number = next_log;
        if (rc == 0) {
            rc = files_install(db, &e); /* mu released for the MANIFEST sync */
            install_failed = rc < 0;    /* the edit may still be recovered: keep the SST */
        }
        edit_free(&e);
    }
    if (f) {
        files_remove_pending(db, f->number);
        if (rc < 0 && !install_failed) {
            char path[4096];
            sst_path(db->dir, f->number, path, sizeof path);
            io_remove(path);
        }
        if (rc < 0) {
            file_meta_unref(f);
            f = NULL;
        }
    }
    if (rc == 0) {
        rc = sv_replace(db, 1, NULL); /* imm[0] leaves the view (the writer may have appended more imms) */
        if (rc == 0) files_delete_obsolete(db);
    }
    if (f) { /* installed: open it for the readers after the memtable has left (writers wait on that) */
        pthread_mutex_unlock(&db->mu);
        cmp_preload_outputs(db, &f, 1, IO_FLUSH);
        pthread_mutex_lock(&db->mu);
        file_meta_unref(f);
    }
    if (rc < 0) db_set_bg_error(db, rc);
    sv_unref(sv);
    db_bg_signal(db);
    return rc;
}

/* reserve_memtable_blocks -- before a flush starts (db->mu held, released
 * while it works): pre-faults spare blocks for the active memtable, up to a
 * memtable's size as the memtables' DRAM share allows (arena_spares_reserve).
 * The active memtable fills while this flush runs; when the flush is slower
 * than the writers, the active one outgrows the blocks the spares hold, and
 * without this the writer faulted the new blocks in itself: once, the first
 * time the two memtables were full at once, a 4M x 1 KiB fill at 90k
 * writes/s spent ~0.3 s in madvise(MADV_POPULATE_WRITE) on the writer's
 * thread (writes up to 20 ms late). Here the flush thread pays it, and only
 * until the spares reach their high-water mark. It runs before the flush's
 * bandwidth sample starts (the sample measures the flush), and a close that
 * begins meanwhile waits for it (at most a memtable's worth of faults). */
static void reserve_memtable_blocks(tkv_db *db)
{
    if (db->shutting_down) return; /* the last flushes: no memtable will fill again */
    size_t have;
    arena_spares_get(&db->mem_spares, &have, NULL, NULL, NULL);
    if (have >= db->opts.memtable_size) return;
    pthread_mutex_unlock(&db->mu);
    (void)arena_spares_reserve(&db->mem_spares, db->opts.memtable_size);
    pthread_mutex_lock(&db->mu);
}

/* reserve_spares_ahead -- the flush thread is idle and the active memtable
 * half full (db->spares_ahead, set by the writer; mu held, released while it
 * works): pre-faults spare blocks for the rest of the active memtable and
 * the whole next one, within the memtables' DRAM share. So the flush that
 * the next switch begins finds them there (reserve_memtable_blocks has
 * nothing left to do) and starts its build at once. The first flush of a
 * database used to fault a whole memtable in before its build (~50 ms of a
 * 1M x 1 KiB fill's first flush of ~215 ms) while the next memtable
 * filled, and the writers were paced behind it or stopped. */
static void reserve_spares_ahead(tkv_db *db)
{
    db->spares_ahead = 2;
    size_t used = memtable_memory_usage(db->sv->mem), cap = db->opts.memtable_size;
    size_t want = cap + (used < cap ? cap - used : 0);
    pthread_mutex_unlock(&db->mu);
    (void)arena_spares_reserve(&db->mem_spares, want);
    pthread_mutex_lock(&db->mu);
}

/* flush_ended -- the statistics and the end event of flush `job`, begun at
 * `started` (us) on a memtable of `bytes` batch bytes, ended with rc. */
static void flush_ended(tkv_db *db, uint64_t job, uint64_t started, uint64_t bytes, int rc)
{
    uint64_t us = sched_mono_us() - started;
    if (rc == 0) db_hist_add_us(db, TKV_HIST_FLUSH, us);
    db_event(db, TKV_EVENT_FLUSH_END, job, 0, rc, us, 0, rc == 0 ? bytes : 0);
}

/* The flush loop's state between steps: the flush under way (started 0:
 * none), its batch bytes and event job number. */
typedef struct flush_run {
    tkv_db *db;
    uint64_t started, bytes, job;
} flush_run;

/* flush_step -- one turn of the flush loop (mu held; released while it
 * works): BG_DONE once shutting down with nothing left to flush, BG_IDLE
 * (until signalled) with nothing to do, BG_SLEEP for *wait_us while the
 * pool has no room, else BG_AGAIN. */
static int flush_step(flush_run *r, uint64_t *wait_us)
{
    tkv_db *db = r->db;
    *wait_us = 0;
    if (db->shutting_down && (db->sv->nimm == 0 || db->bg_error)) return BG_DONE;
    if (db->sv->nimm == 0 && !db->bg_error && !db->shutting_down && db->spares_ahead == 1) {
        reserve_spares_ahead(db); /* may release db->mu */
        return BG_AGAIN;
    }
    if (db->sv->nimm == 0 || db->bg_error) return BG_IDLE;
    if (!r->started) { /* a flush sample spans waits for pool room: its bandwidth is what writers can get */
        reserve_memtable_blocks(db); /* may release db->mu */
        if (db->sv->nimm == 0 || db->bg_error) return BG_AGAIN;
        r->started = sched_mono_us();
        /* in the units writers are charged in (their batch bytes), so
         * pacing at this rate fills a memtable no faster than a flush
         * empties one */
        r->bytes = memtable_batch_bytes(db->sv->imm[0]);
        r->job = db_event_job(db);
        db_event(db, TKV_EVENT_FLUSH_BEGIN, r->job, 0, 0, 0, 0, 0);
    }
    int frc = db->mx ? mx_flush_one(db) : flush_one_sst(db);
    if (frc == MX_NO_SPACE) {
        /* The pool is full: wait for column compaction to make room
         * (writers wait in make_room meanwhile: back-pressure). */
        if (!mx_flush_blocked(db)) {
            flush_ended(db, r->job, r->started, r->bytes, db->bg_error ? db->bg_error : TKV_NO_SPACE);
            r->started = 0;
            if (db->bg_error) return BG_AGAIN; /* the pool cannot hold a row at all (error set) */
            return BG_DONE;                    /* shutting down and no room will come: the WAL keeps the data */
        }
        *wait_us = 10000;
        return BG_SLEEP; /* every stopped writer signals each ms: a rebuild each time would take the pool */
    }
    mx_flush_unblocked(db);
    silk_flush_ended(db);
    if (frc == 0) silk_flush_sample(db, r->bytes, sched_mono_us() - r->started);
    flush_ended(db, r->job, r->started, r->bytes, frc);
    r->started = 0;
    return BG_AGAIN;
}

/* flush_done -- the flush loop has ended (mu held). */
static void flush_done(tkv_db *db)
{
    mx_flush_unblocked(db);
    db_bg_signal(db);
}

static void *flush_main(void *arg)
{
    flush_run r = {.db = arg};
    tkv_db *db = r.db;
    /* a fifth of the other background threads' nice value (2 by default):
     * on few cores the flush must not get only its share beside a column
     * compaction, as a writer that fills the last memtable waits on the
     * flush (SILK's order: flushes first). At half (5) a column on the
     * flush's core took a quarter of it and writers were paced behind the
     * flush: a 1M x 1 KiB fill ran 12 % slower, 4M 6 % */
    thread_background("tkv-flush", db->opts.background_nice / 5, (unsigned)db->opts.background_slice);
    pthread_mutex_lock(&db->mu);
    uint64_t wait;
    for (int st; (st = flush_step(&r, &wait)) != BG_DONE;)
        if (st != BG_AGAIN) db_step_wait(db, wait);
    flush_done(db);
    pthread_mutex_unlock(&db->mu);
    return NULL;
}

/* flush_task -- the flush as a task of the env's pool: one turn a step. */
static int flush_task(void *arg, uint64_t *wait_us)
{
    flush_run *r = arg;
    pthread_mutex_lock(&r->db->mu);
    int st = flush_step(r, wait_us);
    if (st == BG_DONE) flush_done(r->db);
    pthread_mutex_unlock(&r->db->mu);
    return st;
}

int flush_start(tkv_db *db)
{
    if (db->bg) {
        flush_run *r = calloc(1, sizeof *r);
        if (!r) return tkv_err(TKV_NO_MEMORY, "out of memory starting the flush");
        r->db = db;
        int rc = bg_task_add(db->bg, 0, flush_task, r, &db->flush_task);
        if (rc < 0) free(r);
        return rc;
    }
    TKV_TRY(thread_create(&db->flush_thread, flush_main, db, "the flush thread"));
    db->flush_started = 1;
    return 0;
}

void flush_stop(tkv_db *db)
{
    db_shut_down(db);
    if (db->flush_task) {
        flush_run *r = bg_task_arg(db->flush_task);
        bg_task_join(db->flush_task);
        db->flush_task = NULL;
        free(r);
    }
    if (!db->flush_started) return;
    pthread_join(db->flush_thread, NULL);
    db->flush_started = 0;
}

int flush_wait_all(tkv_db *db)
{
    while (db->sv->nimm > 0 && !db->bg_error) pthread_cond_wait(&db->bg_cv, &db->mu);
    if (db->bg_error) return db_bg_error(db);
    return 0;
}
