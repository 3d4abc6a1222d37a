// SPDX-License-Identifier: Apache-2.0
/*
 * iter.h -- the internal iterator interface shared by every sorted source
 * (memtables, SST blocks and tables, matrix rows, merging iterators).
 *
 * Keys are internal keys (util/ikey.h) in ikey_cmp order. A source positions with
 * seek_first/seek_last/seek(target: first key >= target) and moves with
 * next/prev while valid. key()/value() stay valid until the iterator moves.
 * status() is 0 or the first error met (an iterator with an error is not
 * valid). destroy() frees the iterator and releases what it pins.
 * An iterator belongs to one thread.
 */
#ifndef TKV_UTIL_ITER_H
#define TKV_UTIL_ITER_H

#include "util/ikey.h"

typedef struct tkv_it tkv_it;

typedef struct tkv_it_ops {
    int (*valid)(tkv_it *it);
    void (*seek_first)(tkv_it *it);
    void (*seek_last)(tkv_it *it);
    void (*seek)(tkv_it *it, tkv_slice target);
    void (*next)(tkv_it *it);
    void (*prev)(tkv_it *it);
    tkv_slice (*key)(tkv_it *it);
    tkv_slice (*value)(tkv_it *it);
    int (*status)(tkv_it *it);
    void (*destroy)(tkv_it *it);
} tkv_it_ops;

/* Every iterator struct starts with this. */
struct tkv_it {
    const tkv_it_ops *ops;
};

static inline int it_valid(tkv_it *it) { return it->ops->valid(it); }
static inline void it_seek_first(tkv_it *it) { it->ops->seek_first(it); }
static inline void it_seek_last(tkv_it *it) { it->ops->seek_last(it); }
static inline void it_seek(tkv_it *it, tkv_slice t) { it->ops->seek(it, t); }
static inline void it_next(tkv_it *it) { it->ops->next(it); }
static inline void it_prev(tkv_it *it) { it->ops->prev(it); }
static inline tkv_slice it_key(tkv_it *it) { return it->ops->key(it); }
static inline tkv_slice it_value(tkv_it *it) { return it->ops->value(it); }
static inline int it_status(tkv_it *it) { return it->ops->status(it); }
static inline void it_destroy(tkv_it *it)
{
    if (it) it->ops->destroy(it);
}

/* merging_iter_new -- an iterator over the union of n children in ikey order
 * (takes ownership of the children and of the array; both forward and reverse
 * iteration). Equal keys from several children are all returned, the child with
 * the lower index first. NULL on out of memory (children destroyed). */
tkv_it *merging_iter_new(tkv_it **children, size_t n);

/* merging_iter_current -- the index of the child the current entry of a
 * merging iterator comes from; 0 for any other iterator (a merge of one
 * child is that child). */
size_t merging_iter_current(tkv_it *it);
/* merging_iter_skip -- moves the children numbered above `newest` past
 * entries a caller knows it need not see: moving forward, each such child
 * positioned before `target` goes to its first entry >= target; moving
 * backward (`backward`), each positioned at or after target goes to its last
 * entry < target. The merge then goes on from the smallest (largest) entry
 * of all its children. Only in the direction the iterator moves in: 1 if a
 * child moved, 0 if none did or this is not a merging iterator, or it moves
 * the other way. (db_iter.c skips the entries a range tombstone covers in the
 * tiers older than the tombstone's with it.) */
int merging_iter_skip(tkv_it *it, size_t newest, tkv_slice target, int backward);

#endif
