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

/* pick_range_compaction -- a compaction of every file of `level` overlapping
 * [lo, hi] with the overlapping files of level+1 (tkv_compact_range). NULL if
 * level has none or some are busy (*busy set). Caller holds db->mu. */
compaction *pick_range_compaction(tkv_db *db, version *v, int level, const tkv_slice *lo, const tkv_slice *hi,
                                  int *busy);

/* run_compaction -- executes c (mu NOT held), then installs the result under
 * mu (returns holding nothing). On failure partial outputs are removed and the
 * inputs are untouched. */
int run_compaction(tkv_db *db, compaction *c);

/* flush_memtable -- writes memtable m to a new L0 SST (mu NOT held). On
 * success *out is the new file (NULL if m held no entries). */
int flush_memtable(tkv_db *db, memtable *m, file_meta **out);

/* delete_obsolete_files -- removes SSTs no live version references (and not
 * being written), WALs older than the version set's log number, old
 * MANIFESTs. Caller holds mu (file removal happens with it held: cheap). */
void delete_obsolete_files(tkv_db *db);

#endif
