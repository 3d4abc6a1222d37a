// SPDX-License-Identifier: Apache-2.0
/*
 * compact_run.h -- running one leveled compaction: merge, commit, install.
 */
#ifndef TKV_DB_COMPACT_RUN_H
#define TKV_DB_COMPACT_RUN_H

#include "db/compact_pick.h"

/* cmp_run -- executes c (mu NOT held), then installs the result under mu
 * (returns holding nothing). On failure partial outputs are removed and the
 * inputs are untouched; errors other than SILK_ABORTED become bg_error.
 * Clears the inputs' being_compacted; the caller frees c. */
int cmp_run(tkv_db *db, compaction *c);

#endif
