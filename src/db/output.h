// SPDX-License-Identifier: Apache-2.0
/*
 * output.h -- one SST being written by a flush or a compaction: a new file
 * number (pending, files.h), the table builder, and the file's key and
 * sequence range as entries are added.
 */
#ifndef TKV_DB_OUTPUT_H
#define TKV_DB_OUTPUT_H

#include "db/db_impl.h"
#include "sst/table.h"

typedef struct output {
    file_meta *f;
    io_file *file;
    table_builder *tb;
    char path[4096];
} output;

/* output_open -- a new SST of level `level` with a fresh file number
 * (added to the pending set, under mu, which it takes), written with I/O
 * class cls and compressed as the level's option says (l1_compression for
 * L0 and L1, compression below). On error the caller still calls
 * output_discard. mu NOT held. */
int output_open(tkv_db *db, output *o, io_class cls, int level);
/* output_open_in -- a new SST numbered `number` in directory `dir`, opened
 * with IO_* flags, not added to the pending set (for files outside the
 * database directory: tkv_checkpoint). As output_open otherwise; on error
 * the caller still calls output_discard. mu NOT held. */
int output_open_in(tkv_db *db, output *o, const char *dir, uint64_t number, unsigned flags, io_class cls, int level);
/* output_codec -- the compression SSTs of `level` are written with
 * (SST_COMPRESS_NONE or SST_COMPRESS_LZ4): l1_compression for L0 and L1
 * unless it is `same`, compression below. */
int output_codec(const tkv_db *db, int level);
/* output_add -- appends an entry (internal keys in order) and tracks the
 * file's key and sequence range. */
int output_add(output *o, tkv_slice k, tkv_slice v);
/* output_add_range_dels -- adds range tombstones t[0..n) to the table and
 * widens the file's key and sequence range over them
 * (file_meta_add_range_dels); after the last output_add. */
int output_add_range_dels(output *o, const rd_tomb *t, size_t n);
/* output_empty -- 1 if nothing was added: no entry, no tombstone. */
int output_empty(const output *o);
/* output_finish -- step (1) of files.h: finishes the table, syncs and
 * closes the file. */
int output_finish(output *o);
/* output_take -- after output_finish: hands the file's meta over (still
 * pending and referenced: the caller removes it from the pending set after
 * install) and clears o. */
file_meta *output_take(output *o);
/* output_discard -- removes an unfinished or unwanted output: closes and
 * deletes its file, drops it from the pending set (takes mu), clears o. */
void output_discard(tkv_db *db, output *o);

#endif
