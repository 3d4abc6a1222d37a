// SPDX-License-Identifier: Apache-2.0
/*
 * db_checkpoint.c -- the public API tkv_checkpoint: an openable copy of the
 * database as of one sequence number, made while writes go on
 * (docs/checkpoint.md).
 *
 * Steps, in a temporary directory beside the target (ckpt_dir.h):
 *  (1) under mu, pin a view -- the superversion (memtables, rows) and the
 *      version (SSTs, row cursors) -- and read S, the last published
 *      sequence (sv_get_view, as an iterator does). The view keeps every
 *      file, row and pool page it names (mx_int.h invariants 1-3, files.h);
 *  (2) each memtable of the view, and each row from its cursor in the
 *      version, becomes one L0 SST of the checkpoint holding its entries
 *      and range tombstones (a row's from its range tombstone start on)
 *      with sequence <= S (newest source first: their sequence ranges are
 *      disjoint and above L1's, so L0's newest-first order reads them as the
 *      view does). The checkpoint therefore has no rows and no WAL;
 *  (3) the view is narrowed to its SST files (version_ref_files: rows and
 *      memtables are let go) and every SST of the version is hard-linked
 *      into the checkpoint, or copied across file systems;
 *  (4) l0=matrix: a new, empty pool of the source's size at the default
 *      path, <checkpoint>/matrix.pmem (a new uuid; pool_open syncs it);
 *  (5) IDENTITY and LOCK, then a MANIFEST listing exactly those files (log number
 *      past every file, last sequence S) and the new pool's uuid, and
 *      CURRENT, all synced. The uuid makes the checkpoint's open refuse any
 *      existing pool but this one (mx_open.c claim_pool) -- the source's
 *      above all;
 *  (6) published: the marker removed and the directory renamed into place.
 * A checkpoint's failure is its own: the source is only read (and its file
 * counter advanced), and never turns read-only because of it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/ckpt_dir.h"
#include "db/db_impl.h"
#include "db/files.h"
#include "db/mx.h"
#include "db/output.h"
#include "db/superversion.h"
#include "matrix/pool.h"
#include "sst/table_cache.h"
#include "util/status.h"

/* One checkpoint being made. */
typedef struct ckpt {
    tkv_db *db;
    ckpt_dir d;
    uint64_t seq;     /* S: the view's last published sequence */
    file_meta **made; /* the L0 SSTs made from memtables and rows (refs held), newest first */
    size_t nmade;
    int has_pool;          /* l0=matrix: the checkpoint's own pool was made, with ... */
    uint8_t pool_uuid[16]; /* ... this uuid */
} ckpt;

/* ckpt_enter -- counts a checkpoint in (tkv_close waits until none is
 * left), unless the database is read-only after an error (that error) or
 * closing. */
static int ckpt_enter(tkv_db *db)
{
    pthread_mutex_lock(&db->mu);
    int rc = db->bg_error        ? db_bg_error(db)
             : db->shutting_down ? tkv_err(TKV_INVALID, "tkv_checkpoint: the database is being closed")
                                 : 0;
    if (rc == 0) db->checkpoints++;
    pthread_mutex_unlock(&db->mu);
    return rc;
}

static void ckpt_leave(tkv_db *db)
{
    pthread_mutex_lock(&db->mu);
    db->checkpoints--;
    pthread_cond_broadcast(&db->bg_cv);
    pthread_mutex_unlock(&db->mu);
}

/* write_source -- step (2) for one source: the entries of `it` (destroyed
 * here) and the range tombstones of rd with sequence <= S into a new L0 SST
 * of the checkpoint, synced; added to c->made unless it holds none. */
static int write_source(ckpt *c, tkv_it *it, const rd_list *rd)
{
    tkv_db *db = c->db;
    pthread_mutex_lock(&db->mu);
    uint64_t number = vset_new_file_number(db->vs); /* unique in both directories */
    pthread_mutex_unlock(&db->mu);
    output o;
    int rc = output_open_in(db, &o, c->d.tmp, number, 0, IO_COMPACT_DEEP, 0);
    for (it_seek_first(it); rc == 0 && it_valid(it); it_next(it)) {
        tkv_slice k = it_key(it);
        if (ikey_seq(k) <= c->seq) rc = output_add(&o, k, it_value(it));
    }
    if (rc == 0) rc = it_status(it);
    it_destroy(it);
    for (size_t i = 0; rc == 0 && i < rd->n; i++)
        if (rd->t[i].seq <= c->seq) rc = output_add_range_dels(&o, &rd->t[i], 1);
    if (rc == 0) rc = output_finish(&o);
    if (rc < 0 || output_empty(&o)) {
        output_discard(db, &o);
        return rc;
    }
    c->made[c->nmade++] = output_take(&o);
    return 0;
}

/* source_range_dels -- source i's range tombstones into out: memtable i
 * (newest first) or, past the memtables, that row's (from its range
 * tombstone start in v on) of rows, every row's (mx_range_dels, tier = row). */
static int source_range_dels(superversion *sv, size_t i, const rd_list *rows, rd_list *out)
{
    if (i < 1 + sv->nimm) return memtable_range_del_list(i == 0 ? sv->mem : sv->imm[sv->nimm - i], out);
    for (size_t j = 0; j < rows->n; j++)
        if (rows->t[j].tier == i - 1 - sv->nimm) TKV_TRY(rd_list_append(out, &rows->t[j], 1));
    return 0;
}

/* write_sources -- step (2): every memtable of sv, newest first, then every
 * row of sv at v's cursors, with their range tombstones. */
static int write_sources(ckpt *c, superversion *sv, version *v)
{
    size_t nrows = mx_iter_count(sv), n = 1 + sv->nimm + nrows;
    tkv_it **its = calloc(n, sizeof *its);
    c->made = calloc(n, sizeof *c->made);
    int rc = its && c->made ? 0 : tkv_err(TKV_NO_MEMORY, "out of memory making a checkpoint");
    for (size_t i = 0; rc == 0 && i < 1 + sv->nimm; i++) {
        memtable *m = i == 0 ? sv->mem : sv->imm[sv->nimm - i];
        if (memtable_num_entries(m) && !(its[i] = memtable_iter(m)))
            rc = tkv_err(TKV_NO_MEMORY, "out of memory making a checkpoint");
    }
    if (rc == 0) rc = mx_row_iters(c->db, sv, v, IO_COMPACT_DEEP, its + 1 + sv->nimm);
    rd_list rows = {0}, rd = {0};
    if (rc == 0) rc = mx_range_dels(sv, v, 0, &rows);
    for (size_t i = 0; i < n; i++) {
        rd_list_clear(&rd);
        if (rc == 0 && its[i] && (rc = source_range_dels(sv, i, &rows, &rd)) == 0) rc = write_source(c, its[i], &rd);
        else it_destroy(its[i]);
    }
    rd_list_free(&rows);
    rd_list_free(&rd);
    free(its);
    return rc;
}

/* link_files -- step (3): every SST of v into the checkpoint. */
static int link_files(ckpt *c, version *v)
{
    for (int l = 0; l < VERSION_LEVELS; l++)
        for (size_t i = 0; i < v->nfiles[l]; i++) {
            const file_meta *f = v->files[l][i];
            char src[4096], name[32];
            sst_path(c->db->dir, f->number, src, sizeof src);
            snprintf(name, sizeof name, "%06llu.sst", (unsigned long long)f->number);
            TKV_TRY(ckpt_dir_add(&c->d, src, name, f->size));
        }
    return 0;
}

/* make_pool -- step (4), with l0=matrix. The pool is closed again: the
 * checkpoint's first open opens it. */
static int make_pool(ckpt *c)
{
    uint64_t size = mx_pool_size(c->db);
    if (!size) return 0; /* l0=sst: no pool */
    char path[4200];
    snprintf(path, sizeof path, "%s/matrix.pmem", c->d.tmp); /* the default pmem_path (options_pmem_path) */
    pool *p;
    TKV_TRY(pool_open(path, size, PM_AUTO, PM_PROFILE_NONE, NULL, &p, NULL));
    memcpy(c->pool_uuid, pool_uuid(p), sizeof c->pool_uuid);
    int rc = pool_error(p), crc = pool_close(p);
    TKV_TRY(rc ? rc : crc);
    c->has_pool = 1;
    return 0;
}

/* write_manifest -- step (5): IDENTITY and an empty LOCK (a read-only
 * open locks a database but creates nothing: it needs the file), then a
 * MANIFEST (through a version set of the checkpoint's own, which checks
 * the levels' rules) holding v's files and c->made at L0, the last
 * sequence S, a log number past every file (the checkpoint has no WAL) and
 * the pool's uuid, and CURRENT naming it. */
static int write_manifest(ckpt *c, version *v)
{
    static const char identity[] = DB_IDENTITY_TEXT;
    TKV_TRY(io_write_file_atomic(c->d.tmp, DB_IDENTITY_FILE, identity, sizeof identity - 1, &c->db->io));
    TKV_TRY(io_write_file_atomic(c->d.tmp, DB_LOCK_FILE, "", 0, &c->db->io));
    version_set *vs;
    TKV_TRY(vset_open(c->d.tmp, &c->db->io, &vs));
    version_edit e;
    edit_init(&e);
    int rc = 0;
    uint64_t top = 0;
    for (int l = 0; l < VERSION_LEVELS; l++)
        for (size_t i = 0; rc == 0 && i < v->nfiles[l]; i++) {
            rc = edit_add_file(&e, l, v->files[l][i]);
            if (v->files[l][i]->number > top) top = v->files[l][i]->number;
        }
    for (size_t i = 0; rc == 0 && i < c->nmade; i++) {
        rc = edit_add_file(&e, 0, c->made[i]);
        if (c->made[i]->number > top) top = c->made[i]->number;
    }
    if (rc == 0) {
        vset_mark_file_number_used(vs, top);
        vset_set_last_seq(vs, c->seq);
        e.has_log_number = 1;
        e.log_number = vset_next_file_number(vs);
        e.has_pool_uuid = c->has_pool;
        memcpy(e.pool_uuid, c->pool_uuid, sizeof e.pool_uuid);
        rc = vset_log_and_apply(vs, &e);
    }
    edit_free(&e);
    vset_close(vs);
    return rc;
}

/* build -- steps (1)-(5) into c->d. */
static int build(ckpt *c)
{
    tkv_db *db = c->db;
    version *v;
    superversion *sv = sv_get_view(db, NULL, &c->seq, &v);
    int rc = write_sources(c, sv, v);
    version_ref_files(v); /* step (3): keep the SSTs, let rows and memtables go */
    sv_unref(sv);
    files_unpin(db, v, 0);
    if (rc == 0) rc = link_files(c, v);
    if (rc == 0) rc = make_pool(c);
    if (rc == 0) rc = write_manifest(c, v);
    files_unpin(db, v, 1);
    return rc;
}

int tkv_checkpoint(tkv_db *db, const char *out_dir)
{
    if (!db || !out_dir) return tkv_err(TKV_INVALID, "tkv_checkpoint: NULL %s", db ? "out_dir" : "db");
    TKV_TRY(ckpt_enter(db));
    ckpt c = {.db = db};
    int rc = ckpt_dir_begin(&c.d, out_dir, &db->io);
    if (rc == 0) rc = build(&c);
    if (rc == 0) rc = ckpt_dir_publish(&c.d);
    ckpt_dir_end(&c.d); /* removes the temporary directory unless it was published */
    for (size_t i = 0; i < c.nmade; i++) file_meta_unref(c.made[i]);
    free(c.made);
    ckpt_leave(db);
    return rc;
}
