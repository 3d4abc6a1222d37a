// SPDX-License-Identifier: Apache-2.0
/*
 * trash.h -- deletes obsolete files (compaction inputs, old WALs) a chunk at
 * a time in the background, so that removing a 64 MiB file does not stall
 * client reads.
 *
 * Why: on a filesystem mounted with online discard (ext4 -o discard, common
 * on cloud disks), unlink() of a large file issues the discard of all its
 * blocks at once, and the device serves little else until it is done: on
 * the CI machine a 64 MiB unlink held 4 KiB direct reads for up to 67 ms,
 * a 1 GiB one for 116 ms. Truncating the file down in delete_chunk steps,
 * delete_rate bytes/s at most, keeps every discard small (the same machine:
 * worst read 14 ms). RocksDB's DeleteScheduler does the same. When more
 * than 8 files are queued the pauses are skipped, so a device that
 * compacts faster than delete_rate does not fill up with trash.
 *
 * A file handed over is first renamed to "<name>.trash" (by the caller,
 * under the rules of files_delete_obsolete, files.h), so that it is visibly not part
 * of the database; a crash leaves such files behind and the next open hands
 * them over again. Only files no reader can have open may be handed over:
 * truncation destroys data under an open descriptor (unlink would not).
 * Thread-safe.
 */
#ifndef TKV_DB_TRASH_H
#define TKV_DB_TRASH_H

#include <stddef.h>
#include <stdint.h>

typedef struct trash trash;

typedef struct trash_stats {
    uint64_t files_deleted, bytes_deleted, pending_files, failures;
} trash_stats;

/* trash_new -- starts the deleter thread ("tkv-trash"). chunk == 0 means no
 * thread: trash_add unlinks at once. rate is bytes/s (0 = no pause between
 * chunks). */
int trash_new(uint64_t chunk, uint64_t rate, trash **out);
/* trash_add -- queues path (a ".trash" file) for deletion; copies it. On out
 * of memory the file is unlinked at once. */
void trash_add(trash *t, const char *path);
/* trash_free -- unlinks what is still queued (at once: closing should not
 * wait for pacing) and stops the thread. NULL ok. */
void trash_free(trash *t);
void trash_get_stats(trash *t, trash_stats *st);

#endif
