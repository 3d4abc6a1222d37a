// SPDX-License-Identifier: Apache-2.0
/*
 * block_mem.c -- memory for blocks (cached_block): each thread keeps the
 * small block buffers it frees and takes its next ones from them.
 *
 * Why: a point read that misses the block cache allocates the raw block, then
 * the decompressed one, and inserting that block evicts (frees) a block that
 * another reader allocated. With glibc's malloc, freeing another thread's
 * chunk takes that thread's arena lock, which the owner takes for its own
 * allocations: with two reader threads, `perf` put the futex waits and wakes
 * of those locks among the top entries of readrandom. Reusing the buffers a
 * thread frees makes the steady state of a read allocate nothing.
 *
 * Rules:
 *  - every cached_block comes from block_mem_alloc and goes to block_mem_free
 *    (the block cache's deleter included), never to plain free();
 *  - a thread keeps at most BLOCK_MEM_SLOTS buffers of at most
 *    BLOCK_MEM_MAX_CAP bytes each (512 KiB per thread at most), released when the
 *    thread exits; larger buffers are plain malloc/free;
 *  - capacities are rounded up to BLOCK_MEM_ROUND bytes, so a buffer fits
 *    blocks a little larger than the one it was made for; a kept buffer is
 *    handed out only for a block that fills at least 4/5 of it (fits()), so
 *    that a block's memory stays within a quarter (plus BLOCK_MEM_ROUND) of
 *    its size -- which is what the block cache and the table cache charge.
 */
#include <pthread.h>
#include <stdlib.h>

#include "sst/table_int.h"

#define BLOCK_MEM_SLOTS   8
#define BLOCK_MEM_MAX_CAP (64u << 10)
#define BLOCK_MEM_ROUND   256u

typedef struct block_stash {
    unsigned n;
    cached_block *slot[BLOCK_MEM_SLOTS];
} block_stash;

static pthread_key_t g_stash_key;
static pthread_once_t g_stash_once = PTHREAD_ONCE_INIT;
static int g_stash_ok;

static void stash_free(void *arg)
{
    block_stash *s = arg;
    for (unsigned i = 0; i < s->n; i++) free(s->slot[i]);
    free(s);
}

static void stash_key_init(void) { g_stash_ok = pthread_key_create(&g_stash_key, stash_free) == 0; }

/* stash_get -- the calling thread's stash, made on first use; NULL if that
 * fails (then blocks are plain malloc/free). */
static block_stash *stash_get(void)
{
    pthread_once(&g_stash_once, stash_key_init);
    if (!g_stash_ok) return NULL;
    block_stash *s = pthread_getspecific(g_stash_key);
    if (s) return s;
    if (!(s = calloc(1, sizeof *s))) return NULL;
    if (pthread_setspecific(g_stash_key, s) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

/* fits -- a buffer of capacity cap may hold a block of `size` bytes: large
 * enough, and not so large that the charge (size) understates the memory. */
static int fits(size_t cap, size_t size) { return cap >= size && cap - size <= size / 4 + BLOCK_MEM_ROUND; }

/* take -- removes slot i, keeping the others packed. */
static cached_block *take(block_stash *s, unsigned i)
{
    cached_block *b = s->slot[i];
    s->slot[i] = s->slot[--s->n];
    return b;
}

cached_block *block_mem_alloc(size_t size)
{
    block_stash *s = size <= BLOCK_MEM_MAX_CAP ? stash_get() : NULL;
    if (s && s->n) {
        unsigned best = s->n, smallest = 0;
        for (unsigned i = 0; i < s->n; i++) {
            size_t cap = s->slot[i]->cap;
            if (fits(cap, size) && (best == s->n || cap < s->slot[best]->cap)) best = i;
            if (cap < s->slot[smallest]->cap) smallest = i;
        }
        if (best < s->n) {
            cached_block *b = take(s, best);
            b->size = size;
            return b;
        }
        /* none fits: let the smallest go, so that a thread whose blocks
         * changed size does not keep buffers it can no longer use */
        free(take(s, smallest));
    }
    size_t cap = size;
    if (size <= BLOCK_MEM_MAX_CAP) cap = (size + BLOCK_MEM_ROUND - 1) / BLOCK_MEM_ROUND * BLOCK_MEM_ROUND;
    cached_block *b = malloc(sizeof *b + cap);
    if (!b) return NULL;
    b->size = size;
    b->cap = cap;
    return b;
}

void block_mem_free(cached_block *b)
{
    if (!b) return;
    block_stash *s = b->cap <= BLOCK_MEM_MAX_CAP ? stash_get() : NULL;
    if (s && s->n < BLOCK_MEM_SLOTS) {
        s->slot[s->n++] = b;
        return;
    }
    free(b);
}
