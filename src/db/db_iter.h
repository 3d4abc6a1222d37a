// SPDX-License-Identifier: Apache-2.0
/*
 * db_iter.h -- the user-visible iterator logic (LevelDB's DBIter) on top of one
 * internal iterator: each user key once, at its newest version with
 * seq <= snapshot, keys whose newest visible version is a deletion hidden.
 *
 * Errors are sticky: once the internal iterator reports an error (or an entry
 * fails to parse: TKV_CORRUPTION, or a copy runs out of memory) the db_iter is
 * not valid and stays so, seeks included; db_iter_status() returns that first
 * error. next/prev on an iterator that is not valid do nothing.
 *
 * Key and value pointers are valid until the iterator is moved or freed.
 * A db_iter belongs to one thread at a time.
 */
#ifndef TKV_DB_DB_ITER_H
#define TKV_DB_DB_ITER_H

#include <stddef.h>
#include <stdint.h>

#include "util/iter.h"
#include "util/rangedel.h"

typedef struct db_iter db_iter;

/* db_iter_new -- takes ownership of `internal`; shows for each user key the
 * newest version with seq <= snapshot_seq (clamped to IKEY_MAX_SEQ), hiding keys
 * whose newest visible version is a deletion. Starts unpositioned.
 * NULL on OOM (internal destroyed) or if internal is NULL. */
db_iter *db_iter_new(tkv_it *internal, uint64_t snapshot_seq);
/* db_iter_free -- frees the iterator and its internal iterator; NULL is a no-op. */
void db_iter_free(db_iter *it);

/* db_iter_set_range_dels -- the range tombstones the iterator applies (takes
 * the reference; NULL: none): fragments of every tier's tombstones visible at
 * the snapshot (rd_frags_new with max_seq = the snapshot), each tagged with
 * its tier -- the index of the child of the merging iterator `internal` that
 * holds its tier's entries (children newest first). An entry under a newer
 * tombstone is hidden like a deleted one, and when it comes from a tier older
 * than the newest tombstone over it, every child older than that tombstone's
 * is moved past the fragment at once (merging_iter_skip): entries of older
 * tiers in the range are older than the tombstone, as tiers are in sequence
 * order for each key. Call before the first seek. */
void db_iter_set_range_dels(db_iter *it, rd_frags *f);

/* db_iter_seek_first / seek_last -- positions at the smallest / largest visible user key. */
void db_iter_seek_first(db_iter *it);
void db_iter_seek_last(db_iter *it);
/* db_iter_seek -- positions at the first visible user key >= ukey. */
void db_iter_seek(db_iter *it, const void *ukey, size_t klen);
/* db_iter_seek_for_prev -- positions at the last visible user key <= ukey. */
void db_iter_seek_for_prev(db_iter *it, const void *ukey, size_t klen);

/* db_iter_set_bounds -- limits the iterator to user keys in [lower, upper):
 * NULL means no bound on that side (an empty key with a non-NULL pointer is a
 * bound). Copies both. Call before the first seek. 0 or TKV_NO_MEMORY. */
int db_iter_set_bounds(db_iter *it, const void *lower, size_t llen, const void *upper, size_t ulen);
/* db_iter_seek_target -- what db_iter_seek(ukey) seeks to: ukey, or the
 * lower bound when ukey is below it (*klen updated). */
const void *db_iter_seek_target(const db_iter *it, const void *ukey, size_t *klen);
/* db_iter_next / prev -- the next larger / smaller visible user key (no-op when not valid). */
void db_iter_next(db_iter *it);
void db_iter_prev(db_iter *it);

/* db_iter_valid -- 1 if positioned on an entry. */
int db_iter_valid(const db_iter *it);
/* db_iter_key / value -- the current user key / value (never NULL when valid,
 * even if empty; NULL with length 0 when not valid). */
const void *db_iter_key(const db_iter *it, size_t *klen);
const void *db_iter_value(const db_iter *it, size_t *vlen);
/* db_iter_status -- TKV_OK or the first error met. */
int db_iter_status(const db_iter *it);

#endif
