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
 * Thread safety: arena_alloc() is single-threaded (only the memtable's writer
 * allocates). arena_memory_usage() may be called from any thread at any time:
 * it reads a counter the allocator updates atomically.
 */
#ifndef TKV_MEM_ARENA_H
#define TKV_MEM_ARENA_H

#include <stddef.h>
#include <stdint.h>

#define ARENA_DEFAULT_BLOCK ((size_t)1 << 20) /* 1 MiB */
#define ARENA_ALIGN 8

struct arena_block;

typedef struct arena {
    uint8_t *cur;               /* next free byte in the current block */
    size_t left;                /* bytes left after cur in the current block */
    size_t block_size;          /* size of a standard block (header included) */
    struct arena_block *blocks; /* every block held, newest first */
    size_t usage;               /* bytes of blocks held; atomic (relaxed) */
    size_t *account;            /* NULL, or a counter shared by several arenas (arena_set_account) */
} arena;

/* arena_init -- an empty arena (no block is allocated until the first
 * arena_alloc). block_size 0 means ARENA_DEFAULT_BLOCK; smaller sizes are
 * raised to 4 KiB. Cannot fail. */
void arena_init(arena *a, size_t block_size);

/* arena_set_account -- from now on the arena also adds the bytes of the
 * blocks it obtains to *total, and subtracts them when it frees them
 * (atomically: one counter may serve many arenas, e.g. every memtable of a
 * database). Call it on an empty arena. NULL total stops the accounting. */
void arena_set_account(arena *a, size_t *total);

/* arena_destroy -- frees every block; the arena is empty (and reusable)
 * afterwards. NULL is a no-op. */
void arena_destroy(arena *a);

/* arena_alloc -- n bytes, 8-byte aligned, valid until arena_destroy(). n == 0
 * gives a valid unique pointer. Returns NULL (tkv_errmsg set) if memory is
 * exhausted. Single-threaded. */
void *arena_alloc(arena *a, size_t n);

/* arena_memory_usage -- bytes of blocks the arena holds (allocated, not only
 * handed out). Safe from any thread. */
size_t arena_memory_usage(const arena *a);

#endif
