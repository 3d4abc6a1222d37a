// SPDX-License-Identifier: Apache-2.0
/*
 * compact_pick.h -- choosing the next compaction of the leveled SSD tree:
 * scores per level, the files of a pick, and manual range picks.
 */
#ifndef TKV_DB_COMPACT_PICK_H
#define TKV_DB_COMPACT_PICK_H

#include "db/db_impl.h"

/* A compaction: inputs[0] from `level`, inputs[1] from level+1 (the output
 * level), each in key order (L0: newest first). A deep pick is a run of
 * consecutive files of `level` with, for each, the files of level+1 it
 * overlaps; no file of level+1 overlaps two of them, so the boundary between
 * two is a cut point where the job can stop and keep its work
 * (compact_run.c). */
typedef struct compaction {
    int level;
    int out_level;
    file_meta **inputs[2];
    size_t ninputs[2];
    int trivial_move;   /* one input file, nothing overlapping below: re-link it */
    uint64_t est_bytes; /* input bytes */
    io_class cls;       /* IO_COMPACT_L0 or IO_COMPACT_DEEP */
    int manual;
    /* set by cmp_run */
    int partial;         /* stopped at a cut: installed the work before it, left the rest */
    uint64_t kept_bytes; /* output bytes installed */
    uint64_t read_bytes; /* input bytes those outputs replaced */
} compaction;

/* CMP_RUN_FILES -- a deep pick's run takes at most this many times sst_size
 * of input bytes (both levels; RocksDB's max_compaction_bytes default). */
#define CMP_RUN_FILES 25

/* cmp_free -- unrefs the inputs and frees c (NULL-safe). The caller clears
 * being_compacted first (cmp_run does). */
void cmp_free(compaction *c);

/* cmp_score_in -- the highest compaction score among input levels lo..hi
 * of v and its level (*level): L0 by file count over its trigger, L1+ by
 * bytes over target; >= 1 means compaction is needed. */
double cmp_score_in(const version *v, const struct tkv_options *o, int lo, int hi, int *level);

/* cmp_pick_in -- the compaction to run next among input levels lo..hi of v
 * (the high pool takes level 0, the low pool 1..), or NULL. Skips files
 * already being compacted, and (deep picks) files L0->L1 work waits for
 * (wanted_until_us); *busy (may be NULL) is set when the best level's L0
 * pick found busy files, or its deep pick found nothing but passed over a
 * wanted file (a mark that expires: pick again by then). A deep pick takes a run of files from the level's
 * cursor (compaction, above): more while the files taken are fewer bytes
 * than the level's excess over its target (less its busy files), at most
 * CMP_RUN_FILES x sst_size of input, ending before a busy or wanted file
 * and before a file whose overlap below touches the previous one's. Caller
 * holds db->mu; the inputs are marked being_compacted (and ref'd) on
 * return. */
compaction *cmp_pick_in(tkv_db *db, version *v, int lo, int hi, int *busy);

/* cmp_l0_needs -- the L1 files an L0->L1 compaction of v would take (those
 * the range of all of L0 overlaps): *out malloc'd (the caller frees the
 * array, not the files); *n 0 when L0 is empty. Caller holds db->mu. */
int cmp_l0_needs(const version *v, file_meta ***out, size_t *n);

/* cmp_pick_range -- a compaction of every file of `level` overlapping
 * [lo, hi] with the overlapping files of level+1 (tkv_compact_range). NULL if
 * level has none or some are busy (*busy set). Caller holds db->mu. */
compaction *cmp_pick_range(version *v, int level, const tkv_slice *lo, const tkv_slice *hi, int *busy);
/* cmp_pick_range_dels -- a compaction that rewrites in place (out_level ==
 * level, nothing of level+1 read) the first file of `level` overlapping
 * [lo, hi] that holds range tombstones and whose number is below `below`:
 * tkv_compact_range's last step, so that tombstones which reached the
 * deepest level while a snapshot needed them go once none does (with the
 * entries they cover). NULL if there is none or it is busy (*busy). Caller
 * holds db->mu. */
compaction *cmp_pick_range_dels(version *v, int level, const tkv_slice *lo, const tkv_slice *hi, uint64_t below,
                                int *busy);

#endif
