// SPDX-License-Identifier: Apache-2.0
/*
 * multiget.h -- point lookups of many keys in the SSD tree of one version,
 * with their block reads in flight at once on an io_uring ring (io/uring.h).
 *
 * Each key walks the tree in the order a single lookup does (L0 files newest
 * first, each whose range holds the key, then one file per deeper level) and
 * stops at the first entry it finds, value or deletion. Per candidate file:
 * the bloom filter, then the index, then the block -- from the block cache
 * with no I/O, else from a read queued on the ring. Every key queues its
 * read before the batch waits for any, so one system call submits the reads
 * of all keys, across files and levels; a key that shares a block with
 * another waits for the same read (a block is read once per batch). When a
 * read arrives its keys search the block; a key it does not hold (a bloom
 * false positive) moves on to its next candidate, queueing another read.
 * So a key is finished in level order and a key found in a higher level
 * never costs a read below it. The answers, errors and table counters are
 * those of table_cache_get key by key (version_lookup in db_read.c).
 *
 * Range tombstones: each key carries the newest tombstone visible at the
 * batch's sequence that covers it in the tiers read so far (memtables and
 * rows first, then each candidate file's, read from the open table: no
 * I/O). An entry older than it reads as a deletion, and a candidate with no
 * entry for the key under a tombstone ends the key's walk: for each key the
 * tiers are in sequence order, tombstones included (docs/design.md), so no
 * older file can hold a newer entry. A file's bloom filter ruling the key out
 * does not skip its tombstones.
 */
#ifndef TKV_SST_MULTIGET_H
#define TKV_SST_MULTIGET_H

#include "io/uring.h"
#include "sst/table_cache.h"
#include "sst/version.h"

typedef struct multiget_key {
    tkv_slice ukey; /* in: a valid user key */
    uint64_t rd;    /* in: the newest range tombstone visible at the batch's sequence covering ukey in the
                     * tiers above the tree (0: none); out: raised by the files' tombstones */
    int rc;         /* out: 1 found (type, val), 0 no entry in the tree, < 0 the error of the lookup */
    ikey_type type;
    tkv_buf *val; /* out: the value (the caller's buffer, reused) */
} multiget_key;

/* What one batch did (added to the caller's counters). */
typedef struct multiget_stats {
    uint64_t reads;      /* blocks read through the ring */
    uint64_t shared;     /* lookups that waited for a read another key had queued */
    uint64_t cache_hits; /* blocks found in the block cache */
    uint64_t full_waits; /* times every slot of the ring was busy and keys waited for one */
} multiget_stats;

/* multiget_one -- the same lookup for one key with synchronous reads
 * (table_get per candidate): what tkv_get uses. *rd: as multiget_key.rd.
 * 1 found (type, val), 0 absent, < 0 error. */
int multiget_one(table_cache *tc, const version *v, tkv_slice ukey, uint64_t seq, uint64_t *rd, ikey_type *type,
                 tkv_buf *val);

/* multiget_lookup -- looks up keys[0..n) at seq in v's files through tc,
 * reading on `ring` (held by the caller; it has no read in flight on return).
 * Out of memory for the batch's own state falls back to table_cache_get key
 * by key. Every key's rc is set. */
void multiget_lookup(table_cache *tc, const version *v, io_ring *ring, uint64_t seq, multiget_key *keys, size_t n,
                     multiget_stats *st);

#endif
