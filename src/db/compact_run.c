// SPDX-License-Identifier: Apache-2.0
/*
 * compact_run.c -- running one leveled compaction: a trivial move, or a
 * merge of its inputs into new files of the level below, segment by
 * segment, committed whole or up to a cut point (compact_run.h).
 *
 * Segments and cut points. The input files of a compaction of level L >= 1
 * (both levels) fall into segments: in key order, groups closed under
 * overlap. Between two segments lies a cut point: a key that no input file
 * holds keys on both sides of. Each segment is merged on its own, so no
 * output file spans two segments, and once segment s is merged every input
 * of segments 0..s is wholly consumed and every later one untouched. A deep
 * pick is a run of files of L whose overlaps below do not touch (compact_
 * pick.h): one segment per file of L. Between segments a registered deep
 * job asks the scheduler whether to go on (silk_job_cut): when L0->L1 work
 * waits for its files it stops there and commits what it has, and the rest
 * of its inputs stay where they are, to be picked again (the level's
 * cursor is set back to them). A job told to stop in the middle of a
 * segment (SILK_ABORTED) keeps the segments before it and discards that
 * one; with none before it, it is an abort: nothing installed. An L0->L1
 * compaction is one segment. A segment of manual pick that has no file of L
 * (files of L+1 in a gap of the range) is left as it is; a segment of one
 * file of L >= 1 with nothing below is re-linked (moved), not rewritten,
 * unless the compaction is manual.
 *
 * Persistence order of a commit, whole or partial (crash-safe at every step):
 *  (1) each merged segment's outputs are written, fdatasync'd and closed,
 *      and the directory fsync'd, before the next segment starts (cmp_merge:
 *      files.h (1), (2)); the outputs of a segment the job stopped in are
 *      removed before anything is logged;
 *  (2) one version edit -- the consumed inputs of both levels deleted, the
 *      outputs of the consumed segments added, moved files re-linked a level
 *      down -- is logged to the MANIFEST as one record and synced: the commit
 *      point (files_install; files.h (3)). A torn record is dropped at open,
 *      so the commit happens whole or not at all;
 *  (3) the new version is installed, then every input is released
 *      (being_compacted cleared): the untouched ones are still in the
 *      version, free for the next pick; the consumed ones are deleted once
 *      no live version needs them (files.h (4)).
 * A crash before (2) leaves the outputs as orphans, which the next open
 * deletes, and the inputs as they were; a crash after (2) recovers the new
 * state. Nothing an edit names is removed before it, and no input is
 * deleted before the edit that replaces it is durable.
 */
#include "db/compact_run.h"

#include <stdlib.h>

#include "db/compact_merge.h"
#include "db/files.h"
#include "db/output.h"
#include "db/silk.h"
#include "sched/clock.h"
#include "util/status.h"

static tkv_slice small_u(const file_meta *f) { return ikey_user(slice(f->smallest.data, f->smallest.len)); }
static tkv_slice large_u(const file_meta *f) { return ikey_user(slice(f->largest.data, f->largest.len)); }

/* One segment: inputs[0][a0..a1) and inputs[1][b0..b1), and what became of it. */
enum { SEG_PENDING, SEG_MERGED, SEG_MOVED, SEG_LEFT };
typedef struct segment {
    size_t a0, a1, b0, b1;
    int state;
} segment;

/* The work of a running compaction: its segments, how many it has passed
 * (every one before `reached` is consumed or left), its outputs so far. */
typedef struct cmp_job {
    segment *seg;
    size_t nseg, reached;
    file_meta **done;
    size_t ndone;
} cmp_job;

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

/* split -- c's segments into j (above). */
static int split(const compaction *c, cmp_job *j)
{
    size_t na = c->ninputs[0], nb = c->ninputs[1];
    j->seg = calloc(na + nb + 1, sizeof *j->seg);
    if (!j->seg) return tkv_err(TKV_NO_MEMORY, "out of memory starting a compaction");
    if (c->level == 0) { /* L0 files overlap one another: one segment */
        j->seg[0] = (segment){0, na, 0, nb, SEG_PENDING};
        j->nseg = 1;
        return 0;
    }
    size_t i = 0, k = 0;
    tkv_slice hi = {0};
    int open = 0;
    while (i < na || k < nb) {
        int from_a = k == nb || (i < na && ukey_cmp(small_u(c->inputs[0][i]), small_u(c->inputs[1][k])) <= 0);
        const file_meta *f = from_a ? c->inputs[0][i] : c->inputs[1][k];
        if (open && ukey_cmp(small_u(f), hi) > 0) { /* nothing so far reaches f: a cut point */
            j->nseg++;
            open = 0;
        }
        if (!open) {
            j->seg[j->nseg] = (segment){i, i, k, k, SEG_PENDING};
            hi = large_u(f);
            open = 1;
        }
        if (from_a) j->seg[j->nseg].a1 = ++i;
        else j->seg[j->nseg].b1 = ++k;
        if (ukey_cmp(large_u(f), hi) > 0) hi = large_u(f);
    }
    j->nseg += open;
    return 0;
}

/* merge_segment -- merges segment sg of c (level L files first, newest
 * first for L0, then the level below) into output files appended to j's
 * (cmp_merge: pending, synced). mu NOT held. */
static int merge_segment(tkv_db *db, const compaction *c, const segment *sg, const version *v, uint64_t snap,
                         cmp_job *j)
{
    size_t na = sg->a1 - sg->a0, nb = sg->b1 - sg->b0;
    cmp_inputs in;
    TKV_TRY(cmp_inputs_new(db, &in, na + nb, "a compaction"));
    for (size_t k = 0; k < na; k++)
        in.kids[k] = cmp_open_input(db, &in, c->inputs[0][sg->a0 + k], c->cls, &in.tables[k]);
    for (size_t k = 0; k < nb; k++)
        in.kids[na + k] = cmp_open_input(db, &in, c->inputs[1][sg->b0 + k], c->cls, &in.tables[na + k]);
    file_meta **out = NULL;
    size_t nout = 0;
    TKV_TRY(cmp_merge_inputs(db, &in, c->out_level, c->cls, v, snap, &out, &nout));
    file_meta **all = realloc(j->done, (j->ndone + nout + 1) * sizeof *all);
    if (!all) {
        cmp_discard_outputs(db, out, nout, 1);
        return tkv_err(TKV_NO_MEMORY, "out of memory in a compaction");
    }
    for (size_t k = 0; k < nout; k++) all[j->ndone + k] = out[k];
    j->done = all;
    j->ndone += nout;
    free(out);
    return 0;
}

/* codec_kept -- a file may move from c's level to its output level
 * unchanged only if both levels are written with the same compression:
 * else an uncompressed L1 file (l1_compression=none) would sit in L2
 * uncompressed for good (RocksDB's trivial moves have the same rule). */
static int codec_kept(const tkv_db *db, const compaction *c)
{
    return output_codec(db, c->level) == output_codec(db, c->out_level);
}

/* run_segments -- merges (or moves, or leaves) c's segments in order, asking
 * at every cut point whether to go on (silk_job_cut). 0 when it stopped at a
 * cut or ran to the end; an error or SILK_ABORTED from the segment it was
 * in (its outputs removed; j->reached says how many came before). mu NOT
 * held. */
static int run_segments(tkv_db *db, const compaction *c, cmp_job *j)
{
    TKV_TRY(split(c, j));
    pthread_mutex_lock(&db->mu);
    uint64_t snap = files_smallest_snapshot(db);
    version *v = vset_current(db->vs);
    version_ref_files(v); /* SST levels only: pins no matrix rows while it runs (or is paused) */
    pthread_mutex_unlock(&db->mu);
    int rc = 0;
    for (; j->reached < j->nseg; j->reached++) {
        segment *sg = &j->seg[j->reached];
        if (j->reached > 0 && silk_job_cut(db)) break; /* asked to yield: stop at this cut */
        if (sg->a1 == sg->a0) {
            sg->state = SEG_LEFT; /* no file of the level: nothing to push down */
        } else if (!c->manual && c->level > 0 && sg->a1 - sg->a0 == 1 && sg->b1 == sg->b0 && codec_kept(db, c)) {
            sg->state = SEG_MOVED;
        } else {
            rc = merge_segment(db, c, sg, v, snap, j);
            if (rc < 0) break;
            sg->state = SEG_MERGED;
        }
    }
    files_unpin(db, v, 1);
    return rc;
}

/* build_edit -- the edit of j's consumed segments (persistence order (2)):
 * *consumed their input bytes. */
static int build_edit(const compaction *c, const cmp_job *j, version_edit *e, uint64_t *consumed)
{
    int rc = 0;
    *consumed = 0;
    for (size_t s = 0; rc == 0 && s < j->reached; s++) {
        const segment *sg = &j->seg[s];
        if (sg->state == SEG_LEFT) continue;
        for (size_t i = sg->a0; rc == 0 && i < sg->a1; i++) {
            rc = edit_delete_file(e, c->level, c->inputs[0][i]->number);
            if (rc == 0 && sg->state == SEG_MOVED) rc = edit_add_file(e, c->out_level, c->inputs[0][i]);
            else *consumed += c->inputs[0][i]->size;
        }
        for (size_t i = sg->b0; rc == 0 && i < sg->b1; i++) {
            rc = edit_delete_file(e, c->out_level, c->inputs[1][i]->number);
            *consumed += c->inputs[1][i]->size;
        }
    }
    for (size_t i = 0; rc == 0 && i < j->ndone; i++) rc = edit_add_file(e, c->out_level, j->done[i]);
    return rc;
}

/* resume_cursor -- after a partial commit (mu held, new version current):
 * the level's next pick starts at the first file of c it left. */
static void resume_cursor(tkv_db *db, const compaction *c, const cmp_job *j)
{
    for (size_t s = j->reached; s < j->nseg; s++)
        if (j->seg[s].a1 > j->seg[s].a0) {
            const file_meta *f = c->inputs[0][j->seg[s].a0];
            db->compact_cursor[c->level] = version_find_file(vset_current(db->vs), c->level, small_u(f));
            return;
        }
}

/* commit -- persistence order (2) and (3) for j's consumed segments (the
 * outputs are synced). Returns holding mu; *install_failed when the
 * MANIFEST write itself failed (the outputs must stay). */
static int commit(tkv_db *db, compaction *c, const cmp_job *j, version_edit *e, int *install_failed)
{
    uint64_t consumed = 0, written = 0;
    for (size_t i = 0; i < j->ndone; i++) written += j->done[i]->size;
    int rc = build_edit(c, j, e, &consumed);
    pthread_mutex_lock(&db->mu);
    if (rc == 0 && (e->ndeleted || e->nadded)) {
        rc = files_install(db, e);
        *install_failed = rc < 0;
    }
    if (rc == 0) {
        uint64_t merged = 0, moved = 0;
        for (size_t s = 0; s < j->reached; s++) {
            merged += j->seg[s].state == SEG_MERGED;
            moved += j->seg[s].state == SEG_MOVED;
        }
        if (merged) ctr_add(&db->ctr.compactions[c->cls], 1);
        ctr_add(&db->ctr.trivial_moves, moved);
        ctr_add(&db->ctr.compaction_read_bytes[c->cls], consumed);
        ctr_add(&db->ctr.compaction_write_bytes[c->cls], written);
        if (c->partial) resume_cursor(db, c, j);
        c->kept_bytes = written;
        c->read_bytes = consumed;
    }
    return rc;
}

int cmp_run(tkv_db *db, compaction *c)
{
    version_edit e;
    edit_init(&e);
    int rc = 0;
    uint64_t job = db_event_job(db), started = sched_mono_us();
    db_event(db, TKV_EVENT_COMPACTION_BEGIN, job, c->out_level, 0, 0, 0, 0);
    if (c->trivial_move && codec_kept(db, c)) {
        rc = trivial_move(db, c, &e);
        goto done_locked;
    }
    cmp_job j = {0};
    rc = run_segments(db, c, &j);
    if (rc == SILK_ABORTED && j.reached > 0) rc = 0; /* told to stop: keep the segments before the last cut */
    c->partial = rc == 0 && j.reached < j.nseg;
    if (rc == 0 && c->cls == IO_COMPACT_DEEP) silk_job_committing(db); /* no abort of a finished merge */
    if (rc == 0) cmp_preload_outputs(db, j.done, j.ndone, c->cls);     /* before install: see compact_merge.h */
    int install_failed = 0;
    if (rc == 0) rc = commit(db, c, &j, &e, &install_failed);
    else pthread_mutex_lock(&db->mu);
    /* On failure the outputs are in no version: remove them; inputs stay as
     * they were. (If the MANIFEST write/sync itself failed, the edit may
     * still be recovered at the next open, so its outputs must stay; if it
     * is not, they are orphans that the next open deletes.) */
    pthread_mutex_unlock(&db->mu);
    cmp_discard_outputs(db, j.done, j.ndone, rc < 0 && !install_failed);
    free(j.seg);
    pthread_mutex_lock(&db->mu);

done_locked:
    /* Holding mu. Every input is released: consumed ones are out of the
     * version, the others are where they were. */
    for (int w = 0; w < 2; w++)
        for (size_t i = 0; i < c->ninputs[w]; i++) c->inputs[w][i]->being_compacted = 0;
    /* An abort (silk.h) is no error: the inputs are untouched and the
     * compaction is picked again later. */
    uint64_t us = sched_mono_us() - started;
    if (rc == 0) db_hist_add_us(db, TKV_HIST_COMPACTION, us);
    /* an abort is reported as TKV_BUSY: nothing changed, the work comes back later */
    db_event(db, TKV_EVENT_COMPACTION_END, job, c->out_level,
             rc == SILK_ABORTED ? TKV_BUSY
             : rc < 0           ? rc
                                : 0,
             us, rc == 0 ? c->read_bytes : 0, rc == 0 ? c->kept_bytes : 0);
    if (rc < 0 && rc != SILK_ABORTED) db_set_bg_error(db, rc);
    else if (rc == 0) files_delete_obsolete(db);
    db_bg_signal(db);
    pthread_mutex_unlock(&db->mu);
    edit_free(&e);
    return rc;
}
