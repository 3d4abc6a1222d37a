// SPDX-License-Identifier: Apache-2.0
/*
 * mx.h -- the matrix container inside the database (l0=matrix): the pool and
 * its rows as L0, between the memtables and the SSD tree.
 *
 *   open:      mx_open reconciles the pool with the MANIFEST (before WAL replay)
 *   flush:     mx_flush_one: oldest immutable memtable -> one RowTable;
 *              mx_flush_blocked / mx_flush_unblocked while it waits for room
 *   read:      mx_get / mx_add_iters over the superversion's rowset, at the
 *              cursors of the version pinned with it
 *   compact:   the column thread (mx_start/mx_stop): the compactor (oldest
 *              rows) drains into L1 column by column (matrix/column.h)
 *   reclaim:   release floors, dead pages, dropped rows (inside mx)
 *
 * The container owns its state (db->mx, opaque outside mx_*.c: mx_int.h,
 * which also holds the rules that make it safe). With l0=sst db->mx is NULL:
 * mx_open then only refuses a MANIFEST that still lists rows, mx_report says
 * there is no container, mx_flush_one and mx_flush_blocked must not be
 * called, and every other function is a no-op that finds nothing to do.
 * Locking: every function takes db->mu held unless its comment says
 * otherwise.
 */
#ifndef TKV_DB_MX_H
#define TKV_DB_MX_H

#include "db/db_impl.h"

/* The file in the database directory that names the pool (path and uuid),
 * for tkv_destroy: written by mx_open. */
#define MX_POOL_FILE "POOL"

/* mx_flush_one returns this (> 0) when the pool has no room for the row:
 * nothing changed; the flush is retried once column compaction frees pages. */
#define MX_NO_SPACE 1

/* mx_recorded_pool -- the pool file that <dir>/POOL names (mx_open writes
 * it: "path=" and "uuid=" lines) into path[n] and its uuid: 1, or 0 if
 * there is none (no such file: l0=sst, or a database from before it was
 * written) or it cannot be read. For tkv_destroy and tkv_verify; no lock,
 * no handle needed. */
int mx_recorded_pool(const char *dir, char *path, size_t n, uint8_t uuid[16]);

/* mx_open -- l0=matrix: opens the pool (creating it for a new database),
 * drops rows the MANIFEST does not list (a flush cut short between its slot
 * commit and its edit, or a drained row not yet dropped), re-applies the
 * MANIFEST's cursors and releases the pages below them; TKV_CORRUPTION if the
 * MANIFEST lists a row the pool does not have or a row fails verification.
 * It records the pool's path and uuid in <dir>/POOL (MX_POOL_FILE).
 * l0=sst: refuses a database whose MANIFEST still lists rows. Single-threaded
 * (open), after vset_open and before WAL replay; no lock.
 * read_only=1: the pool is opened with pool_open_readonly (mapped PROT_READ,
 * a shared lock) and nothing is written -- no row dropped, no page
 * released, no uuid logged, no POOL file: rows the MANIFEST does not list
 * are ignored. No pool file (or an unformatted one) while the MANIFEST
 * lists no rows leaves db->mx NULL, as with l0=sst. */
int mx_open(tkv_db *db);
/* mx_planned_pool_size -- the size the pool of database `dir` will have
 * when opened with o, before anything is opened: 0 with l0=sst; pmem_size
 * if set; else the existing pool file's size, or the default for a new one.
 * (tkv_open counts it against an env's pmem_budget.) */
uint64_t mx_planned_pool_size(const struct tkv_options *o, const char *dir);
/* mx_pool_size -- the pool's size in bytes, from its header (0 with l0=sst).
 * After mx_open; no lock (the geometry never changes). */
uint64_t mx_pool_size(tkv_db *db);
/* mx_initial_rowset -- the rowset of the rows mx_open kept, newest first
 * (for the first superversion); NULL with l0=sst. *rc is TKV_NO_MEMORY on
 * out of memory, else 0. No lock (open). */
rowset *mx_initial_rowset(tkv_db *db, int *rc);
/* mx_close -- closes every row handle and the pool (no drop: a clean close
 * leaves the pool as the MANIFEST describes it) and frees the state. After
 * every rowset is gone; no lock. NULL-safe parts. Returns 0 or the pool's
 * error (a failed persist, or the msync of the close: pool_close). */
int mx_close(tkv_db *db);

/* mx_flush_one -- flushes the oldest immutable memtable into a new row:
 * steps (1)-(3) of mx_flush.c's persist order without mu, then (4) the
 * MANIFEST edit {row cursor 0, log number} and the new superversion under
 * mu. Returns 0, MX_NO_SPACE, or an error (then bg_error is set). */
int mx_flush_one(tkv_db *db);
/* mx_flush_blocked -- the flush thread found no room (MX_NO_SPACE): sets
 * db->flush_blocked (counting the episode once), wakes the column thread
 * (forming a compactor at once) and reclaims what it can. Returns 1 if the
 * flush should keep waiting, 0 if it must give up (shutting down and column
 * compaction cannot make room, or no row fits even in an empty pool: then
 * bg_error is TKV_NO_SPACE). */
int mx_flush_blocked(tkv_db *db);
/* mx_flush_unblocked -- the flush thread is no longer waiting for room:
 * clears db->flush_blocked and counts the time waited. */
void mx_flush_unblocked(tkv_db *db);

/* mx_pinned_full -- 1 if the flush waits for room although the current
 * version has drained every row: the pages it needs are held only by open
 * iterators' views (views pin pages, mx_int.h invariant 2). Writers must
 * not wait for that -- the iterator may belong to the waiting thread -- so
 * make_room then queues one more immutable memtable in DRAM (counted here:
 * call it only when that is what a 1 will do), as a long-lived RocksDB
 * iterator pins memory. */
int mx_pinned_full(tkv_db *db);
/* mx_fill -- how full the container is, counting what is already promised
 * to it (0 with l0=sst): the fraction of the pool's pages in use plus the
 * pages the memtables not yet in the pool will take -- the active one at
 * its current size and every immutable one whose row has not allocated its
 * pages -- estimated at the pages per batch byte of earlier full-memtable
 * flushes; or, under a DRAM budget, the rows' DRAM over its share if that
 * is larger (at most 1). May pass 1 (an overcommitted pool). The write
 * controller paces on it (write.c): a fill of the pages alone let writers
 * fill one more memtable than the pool had room for, and the flush then
 * found the pool full. Caller holds db->mu. */
double mx_fill(tkv_db *db);
/* mx_dram_bytes -- the DRAM of every open row handle (the rows part of the
 * DRAM budget); 0 with l0=sst. No lock needed. */
size_t mx_dram_bytes(tkv_db *db);
/* mx_rows_over_budget -- 1 if a new row of `entries` entries and about
 * `bytes` bytes would take the rows' DRAM past its share of dram_budget
 * while rows exist that columns can drain (the flush then waits for them,
 * as for a full pool); 0 without a budget or without rows. */
int mx_rows_over_budget(tkv_db *db, size_t entries, size_t bytes);
/* mx_drain_rate -- the rate at which column compaction empties the pool, in
 * bytes/s of the units writers are charged in (batch bytes): the last
 * columns' drains over their time, pulled down by a column running behind
 * that pace (sched/drainmeter.h); the first column's pace once it has run
 * MX_FIRST_DRAIN_US. Returns 0 when there is no measurement yet (or
 * l0=sst): unknown. */
int mx_drain_rate(tkv_db *db, uint64_t *rate);
/* mx_note_drain_wait -- a write sleeps now because it was paced at the
 * container ramp (sched/wctl.h, ticket.ramp_paced): clients wait for column
 * compaction. For MX_BOOST_HOLD_US from now, columns start on the boost
 * thread, at the process's CPU priority instead of background_nice
 * (mx_column.c). Caller holds mu (its wake-up of the boost thread must not
 * fall between that thread's check and its wait); nothing with l0=sst. */
void mx_note_drain_wait(tkv_db *db, uint64_t now_us);

/* mx_get -- the newest entry of ukey visible at seq in the rows of sv, at the
 * cursors of v (pinned together with sv). *rd: the newest range tombstone
 * visible at seq covering ukey in the tiers read before (the memtables),
 * raised by the rows' (each row's from its range tombstone start in v on,
 * mx_row_range_dels); an entry older than it reads as a deletion, and no
 * entry under one is a deletion too (the search ends: nothing older is
 * newer than it). 1 (type, value in *val), 0, < 0. No lock needed. */
int mx_get(tkv_db *db, superversion *sv, version *v, tkv_slice ukey, uint64_t seq, uint64_t *rd, ikey_type *type,
           tkv_buf *val);
/* mx_row_range_dels -- 1 if row r holds range tombstones, with *start the
 * key from which on they are still the row's in v (below it column
 * compaction moved them to L1 with the entries; an empty slice: all of
 * them); 0 without tombstones. */
int mx_row_range_dels(const version *v, const rowtable *r, tkv_slice *start);
/* mx_add_iters -- appends one iterator per row of sv (newest first) at v's
 * cursors to children[*k...]; the caller sized children with mx_iter_count.
 * Their seeks share a plan (rowtable_iters_at): hinted from row to row
 * unless the option seek_hints is 0, counted in tkv.matrix's seeks line.
 * 0 or TKV_NO_MEMORY. No lock needed. */
int mx_add_iters(tkv_db *db, superversion *sv, version *v, tkv_it **children, size_t *k);
size_t mx_iter_count(const superversion *sv);
/* mx_range_dels -- appends the range tombstones of sv's rows (newest first,
 * each from its start in v on: mx_row_range_dels) to out, those of row i
 * with tier `tier` + i -- the index of its iterator among an iterator's
 * children when they start at `tier` (mx_add_iters). 0 or TKV_NO_MEMORY. */
int mx_range_dels(const superversion *sv, const version *v, uint32_t tier, rd_list *out);

/* mx_row_iters -- out[i] = an iterator over row i of sv (newest first, as
 * many as mx_iter_count) from v's cursor to its end, each on its own (no
 * shared seek plan: for reading rows whole, tkv_checkpoint), what they read
 * charged to the scheduler's pmem tier as class cls. 0, or an error (no
 * iterator left). No lock needed. */
int mx_row_iters(tkv_db *db, superversion *sv, version *v, io_class cls, tkv_it **out);

/* mx_start / mx_stop -- the column-compaction thread; no lock. mx_stop runs
 * after the flush thread has stopped (it keeps compacting while a flush
 * waits for room during shutdown); a column still merging then is stopped
 * within CMP_STOP_EVERY keys and dropped (db->columns_stop): its rows stay
 * in the pool for the next open. */
int mx_start(tkv_db *db);
void mx_stop(tkv_db *db);

/* mx_drain -- tkv_compact_range: waits until every row that exists now has
 * been moved to L1 (or an error). mu is released while waiting. */
int mx_drain(tkv_db *db);

/* mx_report -- the text of tkv.matrix (what == 0) or tkv.pmem (what == 1). */
void mx_report(tkv_db *db, int what, tkv_buf *b, int *oom);
/* mx_stat_counts -- column compactions committed and the bytes of pool
 * pages in use (0 and 0 with l0=sst); lock-free (tkv_statistics). */
void mx_stat_counts(tkv_db *db, uint64_t *columns, uint64_t *pool_bytes);
/* mx_stats_line -- the matrix container's summary lines for tkv.stats. */
void mx_stats_line(tkv_db *db, tkv_buf *b, int *oom);

#endif
