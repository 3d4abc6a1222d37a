// SPDX-License-Identifier: Apache-2.0
/*
 * output.c -- one SST being written by a flush or a compaction (output.h).
 */
#include "db/output.h"

#include <string.h>

#include "db/files.h"
#include "util/status.h"

int output_open(tkv_db *db, output *o, io_class cls, int level)
{
    memset(o, 0, sizeof *o);
    pthread_mutex_lock(&db->mu);
    uint64_t number = vset_new_file_number(db->vs);
    int rc = files_add_pending(db, number);
    pthread_mutex_unlock(&db->mu);
    TKV_TRY(rc);
    /* with async_io, a direct output's writes run behind the builder (io.h) */
    unsigned flags = db->opts.direct_io ? IO_DIRECT | (db->rings ? IO_WRITE_BEHIND : 0) : 0;
    rc = output_open_in(db, o, db->dir, number, flags, cls, level);
    if (rc < 0 && !o->f) { /* output_discard cannot find the number: unpend it here */
        pthread_mutex_lock(&db->mu);
        files_remove_pending(db, number);
        pthread_mutex_unlock(&db->mu);
    }
    return rc;
}

int output_open_in(tkv_db *db, output *o, const char *dir, uint64_t number, unsigned flags, io_class cls, int level)
{
    memset(o, 0, sizeof *o);
    o->f = file_meta_new();
    if (!o->f) return tkv_err(TKV_NO_MEMORY, "out of memory");
    o->f->number = number;
    sst_path(dir, number, o->path, sizeof o->path);
    TKV_TRY(io_open_append_ex(o->path, 0, flags, cls, &db->io, &o->file));
    table_options to;
    table_options_default(&to);
    to.block_size = db->opts.block_size;
    to.bloom_bits_per_key = db->opts.bloom_bits_per_key;
    to.compression = output_codec(db, level);
    return table_builder_new(o->file, &to, &o->tb);
}

int output_codec(const tkv_db *db, int level)
{
    return level <= 1 && db->opts.l1_compression != 2 ? db->opts.l1_compression : db->opts.compression;
}

int output_add(output *o, tkv_slice k, tkv_slice v)
{
    TKV_TRY(table_builder_add(o->tb, k, v));
    file_meta *f = o->f;
    if (f->smallest.len == 0) TKV_TRY(buf_append(&f->smallest, k.p, k.n));
    f->largest.len = 0;
    TKV_TRY(buf_append(&f->largest, k.p, k.n));
    uint64_t seq = ikey_seq(k);
    if (f->num_entries == 0 || seq < f->min_seq) f->min_seq = seq;
    if (seq > f->max_seq) f->max_seq = seq;
    f->num_entries++;
    return 0;
}

int output_add_range_dels(output *o, const rd_tomb *t, size_t n)
{
    if (n == 0) return 0;
    TKV_TRY(table_builder_add_range_dels(o->tb, t, n));
    return file_meta_add_range_dels(o->f, t, n);
}

int output_empty(const output *o) { return o->f->num_entries == 0 && o->f->num_range_dels == 0; }

int output_finish(output *o)
{
    int rc = table_builder_finish(o->tb);
    if (rc == 0) o->f->size = table_builder_file_size(o->tb);
    if (rc == 0) rc = io_sync(o->file);
    table_builder_free(o->tb);
    o->tb = NULL;
    int crc = io_close(o->file);
    o->file = NULL;
    return rc ? rc : crc;
}

file_meta *output_take(output *o)
{
    file_meta *f = o->f;
    table_builder_free(o->tb); /* NULL after output_finish */
    io_close(o->file);
    memset(o, 0, sizeof *o);
    return f;
}

void output_discard(tkv_db *db, output *o)
{
    table_builder_free(o->tb);
    io_close(o->file);
    if (o->path[0]) io_remove(o->path);
    if (o->f) {
        pthread_mutex_lock(&db->mu);
        files_remove_pending(db, o->f->number);
        pthread_mutex_unlock(&db->mu);
        file_meta_unref(o->f);
    }
    memset(o, 0, sizeof *o);
}
