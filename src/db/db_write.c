// SPDX-License-Identifier: Apache-2.0
/*
 * db_write.c -- the public write API: tkv_write, tkv_put, tkv_delete,
 * tkv_delete_range (argument checks and the read-only refusal; the write
 * path itself is write.c).
 */
#include "db/db_impl.h"
#include "db/write.h"
#include "util/status.h"

/* check_flags -- validates write flags. */
static int check_flags(unsigned flags)
{
    if (flags & ~(TKV_SYNC | TKV_NO_WAL)) return tkv_err(TKV_INVALID, "unknown write flags 0x%x", flags);
    if ((flags & TKV_SYNC) && (flags & TKV_NO_WAL))
        return tkv_err(TKV_INVALID, "TKV_SYNC and TKV_NO_WAL together make no sense");
    return 0;
}

int tkv_write(tkv_db *db, tkv_batch *b, unsigned flags)
{
    if (!db) return tkv_err(TKV_INVALID, "tkv_write: NULL db");
    TKV_TRY(db_check_writable(db, "tkv_write"));
    if (!b) return tkv_err(TKV_INVALID, "tkv_write: NULL batch");
    TKV_TRY(check_flags(flags));
    if (batch_count(b->rep.data) == 0) return TKV_OK;
    uint64_t t0 = db_stat_start(db);
    int rc = write_batch(db, b, flags);
    db_stat_end(db, TKV_HIST_WRITE, t0);
    return rc;
}

/* single_write -- tkv_put/tkv_delete through a stack batch. */
static int single_write(tkv_db *db, ikey_type t, const void *key, size_t klen, const void *val, size_t vlen,
                        unsigned flags)
{
    if (!db) return tkv_err(TKV_INVALID, "NULL db");
    TKV_TRY(db_check_writable(db, t == IKEY_VALUE      ? "tkv_put"
                                  : t == IKEY_DELETION ? "tkv_delete"
                                                       : "tkv_delete_range"));
    TKV_TRY(check_flags(flags));
    struct tkv_batch b = {{0}};
    int rc = batch_init(&b);
    if (rc == 0)
        rc = t == IKEY_VALUE      ? tkv_batch_put(&b, key, klen, val, vlen)
             : t == IKEY_DELETION ? tkv_batch_delete(&b, key, klen)
                                  : tkv_batch_delete_range(&b, key, klen, val, vlen);
    if (rc == 0) {
        uint64_t t0 = db_stat_start(db);
        rc = write_batch(db, &b, flags);
        db_stat_end(db, TKV_HIST_WRITE, t0);
    }
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

int tkv_delete_range(tkv_db *db, const void *begin, size_t blen, const void *end, size_t elen, unsigned flags)
{
    if (!db) return tkv_err(TKV_INVALID, "NULL db");
    TKV_TRY(db_check_writable(db, "tkv_delete_range"));
    TKV_TRY(check_flags(flags));
    int rc = batch_check_range(begin, blen, end, elen);
    if (rc != 0) return rc < 0 ? rc : TKV_OK; /* an empty range: nothing to write */
    return single_write(db, IKEY_RANGE_DELETION, begin, blen, end, elen, flags);
}
