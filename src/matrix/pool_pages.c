// SPDX-License-Identifier: Apache-2.0
/*
 * pool_pages.c -- the pool's pages (matrix/pool.h): the free bitmap,
 * allocation and freeing, and the pages' disk blocks -- reserved before a
 * page is handed out, given back by pool_trim once the pool is idle or a
 * reservation finds the file system full.
 *
 * Disk space (pool.h invariant 6): a page's file blocks are reserved
 * (pm_reserve) before the page is handed out, without mu (a fallocate can
 * take a while): the page is marked used already and not yet its owner's
 * to store to. A freed page keeps its blocks and its page-cache pages, so
 * that under a stream of writes the pool recycles pages that are mapped and
 * hot (punching every freed page made each new row fault its pages in
 * again: a 2M x 1 KiB fill ran at 0.68x a fully allocated pool's speed).
 * pool_trim gives the blocks of free pages back: it punches a page that is
 * free, and keeps allocations off that one page (trim_page) while it does.
 */
#include "matrix/pool.h"
#include "matrix/pool_int.h"

#include <stdlib.h>
#include <time.h>

#include "util/status.h"

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The prefault thread creates the pages past the high-water mark by writing
 * zeros in pieces of this size (pm_prefault_zero; never more than a page). */
#define POOL_ZERO_PIECE (64u << 10)

/* prefault_end -- the end (byte offset in the region) of what the region
 * should keep resident: ahead pages past the high-water mark (mu held). */
static uint64_t prefault_end(const pool *p, uint32_t last_n)
{
    if (p->ahead_pages == 0) return 0;
    uint64_t want = (uint64_t)p->high_water + (last_n > p->ahead_pages ? last_n : p->ahead_pages);
    if (want > p->page_count) want = p->page_count;
    return p->pages_off + (want << p->page_shift);
}

void pool_prefault_ahead(pool *p, uint64_t bytes)
{
    pthread_mutex_lock(&p->mu);
    uint64_t n = (bytes + p->page_size - 1) >> p->page_shift;
    p->ahead_pages = n > p->page_count ? p->page_count : (uint32_t)n;
    /* asking for pages ahead counts as an allocation for pool_trim's idle
     * test: the engine's idle column thread trims moments after the open,
     * which would cancel this request -- the first row's pages -- and punch
     * nothing (pool_open gave every free page back). The first flush then
     * wrote its row over pages the file system had to create under its
     * pwrites, with the prefault thread only catching up behind it (a
     * 1M x 1 KiB fill's first flush took ~215 ms, later ones ~130). */
    if (n) p->last_alloc_ns = mono_ns();
    uint64_t end = prefault_end(p, 0), from = p->pages_off + ((uint64_t)p->high_water << p->page_shift);
    pthread_mutex_unlock(&p->mu);
    /* populating is allocating, and writable population dirties a page:
     * only past the high-water mark. Not the header area's holes, nor free
     * pages punched at open, nor -- after a reopen -- the rows' pages, which
     * the thread would read in 4 KiB at a time and mark dirty (a full 1 GiB
     * pool: 1 GiB read and written back again before the first row). */
    pm_prefault_from(p->reg, from);
    /* past the high-water mark pages hold nothing (invariant 7): the thread
     * may create them by writing zeros, in pieces that stay inside a page --
     * but not where the pool syncs (invariant 8): every commit's sync would
     * write those dirty pages ahead, as zeros, and write-protect them one
     * TLB flush each (a 1M x 1 KiB fill: commits of 150-320 ms instead of
     * 2-10). There the pages are made clean and readable. */
    pm_prefault_claim(p->reg, from);
    if (pm_needs_sync(p->reg)) pm_prefault_clean(p->reg);
    else pm_prefault_zero(p->reg, p->page_size < POOL_ZERO_PIECE ? p->page_size : POOL_ZERO_PIECE);
    if (end) pm_prefault_upto(p->reg, end);
}

/* page_runs -- calls fn on each run of consecutive pages of pages[0..n)
 * as one file range; stops at the first error. */
static int page_runs(pool *p, const uint32_t *pages, uint32_t n, int (*fn)(pool *, uint64_t, uint64_t))
{
    for (uint32_t i = 0; i < n;) {
        uint32_t j = i + 1;
        while (j < n && pages[j] == pages[j - 1] + 1) j++;
        TKV_TRY(fn(p, p->pages_off + ((uint64_t)pages[i] << p->page_shift), (uint64_t)(j - i) << p->page_shift));
        i = j;
    }
    return 0;
}

static int reserve_range(pool *p, uint64_t off, uint64_t len) { return pm_reserve(p->reg, off, len); }

static int discard_range(pool *p, uint64_t off, uint64_t len)
{
    pm_discard(p->reg, off, len);
    return 0;
}

static int willneed_range(pool *p, uint64_t off, uint64_t len)
{
    pm_willneed(p->reg, off, len);
    return 0;
}

void pool_willneed_pages(pool *p, const uint32_t *pages, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (pages[i] >= p->page_count) return; /* a bug of the caller's: nothing asked */
    (void)page_runs(p, pages, n, willneed_range);
}

/* mark_free -- pages[0..n) go back to the bitmap (mu held; they were in use). */
static void mark_free(pool *p, const uint32_t *pages, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (pages[i] < p->page_count && !page_is_free(p, pages[i])) {
            page_set_free(p, pages[i]);
            p->free_count++;
        }
    }
}

/* limbo_push -- page waits in limbo for a sync that begins after now (mu held). */
static void limbo_push(pool *p, uint32_t page)
{
    for (size_t i = 0; i < p->limbo_n; i++)
        if (p->limbo[i][0] == page) return; /* given back twice: a bug of the caller's, ignored */
    if (p->limbo_n == p->limbo_cap) {
        size_t cap = p->limbo_cap ? p->limbo_cap * 2 : 64;
        uint64_t(*l)[2] = realloc(p->limbo, cap * sizeof *l);
        if (!l) { /* no memory to wait with: keep the page from reuse for this open (never a torn row) */
            return;
        }
        p->limbo = l;
        p->limbo_cap = cap;
    }
    p->limbo[p->limbo_n][0] = page;
    p->limbo[p->limbo_n][1] = p->sync_begun;
    p->limbo_n++;
}

/* limbo_promote -- pages released before sync number s began go free (mu
 * held). Entries are in release order, so tags only grow. */
static void limbo_promote(pool *p, uint64_t s)
{
    size_t k = 0;
    while (k < p->limbo_n && p->limbo[k][1] < s) {
        uint32_t pg = (uint32_t)p->limbo[k][0];
        mark_free(p, &pg, 1);
        k++;
    }
    if (k == 0) return;
    memmove(p->limbo, p->limbo + k, (p->limbo_n - k) * sizeof *p->limbo);
    p->limbo_n -= k;
}

void pool_limbo_flush(pool *p) { limbo_promote(p, UINT64_MAX); }

int pool_sync(pool *p)
{
    if (!p->barriers) return pm_error(p->reg);
    pthread_mutex_lock(&p->mu);
    uint64_t s = ++p->sync_begun; /* every release stored before this line is covered by the sync below */
    pthread_mutex_unlock(&p->mu);
    int rc = pm_sync(p->reg);
    if (rc < 0) return rc;
    pthread_mutex_lock(&p->mu);
    limbo_promote(p, s);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

int pool_alloc_pages(pool *p, uint32_t n, uint32_t *pages)
{
    pthread_mutex_lock(&p->mu);
    /* not enough free pages, but released ones wait for a sync: sync now */
    if (n > p->free_count && p->limbo_n > 0) {
        pthread_mutex_unlock(&p->mu);
        int src = pool_sync(p);
        if (src < 0) return src;
        pthread_mutex_lock(&p->mu);
    }
    /* the page pool_trim is punching is free but not to be had: wait for it if it is needed */
    while (p->trim_page != POOL_PAGE_NONE && n == p->free_count) pthread_cond_wait(&p->trim_cv, &p->mu);
    if (n > p->free_count) {
        uint32_t fr = p->free_count, total = p->page_count;
        pthread_mutex_unlock(&p->mu);
        return tkv_err(TKV_NO_SPACE, "pool %s: %u pages of %u bytes needed, %u of %u free", p->path, n, p->page_size,
                       fr, total);
    }
    uint32_t got = 0;
    for (uint32_t w = 0; got < n; w++) {
        uint64_t bits = p->free_bits[w];
        while (bits && got < n) {
            uint32_t pg = w * 64 + (uint32_t)__builtin_ctzll(bits);
            bits &= bits - 1;
            if (pg == p->trim_page) continue;
            page_set_used(p, pg);
            pages[got++] = pg;
            if (pg >= p->high_water) p->high_water = pg + 1;
        }
    }
    p->free_count -= n;
    p->alloc_total += n;
    p->last_alloc_ns = mono_ns();
    uint64_t end = prefault_end(p, n);
    pthread_mutex_unlock(&p->mu);
    int rc = page_runs(p, pages, n, reserve_range); /* invariant 6: blocks first */
    if (rc == TKV_NO_SPACE && pool_trim(p, 0) > 0)
        rc = page_runs(p, pages, n, reserve_range); /* free pages that still held blocks gave them back */
    if (rc < 0) { /* the file system is full: the pages go back, with what was reserved of them */
        page_runs(p, pages, n, discard_range);
        pthread_mutex_lock(&p->mu);
        mark_free(p, pages, n);
        pthread_mutex_unlock(&p->mu);
        return rc;
    }
    /* invariant 7: before anything is stored to these pages, the prefault
     * thread writes no more zeros below their end (a zero write in flight
     * over one of them is waited for) */
    uint32_t top = 0;
    for (uint32_t i = 0; i < n; i++)
        if (pages[i] >= top) top = pages[i] + 1;
    pm_prefault_claim(p->reg, p->pages_off + ((uint64_t)top << p->page_shift));
    if (end) pm_prefault_upto(p->reg, end);
    return 0;
}

int pool_alloc_page(pool *p, uint32_t *page) { return pool_alloc_pages(p, 1, page); }

void pool_give_back(pool *p, uint32_t page)
{
    if (page >= p->page_count || page_is_free(p, page)) return; /* a bug of the caller's, ignored */
    if (p->barriers) limbo_push(p, page);                       /* invariant 8 */
    else mark_free(p, &page, 1);                                /* its blocks stay until pool_trim */
}

void pool_free_page(pool *p, uint32_t page)
{
    pthread_mutex_lock(&p->mu);
    pool_give_back(p, page);
    pthread_mutex_unlock(&p->mu);
}

void pool_discard_free(pool *p)
{
    uint64_t tail = p->pages_off + ((uint64_t)p->page_count << p->page_shift);
    if (tail < p->size) discard_range(p, tail, p->size - tail);
    if (pool_meta_end(p) < p->pages_off) discard_range(p, pool_meta_end(p), p->pages_off - pool_meta_end(p));
    for (uint32_t pg = 0; pg < p->page_count;) {
        if (!page_is_free(p, pg)) {
            pg++;
            continue;
        }
        uint32_t end = pg + 1;
        while (end < p->page_count && page_is_free(p, end)) end++;
        discard_range(p, p->pages_off + ((uint64_t)pg << p->page_shift), (uint64_t)(end - pg) << p->page_shift);
        pg = end;
    }
}

/* next_free -- the first free page at or after pg, or page_count (mu held). */
static uint32_t next_free(const pool *p, uint32_t pg)
{
    while (pg < p->page_count && !page_is_free(p, pg)) pg++;
    return pg;
}

uint64_t pool_trim(pool *p, uint64_t idle_us)
{
    pthread_mutex_lock(&p->mu);
    int busy = idle_us && mono_ns() - p->last_alloc_ns < idle_us * 1000u;
    pthread_mutex_unlock(&p->mu);
    if (busy) return UINT64_MAX;
    /* pages in limbo go free (and so are punched below) once synced */
    pthread_mutex_lock(&p->mu);
    size_t in_limbo = p->limbo_n;
    pthread_mutex_unlock(&p->mu);
    if (in_limbo) (void)pool_sync(p); /* a failure is the pool's sticky error; the pages stay in limbo */
    /* The prefault thread populates pages ahead writable, which allocates
     * their blocks: stop it first, or a chunk it populates after the punch
     * below would take them again (a drained pool must shrink back). It
     * never goes back below where it got to; the next allocation asks it
     * for what lies past that. */
    pm_prefault_cancel(p->reg);
    uint64_t trimmed = 0;
    for (uint32_t pg = 0;;) {
        pthread_mutex_lock(&p->mu);
        pg = next_free(p, pg);
        pthread_mutex_unlock(&p->mu);
        if (pg >= p->page_count) break;
        uint64_t off = p->pages_off + ((uint64_t)pg << p->page_shift);
        uint64_t data = pm_data_after(p->reg, off);
        if (data == UINT64_MAX) break;    /* no blocks at all past here */
        if (data >= off + p->page_size) { /* on to the page holding the next data */
            pg = data >= p->pages_off ? (uint32_t)((data - p->pages_off) >> p->page_shift) : pg + 1;
            continue;
        }
        pthread_mutex_lock(&p->mu); /* a free page with blocks: punched, kept from allocation meanwhile */
        int still_free = page_is_free(p, pg);
        if (still_free) p->trim_page = pg;
        pthread_mutex_unlock(&p->mu);
        if (still_free) {
            pm_discard(p->reg, off, p->page_size);
            trimmed += p->page_size;
            pthread_mutex_lock(&p->mu);
            p->trim_page = POOL_PAGE_NONE;
            pthread_cond_broadcast(&p->trim_cv);
            pthread_mutex_unlock(&p->mu);
        }
        pg++;
    }
    __atomic_fetch_add(&p->trimmed, trimmed, __ATOMIC_RELAXED);
    return trimmed;
}

int pool_space(pool *p, pool_space_stats *out)
{
    pthread_mutex_lock(&p->mu);
    uint64_t in_use = p->page_count - p->free_count;
    pthread_mutex_unlock(&p->mu);
    out->used = pool_meta_end(p) + (in_use << p->page_shift);
    pm_stats st;
    pm_get_stats(p->reg, &st);
    out->discarded = st.discarded_bytes;
    out->trimmed = __atomic_load_n(&p->trimmed, __ATOMIC_RELAXED);
    out->reserve_failures = st.reserve_failures;
    return pm_space(p->reg, &out->allocated);
}
