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
        for (;;) {
            while (db->compactions_running && !db->bg_error) pthread_cond_wait(&db->bg_cv, &db->mu);
            if (db->bg_error) {
                rc = db_bg_error(db);
                break;
            }
            version *v = vset_current(db->vs);
            int busy = 0;
            compaction *c = cmp_pick_range(v, level, begin ? &lo : NULL, end ? &hi : NULL, &busy);
            if (!c) {
                if (busy) {
                    pthread_cond_wait(&db->bg_cv, &db->mu);
                    continue;
                }
                break;
            }
            db->compactions_running++;
            pthread_mutex_unlock(&db->mu);
            rc = cmp_run(db, c);
            cmp_free(c);
            pthread_mutex_lock(&db->mu);
            db->compactions_running--;
            db_bg_signal(db);
            break;
        }
    }
    db->manual_waiting--;
    db_bg_signal(db);
    pthread_mutex_unlock(&db->mu);
    return rc;
}
