// SPDX-License-Identifier: Apache-2.0
/*
 * wal.c -- the write-ahead log writer and its crash-recovery reader
 * (format and recovery rules: docs/format-wal.md).
 *
 * Invariants the writer keeps:
 *  (1) The file is the header followed by whole records, except possibly for
 *      the bytes of the one append in progress (or of a failed one, after which
 *      the writer is poisoned and never appends again).
 *  (2) A record's checksum covers its length field and its payload, so a record
 *      cut short by a crash either extends past end of file or (if the file
 *      system zero-filled or garbled the tail) fails its checksum: it is never
 *      accepted with missing bytes. Through a mapping (wal_mmap) a record's 8
 *      header bytes are stored before its payload (io_wmap_store), so a
 *      process killed mid-record leaves zeros past the record's declared end:
 *      a torn tail, not a bad record followed by data.
 *  (3) Nothing is durable before wal_sync; wal_sync makes the header and every
 *      record added before it durable (one fdatasync).
 *  (4) Versions 2 and 3: the header's frontier slot is rewritten only after an
 *      fdatasync succeeded and only with the size that fdatasync covered, so
 *      on disk it never claims more than was synced. It may claim less: it
 *      is rewritten once it is WAL_FRONTIER_STEP behind (and at close), and
 *      the slot itself becomes durable with the next sync. The frontier lies
 *      on a record boundary and only grows.
 *  (5) Version 3 (a recycled log, wal_writer_recycle): records are written
 *      from offset 64 over the bytes of an older log, and each record's
 *      checksum is seeded with this log's number, so no record left from
 *      an earlier log in the same file can pass for one of this log's.
 *
 * The reader classifies the first record that is not intact:
 *  - version 2, at an offset below the synced frontier        -> TKV_CORRUPTION
 *  - header or payload extends past EOF                   -> torn tail (dropped)
 *  - checksum fails, only zero bytes after its declared end -> torn tail (dropped)
 *  - checksum fails, non-zero bytes after its declared end  -> TKV_CORRUPTION
 *    (version 1), a torn tail with a hole (version 2: past the frontier,
 *    unsynced pages that reached the disk out of order)
 *  - version 3, at or past the frontier, whatever follows -> the end of the
 *    log (torn tail): the bytes after it may be an older log's
 * "Only zero bytes after its declared end" includes the record that ends
 * exactly at EOF, and an all-zero region from the record's start (an all-zero
 * record header never passes: tkv_checksum of four zero bytes is not 0, which
 * tests/test_wal.c checks).
 */
#include "mem/wal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/checksum.h"
#include "util/coding.h"
#include "util/status.h"

/* The 8 magic bytes at offset 0. */
static const uint8_t wal_magic[8] = {'T', 'K', 'V', 'W', 'A', 'L', 0x00, 0x01};

/* Payloads up to this size are copied behind their header and written with one
 * write(); larger ones are written in two appends without copying. */
#define WAL_COPY_MAX (256u * 1024u)

/* Replay reads the file in chunks of this size (plus a whole record when one is
 * larger). */
#define WAL_READ_CHUNK (1u << 20)

struct wal_writer {
    io_file *f;
    uint8_t *buf;           /* framing buffer: record header + a copy of a small payload */
    size_t cap;             /* bytes allocated at buf (<= WAL_RECORD_HEADER + WAL_COPY_MAX) */
    int err;                /* 0, or the code that poisoned the writer (see wal.h) */
    char errmsg[256];       /* the message of the failure that poisoned it */
    uint64_t synced;        /* the file's size at the last successful wal_sync */
    uint64_t reserved_end;  /* blocks are reserved up to this offset (wal_writer_reserve) */
    int keep_reserved;      /* at close the file keeps its reserved length (wal_writer_keep_reserved) */
    uint32_t version;       /* WAL_V1, WAL_V2 or WAL_V3 */
    uint64_t seed;          /* version 3: the log's number, the seed of its record checksums (else 0) */
    int ever_synced;        /* a wal_sync succeeded (the header is durable) */
    uint64_t frontier;      /* version 2: the frontier last written into the header slot */
    uint64_t frontier_step; /* version 2: rewrite the slot once the synced size is this far past it */
};

/* The step new writers take (wal_set_frontier_step). */
static uint64_t frontier_step = WAL_FRONTIER_STEP;

void wal_set_frontier_step(uint64_t bytes) { __atomic_store_n(&frontier_step, bytes, __ATOMIC_RELAXED); }

/* record_checksum -- tkv_checksum over the 4 length bytes followed by the
 * payload, without making them contiguous (XXH3 streaming gives the same value
 * as one-shot XXH3 over the concatenation); seeded with `seed` when it is
 * not 0 (version 3: the log's number). */
static uint32_t record_checksum(const uint8_t *len4, const void *payload, size_t n, uint64_t seed)
{
    XXH3_state_t s;
    memset(&s, 0, sizeof s); /* (gcc cannot see that the reset sets every field it reads) */
    XXH3_64bits_reset_withSeed(&s, seed);
    XXH3_64bits_update(&s, len4, 4);
    if (n) XXH3_64bits_update(&s, payload, n);
    return (uint32_t)XXH3_64bits_digest(&s);
}

/* encode_header -- the first 16 bytes of either version's header. */
static void encode_header(uint8_t h[WAL_HEADER_SIZE], uint32_t version)
{
    memcpy(h, wal_magic, sizeof wal_magic);
    enc_u32(h + 8, version);
    enc_u32(h + 12, tkv_checksum(h, 12));
}

/* encode_frontier -- the 12-byte frontier slot: u64 frontier | u32 checksum of those 8 bytes. */
static void encode_frontier(uint8_t slot[12], uint64_t frontier)
{
    enc_u64(slot, frontier);
    enc_u32(slot + 8, tkv_checksum(slot, 8));
}

/* framed_checksum -- record_checksum of a framed record: the length at
 * rec[4..8) and the payload right behind it. */
static uint32_t framed_checksum(const uint8_t *rec, size_t n, uint64_t seed)
{
    return seed ? (uint32_t)tkv_hash64(rec + 4, 4 + n, seed) : tkv_checksum(rec + 4, 4 + n);
}

/* encode_header_v2 -- the 64-byte header of version 2 or 3 (the same
 * layout), frontier 0. */
static void encode_header_v2(uint8_t h[WAL_V2_HEADER_SIZE], uint32_t version, uint64_t number, uint64_t prev_number,
                             uint64_t prev_size)
{
    memset(h, 0, WAL_V2_HEADER_SIZE);
    encode_header(h, version);
    enc_u64(h + 16, number);
    enc_u64(h + 24, prev_number);
    enc_u64(h + 32, prev_size);
    enc_u32(h + 40, tkv_checksum(h, 40));
    encode_frontier(h + WAL_V2_FRONTIER_OFF, 0);
}

/* close_keep_error -- closes f (NULL ok) on an error path without letting a
 * close failure overwrite the message of the error being returned. */
static void close_keep_error(io_file *f)
{
    if (!f) return;
    tkv_errmsg_saved saved;
    tkv_errmsg_save(&saved);
    if (io_close(f) < 0) tkv_errmsg_restore(&saved);
}

/* ---------------------------------------------------------------- writer */

/* writer_open -- creates/truncates path (with IO_OVERWRITE in `flags`:
 * opens the existing file to write it from offset 0) and appends the
 * header h[0..n). */
static int writer_open(const char *path, io_stats *st, const uint8_t *h, size_t n, uint32_t version, unsigned flags,
                       wal_writer **out)
{
    if (!out) return tkv_err(TKV_INVALID, "wal_writer_open: NULL out");
    *out = NULL;
    if (!path) return tkv_err(TKV_INVALID, "wal_writer_open: NULL path");
    wal_writer *w = calloc(1, sizeof *w);
    if (!w) return tkv_err(TKV_NO_MEMORY, "out of memory opening WAL %s", path);
    w->version = version;
    w->frontier_step = __atomic_load_n(&frontier_step, __ATOMIC_RELAXED);
    int rc = io_open_append_ex(path, 0, flags | (st && st->wmap ? IO_MAPPED : 0), IO_WAL, st, &w->f);
    if (rc == 0) rc = io_append(w->f, h, n);
    if (rc < 0) {
        /* A partial header is harmless: replay reads a short file as an empty
         * log. Keep the first error's message (close errors are ignored). */
        close_keep_error(w->f);
        free(w);
        return rc;
    }
    *out = w;
    return 0;
}

int wal_writer_open(const char *path, io_stats *st, uint64_t number, uint64_t prev_number, uint64_t prev_size,
                    wal_writer **out)
{
    uint8_t h[WAL_V2_HEADER_SIZE];
    encode_header_v2(h, WAL_V2, number, prev_number, prev_size);
    return writer_open(path, st, h, sizeof h, WAL_V2, 0, out);
}

int wal_writer_recycle(const char *old_path, const char *path, io_stats *st, uint64_t number, uint64_t prev_number,
                       uint64_t prev_size, wal_writer **out)
{
    if (!out) return tkv_err(TKV_INVALID, "wal_writer_recycle: NULL out");
    *out = NULL;
    if (!old_path || !path || !number) return tkv_err(TKV_INVALID, "wal_writer_recycle: NULL path or log number 0");
    TKV_TRY(io_rename(old_path, path));
    uint8_t h[WAL_V2_HEADER_SIZE];
    encode_header_v2(h, WAL_V3, number, prev_number, prev_size);
    TKV_TRY(writer_open(path, st, h, sizeof h, WAL_V3, IO_OVERWRITE, out));
    wal_writer *w = *out;
    w->seed = number;
    /* Its blocks are written already: appends overwrite them, and at close
     * what this log did not reach (an older log's records) is cut off. */
    uint64_t old_size = 0;
    tkv_errmsg_saved saved;
    tkv_errmsg_save(&saved);
    if (io_file_size(w->f, &old_size) == 0) w->reserved_end = old_size;
    tkv_errmsg_restore(&saved);
    return 0;
}

int wal_writer_open_v1(const char *path, io_stats *st, wal_writer **out)
{
    uint8_t h[WAL_HEADER_SIZE];
    encode_header(h, WAL_V1);
    return writer_open(path, st, h, sizeof h, WAL_V1, 0, out);
}

void wal_writer_keep_reserved(wal_writer *w, int keep)
{
    if (w) w->keep_reserved = keep != 0;
}

void wal_writer_reserve(wal_writer *w, uint64_t bytes)
{
    if (!w || !bytes) return;
    tkv_errmsg_saved saved;
    tkv_errmsg_save(&saved);
    /* A recycled file that kept its length at close has the blocks: a
     * fallocate over them took 0.5-3 ms under the database mutex on ext4
     * (65 ms when it met a journal commit) and reserved nothing new. */
    int have = w->f->size + bytes <= w->reserved_end;
    if (have || io_preallocate(w->f, bytes) == 0) {
        if (!have) w->reserved_end = w->f->size + bytes;
        (void)io_map_appends(w->f, bytes); /* only into reserved blocks (io/wmap.h) */
        /* not mapped: the file as long as the reservation all the same, so
         * that a sync has no size to write (not the MANIFEST's version 1) */
        if (w->version != WAL_V1) (void)io_extend_reserved(w->f, bytes);
    }
    tkv_errmsg_restore(&saved);
}

/* wal_poison -- the writer refuses every later call with rc, repeating this
 * failure's message (it names the system's error), whichever thread asks. */
static void wal_poison(wal_writer *w, int rc)
{
    w->err = rc;
    snprintf(w->errmsg, sizeof w->errmsg, "%s", tkv_errmsg());
}

/* wal_add_record -- appends one record (see wal.h for the failure semantics). */
int wal_add_record(wal_writer *w, const void *payload, size_t n)
{
    if (!w) return tkv_err(TKV_INVALID, "wal_add_record: NULL writer");
    if (w->err)
        return tkv_err(w->err, "WAL %s is unusable after an earlier failed write or sync: %s", w->f->path, w->errmsg);
    if (n > WAL_MAX_PAYLOAD)
        return tkv_err(TKV_INVALID, "WAL %s: record payload of %zu bytes exceeds the %u-byte maximum", w->f->path, n,
                       (unsigned)WAL_MAX_PAYLOAD);
    if (!payload && n) return tkv_err(TKV_INVALID, "WAL %s: NULL payload of %zu bytes", w->f->path, n);

    uint64_t before = w->f->size;
    int rc;
    if (n <= WAL_COPY_MAX) {
        /* One write: [checksum][length][payload] built in the framing buffer. */
        size_t need = WAL_RECORD_HEADER + n;
        if (need > w->cap) {
            size_t cap = w->cap ? w->cap : 4096;
            while (cap < need) cap *= 2;
            if (cap > WAL_RECORD_HEADER + WAL_COPY_MAX) cap = WAL_RECORD_HEADER + WAL_COPY_MAX;
            uint8_t *b = realloc(w->buf, cap);
            if (!b) return tkv_err(TKV_NO_MEMORY, "out of memory framing a %zu-byte WAL record", n);
            w->buf = b;
            w->cap = cap;
        }
        enc_u32(w->buf + 4, (uint32_t)n);
        if (n) memcpy(w->buf + WAL_RECORD_HEADER, payload, n);
        enc_u32(w->buf, framed_checksum(w->buf, n, w->seed));
        rc = io_append(w->f, w->buf, need);
    } else {
        /* Two writes, header first: if only the header (or part of the
         * payload) lands, the record extends past EOF or fails its checksum. */
        uint8_t hdr[WAL_RECORD_HEADER];
        enc_u32(hdr + 4, (uint32_t)n);
        enc_u32(hdr, record_checksum(hdr + 4, payload, n, w->seed));
        rc = io_append(w->f, hdr, sizeof hdr);
        if (rc == 0) rc = io_append(w->f, payload, n);
    }
    /* Invariant (1): once part of a record is in the file, never append again. */
    if (rc < 0 && w->f->size != before) wal_poison(w, rc);
    return rc;
}

/* write_frontier -- (version 2) the synced size into the header slot if it
 * is at least `step` past the stored frontier; best effort, the caller's
 * message kept (invariant 4; wal.h wal_sync). The fault hook may fail it. */
static void write_frontier(wal_writer *w, uint64_t step)
{
    if (w->version == WAL_V1 || w->err || w->synced <= w->frontier || w->synced - w->frontier < step) return;
    if (w->f->flags & IO_DIRECT) return; /* (WALs are buffered: a 12-byte pwrite could not be direct) */
    uint8_t slot[12];
    encode_frontier(slot, w->synced);
    tkv_errmsg_saved saved;
    tkv_errmsg_save(&saved);
    if (io_fault_check(IO_OP_WRITE, w->f->path, sizeof slot) == 0) {
        ssize_t k;
        do k = pwrite(w->f->fd, slot, sizeof slot, WAL_V2_FRONTIER_OFF);
        while (k < 0 && errno == EINTR);
        if (k == (ssize_t)sizeof slot) w->frontier = w->synced;
    }
    tkv_errmsg_restore(&saved);
}

/* sync_parent_dir -- fsync of the directory that holds path. */
static int sync_parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash) return io_sync_dir(".");
    if (slash == path) return io_sync_dir("/");
    char *dir = strndup(path, (size_t)(slash - path));
    if (!dir) return tkv_err(TKV_NO_MEMORY, "out of memory syncing the directory of %s", path);
    int rc = io_sync_dir(dir);
    free(dir);
    return rc;
}

/* wal_sync -- fdatasync; a failure poisons the writer. Version 2: the
 * first sync also makes the log's name durable, and every one moves the
 * frontier. */
int wal_sync(wal_writer *w)
{
    if (!w) return tkv_err(TKV_INVALID, "wal_sync: NULL writer");
    if (w->err)
        return tkv_err(w->err, "WAL %s is unusable after an earlier failed write or sync: %s", w->f->path, w->errmsg);
    int rc = io_sync(w->f);
    if (rc == 0 && w->version != WAL_V1 && !w->ever_synced) rc = sync_parent_dir(w->f->path);
    if (rc < 0) {
        wal_poison(w, rc);
        return rc;
    }
    w->synced = w->f->size;
    w->ever_synced = 1;
    write_frontier(w, w->frontier_step ? w->frontier_step : 1);
    return 0;
}

/* wal_unsynced -- never synced, or records appended since the last sync. */
int wal_unsynced(const wal_writer *w) { return !w->ever_synced || w->f->size > w->synced; }

uint64_t wal_size(const wal_writer *w) { return w ? w->f->size : 0; }

/* wal_writer_close -- closes without syncing and frees. */
int wal_writer_close(wal_writer *w)
{
    if (!w) return 0;
    write_frontier(w, 1); /* whatever the step: the last sync's size */
    if (w->reserved_end > w->f->size && w->keep_reserved) {
        io_keep_reserved(w->f);                /* the file may be recycled: its blocks stay for the next log */
    } else if (w->reserved_end > w->f->size) { /* what the log did not use goes back (best effort) */
        tkv_errmsg_saved saved;
        tkv_errmsg_save(&saved);
        (void)io_release_reserved(w->f, w->reserved_end);
        tkv_errmsg_restore(&saved);
    }
    int rc = io_close(w->f);
    free(w->buf);
    free(w);
    return rc;
}

/* ---------------------------------------------------------------- reader */

/* A forward-only window over the file: buf[0..len) holds file bytes
 * [base, base + len). Grows to the largest record (+ header) met. */
typedef struct wal_reader {
    io_file *f;
    const char *path;
    uint64_t fsize; /* sampled once at open: replay never reads past it */
    uint8_t *buf;
    size_t cap;
    uint64_t base;
    size_t len;
} wal_reader;

/* rd_get -- makes file bytes [off, off + n) contiguous in the window and points
 * *p at them. The caller guarantees off + n <= fsize and off >= every earlier
 * off (bytes before off are discarded). */
static int rd_get(wal_reader *r, uint64_t off, size_t n, const uint8_t **p)
{
    if (off >= r->base && off + n <= r->base + r->len) {
        *p = r->buf + (off - r->base);
        return 0;
    }
    size_t keep = 0;
    if (off >= r->base && off < r->base + r->len) {
        keep = (size_t)(r->base + r->len - off);
        memmove(r->buf, r->buf + (off - r->base), keep);
    }
    r->base = off;
    r->len = keep;
    /* Read what is missing plus up to one chunk of read-ahead. */
    size_t want = n > WAL_READ_CHUNK ? n : WAL_READ_CHUNK;
    if (want > r->cap) {
        uint8_t *b = realloc(r->buf, want);
        if (!b) return tkv_err(TKV_NO_MEMORY, "out of memory reading a %zu-byte record of WAL %s", n, r->path);
        r->buf = b;
        r->cap = want;
    }
    /* keep < n <= want <= cap: we only get here when the window lacks bytes. */
    uint64_t left = r->fsize - (off + keep);
    size_t toread = want - keep;
    if (toread > left) toread = (size_t)left;
    if (toread) {
        size_t got = 0;
        TKV_TRY(io_pread(r->f, off + keep, r->buf + keep, toread, &got));
        r->len += got;
    }
    if (r->len < n)
        return tkv_err(TKV_IO_ERROR, "WAL %s shrank during replay (expected %llu bytes, end at %llu)", r->path,
                       (unsigned long long)r->fsize, (unsigned long long)(r->base + r->len));
    *p = r->buf;
    return 0;
}

/* all_zero -- 1 if p[0..n) are all zero bytes. */
static int all_zero(const uint8_t *p, size_t n) { return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0); }

/* rd_first_nonzero -- *at = offset of the first non-zero byte in [off, limit)
 * (limit <= fsize), or limit if there is none. Reads chunk by chunk. */
static int rd_first_nonzero(wal_reader *r, uint64_t off, uint64_t limit, uint64_t *at)
{
    while (off < limit) {
        uint64_t left = limit - off;
        size_t n = left < WAL_READ_CHUNK ? (size_t)left : WAL_READ_CHUNK;
        const uint8_t *p;
        TKV_TRY(rd_get(r, off, n, &p));
        if (!all_zero(p, n)) {
            size_t i = 0;
            while (p[i] == 0) i++;
            *at = off + i;
            return 0;
        }
        off += n;
    }
    *at = limit;
    return 0;
}

/* check_header -- 1 if the file is an empty log (short or all-zero first 16
 * bytes, or a version-2 header cut by EOF), 0 if the header is valid (its
 * fields into s), or TKV_CORRUPTION. */
static int check_header(wal_reader *r, wal_replay_stats *s)
{
    if (r->fsize < WAL_HEADER_SIZE) return 1;
    const uint8_t *h;
    TKV_TRY(rd_get(r, 0, WAL_HEADER_SIZE, &h));
    if (all_zero(h, WAL_HEADER_SIZE)) return 1;
    if (memcmp(h, wal_magic, sizeof wal_magic) != 0)
        return tkv_err(TKV_CORRUPTION, "WAL %s: bad magic in file header (not a tierkv WAL)", r->path);
    uint32_t want = dec_u32(h + 12), got = tkv_checksum(h, 12);
    if (want != got)
        return tkv_err(TKV_CORRUPTION, "WAL %s: file header checksum mismatch (stored %08x, computed %08x)", r->path,
                       want, got);
    uint32_t version = dec_u32(h + 8);
    if (version != WAL_V1 && version != WAL_V2 && version != WAL_V3)
        return tkv_err(TKV_CORRUPTION, "WAL %s: unsupported format version %u (this build reads 1, 2 and 3)", r->path,
                       version);
    if (version == WAL_V1) {
        s->version = WAL_V1;
        return 0;
    }
    if (r->fsize < WAL_V2_HEADER_SIZE) return 1; /* the create's one write cut short: nothing was synced */
    TKV_TRY(rd_get(r, 0, WAL_V2_HEADER_SIZE, &h));
    want = dec_u32(h + 40), got = tkv_checksum(h, 40);
    if (want != got)
        return tkv_err(TKV_CORRUPTION, "WAL %s: version %u header checksum mismatch (stored %08x, computed %08x)",
                       r->path, version, want, got);
    s->version = version;
    s->log_number = dec_u64(h + 16);
    s->prev_number = dec_u64(h + 24);
    s->prev_size = dec_u64(h + 32);
    const uint8_t *slot = h + WAL_V2_FRONTIER_OFF;
    if (dec_u32(slot + 8) == tkv_checksum(slot, 8)) { /* a bad slot: nothing is known to be synced */
        s->frontier = dec_u64(slot);
        s->frontier_ok = 1;
    }
    return 0;
}

/* bad_record -- the record at off (declared payload length n) is not
 * intact: why is NULL when it is cut by EOF (rules R1, R2), else what is
 * wrong with it. Returns 0 for a torn tail (counted in s) or TKV_CORRUPTION
 * (docs/format-wal.md: below a version-2 log's frontier; R5 in version 1). */
static int bad_record(wal_reader *r, uint64_t off, size_t n, const char *why, wal_replay_stats *s)
{
    if (s->version >= WAL_V2 && off < s->frontier)
        return tkv_err(TKV_CORRUPTION,
                       "WAL %s: record at offset %llu (length %zu) %s, below the synced frontier %llu (file size "
                       "%llu): synced data is damaged",
                       r->path, (unsigned long long)off, n, why ? why : "is cut short by the end of the file",
                       (unsigned long long)s->frontier, (unsigned long long)r->fsize);
    s->torn_tail_records = 1;
    s->torn_tail_bytes = r->fsize - off;
    if (s->version == WAL_V3) return 0; /* the end: what follows may be an older log's (invariant 5) */
    uint64_t end = why ? off + WAL_RECORD_HEADER + n : r->fsize, z = 0, nz = r->fsize;
    TKV_TRY(rd_first_nonzero(r, off, end, &z));                /* the record itself (to EOF when cut by it) */
    if (why) TKV_TRY(rd_first_nonzero(r, end, r->fsize, &nz)); /* what follows its declared end */
    if (nz < r->fsize && s->version != WAL_V2)
        return tkv_err(TKV_CORRUPTION,
                       "WAL %s: record at offset %llu (length %zu) %s and is followed by non-zero data at offset "
                       "%llu (file size %llu): corruption in the middle of the log",
                       r->path, (unsigned long long)off, n, why, (unsigned long long)nz, (unsigned long long)r->fsize);
    s->torn_hole = nz < r->fsize; /* version 2, past the frontier: written back out of order */
    s->torn_zero = z == end && nz == r->fsize;
    return 0;
}

/* replay_records -- the record loop of wal_replay; fills s as it goes. */
static int replay_records(wal_reader *r, wal_record_fn fn, void *arg, wal_replay_stats *s)
{
    int rc = check_header(r, s);
    if (rc < 0) return rc;
    if (rc == 1) {
        s->torn_tail_bytes = r->fsize; /* an empty log: whatever is there is ignored */
        return 0;
    }
    uint64_t off = s->version == WAL_V1 ? WAL_HEADER_SIZE : WAL_V2_HEADER_SIZE;
    uint64_t seed = s->version == WAL_V3 ? s->log_number : 0;
    s->end = off;
    while (off < r->fsize) {
        uint64_t left = r->fsize - off;
        if (left < WAL_RECORD_HEADER) return bad_record(r, off, 0, NULL, s); /* R1 */
        const uint8_t *p;
        TKV_TRY(rd_get(r, off, WAL_RECORD_HEADER, &p));
        uint32_t crc = dec_u32(p);
        size_t n = dec_u32(p + 4);
        if (n > left - WAL_RECORD_HEADER) return bad_record(r, off, n, NULL, s); /* R2 */
        if (n > WAL_MAX_PAYLOAD) return bad_record(r, off, n, "has an impossible length", s);
        TKV_TRY(rd_get(r, off, WAL_RECORD_HEADER + n, &p));
        if (framed_checksum(p, n, seed) != crc) return bad_record(r, off, n, "fails its checksum", s);
        s->records++;
        s->payload_bytes += n;
        s->end = off + WAL_RECORD_HEADER + n;
        if (fn && (rc = fn(arg, p + WAL_RECORD_HEADER, n, off)) != 0) return rc;
        off = s->end;
    }
    if (s->version >= WAL_V2 && off < s->frontier)
        return tkv_err(TKV_CORRUPTION,
                       "WAL %s ends at offset %llu, below its synced frontier %llu: synced data is lost", r->path,
                       (unsigned long long)off, (unsigned long long)s->frontier);
    s->torn_zero = 1; /* nothing ignored */
    return 0;
}

/* read_file -- opens path and reads its header (header_only) or replays it. */
static int read_file(const char *path, io_stats *st, int header_only, wal_record_fn fn, void *arg,
                     wal_replay_stats *out)
{
    wal_replay_stats s;
    memset(&s, 0, sizeof s);
    if (out) *out = s;
    if (!path) return tkv_err(TKV_INVALID, "wal_replay: NULL path");
    wal_reader r = {.path = path};
    int rc = io_open_read(path, IO_META, st, &r.f);
    if (rc < 0) return rc;
    rc = io_file_size(r.f, &r.fsize);
    s.file_size = r.fsize;
    if (rc == 0 && header_only) {
        rc = check_header(&r, &s);
        if (rc == 1) rc = 0; /* an empty log: version 0 */
    } else if (rc == 0) {
        rc = replay_records(&r, fn, arg, &s);
    }
    if (rc == 0) rc = io_close(r.f);
    else close_keep_error(r.f);
    free(r.buf);
    if (out) *out = s;
    return rc;
}

/* wal_replay -- opens path, checks the header and delivers every intact record. */
int wal_replay(const char *path, io_stats *st, wal_record_fn fn, void *arg, wal_replay_stats *out)
{
    return read_file(path, st, 0, fn, arg, out);
}

int wal_read_header(const char *path, io_stats *st, wal_replay_stats *out)
{
    return read_file(path, st, 1, NULL, NULL, out);
}
