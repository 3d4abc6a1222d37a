// SPDX-License-Identifier: Apache-2.0
/*
 * flush.h -- the flush thread (the high-priority background work): the
 * oldest immutable memtable becomes a row of the matrix container
 * (l0=matrix, mx_flush.c) or an L0 SST (l0=sst, here), one at a time, in
 * WAL order; after each flush the write controller gets a bandwidth sample.
 */
#ifndef TKV_DB_FLUSH_H
#define TKV_DB_FLUSH_H

#include "db/db_impl.h"

/* flush_start -- starts the flush thread ("tkv-flush"). */
int flush_start(tkv_db *db);
/* flush_stop -- sets shutting_down and joins the flush thread, which first
 * flushes every immutable memtable left (unless a background error, or a
 * full pool that column compaction cannot empty, stops it: the WAL keeps
 * that data). */
void flush_stop(tkv_db *db);
/* flush_wait_all -- waits until no immutable memtable is left (or
 * bg_error, returned). Caller holds mu (released while waiting). */
int flush_wait_all(tkv_db *db);

#endif
