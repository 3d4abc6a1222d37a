/*
 * recover.c -- WAL recovery at open: replaying the WALs the MANIFEST does not
 * cover into memtables, in order (recover.h; format: docs/format-wal.md).
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
        memtable *mem = memtable_new_accounted(db->opts.memtable_size, &db->mem_bytes, &db->mem_spares);
        superversion *sv = mem ? sv_new(mem, db->sv->imm, db->sv->imm_wal, db->sv->nimm, db->sv->mem, db->wal_number,
                                        db->sv->rows)
                               : NULL;
        if (mem) memtable_unref(mem);
        if (!sv) return tkv_err(TKV_NO_MEMORY, "out of memory during recovery");
        sv_install(db, sv);
    }
    TKV_TRY(write_insert_batch(db->sv->mem, payload, n));
    uint32_t count = batch_count(payload);
    uint64_t seq = batch_seq(payload);
    if (count && seq + count - 1 > c->max_seq) c->max_seq = seq + count - 1;
    ctr_add(&db->ctr.recovered_records, 1);
    return 0;
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
            if (!p) { rc = tkv_err(TKV_NO_MEMORY, "out of memory listing %s", dir); break; }
            *out = p;
        }
        (*out)[(*n)++] = num;
    }
    closedir(d);
    if (rc == 0 && *n) qsort(*out, *n, sizeof **out, cmp_u64);
    return rc;
}

int recover_wals(tkv_db *db)
{
    uint64_t *nums;
    size_t n;
    TKV_TRY(list_wals(db->dir, &nums, &n));
    int rc = 0, skipped = 0;
    uint64_t log_number = vset_log_number(db->vs);
    replay_ctx c = {db, NULL, vset_last_seq(db->vs)};
    for (size_t i = 0; i < n && rc == 0; i++) {
        vset_mark_file_number_used(db->vs, nums[i]);
        if (nums[i] < log_number) continue; /* already in SSTs; deleted as obsolete */
        char path[4096];
        files_wal_path(db, nums[i], path, sizeof path);
        c.path = path;
        if (memtable_num_entries(db->sv->mem) > 0) {
            memtable *mem = memtable_new_accounted(db->opts.memtable_size, &db->mem_bytes, &db->mem_spares);
            superversion *sv = mem ? sv_new(mem, db->sv->imm, db->sv->imm_wal, db->sv->nimm, db->sv->mem,
                                             db->wal_number, db->sv->rows)
                                   : NULL;
            if (mem) memtable_unref(mem);
            if (!sv) { rc = tkv_err(TKV_NO_MEMORY, "out of memory during recovery"); break; }
            sv_install(db, sv);
        }
        db->wal_number = nums[i];
        wal_replay_stats st = {0};
        rc = wal_replay(path, &db->io, replay_record, &c, &st);
        ctr_add(&db->ctr.recovered_torn_records, st.torn_tail_records);
        ctr_add(&db->ctr.recovered_torn_bytes, st.torn_tail_bytes);
        if (rc == TKV_CORRUPTION && !db->opts.paranoid_checks) { /* keep what was read */
            rc = 0;
            skipped = 1;
        }
    }
    if (rc == 0) {
        db->last_seq = c.max_seq;
        vset_set_last_seq(db->vs, c.max_seq);
    }
    if (rc == 0 && memtable_num_entries(db->sv->mem) > 0) {
        rc = write_switch_memtable(db); /* opens the new WAL */
    } else if (rc == 0 && db->opts.wal) {
        char path[4096];
        db->wal_number = vset_new_file_number(db->vs);
        files_wal_path(db, db->wal_number, path, sizeof path);
        rc = wal_writer_open(path, &db->io, &db->wal);
        if (rc == 0) wal_writer_reserve(db->wal, write_wal_reserve(db));
    } else if (rc == 0) {
        db->wal_number = vset_new_file_number(db->vs);
    }
    /* Nothing was recovered (no memtable holds a write): the WALs just
     * replayed hold none either (at most a torn tail), and as no flush will
     * advance the log number past them, they go now -- else every open of an
     * idle database left one more. Not after a skipped corruption (the file
     * is the only trace of it). */
    for (size_t i = 0; rc == 0 && !skipped && db->sv->nimm == 0 && memtable_num_entries(db->sv->mem) == 0 && i < n;
         i++) {
        char path[4096];
        files_wal_path(db, nums[i], path, sizeof path);
        if (nums[i] >= log_number && nums[i] != db->wal_number) (void)io_remove(path); /* best effort */
    }
    free(nums);
    return rc;
}
