// SPDX-License-Identifier: Apache-2.0
/*
 * files.c -- the database's files: WAL names, pending outputs, the snapshot
 * floor, committing version edits, obsolete-file deletion (files.h, which
 * also states the persistence order these steps belong to).
 */
#include "db/files.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/wb.h"
#include "util/status.h"

void files_wal_path(const tkv_db *db, uint64_t number, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%06llu.wal", db->dir, (unsigned long long)number);
}

int files_add_pending(tkv_db *db, uint64_t number)
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

void files_remove_pending(tkv_db *db, uint64_t number)
{
    for (size_t i = 0; i < db->npending; i++)
        if (db->pending[i] == number) {
            db->pending[i] = db->pending[--db->npending];
            return;
        }
}

uint64_t files_smallest_snapshot(tkv_db *db)
{
    if (db->snapshots.next != &db->snapshots) return db->snapshots.next->seq; /* oldest first */
    return __atomic_load_n(&db->last_seq, __ATOMIC_ACQUIRE);
}

int files_install(tkv_db *db, version_edit *e)
{
    vset_set_last_seq(db->vs, __atomic_load_n(&db->last_seq, __ATOMIC_ACQUIRE));
    int rc = vset_log_and_apply_unlocking(db->vs, e, &db->mu);
    files_update_deep_score(db);
    return rc;
}

void files_update_deep_score(tkv_db *db)
{
    version *v = vset_current(db->vs);
    double score = 0;
    for (int l = 1; l < VERSION_LEVELS - 1; l++) {
        uint64_t target = options_level_target(&db->opts, l);
        double s = target ? (double)version_level_bytes(v, l) / (double)target : 0;
        if (s > score) score = s;
    }
    db->deep_score = score;
}

/* ------------------------------------------------------------ obsolete files */

void files_remove(tkv_db *db, const char *path)
{
    /* SSTs and WALs (large) go to the trash thread under a name that is
     * visibly no longer the database's; MANIFESTs (small) at once */
    size_t n = strlen(path);
    int big = n > 4 && (!strcmp(path + n - 4, ".sst") || !strcmp(path + n - 4, ".wal"));
    char tpath[4200];
    if (!big) {
        if (n > 6 && !strcmp(path + n - 6, ".trash")) trash_add(db->trash, path);
        else io_remove(path);
    } else if (snprintf(tpath, sizeof tpath, "%s.trash", path) < (int)sizeof tpath && io_rename(path, tpath) == 0) {
        trash_add(db->trash, tpath);
    } else {
        io_remove(path); /* (ENOENT: another remover was first) */
    }
}

void files_unpin(tkv_db *db, version *v, int files_only)
{
    int freed = files_only ? version_unref_files(v) : version_unref(v);
    if (!freed || !__atomic_load_n(&db->obsolete_kept, __ATOMIC_ACQUIRE)) return;
    pthread_mutex_lock(&db->mu);
    files_delete_obsolete(db);
    pthread_mutex_unlock(&db->mu);
}

/* contains -- 1 if x is in the sorted array a[0..n). */
static int contains(const uint64_t *a, size_t n, uint64_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] < x) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && a[lo] == x;
}

static void delete_obsolete(tkv_db *db);

/* wal_keep -- 1 if obsolete WAL `num` is (now) kept for recycling instead
 * of deleted (files_wal_recycled). Caller holds mu. */
static int wal_keep(tkv_db *db, uint64_t num)
{
    for (size_t i = 0; i < db->nwal_recycled; i++)
        if (db->wal_recycled[i].number == num) return 1;
    if (db->nwal_recycled >= (size_t)db->opts.wal_recycle || db->wal_old_detached) return 0;
    for (size_t i = 0; i < db->nwal_old; i++)
        if (db->wal_old[i].number == num) return 0; /* still open (write.c invariant 6) */
    uint64_t ticket = db->io.wb ? io_wb_ticket(db->io.wb) : 0;
    db->wal_recycled[db->nwal_recycled++] = (struct db_recycled_wal){num, ticket};
    return 1;
}

int files_wal_recycled(tkv_db *db, uint64_t *number)
{
    for (size_t i = 0; i < db->nwal_recycled; i++) {
        if (db->io.wb && !io_wb_passed(db->io.wb, db->wal_recycled[i].wb_ticket)) continue;
        *number = db->wal_recycled[i].number;
        db->wal_recycled[i] = db->wal_recycled[--db->nwal_recycled];
        return 1;
    }
    return 0;
}

void files_delete_obsolete(tkv_db *db)
{
    /* Read-only after an error: a job whose MANIFEST write or sync failed
     * kept outputs that no version lists but the edit may still name at the
     * next open (invariant 5 of docs/design.md); the next open removes what
     * is really obsolete. A read-only handle (read_only=1) deletes nothing. */
    if (db->bg_error || db->opts.read_only) return;
    tkv_errmsg_saved saved; /* best effort: the caller's message survives (status.h) */
    tkv_errmsg_save(&saved);
    delete_obsolete(db);
    tkv_errmsg_restore(&saved);
}

/* delete_obsolete -- files_delete_obsolete's work (mu held; released while
 * removing). */
static void delete_obsolete(tkv_db *db)
{
    uint64_t *live;
    size_t nlive;
    if (vset_live_files(db->vs, &live, &nlive) < 0) return; /* try again next time */
    uint64_t log_number = vset_log_number(db->vs);
    uint64_t manifest = vset_manifest_number(db->vs);
    /* files that only versions older than the current one still use: they
     * are deleted when the last of those goes (files_unpin) */
    version *cur = vset_current(db->vs);
    size_t ncur = 0;
    for (int l = 0; l < VERSION_LEVELS; l++) ncur += cur->nfiles[l];
    __atomic_store_n(&db->obsolete_kept, nlive > ncur, __ATOMIC_RELEASE);
    char **doomed = NULL; /* paths to unlink once mu is released */
    size_t ndoomed = 0, cap = 0;
    DIR *d = opendir(db->dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char *end;
        unsigned long long num = strtoull(e->d_name, &end, 10);
        int remove = 0;
        if (end != e->d_name && !strcmp(end, ".sst")) {
            int pending = 0;
            for (size_t i = 0; i < db->npending; i++) pending |= db->pending[i] == num;
            remove = !pending && !contains(live, nlive, num);
            if (remove) table_cache_evict(db->tc, num);
        } else if (end != e->d_name && !strcmp(end, ".wal")) {
            remove = num < log_number && num != db->wal_number && !wal_keep(db, num);
        } else if (!strncmp(e->d_name, "MANIFEST-", 9)) {
            remove = strtoull(e->d_name + 9, NULL, 10) != manifest;
        } else if (end != e->d_name && (!strcmp(end, ".sst.trash") || !strcmp(end, ".wal.trash"))) {
            remove = 1; /* left by a crash or by a remover that raced us: the trash thread sees ENOENT */
        }
        if (!remove) continue;
        if (ndoomed == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            char **nd = realloc(doomed, ncap * sizeof *nd);
            if (!nd) break; /* out of memory: the rest go next time */
            doomed = nd;
            cap = ncap;
        }
        size_t len = strlen(db->dir) + 1 + strlen(e->d_name) + 1;
        if (!(doomed[ndoomed] = malloc(len))) break;
        snprintf(doomed[ndoomed++], len, "%s/%s", db->dir, e->d_name);
    }
    if (d) closedir(d);
    free(live);
    if (!ndoomed) {
        free(doomed);
        return;
    }
    pthread_mutex_unlock(&db->mu);
    for (size_t i = 0; i < ndoomed; i++) {
        files_remove(db, doomed[i]);
        free(doomed[i]);
    }
    free(doomed);
    pthread_mutex_lock(&db->mu);
}
