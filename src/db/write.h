// SPDX-License-Identifier: Apache-2.0
/*
 * write.h -- the write path: group commit, room in the memtables (the write
 * controller's pacing and stops), memtable switches.
 */
#ifndef TKV_DB_WRITE_H
#define TKV_DB_WRITE_H

#include "db/db_impl.h"

/* write_batch -- queues batch b (flags: TKV_SYNC, TKV_NO_WAL, already
 * checked) and waits until its group is written: if this thread becomes the
 * leader it writes the group's WAL record (+ sync), inserts it into the
 * active memtable and publishes the sequences. b == NULL switches a
 * non-empty active memtable (tkv_flush) when its turn comes. Takes mu.
 * TKV_READ_ONLY on a read-only handle (nothing queued). */
int write_batch(tkv_db *db, struct tkv_batch *b, unsigned flags);

/* write_switch_memtable -- makes the active memtable immutable and starts a
 * new one with a new WAL file, whose header names the active WAL and its
 * size now as its predecessor (write.c invariant 7). Caller holds mu and is
 * the write leader. On failure nothing changes. */
int write_switch_memtable(tkv_db *db);

/* write_switch_memtable_after -- the same, the new WAL naming log
 * prev_number at prev_size bytes as its predecessor (0, 0: none). For
 * recovery, which has no active WAL: the last log it replayed, at the size
 * it replayed (recover.c). */
int write_switch_memtable_after(tkv_db *db, uint64_t prev_number, uint64_t prev_size);

/* write_open_wal -- creates WAL `number` (version 2, chained after
 * prev_number at prev_size; 0, 0: none) in db's directory and reserves its
 * blocks (write_wal_reserve). 0 and *out, or the error (*out = NULL). */
int write_open_wal(tkv_db *db, uint64_t number, uint64_t prev_number, uint64_t prev_size, wal_writer **out);

/* write_wal_reserve -- how many bytes a new WAL reserves on disk when it is
 * created (wal_writer_reserve): a memtable's worth and an eighth. */
uint64_t write_wal_reserve(const tkv_db *db);

/* write_close_old_wals -- (tkv_close) closes the switched-away WALs kept
 * for a later sync (write.c, invariant 6), after syncing them if `sync`.
 * Returns the first error. Caller holds no writer back; no writes follow. */
int write_close_old_wals(tkv_db *db, int sync);

/* write_insert_batch -- inserts every record of the batch representation
 * rep[0..len) into mem, at the sequences it carries. */
int write_insert_batch(memtable *mem, const uint8_t *rep, size_t len);

#endif
