// SPDX-License-Identifier: Apache-2.0
/*
 * arena.h -- a bump allocator over large pre-faulted blocks, freed all at once.
 *
 * Memory comes in blocks of `block_size` bytes (default ARENA_DEFAULT_BLOCK,
 * 1 MiB) from the host's malloc (the library links no allocator of its own:
 * docs/design.md, "Linking"). An allocation that does not fit in the rest of the
 * current block and is larger than a quarter of a block gets a block of its
 * own (sized exactly), so the rest of the current block is not wasted; a
 * smaller one starts a new standard block. Every new block is
 * pre-faulted when it is obtained (first-touch page faults are slow on the
 * target VMs, and one madvise(MADV_POPULATE_WRITE) is cheaper than a fault per
 * page during inserts).
 *
 * Every allocation is 8-byte aligned. Memory is never freed piecemeal: it all
 * goes back in arena_destroy().
 *
 * Spares (arena_spares): arenas that share one may hand their standard
 * blocks back to it when they are destroyed, instead of to the heap, and take
 * from it before asking the heap for a new one. A database's memtables share
 * one, so in steady state a writer neither calls malloc for a block nor
 * faults its pages in: both take the process's mmap lock for writing (the
 * heap grows by mprotect), which waits behind every other thread's page
 * faults and madvise calls -- seen as 4-10 ms writes in a fill. A spare
 * block stays resident (it was pre-faulted when first obtained). The list
 * can also be topped up ahead of need (arena_spares_reserve: a database's
 * flush thread does it before each flush). The spares hold at most `cap`
 * bytes together with the account they share it with (the memtables' DRAM
 * share: live blocks + spares <= cap); a block that would go past that is
 * freed. An arena adds a block to its account under the spares' mutex when
 * it takes one from the list, and before it asks malloc for one, so a
 * reserve never counts a block twice.
 *
 * Thread safety: arena_alloc() is single-threaded (only the memtable's writer
 * allocates). arena_memory_usage() may be called from any thread at any time:
 * it reads a counter the allocator updates atomically.
 */
#ifndef TKV_MEM_ARENA_H
#define TKV_MEM_ARENA_H

#include <stddef.h>
#include <stdint.h>

#define ARENA_DEFAULT_BLOCK ((size_t)1 << 20) /* 1 MiB */
#define ARENA_ALIGN         8

#include <pthread.h>

struct arena_block;

/* arena_spares -- standard blocks handed back by destroyed arenas or added by
 * arena_spares_reserve (see the header comment). Thread safety: its own mutex; arenas on any threads may
 * share it. */
typedef struct arena_spares {
    pthread_mutex_t mu;
    struct arena_block *list; /* blocks of block_size bytes, pre-faulted */
    size_t block_size;        /* the only size kept (header included) */
    size_t bytes;             /* bytes on the list */
    size_t cap;               /* *live + bytes stay <= cap */
    const size_t *live;       /* the account the cap is shared with (atomic), or NULL: bytes <= cap */
    uint64_t reused, freed;   /* blocks taken from the list; blocks handed back but freed (over the cap) */
    uint64_t reserved;        /* blocks arena_spares_reserve obtained and pre-faulted */
} arena_spares;

typedef struct arena {
    uint8_t *cur;               /* next free byte in the current block */
    size_t left;                /* bytes left after cur in the current block */
    size_t block_size;          /* size of a standard block (header included) */
    struct arena_block *blocks; /* every block held, newest first */
    size_t usage;               /* bytes of blocks held; atomic (relaxed) */
    size_t *account;            /* NULL, or a counter shared by several arenas (arena_set_account) */
    arena_spares *spares;       /* NULL, or where standard blocks come from and go back to (arena_set_spares) */
} arena;

/* arena_spares_init -- an empty list for blocks of block_size (after the
 * same clamping as arena_init), holding at most cap bytes beside *live
 * (NULL: cap alone). 0, or TKV_IO if the mutex cannot be made. */
int arena_spares_init(arena_spares *s, size_t block_size, size_t cap, const size_t *live);
/* arena_spares_destroy -- frees every block on the list. Every arena that
 * uses s must be destroyed first. NULL is a no-op. */
void arena_spares_destroy(arena_spares *s);
/* arena_spares_get -- bytes on the list now, blocks taken from it so far,
 * blocks handed back but freed because the cap was reached, and blocks
 * arena_spares_reserve added (any of the pointers may be NULL). */
void arena_spares_get(arena_spares *s, size_t *bytes, uint64_t *reused, uint64_t *freed, uint64_t *reserved);
/* arena_spares_reserve -- tops the list up to at least `want` bytes (whole
 * blocks) with new standard blocks from malloc, pre-faulted, as far as the cap allows (*live + bytes <=
 * cap), so that an arena taking from s does not fault fresh memory in on its
 * writer's path (first-touch faults cost ~1 ms per MiB on the target VMs).
 * The allocation and faulting happen outside s's mutex. Best effort: stops at
 * the first malloc failure. Returns the bytes added. Any thread. */
size_t arena_spares_reserve(arena_spares *s, size_t want);

/* arena_init -- an empty arena (no block is allocated until the first
 * arena_alloc). block_size 0 means ARENA_DEFAULT_BLOCK; smaller sizes are
 * raised to 4 KiB. Cannot fail. */
void arena_init(arena *a, size_t block_size);

/* arena_set_account -- from now on the arena also adds the bytes of the
 * blocks it obtains to *total, and subtracts them when it frees them
 * (atomically: one counter may serve many arenas, e.g. every memtable of a
 * database). Call it on an empty arena. NULL total stops the accounting. */
void arena_set_account(arena *a, size_t *total);

/* arena_set_spares -- from now on the arena takes its standard blocks from
 * s when it has one and hands them back to s in arena_destroy (as far as
 * the cap allows; the rest are freed). Call it on an empty arena whose
 * block size is s's. NULL stops it. */
void arena_set_spares(arena *a, arena_spares *s);

/* arena_destroy -- frees every block (or hands it to the arena's spares);
 * the arena is empty (and reusable) afterwards. NULL is a no-op. */
void arena_destroy(arena *a);

/* arena_alloc -- n bytes, 8-byte aligned, valid until arena_destroy(). n == 0
 * gives a valid unique pointer. Returns NULL (tkv_errmsg set) if memory is
 * exhausted. Single-threaded. */
void *arena_alloc(arena *a, size_t n);

/* arena_memory_usage -- bytes of blocks the arena holds (allocated, not only
 * handed out). Safe from any thread. */
size_t arena_memory_usage(const arena *a);

#endif
