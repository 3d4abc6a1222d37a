/*
 * table_iter.c -- the iterator over one SSTable: a two-level iterator whose
 * in-memory index block positions the data block. Iterators pin their current
 * block until they move to another one.
 */
#include <stdlib.h>

#include "sst/table_int.h"
#include "util/status.h"

/* A two-level iterator: the index block positions the data block. Invariant:
 * has_block == 1 iff `ref` pins the block at block_off that `data` reads. */
typedef struct table_it {
    tkv_it base;
    table *t;
    block_iter index;
    block_iter data;
    table_block ref;
    int has_block;
    uint64_t block_off;
    int status; /* the first error met (sticky) */
} table_it;

static void drop_block(table_it *ti)
{
    if (ti->has_block) table_block_release(ti->t, &ti->ref);
    ti->has_block = 0;
}

/* ti_status -- latches the first error of the iterator or its block iterators. */
static int ti_status(table_it *ti)
{
    if (ti->status == 0) {
        if (ti->index.status)
            ti->status = ti->index.status;
        else if (ti->has_block && ti->data.status)
            ti->status = ti->data.status;
    }
    return ti->status;
}

static void ti_fail(table_it *ti, int rc)
{
    if (ti->status == 0) ti->status = rc;
    drop_block(ti);
}

/* load_block -- makes `data` read the block the index is positioned on
 * (unpositioned); keeps the current block if it is the same one. */
static int load_block(table_it *ti)
{
    block_handle h;
    int rc = table_index_handle(ti->t, &ti->index, &h);
    if (rc < 0) {
        ti_fail(ti, rc);
        return rc;
    }
    if (ti->has_block && ti->block_off == h.offset) return 0;
    drop_block(ti);
    if ((rc = table_data_block(ti->t, h, &ti->ref)) < 0) {
        ti_fail(ti, rc);
        return rc;
    }
    ti->has_block = 1;
    ti->block_off = h.offset;
    if ((rc = block_iter_init(&ti->data, ti->ref.blk->data, ti->ref.blk->size, ti->t->f->path, h.offset)) < 0) {
        ti_status(ti);
        return rc;
    }
    return 0;
}

/* skip_forward -- past empty or exhausted blocks to the next entry. */
static void skip_forward(table_it *ti)
{
    while (!ti_status(ti) && !(ti->has_block && block_iter_valid(&ti->data))) {
        if (!block_iter_valid(&ti->index)) break;
        block_iter_next(&ti->index);
        if (!block_iter_valid(&ti->index)) break;
        if (load_block(ti) < 0) return;
        block_iter_seek_first(&ti->data);
    }
    if (ti_status(ti) == 0 && !block_iter_valid(&ti->index)) drop_block(ti);
}

/* skip_backward -- before empty or exhausted blocks to the previous entry. */
static void skip_backward(table_it *ti)
{
    while (!ti_status(ti) && !(ti->has_block && block_iter_valid(&ti->data))) {
        if (!block_iter_valid(&ti->index)) break;
        block_iter_prev(&ti->index);
        if (!block_iter_valid(&ti->index)) break;
        if (load_block(ti) < 0) return;
        block_iter_seek_last(&ti->data);
    }
    if (ti_status(ti) == 0 && !block_iter_valid(&ti->index)) drop_block(ti);
}

static int ti_valid(tkv_it *it)
{
    table_it *ti = (table_it *)it;
    return ti->status == 0 && ti->has_block && block_iter_valid(&ti->data);
}

static void ti_seek_first(tkv_it *it)
{
    table_it *ti = (table_it *)it;
    if (ti->status) return;
    block_iter_seek_first(&ti->index);
    if (!block_iter_valid(&ti->index)) {
        ti_status(ti);
        drop_block(ti);
        return;
    }
    if (load_block(ti) < 0) return;
    block_iter_seek_first(&ti->data);
    skip_forward(ti);
}

static void ti_seek_last(tkv_it *it)
{
    table_it *ti = (table_it *)it;
    if (ti->status) return;
    block_iter_seek_last(&ti->index);
    if (!block_iter_valid(&ti->index)) {
        ti_status(ti);
        drop_block(ti);
        return;
    }
    if (load_block(ti) < 0) return;
    block_iter_seek_last(&ti->data);
    skip_backward(ti);
}

static void ti_seek(tkv_it *it, tkv_slice target)
{
    table_it *ti = (table_it *)it;
    if (ti->status) return;
    if (target.n < IKEY_TRAILER) {
        ti_fail(ti, tkv_err(TKV_INVALID, "table iterator seek: target of %zu bytes is not an internal key", target.n));
        return;
    }
    block_iter_seek(&ti->index, target);
    if (!block_iter_valid(&ti->index)) {
        ti_status(ti);
        drop_block(ti);
        return;
    }
    if (load_block(ti) < 0) return;
    block_iter_seek(&ti->data, target);
    skip_forward(ti);
}

static void ti_next(tkv_it *it)
{
    table_it *ti = (table_it *)it;
    if (!ti_valid(it)) return;
    block_iter_next(&ti->data);
    skip_forward(ti);
}

static void ti_prev(tkv_it *it)
{
    table_it *ti = (table_it *)it;
    if (!ti_valid(it)) return;
    block_iter_prev(&ti->data);
    skip_backward(ti);
}

static tkv_slice ti_key(tkv_it *it) { return block_iter_key(&((table_it *)it)->data); }
static tkv_slice ti_value(tkv_it *it) { return block_iter_value(&((table_it *)it)->data); }
static int ti_status_op(tkv_it *it) { return ti_status((table_it *)it); }

static void ti_destroy(tkv_it *it)
{
    table_it *ti = (table_it *)it;
    drop_block(ti);
    block_iter_clear(&ti->index);
    block_iter_clear(&ti->data);
    free(ti);
}

static const tkv_it_ops table_it_ops = {ti_valid, ti_seek_first, ti_seek_last, ti_seek,      ti_next,
                                        ti_prev,  ti_key,        ti_value,     ti_status_op, ti_destroy};

tkv_it *table_iter(table *t)
{
    table_it *ti = calloc(1, sizeof *ti);
    if (!ti) {
        tkv_err(TKV_NO_MEMORY, "out of memory allocating a table iterator");
        return NULL;
    }
    ti->base.ops = &table_it_ops;
    ti->t = t;
    /* The index block was checked at open (check_index). */
    block_iter_init_checked(&ti->index, t->index->data, t->index->size, t->f->path, t->index_h.offset);
    ti->status = ti->index.status;
    return &ti->base;
}
