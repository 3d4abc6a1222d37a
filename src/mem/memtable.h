// SPDX-License-Identifier: Apache-2.0
/*
 * memtable.h -- the DRAM write buffer: a concurrent skiplist of internal keys
 * (util/ikey.h order) whose nodes and values live in two arenas
 * (mem/arena.h; the node layout is in memtable.c). The iterator's key is the
 * internal key (user key + 8-byte trailer), its value the value's bytes.
 *
 * Thread safety:
 *  - Writers: ONE at a time. memtable_add() must be serialized by the caller
 *    (the DB's write leader); it is not safe against another memtable_add().
 *  - Readers: memtable_get(), memtable_iter() and its iterators, and the
 *    counters may run in any number of threads concurrently with each other and
 *    with the writer, without locks; they never block. An entry becomes visible
 *    to readers atomically once memtable_add() has linked it (release store);
 *    callers hide entries above their read sequence themselves.
 *  - memtable_ref()/memtable_unref() are atomic and may be called from any
 *    thread. The memtable (and every pointer into it) lives until the last
 *    reference is dropped.
 */
#ifndef TKV_MEM_MEMTABLE_H
#define TKV_MEM_MEMTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "mem/arena.h"
#include "util/ikey.h"
#include "tierkv.h" /* status codes and size limits */
#include "util/iter.h"
#include "util/rangedel.h"

typedef struct memtable memtable;

/* memtable_new -- an empty memtable with reference count 1. NULL on out of
 * memory (tkv_errmsg set). */
memtable *memtable_new(void);

/* memtable_new_sized -- as memtable_new, for a memtable that will be switched
 * at about `target_bytes`: the arenas' block size is target/8 clamped to
 * [4 KiB, 1 MiB], so that memtable_memory_usage tracks the data closely even
 * for small memtables (a 1 MiB first block would exceed a 64K target at once). */
memtable *memtable_new_sized(size_t target_bytes);

/* memtable_new_accounted -- as memtable_new_sized, and the arena's blocks
 * are counted in *total while the memtable lives (arena_set_account): a
 * database's count of the DRAM all its memtables hold, the flushed ones
 * that views still pin included. With spares (NULL: none), its standard
 * blocks come from and go back to that list (arena.h), which must have been
 * made for memtable_block_size(target_bytes) and outlive the memtable. */
memtable *memtable_new_accounted(size_t target_bytes, size_t *total, arena_spares *spares);

/* memtable_block_size -- the arena block size of a memtable made for
 * target_bytes (memtable_new_sized). */
size_t memtable_block_size(size_t target_bytes);

/* memtable_ref -- takes one more reference. */
void memtable_ref(memtable *m);

/* memtable_unref -- drops a reference; the memtable is freed when the last one
 * goes. NULL is a no-op. */
void memtable_unref(memtable *m);

/* memtable_add -- inserts (key, seq, type, value) (key and value are copied).
 * Single writer only. klen may be 0. seq must be <= IKEY_MAX_SEQ.
 * Precondition: (key, seq) is not already present.
 * Returns 0, TKV_NO_MEMORY (nothing inserted), or TKV_INVALID if klen >
 * TKV_MAX_KEY_SIZE or vlen > TKV_MAX_VALUE_SIZE (callers validate first; this
 * is a backstop). */
int memtable_add(memtable *m, uint64_t seq, ikey_type type, const void *key, size_t klen, const void *val, size_t vlen);

/* memtable_get -- the newest entry for user key `key` with sequence <= seq
 * (seq above IKEY_MAX_SEQ means "newest"). Returns 1 and sets *type and *val
 * (pointing into the memtable: valid while the caller holds a reference; an
 * empty slice for a deletion) if an entry was found (value or deletion), 0 if
 * none. Never allocates. */
int memtable_get(memtable *m, const void *key, size_t klen, uint64_t seq, ikey_type *type, tkv_slice *val);

/* memtable_get_seq -- memtable_get that also gives the entry's sequence
 * number (*found_seq, when not NULL). */
int memtable_get_seq(memtable *m, const void *key, size_t klen, uint64_t seq, ikey_type *type, tkv_slice *val,
                     uint64_t *found_seq);

/* Range tombstones (util/rangedel.h) live beside the skiplist, in a list of
 * their own in the node arena, in the order added (they count as entries in
 * memtable_num_entries and memory_usage).
 * memtable_add_range_del -- adds (begin, end, seq): single writer, as
 * memtable_add; keys are copied (at most RD_MAX_KEY bytes, else
 * TKV_INVALID). 0 or TKV_NO_MEMORY. Readers see it once added, like an entry.
 * memtable_num_range_dels -- how many were added (any thread).
 * memtable_range_del_list -- copies every one into out (any thread).
 * memtable_range_dels -- their fragments (ref'd: rd_frags_unref), NULL
 * with 0 when there are none; rebuilt (under a mutex of the memtable) when a
 * tombstone was added since the last call. 0 or TKV_NO_MEMORY. Any thread.
 * memtable_range_del_covering -- *seq = the newest tombstone <= snap
 * covering user key `key` (0: none); no lock when there are none. */
int memtable_add_range_del(memtable *m, uint64_t seq, const void *begin, size_t blen, const void *end, size_t elen);
uint64_t memtable_num_range_dels(const memtable *m);
int memtable_range_del_list(const memtable *m, rd_list *out);
int memtable_range_dels(memtable *m, rd_frags **out);
int memtable_range_del_covering(memtable *m, tkv_slice key, uint64_t snap, uint64_t *seq);

/* memtable_memory_usage -- bytes of arena blocks held (the skiplist and every
 * entry). Safe from any thread. */
size_t memtable_memory_usage(const memtable *m);

/* memtable_add_batch_bytes / memtable_batch_bytes -- the write-batch bytes
 * written into this memtable (the unit the write controller charges writers
 * in; memory usage adds node overhead on top). Safe from any thread. */
void memtable_add_batch_bytes(memtable *m, uint64_t n);
uint64_t memtable_batch_bytes(const memtable *m);

/* memtable_num_entries / memtable_num_deletes -- entries (all types) and
 * deletion entries added so far. Safe from any thread. */
uint64_t memtable_num_entries(const memtable *m);
uint64_t memtable_num_deletes(const memtable *m);

/* memtable_iter -- an internal iterator (util/iter.h) over the memtable: key()
 * is the internal key, value() the value; both point into the memtable. Takes
 * a reference on m, released by destroy(). It sees entries inserted
 * concurrently (callers filter by sequence); status() is always 0. Starts
 * unpositioned. NULL on out of memory (tkv_errmsg set). */
tkv_it *memtable_iter(memtable *m);

#endif
