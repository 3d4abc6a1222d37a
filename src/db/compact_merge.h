// SPDX-License-Identifier: Apache-2.0
/*
 * compact_merge.h -- the merge shared by every compaction (leveled, and the
 * matrix container's columns): reading inputs, writing output SSTs, and
 * discarding or preloading the finished outputs.
 */
#ifndef TKV_DB_COMPACT_MERGE_H
#define TKV_DB_COMPACT_MERGE_H

#include "db/db_impl.h"
#include "sst/table.h"

/* cmp_merge -- reads `in` (an internal iterator in ikey order) and writes
 * output SSTs of out_level (I/O class cls), split at sst_size but never
 * between versions of one user key, dropping versions hidden by a newer
 * version visible to every reader (seq <= smallest_snapshot) and tombstones
 * that hide nothing (no level of v below out_level can hold the key).
 * Range tombstones (rd, the inputs' fragments; NULL: none) hide entries the
 * same way -- an entry under a newer tombstone every reader sees is dropped
 * -- and go to the outputs cut at their boundaries: an output ending at
 * user key p holds the tombstones' parts below p + 0x00, the next one those
 * from there, the last one the rest (a tombstone-only output if no entry
 * is left); a tombstone hidden by a newer one every reader sees, or seen by
 * every reader with no level below out_level meeting its range, is
 * dropped. Steps
 * (1) and (2) of files.h's persistence order: every output is synced and
 * closed and the directory synced. Returns 0 and the outputs (*out
 * malloc'd; each file is pending and referenced: hand them to
 * cmp_discard_outputs after installing), or an error with every output
 * removed. mu NOT held. */
int cmp_merge(tkv_db *db, tkv_it *in, const rd_frags *rd, int out_level, io_class cls, const version *v,
              uint64_t smallest_snapshot, file_meta ***out, size_t *nout);
/* What cmp_merge returns for a column (cls IO_COMPACT_L0 at out_level 1)
 * that tkv_close stopped (db->columns_stop): no error, the outputs are gone,
 * the column is simply not done. It is checked every CMP_STOP_EVERY user
 * keys. */
#define CMP_STOPPED    (-1001)
#define CMP_STOP_EVERY 256u

/* The inputs of one merge: n child iterators, newest data first, and the
 * tables under them (NULL where a child reads no SST); the io_uring ring
 * their SST reads go through (NULL: synchronous reads), held by the merge's
 * thread from cmp_inputs_new to the end of cmp_merge_inputs. */
typedef struct cmp_inputs {
    tkv_it **kids;
    table **tables;
    size_t n;
    io_ring *ring;
    rd_list rd; /* range tombstones of inputs that are not tables (a column's rows), cut to the merge's range */
} cmp_inputs;

/* cmp_inputs_new -- room for n inputs (all NULL), and a ring of db's pool
 * when compaction_readahead is on and one is free; TKV_NO_MEMORY ("out of
 * memory starting <what>"), then nothing to free. On success the caller
 * must end with cmp_merge_inputs (which gives the ring back). */
int cmp_inputs_new(tkv_db *db, cmp_inputs *in, size_t n, const char *what);

/* cmp_merge_inputs -- cmp_merge over the merging iterator of in's children
 * and the range tombstones of in->rd and of every input table, then closes
 * them and their tables and frees in (also on error). */
int cmp_merge_inputs(tkv_db *db, cmp_inputs *in, int out_level, io_class cls, const version *v,
                     uint64_t smallest_snapshot, file_meta ***out, size_t *nout);

/* cmp_discard_outputs -- releases outputs of cmp_merge: removes them from
 * the pending set and unrefs them, deleting their files first (and dropping
 * any table cmp_preload_outputs opened) if remove_files (a job that failed
 * before its edit was logged; files_remove, without mu). Frees the array.
 * Takes mu. mu NOT held. */
void cmp_discard_outputs(tkv_db *db, file_meta **done, size_t ndone, int remove_files);

/* cmp_preload_outputs -- with preload_tables, opens a job's finished outputs
 * into the table cache (their index and filter read now, charged to cls,
 * instead of by the first clients that read them). Called after the merge
 * and BEFORE the edit is installed: once the version that lists the outputs
 * is current, client reads land in them at once, and a table not yet open
 * would be opened by those reads (the stall at every compaction's end in
 * the SILK trace). Call without mu, while the caller still holds its refs
 * on files[]. Failures are ignored: the table stays closed and a reader
 * meets the error; a job that then fails discards the outputs with
 * remove_files, which drops the opened tables too. */
void cmp_preload_outputs(tkv_db *db, file_meta *const *files, size_t n, io_class cls);

/* cmp_preload_tables -- with preload_tables, opens the current version's
 * tables into the table cache at tkv_open, upper levels first, at most
 * max_open_files of them (IO_META). Failures are ignored as above. */
void cmp_preload_tables(tkv_db *db);

/* cmp_open_input -- an iterator over SST f, an input of `in`, read with
 * I/O class cls and compaction_readahead (asynchronously through in's ring
 * when it has one), bypassing the block cache (compaction must not evict hot
 * blocks); *t_out is the table to close after the iterator. An error
 * iterator on failure. */
tkv_it *cmp_open_input(tkv_db *db, const cmp_inputs *in, const file_meta *f, io_class cls, table **t_out);

#endif
