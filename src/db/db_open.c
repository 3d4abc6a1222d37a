// SPDX-License-Identifier: Apache-2.0
/*
 * db_open.c -- the public lifecycle API: tkv_open (directory, lock, the
 * tiers, recovery, background threads, in that order; read_only=1 stops
 * before the threads and writes nothing on the way), tkv_close,
 * tkv_destroy, tkv_version, tkv_free.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "db/ckpt_dir.h"
#include "db/compact_merge.h"
#include "db/compact_thread.h"
#include "db/db_impl.h"
#include "db/env.h"
#include "db/files.h"
#include "db/flush.h"
#include "db/mx.h"
#include "db/recover.h"
#include "db/silk.h"
#include "db/superversion.h"
#include "db/write.h"
#include "io/wb.h"
#include "io/wmap.h"
#include "matrix/pool.h"
#include "sched/clock.h"
#include "util/status.h"

#define IDENTITY_FILE DB_IDENTITY_FILE
#define LOCK_FILE     DB_LOCK_FILE

int tkv_version(void) { return TKV_VERSION_NUMBER; }

void tkv_free(void *p) { free(p); }

/* lock_dir -- takes a flock on <dir>/LOCK (per open file description, so a
 * second open in the same process conflicts too): exclusive for a
 * read-write open (creating the file), shared for a read-only one (the
 * file must exist: a read-only open creates nothing). Read-only handles
 * share the directory with each other and with tkv_verify; any of them
 * keeps a read-write open out, and the reverse. */
static int lock_dir(const char *dir, int shared, int *fd_out)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/" LOCK_FILE, dir);
    int fd = shared ? open(path, O_RDONLY | O_CLOEXEC) : open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 && shared && errno == ENOENT)
        return tkv_err(TKV_INVALID,
                       "database %s has no lock file %s: read_only=1 opens only a database that has been opened "
                       "read-write before, and creates nothing",
                       dir, path);
    if (fd < 0) return tkv_err_errno(errno, "open lock file %s", path);
    if (flock(fd, (shared ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
        int e = errno;
        close(fd);
        if (e == EWOULDBLOCK && shared)
            return tkv_err(TKV_BUSY, "database %s is open read-write by another handle (%s is locked)", dir, path);
        if (e == EWOULDBLOCK)
            return tkv_err(TKV_BUSY,
                           "database %s is already open by another handle, read-write or read-only (%s is "
                           "locked)",
                           dir, path);
        return tkv_err_errno(e, "lock %s", path);
    }
    *fd_out = fd;
    return 0;
}

static int file_exists(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* incomplete_checkpoint -- TKV_INVALID: dir is a checkpoint being built
 * or cut short (ckpt_dir.h), not a database. */
static int incomplete_checkpoint(const char *dir)
{
    return tkv_err(TKV_INVALID,
                   "%s is an incomplete checkpoint (it holds " CKPT_MARKER_FILE
                   ": a tkv_checkpoint still builds it, or was cut short); it is not a database -- remove it",
                   dir);
}

/* check_exists -- read_only=1: dir must hold a database (its IDENTITY
 * file); nothing is created whatever create_if_missing says. */
static int check_exists(const char *dir, const struct tkv_options *o)
{
    struct stat sb;
    int st = stat(dir, &sb);
    if (st != 0 && errno != ENOENT && errno != ENOTDIR) return tkv_err_errno(errno, "stat %s", dir);
    if (st != 0 || !S_ISDIR(sb.st_mode) || !file_exists(dir, IDENTITY_FILE))
        return tkv_err(TKV_INVALID, "%s holds no tierkv database (read_only=1 opens an existing one and creates none)",
                       dir);
    if (ckpt_dir_incomplete(dir)) return incomplete_checkpoint(dir);
    if (o->error_if_exists) return tkv_err(TKV_INVALID, "database %s already exists (error_if_exists=1)", dir);
    return 0;
}

/* prepare_dir -- checks/creates the directory and the IDENTITY file per the
 * create_if_missing / error_if_exists options (read_only=1: check_exists). */
static int prepare_dir(const char *dir, const struct tkv_options *o, int *created)
{
    struct stat sb;
    *created = 0;
    if (o->read_only) return check_exists(dir, o);
    if (stat(dir, &sb) != 0) {
        if (errno != ENOENT) return tkv_err_errno(errno, "stat %s", dir);
        if (!o->create_if_missing) return tkv_err(TKV_INVALID, "database %s does not exist (create_if_missing=0)", dir);
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) return tkv_err_errno(errno, "mkdir %s", dir);
    } else if (!S_ISDIR(sb.st_mode)) {
        return tkv_err(TKV_INVALID, "%s exists and is not a directory", dir);
    } else if (ckpt_dir_incomplete(dir)) {
        return incomplete_checkpoint(dir);
    }
    if (file_exists(dir, IDENTITY_FILE)) {
        if (o->error_if_exists) return tkv_err(TKV_INVALID, "database %s already exists (error_if_exists=1)", dir);
        return 0;
    }
    if (!o->create_if_missing) return tkv_err(TKV_INVALID, "%s holds no tierkv database (create_if_missing=0)", dir);
    *created = 1;
    return 0;
}

/* open_rings -- the io_uring pool for async_io=auto|on: rings of
 * BUDGET_RING_DEPTH reads, as many as the DRAM budget allows (budget.h);
 * past that, reads are synchronous (counted as busy in tkv.stats). With
 * auto, a setup that fails (io_uring disabled, seccomp, a memlock limit) is
 * not an error: reads use pread and tkv.stats says why. With on it fails
 * the open. */
static int open_rings(tkv_db *db)
{
    if (db->opts.async_io == ASYNC_OFF) {
        snprintf(db->async_off, sizeof db->async_off, "async_io=off");
        return 0;
    }
    int rc = io_ring_pool_new(BUDGET_RING_DEPTH, db->dram.max_rings, &db->rings);
    if (rc == 0) return 0;
    snprintf(db->async_off, sizeof db->async_off, "%s", tkv_errmsg());
    if (db->opts.async_io == ASYNC_ON) return tkv_err(rc, "async_io=on: %s", db->async_off);
    tkv_err_clear();
    return 0;
}

/* open_env -- with an env (opts.env): attaches db to it (its pool, `pool_bytes`
 * bytes, is already counted against the env's pmem_budget, and is given
 * back if the attach fails); from here tkv_close detaches. */
static int open_env(tkv_db *db, uint64_t pool_bytes)
{
    tkv_env *env = db->opts.env;
    if (!env) return 0;
    /* the pool's threads run flushes too: at the flush thread's nice value (flush.c) */
    int rc = env_attach(env, db->dir, db->opts.background_nice / 5, (unsigned)db->opts.background_slice);
    if (rc < 0) {
        env_pool_release(env, pool_bytes);
        return rc;
    }
    db->env = env;
    db->env_pool = pool_bytes;
    if (!(db->bg = bg_group_new(env_pool(env)))) return tkv_err(TKV_NO_MEMORY, "out of memory opening %s", db->dir);
    return 0;
}

/* open_env_pool -- after mx_open: the pool's real size replaces the planned
 * one in the env's pmem_budget (they differ only if the pool file's size
 * was not the pool's). */
static int open_env_pool(tkv_db *db)
{
    uint64_t real = mx_pool_size(db);
    if (!db->env || real == db->env_pool) return 0;
    env_pool_release(db->env, db->env_pool);
    db->env_pool = 0;
    TKV_TRY(env_pool_reserve(db->env, real, db->dir));
    db->env_pool = real;
    return 0;
}

/* db_new -- a handle for dir with options o, nothing opened yet; NULL on
 * out of memory. */
static tkv_db *db_new(const char *dir, const struct tkv_options *o, const dram_split *dram)
{
    tkv_db *db = calloc(1, sizeof *db);
    if (!db || !(db->dir = strdup(dir))) {
        free(db);
        tkv_err(TKV_NO_MEMORY, "out of memory opening %s", dir);
        return NULL;
    }
    db->opts = *o;
    db->dram = *dram;
    db->lock_fd = -1;
    db->io.bytes_per_sync = o->bytes_per_sync; /* before any file is opened (io.h) */
    db->io.wal_bytes_per_sync = o->wal_bytes_per_sync;
    db->snapshots.next = db->snapshots.prev = &db->snapshots;
    pthread_mutex_init(&db->mu, NULL);
    sched_cond_init(&db->bg_cv); /* CLOCK_MONOTONIC: db_wait_us */
    return db;
}

/* open_dir -- the env, the directory's lock, IDENTITY for a new database,
 * and what must exist before the first data file is opened: the event
 * thread, the WAL helpers, the trash, the scheduler's gate, the read
 * rings. A read-only handle (read_only=1; it has no env, tkv_open) takes a
 * shared lock, writes no probe and starts no thread: no events (it makes
 * none), no WAL helpers, a trash without a thread (it is never given a
 * file). */
static int open_dir(tkv_db *db, int created, uint64_t pool_bytes)
{
    const struct tkv_options *o = &db->opts;
    int ro = o->read_only;
    int rc = open_env(db, pool_bytes); /* first: from here tkv_close detaches */
    if (rc == 0)
        rc = arena_spares_init(&db->mem_spares, memtable_block_size(o->memtable_size), db->dram.share[BUDGET_MEMTABLES],
                               &db->mem_bytes);
    if (rc == 0) rc = lock_dir(db->dir, ro, &db->lock_fd);
    if (rc == 0 && o->direct_io && !ro) rc = io_probe_direct(db->dir); /* refuse early, before writing anything */
    if (rc == 0 && created) {
        static const char identity[] = DB_IDENTITY_TEXT;
        rc = io_write_file_atomic(db->dir, IDENTITY_FILE, identity, sizeof identity - 1, &db->io);
    }
    if (rc == 0 && o->listener && !ro)
        rc = events_start(&db->events, o->listener, o->listener_arg, (unsigned)o->background_slice); /* first */
    /* before the first WAL (io.h); also gives back retired WALs' reserved blocks (wb.h) */
    if (rc == 0 && !ro && o->wal && (o->wal_bytes_per_sync || o->bytes_per_sync)) rc = io_wb_start(&db->io.wb, db->dir);
    /* before the first WAL (io.h); not with sync=1: every fdatasync would also write the zero pages made ahead */
    if (rc == 0 && !ro && o->wal && o->wal_mmap && !o->sync)
        rc = io_wmap_start(&db->io.wmap, (unsigned)o->background_slice);
    if (rc == 0 && trash_new(ro ? 0 : o->delete_chunk, o->delete_rate, &db->trash) < 0)
        rc = tkv_err(TKV_NO_MEMORY, "out of memory starting the trash thread");
    if (rc == 0) rc = silk_open(db); /* installs the I/O gate before any data file is opened */
    if (rc == 0) rc = open_rings(db);
    return rc;
}

/* open_versions -- the MANIFEST's state: recovered and rewritten
 * (vset_open), or with read_only=1 only read, its SSTs checked on disk
 * as vset_open checks them. */
static int open_versions(tkv_db *db)
{
    if (!db->opts.read_only) return vset_open(db->dir, &db->io, &db->vs);
    int rc = vset_open_readonly(db->dir, &db->io, 1, &db->vs);
    if (rc == 1)
        return tkv_err(TKV_INVALID,
                       "database %s has no MANIFEST (its creation was cut short): read_only=1 cannot open it; a "
                       "read-write open completes it",
                       db->dir);
    return rc;
}

/* open_tiers -- the MANIFEST, the pool, the caches, the first view, then
 * WAL replay (recovery) and the tables preloaded. */
static int open_tiers(tkv_db *db)
{
    int rc = open_versions(db);
    if (rc == 0) rc = mx_open(db); /* before WAL replay: rows the MANIFEST does not list go first */
    if (rc == 0) rc = open_env_pool(db);
    if (rc == 0) options_resolve_at_open(&db->opts, mx_pool_size(db));  /* l1_size=0: the pool's size */
    if (rc == 0 && db->env) db->block_cache = env_block_cache(db->env); /* shared */
    else if (rc == 0 && !(db->block_cache = cache_new(db->opts.block_cache_size, -1)))
        rc = tkv_err(TKV_NO_MEMORY, "out of memory creating the block cache");
    if (rc == 0 && !(db->tc = table_cache_new(db->dir, (size_t)db->opts.max_open_files, db->dram.share[BUDGET_TABLES],
                                              db->block_cache, &db->io, db->opts.direct_io ? IO_DIRECT : 0)))
        rc = tkv_err(TKV_NO_MEMORY, "out of memory creating the table cache");
    memtable *mem = NULL;
    if (rc == 0 && !(mem = memtable_new_accounted(db->opts.memtable_size, &db->mem_bytes, &db->mem_spares)))
        rc = tkv_err(TKV_NO_MEMORY, "out of memory creating a memtable");
    rowset *rows = NULL;
    if (rc == 0) rows = mx_initial_rowset(db, &rc);
    if (rc == 0 && !(db->sv = sv_new(mem, NULL, NULL, 0, NULL, 0, rows))) rc = tkv_err(TKV_NO_MEMORY, "out of memory");
    rowset_unref(rows);
    memtable_unref(mem);
    if (rc == 0 && (rc = batch_init(&db->group)) < 0) tkv_err(rc, "out of memory");
    if (rc == 0) rc = recover_wals(db);
    if (rc == 0) cmp_preload_tables(db); /* before clients: the first reads do not open tables */
    if (rc == 0) {
        pthread_mutex_lock(&db->mu);
        files_delete_obsolete(db); /* orphans of a crash, WALs already in SSTs (not with read_only=1) */
        files_update_deep_score(db);
        pthread_mutex_unlock(&db->mu);
    }
    return rc;
}

/* start_background -- the flush, compaction, column and scheduler threads,
 * or with an env their tasks in its pool (a read-write handle only). */
static int start_background(tkv_db *db)
{
    int rc = flush_start(db);
    if (rc == 0) rc = cmp_workers_start(db);
    if (rc == 0) rc = mx_start(db);
    if (rc == 0) rc = silk_start(db);
    return rc;
}

int tkv_open(const char *dir, const tkv_options *opts, tkv_db **out)
{
    if (out) *out = NULL;
    if (!dir || !out) return tkv_err(TKV_INVALID, "tkv_open: NULL %s", dir ? "out" : "dir");
    if (!*dir) return tkv_err(TKV_INVALID, "tkv_open: empty directory name");
    struct tkv_options o;
    if (opts) o = *opts;
    else options_init_defaults(&o);
    /* a read-only handle runs no background work and keeps its own cache:
     * it does not attach to an env (whose first database starts its pool) */
    if (o.read_only) o.env = NULL;
    dram_split dram;
    TKV_TRY(budget_split(&o, &dram)); /* derives memtable_size and block_cache_size under a dram_budget */
    /* an env's pmem_budget is checked before anything is created */
    uint64_t pool_bytes = o.env ? mx_planned_pool_size(&o, dir) : 0;
    if (o.env) TKV_TRY(env_pool_reserve(o.env, pool_bytes, dir));
    int created, rc = prepare_dir(dir, &o, &created);
    tkv_db *db = rc == 0 ? db_new(dir, &o, &dram) : NULL;
    if (rc == 0 && !db) rc = TKV_NO_MEMORY;
    if (rc < 0) {
        if (o.env) env_pool_release(o.env, pool_bytes);
        return rc;
    }
    rc = open_dir(db, created, pool_bytes);
    if (rc == 0) rc = open_tiers(db);
    if (rc == 0 && !o.read_only) rc = start_background(db);
    if (rc < 0) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", tkv_errmsg());
        tkv_close(db);
        return tkv_err(rc, "%s", msg);
    }
    *out = db;
    return TKV_OK;
}

int tkv_close(tkv_db *db)
{
    if (!db) return TKV_OK;
    pthread_mutex_lock(&db->mu); /* a tkv_checkpoint running on another thread finishes first */
    while (db->checkpoints) pthread_cond_wait(&db->bg_cv, &db->mu);
    pthread_mutex_unlock(&db->mu);
    uint64_t its = __atomic_load_n(&db->open_iterators, __ATOMIC_ACQUIRE);
    if (its)
        return tkv_err(TKV_BUSY, "tkv_close: %llu iterator(s) still open; free them first", (unsigned long long)its);
    silk_stop(db);           /* no more pauses: paused deep jobs resume (and are aborted next) */
    cmp_workers_stop(db);    /* running deep compactions stop at their next pause point */
    flush_stop(db);          /* finishes flushing immutable memtables */
    mx_stop(db);             /* after the flush thread: it may need columns to make room */
    events_stop(db->events); /* delivers what is queued while reads still work: listeners may read */
    db->events = NULL;
    /* The first error: the background error that made the database
     * read-only (the caller may not have written since), else the first met
     * while finishing. */
    int rc = db->bg_error ? db_bg_error(db) : 0;
    int orc = write_close_old_wals(db, !db->bg_error); /* switched-away WALs kept for a sync */
    if (rc == 0) rc = orc;
    if (db->wal) {
        if (!db->bg_error && rc == 0) rc = wal_sync(db->wal);
        /* cut at its last record: nothing recycles it before the next open,
         * which reads it (and tkv_verify would note the tail as torn) */
        wal_writer_keep_reserved(db->wal, 0);
        int crc = wal_writer_close(db->wal);
        if (rc == 0) rc = crc;
    }
    while (db->snapshots.next != &db->snapshots) {
        tkv_snapshot *s = db->snapshots.next;
        s->prev->next = s->next;
        s->next->prev = s->prev;
        free(s);
    }
    sv_unref(db->sv);
    io_wb_stop(db->io.wb); /* after the last WAL append; queued ranges are left to the kernel */
    db->io.wb = NULL;
    for (size_t i = 0; i < db->nwal_recycled; i++) { /* obsolete WALs kept to recycle: a closed database keeps none */
        char path[4096];
        files_wal_path(db, db->wal_recycled[i].number, path, sizeof path);
        tkv_errmsg_saved saved;
        tkv_errmsg_save(&saved);
        if (io_remove(path) < 0) tkv_errmsg_restore(&saved); /* (the next open deletes or keeps it) */
    }
    db->nwal_recycled = 0;
    io_wmap_stop(db->io.wmap); /* every WAL is closed: none is mapped */
    db->io.wmap = NULL;
    trash_free(db->trash); /* what is still queued is unlinked now */
    table_cache_free(db->tc);
    if (db->vs) vset_close(db->vs);
    int mrc = mx_close(db); /* after every rowset is gone */
    if (rc == 0) rc = mrc;
    silk_close(db);                            /* after every thread that passes the gate has ended */
    if (!db->env) cache_free(db->block_cache); /* an env's is shared */
    io_ring_pool_free(db->rings);              /* every reader has given its ring back */
    free(db->pending);
    pthread_cond_destroy(&db->bg_cv);
    buf_free(&db->group.rep);
    if (db->lock_fd >= 0) close(db->lock_fd);
    arena_spares_destroy(&db->mem_spares); /* every memtable is gone with the last view */
    pthread_mutex_destroy(&db->mu);
    if (db->env) {             /* last: the env may be freed once this returns */
        bg_group_free(db->bg); /* every task of it has been joined */
        env_pool_release(db->env, db->env_pool);
        env_detach(db->env);
    }
    free(db->dir);
    free(db);
    return rc;
}

/* is_db_file -- names tierkv creates in its directory. */
static int is_db_file(const char *name)
{
    static const char *exact[] = {IDENTITY_FILE, LOCK_FILE,    IDENTITY_FILE ".tmp", "CURRENT",       "CURRENT.tmp",
                                  "matrix.pmem", MX_POOL_FILE, MX_POOL_FILE ".tmp",  CKPT_MARKER_FILE};
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (!strcmp(name, exact[i])) return 1;
    const char *dot = strrchr(name, '.');
    if (!strncmp(name, "MANIFEST-", 9)) return 1;
    int typed = dot && (!strcmp(dot, ".wal") || !strcmp(dot, ".sst"));
    if (dot && !strcmp(dot, ".trash") && dot - name > 4 &&
        (!strncmp(dot - 4, ".sst", 4) || !strncmp(dot - 4, ".wal", 4))) { /* "<digits>.sst.trash" (trash.h) */
        dot -= 4;
        typed = 1;
    }
    if (typed) {
        for (const char *p = name; p < dot; p++)
            if (*p < '0' || *p > '9') return 0;
        return 1;
    }
    return 0;
}

/* destroy_pool -- removes a pool kept outside `dir` (pmem_path): the one
 * <dir>/POOL names, if it still is this database's pool (its header has the
 * recorded uuid) and no one has it open (its flock, pool.c). A pool inside
 * the directory goes with the directory's files. */
static int destroy_pool(const char *dir)
{
    char path[PATH_MAX], inside[PATH_MAX];
    uint8_t want[16], have[16];
    if (!mx_recorded_pool(dir, path, sizeof path, want)) return 0;
    snprintf(inside, sizeof inside, "%s/matrix.pmem", dir);
    char *in_dir = realpath(inside, NULL);
    int same = in_dir && !strcmp(in_dir, path);
    free(in_dir);
    if (same || pool_file_uuid(path, have) < 0 || memcmp(want, have, 16) != 0) return 0; /* gone, or another's */
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    int rc = 0;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0)
        rc = errno == EWOULDBLOCK ? tkv_err(TKV_BUSY, "pmem pool %s of %s is in use", path, dir)
                                  : tkv_err_errno(errno, "lock pmem pool %s", path);
    if (rc == 0) rc = io_remove(path);
    close(fd);
    return rc;
}

int tkv_destroy(const char *dir)
{
    if (!dir) return tkv_err(TKV_INVALID, "tkv_destroy: NULL dir");
    struct stat sb;
    if (stat(dir, &sb) != 0) return errno == ENOENT ? TKV_OK : tkv_err_errno(errno, "stat %s", dir);
    if (!S_ISDIR(sb.st_mode)) return tkv_err(TKV_INVALID, "%s is not a directory", dir);
    int lock_fd;
    TKV_TRY(lock_dir(dir, 0, &lock_fd));
    int rc = destroy_pool(dir); /* first: a pool in use stops the whole destroy */
    if (rc < 0) {
        close(lock_fd);
        return rc;
    }
    DIR *d = opendir(dir);
    if (!d) rc = tkv_err_errno(errno, "opendir %s", dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!is_db_file(e->d_name) || !strcmp(e->d_name, LOCK_FILE)) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        int r = io_remove(path);
        if (rc == 0) rc = r;
    }
    if (d) closedir(d);
    char lock[4096];
    snprintf(lock, sizeof lock, "%s/" LOCK_FILE, dir);
    unlink(lock);
    close(lock_fd);
    if (rc == 0) rmdir(dir); /* fails harmlessly if the user kept other files there */
    return rc;
}
