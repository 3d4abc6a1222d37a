// SPDX-License-Identifier: Apache-2.0
/*
 * version.h -- versions of the SSD tree and the MANIFEST that records them.
 *
 * A version is an immutable, refcounted list of SST files per level
 * (L0 .. VERSION_LEVELS-1). L0 files may overlap and are ordered newest first
 * (by largest sequence); files of L1+ are disjoint and sorted by smallest key.
 * A version_edit describes a change (files added/removed, counters); applying
 * an edit logs it to the MANIFEST (synced) and then installs a new current
 * version. Readers pin a version with version_ref.
 *
 * MANIFEST: a log in the WAL record framing (docs/format-wal.md) whose first
 * record is a full snapshot of the current state, then one record per edit.
 * CURRENT names the live MANIFEST and is switched by atomic rename.
 * Format of edit records: docs/format-manifest.md.
 *
 * Thread safety: vset_* calls are made with the db mutex held (or single
 * threaded at open); version_ref/unref are atomic and lock-free.
 *
 * Implemented by version.c (the version object), version_set.c (the set and
 * the MANIFEST) and version_edit.c (file_meta, edits and their codec).
 */
#ifndef TKV_SST_VERSION_H
#define TKV_SST_VERSION_H

#include <pthread.h>
#include <stdint.h>

#include "io/io.h"
#include "util/ikey.h"
#include "util/coding.h"
#include "util/rangedel.h"

#define VERSION_LEVELS 7

/* file_meta -- one SST file (shared between versions, refcounted). */
typedef struct file_meta {
    uint32_t refs;   /* atomic: versions (and compactions) holding it */
    uint64_t number; /* file is <dir>/<number>.sst (6+ digits) */
    uint64_t size;   /* bytes */
    uint64_t num_entries;
    uint64_t min_seq, max_seq; /* of the entries and the range tombstones */
    tkv_buf smallest, largest; /* internal keys; they cover the range tombstones too (file_meta_add_range_dels) */
    uint64_t num_range_dels;   /* range tombstones in the file (0: none, and its table is format version 1) */
    int being_compacted;       /* set by the compaction picker under the db mutex */
    uint64_t wanted_until_us;  /* L0->L1 work waits for it: no deep pick takes it before (db mutex; silk_yield_l1) */
} file_meta;

file_meta *file_meta_new(void);
void file_meta_ref(file_meta *f);
void file_meta_unref(file_meta *f); /* frees at 0 */
/* file_meta_add_range_dels -- counts range tombstones t[0..n) in f and
 * widens its sequence range and key range over them, after its entries: a
 * tombstone [b, e) makes smallest at most ikey(b, IKEY_MAX_SEQ, value), the
 * first internal key of b, and largest at least ikey(rd_key_prev_incl(e), 0,
 * deletion), the last one of the largest user key it may cover -- so the
 * file's user-key range holds every key its tombstones cover (e itself too
 * when e does not end in 0x00: one key too many, never one too few). Reads
 * and compaction picking, which go by these ranges, then see the
 * tombstones. 0 or TKV_NO_MEMORY. */
int file_meta_add_range_dels(file_meta *f, const rd_tomb *t, size_t n);

typedef struct version_set version_set;

/* row_cursor -- the drain cursor of one matrix-container row (RowTable):
 * entries below `cursor` have been moved to L1 by column compaction. The
 * cursor is recorded here, in the same version edit that installs the L1
 * files, so the two move together atomically (docs/design.md, durability
 * invariant 7). A row with no
 * entry has cursor 0; a row is removed from the version when it is gone. */
typedef struct row_key row_key;
typedef struct row_cursor {
    uint64_t row_id;
    uint64_t cursor;
    row_key *rd_start; /* NULL, or: the row's range tombstones below this key have moved to L1 (a ref) */
} row_cursor;

/* row_key -- an immutable, refcounted key, shared by the versions and edits
 * that record it: a row's range tombstone start. Column compaction moves a
 * row's range tombstones to L1 key range by key range, with its entries
 * (mx_column.c): the part below rd_start is in L1, the part from it on still
 * the row's. NULL means the row's tombstones are all its own. */
struct row_key {
    uint32_t refs; /* atomic */
    uint32_t n;
    uint8_t b[];
};
/* row_key_new -- a copy of k with one reference; NULL on out of memory. */
row_key *row_key_new(tkv_slice k);
void row_key_ref(row_key *k);   /* NULL-safe */
void row_key_unref(row_key *k); /* NULL-safe; frees with the last reference */
static inline tkv_slice row_key_slice(const row_key *k) { return k ? slice(k->b, k->n) : slice(NULL, 0); }

typedef struct version {
    uint32_t refs;      /* atomic */
    uint32_t file_refs; /* atomic: the refs taken by version_ref_files (they pin no rows) */
    version_set *vs;
    file_meta **files[VERSION_LEVELS]; /* refs held */
    size_t nfiles[VERSION_LEVELS];
    row_cursor *rows; /* sorted by row_id, unique */
    size_t nrows;
    struct version *prev, *next; /* list of live versions in vs */
} version;

/* version_row_cursor -- the recorded cursor of row_id: 1 and *cursor if the
 * version knows the row, else 0. */
int version_row_cursor(const version *v, uint64_t row_id, uint64_t *cursor);
/* version_row_rd_start -- row_id's range tombstone start in v (NULL: none,
 * or the version does not know the row); valid while v is. */
const row_key *version_row_rd_start(const version *v, uint64_t row_id);

void version_ref(version *v);
/* version_unref -- drops a ref; 1 if that was the last one (v is freed). */
int version_unref(version *v);
/* version_ref_files / version_unref_files -- a ref for a reader of the SST
 * levels only (a leveled compaction): a version that is not current and
 * holds no other refs pins no matrix rows (vset_row_floor skips it), so a
 * long -- or paused -- deep compaction does not keep pool pages. */
void version_ref_files(version *v);
int version_unref_files(version *v); /* thread-safe (the live-version list has its own lock); as version_unref */

/* version_level_bytes -- total file bytes at a level. */
uint64_t version_level_bytes(const version *v, int level);

/* version_overlapping -- files of `level` whose user-key range intersects
 * [lo, hi] (user keys; NULL = open end). Allocates *out (caller frees the
 * array, not the files). For L0 the result is in newest-first order. */
int version_overlapping(const version *v, int level, const tkv_slice *lo, const tkv_slice *hi, file_meta ***out,
                        size_t *n);

/* version_find_file -- for L1+: index of the first file whose largest user key
 * >= ukey (nfiles if none). */
size_t version_find_file(const version *v, int level, tkv_slice ukey);

typedef struct version_edit {
    int has_log_number, has_next_file, has_last_seq;
    uint64_t log_number; /* WALs with number < log_number are no longer needed */
    uint64_t next_file;
    uint64_t last_seq;
    size_t ndeleted, nadded;
    struct {
        int level;
        uint64_t number;
    } * deleted;
    struct {
        int level;
        file_meta *f;
    } * added; /* edit holds a ref on each */
    size_t ncursors, nrows_removed;
    row_cursor *cursors;    /* rows whose cursor is set (added if new) */
    uint64_t *rows_removed; /* rows that leave the version */
    int has_pool_uuid;
    uint8_t pool_uuid[16]; /* the matrix pool this database's rows live in (l0=matrix) */
} version_edit;

void edit_init(version_edit *e);
void edit_free(version_edit *e);
int edit_add_file(version_edit *e, int level, file_meta *f); /* takes a ref */
int edit_delete_file(version_edit *e, int level, uint64_t number);
/* edit_set_row_cursor -- sets (or adds) row_id's cursor; a row may appear
 * once per edit. edit_remove_row -- row_id leaves the version (it must be
 * known to the base version and not also set in the same edit). */
int edit_set_row_cursor(version_edit *e, uint64_t row_id, uint64_t cursor);
/* edit_set_row_cursor_rd -- edit_set_row_cursor with the row's range
 * tombstone start (NULL: none; a ref is taken): MANIFEST tag 10. */
int edit_set_row_cursor_rd(version_edit *e, uint64_t row_id, uint64_t cursor, row_key *rd_start);
int edit_remove_row(version_edit *e, uint64_t row_id);
/* edit_encode / edit_decode -- the MANIFEST record codec. Decode returns
 * TKV_CORRUPTION on any malformed input (never crashes). */
int edit_encode(const version_edit *e, tkv_buf *out);
int edit_decode(const uint8_t *p, size_t n, version_edit *e);

/* vset_open -- opens the version set of `dir`: if CURRENT exists, recovers
 * the state from the MANIFEST it names (TKV_CORRUPTION naming the MANIFEST on
 * a bad record, on a CURRENT naming a missing file, or when a file listed
 * does not exist on disk -- the message names it); otherwise creates a new
 * MANIFEST + CURRENT. Afterwards a new MANIFEST is always started (written
 * with a snapshot record) so old tails are never appended to. */
int vset_open(const char *dir, io_stats *st, version_set **out);
/* vset_open_readonly -- the state the MANIFEST named by CURRENT records,
 * recovered as vset_open does (same TKV_CORRUPTION cases), for looking at a
 * database without changing it (tkv_verify, the tkv tool): no new MANIFEST,
 * no CURRENT switch, nothing deleted. With check_files every listed SST
 * must exist with its recorded size, as vset_open checks (a read-only
 * tkv_open); without it they are not looked at (tkv_verify checks them
 * file by file). vset_log_and_apply on it fails (TKV_INVALID);
 * vset_manifest_number names the MANIFEST read.
 * Returns 0 and *out, 1 (TKV_NOT_FOUND, *out NULL) when dir has no
 * MANIFEST, or an error. */
int vset_open_readonly(const char *dir, io_stats *st, int check_files, version_set **out);
void vset_close(version_set *vs); /* frees; all versions must be unreferenced except current */

version *vset_current(version_set *vs); /* not ref'd: call with db mutex held and ref it */
uint64_t vset_new_file_number(version_set *vs);
uint64_t vset_next_file_number(const version_set *vs);
void vset_mark_file_number_used(version_set *vs, uint64_t number); /* next_file = max(next_file, number+1) */
uint64_t vset_log_number(const version_set *vs);
uint64_t vset_last_seq(const version_set *vs);
void vset_set_last_seq(version_set *vs, uint64_t seq);
/* vset_pool_uuid -- the pool uuid the MANIFEST records: 1 and *out, or 0 if
 * none was ever recorded (l0=sst, or a database created before the tag).
 * An edit with has_pool_uuid replaces it (vset_log_and_apply). */
int vset_pool_uuid(const version_set *vs, uint8_t out[16]);

/* vset_log_and_apply -- sets the edit's next_file/last_seq from vs, appends it
 * to the MANIFEST and syncs it, then installs the new current version.
 * On error nothing is installed and the error is returned (the MANIFEST may
 * hold a torn tail, which recovery drops). Deleting files of levels they are
 * not in, or adding overlapping files to L1+, is TKV_CORRUPTION (a bug). */
int vset_log_and_apply(version_set *vs, version_edit *e);
/* vset_log_and_apply_unlocking -- the same for a caller holding `mu`, the
 * mutex under which every other thread reads vset_current and calls this:
 * mu is released while the record is appended and synced (a MANIFEST fsync
 * must not stall every reader and writer) and held again on return. Calls
 * are serialized: a second one waits until the first has installed. An
 * edit must therefore not depend on anything another install could change
 * meanwhile (the engine's jobs work on disjoint, busy-marked inputs). */
int vset_log_and_apply_unlocking(version_set *vs, version_edit *e, pthread_mutex_t *mu);

/* vset_live_files -- adds every file number referenced by any live version
 * to a sorted array (*out malloc'd). Files not in it (and not being written)
 * may be deleted. */
int vset_live_files(version_set *vs, uint64_t **out, size_t *n);

/* vset_row_floor -- the smallest cursor of matrix row row_id over every
 * live version (the current one and every one a reader still pins): 1 and
 * *floor, or 0 when no live version lists the row any more. Pages of the row
 * below the floor are unreachable by every reader. Thread-safe. */
int vset_row_floor(version_set *vs, uint64_t row_id, uint64_t *floor);

/* vset_manifest_number -- the number of the live MANIFEST (MANIFEST-%06llu). */
uint64_t vset_manifest_number(const version_set *vs);

#endif
