// SPDX-License-Identifier: Apache-2.0
/*
 * memtable.c -- the memtable: a LevelDB-style concurrent skiplist over two arenas.
 *
 * Layout: two arenas. The skiplist's nodes live in one (`nodes`):
 *   sl_node header | next[height] (links, level 0 first) | internal key | value ref
 * where the value ref is the value's length (4 bytes) and address (8 bytes),
 * both unaligned. The values live in the other (`values`). A search touches
 * nodes only, so keeping the values out of them packs the nodes of a
 * 64 MiB memtable of 1 KiB values into ~3 MiB instead of spreading them
 * over 64 MiB: each step of a search was a cache and TLB miss (apart, the
 * search fell from 17 % to 8 % of a 4M x 1 KiB fill's CPU samples).
 *
 * Thread safety (one writer, any number of lock-free readers):
 *  - Links are read with acquire loads and published with release stores.
 *    A node and its value are completely written (header, key, value ref,
 *    value bytes, its own next[] links) before the release store that links
 *    it at level 0 makes it reachable, so a reader that sees a pointer sees
 *    the whole node and its value.
 *  - Levels are linked bottom-up; a reader may find a node at level 0 before it
 *    appears at higher levels, which only makes that reader's search longer.
 *  - max_height is read and written relaxed: a reader that sees a new, larger
 *    height finds either NULL (the old value of head->next[i]) or the new node
 *    at those levels, both of which are correct.
 *  - rnd, the arenas' bump pointers and the counters are written by the writer
 *    only; the counters and the arenas' usage are atomics that readers load
 *    relaxed.
 *
 * Invariants:
 *  1. At every level the list is strictly increasing in ikey order (entries are
 *     unique because (key, seq) is unique).
 *  2. The list at level i+1 is a sublist of the list at level i.
 *  3. head->next[i] is NULL for i >= max_height.
 *  4. Nodes and values are never removed or modified after being linked,
 *     except for the nodes' next[] pointers, so pointers into the memtable
 *     live as long as it does.
 */
#include "mem/memtable.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mem/arena.h"
#include "util/rangedel.h"
#include "util/status.h"

/* Branching 3 (not 4): a 450k-node memtable (64 MiB of 100-byte values)
 * inserted and searched ~25 % faster in a loop on this VM, where every
 * node past the cache is a ~190 ns miss; 3^14 covers ~4.8M nodes. */
#define SL_MAX_HEIGHT 14
#define SL_BRANCHING  3

typedef struct sl_node {
    uint32_t klen;  /* internal key length (user key + IKEY_TRAILER) */
    uint8_t height; /* number of links, 1..SL_MAX_HEIGHT */
    uint8_t unused[3];
    struct sl_node *next[]; /* `height` links; accessed only through the __atomic builtins */
    /* followed by the internal key (klen bytes) and the value ref (SL_VREF bytes) */
} sl_node;

#define SL_VREF (4 + sizeof(const uint8_t *)) /* value length (u32), value address */

/* A range tombstone of the memtable: begin and end keys follow the node. */
typedef struct rd_node {
    struct rd_node *next; /* the next one added; published with a release store */
    uint64_t seq;
    uint32_t blen, elen;
    uint8_t keys[];
} rd_node;

struct memtable {
    /* Read by every reader, written (rarely) by the writer. */
    sl_node *head;  /* sentinel of height SL_MAX_HEIGHT; never compared */
    int max_height; /* levels in use; atomic (relaxed) */
    int refs;       /* atomic */
    /* Written by the writer only. */
    uint64_t rnd;         /* xorshift64* state for node heights */
    uint64_t num_entries; /* atomic (relaxed) */
    uint64_t num_deletes; /* atomic (relaxed) */
    uint64_t batch_bytes; /* atomic (relaxed): memtable_add_batch_bytes */
    arena nodes;          /* the head and every node */
    arena values;         /* the values' bytes */
    /* Range tombstones: a list in the node arena, oldest first, appended by
     * the writer (rd_tail, then a release store of num_range_dels, which
     * readers load with acquire and walk that many nodes from rd_head), and
     * their fragments for readers, rebuilt under rd_mu when a reader finds
     * them older than the list (memtable_range_dels). */
    rd_node *rd_head, *rd_tail;
    uint64_t num_range_dels; /* atomic */
    pthread_mutex_t rd_mu;
    rd_frags *rd_cache; /* under rd_mu: the fragments of the first rd_frags_tombs(rd_cache) tombstones */
};

/* A search key: user key and trailer, compared in ikey order without building
 * an internal key (so lookups never allocate). */
typedef struct sl_key {
    const uint8_t *ukey;
    size_t ulen;
    uint64_t trailer;
} sl_key;

static inline const uint8_t *node_ikey(const sl_node *n) { return (const uint8_t *)&n->next[n->height]; }

static inline sl_node *node_next(const sl_node *n, int level)
{
    return __atomic_load_n(&n->next[level], __ATOMIC_ACQUIRE);
}

/* node_cmp -- ikey order of node n against search key k (<0, 0, >0). */
static inline int node_cmp(const sl_node *n, const sl_key *k)
{
    const uint8_t *ik = node_ikey(n);
    size_t ulen = n->klen - IKEY_TRAILER;
    int c = ukey_cmp(slice(ik, ulen), slice(k->ukey, k->ulen));
    if (c) return c;
    uint64_t t = dec_u64(ik + ulen);
    return t > k->trailer ? -1 : t < k->trailer ? 1 : 0;
}

/* node_key -- the search key equal to node n's internal key. */
static inline sl_key node_key(const sl_node *n)
{
    const uint8_t *ik = node_ikey(n);
    size_t ulen = n->klen - IKEY_TRAILER;
    return (sl_key){ik, ulen, dec_u64(ik + ulen)};
}

/* node_value -- node n's value, through its value ref. */
static inline tkv_slice node_value(const sl_node *n)
{
    const uint8_t *ref = node_ikey(n) + n->klen;
    uint32_t vlen;
    const uint8_t *v;
    memcpy(&vlen, ref, 4);
    memcpy(&v, ref + 4, sizeof v);
    return slice(v, vlen);
}

/* find_ge -- the first node >= k (NULL if none). If prev is not NULL, fills
 * prev[i] with the last node < k at each level i < max_height (head if none). */
static sl_node *find_ge(const memtable *m, const sl_key *k, sl_node **prev)
{
    sl_node *x = m->head, *bigger = NULL; /* bigger: a node already found >= k */
    int level = __atomic_load_n(&m->max_height, __ATOMIC_RELAXED) - 1;
    for (;;) {
        sl_node *next = node_next(x, level);
        /* The walk is a chain of cache misses (the nodes of a random fill
         * are scattered over the arena): while next is compared, start
         * loading both nodes the walk may read after it -- the node after
         * next (if next < k) and x's successor one level down (if not), so
         * that two misses are in flight instead of one. A node known to be
         * >= k from the level above is not compared again (RocksDB's
         * InlineSkipList does that and the first prefetch). */
        if (next && next != bigger) __builtin_prefetch(node_next(next, level));
        if (level > 0) __builtin_prefetch(node_next(x, level - 1));
        if (next && next != bigger && node_cmp(next, k) < 0) {
            x = next;
        } else {
            if (prev) prev[level] = x;
            if (level == 0) return next;
            bigger = next;
            level--;
        }
    }
}

/* find_lt -- the last node < k, or head if there is none. */
static sl_node *find_lt(const memtable *m, const sl_key *k)
{
    sl_node *x = m->head;
    int level = __atomic_load_n(&m->max_height, __ATOMIC_RELAXED) - 1;
    for (;;) {
        sl_node *next = node_next(x, level);
        if (next && node_cmp(next, k) < 0) {
            x = next;
        } else {
            if (level == 0) return x;
            level--;
        }
    }
}

/* find_last -- the last node of the list, or head if it is empty. */
static sl_node *find_last(const memtable *m)
{
    sl_node *x = m->head;
    int level = __atomic_load_n(&m->max_height, __ATOMIC_RELAXED) - 1;
    for (;;) {
        sl_node *next = node_next(x, level);
        if (next) {
            x = next;
        } else {
            if (level == 0) return x;
            level--;
        }
    }
}

/* random_height -- 1 + the number of successes of 1/SL_BRANCHING trials, capped
 * at SL_MAX_HEIGHT. Writer only. */
static int random_height(memtable *m)
{
    int h = 1;
    for (;;) {
        /* xorshift64* */
        uint64_t x = m->rnd;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        m->rnd = x;
        uint64_t r = (x * UINT64_C(0x2545F4914F6CDD1D)) >> 32;
        if (h >= SL_MAX_HEIGHT || r % SL_BRANCHING != 0) return h;
        h++;
    }
}

/* memtable_create -- the memtable and its head node (the node arena's first block). */
static memtable *memtable_create(size_t arena_block, size_t *account, arena_spares *spares)
{
    memtable *m = malloc(sizeof *m);
    if (!m) {
        tkv_err(TKV_NO_MEMORY, "memtable: out of memory");
        return NULL;
    }
    arena_init(&m->nodes, arena_block);
    arena_set_account(&m->nodes, account);
    arena_set_spares(&m->nodes, spares);
    arena_init(&m->values, arena_block);
    arena_set_account(&m->values, account);
    arena_set_spares(&m->values, spares);
    sl_node *head = arena_alloc(&m->nodes, sizeof(sl_node) + SL_MAX_HEIGHT * sizeof(sl_node *));
    if (!head) {
        arena_destroy(&m->nodes);
        arena_destroy(&m->values);
        free(m);
        return NULL;
    }
    head->klen = 0; /* never read: the head is never compared */
    head->height = SL_MAX_HEIGHT;
    memset(head->unused, 0, sizeof head->unused);
    for (int i = 0; i < SL_MAX_HEIGHT; i++) head->next[i] = NULL;
    m->head = head;
    m->max_height = 1;
    m->refs = 1;
    m->rnd = UINT64_C(0x9E3779B97F4A7C15);
    m->num_entries = 0;
    m->num_deletes = 0;
    m->batch_bytes = 0;
    m->rd_head = m->rd_tail = NULL;
    m->num_range_dels = 0;
    m->rd_cache = NULL;
    pthread_mutex_init(&m->rd_mu, NULL);
    /* Readers in other threads get m through a synchronizing hand-off (a lock or
     * a release store) made by the creator; nothing more is needed here. */
    return m;
}

void memtable_ref(memtable *m) { __atomic_fetch_add(&m->refs, 1, __ATOMIC_RELAXED); }

/* memtable_unref -- the last reference frees the arenas and the struct. */
void memtable_unref(memtable *m)
{
    if (!m) return;
    /* acq_rel: every use by other holders happens before the free. */
    if (__atomic_sub_fetch(&m->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    rd_frags_unref(m->rd_cache);
    pthread_mutex_destroy(&m->rd_mu);
    arena_destroy(&m->nodes);
    arena_destroy(&m->values);
    free(m);
}

/* memtable_add -- builds the node, finds its predecessors, links it bottom-up. */
int memtable_add(memtable *m, uint64_t seq, ikey_type type, const void *key, size_t klen, const void *val, size_t vlen)
{
    if (klen > TKV_MAX_KEY_SIZE || vlen > TKV_MAX_VALUE_SIZE)
        return tkv_err(TKV_INVALID, "memtable: key (%zu bytes) or value (%zu bytes) too large", klen, vlen);

    /* 1. Build the node and its value (not yet reachable). The value first:
     * a failure then leaves nothing but unused arena bytes. */
    const uint8_t *v = NULL;
    if (vlen) {
        uint8_t *vp = arena_alloc(&m->values, vlen);
        if (!vp) return TKV_NO_MEMORY;
        memcpy(vp, val, vlen);
        v = vp;
    }
    size_t iklen = klen + IKEY_TRAILER;
    int h = random_height(m);
    size_t size = sizeof(sl_node) + (size_t)h * sizeof(sl_node *) + iklen + SL_VREF;
    sl_node *n = arena_alloc(&m->nodes, size);
    if (!n) return TKV_NO_MEMORY;
    n->klen = (uint32_t)iklen;
    n->height = (uint8_t)h;
    memset(n->unused, 0, sizeof n->unused);
    uint8_t *p = (uint8_t *)&n->next[h];
    ikey_encode(p, key, klen, seq, type);
    p += iklen;
    uint32_t vlen32 = (uint32_t)vlen; /* vlen <= TKV_MAX_VALUE_SIZE, checked above */
    memcpy(p, &vlen32, 4);
    memcpy(p + 4, &v, sizeof v);

    /* 2. Find the predecessors at every level. */
    sl_node *prev[SL_MAX_HEIGHT];
    sl_key k = {(const uint8_t *)key, klen, ikey_pack(seq, type)};
    find_ge(m, &k, prev);
    int max = __atomic_load_n(&m->max_height, __ATOMIC_RELAXED);
    if (h > max) {
        for (int i = max; i < h; i++) prev[i] = m->head;
        __atomic_store_n(&m->max_height, h, __ATOMIC_RELAXED);
    }

    /* 3. Link bottom-up: the node's own link first (it is not reachable yet, so
     * relaxed), then publish it with a release store in its predecessor. */
    for (int i = 0; i < h; i++) {
        __atomic_store_n(&n->next[i], __atomic_load_n(&prev[i]->next[i], __ATOMIC_RELAXED), __ATOMIC_RELAXED);
        __atomic_store_n(&prev[i]->next[i], n, __ATOMIC_RELEASE);
    }

    __atomic_store_n(&m->num_entries, m->num_entries + 1, __ATOMIC_RELAXED);
    if (type == IKEY_DELETION) __atomic_store_n(&m->num_deletes, m->num_deletes + 1, __ATOMIC_RELAXED);
    return 0;
}

/* memtable_get_seq -- seeks (key, seq, IKEY_SEEK_TYPE); a hit on the same
 * user key is the newest visible version. */
int memtable_get_seq(memtable *m, const void *key, size_t klen, uint64_t seq, ikey_type *type, tkv_slice *val,
                     uint64_t *found_seq)
{
    if (seq > IKEY_MAX_SEQ) seq = IKEY_MAX_SEQ;
    sl_key k = {(const uint8_t *)key, klen, ikey_pack(seq, IKEY_SEEK_TYPE)};
    const sl_node *n = find_ge(m, &k, NULL);
    if (!n) return 0;
    sl_key found = node_key(n);
    if (ukey_cmp(slice(found.ukey, found.ulen), slice(key, klen)) != 0) return 0;
    ikey_type t = (ikey_type)(found.trailer & 0xff);
    *type = t;
    *val = t == IKEY_DELETION ? slice(NULL, 0) : node_value(n);
    if (found_seq) *found_seq = found.trailer >> 8;
    return 1;
}

int memtable_get(memtable *m, const void *key, size_t klen, uint64_t seq, ikey_type *type, tkv_slice *val)
{
    return memtable_get_seq(m, key, klen, seq, type, val, NULL);
}

/* ---------------------------------------------------------------- range tombstones */

int memtable_add_range_del(memtable *m, uint64_t seq, const void *begin, size_t blen, const void *end, size_t elen)
{
    if (blen > RD_MAX_KEY || elen > RD_MAX_KEY)
        return tkv_err(TKV_INVALID, "memtable: range tombstone keys of %zu and %zu bytes", blen, elen);
    rd_node *n = arena_alloc(&m->nodes, sizeof *n + blen + elen);
    if (!n) return TKV_NO_MEMORY;
    n->next = NULL;
    n->seq = seq;
    n->blen = (uint32_t)blen;
    n->elen = (uint32_t)elen;
    if (blen) memcpy(n->keys, begin, blen);
    if (elen) memcpy(n->keys + blen, end, elen);
    if (m->rd_tail) __atomic_store_n(&m->rd_tail->next, n, __ATOMIC_RELEASE);
    else __atomic_store_n(&m->rd_head, n, __ATOMIC_RELEASE);
    m->rd_tail = n;
    __atomic_store_n(&m->num_entries, m->num_entries + 1, __ATOMIC_RELAXED);
    __atomic_store_n(&m->num_range_dels, m->num_range_dels + 1, __ATOMIC_RELEASE);
    return 0;
}

uint64_t memtable_num_range_dels(const memtable *m) { return __atomic_load_n(&m->num_range_dels, __ATOMIC_ACQUIRE); }

/* rd_walk -- the first n range tombstones into l (n <= the published count). */
static int rd_walk(const memtable *m, uint64_t n, rd_list *l)
{
    const rd_node *x = __atomic_load_n(&m->rd_head, __ATOMIC_ACQUIRE);
    for (uint64_t i = 0; i < n && x; i++, x = __atomic_load_n(&x->next, __ATOMIC_ACQUIRE))
        TKV_TRY(rd_list_add(l, slice(x->keys, x->blen), slice(x->keys + x->blen, x->elen), x->seq, 0));
    return 0;
}

int memtable_range_del_list(const memtable *m, rd_list *out) { return rd_walk(m, memtable_num_range_dels(m), out); }

int memtable_range_dels(memtable *m, rd_frags **out)
{
    *out = NULL;
    uint64_t n = memtable_num_range_dels(m);
    if (n == 0) return 0;
    pthread_mutex_lock(&m->rd_mu);
    int rc = 0;
    if (!m->rd_cache || rd_frags_tombs(m->rd_cache) < n) {
        rd_list l = {0};
        rc = rd_walk(m, n, &l);
        rd_frags *f = rc == 0 ? rd_frags_new(l.t, l.n, UINT64_MAX) : NULL;
        rd_list_free(&l);
        if (f) {
            rd_frags_unref(m->rd_cache);
            m->rd_cache = f;
        } else if (rc == 0) {
            rc = TKV_NO_MEMORY;
        }
    }
    if (rc == 0) {
        rd_frags_ref(m->rd_cache);
        *out = m->rd_cache;
    }
    pthread_mutex_unlock(&m->rd_mu);
    return rc;
}

int memtable_range_del_covering(memtable *m, tkv_slice key, uint64_t snap, uint64_t *seq)
{
    *seq = 0;
    if (memtable_num_range_dels(m) == 0) return 0;
    rd_frags *f;
    TKV_TRY(memtable_range_dels(m, &f));
    *seq = rd_frags_covering(f, key, snap);
    rd_frags_unref(f);
    return 0;
}

size_t memtable_memory_usage(const memtable *m)
{
    return arena_memory_usage(&m->nodes) + arena_memory_usage(&m->values);
}

uint64_t memtable_num_entries(const memtable *m) { return __atomic_load_n(&m->num_entries, __ATOMIC_RELAXED); }

void memtable_add_batch_bytes(memtable *m, uint64_t n) { __atomic_fetch_add(&m->batch_bytes, n, __ATOMIC_RELAXED); }

uint64_t memtable_batch_bytes(const memtable *m) { return __atomic_load_n(&m->batch_bytes, __ATOMIC_RELAXED); }

uint64_t memtable_num_deletes(const memtable *m) { return __atomic_load_n(&m->num_deletes, __ATOMIC_RELAXED); }

/* ---------------------------------------------------------------- iterator */

typedef struct mem_iter {
    tkv_it base;
    memtable *m;
    const sl_node *node; /* current node; NULL when not valid */
} mem_iter;

static int mi_valid(tkv_it *it) { return ((mem_iter *)it)->node != NULL; }

static void mi_seek_first(tkv_it *it)
{
    mem_iter *mi = (mem_iter *)it;
    mi->node = node_next(mi->m->head, 0);
}

static void mi_seek_last(tkv_it *it)
{
    mem_iter *mi = (mem_iter *)it;
    const sl_node *n = find_last(mi->m);
    mi->node = n == mi->m->head ? NULL : n;
}

/* mi_seek -- first entry >= target. A target shorter than a trailer is taken
 * as a bare user key (positions before every version of it). */
static void mi_seek(tkv_it *it, tkv_slice target)
{
    mem_iter *mi = (mem_iter *)it;
    sl_key k;
    if (target.n >= IKEY_TRAILER) k = (sl_key){target.p, target.n - IKEY_TRAILER, ikey_trailer(target)};
    else k = (sl_key){target.p, target.n, UINT64_MAX};
    mi->node = find_ge(mi->m, &k, NULL);
}

/* mi_next -- and starts loading what the next two steps will read: a scan (a
 * flush building a row) reads every key and value in order, and neither the
 * nodes (linked in key order, allocated in arrival order) nor the values (in
 * their own arena) are next to each other, so each would be a cache miss of
 * its own, paid one after another. Pipeline, one step of the consumer's work
 * apart: the node after the next one is prefetched (its address is in the
 * next node, which the step before prefetched), and the next node's value
 * (its reference is in that node). */
static void mi_next(tkv_it *it)
{
    mem_iter *mi = (mem_iter *)it;
    if (!mi->node) return;
    const sl_node *n = node_next(mi->node, 0);
    mi->node = n;
    const sl_node *after = n ? node_next(n, 0) : NULL;
    if (after) {
        tkv_slice v = node_value(after);
        for (size_t off = 0; off < v.n && off < 256; off += 64) __builtin_prefetch((const uint8_t *)v.p + off);
        const sl_node *later = node_next(after, 0);
        if (later) { /* a node of height 1 with a 16-byte key is ~52 bytes: it may span two lines */
            __builtin_prefetch(later);
            __builtin_prefetch((const uint8_t *)later + 63);
        }
    }
}

/* mi_prev -- no back links: search for the last node before the current one. */
static void mi_prev(tkv_it *it)
{
    mem_iter *mi = (mem_iter *)it;
    if (!mi->node) return;
    sl_key k = node_key(mi->node);
    const sl_node *n = find_lt(mi->m, &k);
    mi->node = n == mi->m->head ? NULL : n;
}

static tkv_slice mi_key(tkv_it *it)
{
    const sl_node *n = ((mem_iter *)it)->node;
    return n ? slice(node_ikey(n), n->klen) : slice(NULL, 0);
}

static tkv_slice mi_value(tkv_it *it)
{
    const sl_node *n = ((mem_iter *)it)->node;
    return n ? node_value(n) : slice(NULL, 0);
}

static int mi_status(tkv_it *it)
{
    (void)it;
    return 0;
}

static void mi_destroy(tkv_it *it)
{
    mem_iter *mi = (mem_iter *)it;
    memtable_unref(mi->m);
    free(mi);
}

static const tkv_it_ops mem_iter_ops = {
    .valid = mi_valid,
    .seek_first = mi_seek_first,
    .seek_last = mi_seek_last,
    .seek = mi_seek,
    .next = mi_next,
    .prev = mi_prev,
    .key = mi_key,
    .value = mi_value,
    .status = mi_status,
    .destroy = mi_destroy,
};

/* memtable_iter -- an unpositioned iterator holding a reference on m. */
tkv_it *memtable_iter(memtable *m)
{
    mem_iter *mi = malloc(sizeof *mi);
    if (!mi) {
        tkv_err(TKV_NO_MEMORY, "memtable: out of memory for an iterator");
        return NULL;
    }
    mi->base.ops = &mem_iter_ops;
    memtable_ref(m);
    mi->m = m;
    mi->node = NULL;
    return &mi->base;
}

memtable *memtable_new(void) { return memtable_create(0, NULL, NULL); }

size_t memtable_block_size(size_t target_bytes)
{
    size_t block = target_bytes / 8;
    if (block < 4096) block = 4096;
    if (block > ARENA_DEFAULT_BLOCK) block = ARENA_DEFAULT_BLOCK;
    return block;
}

memtable *memtable_new_accounted(size_t target_bytes, size_t *total, arena_spares *spares)
{
    return memtable_create(memtable_block_size(target_bytes), total, spares);
}

memtable *memtable_new_sized(size_t target_bytes) { return memtable_new_accounted(target_bytes, NULL, NULL); }
