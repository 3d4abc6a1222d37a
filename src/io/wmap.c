// SPDX-License-Identifier: Apache-2.0
/*
 * wmap.c -- appends through a shared file mapping and the helper thread that
 * makes their pages (wmap.h: why, and who owns which bytes).
 *
 * One mutex and one condition variable per helper. The writer's common path
 * (io_wmap_store into made pages) takes neither: it reads `made` (acquire),
 * copies, publishes its size (release) and wakes the helper only when it has
 * come within half of IO_WMAP_AHEAD of `made` or a step past `clean`.
 */
#include "io/wmap.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/status.h"
#include "util/thread.h"

struct io_wmap_file {
    io_wmap *w;
    int fd;
    uint8_t *base;
    uint64_t len;     /* mapped bytes = the file's size while mapped */
    uint64_t made;    /* atomic: pages below exist and are the writer's (wmap.h) */
    uint64_t claim;   /* mu: while busy the helper means to write zeros in [made, claim), a piece at a time */
    uint64_t piece;   /* mu: the end of the piece [made, piece) the helper is writing with mu released; 0 if none */
    int claiming;     /* mu: writers waiting in io_wmap_claim for a piece: the helper starts no new step here */
    uint64_t size;    /* atomic: the writer's appends end here */
    uint64_t clean;   /* atomic: the writer's page-table entries are dropped below this */
    int busy;         /* mu: the helper works on this file with mu released */
    int failed;       /* atomic: a pwrite failed (the helper's or the writer's): no more pages are
                       * made and no more stores go through the mapping (pages past the size
                       * may not exist; a store there could fault) */
    int detaching;    /* mu: io_wmap_detach waits for the helper to leave */
    uint64_t sync_at; /* atomic: the size the writer's last sync covered */
    int sync_often;   /* atomic: that sync came within IO_WMAP_SYNC_GAP bytes of the one before */
    io_wmap_file *next;
};

struct io_wmap {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* the helper waits for work; writers and detach wait for a step */
    io_wmap_file *files;
    int kicked;     /* atomic: a writer asked for work since the helper last looked */
    int writer_cpu; /* atomic: the CPU a writer last asked for work from (-1: not known) */
    int stopping;
    unsigned slice_us; /* the helper's CPU slice (thread_background) */
    pthread_t thread;
    io_wmap_stats st;                     /* mu; its mapped_bytes and written_bytes are kept in the two below */
    uint64_t mapped_bytes, written_bytes; /* atomic (the writers count without mu) */
    uint64_t page_writes;                 /* atomic: st.page_writes (the helper counts with mu released) */
};

static uint64_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (uint64_t)p : 4096;
}

static uint64_t round_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

/* want_pages / want_clean -- the helper's two jobs on m (mu held). */
static int want_pages(const io_wmap_file *m)
{
    uint64_t made = __atomic_load_n(&m->made, __ATOMIC_RELAXED);
    return !m->claiming && !__atomic_load_n(&m->failed, __ATOMIC_RELAXED) && made < m->len &&
           made < __atomic_load_n(&m->size, __ATOMIC_ACQUIRE) + IO_WMAP_AHEAD;
}

static uint64_t clean_target(const io_wmap_file *m)
{
    /* in steps of IO_WMAP_STEP, one step behind the writer; all of it once no store can come */
    uint64_t s = __atomic_load_n(&m->size, __ATOMIC_ACQUIRE);
    if (s >= m->len || __atomic_load_n(&m->failed, __ATOMIC_RELAXED))
        return m->len; /* no more stores into the mapping: all its entries may go */
    s = s / IO_WMAP_STEP * IO_WMAP_STEP;
    return s >= IO_WMAP_STEP ? s - IO_WMAP_STEP : 0;
}

static int want_clean(const io_wmap_file *m)
{
    uint64_t t = clean_target(m), c = __atomic_load_n(&m->clean, __ATOMIC_RELAXED);
    return t > c && (t >= c + IO_WMAP_STEP || t == m->len); /* the last, shorter piece once the mapping is done */
}

/* The test seam of wmap.h: called by the helper with mu released. */
static void (*piece_hook)(void *arg, int in_piece);
static void *piece_hook_arg;

void io_wmap_set_piece_hook(void (*fn)(void *arg, int in_piece), void *arg)
{
    __atomic_store_n(&piece_hook_arg, arg, __ATOMIC_RELEASE);
    __atomic_store_n(&piece_hook, fn, __ATOMIC_RELEASE);
}

static void call_piece_hook(int in_piece)
{
    void (*fn)(void *, int) = __atomic_load_n(&piece_hook, __ATOMIC_ACQUIRE);
    if (fn) fn(__atomic_load_n(&piece_hook_arg, __ATOMIC_ACQUIRE), in_piece);
}

/* step -- one job on m with mu released (m->busy keeps detach away). */
static void step(io_wmap *w, io_wmap_file *m, int pages)
{
    if (pages) {
        /* A piece at a time, mu released while it is written, the CPU offered
         * back between pieces when this thread runs on the core the writer
         * asked from: it runs at the writer's priority, often on the writer's
         * core (the writer woke it), and a whole step there held the writer
         * off its core for 100-200 us (64 KiB pieces took a 4M x 1 KiB
         * fill's p99.9 from 118-144 to 109 us). A
         * writer that reaches the end of the made pages meanwhile waits for
         * the piece in flight only and takes the rest of the step
         * (io_wmap_claim): the helper stops when `made` is no longer where it
         * left it, or at a lowered claim. */
        static const uint8_t zeros[IO_WMAP_PIECE];
        uint64_t off = __atomic_load_n(&m->made, __ATOMIC_RELAXED);
        int err = 0;
        while (off < m->claim && off == __atomic_load_n(&m->made, __ATOMIC_RELAXED) &&
               !__atomic_load_n(&m->failed, __ATOMIC_RELAXED)) {
            uint64_t end = m->claim - off > IO_WMAP_PIECE ? off + IO_WMAP_PIECE : m->claim;
            m->piece = end;
            pthread_mutex_unlock(&w->mu);
            call_piece_hook(1);
            /* a page per pwrite at the start of a log and behind a writer
             * that syncs often ("Synced logs" in wmap.h) */
            uint64_t unit =
                off < IO_WMAP_AHEAD || __atomic_load_n(&m->sync_often, __ATOMIC_RELAXED) ? page_size() : end - off;
            for (uint64_t at = off; at < end && !err;) {
                ssize_t k = pwrite(m->fd, zeros, (size_t)(end - at < unit ? end - at : unit), (off_t)at);
                if (k < 0 && errno == EINTR) continue;
                if (k <= 0) err = k < 0 ? errno : EIO;
                else at += (uint64_t)k;
                if (k > 0 && (uint64_t)k <= page_size()) __atomic_fetch_add(&w->page_writes, 1, __ATOMIC_RELAXED);
            }
            pthread_mutex_lock(&w->mu);
            m->piece = 0;
            pthread_cond_broadcast(&w->cv); /* a writer waiting for this piece */
            if (err) {
                __atomic_store_n(&m->failed, 1, __ATOMIC_RELAXED); /* the writer's own pwrite reports it */
                w->st.failures++;
                break;
            }
            __atomic_store_n(&m->made, end, __ATOMIC_RELEASE);
            w->st.made_bytes += end - off;
            off = end;
            if (off >= m->claim) break;
            /* on the writer's core, let it run: the core offered back only
             * there, so that on the other core the pages are made at full speed */
            int yield = sched_getcpu() == __atomic_load_n(&w->writer_cpu, __ATOMIC_RELAXED);
            if (yield || __atomic_load_n(&piece_hook, __ATOMIC_RELAXED)) {
                pthread_mutex_unlock(&w->mu);
                if (yield) sched_yield();
                call_piece_hook(0);
                pthread_mutex_lock(&w->mu);
            }
        }
        m->claim = __atomic_load_n(&m->made, __ATOMIC_RELAXED);
        return;
    }
    uint64_t from = __atomic_load_n(&m->clean, __ATOMIC_RELAXED), to = clean_target(m);
    pthread_mutex_unlock(&w->mu);
    int rc = madvise(m->base + from, (size_t)(to - from), MADV_DONTNEED);
    pthread_mutex_lock(&w->mu);
    /* even if it failed: write-back of pages still mapped costs page-table
     * cleaning, it is not wrong -- and the helper must not retry forever */
    if (rc != 0) w->st.failures++;
    __atomic_store_n(&m->clean, to, __ATOMIC_RELEASE);
}

static void *wmap_main(void *arg)
{
    io_wmap *w = arg;
    thread_background("tkv-wal-map", 0, w->slice_us); /* the writers' priority: they wait for its pages */
    pthread_mutex_lock(&w->mu);
    while (!w->stopping) {
        io_wmap_file *m = w->files;
        int pages = 0;
        for (; m; m = m->next) {
            if (m->detaching) continue;
            if ((pages = want_pages(m)) != 0) break;
            if (want_clean(m)) break;
        }
        if (!m) {
            __atomic_store_n(&w->kicked, 0, __ATOMIC_SEQ_CST);
            pthread_cond_wait(&w->cv, &w->mu);
            continue;
        }
        m->busy = 1;
        if (pages) {
            uint64_t made = __atomic_load_n(&m->made, __ATOMIC_RELAXED);
            m->claim = made + IO_WMAP_STEP < m->len ? made + IO_WMAP_STEP : m->len;
        }
        step(w, m, pages);
        m->busy = 0;
        pthread_cond_broadcast(&w->cv); /* a writer in io_wmap_claim, io_wmap_detach */
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

int io_wmap_start(io_wmap **out, unsigned slice_us)
{
    *out = NULL;
    io_wmap *w = calloc(1, sizeof *w);
    if (!w) return tkv_err(TKV_NO_MEMORY, "out of memory starting the WAL mapping thread");
    w->writer_cpu = -1;
    w->slice_us = slice_us;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    int rc = thread_create(&w->thread, wmap_main, w, "the WAL mapping thread");
    if (rc < 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return rc;
    }
    *out = w;
    return 0;
}

void io_wmap_stop(io_wmap *w)
{
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->stopping = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

void io_wmap_drain(io_wmap *w)
{
    pthread_mutex_lock(&w->mu);
    for (;;) {
        io_wmap_file *m = w->files;
        while (m && (m->detaching || !(m->busy || want_pages(m) || want_clean(m)))) m = m->next;
        if (!m || w->stopping) break;
        pthread_cond_broadcast(&w->cv); /* it may be asleep with work waiting (no writer kicked it) */
        pthread_cond_wait(&w->cv, &w->mu);
    }
    pthread_mutex_unlock(&w->mu);
}

void io_wmap_get_stats(io_wmap *w, io_wmap_stats *out)
{
    pthread_mutex_lock(&w->mu);
    *out = w->st;
    out->mapped_bytes = __atomic_load_n(&w->mapped_bytes, __ATOMIC_RELAXED);
    out->written_bytes = __atomic_load_n(&w->written_bytes, __ATOMIC_RELAXED);
    out->page_writes = __atomic_load_n(&w->page_writes, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&w->mu);
}

int io_wmap_attach(io_wmap *w, int fd, uint64_t size, uint64_t len, io_wmap_file **out)
{
    *out = NULL;
    io_wmap_file *m = calloc(1, sizeof *m);
    if (!m) return ENOMEM;
    void *b = mmap(NULL, (size_t)len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (b == MAP_FAILED) {
        int e = errno;
        free(m);
        return e;
    }
    (void)madvise(b, (size_t)len, MADV_RANDOM); /* a fault reads no pages ahead (wmap.h) */
    uint64_t pg = page_size();
    *m = (io_wmap_file){.w = w, .fd = fd, .base = b, .len = len, .size = size, .sync_at = size};
    /* the page holding `size` exists (the header was written); past it, the helper's */
    m->made = m->claim = round_up(size, pg) < len ? round_up(size, pg) : len;
    m->clean = size / pg * pg;
    pthread_mutex_lock(&w->mu);
    m->next = w->files;
    w->files = m;
    w->st.files++;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    *out = m;
    return 0;
}

/* kick -- wakes the helper if the writer is near the end of the made pages
 * or a step past the clean point, once until the helper has looked. */
static void kick(io_wmap_file *m, uint64_t size, uint64_t made)
{
    io_wmap *w = m->w;
    uint64_t clean = __atomic_load_n(&m->clean, __ATOMIC_RELAXED);
    int need = size >= m->len
                   ? clean < m->len /* past the mapping: only its last entries to drop */
                   : (made < m->len && made - size < IO_WMAP_AHEAD / 2) || size >= clean + 3 * (uint64_t)IO_WMAP_STEP;
    if (!need) return;
    int cpu = sched_getcpu(); /* step() yields on this core; written only when it changed: the
                               * line is the helper's too, and this runs on most stores of a step */
    if (cpu != __atomic_load_n(&w->writer_cpu, __ATOMIC_RELAXED))
        __atomic_store_n(&w->writer_cpu, cpu, __ATOMIC_RELAXED);
    if (__atomic_load_n(&w->kicked, __ATOMIC_SEQ_CST)) return;
    pthread_mutex_lock(&w->mu);
    __atomic_store_n(&w->kicked, 1, __ATOMIC_SEQ_CST);
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

int io_wmap_store(io_wmap_file *m, uint64_t at, const void *p, size_t n)
{
    uint64_t made = __atomic_load_n(&m->made, __ATOMIC_ACQUIRE);
    if (at + n > made || __atomic_load_n(&m->failed, __ATOMIC_RELAXED)) return 0;
    /* The first 8 bytes before the rest (io_wmap_store in wmap.h): a process
     * killed inside memcpy leaves any subset of what it copied, and a WAL
     * record whose header is missing while later bytes of it are there would
     * read as corruption, not as a torn tail (docs/format-wal.md R4, R5). */
    size_t head = n < 8 ? n : 8;
    memcpy(m->base + at, p, head);
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* the compiler keeps the order; the CPU retires stores in it */
    memcpy(m->base + at + head, (const uint8_t *)p + head, n - head);
    __atomic_store_n(&m->size, at + n, __ATOMIC_RELEASE);
    __atomic_fetch_add(&m->w->mapped_bytes, n, __ATOMIC_RELAXED);
    kick(m, at + n, made);
    return 1;
}

void io_wmap_claim(io_wmap_file *m, uint64_t end)
{
    io_wmap *w = m->w;
    /* the pages to take; made is page-aligned (or the mapping's end) because
     * pieces are whole pages (io_map_appends maps no file when the page size
     * does not divide IO_WMAP_PIECE), so waiting on `to` and on `end`
     * is the same */
    uint64_t to = round_up(end, page_size());
    if (to > m->len) to = m->len;
    pthread_mutex_lock(&w->mu);
    if (m->piece && to > __atomic_load_n(&m->made, __ATOMIC_RELAXED)) {
        /* a piece of zeros is being written at [made, piece): wait for it
         * (it may be part of what this pwrite covers), not for the rest of
         * the helper's step, and keep the helper from starting another */
        w->st.writer_waits++;
        m->claiming++;
        do {
            m->claim = m->piece; /* the helper stops after this piece */
            pthread_cond_wait(&w->cv, &w->mu);
        } while (m->piece && to > __atomic_load_n(&m->made, __ATOMIC_RELAXED));
        m->claiming--;
    }
    /* no piece in flight now: a busy helper is between pieces and stops when
     * it sees made moved */
    uint64_t made = __atomic_load_n(&m->made, __ATOMIC_RELAXED);
    if (to > made) {
        if (m->busy && m->claim > made) w->st.taken_bytes += (m->claim < to ? m->claim : to) - made;
        __atomic_store_n(&m->made, to, __ATOMIC_RELEASE);
        m->claim = to;
    }
    pthread_mutex_unlock(&w->mu);
}

void io_wmap_appended(io_wmap_file *m, uint64_t size, uint64_t bytes, int failed)
{
    if (failed) { /* pages it claimed may not exist: stores stop, the helper lets go of the mapping */
        __atomic_store_n(&m->failed, 1, __ATOMIC_RELAXED);
        pthread_mutex_lock(&m->w->mu);
        pthread_cond_broadcast(&m->w->cv);
        pthread_mutex_unlock(&m->w->mu);
    }
    __atomic_store_n(&m->size, size, __ATOMIC_RELEASE);
    __atomic_fetch_add(&m->w->written_bytes, bytes, __ATOMIC_RELAXED);
    kick(m, size, __atomic_load_n(&m->made, __ATOMIC_ACQUIRE));
}

void io_wmap_synced(io_wmap_file *m, uint64_t size)
{
    int often = size <= __atomic_load_n(&m->sync_at, __ATOMIC_RELAXED) + IO_WMAP_SYNC_GAP;
    __atomic_store_n(&m->sync_at, size, __ATOMIC_RELAXED);
    if (often != __atomic_load_n(&m->sync_often, __ATOMIC_RELAXED))
        __atomic_store_n(&m->sync_often, often, __ATOMIC_RELAXED);
}

uint64_t io_wmap_clean_upto(io_wmap_file *m)
{
    uint64_t c = __atomic_load_n(&m->clean, __ATOMIC_ACQUIRE);
    return c >= m->len ? UINT64_MAX : c; /* all entries dropped: past the mapping, write-back as without one */
}

void io_wmap_detach(io_wmap_file *m)
{
    if (!m) return;
    io_wmap *w = m->w;
    pthread_mutex_lock(&w->mu);
    m->detaching = 1;
    while (m->busy) pthread_cond_wait(&w->cv, &w->mu);
    io_wmap_file **pp = &w->files;
    while (*pp != m) pp = &(*pp)->next;
    *pp = m->next;
    pthread_mutex_unlock(&w->mu);
    munmap(m->base, (size_t)m->len);
    free(m);
}
