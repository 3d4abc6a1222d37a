/*
 * bg.c -- background work: the flush thread (high priority: immutable
 * memtables -> rows of the matrix container, or L0 SSTs with l0=sst), the
 * high pool's L0 worker (L0 SST -> L1 compactions; with l0=matrix the column
 * thread of mx.c is the L0->L1 worker) and the low pool (compaction_threads
 * workers, leveled L1+ compactions only). silk.h decides how fast each may
 * do I/O and pauses or aborts deep work; here is only which job runs where.
 *
 * State changes (imm list, versions, bg_error) are signalled on db->bg_cv.
 */
#include <stdlib.h>
#include <string.h>

#include "db/compact.h"
#include "db/mx.h"
#include "db/silk.h"
#include "util/status.h"
#include "util/thread.h"

int db_add_pending(tkv_db *db, uint64_t number)
{
    if (db->npending == db->pending_cap) {
        size_t cap = db->pending_cap ? db->pending_cap * 2 : 16;
        uint64_t *p = realloc(db->pending, cap * sizeof *p);
        if (!p) return tkv_err(TKV_NO_MEMORY, "out of memory");
        db->pending = p;
        db->pending_cap = cap;
    }
    db->pending[db->npending++] = number;
    return 0;
}

void db_remove_pending(tkv_db *db, uint64_t number)
{
    for (size_t i = 0; i < db->npending; i++)
        if (db->pending[i] == number) {
            db->pending[i] = db->pending[--db->npending];
            return;
        }
}

uint64_t db_smallest_snapshot(tkv_db *db)
{
    if (db->snapshots.next != &db->snapshots) return db->snapshots.next->seq; /* oldest first */
    return __atomic_load_n(&db->last_seq, __ATOMIC_ACQUIRE);
}

/* db_background_thread -- names the calling background thread (for top and
 * perf) and lowers its CPU priority to background_nice (util/thread.h). */
void db_background_thread(const char *name, tkv_db *db)
{
    pthread_setname_np(pthread_self(), name);
    (void)tkv_thread_set_nice(db->opts.background_nice); /* best effort */
}

/* flush_one -- flushes the oldest immutable memtable. Caller holds mu; it is
 * released during the write. Persistence order: SST synced, then the edit
 * (file added + log number advanced past this memtable's WAL) is logged to the
 * MANIFEST, then the memtable leaves the superversion, then old WALs go. */
static int flush_one(tkv_db *db)
{
    if (db->mx.pool) return mx_flush_one(db);
    superversion *sv = sv_ref(db->sv);
    memtable *m = sv->imm[0];
    /* Data of WALs older than the next memtable's WAL is in this memtable or
     * already in SSTs. */
    uint64_t next_log = sv->nimm > 1 ? sv->imm_wal[1] : db->wal_number;
    pthread_mutex_unlock(&db->mu);
    file_meta *f = NULL;
    int rc = flush_memtable(db, m, &f);
    pthread_mutex_lock(&db->mu);
    int install_failed = 0;
    if (rc == 0) {
        version_edit e;
        edit_init(&e);
        if (f) rc = edit_add_file(&e, 0, f);
        e.has_log_number = 1;
        e.log_number = next_log;
        vset_set_last_seq(db->vs, __atomic_load_n(&db->last_seq, __ATOMIC_ACQUIRE));
        if (rc == 0) {
            rc = vset_log_and_apply_unlocking(db->vs, &e, &db->mu); /* mu released for the MANIFEST sync */
            install_failed = rc < 0; /* the edit may still be recovered: keep the SST */
        }
        edit_free(&e);
    }
    if (f) {
        db_remove_pending(db, f->number);
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
        if (rc == 0) delete_obsolete_files(db);
    }
    if (f) { /* installed: open it for the readers after the memtable has left (writers wait on that) */
        pthread_mutex_unlock(&db->mu);
        compact_preload_outputs(db, &f, 1, IO_FLUSH);
        pthread_mutex_lock(&db->mu);
        file_meta_unref(f);
    }
    if (rc < 0) db_set_bg_error(db, rc);
    sv_unref(sv);
    pthread_cond_broadcast(&db->bg_cv);
    return rc;
}

static void *flush_main(void *arg)
{
    tkv_db *db = arg;
    db_background_thread("tkv-flush", db);
    pthread_mutex_lock(&db->mu);
    uint64_t blocked_since = 0, started = 0, bytes = 0;
    while (!db->shutting_down || (db->sv->nimm > 0 && !db->bg_error)) {
        if (db->sv->nimm > 0 && !db->bg_error) {
            if (!started) { /* a flush sample spans waits for pool room: its bandwidth is what writers can get */
                started = db_now_us();
                /* in the units writers are charged in (their batch bytes),
                 * so pacing at this rate fills a memtable no faster than a
                 * flush empties one */
                bytes = memtable_batch_bytes(db->sv->imm[0]);
            }
            int frc = flush_one(db);
            if (frc == MX_NO_SPACE) {
                /* The pool is full: wait for column compaction to make room
                 * (writers wait in make_room meanwhile: back-pressure). */
                if (!blocked_since) {
                    blocked_since = db_now_us();
                    ctr_add(&db->mx.ctr.flush_no_space, 1); /* flushes that had to wait (once each) */
                }
                if (!mx_flush_blocked(db)) {
                    if (db->bg_error) continue; /* the pool cannot hold a row at all (error set) */
                    break; /* shutting down and no room will come: the WAL keeps the data */
                }
                db_timed_wait(db, 10000);
                continue;
            }
            if (blocked_since) {
                ctr_add(&db->mx.ctr.flush_wait_micros, db_now_us() - blocked_since);
                blocked_since = 0;
            }
            __atomic_store_n(&db->mx.flush_blocked, 0, __ATOMIC_RELAXED); /* read unlocked by the silk monitor */
            if (frc == 0) silk_flush_sample(db, bytes, db_now_us() - started);
            started = 0;
            continue;
        }
        pthread_cond_wait(&db->bg_cv, &db->mu);
    }
    __atomic_store_n(&db->mx.flush_blocked, 0, __ATOMIC_RELAXED); /* read unlocked by the silk monitor */
    pthread_cond_broadcast(&db->bg_cv);
    pthread_mutex_unlock(&db->mu);
    return NULL;
}

/* compact_worker -- one thread of a compaction pool. The high pool's L0
 * worker (deep = 0) takes only L0 SST -> L1 compactions; the low pool's
 * workers (deep = 1) only L1+ (SILK: the high pool never runs deep work).
 * With scheduler=silk an L0 pick blocked by L1 files a deep job holds
 * aborts that job (silk_abort_l1). */
static void compact_worker(tkv_db *db, int deep)
{
    pthread_mutex_lock(&db->mu);
    while (!db->shutting_down) {
        compaction *c = NULL;
        int busy = 0;
        if (!db->bg_error && !db->manual_waiting)
            c = deep ? pick_compaction_in(db, vset_current(db->vs), 1, VERSION_LEVELS - 2, NULL)
                     : pick_compaction_in(db, vset_current(db->vs), 0, 0, &busy);
        if (!c) {
            if (busy) {
                version *v = vset_current(db->vs);
                silk_abort_l1(db, v->files[1], v->nfiles[1]);
            }
            pthread_cond_wait(&db->bg_cv, &db->mu);
            continue;
        }
        if (deep != (c->level >= 1)) abort(); /* pool discipline: never a deep job in the high pool */
        db->compactions_running++;
        pthread_mutex_unlock(&db->mu);
        if (deep) {
            silk_job job;
            silk_job_begin(db, &job, c);
            run_compaction(db, c); /* errors become bg_error; an abort does not */
            silk_job_end(db, &job);
        } else {
            run_compaction(db, c);
        }
        compaction_free(c);
        pthread_mutex_lock(&db->mu);
        db->compactions_running--;
        pthread_cond_broadcast(&db->bg_cv);
    }
    pthread_mutex_unlock(&db->mu);
}

static void *l0_main(void *arg)
{
    db_background_thread("tkv-l0", arg);
    compact_worker(arg, 0);
    return NULL;
}

static void *deep_main(void *arg)
{
    db_background_thread("tkv-deep", arg);
    compact_worker(arg, 1);
    return NULL;
}

/* stop_threads -- shuts the pools down and joins what was started. */
static void stop_threads(tkv_db *db, int flush, int l0)
{
    pthread_mutex_lock(&db->mu);
    db->shutting_down = 1;
    pthread_cond_broadcast(&db->bg_cv);
    pthread_mutex_unlock(&db->mu);
    silk_abort_all(db); /* running deep compactions stop at their next pause point (redone after reopen) */
    for (int i = 0; i < db->ndeep_threads; i++) pthread_join(db->deep_threads[i], NULL);
    free(db->deep_threads);
    db->deep_threads = NULL;
    db->ndeep_threads = 0;
    if (l0) pthread_join(db->l0_thread, NULL);
    if (flush) pthread_join(db->flush_thread, NULL);
}

int db_start_background(tkv_db *db)
{
    if (pthread_create(&db->flush_thread, NULL, flush_main, db) != 0)
        return tkv_err(TKV_NO_MEMORY, "cannot start the flush thread");
    if (pthread_create(&db->l0_thread, NULL, l0_main, db) != 0) {
        stop_threads(db, 1, 0);
        return tkv_err(TKV_NO_MEMORY, "cannot start the L0 compaction thread");
    }
    int n = db->opts.compaction_threads;
    db->deep_threads = calloc((size_t)n, sizeof *db->deep_threads);
    for (int i = 0; db->deep_threads && i < n; i++) {
        if (pthread_create(&db->deep_threads[i], NULL, deep_main, db) != 0) break;
        db->ndeep_threads++;
    }
    if (db->ndeep_threads != n) {
        stop_threads(db, 1, 1);
        return tkv_err(TKV_NO_MEMORY, "cannot start %d compaction threads", n);
    }
    db->threads_started = 1;
    return 0;
}

void db_stop_background(tkv_db *db)
{
    if (!db->threads_started) return;
    stop_threads(db, 1, 1);
    db->threads_started = 0;
}

int db_wait_flushed(tkv_db *db)
{
    /* Caller holds mu. Waits until no immutable memtable is left. */
    while (db->sv->nimm > 0 && !db->bg_error) pthread_cond_wait(&db->bg_cv, &db->mu);
    if (db->bg_error) return tkv_err(db->bg_error, "%s", db->bg_errmsg);
    return 0;
}

int tkv_compact_range(tkv_db *db, const void *begin, size_t blen, const void *end, size_t elen)
{
    if (!db) return tkv_err(TKV_INVALID, "tkv_compact_range: NULL db");
    if ((!begin && blen) || (!end && elen)) return tkv_err(TKV_INVALID, "tkv_compact_range: NULL key with a length");
    TKV_TRY(tkv_flush(db));
    tkv_slice lo = slice(begin, blen), hi = slice(end, elen);
    int rc = 0;
    pthread_mutex_lock(&db->mu);
    /* l0=matrix: columns drain rows only as prefixes of the key space, so
     * the whole container (every row that exists now) moves to L1 first. */
    rc = mx_drain(db);
    if (rc < 0) {
        pthread_mutex_unlock(&db->mu);
        return rc;
    }
    db->manual_waiting++;
    /* Push the range down to the deepest level that holds part of it (at
     * least L1), one level at a time, as LevelDB's CompactRange does. */
    int last = 1;
    {
        version *v = vset_current(db->vs);
        for (int l = 1; l < VERSION_LEVELS; l++) {
            file_meta **ov;
            size_t nov = 0;
            if (version_overlapping(v, l, begin ? &lo : NULL, end ? &hi : NULL, &ov, &nov) == 0) {
                if (nov) last = l;
                free(ov);
            }
        }
    }
    for (int level = 0; rc == 0 && level < last; level++) {
        for (;;) {
            while (db->compactions_running && !db->bg_error) pthread_cond_wait(&db->bg_cv, &db->mu);
            if (db->bg_error) {
                rc = tkv_err(db->bg_error, "%s", db->bg_errmsg);
                break;
            }
            version *v = vset_current(db->vs);
            int busy = 0;
            compaction *c = pick_range_compaction(db, v, level, begin ? &lo : NULL, end ? &hi : NULL, &busy);
            if (!c) {
                if (busy) {
                    pthread_cond_wait(&db->bg_cv, &db->mu);
                    continue;
                }
                break;
            }
            db->compactions_running++;
            pthread_mutex_unlock(&db->mu);
            rc = run_compaction(db, c);
            compaction_free(c);
            pthread_mutex_lock(&db->mu);
            db->compactions_running--;
            pthread_cond_broadcast(&db->bg_cv);
            break;
        }
    }
    db->manual_waiting--;
    pthread_cond_broadcast(&db->bg_cv);
    pthread_mutex_unlock(&db->mu);
    return rc;
}
