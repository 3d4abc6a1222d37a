// SPDX-License-Identifier: Apache-2.0
/*
 * table_iter.c -- the iterator over one SSTable: a two-level iterator whose
 * in-memory index block positions the data block, and, on an io_uring ring,
 * its asynchronous reads: adaptive readahead and the seek prefetch.
 * Iterators pin their current block until they move to another one.
 *
 * Readahead (with a ring): the first time the iterator reads the block right
 * after the one it read before (a sequential miss), it queues, with that
 * block's read, a read of the next RA_INITIAL bytes of whole blocks; each
 * time it starts on a readahead buffer it queues the next one, twice as
 * large (up to RA_MAX), into the other buffer -- two buffers, so the device
 * reads one while the iterator walks the other, as RocksDB's FilePrefetchBuffer
 * does with async_io. A block it needs that no buffer holds ends the run:
 * the buffers are dropped (reads in flight are abandoned to the ring) and
 * the size starts small again. Blocks found in the block cache cost nothing
 * and do not break a run. Blocks from a buffer are checked (checksum,
 * decompression) and cached exactly as blocks read one by one; a buffer
 * whose read failed or came back short is dropped and its blocks are read
 * one by one, so an error is reported by the block that has it.
 */
#include <stdlib.h>

#include "io/uring.h"
#include "sst/table_int.h"
#include "util/status.h"

#define RA_INITIAL (8u << 10)
#define RA_MAX     (128u << 10)

/* A read of whole blocks [off, end) of the file in flight or done; q NULL:
 * empty. */
typedef struct ra_buf {
    io_req *q;
    uint64_t off, end;
} ra_buf;

/* A two-level iterator: the index block positions the data block. Invariant:
 * has_block == 1 iff `ref` pins the block at block_off that `data` reads.
 * Readahead invariant: while ra_size > 0, pf_ix is positioned on the last
 * block the newest buffer covers (or the block being read when none is
 * left), so the next buffer starts right after it. */
typedef struct table_it {
    tkv_it base;
    table *t;
    block_iter index;
    block_iter data;
    table_block ref;
    int has_block;
    uint64_t block_off;
    int status; /* the first error met (sticky) */
    /* asynchronous reads: none without a ring */
    io_ring *ring;
    table_prefetch_stats *pst;
    ra_buf ra[2];      /* readahead buffers */
    ra_buf seek;       /* the one block table_iter_prefetch_seek queued */
    block_iter pf_ix;  /* readahead planning position (invariant above) */
    size_t ra_size;    /* bytes of the next readahead; 0: no run */
    size_t ra_first;   /* a run's first readahead (RA_INITIAL, or a sequential reader's size) */
    size_t ra_cap;     /* and the most it grows to (RA_MAX) */
    uint64_t last_end; /* end (trailer included) of the last block loaded */
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
        if (ti->index.status) ti->status = ti->index.status;
        else if (ti->has_block && ti->data.status) ti->status = ti->data.status;
    }
    return ti->status;
}

static void ti_fail(table_it *ti, int rc)
{
    if (ti->status == 0) ti->status = rc;
    drop_block(ti);
}

/* ---------------------------------------------------------------- async reads */

static uint64_t block_end(block_handle h) { return h.offset + h.size + SST_TRAILER_SIZE; }

static void ra_drop(table_it *ti, ra_buf *b)
{
    io_req_free(ti->ring, b->q); /* abandoned to the ring if still in flight */
    b->q = NULL;
}

/* ra_reset -- ends a readahead run. */
static void ra_reset(table_it *ti)
{
    ra_drop(ti, &ti->ra[0]);
    ra_drop(ti, &ti->ra[1]);
    ti->ra_size = 0;
}

static void pst_add(uint64_t *c) { __atomic_fetch_add(c, 1, __ATOMIC_RELAXED); }

/* ra_issue -- queues the next readahead: whole blocks after pf_ix's, about
 * ra_size bytes, into a free buffer; doubles ra_size. Nothing when both
 * buffers are busy, at the end of the table, or when the ring is full. */
static void ra_issue(table_it *ti)
{
    ra_buf *b = !ti->ra[0].q ? &ti->ra[0] : !ti->ra[1].q ? &ti->ra[1] : NULL;
    if (!b || !ti->ra_size || !block_iter_valid(&ti->pf_ix)) return;
    uint64_t off = 0, end = 0;
    for (;;) {
        block_iter_next(&ti->pf_ix);
        block_handle h;
        if (!block_iter_valid(&ti->pf_ix) || table_index_handle(ti->t, &ti->pf_ix, &h) < 0) break;
        if (end == 0) off = h.offset;
        end = block_end(h);
        if (end - off >= ti->ra_size) break;
    }
    /* pf_ix is on the last block covered, or past the end (no more runs) */
    if (end == 0) return;
    io_req *q = io_ring_read(ti->ring, ti->t->f, off, (size_t)(end - off));
    if (!q) return;
    if (q->done) { /* refused: the blocks will be read one by one, and report it */
        io_req_free(ti->ring, q);
        return;
    }
    *b = (ra_buf){q, off, end};
    ti->ra_size = ti->ra_size * 2 < ti->ra_cap ? ti->ra_size * 2 : ti->ra_cap;
    if (ti->pst) pst_add(&ti->pst->reads);
}

/* ra_start -- a sequential miss on the block the index is on: a run starts
 * with the blocks after it. */
static void ra_start(table_it *ti)
{
    block_iter_seek(&ti->pf_ix, block_iter_key(&ti->index));
    if (!block_iter_valid(&ti->pf_ix)) return;
    ti->ra_size = ti->ra_first;
    ra_issue(ti);
}

/* from_buf -- block h from buffer b (waiting for its read): 0 and *r, or 1
 * when b cannot serve it (failed or short read: b is dropped), or < 0 for a
 * block that is there but bad (corruption). */
static int from_buf(table_it *ti, ra_buf *b, block_handle h, table_block *r)
{
    int rc = io_ring_wait(ti->ring, b->q);
    size_t skip = (size_t)(h.offset - b->off);
    if (rc < 0 || b->q->got < skip + h.size + SST_TRAILER_SIZE) {
        ra_drop(ti, b);
        return 1;
    }
    return table_block_parse(ti->t, h, b->q->data + skip, b->q->got - skip, r);
}

/* fetch_async -- data block h with a ring: from the cache, a buffer, or a
 * read of its own (queued with the readahead a sequential miss starts). */
static int fetch_async(table_it *ti, block_handle h, table_block *r)
{
    int seq = h.offset == ti->last_end;
    ti->last_end = block_end(h);
    if (table_block_cached(ti->t, h, r)) {
        if (!seq) ra_reset(ti);
        return 0;
    }
    ra_buf *b = NULL;
    for (int i = 0; i < 2 && !b; i++)
        if (ti->ra[i].q && h.offset >= ti->ra[i].off && block_end(h) <= ti->ra[i].end) b = &ti->ra[i];
    if (b) {
        int rc = from_buf(ti, b, h, r);
        if (rc <= 0) {
            if (ti->pst && rc == 0) pst_add(&ti->pst->blocks);
            if (block_end(h) == b->end) ra_drop(ti, b); /* its last block: the buffer is free */
            ra_issue(ti);                               /* into the other one */
            return rc;
        }
    } else if (ti->seek.q && ti->seek.off == h.offset) {
        int rc = from_buf(ti, &ti->seek, h, r);
        ra_drop(ti, &ti->seek);
        ra_reset(ti);
        if (rc <= 0) return rc;
    } else { /* a block no buffer holds ends the run; a sequential one starts the next */
        ra_reset(ti);
        if (seq) ra_start(ti);
    }
    io_req *q = io_ring_read(ti->ring, ti->t->f, h.offset, (size_t)h.size + SST_TRAILER_SIZE);
    if (!q) return table_data_block(ti->t, h, r); /* no slot: synchronously */
    int rc = io_ring_wait(ti->ring, q);
    if (rc == 0) rc = table_block_parse(ti->t, h, q->data, q->got, r);
    io_req_free(ti->ring, q);
    return rc;
}

static const tkv_it_ops table_it_ops;

int table_iter_prefetch_seek(tkv_it *it, tkv_slice target)
{
    if (it->ops != &table_it_ops) return 0;
    table_it *ti = (table_it *)it;
    if (!ti->ring || ti->status || target.n < IKEY_TRAILER) return 0;
    block_iter ix = {0};
    block_handle h;
    int rc =
        block_iter_init_checked(&ix, ti->t->index->data, ti->t->index->size, ti->t->f->path, ti->t->index_h.offset);
    if (rc == 0) block_iter_seek(&ix, target);
    rc = rc == 0 && block_iter_valid(&ix) ? table_index_handle(ti->t, &ix, &h) : -1;
    block_iter_clear(&ix);
    if (rc < 0 || (ti->has_block && ti->block_off == h.offset)) return 0; /* the seek reports errors */
    if (ti->seek.q && ti->seek.off == h.offset) return 0;
    for (int i = 0; i < 2; i++)
        if (ti->ra[i].q && h.offset >= ti->ra[i].off && block_end(h) <= ti->ra[i].end) return 0;
    table_block b;
    if (table_block_cached(ti->t, h, &b)) {
        table_block_release(ti->t, &b);
        return 0;
    }
    ra_drop(ti, &ti->seek);
    io_req *q = io_ring_read(ti->ring, ti->t->f, h.offset, (size_t)h.size + SST_TRAILER_SIZE);
    if (!q) return 0;
    if (q->done) {
        io_req_free(ti->ring, q);
        return 0;
    }
    ti->seek = (ra_buf){q, h.offset, block_end(h)};
    if (ti->pst) pst_add(&ti->pst->seek_reads);
    return 1;
}

/* ---------------------------------------------------------------- positioning */

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
    rc = ti->ring ? fetch_async(ti, h, &ti->ref) : table_data_block(ti->t, h, &ti->ref);
    if (rc < 0) {
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
    if (ti->ring) {
        ra_reset(ti);
        ra_drop(ti, &ti->seek);
        block_iter_clear(&ti->pf_ix);
    }
    drop_block(ti);
    block_iter_clear(&ti->index);
    block_iter_clear(&ti->data);
    free(ti);
}

static const tkv_it_ops table_it_ops = {ti_valid, ti_seek_first, ti_seek_last, ti_seek,      ti_next,
                                        ti_prev,  ti_key,        ti_value,     ti_status_op, ti_destroy};

tkv_it *table_iter(table *t) { return table_iter_async(t, NULL, NULL); }

static table_it *ti_new(table *t, io_ring *ring, table_prefetch_stats *st, size_t ra_first, size_t ra_cap)
{
    table_it *ti = calloc(1, sizeof *ti);
    if (!ti) {
        tkv_err(TKV_NO_MEMORY, "out of memory allocating a table iterator");
        return NULL;
    }
    ti->base.ops = &table_it_ops;
    ti->t = t;
    /* The index block was checked at open (table_check_index). */
    block_iter_init_checked(&ti->index, t->index->data, t->index->size, t->f->path, t->index_h.offset);
    ti->status = ti->index.status;
    ti->ring = ring;
    ti->pst = st;
    ti->last_end = UINT64_MAX; /* the first block read starts no run */
    ti->ra_first = ra_first;
    ti->ra_cap = ra_cap;
    if (ring) block_iter_init_checked(&ti->pf_ix, t->index->data, t->index->size, t->f->path, t->index_h.offset);
    return ti;
}

tkv_it *table_iter_async(table *t, io_ring *ring, table_prefetch_stats *st)
{
    table_it *ti = ti_new(t, ring, st, RA_INITIAL, RA_MAX);
    return ti ? &ti->base : NULL;
}

tkv_it *table_iter_sequential(table *t, io_ring *ring, size_t ra_bytes, table_prefetch_stats *st)
{
    if (!ring || ra_bytes == 0) return table_iter(t);
    table_it *ti = ti_new(t, ring, st, ra_bytes, ra_bytes);
    if (!ti) return NULL;
    ti->last_end = 0; /* the table's first block (offset 0) starts the run */
    return &ti->base;
}
