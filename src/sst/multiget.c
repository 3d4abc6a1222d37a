// SPDX-License-Identifier: Apache-2.0
/*
 * multiget.c -- the batched lookup of multiget.h: a state per key (where it
 * is in the tree, the read it waits for), a table of the reads in flight
 * keyed by (table, block offset), and a loop that advances every key it can
 * before it waits for a completion.
 */
#include "sst/multiget.h"

#include <stdlib.h>
#include <string.h>

#include "util/status.h"

/* One block read in flight. Invariant: every key on its waiter list holds
 * the pin of rd->t (its own cache handle) until the read is processed, so
 * the table and its file stay open while the read is queued. */
typedef struct mg_read {
    table *t;
    block_handle h;
    io_req *q;
    size_t waiters;        /* first waiting key + 1 (0: none) */
    struct mg_read *hnext; /* hash chain */
    struct mg_read *fnext; /* free list */
} mg_read;

/* Where a key is in the tree: the next candidate is L0 file l0 (while l0 <
 * nfiles[0]), else the file of level `level` that may hold it. */
typedef struct mg_pos {
    size_t l0;
    int level;
} mg_pos;

/* One key's progress. */
typedef struct mg_state {
    mg_pos pos;
    int done;         /* rc is set */
    cache_handle *th; /* the candidate table, pinned while waiting */
    block_handle h;
    mg_read *rd;        /* the read it waits for */
    size_t next_waiter; /* next key + 1 on rd's list */
    uint64_t found;     /* the sequence of the entry a block search found */
} mg_state;

typedef struct mg {
    table_cache *tc;
    const version *v;
    io_ring *ring;
    uint64_t seq;
    multiget_key *keys;
    mg_state *st;
    size_t n;
    size_t *ready, nready;     /* keys to advance */
    size_t *blocked, nblocked; /* keys that found every ring slot taken */
    mg_read *reads, *free_reads;
    mg_read **hash;
    size_t hmask, inflight;
    multiget_stats *stats;
} mg;

static size_t hash_of(const table *t, uint64_t off)
{
    uint64_t x = (uint64_t)(uintptr_t)t ^ (off * UINT64_C(0x9e3779b97f4a7c15));
    x ^= x >> 29;
    return (size_t)(x * UINT64_C(0xbf58476d1ce4e5b9) >> 32);
}

static mg_read *read_find(mg *m, const table *t, uint64_t off)
{
    for (mg_read *r = m->hash[hash_of(t, off) & m->hmask]; r; r = r->hnext)
        if (r->t == t && r->h.offset == off) return r;
    return NULL;
}

static void read_unlink(mg *m, mg_read *rd)
{
    for (mg_read **p = &m->hash[hash_of(rd->t, rd->h.offset) & m->hmask]; *p; p = &(*p)->hnext)
        if (*p == rd) {
            *p = rd->hnext;
            break;
        }
    rd->fnext = m->free_reads;
    m->free_reads = rd;
}

/* next_file -- key k's next candidate file in v (advancing *pos past it),
 * or NULL when the tree has no more: L0 files newest first whose range holds
 * the key, then per level the one file whose range may hold it. */
static const file_meta *next_file(const version *v, tkv_slice k, mg_pos *s)
{
    while (s->l0 < v->nfiles[0]) {
        const file_meta *f = v->files[0][s->l0++];
        if (ukey_cmp(k, ikey_user(slice(f->smallest.data, f->smallest.len))) >= 0 &&
            ukey_cmp(k, ikey_user(slice(f->largest.data, f->largest.len))) <= 0)
            return f;
    }
    while (s->level < VERSION_LEVELS) {
        int l = s->level++;
        size_t idx = version_find_file(v, l, k);
        if (idx >= v->nfiles[l]) continue;
        const file_meta *f = v->files[l][idx];
        if (ukey_cmp(k, ikey_user(slice(f->smallest.data, f->smallest.len))) < 0) continue;
        return f;
    }
    return NULL;
}

/* raise_rd -- *rd up to the newest range tombstone of table t (of file f)
 * visible at seq that covers ukey. */
static void raise_rd(const file_meta *f, table *t, tkv_slice ukey, uint64_t seq, uint64_t *rd)
{
    if (!f->num_range_dels) return;
    uint64_t c = rd_frags_covering(table_range_dels(t), ukey, seq);
    if (c > *rd) *rd = c;
}

/* resolve -- a file's answer (rc, *type, the entry's sequence `found`) in
 * the light of the newest covering tombstone so far: an older entry reads
 * as a deletion, and no entry under a tombstone ends the search (1, a
 * deletion: no older file can hold a newer entry of the key). */
static int resolve(int rc, uint64_t found, uint64_t rd, ikey_type *type)
{
    if (rc == 1 && found < rd) *type = IKEY_DELETION;
    if (rc == 0 && rd) {
        *type = IKEY_DELETION;
        rc = 1;
    }
    return rc;
}

int multiget_one(table_cache *tc, const version *v, tkv_slice ukey, uint64_t seq, uint64_t *rd, ikey_type *type,
                 tkv_buf *val)
{
    mg_pos pos = {0, 1};
    const file_meta *f;
    while ((f = next_file(v, ukey, &pos))) {
        cache_handle *h;
        TKV_TRY(table_cache_find(tc, f, &h));
        table *t = table_cache_table(h);
        raise_rd(f, t, ukey, seq, rd);
        uint64_t found = 0;
        int rc = table_get_seq(t, ukey, seq, type, val, &found);
        if (rc >= 0) rc = resolve(rc, found, *rd, type);
        table_cache_release(tc, h);
        if (rc != 0) return rc;
    }
    return 0;
}

static void finish(mg *m, size_t i, int rc)
{
    m->keys[i].rc = rc;
    m->st[i].done = 1;
}

/* wait_for_read -- key i needs block h of its candidate (pinned in th):
 * joins the read of that block in flight or queues one. 1 if it waits now,
 * 0 if every ring slot is taken (nothing changed), < 0 if the read was
 * refused before any I/O (the key's error). */
static int wait_for_read(mg *m, size_t i, cache_handle *th, block_handle h)
{
    table *t = table_cache_table(th);
    mg_read *rd = read_find(m, t, h.offset);
    if (rd) {
        m->stats->shared++;
    } else {
        io_req *q = io_ring_read(m->ring, table_file(t), h.offset, (size_t)h.size + SST_TRAILER_SIZE);
        if (!q) return 0;
        if (q->done) { /* refused: the fault hook, the gate, no memory */
            int rc = q->rc;
            io_req_free(m->ring, q);
            return rc < 0 ? rc : tkv_err(TKV_IO_ERROR, "read refused");
        }
        rd = m->free_reads;
        m->free_reads = rd->fnext;
        *rd = (mg_read){.t = t, .h = h, .q = q};
        q->user = rd;
        size_t b = hash_of(t, h.offset) & m->hmask;
        rd->hnext = m->hash[b];
        m->hash[b] = rd;
        m->inflight++;
        m->stats->reads++;
    }
    mg_state *s = &m->st[i];
    s->th = th;
    s->h = h;
    s->rd = rd;
    s->next_waiter = rd->waiters;
    rd->waiters = i + 1;
    return 1;
}

/* advance -- moves key i through its candidates until it is finished or
 * waits for a read (or for a free ring slot: then it is `blocked`, at the
 * same candidate). */
static void advance(mg *m, size_t i)
{
    multiget_key *k = &m->keys[i];
    mg_state *s = &m->st[i];
    for (;;) {
        mg_pos at = s->pos;
        const file_meta *f = next_file(m->v, k->ukey, &s->pos);
        if (!f) {
            finish(m, i, 0);
            return;
        }
        cache_handle *th;
        int rc = table_cache_find(m->tc, f, &th);
        if (rc < 0) {
            finish(m, i, rc);
            return;
        }
        table *t = table_cache_table(th);
        raise_rd(f, t, k->ukey, m->seq, &k->rd);
        block_handle h;
        table_block b;
        if ((rc = table_locate(t, k->ukey, m->seq, &h)) > 0 && table_block_cached(t, h, &b)) {
            m->stats->cache_hits++;
            rc = table_block_find(t, h, &b, k->ukey, m->seq, &k->type, k->val, &s->found);
            table_block_release(t, &b);
        } else if (rc > 0) {
            if ((rc = wait_for_read(m, i, th, h)) > 0) return; /* th is held by the key now */
            if (rc == 0) { /* no slot: back to this candidate once a read completes */
                table_cache_release(m->tc, th);
                s->pos = at;
                m->blocked[m->nblocked++] = i;
                return;
            }
        }
        table_cache_release(m->tc, th);
        if (rc >= 0) rc = resolve(rc, s->found, k->rd, &k->type);
        if (rc != 0) {
            finish(m, i, rc);
            return;
        }
    }
}

/* complete -- read rd arrived: its keys search the block (or get its error)
 * and those it does not finish go back to `ready`. */
static void complete(mg *m, mg_read *rd)
{
    io_req *q = rd->q;
    table *t = rd->t;
    table_block b = {NULL, NULL};
    int err = q->rc;
    if (err == 0) err = table_block_parse(t, rd->h, q->data, q->got, &b);
    io_req_free(m->ring, q);
    m->inflight--;
    for (size_t w = rd->waiters; w; w = m->st[w - 1].next_waiter) {
        size_t i = w - 1;
        multiget_key *k = &m->keys[i];
        int rc = err < 0 ? err : table_block_find(t, rd->h, &b, k->ukey, m->seq, &k->type, k->val, &m->st[i].found);
        if (rc >= 0) rc = resolve(rc, m->st[i].found, k->rd, &k->type);
        if (rc != 0) finish(m, i, rc);
        else m->ready[m->nready++] = i;
    }
    if (b.blk) table_block_release(t, &b); /* before the keys' pins go: t must stay open */
    for (size_t w = rd->waiters; w; w = m->st[w - 1].next_waiter) {
        mg_state *s = &m->st[w - 1];
        table_cache_release(m->tc, s->th);
        s->th = NULL;
        s->rd = NULL;
    }
    read_unlink(m, rd);
}

/* mg_init -- the batch's state in one allocation; 0 or TKV_NO_MEMORY. */
static int mg_init(mg *m, size_t n)
{
    size_t hsize = 16;
    while (hsize < 2 * n) hsize *= 2;
    size_t bytes = n * (sizeof(mg_state) + 2 * sizeof(size_t) + sizeof(mg_read)) + hsize * sizeof(mg_read *);
    void *p = calloc(1, bytes); /* (calloc aligns for any type) */
    if (!p) return TKV_NO_MEMORY;
    m->st = p;
    m->reads = (mg_read *)(m->st + n);
    m->hash = (mg_read **)(m->reads + n);
    m->ready = (size_t *)(m->hash + hsize);
    m->blocked = m->ready + n;
    m->hmask = hsize - 1;
    for (size_t i = n; i-- > 0;) {
        m->reads[i].fnext = m->free_reads;
        m->free_reads = &m->reads[i];
        m->st[i].pos.level = 1;
    }
    return 0;
}

void multiget_lookup(table_cache *tc, const version *v, io_ring *ring, uint64_t seq, multiget_key *keys, size_t n,
                     multiget_stats *st)
{
    mg m = {.tc = tc, .v = v, .ring = ring, .seq = seq, .keys = keys, .n = n, .stats = st};
    if (n == 0) return;
    if (mg_init(&m, n) < 0) {
        for (size_t i = 0; i < n; i++)
            keys[i].rc = multiget_one(tc, v, keys[i].ukey, seq, &keys[i].rd, &keys[i].type, keys[i].val);
        return;
    }
    for (size_t i = n; i-- > 0;) m.ready[m.nready++] = i;
    /* Every key that can move moves before the batch waits: the reads of
     * all of them go to the kernel in the reap's one submit. */
    for (;;) {
        while (m.nready) advance(&m, m.ready[--m.nready]);
        if (m.inflight == 0) break; /* a key is blocked only while a read is in flight */
        io_req *q = io_ring_reap(ring);
        if (!q) break; /* not while m.inflight > 0 (uring.h); the keys left go below */
        complete(&m, q->user);
        if (m.nblocked) {
            st->full_waits++;
            while (m.nblocked) m.ready[m.nready++] = m.blocked[--m.nblocked];
        }
    }
    for (size_t i = 0; i < n; i++) /* none, but for a broken invariant: look them up one by one */
        if (!m.st[i].done) {
            if (m.st[i].th) table_cache_release(tc, m.st[i].th);
            keys[i].rc = multiget_one(tc, v, keys[i].ukey, seq, &keys[i].rd, &keys[i].type, keys[i].val);
        }
    free(m.st);
}
