// SPDX-License-Identifier: Apache-2.0
/*
 * files.h -- the database's files: WAL names, output files being written
 * (pending), the oldest sequence a reader may ask for, committing a version
 * edit, and deleting what no live version needs.
 *
 * Persistence order of every flush and compaction (crash-safe at every step;
 * steps (1) and (2) are compact_merge.c's and flush.c's):
 *  (1) write each output fully, fdatasync it, close it;
 *  (2) fsync the directory so the new names are durable;
 *  (3) log the version edit (outputs added, inputs removed, log number,
 *      row cursors) to the MANIFEST and sync it -- the commit point
 *      (files_install);
 *  (4) install the new version; only then delete inputs and old WALs that
 *      no live version or pending job needs (files_delete_obsolete).
 * A crash before (3) leaves orphan outputs, deleted at the next open (they
 * are in no version); a crash after (3) recovers the new state.
 */
#ifndef TKV_DB_FILES_H
#define TKV_DB_FILES_H

#include "db/db_impl.h"

/* files_wal_path -- "<dir>/<number>.wal" into buf. */
void files_wal_path(const tkv_db *db, uint64_t number, char *buf, size_t len);

/* files_wal_recycled -- takes an obsolete WAL kept for recycling
 * (wal_recycle) that is ready to be written again: 1 and its number in
 * *number (removed from the set; the caller renames it into a new log,
 * mem/wal.h wal_writer_recycle), or 0 if there is none. Obsolete WALs
 * enter the set in files_delete_obsolete instead of being deleted, up to
 * wal_recycle of them, when no writer has them open (not the active WAL,
 * not a kept one, and no sync group is closing kept ones); one is ready
 * once the write-back thread has done what was queued for it before
 * (its last close's release could otherwise cut the new log). Caller
 * holds mu. */
int files_wal_recycled(tkv_db *db, uint64_t *number);

/* files_add_pending / files_remove_pending -- protect an output file number
 * from obsolete-file deletion while it is being written. Caller holds mu. */
int files_add_pending(tkv_db *db, uint64_t number);
void files_remove_pending(tkv_db *db, uint64_t number);

/* files_smallest_snapshot -- the oldest sequence any reader can still ask
 * for: the oldest snapshot's, or the last published sequence. Versions
 * older than the newest one at or below it may be dropped. Caller holds mu. */
uint64_t files_smallest_snapshot(tkv_db *db);

/* files_install -- steps (3) and (4): logs edit e to the MANIFEST (with the
 * last published sequence) and installs the new version. Caller holds mu;
 * it is released while the MANIFEST record is written and synced (readers
 * and writers go on) and held again when the new version is installed. */
int files_install(tkv_db *db, version_edit *e);

/* files_update_deep_score -- recomputes db->deep_score for the current
 * version: the largest ratio of a level's bytes to its target over L1 and
 * the levels below it (not the last level, which has no target to meet);
 * 0 with no SST levels. The write controller paces writers on it (the deep
 * debt, sched/wctl.h) and the SILK scheduler stops pausing deep work at
 * SILK_URGENT_SCORE. files_install calls it; open calls it once after
 * recovery. Caller holds mu. */
void files_update_deep_score(tkv_db *db);

/* files_remove -- deletes the file at path, which the database no longer
 * needs: an SST or a WAL is renamed to "<path>.trash" and handed to
 * db->trash (deleted a chunk at a time), a ".trash" file handed over as it
 * is, anything else unlinked at once; ENOENT (another remover was first) is
 * not an error. Best effort: a failure leaves the file to the next open.
 * Call it WITHOUT mu: a rename or unlink can wait for the filesystem's
 * journal behind a busy device for tens of ms. */
void files_remove(tkv_db *db, const char *path);

/* files_delete_obsolete -- removes SSTs no live version references (and not
 * pending), WALs older than the version set's log number, old MANIFESTs,
 * and ".trash" files a crash left. SSTs and WALs are renamed to
 * "<name>.trash" and handed to db->trash, which deletes them a chunk at a
 * time (trash.h: online discard). Caller holds mu; the choice is made under
 * it, and it is released while the files are renamed or unlinked:
 * unlinking a 64 MiB file can wait for the filesystem journal behind a busy
 * device for 100+ ms, and every get and put needs mu. (A file found
 * obsolete stays obsolete: file numbers are never reused, and a concurrent
 * remover of the same file just sees ENOENT.) Does nothing once a
 * background error made the database read-only: the outputs a failed
 * MANIFEST write or sync kept are in no version, yet the edit may name them
 * at the next open, which removes what is really obsolete. Nothing either
 * on a read-only handle. */
void files_delete_obsolete(tkv_db *db);

/* files_unpin -- drops a view's or a job's reference to v (version_unref,
 * or version_unref_files when files_only). If that freed v while an earlier
 * files_delete_obsolete had to keep files that only older versions still
 * used (db->obsolete_kept), deletes what is obsolete now: otherwise the
 * inputs of a compaction that ran while an iterator (or a get, or a paused
 * deep job) held the old version would stay on disk until the next job.
 * Caller does not hold mu. */
void files_unpin(tkv_db *db, version *v, int files_only);

#endif
