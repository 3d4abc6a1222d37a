// SPDX-License-Identifier: Apache-2.0
/*
 * version_set.c -- the version set: the current version and the list of live
 * ones, the MANIFEST and CURRENT (open, recovery, logging an edit), file
 * numbers and counters, live files and row floors (docs/format-manifest.md).
 * The version object itself, and building one from an edit, is version.c.
 *
 * Invariants:
 *  (1) The live list (vs->live, guarded by vs->live_mu) holds every installed
 *      version whose refs are > 0; version_unref unlinks a version under that
 *      lock (vset_unlink_version) before freeing it, so vset_live_files never
 *      sees a freed version.
 *  (2) Nothing is installed before its edit is durable in the MANIFEST. After
 *      a failed MANIFEST append or sync the set is poisoned: every later apply
 *      returns that error (a torn record may sit at the tail, and appending
 *      after it would turn it into mid-log corruption).
 *  (3) The MANIFEST named by CURRENT always begins with a full snapshot
 *      record; every open writes a new MANIFEST, syncs it, then switches CURRENT.
 */
#include "sst/version.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mem/wal.h"
#include "sst/version_int.h"
#include "util/status.h"

struct version_set {
    int has_pool_uuid;
    uint8_t pool_uuid[16]; /* see vset_pool_uuid */
    char *dir;
    io_stats *st;
    uint64_t next_file, last_seq, log_number;
    uint64_t manifest_number;
    wal_writer *manifest; /* the live MANIFEST (NULL only during open) */
    int err;              /* 0, or the code that poisoned the set */
    char errmsg[256];     /* the message of that failure */
    version *current;     /* ref held by the set */
    pthread_mutex_t live_mu;
    version live; /* sentinel of the circular list of live versions */
    /* vset_log_and_apply_unlocking: 1 while a caller has released its mutex
     * to write and sync the MANIFEST; later callers wait on install_cv (with
     * that mutex), so edits reach the MANIFEST one at a time, in order. */
    int installing;
    pthread_cond_t install_cv;
};

/* ---------------------------------------------------------------- helpers */

/* vset_manifest_name -- "MANIFEST-%06llu" into buf. */
static void vset_manifest_name(uint64_t number, char *buf, size_t len)
{
    snprintf(buf, len, "MANIFEST-%06llu", (unsigned long long)number);
}

/* vset_dir_path -- "<dir>/<name>" into buf; TKV_INVALID if it does not fit. */
static int vset_dir_path(const char *dir, const char *name, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= len) return tkv_err(TKV_INVALID, "path %s/%s is too long", dir, name);
    return 0;
}

/* vset_account_meta_io -- adds MANIFEST bytes/syncs to the IO_META counters
 * (the WAL writer is opened without stats, since it would count them as
 * IO_WAL). */
static void vset_account_meta_io(version_set *vs, uint64_t bytes, uint64_t syncs)
{
    if (!vs->st) return;
    __atomic_fetch_add(&vs->st->write_bytes[IO_META], bytes, __ATOMIC_RELAXED);
    __atomic_fetch_add(&vs->st->syncs[IO_META], syncs, __ATOMIC_RELAXED);
}

/* vset_save_errmsg -- copies the thread's error message (to re-record it wrapped). */
static void vset_save_errmsg(char *buf, size_t len) { snprintf(buf, len, "%s", tkv_errmsg()); }

/* ---------------------------------------------------------------- live versions */

/* vset_link_version -- adds v to the live list. */
static void vset_link_version(version_set *vs, version *v)
{
    pthread_mutex_lock(&vs->live_mu);
    v->prev = vs->live.prev;
    v->next = &vs->live;
    vs->live.prev->next = v;
    vs->live.prev = v;
    pthread_mutex_unlock(&vs->live_mu);
}

/* vset_unlink_version -- removes v from the live list (version_unref at 0 refs). */
void vset_unlink_version(version_set *vs, version *v)
{
    /* v->next is written by a neighbour's unlink under the lock: read it there too */
    pthread_mutex_lock(&vs->live_mu);
    if (v->next) {
        v->prev->next = v->next;
        v->next->prev = v->prev;
        v->prev = v->next = NULL;
    }
    pthread_mutex_unlock(&vs->live_mu);
}

/* vset_install_version -- makes v (unlinked, 0 refs) the current version. */
static void vset_install_version(version_set *vs, version *v)
{
    v->refs = 1; /* the set's ref */
    vset_link_version(vs, v);
    version *old = vs->current;
    vs->current = v;
    version_unref(old);
}

/* ---------------------------------------------------------------- MANIFEST writing */

/* vset_snapshot_edit -- the full state of vs as one edit (counters + every file). */
static int vset_snapshot_edit(const version_set *vs, version_edit *e)
{
    edit_init(e);
    e->has_log_number = e->has_next_file = e->has_last_seq = 1;
    e->log_number = vs->log_number;
    e->next_file = vs->next_file;
    e->last_seq = vs->last_seq;
    e->has_pool_uuid = vs->has_pool_uuid;
    memcpy(e->pool_uuid, vs->pool_uuid, sizeof e->pool_uuid);
    for (int l = 0; l < VERSION_LEVELS; l++) {
        for (size_t i = 0; i < vs->current->nfiles[l]; i++) {
            int rc = edit_add_file(e, l, vs->current->files[l][i]);
            if (rc < 0) {
                edit_free(e);
                return rc;
            }
        }
    }
    for (size_t i = 0; i < vs->current->nrows; i++) {
        int rc = edit_set_row_cursor_rd(e, vs->current->rows[i].row_id, vs->current->rows[i].cursor,
                                        vs->current->rows[i].rd_start);
        if (rc < 0) {
            edit_free(e);
            return rc;
        }
    }
    return 0;
}

/* vset_write_new_manifest -- creates MANIFEST-<number> holding the snapshot
 * record of vs, synced; on success *out is its writer. */
static int vset_write_new_manifest(version_set *vs, uint64_t number, wal_writer **out)
{
    char name[64], path[4096];
    *out = NULL;
    vset_manifest_name(number, name, sizeof name);
    TKV_TRY(vset_dir_path(vs->dir, name, path, sizeof path));
    version_edit e;
    TKV_TRY(vset_snapshot_edit(vs, &e));
    tkv_buf rec = {0};
    int rc = edit_encode(&e, &rec);
    edit_free(&e);
    wal_writer *w = NULL;
    if (rc == 0) rc = wal_writer_open_v1(path, NULL, &w); /* version 1: synced at every edit */
    if (rc == 0) rc = wal_add_record(w, rec.data, rec.len);
    if (rc == 0) rc = wal_sync(w);
    buf_free(&rec);
    if (w) vset_account_meta_io(vs, wal_size(w), rc == 0);
    if (rc < 0) {
        char saved[512];
        vset_save_errmsg(saved, sizeof saved);
        wal_writer_close(w);
        return tkv_err(rc, "%s", saved);
    }
    *out = w;
    return 0;
}

/* vset_list_manifests -- numbers of every "MANIFEST-<digits>" in dir (malloc'd). */
static int vset_list_manifests(const char *dir, uint64_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return tkv_err_errno(errno, "open directory %s", dir);
    size_t cap = 0;
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *s = de->d_name;
        if (strncmp(s, "MANIFEST-", 9) != 0 || !s[9]) continue;
        uint64_t num = 0;
        const char *q = s + 9;
        for (; *q >= '0' && *q <= '9'; q++) num = num * 10 + (uint64_t)(*q - '0');
        if (*q || q - (s + 9) > 19) continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 8;
            uint64_t *p = realloc(*out, cap * sizeof *p);
            if (!p) {
                rc = tkv_err(TKV_NO_MEMORY, "out of memory listing %s", dir);
                break;
            }
            *out = p;
        }
        (*out)[(*n)++] = num;
    }
    closedir(d);
    if (rc < 0) {
        free(*out);
        *out = NULL;
        *n = 0;
    }
    return rc;
}

/* ---------------------------------------------------------------- recovery */

/* State rebuilt while replaying a MANIFEST. */
typedef struct vset_recovery {
    version_set *vs;
    version *v; /* unlinked, 0 refs; NULL = empty */
    const char *mname;
    int has_next_file;
    uint64_t next_file, last_seq, log_number;
} vset_recovery;

/* vset_replay_record -- wal_record_fn: decodes one edit and applies it to r->v. */
static int vset_replay_record(void *arg, const uint8_t *p, size_t n, uint64_t off)
{
    vset_recovery *r = arg;
    version_edit e;
    int rc = edit_decode(p, n, &e);
    version *nv = NULL;
    if (rc == 0) rc = version_build(r->vs, r->v, &e, &nv);
    if (rc < 0) {
        char saved[400];
        vset_save_errmsg(saved, sizeof saved);
        edit_free(&e);
        return tkv_err(rc, "%s: record at offset %llu: %s", r->mname, (unsigned long long)off, saved);
    }
    if (e.has_log_number) r->log_number = e.log_number;
    if (e.has_next_file) {
        r->next_file = e.next_file;
        r->has_next_file = 1;
    }
    if (e.has_last_seq) r->last_seq = e.last_seq;
    if (e.has_pool_uuid) {
        r->vs->has_pool_uuid = 1;
        memcpy(r->vs->pool_uuid, e.pool_uuid, sizeof e.pool_uuid);
    }
    edit_free(&e);
    if (r->v) version_free(r->v);
    r->v = nv;
    return 0;
}

/* vset_replay_manifest -- rebuilds r from MANIFEST-<number> of dir. */
static int vset_replay_manifest(version_set *vs, uint64_t number, vset_recovery *r, char *mname, size_t mlen)
{
    char path[4096];
    vset_manifest_name(number, mname, mlen);
    memset(r, 0, sizeof *r);
    r->vs = vs;
    r->mname = mname;
    TKV_TRY(vset_dir_path(vs->dir, mname, path, sizeof path));
    struct stat sb;
    if (stat(path, &sb) != 0) {
        if (errno == ENOENT) return tkv_err(TKV_CORRUPTION, "CURRENT in %s names %s, which is missing", vs->dir, mname);
        return tkv_err_errno(errno, "stat %s", path);
    }
    /* The torn-tail rule of docs/format-wal.md applies: a torn last edit is
     * dropped; a bad record followed by data is TKV_CORRUPTION naming the path. */
    return wal_replay(path, vs->st, vset_replay_record, r, NULL);
}

/* vset_parse_current -- the MANIFEST number named by CURRENT ("MANIFEST-%06llu\n"). */
static int vset_parse_current(const char *dir, const uint8_t *d, size_t n, uint64_t *number)
{
    size_t i = 9;
    uint64_t num = 0;
    if (n < 11 || memcmp(d, "MANIFEST-", 9) != 0 || d[n - 1] != '\n' || n - 10 > 19) goto bad;
    for (; i < n - 1; i++) {
        if (d[i] < '0' || d[i] > '9') goto bad;
        num = num * 10 + (uint64_t)(d[i] - '0');
    }
    *number = num;
    return 0;
bad:
    return tkv_err(TKV_CORRUPTION, "CURRENT in %s is malformed (%zu bytes, expected \"MANIFEST-<number>\\n\")", dir, n);
}

/* vset_verify_files -- every file of v exists with its recorded size. */
static int vset_verify_files(const version_set *vs, const version *v, const char *mname)
{
    for (int l = 0; l < VERSION_LEVELS; l++) {
        for (size_t i = 0; i < v->nfiles[l]; i++) {
            const file_meta *f = v->files[l][i];
            char name[32], path[4096];
            snprintf(name, sizeof name, "%06llu.sst", (unsigned long long)f->number);
            TKV_TRY(vset_dir_path(vs->dir, name, path, sizeof path));
            struct stat sb;
            if (stat(path, &sb) != 0) {
                if (errno == ENOENT)
                    return tkv_err(TKV_CORRUPTION, "%s listed in %s is missing (L%d, %s)", name, mname, l, vs->dir);
                return tkv_err_errno(errno, "stat %s", path);
            }
            if ((uint64_t)sb.st_size != f->size)
                return tkv_err(TKV_CORRUPTION, "%s listed in %s has %llu bytes, expected %llu (%s)", name, mname,
                               (unsigned long long)sb.st_size, (unsigned long long)f->size, vs->dir);
        }
    }
    return 0;
}

/* vset_recover -- fills vs from its directory. Sets *old_manifest (0 = none).
 * check_files: every listed SST must exist with its size (vset_verify_files). */
static int vset_recover(version_set *vs, uint64_t *old_manifest, int check_files)
{
    char cpath[4096], mname[64];
    *old_manifest = 0;
    TKV_TRY(vset_dir_path(vs->dir, "CURRENT", cpath, sizeof cpath));
    struct stat sb;
    uint64_t number = 0;
    int have_current = 1, rc;
    if (stat(cpath, &sb) != 0) {
        if (errno != ENOENT) return tkv_err_errno(errno, "stat %s", cpath);
        have_current = 0;
    }
    if (have_current) {
        uint8_t *data = NULL;
        size_t len = 0;
        TKV_TRY(io_read_file(cpath, IO_META, vs->st, &data, &len));
        rc = vset_parse_current(vs->dir, data, len, &number);
        free(data);
        TKV_TRY(rc);
    } else {
        /* No CURRENT: a fresh database, unless a MANIFEST exists. The one
         * exception is a crash while creating the database: MANIFEST-000001
         * alone, holding nothing or an empty snapshot. */
        uint64_t *nums;
        size_t n;
        TKV_TRY(vset_list_manifests(vs->dir, &nums, &n));
        uint64_t first = n ? nums[0] : 0;
        free(nums);
        if (n == 0) return 0;
        if (n > 1 || first != 1)
            return tkv_err(TKV_CORRUPTION, "CURRENT missing in %s (MANIFEST-%06llu exists)", vs->dir,
                           (unsigned long long)first);
        number = 1;
    }

    vset_recovery r;
    rc = vset_replay_manifest(vs, number, &r, mname, sizeof mname);
    if (have_current) {
        if (rc == 0 && !r.has_next_file)
            rc = tkv_err(TKV_CORRUPTION, "%s (named by CURRENT in %s) has no snapshot record", mname, vs->dir);
    } else {
        int nfiles = 0;
        for (int l = 0; l < VERSION_LEVELS && r.v; l++) nfiles += r.v->nfiles[l] != 0;
        if (rc == TKV_CORRUPTION || (rc == 0 && nfiles))
            rc = tkv_err(TKV_CORRUPTION, "CURRENT missing in %s (%s exists and %s)", vs->dir, mname,
                         rc == 0 ? "lists files" : "is corrupt");
    }
    if (rc == 0 && r.v && check_files) rc = vset_verify_files(vs, r.v, mname);
    if (rc < 0) {
        if (r.v) version_free(r.v);
        return rc;
    }
    if (r.has_next_file) vs->next_file = r.next_file;
    vs->last_seq = r.last_seq;
    vs->log_number = r.log_number;
    if (r.v) vset_install_version(vs, r.v);
    /* next_file must exceed every number in use. */
    vset_mark_file_number_used(vs, number);
    for (int l = 0; l < VERSION_LEVELS; l++)
        for (size_t i = 0; i < vs->current->nfiles[l]; i++)
            vset_mark_file_number_used(vs, vs->current->files[l][i]->number);
    *old_manifest = number;
    return 0;
}

/* vset_remove_stale_manifests -- deletes every MANIFEST-* but the live one
 * (best effort: a leftover is harmless, the next open retries). */
static void vset_remove_stale_manifests(version_set *vs)
{
    uint64_t *nums;
    size_t n;
    if (vset_list_manifests(vs->dir, &nums, &n) < 0) return;
    for (size_t i = 0; i < n; i++) {
        if (nums[i] == vs->manifest_number) continue;
        char name[64], path[4096];
        vset_manifest_name(nums[i], name, sizeof name);
        if (vset_dir_path(vs->dir, name, path, sizeof path) == 0) (void)io_remove(path);
    }
    free(nums);
}

/* vset_new -- an empty version set of dir (no MANIFEST yet). */
static int vset_new(const char *dir, io_stats *st, version_set **out)
{
    *out = NULL;
    version_set *vs = calloc(1, sizeof *vs);
    if (!vs || !(vs->dir = strdup(dir))) {
        free(vs);
        return tkv_err(TKV_NO_MEMORY, "out of memory opening the version set of %s", dir);
    }
    vs->st = st;
    vs->next_file = 2; /* a fresh database writes MANIFEST-000001 */
    pthread_mutex_init(&vs->live_mu, NULL);
    pthread_cond_init(&vs->install_cv, NULL);
    vs->live.prev = vs->live.next = &vs->live;
    vs->current = version_new(vs);
    if (!vs->current) {
        vset_close(vs);
        return TKV_NO_MEMORY;
    }
    vs->current->refs = 1;
    vset_link_version(vs, vs->current);
    *out = vs;
    return 0;
}

/* vset_open_readonly -- recovery alone: the state the MANIFEST records. */
int vset_open_readonly(const char *dir, io_stats *st, int check_files, version_set **out)
{
    if (!out) return tkv_err(TKV_INVALID, "vset_open_readonly: NULL out");
    *out = NULL;
    if (!dir) return tkv_err(TKV_INVALID, "vset_open_readonly: NULL dir");
    version_set *vs;
    TKV_TRY(vset_new(dir, st, &vs));
    uint64_t number;
    int rc = vset_recover(vs, &number, check_files);
    if (rc == 0 && number == 0) rc = 1; /* no MANIFEST */
    if (rc != 0) {
        char saved[512];
        vset_save_errmsg(saved, sizeof saved);
        vset_close(vs);
        return rc < 0 ? tkv_err(rc, "%s", saved) : rc;
    }
    vs->manifest_number = number;
    *out = vs;
    return 0;
}

/* vset_open -- recovers (or creates) the version set of dir and starts a new MANIFEST. */
int vset_open(const char *dir, io_stats *st, version_set **out)
{
    if (!out) return tkv_err(TKV_INVALID, "vset_open: NULL out");
    *out = NULL;
    if (!dir) return tkv_err(TKV_INVALID, "vset_open: NULL dir");
    version_set *vs;
    TKV_TRY(vset_new(dir, st, &vs));

    /* Recovery, then the CURRENT switch:
     *   1. replay the MANIFEST named by CURRENT (none: fresh, empty state);
     *   2. check that every listed SST exists with its recorded size;
     *   3. write MANIFEST-<new number> = one snapshot record, and sync it;
     *   4. fsync the directory (the new MANIFEST's entry is durable);
     *   5. switch CURRENT atomically (tmp + fsync + rename + dir fsync);
     *   6. delete the old MANIFEST (and any stale one). A crash before 5
     *      recovers from the old MANIFEST again; after 5, from the new one. */
    uint64_t old;
    int rc = vset_recover(vs, &old, 1);
    if (rc == 0) {
        uint64_t number = old ? vset_new_file_number(vs) : 1;
        rc = vset_write_new_manifest(vs, number, &vs->manifest);
        if (rc == 0) vs->manifest_number = number;
    }
    if (rc == 0) rc = io_sync_dir(dir);
    if (rc == 0) {
        char cur[64];
        vset_manifest_name(vs->manifest_number, cur, sizeof cur - 1);
        strcat(cur, "\n");
        rc = io_write_file_atomic(dir, "CURRENT", cur, strlen(cur), st);
    }
    if (rc < 0) {
        char saved[512];
        vset_save_errmsg(saved, sizeof saved);
        vset_close(vs);
        return tkv_err(rc, "%s", saved);
    }
    vset_remove_stale_manifests(vs);
    tkv_err_clear();
    *out = vs;
    return 0;
}

/* vset_close -- closes the MANIFEST (every record in it is already synced) and frees vs. */
void vset_close(version_set *vs)
{
    if (!vs) return;
    if (vs->manifest) (void)wal_writer_close(vs->manifest);
    version *cur = vs->current;
    vs->current = NULL;
    if (cur) version_unref(cur);
    /* Versions still referenced (a caller bug) are detached so that their
     * last unref does not touch the freed set. */
    pthread_mutex_lock(&vs->live_mu);
    for (version *v = vs->live.next; v != &vs->live;) {
        version *next = v->next;
        v->prev = v->next = NULL;
        v->vs = NULL;
        v = next;
    }
    pthread_mutex_unlock(&vs->live_mu);
    pthread_mutex_destroy(&vs->live_mu);
    pthread_cond_destroy(&vs->install_cv);
    free(vs->dir);
    free(vs);
}

/* ---------------------------------------------------------------- accessors */

/* One-line accessors of the set's counters (declared in version.h). */
version *vset_current(version_set *vs) { return vs->current; }
uint64_t vset_new_file_number(version_set *vs) { return vs->next_file++; }
uint64_t vset_next_file_number(const version_set *vs) { return vs->next_file; }
uint64_t vset_log_number(const version_set *vs) { return vs->log_number; }
uint64_t vset_last_seq(const version_set *vs) { return vs->last_seq; }
/* vset_pool_uuid -- the recorded pool uuid, if any. */
int vset_pool_uuid(const version_set *vs, uint8_t out[16])
{
    if (vs->has_pool_uuid) memcpy(out, vs->pool_uuid, sizeof vs->pool_uuid);
    return vs->has_pool_uuid;
}
void vset_set_last_seq(version_set *vs, uint64_t seq) { vs->last_seq = seq; }
uint64_t vset_manifest_number(const version_set *vs) { return vs->manifest_number; }

/* vset_mark_file_number_used -- next_file = max(next_file, number + 1). */
void vset_mark_file_number_used(version_set *vs, uint64_t number)
{
    if (vs->next_file <= number) vs->next_file = number + 1;
}

/* ---------------------------------------------------------------- apply */

/* vset_log_then_install -- vset_log_and_apply(_unlocking); mu NULL: nothing is
 * released. Persistence order: the record is appended and synced before the
 * version is installed, so no reader sees a version the MANIFEST could lose. */
static int vset_log_then_install(version_set *vs, version_edit *e, pthread_mutex_t *mu)
{
    if (!vs || !e) return tkv_err(TKV_INVALID, "vset_log_and_apply: NULL argument");
    if (mu) {
        while (vs->installing) pthread_cond_wait(&vs->install_cv, mu);
    }
    if (!vs->manifest)
        return tkv_err(TKV_INVALID, "MANIFEST-%06llu was opened read-only", (unsigned long long)vs->manifest_number);
    if (vs->err)
        return tkv_err(vs->err, "MANIFEST-%06llu is unusable after an earlier failed write or sync: %s",
                       (unsigned long long)vs->manifest_number, vs->errmsg);
    for (size_t i = 0; i < e->nadded; i++) vset_mark_file_number_used(vs, e->added[i].f->number);

    /* 0. Build and check the new version in memory: an invalid edit is
     *    rejected before anything reaches the MANIFEST. With mu, current
     *    cannot change until this call installs (installing is set). */
    version *v;
    TKV_TRY(version_build(vs, vs->current, e, &v));

    /* 1. Encode the edit with next_file and last_seq filled in. */
    e->has_next_file = 1;
    e->next_file = vs->next_file;
    e->has_last_seq = 1;
    e->last_seq = vs->last_seq;
    tkv_buf rec = {0};
    int rc = edit_encode(e, &rec);
    if (rc < 0) {
        buf_free(&rec);
        version_free(v);
        return rc;
    }

    /* 2. Append it to the MANIFEST. 3. Sync. Either failing poisons the set.
     *    With mu, both happen without it: readers and writers go on while
     *    the fsync waits for the device. */
    if (mu) {
        vs->installing = 1;
        pthread_mutex_unlock(mu);
    }
    uint64_t before = wal_size(vs->manifest);
    rc = wal_add_record(vs->manifest, rec.data, rec.len);
    uint64_t appended = wal_size(vs->manifest) - before;
    buf_free(&rec);
    if (rc == 0) rc = wal_sync(vs->manifest);
    if (mu) {
        pthread_mutex_lock(mu);
        vs->installing = 0;
        pthread_cond_broadcast(&vs->install_cv);
    }
    vset_account_meta_io(vs, appended, rc == 0);
    if (rc < 0) {
        vs->err = rc;
        snprintf(vs->errmsg, sizeof vs->errmsg, "%s", tkv_errmsg());
        version_free(v);
        return rc;
    }

    /* 4. Install: the edit is durable. */
    if (e->has_log_number) vs->log_number = e->log_number;
    if (e->has_pool_uuid) {
        vs->has_pool_uuid = 1;
        memcpy(vs->pool_uuid, e->pool_uuid, sizeof e->pool_uuid);
    }
    vset_install_version(vs, v);
    return 0;
}

/* vset_log_and_apply -- logs e to the MANIFEST, syncs it, then installs the new version. */
int vset_log_and_apply(version_set *vs, version_edit *e) { return vset_log_then_install(vs, e, NULL); }

/* vset_log_and_apply_unlocking -- the same, releasing mu around the MANIFEST write and sync. */
int vset_log_and_apply_unlocking(version_set *vs, version_edit *e, pthread_mutex_t *mu)
{
    return vset_log_then_install(vs, e, mu);
}

/* vset_live_files -- sorted, deduplicated numbers of every file any live
 * version references (*out is NULL when *n is 0). */
int vset_live_files(version_set *vs, uint64_t **out, size_t *n)
{
    if (!vs || !out || !n) return tkv_err(TKV_INVALID, "vset_live_files: NULL argument");
    *out = NULL;
    *n = 0;
    pthread_mutex_lock(&vs->live_mu);
    size_t total = 0;
    for (version *v = vs->live.next; v != &vs->live; v = v->next)
        for (int l = 0; l < VERSION_LEVELS; l++) total += v->nfiles[l];
    uint64_t *nums = total ? malloc(total * sizeof *nums) : NULL;
    if (total && !nums) {
        pthread_mutex_unlock(&vs->live_mu);
        return tkv_err(TKV_NO_MEMORY, "out of memory listing %zu live files", total);
    }
    size_t k = 0;
    for (version *v = vs->live.next; v != &vs->live; v = v->next)
        for (int l = 0; l < VERSION_LEVELS; l++)
            for (size_t i = 0; i < v->nfiles[l]; i++) nums[k++] = v->files[l][i]->number;
    pthread_mutex_unlock(&vs->live_mu);
    if (k == 0) return 0;
    qsort(nums, k, sizeof *nums, version_cmp_u64);
    size_t m = 1;
    for (size_t i = 1; i < k; i++)
        if (nums[i] != nums[m - 1]) nums[m++] = nums[i];
    *out = nums;
    *n = m;
    return 0;
}

/* vset_row_floor -- the smallest cursor of row_id over every live version
 * that lists it: 1 and *floor, or 0 if no live version lists the row. */
int vset_row_floor(version_set *vs, uint64_t row_id, uint64_t *floor)
{
    int found = 0;
    uint64_t min = UINT64_MAX;
    pthread_mutex_lock(&vs->live_mu);
    for (version *v = vs->live.next; v != &vs->live; v = v->next) {
        uint64_t c;
        /* A non-current version gains no new refs (readers pin the current
         * one), so one held only by file readers reads no row. */
        if (v != vs->current &&
            __atomic_load_n(&v->file_refs, __ATOMIC_ACQUIRE) == __atomic_load_n(&v->refs, __ATOMIC_ACQUIRE))
            continue;
        if (version_row_cursor(v, row_id, &c)) {
            found = 1;
            if (c < min) min = c;
        }
    }
    pthread_mutex_unlock(&vs->live_mu);
    if (found) *floor = min;
    return found;
}
