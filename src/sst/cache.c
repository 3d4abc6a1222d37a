// SPDX-License-Identifier: Apache-2.0
/*
 * cache.c -- sharded LRU block cache charged by bytes (see cache.h).
 *
 * Each shard keeps, under its own mutex:
 *  - a chained hash table (grows by doubling when it holds more entries than
 *    buckets) of the entries that are "in the cache";
 *  - two circular lists of those entries: `lru` (not pinned: evictable, oldest
 *    at lru.next) and `in_use` (pinned by at least one handle).
 *
 * Invariants (per shard, all kept under shard->mu):
 *  1. e->refs = (e->in_cache ? 1 : 0) + number of outstanding handles on e.
 *  2. e is in the table <=> e->in_cache. Then it is on exactly one list:
 *     `lru` if refs == 1, `in_use` if refs >= 2.
 *  3. An entry with in_cache == 0 is on no list and not in the table; it lives
 *     only through its handles and is deleted when refs reaches 0.
 *  4. usage = sum of charge over entries with in_cache; pinned = sum of charge
 *     over entries with at least one handle (in the cache or not).
 *  5. Eviction takes only from `lru`, so a pinned entry is never evicted; after
 *     every insert/release/set_capacity either usage <= capacity or `lru` is
 *     empty.
 * Deleters run after the shard mutex is dropped: entries that reach refs == 0
 * are queued on a local FIFO "dead" list (linked through next_hash) and deleted
 * in that order by free_dead() outside the lock, so a deleter may call back into the cache.
 */
#include "sst/cache.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/checksum.h"
#include "util/status.h"

#define CACHE_HASH_SEED 0x7469657263616368ULL /* "tiercach" */
#define TABLE_MIN_LEN   16

/* A doubly linked list node; first member of cache_handle so that a node
 * pointer converts back to its entry. */
typedef struct lnode {
    struct lnode *prev, *next;
} lnode;

struct cache_handle {
    lnode link;                     /* on shard->lru or shard->in_use while in_cache (invariant 2) */
    struct cache_handle *next_hash; /* bucket chain; the dead list once refs == 0 */
    void *value;
    cache_deleter del;
    size_t charge;
    size_t klen;
    uint64_t hash;
    uint32_t refs; /* invariant 1 */
    bool in_cache;
    unsigned char key[];
};

typedef struct cache_shard {
    pthread_mutex_t mu;
    size_t capacity, usage, pinned;
    uint64_t hits, misses, inserts, evictions;
    lnode lru;    /* refs == 1 entries; lru.next is the least recently used */
    lnode in_use; /* refs >= 2 entries */
    cache_handle **table;
    size_t tlen; /* power of two */
    size_t elems;
} __attribute__((aligned(64))) cache_shard; /* one cache line apart: no false sharing */

struct tkv_cache {
    cache_shard *shards;
    unsigned nshards;
    int shard_bits;
    _Atomic uint64_t last_id;
};

/* entry_of -- the entry whose `link` is `n`. */
static inline cache_handle *entry_of(lnode *n) { return (cache_handle *)(void *)n; }

static inline void list_init(lnode *n) { n->prev = n->next = n; }

static inline void list_remove(lnode *n)
{
    n->prev->next = n->next;
    n->next->prev = n->prev;
    list_init(n);
}

/* list_append -- puts n at the newest end of list `head`. */
static inline void list_append(lnode *head, lnode *n)
{
    n->next = head;
    n->prev = head->prev;
    n->prev->next = n;
    head->prev = n;
}

static inline uint64_t key_hash(const void *key, size_t klen)
{
    static const unsigned char empty = 0;
    return tkv_hash64(klen ? key : &empty, klen, CACHE_HASH_SEED);
}

/* shard_for -- the top shard_bits of the hash pick the shard; the table uses
 * the low bits, so the two choices are independent. */
static inline cache_shard *shard_for(const tkv_cache *c, uint64_t hash)
{
    return &c->shards[c->shard_bits ? (size_t)(hash >> (64 - c->shard_bits)) : 0];
}

/* shard_capacity -- shard i's share of `total`; the shares sum to total. */
static size_t shard_capacity(size_t total, unsigned nshards, unsigned i)
{
    return total / nshards + (i < total % nshards ? 1 : 0);
}

/* table_find -- the slot that points at key's entry, or at the NULL ending its
 * bucket chain. Caller holds s->mu. */
static cache_handle **table_find(cache_shard *s, const void *key, size_t klen, uint64_t hash)
{
    cache_handle **p = &s->table[hash & (s->tlen - 1)];
    while (*p && ((*p)->hash != hash || (*p)->klen != klen || (klen && memcmp((*p)->key, key, klen) != 0)))
        p = &(*p)->next_hash;
    return p;
}

/* table_grow -- doubles the bucket array. On allocation failure the table keeps
 * its size (longer chains, still correct). Caller holds s->mu. */
static void table_grow(cache_shard *s)
{
    size_t nlen = s->tlen * 2;
    cache_handle **nt = calloc(nlen, sizeof *nt);
    if (!nt) return;
    for (size_t i = 0; i < s->tlen; i++) {
        cache_handle *e = s->table[i];
        while (e) {
            cache_handle *next = e->next_hash;
            cache_handle **slot = &nt[e->hash & (nlen - 1)];
            e->next_hash = *slot;
            *slot = e;
            e = next;
        }
    }
    free(s->table);
    s->table = nt;
    s->tlen = nlen;
}

/* table_insert -- adds e, returning the entry it displaces (same key) or NULL.
 * Caller holds s->mu. */
static cache_handle *table_insert(cache_shard *s, cache_handle *e)
{
    cache_handle **p = table_find(s, e->key, e->klen, e->hash);
    cache_handle *old = *p;
    e->next_hash = old ? old->next_hash : NULL;
    *p = e;
    if (!old && ++s->elems > s->tlen) table_grow(s);
    return old;
}

/* table_remove -- unlinks and returns key's entry, or NULL. Caller holds s->mu. */
static cache_handle *table_remove(cache_shard *s, const void *key, size_t klen, uint64_t hash)
{
    cache_handle **p = table_find(s, key, klen, hash);
    cache_handle *e = *p;
    if (e) {
        *p = e->next_hash;
        s->elems--;
    }
    return e;
}

/* A FIFO of entries whose refs reached 0, linked through next_hash, so that
 * deleters run in eviction order. */
typedef struct dead_list {
    cache_handle *head, **tail;
} dead_list;

#define DEAD_LIST_INIT(d)                                                                                              \
    {                                                                                                                  \
        NULL, &(d).head                                                                                                \
    }

static inline void dead_push(dead_list *d, cache_handle *e)
{
    e->next_hash = NULL;
    *d->tail = e;
    d->tail = &e->next_hash;
}

/* finish_erase -- e was just removed from the table: takes it out of the cache
 * and drops the cache's reference; queues it on *dead if that was the last.
 * Caller holds s->mu. */
static void finish_erase(cache_shard *s, cache_handle *e, dead_list *dead)
{
    assert(e->in_cache && e->refs >= 1);
    e->in_cache = false;
    list_remove(&e->link);
    s->usage -= e->charge;
    if (--e->refs == 0) dead_push(dead, e);
}

/* evict -- removes least recently used unpinned entries until usage fits the
 * capacity or none is left (invariant 5). Caller holds s->mu. */
static void evict(cache_shard *s, dead_list *dead)
{
    while (s->usage > s->capacity && s->lru.next != &s->lru) {
        cache_handle *e = entry_of(s->lru.next);
        assert(e->refs == 1 && e->in_cache);
        cache_handle *removed = table_remove(s, e->key, e->klen, e->hash);
        assert(removed == e);
        (void)removed;
        finish_erase(s, e, dead);
        s->evictions++;
    }
}

/* free_dead -- runs the deleter of, and frees, every entry on `dead`. Called
 * without any shard lock held. */
static void free_dead(dead_list *d)
{
    cache_handle *dead = d->head;
    while (dead) {
        cache_handle *next = dead->next_hash;
        if (dead->del) dead->del(dead->key, dead->klen, dead->value);
        free(dead);
        dead = next;
    }
}

tkv_cache *cache_new(size_t capacity_bytes, int shard_bits)
{
    if (shard_bits < 0)
        for (shard_bits = 0; shard_bits < CACHE_AUTO_MAX_SHARD_BITS; shard_bits++)
            if ((capacity_bytes >> (shard_bits + 1)) < CACHE_AUTO_MIN_SHARD_BYTES) break;
    if (shard_bits > CACHE_MAX_SHARD_BITS) shard_bits = CACHE_MAX_SHARD_BITS;
    tkv_cache *c = calloc(1, sizeof *c);
    if (!c) goto oom;
    c->shard_bits = shard_bits;
    c->nshards = 1u << shard_bits;
    atomic_init(&c->last_id, 0);
    void *mem = NULL;
    if (posix_memalign(&mem, 64, (size_t)c->nshards * sizeof(cache_shard)) != 0) goto oom;
    c->shards = mem;
    memset(c->shards, 0, (size_t)c->nshards * sizeof(cache_shard));
    for (unsigned i = 0; i < c->nshards; i++) {
        cache_shard *s = &c->shards[i];
        s->table = calloc(TABLE_MIN_LEN, sizeof *s->table);
        if (!s->table) goto oom;
        s->tlen = TABLE_MIN_LEN;
        s->capacity = shard_capacity(capacity_bytes, c->nshards, i);
        list_init(&s->lru);
        list_init(&s->in_use);
        pthread_mutex_init(&s->mu, NULL);
    }
    return c;

oom:
    if (c && c->shards) {
        for (unsigned i = 0; i < c->nshards && c->shards[i].table; i++) {
            free(c->shards[i].table);
            pthread_mutex_destroy(&c->shards[i].mu);
        }
        free(c->shards);
    }
    free(c);
    tkv_err(TKV_NO_MEMORY, "block cache: out of memory creating a cache of %zu bytes", capacity_bytes);
    return NULL;
}

void cache_free(tkv_cache *c)
{
    if (!c) return;
    for (unsigned i = 0; i < c->nshards; i++) {
        cache_shard *s = &c->shards[i];
        assert(s->in_use.next == &s->in_use && "cache_free with unreleased handles");
        dead_list dead = DEAD_LIST_INIT(dead);
        for (size_t b = 0; b < s->tlen; b++) {
            cache_handle *e = s->table[b];
            while (e) {
                cache_handle *next = e->next_hash;
                assert(e->refs == 1 && e->in_cache);
                dead_push(&dead, e);
                e = next;
            }
            s->table[b] = NULL;
        }
        s->elems = 0;
        list_init(&s->lru);
        s->usage = 0;
        free_dead(&dead);
        free(s->table);
        pthread_mutex_destroy(&s->mu);
    }
    free(c->shards);
    free(c);
}

cache_handle *cache_insert(tkv_cache *c, const void *key, size_t klen, void *value, size_t charge, cache_deleter del)
{
    cache_handle *e = malloc(sizeof *e + klen);
    if (!e) {
        tkv_err(TKV_NO_MEMORY, "block cache: out of memory inserting a %zu-byte key", klen);
        return NULL;
    }
    e->value = value;
    e->del = del;
    e->charge = charge;
    e->klen = klen;
    e->hash = key_hash(key, klen);
    e->refs = 1; /* the returned handle */
    e->in_cache = false;
    e->next_hash = NULL;
    list_init(&e->link);
    if (klen) memcpy(e->key, key, klen);

    cache_shard *s = shard_for(c, e->hash);
    dead_list dead = DEAD_LIST_INIT(dead);
    pthread_mutex_lock(&s->mu);
    s->inserts++;
    s->pinned += charge;
    cache_handle *old;
    if (s->capacity > 0) {
        e->refs++; /* the cache's reference */
        e->in_cache = true;
        list_append(&s->in_use, &e->link);
        s->usage += charge;
        old = table_insert(s, e);
    } else {
        /* Capacity 0: e lives only through its handle, but it still replaces
         * (removes) a same-key entry that was cached before the shrink. */
        old = table_remove(s, key, klen, e->hash);
    }
    if (old) finish_erase(s, old, &dead);
    evict(s, &dead);
    pthread_mutex_unlock(&s->mu);
    free_dead(&dead);
    return e;
}

cache_handle *cache_lookup(tkv_cache *c, const void *key, size_t klen)
{
    uint64_t hash = key_hash(key, klen);
    cache_shard *s = shard_for(c, hash);
    pthread_mutex_lock(&s->mu);
    cache_handle *e = *table_find(s, key, klen, hash);
    if (e) {
        assert(e->in_cache);
        if (e->refs == 1) { /* first handle: unpinned -> pinned (invariants 2, 4) */
            list_remove(&e->link);
            list_append(&s->in_use, &e->link);
            s->pinned += e->charge;
        }
        e->refs++;
        s->hits++;
    } else {
        s->misses++;
    }
    pthread_mutex_unlock(&s->mu);
    return e;
}

void *cache_value(const cache_handle *h) { return h->value; }

void cache_release(tkv_cache *c, cache_handle *h)
{
    cache_shard *s = shard_for(c, h->hash);
    dead_list dead = DEAD_LIST_INIT(dead);
    pthread_mutex_lock(&s->mu);
    assert(h->refs > (h->in_cache ? 1u : 0u));
    h->refs--;
    if (h->refs == (h->in_cache ? 1u : 0u)) s->pinned -= h->charge; /* last handle */
    if (h->refs == 0) dead_push(&dead, h);
    else if (h->in_cache && h->refs == 1) { /* now evictable, most recently used */ list_remove(&h->link);
        list_append(&s->lru, &h->link);
        evict(s, &dead);
    }
    pthread_mutex_unlock(&s->mu);
    free_dead(&dead);
}

void cache_erase(tkv_cache *c, const void *key, size_t klen)
{
    uint64_t hash = key_hash(key, klen);
    cache_shard *s = shard_for(c, hash);
    dead_list dead = DEAD_LIST_INIT(dead);
    pthread_mutex_lock(&s->mu);
    cache_handle *e = table_remove(s, key, klen, hash);
    if (e) finish_erase(s, e, &dead);
    pthread_mutex_unlock(&s->mu);
    free_dead(&dead);
}

uint64_t cache_new_id(tkv_cache *c) { return atomic_fetch_add(&c->last_id, 1) + 1; }

void cache_get_stats(tkv_cache *c, cache_stats *out)
{
    memset(out, 0, sizeof *out);
    for (unsigned i = 0; i < c->nshards; i++) {
        cache_shard *s = &c->shards[i];
        pthread_mutex_lock(&s->mu);
        out->hits += s->hits;
        out->misses += s->misses;
        out->inserts += s->inserts;
        out->evictions += s->evictions;
        out->usage += s->usage;
        out->capacity += s->capacity;
        out->pinned += s->pinned;
        pthread_mutex_unlock(&s->mu);
    }
}

void cache_set_capacity(tkv_cache *c, size_t capacity_bytes)
{
    for (unsigned i = 0; i < c->nshards; i++) {
        cache_shard *s = &c->shards[i];
        dead_list dead = DEAD_LIST_INIT(dead);
        pthread_mutex_lock(&s->mu);
        s->capacity = shard_capacity(capacity_bytes, c->nshards, i);
        evict(s, &dead);
        pthread_mutex_unlock(&s->mu);
        free_dead(&dead);
    }
}
