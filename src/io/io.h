// SPDX-License-Identifier: Apache-2.0
/*
 * io.h -- the single I/O layer for every byte tierkv reads or writes on files.
 *
 * Every file operation of the engine goes through here so that (1) bytes are
 * accounted per class of work where they happen (the scheduler reads these
 * counters), and (2) tests and emul/ can inject faults (ENOSPC, EIO, short
 * writes) without touching engine code, through io_set_fault_hook().
 *
 * Errors are reported as TKV_* codes with tkv_errmsg() naming the file.
 */
#ifndef TKV_IO_IO_H
#define TKV_IO_IO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What a byte was spent on. Client work vs internal work (SILK). */
typedef enum io_class {
    IO_WAL = 0,      /* client: write-ahead log appends and syncs */
    IO_USER_READ,    /* client: reads on behalf of gets/iterators */
    IO_FLUSH,        /* internal: memtable flush output */
    IO_COMPACT_L0,   /* internal: L0 -> L1 compaction reads and writes */
    IO_COMPACT_DEEP, /* internal: L1+ compaction reads and writes */
    IO_META,         /* MANIFEST, CURRENT, LOCK, recovery reads */
    IO_NCLASSES
} io_class;

const char *io_class_name(io_class c);

/* io_gate_fn -- the scheduler's admission hook (src/db/silk.c): called
 * before every read or write of n bytes on a file opened with these stats,
 * on the calling thread. It may sleep (rate limiting, the emulated SSD
 * throttle, a paused compaction) and may refuse with a TKV_* error (an
 * aborted compaction), which the I/O call then returns untouched. */
typedef int (*io_gate_fn)(void *arg, io_class cls, int is_write, size_t n);

/* Per-database byte counters, updated atomically (relaxed), and the gate. */
typedef struct io_stats {
    uint64_t read_bytes[IO_NCLASSES];
    uint64_t write_bytes[IO_NCLASSES];
    uint64_t syncs[IO_NCLASSES];
    uint64_t incremental_syncs[IO_NCLASSES]; /* bytes_per_sync steps (fdatasyncs also counted in syncs) */
    /* Reads (io_pread calls that went to the file, readahead windows) and
     * their summed wall time in ns, from before the gate (so a read queued
     * behind the emulated device's internal traffic counts its wait) to the
     * end of the pread. The scheduler's latency cap (sched/monitor.h) watches
     * IO_USER_READ's mean. */
    uint64_t read_ops[IO_NCLASSES];
    uint64_t read_ns[IO_NCLASSES];
    /* Wall time in ns of io_append (the pwrite, or the staging and direct
     * writes, and the bytes_per_sync step it makes; not a store into a
     * mapped WAL's pages, a memcpy) and of io_sync (the
     * fdatasync), after the gate; and the part of read_ns that reads spent
     * in the gate (read_gate_ns: rate limiter, throttle, pauses). So
     * read_ns - read_gate_ns + write_ns is the time the engine's threads
     * spent in device calls, which the scheduler's adaptation of T
     * (sched/tadapt.h) reads as the device's queue: waits for the
     * scheduler's own tokens must not look like a busy device. */
    uint64_t write_ns[IO_NCLASSES];
    uint64_t read_gate_ns[IO_NCLASSES];
    io_gate_fn gate; /* NULL = no admission control; set before files are opened, never changed after */
    void *gate_arg;
    /* Append files opened with these stats sync incrementally, every
     * bytes_per_sync bytes written (0 = only at io_sync): direct files with
     * fdatasync, buffered ones by starting write-back (sync_file_range
     * WRITE, no wait, no device flush). Why: a device-cache flush after many
     * megabytes of writes stalls every read of the disk for as long as the
     * flush takes (docs/scheduler.md); many small flushes do not. Set before
     * files are opened, never changed after. */
    uint64_t bytes_per_sync;
    /* The same step for IO_WAL files, apart: a WAL is deleted once the
     * flush that covers it is durable, and pages of it the kernel has not
     * written back by then are never written at all. 0 (the default) leaves
     * them to the sync groups (wal_sync) and the kernel: a 4M x 1 KiB fill
     * of values that compress 8:1 wrote 6.2 GB to the device with 0 and
     * 10.6 GB with 1 MiB steps. Set before files are opened, never changed
     * after. */
    uint64_t wal_bytes_per_sync;
    /* Buffered IO_WAL files (appended on client threads) hand their
     * bytes_per_sync write-back to this thread (wb.h), which writes the range
     * back and fdatasyncs the file, instead of calling sync_file_range
     * themselves, which blocked the write leader for as long as submitting
     * the range took. NULL: inline, as other classes.
     * Set before files are opened, never changed after. */
    struct io_wb *wb;
    /* Files opened with IO_MAPPED and these stats append through a shared
     * mapping once io_map_appends has mapped them, with pages this thread
     * makes ahead of the writer (wmap.h). NULL: pwrite only.
     * Set before files are opened, never changed after. */
    struct io_wmap *wmap;
} io_stats;

/* Open flags. */
#define IO_DIRECT                                                                                                      \
    1u /* O_DIRECT: bypass the page cache; this layer does the
                      * alignment (bounce buffers on read, an aligned staging
                      * buffer on append), so callers see ordinary semantics. */
#define IO_WRITE_BEHIND                                                                                                \
    2u /* with IO_DIRECT, appends only: a full staging buffer
                            * is written (and its bytes_per_sync fdatasync made)
                            * through io_uring while the writer fills a second
                            * one (io/wbehind.h); an error surfaces on the next
                            * append, io_sync or io_close. Without io_uring the
                            * file writes synchronously. */

#define IO_MAPPED                                                                                                      \
    4u /* buffered appends only: opened read-write so that io_map_appends
                     * can map the file (with io_stats.wmap set); without it, a no-op */

#define IO_OVERWRITE                                                                                                   \
    8u /* buffered appends only, without `keep`: the file must exist; it is
                        * neither created nor truncated, and appends start at
                        * offset 0, over its old bytes and into its blocks
                        * (a recycled WAL, mem/wal.h wal_writer_recycle): the
                        * file keeps its length until io_release_reserved */

/* Alignment of offsets, lengths and buffers for O_DIRECT. 4096 covers both
 * 512-byte and 4K logical-sector devices. */
#define IO_DIRECT_ALIGN 4096u

typedef struct io_file {
    int fd;
    io_class cls;
    io_stats *stats; /* may be NULL */
    uint64_t size;   /* bytes appended so far (append files) */
    char *path;
    unsigned flags; /* IO_DIRECT, IO_WRITE_BEHIND, IO_MAPPED, IO_OVERWRITE */
    /* Direct appends only: bytes [dbuf_off, dbuf_off + dbuf_len) of the file
     * are staged in dbuf (aligned). Invariant: dbuf_off is a multiple of
     * IO_DIRECT_ALIGN and dbuf_off + dbuf_len == size. Full buffers are
     * written as they fill; io_sync/io_close write the partial tail padded
     * to the alignment and then ftruncate the file back to `size`. */
    uint8_t *dbuf;
    size_t dbuf_len;
    uint64_t dbuf_off;
    int dbuf_dirty; /* staged bytes not yet written to the device */
    /* IO_WRITE_BEHIND: the stage in flight (dbuf_alt, written at
     * [dbuf_off - IO_DIRECT_STAGE, dbuf_off)) and its ring; wbh NULL: the
     * file writes synchronously. wb_sync_to: synced_upto once the write's
     * linked fdatasync completes (0: none asked). */
    struct io_wbehind *wbh;
    uint8_t *dbuf_alt;
    uint64_t wb_sync_to;
    uint64_t synced_upto; /* bytes_per_sync: file offset up to which the last incremental sync went */
    /* Readahead (io_set_readahead), for a file one thread reads in order:
     * bytes [ra_off, ra_off + ra_len) of the file are in rabuf (aligned,
     * ra_cap bytes); ra_off is a multiple of IO_DIRECT_ALIGN. */
    uint8_t *rabuf;
    size_t ra_cap, ra_len;
    uint64_t ra_off;
    uint64_t ra_file_size; /* at io_set_readahead: windows stop there */
    /* IO_MAPPED after io_map_appends: the mapping appends go through (wmap.h);
     * the file's size on disk is then the mapping's length, not `size`, until
     * io_release_reserved or io_close truncates it back. */
    struct io_wmap_file *map;
    uint64_t disk_end; /* the file's size on disk while it is longer than `size`: the mapping's length, or
                        * the end of the reservation io_extend_reserved made part of the file */
} io_file;

/* Operations a fault hook sees. IO_OP_MSYNC and IO_OP_FALLOCATE are made
 * by emul/ on the pmem pool file (outside this layer: io_fault_check). */
typedef enum io_op {
    IO_OP_OPEN,
    IO_OP_WRITE,
    IO_OP_SYNC,
    IO_OP_READ, /* pread and io_uring reads (io/uring.h) alike, before the read is issued */
    IO_OP_RENAME,
    IO_OP_REMOVE,
    IO_OP_RING_SETUP, /* io_uring_queue_init of a read ring (io/uring.h); path "io_uring"; an errno
                       * makes the setup fail as the kernel would (ENOSYS, EPERM, ENOMEM) */
    IO_OP_MSYNC,
    IO_OP_FALLOCATE,
    IO_OP_LINK /* link(2) (io_link); path: the new name. EXDEV makes the caller copy instead */
} io_op;

/* A fault hook returns 0 to let the operation proceed, or an errno value to
 * make it fail with that error (nothing is done). For IO_OP_WRITE it may also
 * return -n (n > 0) to perform a short write of n bytes followed by ENOSPC. */
typedef int (*io_fault_hook)(io_op op, const char *path, size_t len, void *arg);

/* io_set_fault_hook -- installs (or with NULL removes) the process-wide hook. */
void io_set_fault_hook(io_fault_hook hook, void *arg);
/* io_fault_check -- asks the hook about an operation made outside this layer
 * (emul/'s msync and fallocate of the pool file): 0 = proceed, else the
 * errno value it is to fail with. 0 without a hook. */
int io_fault_check(io_op op, const char *path, size_t len);

/* io_open_append -- creates/truncates `path` for appending (O_CREAT|O_TRUNC
 * unless `keep` is set, in which case it appends after existing data). */
int io_open_append(const char *path, int keep, io_class cls, io_stats *st, io_file **out);
/* io_open_read -- opens an existing file for positional reads. */
int io_open_read(const char *path, io_class cls, io_stats *st, io_file **out);
/* io_open_append_ex / io_open_read_ex -- the same with IO_* flags. IO_DIRECT
 * with `keep`, and IO_OVERWRITE with `keep` or IO_DIRECT, are TKV_INVALID. A filesystem that refuses O_DIRECT gives
 * TKV_INVALID naming the file (see io_probe_direct). */
int io_open_append_ex(const char *path, int keep, unsigned flags, io_class cls, io_stats *st, io_file **out);
int io_open_read_ex(const char *path, unsigned flags, io_class cls, io_stats *st, io_file **out);
/* io_probe_direct -- 0 if files in `dir` can be opened with O_DIRECT, else
 * TKV_INVALID with a message (creates and removes a probe file). */
int io_probe_direct(const char *dir);
/* io_append -- writes all n bytes at the end; a short write is an error. */
int io_append(io_file *f, const void *p, size_t n);
/* io_pread -- reads up to n bytes at off into buf; *got is the count (less
 * than n only at end of file). */
int io_pread(io_file *f, uint64_t off, void *buf, size_t n, size_t *got);
/* io_set_readahead -- io_pread of f then reads `bytes` (rounded up to
 * IO_DIRECT_ALIGN) at a time from the aligned offset at or below the one
 * asked for, and serves later reads inside that window from memory; 0 turns
 * it off. For sequential scans such as compaction inputs: one large I/O
 * instead of one per 4 KiB block (with O_DIRECT there is no kernel
 * readahead). Windows stop at the file's size when this is called: for
 * files that no longer grow (SSTs). The gate is charged for what is read
 * from the file. Not thread-safe: only for a file a single thread reads. */
int io_set_readahead(io_file *f, size_t bytes);
/* io_sync -- fdatasync. */
int io_sync(io_file *f);

/* io_preallocate -- reserves blocks for bytes [f->size, f->size + len) of an
 * append file without changing its size (fallocate FALLOC_FL_KEEP_SIZE), so
 * that appends into them need no block allocation while write-back of the
 * same file runs (ext4's delayed allocation takes the inode's block-map lock
 * for each new block, and write-back holds it while it allocates). Returns
 * the failure (fault hook IO_OP_FALLOCATE) for the caller to ignore: a file
 * system without fallocate still works, only without the reservation. */
int io_preallocate(io_file *f, uint64_t len);

/* io_map_appends -- for a file opened with IO_MAPPED whose stats have a
 * wmap, after io_preallocate reserved `len` bytes past its size: extends the
 * file to the end of the reservation (rounded up to a page) and maps it, so
 * that later appends into pages the helper has made are stores (wmap.h).
 * After a crash the file ends in zeros up to there (replay reads them as a
 * torn tail, docs/format-wal.md). A file already that long (a recycled WAL
 * that kept its length, io_keep_reserved) is mapped as it is: nothing is
 * cut. 0 without IO_MAPPED, a wmap or when already
 * mapped; else best effort: the failure for the caller to ignore (the file
 * is then left as it was and appends use pwrite). */
int io_map_appends(io_file *f, uint64_t len);

/* io_extend_reserved -- for a buffered append file that is not mapped,
 * after io_preallocate reserved `len` bytes past its size: makes the
 * reservation part of the file (its size on disk becomes size + len, zeros
 * past the appended bytes), so that an fdatasync of later appends finds no
 * file size to write (ext4: a synced 1 KiB append 204 -> 177 us on the
 * project's VM). After a crash the file ends in zeros (a torn tail, as a
 * mapped log's). io_release_reserved or io_close cut it back to `size`.
 * 0 when mapped, direct or already longer; else best effort: the failure
 * for the caller to ignore. */
int io_extend_reserved(io_file *f, uint64_t len);

/* io_release_reserved -- gives back the blocks io_preallocate reserved past
 * the file's size, up to offset `end` (a hole punched with the size kept;
 * ftruncate to the same size does not free them on every file system).
 * A WAL with a write-back thread (io_stats.wb) has it done there, later
 * (io_wb_release; done inline if the queue is full): the file must get no
 * more appends. Best effort: returns the failure for the caller to ignore. */
int io_release_reserved(io_file *f, uint64_t end);
/* io_keep_reserved -- the other end of a reservation, for a file that will
 * be written again from its start (a WAL kept for recycling): no more
 * appends (the mapping ends, wmap.h), and the file keeps its length and its
 * blocks at close instead of being cut back to `size`. Its next reservation
 * then finds the blocks allocated and nothing to free, extend or discard. */
void io_keep_reserved(io_file *f);
/* io_file_size -- current size via fstat. */
int io_file_size(io_file *f, uint64_t *size);
/* io_close -- closes and frees; NULL is a no-op. Returns close()'s error. */
int io_close(io_file *f);

/* io_read_file -- reads a whole small file into a malloc'd buffer. */
int io_read_file(const char *path, io_class cls, io_stats *st, uint8_t **data, size_t *len);
/* io_write_file_atomic -- writes data to path via path.tmp + fsync + rename +
 * directory fsync: after a crash `path` holds either the old or new content. */
int io_write_file_atomic(const char *dir, const char *name, const void *data, size_t len, io_stats *st);
/* io_remove -- unlink; ENOENT is not an error. */
int io_remove(const char *path);
/* io_rename -- rename(2) (not synced: callers that need it durable sync the directory). */
int io_rename(const char *from, const char *to);
/* io_rename_noreplace -- renames `from` (a file or a directory) to `to`
 * unless `to` exists: then TKV_INVALID ("... already exists") and nothing
 * changes (renameat2 RENAME_NOREPLACE; where the file system does not
 * support it, a check for `to` then rename(2), which a directory made at
 * `to` in between could still lose to). Not synced. */
int io_rename_noreplace(const char *from, const char *to);
/* io_link -- a hard link `to` of the file `from` (not synced: sync the
 * directory). IO_LINK_UNSUPPORTED (> 0, nothing done, no error message) when
 * the file system cannot link them -- another file system (EXDEV), no hard
 * links (EPERM, EOPNOTSUPP, ENOSYS) or too many links (EMLINK) -- for the
 * caller to copy the file instead; else 0 or an error. */
#define IO_LINK_UNSUPPORTED 1
int io_link(const char *from, const char *to);
/* io_sync_dir -- fsync a directory so that creates/renames/unlinks persist. */
int io_sync_dir(const char *dir);

#endif
