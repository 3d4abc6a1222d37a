// SPDX-License-Identifier: Apache-2.0
/*
 * rangedel.h -- range tombstones: the deletion, at one sequence number, of
 * every user key k with begin <= k < end (memcmp order, util/ikey.h), and the
 * forms every tier keeps and reads them in.
 *
 * A tombstone (begin, end, seq) hides each entry of a key in [begin, end)
 * whose sequence is below seq, for every reader whose snapshot is at or
 * above seq. Point entries never reach it: tombstones live beside them, in
 * their own list (memtables), section (rows) or block (SSTs).
 *
 *   rd_list   a growable list of tombstones owning their keys: what a
 *             memtable, a row or an SST holds, in the order added.
 *   rd_frags  the *fragmented* form reads use (RocksDB's
 *             FragmentedRangeTombstoneList): the key space cut at every
 *             begin and end into disjoint fragments [lo, hi), each with the
 *             sequence numbers of the tombstones that cover it, newest
 *             first. The newest tombstone covering a key below a snapshot
 *             is a binary search and a short scan. Immutable, refcounted.
 *   encoding  the tombstone block of rows and SSTs (docs/format-sst.md,
 *             docs/format-matrix.md): varint count, then per tombstone
 *             varint blen | begin | varint elen | end | varint seq.
 *
 * Keys of a tombstone are 1 .. RD_MAX_KEY bytes: user keys, or a user key
 * with one 0x00 byte appended (the smallest key after it, where a
 * compaction cuts a tombstone at a file boundary).
 *
 * Thread safety: an rd_list belongs to one thread; an rd_frags may be read
 * by any number of threads, and rd_frags_ref/unref are atomic.
 */
#ifndef TKV_UTIL_RANGEDEL_H
#define TKV_UTIL_RANGEDEL_H

#include <stddef.h>
#include <stdint.h>

#include "util/coding.h"
#include "util/ikey.h"

/* The longest tombstone key: a user key with a 0x00 appended. */
#define RD_MAX_KEY (64u * 1024u + 1u)

typedef struct rd_tomb {
    tkv_slice begin, end; /* begin < end */
    uint64_t seq;
    uint32_t tier; /* where it came from (an iterator's child index); 0 where unused */
} rd_tomb;

/* ---------------------------------------------------------------- lists */

typedef struct rd_list {
    rd_tomb *t;
    size_t n, cap;
} rd_list;

/* rd_list_add -- appends (begin, end, seq, tier), the keys copied. 0 or
 * TKV_NO_MEMORY (nothing added). */
int rd_list_add(rd_list *l, tkv_slice begin, tkv_slice end, uint64_t seq, uint32_t tier);
/* rd_list_append -- appends every tombstone of src (keys copied). */
int rd_list_append(rd_list *l, const rd_tomb *src, size_t n);
/* rd_list_sort -- by begin ascending, then seq descending. */
void rd_list_sort(rd_list *l);
/* rd_list_clear -- empties the list (keeps the array). */
void rd_list_clear(rd_list *l);
/* rd_list_free -- frees everything; NULL-safe fields. */
void rd_list_free(rd_list *l);

/* rd_extent -- the smallest begin and the largest end of t[0..n) (n > 0). */
void rd_extent(const rd_tomb *t, size_t n, tkv_slice *lo, tkv_slice *hi);

/* rd_key_prev_incl -- the largest user key a tombstone ending at `end`
 * (exclusive) can cover, as a file's inclusive largest key: `end` without its
 * last byte when that byte is 0x00 (the key before end exactly), else `end`
 * itself (one key too many: the file's range then also holds end, which only
 * makes a reader or a compaction look at it needlessly). */
tkv_slice rd_key_prev_incl(tkv_slice end);

/* ---------------------------------------------------------------- encoding */

/* rd_encode -- appends the tombstone block of t[0..n) to out. */
int rd_encode(const rd_tomb *t, size_t n, tkv_buf *out);
/* rd_decode -- the tombstones of a block (appended to out, keys copied).
 * 0, TKV_NO_MEMORY, or 1 if the bytes are malformed (*why says how: a
 * truncated field, a count that does not match, a key of 0 or more than
 * RD_MAX_KEY bytes, begin >= end, a sequence above IKEY_MAX_SEQ); the
 * caller reports TKV_CORRUPTION naming its file. */
int rd_decode(const uint8_t *p, size_t n, rd_list *out, const char **why);

/* ---------------------------------------------------------------- fragments */

typedef struct rd_frags rd_frags;

/* rd_frags_new -- the fragments of the tombstones of t[0..n) whose seq is
 * <= max_seq (UINT64_MAX: all); a tombstone that appears twice (same
 * range part and seq) counts once, with the smaller tier. The keys are
 * copied. NULL on out of memory (tkv_errmsg set). Refcount 1. */
rd_frags *rd_frags_new(const rd_tomb *t, size_t n, uint64_t max_seq);
void rd_frags_ref(rd_frags *f);
void rd_frags_unref(rd_frags *f); /* NULL-safe; frees with the last reference */

/* rd_frags_count -- fragments; rd_frags_tombs -- the tombstones given to rd_frags_new. */
size_t rd_frags_count(const rd_frags *f);
size_t rd_frags_tombs(const rd_frags *f);
/* rd_frags_find -- the index of the first fragment whose hi is > key
 * (count if none): the fragment holding key if its lo is <= key. */
size_t rd_frags_find(const rd_frags *f, tkv_slice key);

/* One fragment: [lo, hi) covered by nseq tombstones, seqs[0] the newest. */
typedef struct rd_frag {
    tkv_slice lo, hi;
    const uint64_t *seqs;
    const uint32_t *tiers;
    size_t nseq;
} rd_frag;
/* rd_frags_get -- fragment i (< count). */
void rd_frags_get(const rd_frags *f, size_t i, rd_frag *out);

/* rd_frags_covering -- the largest seq <= snap of a tombstone covering key,
 * 0 if none (sequence 0 is never a write's). NULL f: 0. */
uint64_t rd_frags_covering(const rd_frags *f, tkv_slice key, uint64_t snap);

/* rd_frags_at -- the fragment holding key: 1 with *at its index, or 0 (*at
 * then the first fragment after key, maybe count). *at is kept between
 * calls by a caller whose keys mostly ascend (a merge, a forward scan): it
 * is moved forward from where it was, or searched afresh when key lies
 * before it or far ahead. Start at 0. */
int rd_frags_at(const rd_frags *f, size_t *at, tkv_slice key);

/* rd_frags_covering_at -- rd_frags_covering for a caller whose keys mostly
 * ascend (a merge, a forward scan): *at is a fragment index it keeps between
 * calls (start at 0), moved forward from where it was (or searched afresh
 * when key lies before it). */
uint64_t rd_frags_covering_at(const rd_frags *f, size_t *at, tkv_slice key, uint64_t snap);

/* rd_keep_fn -- rd_frags_emit asks it which tombstones of fragment fr to
 * keep: 1 keeps seqs[j]. */
typedef int (*rd_keep_fn)(void *arg, const rd_frag *fr, size_t j);

/* rd_frags_emit -- appends to out the tombstones of f inside [lo, hi) (NULL:
 * no bound on that side; fragments clipped to it) that keep (NULL: all)
 * keeps, joining a seq's pieces in adjacent fragments into one tombstone
 * again, sorted by begin then seq descending. 0 or TKV_NO_MEMORY. */
int rd_frags_emit(const rd_frags *f, const tkv_slice *lo, const tkv_slice *hi, rd_keep_fn keep, void *arg,
                  rd_list *out);

#endif
