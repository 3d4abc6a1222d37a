// SPDX-License-Identifier: Apache-2.0
/*
 * write.c -- the write path: group commit (one leader writes the WAL record
 * of a whole group of queued writers), making room in the memtables
 * (switching, pacing and stopping writers through the write controller),
 * and publishing sequences (write.h).
 *
 * Durability invariants:
 *  (1) A write is acknowledged only after its group's WAL record has been
 *      handed to the OS (write()), and with TKV_SYNC after fdatasync.
 *  (2) A group is one WAL record: it survives a crash whole or not at all.
 *  (3) Records are applied to the memtable in WAL order, and last_seq is
 *      published only after the whole group is in the memtable.
 *  (4) After a WAL write or sync error the database is read-only (sticky
 *      bg_error): a later write could land after a partial record.
 *  (5) WAL files are deleted only once their data is durable in another
 *      tier: a flush's edit advances the MANIFEST's log number past them
 *      (flush.c, mx_flush.c), and files_delete_obsolete removes only WALs
 *      below it.
 *  (6) A TKV_SYNC write makes every write acknowledged before it durable,
 *      across WAL switches too: a WAL switched away from with appends not yet
 *      fdatasync'd is kept open (db->wal_old), and the next sync group syncs
 *      and closes it before it writes its own record. Recovery replays the
 *      WALs in order, so without this an OS crash could keep a sync write
 *      in the new WAL and lose earlier acknowledged writes in the old one. A
 *      kept WAL that a flush has made obsolete (below the log number) is
 *      closed unsynced: its data is in the next tier. A WAL never synced at
 *      all counts as unsynced even if it holds no record (wal_unsynced): its
 *      header and name must be durable before a later WAL's sync write is
 *      acknowledged, as (7) makes the later WAL depend on them.
 *  (7) Each WAL's header names its predecessor: the WAL that was active
 *      when it was started, and that WAL's size at that moment (the leader
 *      holds mu and no append is in flight: only the leader appends, and it
 *      switches before it writes). Recovery replays a WAL only when its
 *      predecessor's intact records reach that size (recover.c), so an OS
 *      crash that wrote a newer WAL's pages back but not an older WAL's
 *      tail loses the newer WAL's writes (never synced, by (6)) instead of
 *      bringing them back without the older ones: what survives is a
 *      prefix of the acknowledged writes, across WAL files too.
 */
#include "db/write.h"

#include <stdio.h>
#include <stdlib.h>

#include "db/files.h"
#include "db/mx.h"
#include "db/silk.h"
#include "db/superversion.h"
#include "sched/clock.h"
#include "util/status.h"

#define GROUP_MAX_BYTES (1u << 20)

/* wal_old_prune -- closes the kept WALs below the MANIFEST's log number
 * (invariant 6). Caller holds mu. */
static void wal_old_prune(tkv_db *db)
{
    uint64_t log_number = vset_log_number(db->vs);
    size_t k = 0;
    for (size_t i = 0; i < db->nwal_old; i++) {
        if (db->wal_old[i].number < log_number) wal_writer_close(db->wal_old[i].w);
        else db->wal_old[k++] = db->wal_old[i];
    }
    db->nwal_old = k;
}

/* wal_retire -- the active WAL (db->wal, db->wal_number) is switched away
 * from: closed, or kept for the next sync group if it holds unsynced
 * appends (invariant 6; out of memory: synced now). Caller holds mu. */
static void wal_retire(tkv_db *db)
{
    wal_old_prune(db);
    if (!db->wal) return;
    if (wal_unsynced(db->wal) && db->nwal_old == db->wal_old_cap) {
        size_t cap = db->wal_old_cap ? db->wal_old_cap * 2 : 4;
        struct db_old_wal *p = realloc(db->wal_old, cap * sizeof *p);
        if (p) {
            db->wal_old = p;
            db->wal_old_cap = cap;
        }
    }
    if (!wal_unsynced(db->wal)) {
        wal_writer_close(db->wal);
    } else if (db->nwal_old < db->wal_old_cap) {
        db->wal_old[db->nwal_old++] = (struct db_old_wal){db->wal, db->wal_number};
    } else {
        int rc = wal_sync(db->wal);
        if (rc < 0) db_set_bg_error(db, rc);
        wal_writer_close(db->wal);
    }
    db->wal = NULL;
}

/* wal_old_take -- the kept WALs the leader of a sync group must sync
 * before it acknowledges (invariant 6), detached from db (NULL, *n = 0 if
 * none). Caller holds mu. */
static struct db_old_wal *wal_old_take(tkv_db *db, size_t *n)
{
    *n = 0;
    if (!db->nwal_old) return NULL;
    wal_old_prune(db);
    struct db_old_wal *old = db->wal_old;
    *n = db->nwal_old;
    if (*n) db->wal_old_detached++; /* until the leader closed them (write_batch): none is recycled meanwhile */
    db->wal_old = NULL;
    db->nwal_old = db->wal_old_cap = 0;
    return old;
}

/* wal_old_sync -- syncs and closes the n kept WALs of `old` (taken from db
 * by the leader of a sync group) and frees the array: 0 or the first error. */
static int wal_old_sync(struct db_old_wal *old, size_t n)
{
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        if (rc == 0) rc = wal_sync(old[i].w);
        wal_writer_close(old[i].w);
    }
    free(old);
    return rc;
}

int write_close_old_wals(tkv_db *db, int sync)
{
    int rc = 0;
    if (db->nwal_old) wal_old_prune(db);
    for (size_t i = 0; i < db->nwal_old; i++) {
        if (sync && rc == 0) rc = wal_sync(db->wal_old[i].w);
        wal_writer_keep_reserved(db->wal_old[i].w, 0); /* cut at its end: the database closes (db_open.c) */
        int crc = wal_writer_close(db->wal_old[i].w);
        if (rc == 0) rc = crc;
    }
    free(db->wal_old);
    db->wal_old = NULL;
    db->nwal_old = db->wal_old_cap = 0;
    return rc;
}

uint64_t write_wal_reserve(const tkv_db *db)
{
    /* a memtable's worth of records and their framing (the arena counts the
     * keys and values; a record adds its header and the batch encoding) */
    return db->opts.memtable_size + db->opts.memtable_size / 8;
}

int write_open_wal(tkv_db *db, uint64_t number, uint64_t prev_number, uint64_t prev_size, wal_writer **out)
{
    char path[4096];
    files_wal_path(db, number, path, sizeof path);
    uint64_t old;
    int recycled = 0;
    if (files_wal_recycled(db, &old)) { /* an obsolete log's blocks, written again (mem/wal.h) */
        char old_path[4096];
        files_wal_path(db, old, old_path, sizeof old_path);
        tkv_errmsg_saved saved;
        tkv_errmsg_save(&saved);
        recycled = wal_writer_recycle(old_path, path, &db->io, number, prev_number, prev_size, out) == 0;
        if (recycled) ctr_add(&db->ctr.wal_recycled, 1);
        else tkv_errmsg_restore(&saved); /* a new file instead; the old one is deleted as obsolete */
    }
    if (!recycled) TKV_TRY(wal_writer_open(path, &db->io, number, prev_number, prev_size, out));
    /* A log that may be recycled keeps its reservation's length at close:
     * cut back there, each recycling fallocated the cut part again, and on
     * ext4 that fallocate (under mu, in the memtable switch) took 0.5-3 ms
     * and now and then 57-65 ms behind a journal commit (16M x 1 KiB fill). */
    if (db->opts.wal_recycle > 0) wal_writer_keep_reserved(*out, 1);
    wal_writer_reserve(*out, write_wal_reserve(db));
    return 0;
}

int write_switch_memtable(tkv_db *db)
{
    /* (7): the new WAL follows the active one at its size now */
    return write_switch_memtable_after(db, db->wal ? db->wal_number : 0, wal_size(db->wal));
}

int write_switch_memtable_after(tkv_db *db, uint64_t prev_number, uint64_t prev_size)
{
    uint64_t number = vset_new_file_number(db->vs);
    wal_writer *w = NULL;
    if (db->opts.wal) TKV_TRY(write_open_wal(db, number, prev_number, prev_size, &w));
    memtable *mem = memtable_new_accounted(db->opts.memtable_size, &db->mem_bytes, &db->mem_spares);
    superversion *old = db->sv, *sv = NULL;
    if (mem) sv = sv_new(mem, old->imm, old->imm_wal, old->nimm, old->mem, db->wal_number, old->rows);
    if (mem) memtable_unref(mem); /* sv holds it */
    if (!sv) {
        wal_writer_close(w);
        if (w) {
            char path[4096];
            files_wal_path(db, number, path, sizeof path);
            io_remove(path);
        }
        return tkv_err(TKV_NO_MEMORY, "out of memory switching memtables");
    }
    /* The old WAL's bytes were all handed to the OS before acknowledgement
     * (1): nothing is lost on a process crash. Unsynced appends wait for the
     * next sync group (6). */
    wal_retire(db);
    db->wal = w;
    db->wal_number = number;
    sv_install(db, sv);
    ctr_add(&db->ctr.memtable_switches, 1);
    db->spares_ahead = 0; /* the new memtable asks again once it is half full */
    return 0;
}

/* insert_record -- batch_iterate's callback: one record into the memtable arg. */
static int insert_record(void *arg, uint64_t seq, ikey_type type, tkv_slice key, tkv_slice value)
{
    if (type == IKEY_RANGE_DELETION) return memtable_add_range_del(arg, seq, key.p, key.n, value.p, value.n);
    return memtable_add(arg, seq, type, key.p, key.n, value.p, value.n);
}

int write_insert_batch(memtable *mem, const uint8_t *rep, size_t len)
{
    return batch_iterate(rep, len, insert_record, mem);
}

/* count_record -- accounts one accepted user record. */
static int count_record(void *arg, uint64_t seq, ikey_type type, tkv_slice key, tkv_slice value)
{
    (void)seq;
    db_counters *c = arg;
    ctr_add(type == IKEY_VALUE ? &c->user_puts : type == IKEY_DELETION ? &c->user_deletes : &c->user_range_deletes, 1);
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
            if (batch_init(&db->group) < 0 ||
                batch_append(&db->group, first->batch->rep.data, first->batch->rep.len) < 0)
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
    if (db->mx) return mx_fill(db);
    return l0 >= (size_t)db->opts.l0_slowdown_trigger ? 1.0 : 0.0;
}

/* active_units -- arena_bytes of the active memtable in the writers' unit
 * (batch bytes), at the ratio of batch to arena bytes of the active memtable
 * (of the oldest immutable while the active one holds less than 1 MiB). */
static uint64_t active_units(const tkv_db *db, uint64_t arena_bytes)
{
    const memtable *m = db->sv->mem;
    const memtable *r = memtable_batch_bytes(m) < (1u << 20) && db->sv->nimm ? db->sv->imm[0] : m;
    size_t ru = memtable_memory_usage(r);
    uint64_t rb = memtable_batch_bytes(r);
    if (!ru || !rb || rb >= ru) return arena_bytes;
    return (uint64_t)((double)arena_bytes * (double)rb / (double)ru);
}

/* active_room -- the bytes, in the writers' unit, that the active memtable
 * can still take: its arena room (active_units). */
static uint64_t active_room(const tkv_db *db)
{
    size_t used = memtable_memory_usage(db->sv->mem);
    return used >= db->opts.memtable_size ? 0 : active_units(db, db->opts.memtable_size - used);
}

/* writers_recent -- with mu held: the most threads that were inside
 * write_batch at once in the last 100-200 ms (>= 1: the caller). The pacing
 * step grows with it (wctl.h): while a leader sleeps, the other writers
 * queue behind it and wait as long. The number in write_batch at the moment
 * of the decision is no estimate: two writers leave a group together and
 * the first back leads alone (measured: 2 of 3 paced leaders of a
 * two-writer fill saw no other writer inside). */
#define WRITERS_WINDOW_US 100000u
static unsigned writers_recent(tkv_db *db, uint64_t now)
{
    if (now - db->writers_epoch >= WRITERS_WINDOW_US) {
        db->writers_prev_peak = db->writers_peak;
        db->writers_peak = db->writers_in;
        db->writers_epoch = now;
    }
    unsigned n = db->writers_peak > db->writers_prev_peak ? db->writers_peak : db->writers_prev_peak;
    return n ? n : 1;
}

/* ask_spares_ahead -- once the active memtable is half full (mu held):
 * asks the flush thread to reserve the next memtable's arena blocks while it
 * is idle (flush.c, reserve_spares_ahead), not at the start of the flush
 * that the switch begins, where the next memtable already fills. */
static void ask_spares_ahead(tkv_db *db)
{
    if (db->spares_ahead || memtable_memory_usage(db->sv->mem) < db->opts.memtable_size / 2) return;
    db->spares_ahead = 1;
    db_bg_signal(db);
}

/* make_room -- called by the write leader with mu held before it writes a
 * group of `bytes`: makes sure the active memtable has room (or, with force,
 * switches a non-empty one), and lets the write controller (sched/wctl.h)
 * pace or stop the leader -- and so every writer queued behind it:
 *   - a full active memtable is switched while a memtable slot is free
 *     (memtables - 1 immutables at most; more while only open views pin a
 *     full pool, mx_pinned_full);
 *   - SLOWDOWN: paced: debts under a step (2 ms times the recent writer
 *     threads, who wait with the leader; 8 ms at most; grown with the pace's
 *     pressure up to 4 ms) carried, larger ones slept, each sleep shortened
 *     by how late the earlier ones ended (the controller sees it from the
 *     times of the calls, wctl.h W6). prl: with one memtable left at
 *     the running flush's deadline (the active memtable's room over the
 *     flush's time to finish, sched/flushprog.h) or, before that is known,
 *     the minimum recent flush bandwidth; with the matrix container past
 *     its compaction trigger, on a ramp that tightens as it fills towards
 *     the rate at which column compaction drains it (sched/wctl.h); with
 *     the container >= 90 % full before any column has finished, at the
 *     flush bandwidth. classic: 16 MiB/s with one memtable left or the
 *     container >= 90 % full; off: not at all;
 *   - STOP: the active memtable is full and no slot is free, or (l0=sst)
 *     L0 holds l0_stop_trigger files: wait for a flush or compaction.
 * Sleeping releases mu. Waits of writes are counted in tkv.stats (stalls:)
 * and tkv.sched (write_controller:); a forced switch's (tkv_flush) are not. */
static int make_room(tkv_db *db, int force, size_t bytes)
{
    wctl_write t = WCTL_WRITE_INIT;
    int first = 1, paced = 0, stopped = 0, rc = 0;
    uint64_t waited_from = 0;
    ask_spares_ahead(db);
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
        if (active_full && !slots && !stop_l0 && mx_pinned_full(db))
            slots = 1; /* room is held only by open views: queue in DRAM instead of waiting (mx.h) */
        if (active_full && slots && !stop_l0) {
            rc = write_switch_memtable(db);
            db_bg_signal(db); /* wake the flush thread */
            if (rc < 0 || force) break;
            continue;
        }
        if (force && !active_full) break; /* nothing to switch */
        wctl_input in;
        in.max_memtables = (unsigned)db->opts.memtables;
        in.mutable_left = (active_full || stop_l0) ? 0 : 1 + (unsigned)slots;
        in.container_fill = container_fill(db, l0);
        in.drain_known = mx_drain_rate(db, &in.drain_rate);
        in.drain_expected = db->mx != NULL; /* column compaction: measured once the first column has run */
        in.deep_score = db->deep_score;
        uint64_t now = sched_mono_us();
        in.flush_eta_us = 0;
        in.flush_eta_known = in.mutable_left == 1 && silk_flush_eta(db, now, &in.flush_eta_us);
        in.active_room = in.mutable_left == 1 ? active_room(db) : 0;
        in.active_capacity = in.mutable_left == 1 ? active_units(db, db->opts.memtable_size) : 0;
        in.queued = writers_recent(db, now) - 1;
        uint64_t d = silk_write_delay(db, &t, &in, first ? bytes : 0, now);
        first = 0;
        if (d == 0 && in.mutable_left == 0) d = 1000; /* never write past a full memtable */
        if (d == 0) break;
        if (!waited_from) {
            waited_from = now;
            if (!force) db_event(db, TKV_EVENT_STALL_BEGIN, 0, 0, 0, 0, 0, 0);
        }
        if (in.mutable_left == 0) {
            if (!stopped && !force && !stop_l0 && !__atomic_load_n(&db->flush_blocked, __ATOMIC_RELAXED))
                silk_note_stop_flush_running(db);
            stopped = 1;
            __atomic_store_n(&db->write_stopped, 1, __ATOMIC_RELAXED); /* the monitor pauses deep work */
            db_bg_signal(db);
            db_wait_us(db, d);
        } else {
            paced = 1;
            if (t.ramp_paced)
                mx_note_drain_wait(db, now); /* it waits for the pool's drain: columns get the CPU first */
            pthread_mutex_unlock(&db->mu);
            sched_sleep_us(d);
            pthread_mutex_lock(&db->mu);
        }
    }
    if (stopped) __atomic_store_n(&db->write_stopped, 0, __ATOMIC_RELAXED);
    if (waited_from && !force) { /* tkv_flush waiting for the flush before it is not a write stall */
        uint64_t w = sched_mono_us() - waited_from;
        if (paced) ctr_add(&db->ctr.stall_slowdowns, 1);
        if (stopped) ctr_add(&db->ctr.stall_stops, 1);
        ctr_add(&db->ctr.stall_micros, w);
        silk_note_write_wait(db, w);
        db_hist_add_us(db, TKV_HIST_STALL, w);
        db_event(db, TKV_EVENT_STALL_END, 0, 0, 0, w, 0, 0);
    }
    return rc;
}

/* await_turn -- a queued writer's short wait before it sleeps: with mu
 * released, up to AWAIT_SPIN_NS polling whether its group is done or it
 * leads now (the leader writes both with atomic stores under mu). A leader
 * takes a few microseconds per group; sleeping on the condition variable
 * instead cost every write of two alternating writers a futex wake-up:
 * two writer threads ran 40 % slower than one (the spin made them 29 %
 * faster). Returns with mu held; the caller re-checks under it. */
#define AWAIT_SPIN_NS 20000u
static void await_turn(tkv_db *db, writer *w)
{
    pthread_mutex_unlock(&db->mu);
    uint64_t t0 = sched_mono_ns();
    for (unsigned i = 1;; i++) {
        if (__atomic_load_n(&w->done, __ATOMIC_ACQUIRE) || __atomic_load_n(&db->wq_head, __ATOMIC_ACQUIRE) == w) break;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
        if (i % 64 == 0 && sched_mono_ns() - t0 > AWAIT_SPIN_NS) break;
    }
    pthread_mutex_lock(&db->mu);
}

/* hand_off -- with mu held, by the leader w of a group ending at `last`:
 * hands result rc to every member, passes leadership on to the next queued
 * writer, and leaves the write path. */
static void hand_off(tkv_db *db, writer *w, writer *last, int rc)
{
    for (;;) {
        writer *x = db->wq_head;
        __atomic_store_n(&db->wq_head, x->next, __ATOMIC_RELEASE);
        if (!db->wq_head) db->wq_tail = NULL;
        x->status = rc;
        __atomic_store_n(&x->done, 1, __ATOMIC_RELEASE);
        if (x != w) pthread_cond_signal(&x->cv);
        if (x == last) break;
    }
    if (db->wq_head) pthread_cond_signal(&db->wq_head->cv);
    if (rc < 0 && db->bg_errmsg[0] == '\0') snprintf(db->bg_errmsg, sizeof db->bg_errmsg, "%s", tkv_errmsg());
    db->writers_in--;
}

int write_batch(tkv_db *db, struct tkv_batch *b, unsigned flags)
{
    TKV_TRY(db_check_writable(db, "write")); /* the public calls refused it already: a second fence */
    writer w = {
        .batch = b, .sync = (flags & TKV_SYNC) || db->opts.sync, .no_wal = (flags & TKV_NO_WAL) || !db->opts.wal};
    pthread_cond_init(&w.cv, NULL);
    pthread_mutex_lock(&db->mu);
    if (++db->writers_in > db->writers_peak) db->writers_peak = db->writers_in;
    if (db->wq_tail) db->wq_tail->next = &w;
    else __atomic_store_n(&db->wq_head, &w, __ATOMIC_RELEASE);
    db->wq_tail = &w;
    if (!w.done && db->wq_head != &w) await_turn(db, &w);
    while (!w.done && db->wq_head != &w) pthread_cond_wait(&w.cv, &db->mu);
    if (w.done) {
        db->writers_in--;
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
        size_t nold = 0; /* (6): the earlier WALs this sync must cover */
        struct db_old_wal *old = wal && sync ? wal_old_take(db, &nold) : NULL;
        pthread_mutex_unlock(&db->mu);

        if (wal) {
            rc = wal_old_sync(old, nold);
            if (rc == 0) rc = wal_add_record(wal, rep, len);
            if (rc == 0) ctr_add(&db->ctr.wal_records, 1);
            if (rc == 0 && sync) {
                rc = wal_sync(wal);
                ctr_add(&db->ctr.wal_syncs, 1);
            }
        }
        if (rc == 0) {
            rc = write_insert_batch(mem, rep, len);
            if (rc == 0) batch_iterate(rep, len, count_record, &db->ctr);
            memtable_add_batch_bytes(mem, len); /* the flush's bandwidth sample is in these units */
        }
        pthread_mutex_lock(&db->mu);
        if (nold) db->wal_old_detached--;
        if (rc < 0) db_set_bg_error(db, rc);
        else __atomic_store_n(&db->last_seq, seq + count, __ATOMIC_RELEASE);
        ctr_add(&db->ctr.groups, 1);
    }

    hand_off(db, &w, last, rc);
    pthread_mutex_unlock(&db->mu);
    pthread_cond_destroy(&w.cv);
    if (b) ctr_add(&db->ctr.batches, 1);
    return rc;
}
