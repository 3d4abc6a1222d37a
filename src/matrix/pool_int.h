// SPDX-License-Identifier: Apache-2.0
/*
 * pool_int.h -- the inside of a pool (matrix/pool.h), shared by its two
 * files: pool.c (header, directory, row headers, open and close) and
 * pool_pages.c (the free bitmap, page allocation and freeing, and the
 * pages' disk blocks). Not for use outside src/matrix/pool*.c.
 */
#ifndef TKV_MATRIX_POOL_INT_H
#define TKV_MATRIX_POOL_INT_H

#include <pthread.h>
#include <stdint.h>

#include "matrix/pool.h"

struct pool {
    char *path;
    pm_region *reg;
    uint8_t *base;
    uint64_t size;
    uint32_t page_size, page_shift, page_count, dir_slots;
    uint64_t dir_off, pages_off;
    uint8_t uuid[16];
    pthread_mutex_t mu;  /* guards free_bits, free_count, rows, directory stores, trim_page */
    uint64_t *free_bits; /* bit i set = page i free */
    uint32_t free_count;
    uint32_t rows;
    uint32_t high_water;    /* 1 + the highest page allocated (or in use at open); mu */
    uint32_t ahead_pages;   /* pool_prefault_ahead's window in pages; mu */
    uint32_t trim_page;     /* a free page pool_trim is punching (not to be handed out), or POOL_PAGE_NONE; mu */
    uint64_t last_alloc_ns; /* CLOCK_MONOTONIC of the last pool_alloc_pages; mu */
    uint64_t alloc_total;   /* pages pool_alloc_pages handed out since open (pool_stats); mu */
    pthread_cond_t trim_cv; /* signalled when trim_page goes back to POOL_PAGE_NONE */
    uint64_t trimmed;       /* bytes pool_trim punched again (relaxed atomic) */
    /* limbo (invariant 8): pages released while the release may not be on the
     * device yet (pm_needs_sync); each {page, sync_begun at its release} waits
     * for a pool_sync that began after it. mu. */
    uint64_t (*limbo)[2];
    size_t limbo_n, limbo_cap;
    uint64_t sync_begun; /* pool_sync calls begun; mu */
    int barriers;        /* pm_needs_sync(reg): releases go through limbo, commits sync (constant after open) */
    int lock_fd;         /* holds an exclusive flock on the pool file while open */
    int writable;        /* opened by pool_open (not pool_open_readonly) */
    int row_lz4;         /* pool_set_row_compression (relaxed atomic) */
};

static inline uint64_t round_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/* pool_meta_end -- the end of the header and directory, to 4 KiB: the
 * blocks of [0, pool_meta_end) are allocated for as long as the pool is
 * open; the gap up to pages_off (pages start at a multiple of the page
 * size) is a hole. */
static inline uint64_t pool_meta_end(const pool *p) { return round_up(p->dir_off + 8 * (uint64_t)p->dir_slots, 4096); }

/* The free bitmap (mu held). */
static inline int page_is_free(const pool *p, uint32_t pg) { return (int)((p->free_bits[pg / 64] >> (pg % 64)) & 1); }
static inline void page_set_free(pool *p, uint32_t pg) { p->free_bits[pg / 64] |= 1ull << (pg % 64); }
static inline void page_set_used(pool *p, uint32_t pg) { p->free_bits[pg / 64] &= ~(1ull << (pg % 64)); }

/* pool_give_back -- a page in use goes free (or, with barriers, to limbo
 * until the next pool_sync: invariant 8); its blocks stay until pool_trim
 * (invariant 6). Called with mu held. (pool_pages.c) */
void pool_give_back(pool *p, uint32_t page);

/* pool_limbo_flush -- every page in limbo goes free (mu held; only after a
 * pool_sync that began after the last release, i.e. at close). (pool_pages.c) */
void pool_limbo_flush(pool *p);

/* pool_discard_free -- at open: punches every free page and the file's
 * tail past the last page (pages freed by a crash, or a pool of a build
 * from before pools were sparse); at close, before the region's msync, so
 * that free pages' dirty contents (drained rows, the prefault's pages
 * ahead) are not written back. Single-threaded (open or close). (pool_pages.c) */
void pool_discard_free(pool *p);

#endif
