// SPDX-License-Identifier: Apache-2.0
/*
 * arena.c -- bump allocation over pre-faulted blocks (see arena.h).
 *
 * Invariants:
 *  1. a->cur is 8-byte aligned: blocks start 16-byte aligned after their header
 *     and cur only ever advances by multiples of ARENA_ALIGN.
 *  2. [a->cur, a->cur + a->left) is unused memory of the newest standard block
 *     (a->left is 0 before the first standard block).
 *  3. a->usage is the sum of the sizes of the blocks on a->blocks; only the
 *     allocating thread writes it, with relaxed atomic stores.
 */
#include "mem/arena.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/status.h"

/* A block: this header, then its data. 16 bytes keeps the data 16-aligned. */
struct arena_block {
    struct arena_block *next;
    size_t size; /* whole allocation, header included */
};

#define ARENA_HDR       (sizeof(struct arena_block))
#define ARENA_MIN_BLOCK ((size_t)4096)

/* 1 until madvise(MADV_POPULATE_WRITE) has failed once (kernels before 5.14). */
static int populate_supported = 1;

/* prefault -- makes every page of [p, p+len) resident and writable now, so that
 * the writer does not take one slow fault per page later. */
static void prefault(uint8_t *p, size_t len)
{
    long pg = sysconf(_SC_PAGESIZE);
    size_t page = pg > 0 ? (size_t)pg : 4096;
    uintptr_t lo = ((uintptr_t)p + page - 1) & ~(uintptr_t)(page - 1);
    uintptr_t hi = ((uintptr_t)p + len) & ~(uintptr_t)(page - 1);

#ifdef MADV_POPULATE_WRITE
    if (hi > lo && __atomic_load_n(&populate_supported, __ATOMIC_RELAXED)) {
        if (madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE) == 0) {
            /* the partial pages at both ends */
            ((volatile uint8_t *)p)[0] = 0;
            ((volatile uint8_t *)p)[len - 1] = 0;
            return;
        }
        __atomic_store_n(&populate_supported, 0, __ATOMIC_RELAXED);
    }
#else
    (void)lo;
    (void)hi;
#endif
    /* Fallback: one write per page (the contents are unused, so a zero will do). */
    for (size_t off = 0; off < len; off += page) ((volatile uint8_t *)p)[off] = 0;
    ((volatile uint8_t *)p)[len - 1] = 0;
}

/* free_blocks -- frees a list of blocks. */
static void free_blocks(struct arena_block *b)
{
    while (b) {
        struct arena_block *next = b->next;
        free(b);
        b = next;
    }
}

static size_t clamp_block(size_t block_size)
{
    if (block_size == 0) return ARENA_DEFAULT_BLOCK;
    return block_size < ARENA_MIN_BLOCK ? ARENA_MIN_BLOCK : block_size;
}

void arena_init(arena *a, size_t block_size)
{
    a->cur = NULL;
    a->left = 0;
    a->block_size = clamp_block(block_size);
    a->blocks = NULL;
    a->account = NULL;
    a->spares = NULL;
    __atomic_store_n(&a->usage, 0, __ATOMIC_RELAXED);
}

void arena_set_account(arena *a, size_t *total) { a->account = total; }

void arena_set_spares(arena *a, arena_spares *s) { a->spares = s; }

int arena_spares_init(arena_spares *s, size_t block_size, size_t cap, const size_t *live)
{
    int e = pthread_mutex_init(&s->mu, NULL);
    if (e) return tkv_err_errno(e, "arena: cannot create the spare blocks' mutex");
    s->list = NULL;
    s->block_size = clamp_block(block_size);
    s->bytes = 0;
    s->cap = cap;
    s->live = live;
    s->reused = s->freed = s->reserved = 0;
    return 0;
}

void arena_spares_destroy(arena_spares *s)
{
    if (!s) return;
    free_blocks(s->list);
    s->list = NULL;
    s->bytes = 0;
    pthread_mutex_destroy(&s->mu);
}

void arena_spares_get(arena_spares *s, size_t *bytes, uint64_t *reused, uint64_t *freed, uint64_t *reserved)
{
    pthread_mutex_lock(&s->mu);
    if (bytes) *bytes = s->bytes;
    if (reused) *reused = s->reused;
    if (freed) *freed = s->freed;
    if (reserved) *reserved = s->reserved;
    pthread_mutex_unlock(&s->mu);
}

/* spares_push -- under s->mu: b onto the list. */
static void spares_push(arena_spares *s, struct arena_block *b)
{
    b->next = s->list;
    s->list = b;
    s->bytes += b->size;
}

/* spares_room -- under s->mu: one more block fits beside *live within the cap. */
static int spares_room(const arena_spares *s)
{
    size_t live = s->live ? __atomic_load_n(s->live, __ATOMIC_RELAXED) : 0;
    return live <= s->cap && s->bytes <= s->cap - live && s->block_size <= s->cap - live - s->bytes;
}

size_t arena_spares_reserve(arena_spares *s, size_t want)
{
    size_t added = 0;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        int more = s->bytes < want && spares_room(s);
        pthread_mutex_unlock(&s->mu);
        if (!more) break;
        struct arena_block *b = malloc(s->block_size);
        if (!b) break; /* an arena that needs a block will ask malloc itself (and report a failure) */
        prefault((uint8_t *)b, s->block_size);
        b->size = s->block_size;
        pthread_mutex_lock(&s->mu);
        int keep = spares_room(s); /* arenas may have grown meanwhile */
        if (keep) {
            spares_push(s, b);
            s->reserved++;
        }
        pthread_mutex_unlock(&s->mu);
        if (!keep) {
            free(b);
            break;
        }
        added += s->block_size;
    }
    return added;
}

/* spares_take -- a spare block of s (NULL if none), added to account (if
 * any) here, under s->mu, in the same step that takes it off the list: a
 * reserve (which reads live under s->mu) never sees the block in neither or
 * both. */
static struct arena_block *spares_take(arena_spares *s, size_t *account)
{
    pthread_mutex_lock(&s->mu);
    struct arena_block *b = s->list;
    if (b) {
        s->list = b->next;
        s->bytes -= b->size;
        s->reused++;
        if (account) __atomic_fetch_add(account, b->size, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&s->mu);
    return b;
}

/* spares_give -- hands the standard blocks of the list `b` to s while the
 * cap allows and frees the others. The caller has already taken them out
 * of its account. */
static void spares_give(arena_spares *s, struct arena_block *b)
{
    struct arena_block *drop = NULL;
    pthread_mutex_lock(&s->mu);
    size_t live = s->live ? __atomic_load_n(s->live, __ATOMIC_RELAXED) : 0;
    while (b) {
        struct arena_block *next = b->next;
        if (b->size == s->block_size && live + s->bytes + b->size <= s->cap) {
            spares_push(s, b);
        } else {
            if (b->size == s->block_size) s->freed++;
            b->next = drop;
            drop = b;
        }
        b = next;
    }
    pthread_mutex_unlock(&s->mu);
    free_blocks(drop); /* outside the lock: free may return memory to the kernel */
}

/* arena_destroy -- frees every block (or gives it to the spares) and resets
 * the arena to empty. */
void arena_destroy(arena *a)
{
    if (!a) return;
    size_t *account = a->account;
    arena_spares *spares = a->spares;
    if (account) __atomic_fetch_sub(account, a->usage, __ATOMIC_RELAXED);
    if (spares) spares_give(spares, a->blocks);
    else free_blocks(a->blocks);
    arena_init(a, a->block_size);
    a->account = account;
    a->spares = spares;
}

/* new_block -- allocates, pre-faults and links a block with `data` usable
 * bytes; returns its data or NULL (error recorded). */
static uint8_t *new_block(arena *a, size_t data)
{
    if (data > SIZE_MAX - ARENA_HDR) {
        tkv_err(TKV_NO_MEMORY, "arena: allocation of %zu bytes is too large", data);
        return NULL;
    }
    size_t size = ARENA_HDR + data;
    struct arena_block *b = a->spares && size == a->spares->block_size ? spares_take(a->spares, a->account) : NULL;
    if (!b) {
        /* counted before malloc: a concurrent reserve sees this block as live
         * while it is being faulted in (the cap holds) */
        if (a->account) __atomic_fetch_add(a->account, size, __ATOMIC_RELAXED);
        b = malloc(size);
        if (!b) {
            if (a->account) __atomic_fetch_sub(a->account, size, __ATOMIC_RELAXED);
            tkv_err(TKV_NO_MEMORY, "arena: out of memory allocating a block of %zu bytes", size);
            return NULL;
        }
        prefault((uint8_t *)b, size);
    }
    b->next = a->blocks;
    b->size = size;
    a->blocks = b;
    __atomic_store_n(&a->usage, a->usage + size, __ATOMIC_RELAXED);
    return (uint8_t *)(b + 1);
}

/* arena_alloc -- bump in the current block, else a new (own or standard) block. */
void *arena_alloc(arena *a, size_t n)
{
    if (n == 0) n = 1;
    if (n > SIZE_MAX - ARENA_ALIGN) {
        tkv_err(TKV_NO_MEMORY, "arena: allocation of %zu bytes is too large", n);
        return NULL;
    }
    size_t need = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (need <= a->left) {
        uint8_t *p = a->cur;
        a->cur += need;
        a->left -= need;
        return p;
    }
    /* It does not fit. A big allocation gets its own block and the current
     * block stays current; a small one abandons the rest of the current block. */
    if (need > a->block_size / 4) return new_block(a, need);

    size_t data = a->block_size - ARENA_HDR;
    uint8_t *p = new_block(a, data);
    if (!p) return NULL;
    a->cur = p + need;
    a->left = data - need;
    return p;
}

size_t arena_memory_usage(const arena *a) { return __atomic_load_n(&a->usage, __ATOMIC_RELAXED); }
