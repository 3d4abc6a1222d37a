/*
 * compact_run.c -- running one leveled compaction (a trivial move, or a
 * merge of its inputs into new files of the level below), committed by the
 * persistence order of files.h (compact_run.h).
 */
#include "db/compact_run.h"

#include <stdlib.h>

#include "db/compact_merge.h"
#include "db/files.h"
#include "db/silk.h"
#include "util/status.h"

/* trivial_move -- re-links c's single input one level down (no I/O but the
 * MANIFEST). Returns holding mu. */
static int trivial_move(tkv_db *db, compaction *c, version_edit *e)
{
    file_meta *f = c->inputs[0][0];
    int rc = edit_delete_file(e, c->level, f->number);
    if (rc == 0) rc = edit_add_file(e, c->out_level, f);
    pthread_mutex_lock(&db->mu);
    if (rc == 0) rc = files_install(db, e);
    if (rc == 0) ctr_add(&db->ctr.trivial_moves, 1);
    return rc;
}

/* merge_inputs -- merges every input of c, L0 files first (newest first),
 * then the level below, into output files (cmp_merge: pending, synced).
 * mu NOT held. */
static int merge_inputs(tkv_db *db, compaction *c, file_meta ***done, size_t *ndone)
{
    cmp_inputs in;
    TKV_TRY(cmp_inputs_new(&in, c->ninputs[0] + c->ninputs[1], "a compaction"));
    size_t k = 0;
    for (int w = 0; w < 2; w++)
        for (size_t i = 0; i < c->ninputs[w]; i++, k++)
            in.kids[k] = cmp_open_input(db, c->inputs[w][i], c->cls, &in.tables[k]);
    pthread_mutex_lock(&db->mu);
    uint64_t smallest_snapshot = files_smallest_snapshot(db);
    version *v = vset_current(db->vs);
    version_ref_files(v); /* SST levels only: pins no matrix rows while it runs (or is paused) */
    pthread_mutex_unlock(&db->mu);
    int rc = cmp_merge_inputs(db, &in, c->out_level, c->cls, v, smallest_snapshot, done, ndone);
    files_unpin(db, v, 1);
    return rc;
}

int cmp_run(tkv_db *db, compaction *c)
{
    version_edit e;
    edit_init(&e);
    int rc = 0;
    if (c->trivial_move) {
        rc = trivial_move(db, c, &e);
        goto done_locked;
    }
    file_meta **done = NULL;
    size_t ndone = 0;
    rc = merge_inputs(db, c, &done, &ndone);
    uint64_t written = 0;
    for (size_t i = 0; i < ndone; i++) written += done[i]->size;
    if (rc == 0 && c->cls == IO_COMPACT_DEEP) silk_job_committing(db); /* no abort of a finished merge */
    if (rc == 0) cmp_preload_outputs(db, done, ndone, c->cls); /* before install: see compact_merge.h */
    for (int w = 0; rc == 0 && w < 2; w++)
        for (size_t i = 0; rc == 0 && i < c->ninputs[w]; i++)
            rc = edit_delete_file(&e, w == 0 ? c->level : c->out_level, c->inputs[w][i]->number);
    for (size_t i = 0; rc == 0 && i < ndone; i++) rc = edit_add_file(&e, c->out_level, done[i]);
    pthread_mutex_lock(&db->mu);
    int install_failed = 0;
    if (rc == 0) {
        rc = files_install(db, &e);
        install_failed = rc < 0;
    }
    if (rc == 0) {
        ctr_add(&db->ctr.compactions[c->cls], 1);
        ctr_add(&db->ctr.compaction_read_bytes[c->cls], c->est_bytes);
        ctr_add(&db->ctr.compaction_write_bytes[c->cls], written);
    }
    /* On failure the outputs are in no version: remove them; inputs stay as
     * they were. (If the MANIFEST write/sync itself failed, the edit may
     * still be recovered at the next open, so its outputs must stay; if it
     * is not, they are orphans that the next open deletes.) */
    pthread_mutex_unlock(&db->mu);
    cmp_discard_outputs(db, done, ndone, rc < 0 && !install_failed);
    pthread_mutex_lock(&db->mu);

done_locked:
    /* Holding mu. */
    for (int w = 0; w < 2; w++)
        for (size_t i = 0; i < c->ninputs[w]; i++) c->inputs[w][i]->being_compacted = 0;
    /* An abort (silk.h) is no error: the inputs are untouched and the
     * compaction is picked again later. */
    if (rc < 0 && rc != SILK_ABORTED) db_set_bg_error(db, rc);
    else if (rc == 0) files_delete_obsolete(db);
    pthread_cond_broadcast(&db->bg_cv);
    pthread_mutex_unlock(&db->mu);
    edit_free(&e);
    return rc;
}
