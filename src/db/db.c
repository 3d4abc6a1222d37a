/*
 * db.c -- open, recovery, close and the write path (group commit) of tierkv.
 *
 * Durability invariants:
 *  (1) A write is acknowledged only after its group's WAL record has been
 *      handed to the OS (write()), and with TKV_SYNC after fdatasync.
 *  (2) A group is one WAL record: it survives a crash whole or not at all.
 *  (3) Records are applied to the memtable in WAL order, and last_seq is
 *      published only after the whole group is in the memtable.
 *  (4) After a WAL write or sync error the database is read-only (sticky
 *      bg_error): a later write could land after a partial record.
 *  (5) WAL files are only ever deleted once their data is durable in another
 *      tier (none exists yet: every WAL is replayed on open).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "db/compact.h"
#include "db/db_impl.h"
#include "db/mx.h"
#include "io/wb.h"
#include "mem/batch.h"
#include "util/status.h"

#define IDENTITY_FILE "IDENTITY"
#define LOCK_FILE "LOCK"
#define GROUP_MAX_BYTES (1u << 20)

int tkv_version(void) { return TKV_VERSION_NUMBER; }

void tkv_free(void *p) { free(p); }

void db_wal_path(const tkv_db *db, uint64_t number, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%06llu.wal", db->dir, (unsigned long long)number);
}

void db_set_bg_error(tkv_db *db, int code)
{
    if (db->bg_error) return;
    db->bg_error = code;
    snprintf(db->bg_errmsg, sizeof db->bg_errmsg, "%s", tkv_errmsg());
}

/* ------------------------------------------------------------ superversions */

superversion *sv_ref(superversion *sv)
{
    __atomic_fetch_add(&sv->refs, 1, __ATOMIC_RELAXED);
    return sv;
}

void sv_unref(superversion *sv)
{
    if (!sv || __atomic_sub_fetch(&sv->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    memtable_unref(sv->mem);
    for (size_t i = 0; i < sv->nimm; i++) memtable_unref(sv->imm[i]);
    rowset_unref(sv->rows);
    free(sv->imm);
    free(sv->imm_wal);
    free(sv);
}

/* sv_new -- a superversion holding mem and imm[0..nimm) (+ one extra imm slot
 * `extra`/`extra_wal` appended when non-NULL) and `rows`; takes new
 * references. */
static superversion *sv_new(memtable *mem, memtable *const *imm, const uint64_t *imm_wal, size_t nimm,
                            memtable *extra, uint64_t extra_wal, rowset *rows)
{
    superversion *sv = calloc(1, sizeof *sv);
    size_t n = nimm + (extra != NULL);
    if (!sv) return NULL;
    sv->imm = calloc(n ? n : 1, sizeof *sv->imm);
    sv->imm_wal = calloc(n ? n : 1, sizeof *sv->imm_wal);
    if (!sv->imm || !sv->imm_wal) {
        free(sv->imm);
        free(sv->imm_wal);
        free(sv);
        return NULL;
    }
    sv->refs = 1;
    sv->mem = mem;
    memtable_ref(mem);
    for (size_t i = 0; i < nimm; i++) {
        sv->imm[i] = imm[i];
        sv->imm_wal[i] = imm_wal[i];
        memtable_ref(imm[i]);
    }
    if (extra) {
        sv->imm[nimm] = extra;
        sv->imm_wal[nimm] = extra_wal;
        memtable_ref(extra);
    }
    sv->nimm = n;
    sv->rows = rowset_ref(rows);
    return sv;
}

int sv_replace(tkv_db *db, size_t drop_imm, rowset *rows)
{
    superversion *cur = db->sv;
    if (drop_imm > cur->nimm) drop_imm = cur->nimm;
    superversion *nsv = sv_new(cur->mem, cur->imm + drop_imm, cur->imm_wal + drop_imm, cur->nimm - drop_imm, NULL, 0,
                               rows ? rows : cur->rows);
    if (!nsv) return tkv_err(TKV_NO_MEMORY, "out of memory installing a superversion");
    db->sv = nsv;
    sv_unref(cur);
    return 0;
}

uint64_t db_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

void db_timed_wait(tkv_db *db, uint64_t us)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* bg_cv uses the monotonic clock (tkv_open) */
    uint64_t ns = (uint64_t)ts.tv_nsec + (us % 1000000u) * 1000u;
    ts.tv_sec += (time_t)(us / 1000000u + ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    pthread_cond_timedwait(&db->bg_cv, &db->mu, &ts);
}

superversion *db_get_view(tkv_db *db, const tkv_snapshot *snap, uint64_t *seq, version **v)
{
    pthread_mutex_lock(&db->mu);
    superversion *sv = sv_ref(db->sv);
    *v = vset_current(db->vs);
    version_ref(*v);
    *seq = snap ? snap->seq : __atomic_load_n(&db->last_seq, __ATOMIC_ACQUIRE);
    pthread_mutex_unlock(&db->mu);
    return sv;
}

superversion *db_get_sv(tkv_db *db, const tkv_snapshot *snap, uint64_t *seq)
{
    pthread_mutex_lock(&db->mu);
    superversion *sv = sv_ref(db->sv);
    *seq = snap ? snap->seq : __atomic_load_n(&db->last_seq, __ATOMIC_ACQUIRE);
    pthread_mutex_unlock(&db->mu);
    return sv;
}

/* ------------------------------------------------------------ memtable switch */

/* switch_memtable -- makes the active memtable immutable and starts a new one
 * with a new WAL file. Caller holds mu and is the write leader (or open).
 * On failure nothing changes. */
static int switch_memtable(tkv_db *db)
{
    uint64_t number = vset_new_file_number(db->vs);
    wal_writer *w = NULL;
    if (db->opts.wal) {
        char path[4096];
        db_wal_path(db, number, path, sizeof path);
        TKV_TRY(wal_writer_open(path, &db->io, &w));
    }
    memtable *mem = memtable_new_sized(db->opts.memtable_size);
    superversion *old = db->sv, *sv = NULL;
    if (mem) sv = sv_new(mem, old->imm, old->imm_wal, old->nimm, old->mem, db->wal_number, old->rows);
    if (mem) memtable_unref(mem); /* sv holds it */
    if (!sv) {
        wal_writer_close(w);
        if (w) {
            char path[4096];
            db_wal_path(db, number, path, sizeof path);
            io_remove(path);
        }
        return tkv_err(TKV_NO_MEMORY, "out of memory switching memtables");
    }
    /* The old WAL's bytes were all handed to the OS before acknowledgement (1);
     * closing it without a sync loses nothing on a process crash. */
    if (db->wal) wal_writer_close(db->wal);
    db->wal = w;
    db->wal_number = number;
    db->sv = sv;
    sv_unref(old);
    ctr_add(&db->ctr.memtable_switches, 1);
    return 0;
}

/* ------------------------------------------------------------ write path */

typedef struct insert_ctx {
    memtable *mem;
} insert_ctx;

static int insert_record(void *arg, uint64_t seq, ikey_type type, tkv_slice key, tkv_slice value)
{
    insert_ctx *c = arg;
    return memtable_add(c->mem, seq, type, key.p, key.n, value.p, value.n);
}

/* count_record -- accounts one accepted user record. */
static int count_record(void *arg, uint64_t seq, ikey_type type, tkv_slice key, tkv_slice value)
{
    (void)seq;
    db_counters *c = arg;
    ctr_add(type == IKEY_VALUE ? &c->user_puts : &c->user_deletes, 1);
    ctr_add(&c->user_bytes_written, key.n + value.n);
    return 0;
}

/* build_group -- merges the batches of the queued writers that can share one
 * WAL record with the leader: same no_wal, no sync writer behind a non-sync
 * leader, at most GROUP_MAX_BYTES (a small leader batch limits the group so
 * that small writes are not delayed behind large ones). Returns the last
 * writer of the group. Caller holds mu. */
static writer *build_group(tkv_db *db, const uint8_t **rep, size_t *len)
{
    writer *first = db->wq_head, *last = first;
    size_t size = first->batch->rep.len;
    size_t max = size <= (128u << 10) ? size + (128u << 10) : GROUP_MAX_BYTES;
    *rep = first->batch->rep.data;
    *len = size;
    int merged = 0;
    for (writer *w = first->next; w; w = w->next) {
        if (!w->batch || w->no_wal != first->no_wal || (w->sync && !first->sync)) break;
        size_t add = w->batch->rep.len - BATCH_HEADER;
        if (size + add > max) break;
        if (!merged) {
            if (batch_init(&db->group) < 0 || batch_append(&db->group, first->batch->rep.data, first->batch->rep.len) < 0)
                break; /* out of memory: write the leader alone */
            merged = 1;
        }
        if (batch_append(&db->group, w->batch->rep.data, w->batch->rep.len) < 0) break;
        size += add;
        last = w;
    }
    if (merged) {
        *rep = db->group.rep.data;
        *len = db->group.rep.len;
    }
    return last;
}


/* container_fill -- the write controller's "container" fill fraction:
 * the matrix pool's pages in use, or with l0=sst 1.0 once L0 holds
 * l0_slowdown_trigger files (0 below). Caller holds mu. */
static double container_fill(tkv_db *db, size_t l0)
{
    if (db->mx.pool) {
        pool_stats st;
        pool_get_stats(db->mx.pool, &st);
        return st.pages_total ? (double)(st.pages_total - st.pages_free) / (double)st.pages_total : 0.0;
    }
    return l0 >= (size_t)db->opts.l0_slowdown_trigger ? 1.0 : 0.0;
}

/* make_room -- called by the write leader with mu held before it writes a
 * group of `bytes`: makes sure the active memtable has room (or, with force,
 * switches a non-empty one), and lets the write controller (sched/wctl.h)
 * pace or stop the leader -- and so every writer queued behind it:
 *   - a full active memtable is switched while a memtable slot is free
 *     (memtables - 1 immutables at most; more while only open views pin a
 *     full pool, mx_pinned_full);
 *   - SLOWDOWN (one memtable left, or the container >= 90 % full): paced
 *     in steps of <= 1 ms at the minimum recent flush bandwidth (prl), at
 *     16 MiB/s (classic) or not at all (off);
 *   - STOP: the active memtable is full and no slot is free, or (l0=sst)
 *     L0 holds l0_stop_trigger files: wait for a flush or compaction.
 * Sleeping releases mu. Waits are counted in tkv.stats (stalls:) and
 * tkv.sched (write_controller:). */
static int make_room(tkv_db *db, int force, size_t bytes)
{
    wctl_write t = WCTL_WRITE_INIT;
    int first = 1, paced = 0, stopped = 0, rc = 0;
    uint64_t waited_from = 0;
    for (;;) {
        if (db->bg_error) {
            rc = tkv_err(db->bg_error, "database is read-only after an earlier error: %s", db->bg_errmsg);
            break;
        }
        size_t l0 = vset_current(db->vs)->nfiles[0];
        int empty = memtable_num_entries(db->sv->mem) == 0;
        int active_full = force ? !empty : memtable_memory_usage(db->sv->mem) >= db->opts.memtable_size;
        int stop_l0 = l0 >= (size_t)db->opts.l0_stop_trigger;
        size_t max_imm = (size_t)db->opts.memtables - 1;
        size_t slots = db->sv->nimm < max_imm ? max_imm - db->sv->nimm : 0;
        if (active_full && !slots && !stop_l0 && mx_pinned_full(db)) {
            slots = 1; /* room is held only by open views: queue in DRAM instead of waiting (mx.h) */
            ctr_add(&db->mx.ctr.pinned_switches, 1);
        }
        if (active_full && slots && !stop_l0) {
            rc = switch_memtable(db);
            pthread_cond_broadcast(&db->bg_cv); /* wake the flush thread */
            if (rc < 0 || force) break;
            continue;
        }
        if (force && !active_full) break; /* nothing to switch */
        wctl_input in;
        in.max_memtables = (unsigned)db->opts.memtables;
        in.mutable_left = (active_full || stop_l0) ? 0 : 1 + (unsigned)slots;
        in.container_fill = container_fill(db, l0);
        uint64_t now = db_now_us();
        uint64_t d = wctl_delay_us(db->silk.wc, &t, &in, first ? bytes : 0, now);
        first = 0;
        if (d == 0 && in.mutable_left == 0) d = 1000; /* never write past a full memtable */
        if (d == 0) break;
        if (!waited_from) waited_from = now;
        if (in.mutable_left == 0) {
            if (!stopped && !stop_l0 && !__atomic_load_n(&db->mx.flush_blocked, __ATOMIC_RELAXED))
                ctr_add(&db->silk.ctr.stops_flush_running, 1);
            stopped = 1;
            __atomic_store_n(&db->write_stopped, 1, __ATOMIC_RELAXED); /* the monitor pauses deep work */
            pthread_cond_broadcast(&db->bg_cv);
            db_timed_wait(db, d);
        } else {
            paced = 1;
            pthread_mutex_unlock(&db->mu);
            sched_sleep_us(d);
            pthread_mutex_lock(&db->mu);
        }
    }
    if (stopped) __atomic_store_n(&db->write_stopped, 0, __ATOMIC_RELAXED);
    if (waited_from) {
        uint64_t w = db_now_us() - waited_from;
        if (paced) ctr_add(&db->ctr.stall_slowdowns, 1);
        if (stopped) ctr_add(&db->ctr.stall_stops, 1);
        ctr_add(&db->ctr.stall_micros, w);
        if (w > 10000) ctr_add(&db->silk.ctr.stalls_over_10ms, 1);
        uint64_t m = ctr_get(&db->silk.ctr.max_stall_us);
        while (w > m && !__atomic_compare_exchange_n(&db->silk.ctr.max_stall_us, &m, w, 0, __ATOMIC_RELAXED,
                                                     __ATOMIC_RELAXED)) {
        }
    }
    return rc;
}

/* db_write -- queues a batch, and if this thread becomes the leader writes its
 * group: WAL record (+ sync), memtable inserts, publish sequence. */
static int db_write(tkv_db *db, struct tkv_batch *b, unsigned flags)
{
    writer w = {.batch = b, .sync = (flags & TKV_SYNC) || db->opts.sync, .no_wal = (flags & TKV_NO_WAL) || !db->opts.wal};
    pthread_cond_init(&w.cv, NULL);
    pthread_mutex_lock(&db->mu);
    if (db->wq_tail) db->wq_tail->next = &w;
    else db->wq_head = &w;
    db->wq_tail = &w;
    while (!w.done && db->wq_head != &w) pthread_cond_wait(&w.cv, &db->mu);
    if (w.done) {
        pthread_mutex_unlock(&db->mu);
        pthread_cond_destroy(&w.cv);
        if (w.status < 0) tkv_err(w.status, "%s", db->bg_errmsg);
        return w.status;
    }

    /* This thread leads a group. */
    size_t group_bytes = 0; /* the controller charges what the group will write (about: the queue) */
    for (writer *x = &w; b && x; x = x->next) group_bytes += x->batch ? x->batch->rep.len : 0;
    int rc = make_room(db, b == NULL, group_bytes);
    memtable *mem = db->sv->mem;
    const uint8_t *rep = NULL;
    size_t len = 0;
    writer *last = &w;
    uint64_t seq = db->last_seq;
    uint32_t count = 0;
    if (rc == 0 && b) {
        last = build_group(db, &rep, &len);
        count = batch_count(rep);
        batch_set_seq((uint8_t *)rep, seq + 1);
        wal_writer *wal = last->no_wal ? NULL : db->wal;
        int sync = 0;
        for (writer *x = &w;; x = x->next) {
            sync |= x->sync;
            if (x == last) break;
        }
        pthread_mutex_unlock(&db->mu);

        if (wal) {
            rc = wal_add_record(wal, rep, len);
            if (rc == 0) ctr_add(&db->ctr.wal_records, 1);
            if (rc == 0 && sync) {
                rc = wal_sync(wal);
                ctr_add(&db->ctr.wal_syncs, 1);
            }
        }
        if (rc == 0) {
            insert_ctx ic = {mem};
            rc = batch_iterate(rep, len, insert_record, &ic);
            if (rc == 0) batch_iterate(rep, len, count_record, &db->ctr);
            memtable_add_batch_bytes(mem, len); /* the flush's bandwidth sample is in these units */
        }
        pthread_mutex_lock(&db->mu);
        if (rc < 0) db_set_bg_error(db, rc);
        else __atomic_store_n(&db->last_seq, seq + count, __ATOMIC_RELEASE);
        ctr_add(&db->ctr.groups, 1);
    }

    /* Hand results to every member of the group and pass leadership on. */
    for (;;) {
        writer *x = db->wq_head;
        db->wq_head = x->next;
        if (!db->wq_head) db->wq_tail = NULL;
        x->status = rc;
        x->done = 1;
        if (x != &w) pthread_cond_signal(&x->cv);
        if (x == last) break;
    }
    if (db->wq_head) pthread_cond_signal(&db->wq_head->cv);
    if (rc < 0 && db->bg_errmsg[0] == '\0') snprintf(db->bg_errmsg, sizeof db->bg_errmsg, "%s", tkv_errmsg());
    pthread_mutex_unlock(&db->mu);
    pthread_cond_destroy(&w.cv);
    if (b) ctr_add(&db->ctr.batches, 1);
    return rc;
}

static int check_flags(unsigned flags)
{
    if (flags & ~(TKV_SYNC | TKV_NO_WAL)) return tkv_err(TKV_INVALID, "unknown write flags 0x%x", flags);
    if ((flags & TKV_SYNC) && (flags & TKV_NO_WAL))
        return tkv_err(TKV_INVALID, "TKV_SYNC and TKV_NO_WAL together make no sense");
    return 0;
}

int tkv_write(tkv_db *db, tkv_batch *b, unsigned flags)
{
    if (!db || !b) return tkv_err(TKV_INVALID, "tkv_write: NULL %s", db ? "batch" : "db");
    TKV_TRY(check_flags(flags));
    if (batch_count(b->rep.data) == 0) return TKV_OK;
    return db_write(db, b, flags);
}

/* single_write -- tkv_put/tkv_delete through a stack batch. */
static int single_write(tkv_db *db, ikey_type t, const void *key, size_t klen, const void *val, size_t vlen,
                        unsigned flags)
{
    if (!db) return tkv_err(TKV_INVALID, "NULL db");
    TKV_TRY(check_flags(flags));
    struct tkv_batch b = {{0}};
    int rc = batch_init(&b);
    if (rc == 0) rc = t == IKEY_VALUE ? tkv_batch_put(&b, key, klen, val, vlen) : tkv_batch_delete(&b, key, klen);
    if (rc == 0) rc = db_write(db, &b, flags);
    buf_free(&b.rep);
    return rc;
}

int tkv_put(tkv_db *db, const void *key, size_t klen, const void *val, size_t vlen, unsigned flags)
{
    return single_write(db, IKEY_VALUE, key, klen, val, vlen, flags);
}

int tkv_delete(tkv_db *db, const void *key, size_t klen, unsigned flags)
{
    return single_write(db, IKEY_DELETION, key, klen, NULL, 0, flags);
}

/* ------------------------------------------------------------ recovery */

typedef struct replay_ctx {
    tkv_db *db;
    const char *path;
    uint64_t max_seq;
} replay_ctx;

/* replay_record -- applies one WAL record to the active memtable, switching
 * memtables as the write path would. */
static int replay_record(void *arg, const uint8_t *payload, size_t n, uint64_t offset)
{
    replay_ctx *c = arg;
    tkv_db *db = c->db;
    if (batch_validate(payload, n) < 0)
        return tkv_err(TKV_CORRUPTION, "%s: record at offset %llu has a valid checksum but a malformed batch",
                       c->path, (unsigned long long)offset);
    if (memtable_memory_usage(db->sv->mem) >= db->opts.memtable_size) {
        /* Recovered memtables stay tied to the WAL they came from (wal_number). */
        memtable *mem = memtable_new_sized(db->opts.memtable_size);
        superversion *sv = mem ? sv_new(mem, db->sv->imm, db->sv->imm_wal, db->sv->nimm, db->sv->mem, db->wal_number,
                                        db->sv->rows)
                               : NULL;
        if (mem) memtable_unref(mem);
        if (!sv) return tkv_err(TKV_NO_MEMORY, "out of memory during recovery");
        sv_unref(db->sv);
        db->sv = sv;
    }
    insert_ctx ic = {db->sv->mem};
    TKV_TRY(batch_iterate(payload, n, insert_record, &ic));
    uint32_t count = batch_count(payload);
    uint64_t seq = batch_seq(payload);
    if (count && seq + count - 1 > c->max_seq) c->max_seq = seq + count - 1;
    ctr_add(&db->ctr.recovered_records, 1);
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* list_wals -- sorted numbers of the *.wal files in dir. */
static int list_wals(const char *dir, uint64_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return tkv_err_errno(errno, "opendir %s", dir);
    size_t cap = 0;
    struct dirent *e;
    int rc = 0;
    while ((e = readdir(d))) {
        char *end;
        unsigned long long num = strtoull(e->d_name, &end, 10);
        if (end == e->d_name || strcmp(end, ".wal") != 0) continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            uint64_t *p = realloc(*out, cap * sizeof *p);
            if (!p) { rc = tkv_err(TKV_NO_MEMORY, "out of memory listing %s", dir); break; }
            *out = p;
        }
        (*out)[(*n)++] = num;
    }
    closedir(d);
    if (rc == 0 && *n) qsort(*out, *n, sizeof **out, cmp_u64);
    return rc;
}

/* recover -- replays the WALs the MANIFEST does not cover (number >=
 * log_number) in order into memtables; each WAL's data ends up in memtables
 * tagged with that WAL's number, so the flush thread can retire WALs one by
 * one. Then a fresh WAL is opened for new writes (a torn tail of an old WAL
 * is never followed by new records in the same file). */
static int recover(tkv_db *db)
{
    uint64_t *nums;
    size_t n;
    TKV_TRY(list_wals(db->dir, &nums, &n));
    int rc = 0;
    uint64_t log_number = vset_log_number(db->vs);
    replay_ctx c = {db, NULL, vset_last_seq(db->vs)};
    for (size_t i = 0; i < n && rc == 0; i++) {
        vset_mark_file_number_used(db->vs, nums[i]);
        if (nums[i] < log_number) continue; /* already in SSTs; deleted as obsolete */
        char path[4096];
        db_wal_path(db, nums[i], path, sizeof path);
        c.path = path;
        if (memtable_num_entries(db->sv->mem) > 0) {
            memtable *mem = memtable_new_sized(db->opts.memtable_size);
            superversion *sv = mem ? sv_new(mem, db->sv->imm, db->sv->imm_wal, db->sv->nimm, db->sv->mem,
                                             db->wal_number, db->sv->rows)
                                   : NULL;
            if (mem) memtable_unref(mem);
            if (!sv) { rc = tkv_err(TKV_NO_MEMORY, "out of memory during recovery"); break; }
            sv_unref(db->sv);
            db->sv = sv;
        }
        db->wal_number = nums[i];
        wal_replay_stats st = {0};
        rc = wal_replay(path, &db->io, replay_record, &c, &st);
        ctr_add(&db->ctr.recovered_torn_records, st.torn_tail_records);
        ctr_add(&db->ctr.recovered_torn_bytes, st.torn_tail_bytes);
        if (rc == TKV_CORRUPTION && !db->opts.paranoid_checks) rc = 0; /* keep what was read */
    }
    free(nums);
    if (rc < 0) return rc;
    db->last_seq = c.max_seq;
    vset_set_last_seq(db->vs, c.max_seq);
    if (memtable_num_entries(db->sv->mem) > 0) return switch_memtable(db); /* opens the new WAL */
    if (db->opts.wal) {
        char path[4096];
        db->wal_number = vset_new_file_number(db->vs);
        db_wal_path(db, db->wal_number, path, sizeof path);
        TKV_TRY(wal_writer_open(path, &db->io, &db->wal));
    } else {
        db->wal_number = vset_new_file_number(db->vs);
    }
    return 0;
}

/* ------------------------------------------------------------ open / close */

/* lock_dir -- takes an exclusive flock on <dir>/LOCK (per open file
 * description, so a second open in the same process conflicts too). */
static int lock_dir(const char *dir, int *fd_out)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/" LOCK_FILE, dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return tkv_err_errno(errno, "open lock file %s", path);
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(fd);
        if (e == EWOULDBLOCK) return tkv_err(TKV_BUSY, "database %s is already open (locked by %s)", dir, path);
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

/* prepare_dir -- checks/creates the directory and the IDENTITY file per the
 * create_if_missing / error_if_exists options. */
static int prepare_dir(const char *dir, const struct tkv_options *o, int *created)
{
    struct stat sb;
    *created = 0;
    if (stat(dir, &sb) != 0) {
        if (errno != ENOENT) return tkv_err_errno(errno, "stat %s", dir);
        if (!o->create_if_missing) return tkv_err(TKV_INVALID, "database %s does not exist (create_if_missing=0)", dir);
        if (mkdir(dir, 0755) != 0 && errno != EEXIST) return tkv_err_errno(errno, "mkdir %s", dir);
    } else if (!S_ISDIR(sb.st_mode)) {
        return tkv_err(TKV_INVALID, "%s exists and is not a directory", dir);
    }
    if (file_exists(dir, IDENTITY_FILE)) {
        if (o->error_if_exists) return tkv_err(TKV_INVALID, "database %s already exists (error_if_exists=1)", dir);
        return 0;
    }
    if (!o->create_if_missing) return tkv_err(TKV_INVALID, "%s holds no tierkv database (create_if_missing=0)", dir);
    *created = 1;
    return 0;
}

int tkv_open(const char *dir, const tkv_options *opts, tkv_db **out)
{
    if (out) *out = NULL;
    if (!dir || !out) return tkv_err(TKV_INVALID, "tkv_open: NULL %s", dir ? "out" : "dir");
    if (!*dir) return tkv_err(TKV_INVALID, "tkv_open: empty directory name");
    struct tkv_options o;
    if (opts) o = *opts;
    else options_init_defaults(&o);

    int created;
    TKV_TRY(prepare_dir(dir, &o, &created));
    tkv_db *db = calloc(1, sizeof *db);
    if (!db || !(db->dir = strdup(dir))) {
        free(db);
        return tkv_err(TKV_NO_MEMORY, "out of memory opening %s", dir);
    }
    db->opts = o;
    db->lock_fd = -1;
    db->io.bytes_per_sync = o.bytes_per_sync; /* before any file is opened (io.h) */
    db->snapshots.next = db->snapshots.prev = &db->snapshots;
    pthread_mutex_init(&db->mu, NULL);
    int rc = lock_dir(dir, &db->lock_fd);
    if (rc == 0 && o.direct_io) rc = io_probe_direct(dir); /* refuse early, before writing anything */
    if (rc == 0 && created) {
        static const char identity[] = "tierkv database\nformat 1\n";
        rc = io_write_file_atomic(dir, IDENTITY_FILE, identity, sizeof identity - 1, &db->io);
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* db_timed_wait */
    pthread_cond_init(&db->bg_cv, &ca);
    pthread_condattr_destroy(&ca);
    if (rc == 0 && o.wal && o.bytes_per_sync) rc = io_wb_start(&db->io.wb); /* before the first WAL (io.h) */
    if (rc == 0 && trash_new(o.delete_chunk, o.delete_rate, &db->trash) < 0)
        rc = tkv_err(TKV_NO_MEMORY, "out of memory starting the trash thread");
    if (rc == 0) rc = silk_open(db); /* installs the I/O gate before any data file is opened */
    if (rc == 0) rc = vset_open(dir, &db->io, &db->vs);
    if (rc == 0) rc = mx_open(db); /* before WAL replay: rows the MANIFEST does not list go first */
    if (rc == 0 && !(db->block_cache = cache_new(db->opts.block_cache_size, 4)))
        rc = tkv_err(TKV_NO_MEMORY, "out of memory creating the block cache");
    if (rc == 0 && !(db->tc = table_cache_new(dir, (size_t)db->opts.max_open_files, db->block_cache, &db->io,
                                                  db->opts.direct_io ? IO_DIRECT : 0)))
        rc = tkv_err(TKV_NO_MEMORY, "out of memory creating the table cache");
    memtable *mem = NULL;
    if (rc == 0 && !(mem = memtable_new_sized(db->opts.memtable_size))) rc = tkv_err(TKV_NO_MEMORY, "out of memory creating a memtable");
    rowset *rows = NULL;
    if (rc == 0 && db->mx.pool && !(rows = mx_initial_rowset(db))) rc = tkv_err(TKV_NO_MEMORY, "out of memory");
    if (rc == 0 && !(db->sv = sv_new(mem, NULL, NULL, 0, NULL, 0, rows))) rc = tkv_err(TKV_NO_MEMORY, "out of memory");
    rowset_unref(rows);
    memtable_unref(mem);
    if (rc == 0 && (rc = batch_init(&db->group)) < 0) tkv_err(rc, "out of memory");
    if (rc == 0) rc = recover(db);
    if (rc == 0) db_preload_tables(db); /* before clients: the first reads do not open tables */
    if (rc == 0) {
        pthread_mutex_lock(&db->mu);
        delete_obsolete_files(db); /* orphans of a crash, WALs already in SSTs */
        pthread_mutex_unlock(&db->mu);
        rc = db_start_background(db);
        if (rc == 0) rc = mx_start(db);
        if (rc == 0) rc = silk_start(db);
    }
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
    uint64_t its = __atomic_load_n(&db->open_iterators, __ATOMIC_ACQUIRE);
    if (its) return tkv_err(TKV_BUSY, "tkv_close: %llu iterator(s) still open; free them first", (unsigned long long)its);
    silk_stop(db);          /* no more pauses: paused deep jobs resume (and are aborted next) */
    db_stop_background(db); /* finishes flushing immutable memtables */
    mx_stop(db);            /* after the flush thread: it may need columns to make room */
    int rc = 0;
    if (db->wal) {
        if (!db->bg_error) rc = wal_sync(db->wal);
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
    trash_free(db->trash); /* what is still queued is unlinked now */
    table_cache_free(db->tc);
    if (db->vs) vset_close(db->vs);
    mx_close(db); /* after every rowset is gone */
    silk_close(db); /* after every thread that passes the gate has ended */
    cache_free(db->block_cache);
    free(db->pending);
    pthread_cond_destroy(&db->bg_cv);
    buf_free(&db->group.rep);
    if (db->lock_fd >= 0) close(db->lock_fd);
    pthread_mutex_destroy(&db->mu);
    free(db->dir);
    free(db);
    return rc;
}

/* is_db_file -- names tierkv creates in its directory. */
static int is_db_file(const char *name)
{
    static const char *exact[] = {IDENTITY_FILE, LOCK_FILE, IDENTITY_FILE ".tmp", "CURRENT", "CURRENT.tmp", "matrix.pmem"};
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

int tkv_destroy(const char *dir)
{
    if (!dir) return tkv_err(TKV_INVALID, "tkv_destroy: NULL dir");
    struct stat sb;
    if (stat(dir, &sb) != 0) return errno == ENOENT ? TKV_OK : tkv_err_errno(errno, "stat %s", dir);
    if (!S_ISDIR(sb.st_mode)) return tkv_err(TKV_INVALID, "%s is not a directory", dir);
    int lock_fd;
    TKV_TRY(lock_dir(dir, &lock_fd));
    DIR *d = opendir(dir);
    int rc = 0;
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

/* ------------------------------------------------------------ maintenance */

int tkv_flush(tkv_db *db)
{
    if (!db) return tkv_err(TKV_INVALID, "tkv_flush: NULL db");
    /* A queued "writer" without a batch switches the active memtable when it
     * leads (so no leader is inserting into it), then we wait for the flush
     * thread to write every immutable memtable to L0. */
    int rc = db_write(db, NULL, 0);
    pthread_mutex_lock(&db->mu);
    if (rc == 0) rc = db_wait_flushed(db);
    pthread_mutex_unlock(&db->mu);
    return rc;
}
