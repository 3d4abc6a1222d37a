// SPDX-License-Identifier: Apache-2.0
/*
 * cache.h -- the block cache of the SSD tier: a sharded LRU cache whose
 * capacity is counted in bytes ("charge"), after LevelDB's ShardedLRUCache.
 *
 * Model:
 *  - Keys are byte strings (copied on insert); values are opaque pointers owned
 *    by the cache once inserted and handed back to their deleter exactly once,
 *    when the entry has left the cache (evicted, erased, replaced or the cache
 *    freed) AND no handle to it is outstanding.
 *  - cache_insert and a successful cache_lookup return a pinned handle; each one
 *    must be given back with cache_release. A pinned entry is never evicted, so
 *    usage may exceed capacity while entries are pinned; the excess is evicted
 *    (least recently used first) as soon as releases make entries evictable.
 *  - 2^shard_bits shards, chosen by the top bits of tkv_hash64(key); each shard
 *    has its own mutex, hash table and LRU list and an even share of the
 *    capacity, so eviction order is LRU per shard (exactly LRU with 0 bits).
 *
 * Thread safety: every function may be called concurrently from any thread,
 * except cache_free, which must not race with anything on the same cache.
 * A handle may be released by a thread other than the one that obtained it.
 */
#ifndef TKV_SST_CACHE_H
#define TKV_SST_CACHE_H

#include <stddef.h>
#include <stdint.h>

typedef struct tkv_cache tkv_cache;
typedef struct cache_handle cache_handle;

/* cache_deleter -- frees `value`; called once per inserted value, without any
 * cache lock held (it may call back into the cache), by whichever thread drops
 * the last reference. `key` is valid only for the duration of the call. A NULL
 * deleter is allowed (nothing is called). */
typedef void (*cache_deleter)(const void *key, size_t klen, void *value);

#define CACHE_AUTO_MAX_SHARD_BITS  6            /* 64 shards */
#define CACHE_AUTO_MIN_SHARD_BYTES (512u << 10) /* no shard smaller than this */
#define CACHE_MAX_SHARD_BITS       16

/* cache_new -- a cache holding up to capacity_bytes of charge. shard_bits < 0
 * chooses from the capacity: as many shards as keep each one at least
 * CACHE_AUTO_MIN_SHARD_BYTES, up to 1 << CACHE_AUTO_MAX_SHARD_BITS (readers on
 * different threads then seldom meet on a shard's mutex, and a small cache is
 * not cut into shards too small for LRU to mean anything). Larger than
 * CACHE_MAX_SHARD_BITS is clamped.
 * Capacity 0 caches nothing: cache_insert still returns a handle, and its value
 * is deleted when that handle is released. Returns NULL (tkv_errmsg set) if
 * memory is exhausted. */
tkv_cache *cache_new(size_t capacity_bytes, int shard_bits);

/* cache_free -- deletes every entry (calling the deleters) and frees the cache.
 * Every handle must have been released first. NULL is a no-op. */
void cache_free(tkv_cache *c);

/* cache_insert -- maps key to value with cost `charge` bytes, replacing any
 * entry with the same key (the old value is deleted once its last handle is
 * released), then evicts unpinned entries of the shard down to its capacity.
 * Returns a pinned handle to the new entry, or NULL if memory is exhausted; on
 * NULL nothing changed, `del` is not called and the caller still owns `value`. */
cache_handle *cache_insert(tkv_cache *c, const void *key, size_t klen, void *value, size_t charge, cache_deleter del);

/* cache_lookup -- a pinned handle to key's entry (made most recently used), or
 * NULL if absent. Counts a hit or a miss. */
cache_handle *cache_lookup(tkv_cache *c, const void *key, size_t klen);

/* cache_value -- the value of a handle (valid until the handle is released). */
void *cache_value(const cache_handle *h);

/* cache_release -- gives back a handle from cache_insert/cache_lookup; `h` must
 * not be used afterwards. May delete the value (if the entry already left the
 * cache) or evict entries (if the shard is over capacity). */
void cache_release(tkv_cache *c, cache_handle *h);

/* cache_erase -- removes key's entry if present; its value is deleted now, or
 * when its last outstanding handle is released. */
void cache_erase(tkv_cache *c, const void *key, size_t klen);

/* cache_new_id -- a new id, unique for the life of the cache (1, 2, 3 ...), so
 * that each open table can prefix its block keys with its own id. */
uint64_t cache_new_id(tkv_cache *c);

/* Counters summed over the shards (each shard is read under its own lock, so
 * the sum is not one atomic snapshot while other threads are working).
 *  hits, misses   cache_lookup results
 *  inserts        cache_insert calls that returned a handle
 *  evictions      entries removed to honour capacity (not erase/replace/free)
 *  usage          total charge of the entries currently in the cache
 *  capacity       the capacity set by cache_new/cache_set_capacity
 *  pinned         total charge of the entries held by at least one handle,
 *                 including entries already erased or replaced (these are no
 *                 longer counted in usage) and uncached ones (capacity 0) */
typedef struct cache_stats {
    uint64_t hits, misses, inserts, evictions;
    size_t usage, capacity, pinned;
} cache_stats;

/* cache_get_stats -- fills *out. */
void cache_get_stats(tkv_cache *c, cache_stats *out);

/* cache_set_capacity -- changes the capacity (split evenly over the shards) and
 * evicts unpinned entries down to it. */
void cache_set_capacity(tkv_cache *c, size_t capacity_bytes);

#endif
