// SPDX-License-Identifier: Apache-2.0
/*
 * db_manual.c -- the public maintenance API: tkv_flush (every memtable to
 * L0) and tkv_compact_range (a key range pushed down to the deepest level
 * that holds part of it, LevelDB's CompactRange).
 */
#include <stdlib.h>

#include "db/compact_run.h"
#include "db/db_impl.h"
#include "db/flush.h"
#include "db/mx.h"
#include "db/write.h"
#include "util/status.h"

int tkv_flush(tkv_db *db)
{
    if (!db) return tkv_err(TKV_INVALID, "tkv_flush: NULL db");
    TKV_TRY(db_check_writable(db, "tkv_flush"));
    /* A queued "writer" without a batch switches the active memtable when it
     * leads (so no leader is inserting into it), then we wait for the flush
     * thread to write every immutable memtable to L0. */
    int rc = write_batch(db, NULL, 0);
    pthread_mutex_lock(&db->mu);
    if (rc == 0) rc = flush_wait_all(db);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

/* manual_step -- one compaction of tkv_compact_range: every file of `level`
 * in [lo, hi] into the level below (cmp_pick_range), or with range_dels (a
 * file number) the first of them numbered below it that holds range
 * tombstones, rewritten in place (cmp_pick_range_dels), waiting for the
 * compactions running. 1 if one ran, 0 if there was none, or the error.
 * Caller holds mu (released while the compaction runs). */
static int manual_step(tkv_db *db, int level, const tkv_slice *lo, const tkv_slice *hi, uint64_t range_dels)
{
    for (;;) {
        while (db->compactions_running && !db->bg_error) pthread_cond_wait(&db->bg_cv, &db->mu);
        if (db->bg_error) return db_bg_error(db);
        version *v = vset_current(db->vs);
        int busy = 0;
        compaction *c = range_dels ? cmp_pick_range_dels(v, level, lo, hi, range_dels, &busy)
                                   : cmp_pick_range(v, level, lo, hi, &busy);
        if (!c) {
            if (!busy) return 0;
            pthread_cond_wait(&db->bg_cv, &db->mu);
            continue;
        }
        db->compactions_running++;
        pthread_mutex_unlock(&db->mu);
        int rc = cmp_run(db, c);
        cmp_free(c);
        pthread_mutex_lock(&db->mu);
        db->compactions_running--;
        db_bg_signal(db);
        return rc < 0 ? rc : 1;
    }
}

int tkv_compact_range(tkv_db *db, const void *begin, size_t blen, const void *end, size_t elen)
{
    if (!db) return tkv_err(TKV_INVALID, "tkv_compact_range: NULL db");
    TKV_TRY(db_check_writable(db, "tkv_compact_range"));
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
        int r = manual_step(db, level, begin ? &lo : NULL, end ? &hi : NULL, 0);
        rc = r < 0 ? r : 0;
    }
    /* The deepest level's files that hold range tombstones are rewritten in
     * place, each once (the outputs get numbers from `below` on): their
     * tombstones (and what they cover) go if no snapshot needs them any more
     * -- else a tombstone that reached the bottom while one did would stay
     * until a compaction happened to rewrite its file. */
    uint64_t below = vset_next_file_number(db->vs);
    while (rc == 0) {
        int r = manual_step(db, last, begin ? &lo : NULL, end ? &hi : NULL, below);
        if (r <= 0) rc = r;
        if (r <= 0) break;
    }
    db->manual_waiting--;
    db_bg_signal(db);
    pthread_mutex_unlock(&db->mu);
    return rc;
}
