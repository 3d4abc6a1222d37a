// SPDX-License-Identifier: Apache-2.0
/*
 * block.h -- the sorted key/value block of SSTables (data and index blocks):
 * a builder, and an iterator that reads a block in place.
 *
 * Block contents (docs/format-sst.md, §4 "Data and index blocks"):
 *   entry*   each: varint shared, varint non_shared, varint value_len,
 *            key bytes [shared, shared+non_shared) (the prefix comes from the
 *            previous key), value bytes
 *   u32 restart[count]   offsets of the entries whose shared == 0, ascending;
 *                        restart[0] == 0
 *   u32 count            0 only for an empty block (which is then 4 bytes)
 * Keys are internal keys (util/ikey.h) strictly increasing in ikey_cmp order;
 * every key is at least IKEY_TRAILER bytes.
 *
 * Integrity: the block trailer checksum (sst/format.h) is what detects
 * corruption. The iterator's structural checks (restart array, varint and
 * length bounds, key length, shared <= previous key length) only guarantee that
 * a damaged block that slipped past it yields an error status, never a read
 * outside the block.
 */
#ifndef TKV_SST_BLOCK_H
#define TKV_SST_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "util/coding.h"
#include "util/iter.h"

/* ---------------------------------------------------------------- builder */

typedef struct block_builder {
    tkv_buf buf;      /* entries so far; block_builder_finish appends the restarts */
    tkv_buf last_key; /* the previous key (prefix source and order check) */
    tkv_buf restarts; /* u32 restart offsets, encoded */
    int interval;     /* restart every `interval` entries (>= 1) */
    int counter;      /* entries since the last restart */
    uint64_t nentries;
    int finished;
} block_builder;

/* block_builder_init -- an empty builder (restart_interval < 1 is taken as 1). */
void block_builder_init(block_builder *b, int restart_interval);
/* block_builder_reset -- empties the builder for the next block (keeps memory). */
void block_builder_reset(block_builder *b);
/* block_builder_free -- releases the builder's memory. */
void block_builder_free(block_builder *b);
/* block_builder_add -- appends an entry. The caller guarantees key order (the
 * table builder checks it). 0 or TKV_NO_MEMORY. */
int block_builder_add(block_builder *b, tkv_slice key, tkv_slice value);
/* block_builder_finish -- appends the restart array and count; *out is the
 * block contents (valid until the next reset, add or free). The caller may
 * append to b->buf (e.g. a trailer) before the reset. 0 or TKV_NO_MEMORY. */
int block_builder_finish(block_builder *b, tkv_slice *out);
/* block_builder_size -- the size the block would have if finished now. */
size_t block_builder_size(const block_builder *b);
static inline int block_builder_empty(const block_builder *b) { return b->nentries == 0; }

/* ---------------------------------------------------------------- iterator */

/* A block iterator. Embed it (block_iter_init/block_iter_clear) or allocate it
 * (block_iter_new). It reads the block in place: the block bytes must outlive
 * every use of the iterator, and the keys/values it returns stay valid until
 * it moves. Corruption errors name `fname` and `boff` (the block's offset in
 * its file). */
typedef struct block_iter {
    tkv_it base;
    const uint8_t *data;
    uint32_t restarts; /* offset of the restart array = end of the entries */
    uint32_t nrestarts;
    uint32_t cur;         /* offset of the current entry; == restarts: not valid */
    uint32_t next;        /* offset just past the current entry */
    uint32_t restart_idx; /* index of the restart run that contains cur */
    tkv_buf key;          /* the current key (rebuilt from the prefix chain) */
    const uint8_t *val;
    uint32_t vlen;
    int status;
    const char *fname;
    uint64_t boff;
    void (*release)(void *arg); /* block_iter_new only: called by destroy */
    void *release_arg;
} block_iter;

/* block_iter_init -- positions nothing yet; checks the restart array of the
 * `size` bytes at `data` and records TKV_CORRUPTION in it->status (and the
 * thread's message) if it is malformed. Keeps it->key's memory if it was
 * already initialised (pass a zeroed struct the first time). Returns status. */
int block_iter_init(block_iter *it, const uint8_t *data, size_t size, const char *fname, uint64_t boff);
/* block_iter_init_checked -- block_iter_init for a block that already passed
 * block_iter_init once (e.g. an index block checked at table open): skips the
 * O(restarts) walk over the restart array, keeping only the O(1) size checks.
 * Reading stays memory-safe even if the array were bad (every offset is
 * bounds-checked before use); the walk only makes damage show up early. */
int block_iter_init_checked(block_iter *it, const uint8_t *data, size_t size, const char *fname, uint64_t boff);
/* block_iter_clear -- frees the key buffer of an embedded iterator (do not call
 * destroy() on an embedded iterator). */
void block_iter_clear(block_iter *it);
/* block_iter_new -- an allocated iterator over a block; destroy() calls
 * release(release_arg) (if not NULL) after freeing the iterator's own memory,
 * e.g. to free or unpin the block. NULL on out of memory (release is then
 * called at once). A malformed block gives an iterator whose status() is
 * TKV_CORRUPTION. */
tkv_it *block_iter_new(const uint8_t *data, size_t size, const char *fname, uint64_t boff, void (*release)(void *),
                       void *release_arg);

/* Direct calls on an embedded iterator (same semantics as the tkv_it ops). */
static inline int block_iter_valid(const block_iter *it) { return it->status == 0 && it->cur < it->restarts; }
void block_iter_seek_first(block_iter *it);
void block_iter_seek_last(block_iter *it);
void block_iter_seek(block_iter *it, tkv_slice target);
void block_iter_next(block_iter *it);
void block_iter_prev(block_iter *it);
static inline tkv_slice block_iter_key(const block_iter *it) { return slice(it->key.data, it->key.len); }
static inline tkv_slice block_iter_value(const block_iter *it) { return slice(it->val, it->vlen); }

#endif
