// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_wal.c -- fuzz target: a write-ahead log file, replayed as recovery
 * does (wal_replay: header, record framing and checksums, the torn-tail
 * rule), each intact record's payload then checked and walked as a write
 * batch (batch_validate, batch_iterate), as tkv_open's replay does before it
 * inserts the batch. Both format versions: version 1 (R5) and version 2
 * (chain fields, synced frontier, torn holes). Properties: the replay's
 * counts agree with the records delivered and never exceed the file; where
 * the intact records end plus the torn bytes is the file; a version-2 log
 * that replays has its records intact up to its frontier; wal_read_header
 * reports the header replay saw.
 *
 * Input: flags byte, then the WAL file.
 *   FZ_FIX        a valid file header, and every record's checksum
 *                 recomputed (fz_fix_framing)
 *   FZ_V2         with FZ_FIX: a version-2 header instead (fz_fix_framing_v2;
 *                 the input's chain fields and frontier kept)
 *   FZ_KEEP_SLOT  with FZ_V2: the frontier slot's checksum left as it is
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzzutil.h"
#include "mem/batch.h"
#include "mem/wal.h"
#include "util/status.h"

#define FZ_V2        2u
#define FZ_KEEP_SLOT 4u

typedef struct wal_seen {
    uint64_t records, bytes, last_off;
} wal_seen;

static int on_entry(void *arg, uint64_t seq, ikey_type type, tkv_slice key, tkv_slice value)
{
    (void)seq;
    volatile unsigned sink = 0;
    for (size_t i = 0; i < key.n; i++) sink += key.p[i];
    for (size_t i = 0; i < value.n; i++) sink += value.p[i];
    (void)sink;
    fz_check(type == IKEY_VALUE || type == IKEY_DELETION || type == IKEY_RANGE_DELETION, "batch entry with a bad type");
    fz_check(type != IKEY_RANGE_DELETION || ukey_cmp(key, value) < 0, "a range deletion with begin >= end");
    (void)arg;
    return 0;
}

static int on_record(void *arg, const uint8_t *payload, size_t n, uint64_t off)
{
    wal_seen *s = arg;
    fz_check(s->records == 0 || off > s->last_off, "records delivered out of order");
    s->records++;
    s->bytes += n;
    s->last_off = off;
    if (batch_validate(payload, n) == 0) {
        int rc = batch_iterate(payload, n, on_entry, NULL);
        fz_check(rc == 0, "batch_iterate failed on a batch that validated");
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    uint8_t flags = data[0];
    data++, size--;
    uint8_t *f = malloc(size ? size : 1);
    if (!f) return 0;
    memcpy(f, data, size);
    if ((flags & FZ_FIX) && (flags & FZ_V2)) fz_fix_framing_v2(f, size, !(flags & FZ_KEEP_SLOT));
    else if (flags & FZ_FIX) fz_fix_framing(f, size);
    char path[512];
    fz_path(path, sizeof path, "000001.wal");
    fz_write_file(path, f, size, 0);
    free(f);
    wal_seen seen = {0, 0, 0};
    wal_replay_stats st;
    int rc = fz_note("wal_replay", wal_replay(path, NULL, on_record, &seen, &st));
    fz_check(rc == 0 || rc == TKV_CORRUPTION, "wal_replay failed with an unexpected code");
    fz_check(st.records == seen.records && st.payload_bytes == seen.bytes, "replay stats disagree with the records");
    fz_check(st.torn_tail_bytes <= size && st.torn_tail_records <= 1, "replay stats exceed the file");
    fz_check(st.torn_hole <= st.torn_tail_records && st.end <= size && st.file_size == size, "replay stats are off");
    fz_check(st.records == 0 || seen.last_off < st.end, "a record delivered past the intact end");
    if (rc == 0 && st.version) fz_check(st.end + st.torn_tail_bytes == size, "intact end + torn bytes != the file");
    if (rc == 0 && st.version == WAL_V2)
        fz_check(st.end >= st.frontier, "a version-2 log replays short of its frontier");
    wal_replay_stats h;
    int hrc = wal_read_header(path, NULL, &h);
    fz_check(hrc == 0 || hrc == TKV_CORRUPTION, "wal_read_header failed with an unexpected code");
    if (hrc == 0 && rc == 0)
        fz_check(h.version == st.version && h.log_number == st.log_number && h.prev_number == st.prev_number &&
                     h.prev_size == st.prev_size && h.frontier == st.frontier && h.frontier_ok == st.frontier_ok,
                 "wal_read_header and wal_replay disagree on the header");
    return 0;
}
