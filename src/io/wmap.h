// SPDX-License-Identifier: Apache-2.0
/*
 * wmap.h -- appends through a shared file mapping, and the thread that makes
 * the mapping's pages ahead of the writer (the WAL, io.h io_map_appends).
 *
 * Why: a 1 KiB WAL append by pwrite cost the writer 1.1-1.4 µs on the AMD
 * EPYC host, about 60 % of a put; the 300k and 1M fills were bound by that
 * thread (through the mapping they ran 1.40x and 1.56x as fast). A store
 * into a mapped page costs a memcpy -- if the page already exists: a store
 * that faults a new page in costs about what the pwrite did, and a fault on
 * a page past what the file holds triggered mapped read-ahead that zeroed
 * megabytes on the writer's thread (20 ms writes). So a helper thread
 * ("tkv-wal-map") makes the pages ahead of the writer by writing zeros
 * (pwrite, which allocates the page-cache pages and maps the file's reserved
 * blocks), the mapping is MADV_RANDOM (a fault never reads ahead), and the
 * writer stores only into pages the helper has made; past them it writes
 * with pwrite, as without a mapping.
 *
 * Who owns which bytes (per mapped file, under the helper's mutex):
 *  - [0, made): pages that exist and that the helper never writes again. The
 *    writer stores into them (lock-free: `made` is read with acquire).
 *  - [made, piece): the helper is writing zeros there with mu released (a
 *    piece of IO_WMAP_PIECE at most); nobody else writes there until it is
 *    done and made = piece. [piece, claim): the rest of the helper's step;
 *    a writer may take it (io_wmap_claim moves made past it, and the helper
 *    stops at its next piece when made is not where it left it).
 *  - past made (not busy): nobody's; the writer takes pages by moving made
 *    past them (io_wmap_claim) before it pwrites there.
 *  Invariant: made >= the file's size (the writer's appends), so the helper's
 *  zeros never land on appended bytes.
 *
 * Write-back of a page that is mapped write-protects it (the kernel cleans
 * the page table entries, one TLB shootdown per page); the helper therefore
 * drops the writer's page-table entries behind it in steps of
 * IO_WMAP_STEP (MADV_DONTNEED: the page cache keeps the data), and the WAL's
 * write-back ranges stay below that point (io_wmap_clean_upto).
 *
 * Synced logs: the page cache makes a folio as large as the write that
 * creates it, and write-back is per folio, so after the helper's 64 KiB
 * pieces every sync of a 1 KiB record rewrote the whole 16-64 KiB folio
 * around it: 5,000 synced 1 KiB puts wrote 139-147 MB to the device (28 KiB
 * a sync, block trace: data, not metadata). The helper therefore makes pages
 * one pwrite per page at the start of every log (its first IO_WMAP_AHEAD
 * bytes, before anyone knows how the writer syncs) and while the writer
 * syncs often -- its last sync came within IO_WMAP_SYNC_GAP bytes of the one
 * before; the same puts then wrote 42-45 MB. A writer that syncs rarely or
 * never gets whole pieces (fewer calls; its pages are mostly deleted
 * before write-back).
 *
 * Failure: a failed pwrite (the helper's zeros, or the writer's own past
 * `made`, which reports it as before) ends the file's stores: every later
 * append writes with pwrite, since pages past the size may not exist. A store
 * into a mapped page cannot return an error: the pages it goes to exist
 * already and their blocks were reserved before the file was mapped
 * (io_preallocate) on a file system that overwrites in place (io.c
 * map_fs_ok), so only an I/O error while re-reading a page that memory
 * pressure evicted could fault (SIGBUS), as with any mapped file; the
 * wal_mmap=0 option writes the log with pwrite only.
 */
#ifndef TKV_IO_WMAP_H
#define TKV_IO_WMAP_H

#include <stddef.h>
#include <stdint.h>

/* The helper makes pages this far ahead of the writer, this much at a time,
 * and drops page-table entries this far behind it. */
#define IO_WMAP_AHEAD (2u << 20)
#define IO_WMAP_STEP  (256u << 10)
/* ... writing a step's zeros this much at a time, yielding the CPU between. */
#define IO_WMAP_PIECE (64u << 10)
/* A writer syncs often when its syncs are at most this many bytes apart
 * ("Synced logs" above). */
#define IO_WMAP_SYNC_GAP (1u << 20)

typedef struct io_wmap io_wmap;           /* the helper thread (one per database) */
typedef struct io_wmap_file io_wmap_file; /* one mapped append file */

/* Counters (io_wmap_get_stats). */
typedef struct io_wmap_stats {
    uint64_t files;         /* files mapped */
    uint64_t made_bytes;    /* bytes of pages the helper made */
    uint64_t mapped_bytes;  /* bytes the writers stored through a mapping */
    uint64_t written_bytes; /* bytes the writers of mapped files wrote with pwrite (past the made pages) */
    uint64_t writer_waits;  /* times a writer waited for the helper's piece to finish */
    uint64_t taken_bytes;   /* bytes of a helper's step a writer took over (wrote itself) */
    uint64_t failures;      /* pwrite or madvise errors of the helper (it stops making pages for that file) */
    uint64_t page_writes;   /* the helper's pwrites of one page of zeros ("Synced logs") */
} io_wmap_stats;

/* io_wmap_start -- starts the helper, with a CPU slice of slice_us
 * (thread_background; 0: the kernel's): 0, TKV_NO_MEMORY (thread_create). */
int io_wmap_start(io_wmap **out, unsigned slice_us);
/* io_wmap_stop -- stops it and frees w; every file must be detached. NULL ok. */
void io_wmap_stop(io_wmap *w);
void io_wmap_get_stats(io_wmap *w, io_wmap_stats *out);
/* io_wmap_drain -- waits until the helper has nothing left to do on any file
 * (tests: what it does is otherwise timing-dependent). */
void io_wmap_drain(io_wmap *w);

/* io_wmap_attach -- maps bytes [0, len) of fd (opened read-write; its size
 * already len, len a multiple of the page size) for appends that continue at
 * offset `size`. 0, or an errno value (mmap). */
int io_wmap_attach(io_wmap *w, int fd, uint64_t size, uint64_t len, io_wmap_file **out);
/* io_wmap_store -- appends p[0..n) at offset `at` (the file's size) through
 * the mapping if those bytes lie in pages the helper has made: 1 if stored,
 * 0 if not (the caller calls io_wmap_claim and writes them with pwrite).
 * Order: the first 8 bytes (a WAL record's header) are stored before any
 * later byte, so a process killed during the store leaves nothing of it, part
 * of those 8 bytes, or all 8 and any subset of the rest -- never later bytes
 * without the header. (pwrite needs no such rule: a kill does not interrupt
 * the kernel's copy.) */
int io_wmap_store(io_wmap_file *m, uint64_t at, const void *p, size_t n);
/* io_wmap_claim -- before a pwrite of bytes up to `end`: waits while the
 * helper's piece in flight lies below `end` (not for the rest of its step),
 * then keeps it off the pages up to `end`. */
void io_wmap_claim(io_wmap_file *m, uint64_t end);
/* io_wmap_set_piece_hook -- tests only: fn(arg, 1) runs in the helper just
 * before it writes a piece (the piece is in flight), fn(arg, 0) between two
 * pieces of a step (none in flight), both without the helper's mutex. NULL:
 * none (the default). Not for concurrent use with several databases. */
void io_wmap_set_piece_hook(void (*fn)(void *arg, int in_piece), void *arg);
/* io_wmap_appended -- the file's size after a pwrite of `bytes` (for the
 * helper); `failed`: the pwrite failed, and the pages io_wmap_claim took may
 * not exist, so no later append is a store (they all pwrite). */
void io_wmap_appended(io_wmap_file *m, uint64_t size, uint64_t bytes, int failed);
/* io_wmap_synced -- the writer's fdatasync of the file covered `size` bytes
 * (how the helper makes pages depends on how often: "Synced logs" above). */
void io_wmap_synced(io_wmap_file *m, uint64_t size);
/* io_wmap_clean_upto -- the offset below which the writer's page-table
 * entries are gone: write-back of the file may go that far (UINT64_MAX once
 * the whole mapping is, the log having grown past it). */
uint64_t io_wmap_clean_upto(io_wmap_file *m);
/* io_wmap_detach -- waits for the helper to leave the file, unmaps it and
 * frees m (the caller truncates the file to its size). NULL ok. */
void io_wmap_detach(io_wmap_file *m);

#endif
