/*
 * compact.h -- building SSTs from sorted input (flush and compaction), picking
 * compactions for the leveled SSD tree, and running them.
 *
 * Every background job is a unit with a kind (its I/O class), an input level,
 * a priority and an estimated byte count (bg_job), so the scheduler issue can
 * replace the policy without touching the jobs themselves.
 */
#ifndef TKV_DB_COMPACT_H
#define TKV_DB_COMPACT_H

#include "db/db_impl.h"
#include "sst/table.h"
#include "sst/version.h"

/* A compaction: inputs[0] from `level`, inputs[1] from level+1 (the output level). */
typedef struct compaction {
    int level;
    int out_level;
    file_meta **inputs[2];
    size_t ninputs[2];
    int trivial_move;     /* one input file, nothing overlapping below: re-link it */
    uint64_t est_bytes;   /* input bytes */
    io_class cls;         /* IO_COMPACT_L0 or IO_COMPACT_DEEP */
    int manual;
} compaction;

void compaction_free(compaction *c);

/* level_target_bytes -- the size target of level L (L >= 1). */
uint64_t level_target_bytes(const struct tkv_options *o, int level);

/* compaction_score -- the highest compaction score in v and its level (score
 * >= 1 means compaction is needed): L0 by file count over its trigger, L1+ by
 * bytes over target. */
double compaction_score(const version *v, const struct tkv_options *o, int *level);

/* pick_compaction -- the compaction to run next in v, or NULL. Skips files
 * already being compacted. Caller holds db->mu; the inputs are marked
 * being_compacted (and ref'd) on return. */
compaction *pick_compaction(tkv_db *db, version *v);
/* compaction_score_in / pick_compaction_in -- the same restricted to input
 * levels lo..hi (the high pool takes level 0, the low pool 1..). *busy (may
 * be NULL) is set when the best level's L0 pick found busy files. */
double compaction_score_in(const version *v, const struct tkv_options *o, int lo, int hi, int *level);
compaction *pick_compaction_in(tkv_db *db, version *v, int lo, int hi, int *busy);

/* pick_range_compaction -- a compaction of every file of `level` overlapping
 * [lo, hi] with the overlapping files of level+1 (tkv_compact_range). NULL if
 * level has none or some are busy (*busy set). Caller holds db->mu. */
compaction *pick_range_compaction(tkv_db *db, version *v, int level, const tkv_slice *lo, const tkv_slice *hi,
                                  int *busy);

/* run_compaction -- executes c (mu NOT held), then installs the result under
 * mu (returns holding nothing). On failure partial outputs are removed and the
 * inputs are untouched. */
int run_compaction(tkv_db *db, compaction *c);

/* compact_merge -- the merge loop shared by every compaction: reads `in`
 * (an internal iterator in ikey order) and writes output SSTs of out_level
 * (I/O class cls), split at sst_size but never between versions of one user
 * key, dropping versions hidden by a newer version visible to every reader
 * (seq <= smallest_snapshot) and tombstones that hide nothing (no level of v
 * below out_level can hold the key). Steps (1) and (2) of compact.c's
 * persistence order: every output is synced and closed and the directory
 * synced. Returns 0 and the outputs (*out malloc'd; each file is pending and
 * referenced: hand them to compact_discard_outputs after installing), or an
 * error with every output removed. mu NOT held. */
int compact_merge(tkv_db *db, tkv_it *in, int out_level, io_class cls, const version *v, uint64_t smallest_snapshot,
                  file_meta ***out, size_t *nout);
/* compact_discard_outputs -- releases outputs of compact_merge: removes them
 * from the pending set and unrefs them, deleting their files first (and
 * dropping any table compact_preload_outputs opened) if remove_files (a job
 * that failed before its edit was logged). Frees the array. Takes mu. */
void compact_discard_outputs(tkv_db *db, file_meta **done, size_t ndone, int remove_files);

/* compact_preload_outputs -- with preload_tables, opens a job's finished
 * outputs into the table cache (their index and filter read now, charged to
 * cls, instead of by the first clients that read them). Called after
 * compact_merge and BEFORE the edit is installed: once the version that
 * lists the outputs is current, client reads land in them at once, and a
 * table not yet open would be opened by those reads (the stall at every
 * compaction's end in the SILK trace). Call without mu, while the caller
 * still holds its refs on files[]. Failures are ignored: the table stays
 * closed and a reader meets the error; a job that then fails discards the
 * outputs with remove_files, which drops the opened tables too. */
void compact_preload_outputs(tkv_db *db, file_meta *const *files, size_t n, io_class cls);

/* db_preload_tables -- with preload_tables, opens the current version's
 * tables into the table cache at tkv_open, upper levels first, at most
 * max_open_files of them (IO_META). Failures are ignored as above. */
void db_preload_tables(tkv_db *db);

/* is_base_level -- 1 if no level of v deeper than out_level can hold ukey. */
int is_base_level(const version *v, int out_level, tkv_slice ukey);
/* open_input -- an iterator over SST f read with I/O class cls, bypassing the
 * block cache (*t_out: the table to close after the iterator). */
tkv_it *open_input(tkv_db *db, const file_meta *f, io_class cls, table **t_out);
/* install -- logs edit e to the MANIFEST and installs the new version
 * (steps 3 and 4). Caller holds mu, which is released during the MANIFEST
 * write and sync and held again on return (vset_log_and_apply_unlocking). */
int install(tkv_db *db, version_edit *e);

/* flush_memtable -- writes memtable m to a new L0 SST (mu NOT held). On
 * success *out is the new file (NULL if m held no entries). */
int flush_memtable(tkv_db *db, memtable *m, file_meta **out);

/* delete_obsolete_files -- removes SSTs no live version references (and not
 * being written), WALs older than the version set's log number, old
 * MANIFESTs, and ".trash" files a crash left. SSTs and WALs are renamed to
 * "<name>.trash" and handed to db->trash, which deletes them a chunk at a
 * time (trash.h: online discard). Caller holds mu; the choice is made under
 * it, and it is released while the files are renamed or unlinked: unlinking a 64 MiB file can wait for the
 * filesystem journal behind a busy device for 100+ ms, and every get and
 * put needs mu. (A file found obsolete stays obsolete: file numbers are never
 * reused, and a concurrent remover of the same file just sees ENOENT.) */
void delete_obsolete_files(tkv_db *db);

#endif
