// SPDX-License-Identifier: Apache-2.0
/*
 * recover.c -- WAL recovery at open: replaying the WALs the MANIFEST does not
 * cover into memtables, in order, as a chain (recover.h; format and rules:
 * docs/format-wal.md, "The chain of logs").
 *
 * What survives a crash must be a prefix of the acknowledged writes. Within
 * a log the replay rules see to that (a torn tail or torn hole ends it);
 * across logs the chain rule does (wal_chain_check):
 *  - a version-2 log names its predecessor and the predecessor's size when
 *    the log was started (write.c invariant 7). It is replayed only if the
 *    predecessor was replayed here with its intact records reaching that
 *    size, and no log replayed after the predecessor holds a record. A log
 *    that names none, or one below the MANIFEST's log number (its data is
 *    in the tiers below), only if no log replayed before it holds a record.
 *  - a version-1 log (written before version 2) only if no log before it was
 *    dropped, skipped or cut short (a corruption skipped, a torn tail that
 *    is not all zeros): the old format has nothing more to check.
 * A log that fails is dropped: none of its records is applied, and the logs
 * that name it fail in turn. Its writes were never synced -- a TKV_SYNC
 * write syncs every older WAL first, and a WAL's first sync makes its header
 * and name durable (write.c invariant 6, mem/wal.h) -- so dropping it loses
 * only writes an OS crash may take anyway, and keeps the prefix.
 *
 * Dropped logs are deleted, here, before the new WAL takes a write
 * (settle_logs): first every replayed log is fdatasync'd (after a process
 * crash its tail may exist only in the page cache, and the new WAL, naming
 * the last replayed log at the size replayed, depends on all of them), then
 * the dropped ones are unlinked and the directory is fsync'd. A crash before
 * that ends makes the next open decide the same: the logs it reads have not
 * changed and the new WAL holds nothing yet. After it the dropped logs are
 * gone; and were one to come back, it would be dropped again (its
 * predecessor has not changed), while the new WAL names a replayed log, not
 * it. A log skipped for a bad header (paranoid_checks=0) is kept: it is the
 * only trace of the damage, and it is never replayed.
 */
#include "db/recover.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "db/files.h"
#include "db/superversion.h"
#include "db/write.h"
#include "util/status.h"

/* ---------------------------------------------------------------- the chain rule */

/* any_records -- 1 if a log at index >= from was replayed and held a record. */
static int any_records(const wal_chain *c, size_t from)
{
    for (size_t i = from; i < c->n; i++)
        if (c->logs[i].replayed && c->logs[i].records) return 1;
    return 0;
}

int wal_header_number(const char *path, uint64_t number, wal_replay_stats *h)
{
    if (h->version < WAL_V2 || h->log_number == number) return 0;
    if (h->log_number > number)
        return tkv_err(TKV_CORRUPTION, "WAL %s: its header names log %llu", path, (unsigned long long)h->log_number);
    /* The older log it was is all the file holds, and nothing of this
     * one was synced (wal_writer_recycle): an empty log. */
    uint64_t size = h->file_size;
    memset(h, 0, sizeof *h);
    h->file_size = size;
    return 1;
}

const char *wal_chain_check(const wal_chain *c, const wal_replay_stats *h)
{
    if (h->version == 0) return NULL; /* an empty log: nothing to replay */
    if (h->version == WAL_V1)
        return c->v1_stop ? "a log before it was dropped, skipped or cut short (a version 1 log names no "
                            "predecessor to check)"
                          : NULL;
    if (h->prev_number == 0 || h->prev_number < c->log_number)
        return any_records(c, 0) ? "it names no predecessor to replay, but a log replayed before it holds writes"
                                 : NULL;
    size_t at = 0;
    while (at < c->n && c->logs[at].number != h->prev_number) at++;
    if (at == c->n) return "its predecessor is missing";
    const wal_chain_log *p = &c->logs[at];
    if (!p->replayed || !p->header_ok) return "its predecessor was not replayed";
    if (p->end < h->prev_size)
        return "its predecessor's intact records end before the size it had when this log was started";
    if (any_records(c, at + 1)) return "a log replayed after its predecessor holds writes";
    return NULL;
}

int wal_chain_add(wal_chain *c, uint64_t number, const wal_replay_stats *st, int how)
{
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        wal_chain_log *p = realloc(c->logs, cap * sizeof *p);
        if (!p) return tkv_err(TKV_NO_MEMORY, "out of memory during recovery");
        c->logs = p;
        c->cap = cap;
    }
    wal_chain_log *l = &c->logs[c->n++];
    memset(l, 0, sizeof *l);
    l->number = number;
    l->replayed = how == WAL_CHAIN_REPLAYED || how == WAL_CHAIN_CUT;
    l->dropped = how == WAL_CHAIN_DROPPED;
    if (st && l->replayed) {
        l->end = st->end;
        l->records = st->records;
        l->header_ok = st->version != 0;
    }
    if (how != WAL_CHAIN_REPLAYED || (st && st->torn_tail_records && !st->torn_zero)) c->v1_stop = 1;
    return 0;
}

const wal_chain_log *wal_chain_tip(const wal_chain *c)
{
    for (size_t i = c->n; i-- > 0;)
        if (c->logs[i].replayed && c->logs[i].header_ok) return &c->logs[i];
    return NULL;
}

void wal_chain_free(wal_chain *c)
{
    free(c->logs);
    c->logs = NULL;
    c->n = c->cap = 0;
}

/* ---------------------------------------------------------------- replay */

typedef struct replay_ctx {
    tkv_db *db;
    const char *path;
    uint64_t max_seq;
} replay_ctx;

/* seal_active -- a non-empty active memtable becomes immutable, tied to the
 * WAL its records came from (db->wal_number). */
static int seal_active(tkv_db *db)
{
    memtable *mem = memtable_new_accounted(db->opts.memtable_size, &db->mem_bytes, &db->mem_spares);
    superversion *sv =
        mem ? sv_new(mem, db->sv->imm, db->sv->imm_wal, db->sv->nimm, db->sv->mem, db->wal_number, db->sv->rows) : NULL;
    if (mem) memtable_unref(mem);
    if (!sv) return tkv_err(TKV_NO_MEMORY, "out of memory during recovery");
    sv_install(db, sv);
    return 0;
}

/* replay_record -- applies one WAL record to the active memtable, switching
 * memtables as the write path would. */
static int replay_record(void *arg, const uint8_t *payload, size_t n, uint64_t offset)
{
    replay_ctx *c = arg;
    tkv_db *db = c->db;
    if (batch_validate(payload, n) < 0)
        return tkv_err(TKV_CORRUPTION, "%s: record at offset %llu has a valid checksum but a malformed batch", c->path,
                       (unsigned long long)offset);
    /* Recovered memtables stay tied to the WAL they came from (wal_number). */
    if (memtable_memory_usage(db->sv->mem) >= db->opts.memtable_size) TKV_TRY(seal_active(db));
    TKV_TRY(write_insert_batch(db->sv->mem, payload, n));
    uint32_t count = batch_count(payload);
    uint64_t seq = batch_seq(payload);
    if (count && seq + count - 1 > c->max_seq) c->max_seq = seq + count - 1;
    ctr_add(&db->ctr.recovered_records, 1);
    return 0;
}

/* note_dropped -- counts a log that is not replayed at all. */
static void note_dropped(tkv_db *db, uint64_t bytes)
{
    ctr_add(&db->ctr.recovered_dropped_logs, 1);
    ctr_add(&db->ctr.recovered_dropped_bytes, bytes);
}

/* recover_log -- log `number` at path: its header against the chain, then,
 * if the chain allows it, its records into the memtables. Sets *skipped
 * when a corruption was skipped (paranoid_checks=0). */
static int recover_log(tkv_db *db, wal_chain *ch, replay_ctx *c, uint64_t number, const char *path, int *skipped)
{
    wal_replay_stats h;
    int rc = wal_read_header(path, &db->io, &h);
    if (rc == 0 && (rc = wal_header_number(path, number, &h)) == 1) { /* a recycled log's lost header */
        ctr_add(&db->ctr.recovered_torn_bytes, h.file_size);
        return wal_chain_add(ch, number, &h, WAL_CHAIN_REPLAYED);
    }
    if (rc == TKV_CORRUPTION && !db->opts.paranoid_checks) { /* none of it is read; the file stays */
        *skipped = 1;
        note_dropped(db, h.file_size);
        return wal_chain_add(ch, number, NULL, WAL_CHAIN_SKIPPED);
    }
    if (rc < 0) return rc;
    if (wal_chain_check(ch, &h)) { /* its writes were never synced: dropped (deleted by settle_logs) */
        note_dropped(db, h.file_size);
        return wal_chain_add(ch, number, &h, WAL_CHAIN_DROPPED);
    }
    if (memtable_num_entries(db->sv->mem) > 0) TKV_TRY(seal_active(db));
    db->wal_number = number;
    c->path = path;
    wal_replay_stats st;
    rc = wal_replay(path, &db->io, replay_record, c, &st);
    ctr_add(&db->ctr.recovered_torn_records, st.torn_tail_records);
    ctr_add(&db->ctr.recovered_torn_bytes, st.torn_tail_bytes);
    int how = WAL_CHAIN_REPLAYED;
    if (rc == TKV_CORRUPTION && !db->opts.paranoid_checks) { /* keep what was read; st.end is where it stopped */
        rc = 0;
        *skipped = 1;
        how = WAL_CHAIN_CUT;
    }
    if (rc < 0) return rc;
    return wal_chain_add(ch, number, &st, how);
}

/* sync_log -- fdatasync of the log at path (opened read-only: Linux syncs
 * the file's dirty pages whatever the descriptor). */
static int sync_log(tkv_db *db, const char *path)
{
    io_file *f;
    TKV_TRY(io_open_read(path, IO_META, &db->io, &f));
    int rc = io_sync(f);
    int crc = io_close(f);
    return rc < 0 ? rc : crc;
}

/* settle_logs -- before the new WAL takes a write (see the top of this
 * file): with `recovered`, every replayed log synced; the dropped logs
 * deleted (best effort: one left behind is dropped again); the directory
 * synced. */
static int settle_logs(tkv_db *db, const wal_chain *ch, int recovered)
{
    int changed = 0;
    for (size_t i = 0; i < ch->n; i++) {
        const wal_chain_log *l = &ch->logs[i];
        char path[4096];
        files_wal_path(db, l->number, path, sizeof path);
        if (l->dropped) {
            tkv_errmsg_saved saved;
            tkv_errmsg_save(&saved);
            if (io_remove(path) < 0) tkv_errmsg_restore(&saved);
            changed = 1;
        } else if (recovered && l->replayed && l->header_ok) {
            TKV_TRY(sync_log(db, path));
            changed = 1;
        }
    }
    return changed ? io_sync_dir(db->dir) : 0;
}

/* cmp_u64 -- qsort order of file numbers. */
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
            if (!p) {
                rc = tkv_err(TKV_NO_MEMORY, "out of memory listing %s", dir);
                break;
            }
            *out = p;
        }
        (*out)[(*n)++] = num;
    }
    closedir(d);
    if (rc == 0 && *n) qsort(*out, *n, sizeof **out, cmp_u64);
    return rc;
}

/* open_new_wal -- the WAL new writes go to, naming the last replayed log at
 * the size replayed as its predecessor when anything was recovered (else
 * none: the replayed logs are deleted below). */
static int open_new_wal(tkv_db *db, const wal_chain *ch, int recovered)
{
    const wal_chain_log *tip = recovered ? wal_chain_tip(ch) : NULL;
    uint64_t pn = tip ? tip->number : 0, ps = tip ? tip->end : 0;
    if (memtable_num_entries(db->sv->mem) > 0) return write_switch_memtable_after(db, pn, ps);
    db->wal_number = vset_new_file_number(db->vs);
    if (!db->opts.wal) return 0;
    return write_open_wal(db, db->wal_number, pn, ps, &db->wal);
}

int recover_wals(tkv_db *db)
{
    uint64_t *nums;
    size_t n;
    TKV_TRY(list_wals(db->dir, &nums, &n));
    int rc = 0, skipped = 0;
    wal_chain ch = {.log_number = vset_log_number(db->vs)};
    replay_ctx c = {db, NULL, vset_last_seq(db->vs)};
    for (size_t i = 0; i < n && rc == 0; i++) {
        vset_mark_file_number_used(db->vs, nums[i]); /* dropped ones too: their numbers are never reused */
        if (nums[i] < ch.log_number) continue;       /* already in SSTs; deleted as obsolete */
        char path[4096];
        files_wal_path(db, nums[i], path, sizeof path);
        rc = recover_log(db, &ch, &c, nums[i], path, &skipped);
    }
    int recovered = any_records(&ch, 0), rw = !db->opts.read_only;
    if (rc == 0) {
        db->last_seq = c.max_seq;
        vset_set_last_seq(db->vs, c.max_seq);
    }
    /* read_only=1 stops here: the memtables hold what was replayed, in
     * DRAM only, and no file is synced, deleted or created. */
    if (rc == 0 && rw) rc = settle_logs(db, &ch, recovered);
    if (rc == 0 && rw) rc = open_new_wal(db, &ch, recovered);
    /* Nothing was recovered (no memtable holds a write): the WALs just
     * replayed hold none either (at most a torn tail), and as no flush will
     * advance the log number past them, they go now -- else every open of an
     * idle database left one more. Not after a skipped corruption (the file
     * is the only trace of it). */
    for (size_t i = 0; rc == 0 && rw && !skipped && !recovered && db->sv->nimm == 0 && i < n; i++) {
        char path[4096];
        files_wal_path(db, nums[i], path, sizeof path);
        if (nums[i] >= ch.log_number && nums[i] != db->wal_number) (void)io_remove(path); /* best effort */
    }
    wal_chain_free(&ch);
    free(nums);
    return rc;
}
