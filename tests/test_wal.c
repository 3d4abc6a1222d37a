// SPDX-License-Identifier: Apache-2.0
/*
 * test_wal.c -- the write-ahead log: exact on-media bytes, round trips across
 * writer sessions, and every recovery rule of docs/format-wal.md (empty and
 * short logs, torn tails cut at every byte, zero-filled tails, mid-log
 * corruption, bad headers), callback errors, and I/O faults injected through
 * io_set_fault_hook; the same through a mapping (io/wmap.h): model round
 * trips past the mapped length, a writer killed with SIGKILL, faults.
 * Every shared case runs in format version 1 (as the MANIFEST writes it, and
 * database WALs before version 2: they must replay as they always did) and
 * again in version 2 (the _v2 cases); version 2's own: its header bytes and
 * fields, the synced frontier, the directory sync, torn holes past the
 * frontier and corruption below it.
 *
 * Reproducing a failure: the test prints "seed=N"; rerun with TKV_TEST_SEED=N.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <signal.h>
#include <sys/wait.h>

#include "db/recover.h"
#include "io/io.h"
#include "io/wb.h"
#include "io/wmap.h"
#include "mem/wal.h"
#include "util/checksum.h"
#include "testutil.h"
#include "util/coding.h"
#include "util/status.h"

/* ---------------------------------------------------------------- helpers */

/* The format version the shared tests run in (the _v2 cases set it after
 * setup): version 1 (the MANIFEST's, and every database WAL before version
 * 2) or version 2 (the database's WALs). */
static uint32_t g_ver = WAL_V1;

/* open_log -- a writer on path in version g_ver; version 2 as log 7 after
 * log 5 at 1234 bytes. */
static int open_log(const char *path, io_stats *st, wal_writer **w)
{
    return g_ver == WAL_V2 ? wal_writer_open(path, st, 7, 5, 1234, w) : wal_writer_open_v1(path, st, w);
}

/* hdr_size -- where version g_ver's records start. */
static uint64_t hdr_size(void) { return g_ver == WAL_V2 ? WAL_V2_HEADER_SIZE : WAL_HEADER_SIZE; }

typedef struct fixture {
    char dir[64];
} fixture;

/* setup -- a fresh directory per test. */
static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    if (!fx) return -1;
    snprintf(fx->dir, sizeof fx->dir, "/tmp/tkv-wal-XXXXXX");
    if (!mkdtemp(fx->dir)) {
        free(fx);
        return -1;
    }
    *state = fx;
    g_ver = WAL_V1;
    return 0;
}

/* teardown -- removes the hook (a failed test may leave one) and the directory. */
static int teardown(void **state)
{
    fixture *fx = *state;
    io_set_fault_hook(NULL, NULL);
    DIR *d = opendir(fx->dir);
    if (d) {
        struct dirent *e;
        char p[PATH_MAX];
        while ((e = readdir(d)) != NULL) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            snprintf(p, sizeof p, "%s/%s", fx->dir, e->d_name);
            unlink(p);
        }
        closedir(d);
    }
    rmdir(fx->dir);
    free(fx);
    return 0;
}

/* fpath -- dir/name into buf (PATH_MAX bytes). */
static const char *fpath(const fixture *fx, const char *name, char *buf)
{
    snprintf(buf, PATH_MAX, "%s/%s", fx->dir, name);
    return buf;
}

/* test_seed -- TKV_TEST_SEED or a time-based seed, printed once. */
static uint64_t test_seed(void)
{
    static uint64_t seed;
    static int done;
    if (!done) {
        const char *e = getenv("TKV_TEST_SEED");
        seed = e ? strtoull(e, NULL, 0) : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
        printf("seed=%llu\n", (unsigned long long)seed);
        done = 1;
    }
    return seed;
}

/* fill_payload -- the deterministic content of the payload named `id`. */
static void fill_payload(uint8_t *p, size_t n, uint64_t id)
{
    uint64_t x = id * 0x2545f4914f6cdd1dull + 7;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = tu_splitmix64(&x);
        memcpy(p + i, &v, n - i < 8 ? n - i : 8);
    }
}

/* read_all -- the whole file (malloc'd). */
static uint8_t *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)sz + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)sz, f), (size_t)sz);
    fclose(f);
    *len = (size_t)sz;
    return b;
}

/* write_all -- replaces path with data[0..n). */
static void write_all(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (n) assert_int_equal(fwrite(data, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* append_bytes -- appends n copies of byte c to path. */
static void append_bytes(const char *path, int c, size_t n)
{
    FILE *f = fopen(path, "ab");
    assert_non_null(f);
    for (size_t i = 0; i < n; i++) assert_int_not_equal(fputc(c, f), EOF);
    assert_int_equal(fclose(f), 0);
}

/* frontier_at -- the synced frontier stored in path's header slot (fails
 * the test if the slot's checksum is wrong). */
static uint64_t frontier_at(const char *path)
{
    size_t len;
    uint8_t *b = read_all(path, &len);
    assert_true(len >= WAL_V2_HEADER_SIZE);
    assert_int_equal(dec_u32(b + 56), tkv_checksum(b + 48, 8));
    uint64_t f = dec_u64(b + 48);
    free(b);
    return f;
}

/* What a file should replay to: records 0..n-1 with these lengths, payload ids
 * and offsets. The callback checks each record as it arrives. */
typedef struct expect {
    size_t n;
    size_t lens[512];
    uint64_t ids[512];
    uint64_t offs[512];
    size_t seen;
    int bad;
    char why[256];
    int fail_at; /* >= 0: return fail_rc when record fail_at arrives */
    int fail_rc;
    uint8_t *tmp; /* scratch for the expected payload */
    size_t tmpcap;
} expect;

static expect *expect_new(void)
{
    expect *e = calloc(1, sizeof *e);
    assert_non_null(e);
    e->fail_at = -1;
    return e;
}

static void expect_free(expect *e)
{
    if (!e) return;
    free(e->tmp);
    free(e);
}

/* check_record -- the wal_record_fn used by every replay in this file. */
static int check_record(void *arg, const uint8_t *payload, size_t n, uint64_t offset)
{
    expect *e = arg;
    size_t i = e->seen++;
    if (e->fail_at >= 0 && (size_t)e->fail_at == i) return e->fail_rc;
    if (e->bad) return 0;
    if (i >= e->n) {
        e->bad = 1;
        snprintf(e->why, sizeof e->why, "unexpected record %zu (len %zu at offset %llu)", i, n,
                 (unsigned long long)offset);
        return 0;
    }
    if (n != e->lens[i] || offset != e->offs[i]) {
        e->bad = 1;
        snprintf(e->why, sizeof e->why, "record %zu: len %zu at %llu, expected len %zu at %llu", i, n,
                 (unsigned long long)offset, e->lens[i], (unsigned long long)e->offs[i]);
        return 0;
    }
    if (n > e->tmpcap) {
        free(e->tmp);
        e->tmp = malloc(n);
        e->tmpcap = n;
        if (!e->tmp) {
            e->tmpcap = 0;
            e->bad = 1;
            snprintf(e->why, sizeof e->why, "out of memory");
            return 0;
        }
    }
    fill_payload(e->tmp, n, e->ids[i]);
    if (n && memcmp(e->tmp, payload, n) != 0) {
        e->bad = 1;
        snprintf(e->why, sizeof e->why, "record %zu: payload differs", i);
    }
    return 0;
}

/* add_one -- appends payload `id` of n bytes through w and remembers it in e. */
static void add_one(wal_writer *w, expect *e, size_t n, uint64_t id)
{
    uint8_t *p = malloc(n ? n : 1);
    assert_non_null(p);
    fill_payload(p, n, id);
    assert_true(e->n < sizeof e->lens / sizeof e->lens[0]);
    uint64_t before = wal_size(w);
    e->lens[e->n] = n;
    e->ids[e->n] = id;
    e->offs[e->n] = before;
    e->n++;
    int rc = wal_add_record(w, p, n);
    free(p);
    if (rc != 0) fail_msg("wal_add_record(%zu bytes): %d %s", n, rc, tkv_errmsg());
    assert_int_equal(wal_size(w), before + WAL_RECORD_HEADER + n);
}

/* write_file -- a complete WAL at path holding records of these sizes (ids
 * 1000 + i); e describes it. Version 1: synced at the end. Version 2:
 * synced before the last record, which is then added and not synced, so the
 * synced frontier is the last record's offset: damage to the last record is
 * a torn tail as in version 1, damage to an earlier one corruption. */
static void write_file(const char *path, expect *e, const size_t *sizes, size_t k)
{
    wal_writer *w = NULL;
    assert_int_equal(open_log(path, NULL, &w), 0);
    for (size_t i = 0; i < k; i++) {
        if (g_ver == WAL_V2 && i + 1 == k) assert_int_equal(wal_sync(w), 0);
        add_one(w, e, sizes[i], 1000 + i);
    }
    if (g_ver == WAL_V1) assert_int_equal(wal_sync(w), 0);
    assert_int_equal(wal_writer_close(w), 0);
}

/* replay_check -- replays path against e; returns wal_replay's status and
 * fails the test if a delivered record was wrong. */
static int replay_check(const char *path, expect *e, wal_replay_stats *st)
{
    e->seen = 0;
    e->bad = 0;
    int rc = wal_replay(path, NULL, check_record, e, st);
    if (e->bad) fail_msg("%s: %s", path, e->why);
    return rc;
}

/* flip_bit -- flips bit `bit` of the byte at off in path. */
static void flip_bit(const char *path, uint64_t off, int bit)
{
    size_t len;
    uint8_t *b = read_all(path, &len);
    assert_true(off < len);
    b[off] ^= (uint8_t)(1u << bit);
    write_all(path, b, len);
    free(b);
}

/* assert_msg_has -- tkv_errmsg() contains s. */
static void assert_msg_has(const char *s)
{
    if (!strstr(tkv_errmsg(), s)) fail_msg("tkv_errmsg() = \"%s\" lacks \"%s\"", tkv_errmsg(), s);
}

/* ---------------------------------------------------------------- format */

/* What test_format_bytes's replay saw. */
struct fmt_seen {
    int n;
    size_t lens[3];
    uint64_t offs[3];
    uint8_t first[3];
};

static int fmt_record(void *arg, const uint8_t *payload, size_t n, uint64_t offset)
{
    struct fmt_seen *sn = arg;
    if (sn->n >= 3) return TKV_INVALID;
    if (sn->n == 0 && n == 3) memcpy(sn->first, payload, 3);
    if (sn->n == 2) {
        uint8_t *want = malloc(n);
        if (!want) return TKV_NO_MEMORY;
        fill_payload(want, n, 77);
        int same = memcmp(want, payload, n) == 0;
        free(want);
        if (!same) return TKV_INVALID;
    }
    sn->lens[sn->n] = n;
    sn->offs[sn->n] = offset;
    sn->n++;
    return 0;
}

/* test_format_bytes -- the file is exactly what docs/format-wal.md describes,
 * for a small (one-write) and a large (two-write) record, and both checksum
 * paths agree with tkv_checksum over the contiguous bytes. */
static void test_format_bytes(void **state)
{
    fixture *fx = *state;
    char p[PATH_MAX];
    fpath(fx, "fmt.wal", p);
    io_stats st;
    memset(&st, 0, sizeof st);
    wal_writer *w = NULL;
    assert_int_equal(wal_writer_open_v1(p, &st, &w), 0);
    assert_int_equal(wal_size(w), 16);
    assert_int_equal(wal_add_record(w, "abc", 3), 0);
    assert_int_equal(wal_add_record(w, NULL, 0), 0);
    size_t big = 256 * 1024 + 1; /* above the one-write framing limit */
    uint8_t *bp = malloc(big);
    assert_non_null(bp);
    fill_payload(bp, big, 77);
    assert_int_equal(wal_add_record(w, bp, big), 0);
    assert_int_equal(st.syncs[IO_WAL], 0);
    assert_int_equal(wal_sync(w), 0);
    assert_int_equal(st.syncs[IO_WAL], 1);
    uint64_t wsz = wal_size(w);
    assert_int_equal(wal_writer_close(w), 0);

    size_t len;
    uint8_t *raw = read_all(p, &len);
    assert_int_equal(len, 16 + (8 + 3) + 8 + (8 + big));
    assert_int_equal(wsz, len);
    assert_int_equal(st.write_bytes[IO_WAL], len);
    /* header */
    assert_memory_equal(raw, "TKVWAL\0\1", 8);
    static const uint8_t v1[4] = {1, 0, 0, 0};
    assert_memory_equal(raw + 8, v1, 4);
    assert_int_equal(dec_u32(raw + 12), tkv_checksum(raw, 12));
    assert_int_equal(dec_u32(raw + 12), 0x6d6fb33a); /* the example in docs/format-wal.md */
    /* record "abc" at 16: crc | len | payload, crc over len + payload */
    static const uint8_t len3[4] = {3, 0, 0, 0};
    assert_memory_equal(raw + 20, len3, 4);
    assert_memory_equal(raw + 24, "abc", 3);
    assert_int_equal(dec_u32(raw + 16), tkv_checksum(raw + 20, 7));
    assert_int_equal(dec_u32(raw + 16), 0x8c6ebe4c);
    /* empty record at 27 */
    assert_int_equal(dec_u32(raw + 31), 0);
    assert_int_equal(dec_u32(raw + 27), tkv_checksum(raw + 31, 4));
    /* large record at 35 (streamed checksum == one-shot) */
    assert_int_equal(dec_u32(raw + 39), big);
    assert_memory_equal(raw + 43, bp, big);
    assert_int_equal(dec_u32(raw + 35), tkv_checksum(raw + 39, 4 + big));
    /* an all-zero record header never passes: the zero-tail rule relies on it */
    static const uint8_t zero4[4] = {0, 0, 0, 0};
    assert_int_equal(tkv_checksum(zero4, 4), 0x16fc193d);
    free(raw);
    free(bp);

    struct fmt_seen sn = {0, {0}, {0}, {0}};
    wal_replay_stats rs;
    assert_int_equal(wal_replay(p, &st, fmt_record, &sn, &rs), 0);
    assert_int_equal(sn.n, 3);
    assert_int_equal(sn.lens[0], 3);
    assert_memory_equal(sn.first, "abc", 3);
    assert_int_equal(sn.lens[1], 0);
    assert_int_equal(sn.lens[2], big);
    assert_int_equal(sn.offs[0], 16);
    assert_int_equal(sn.offs[1], 27);
    assert_int_equal(sn.offs[2], 35);
    assert_int_equal(rs.records, 3);
    assert_int_equal(rs.payload_bytes, 3 + big);
    assert_int_equal(rs.torn_tail_records, 0);
    assert_int_equal(rs.torn_tail_bytes, 0);
    assert_int_equal(st.read_bytes[IO_META], len);
}

/* ---------------------------------------------------------------- round trip */

/* random_size -- mostly small, sometimes up to 1 MiB, sometimes a boundary. */
static size_t random_size(uint64_t *x)
{
    uint64_t r = tu_splitmix64(x) % 100;
    if (r < 5) {
        static const size_t edge[] = {0, 1, 7, 8, 4096, 256 * 1024, 256 * 1024 + 1, 1 << 20};
        return edge[tu_splitmix64(x) % (sizeof edge / sizeof edge[0])];
    }
    if (r < 60) return (size_t)(tu_splitmix64(x) % 257);
    if (r < 90) return (size_t)(tu_splitmix64(x) % (64 * 1024 + 1));
    return (size_t)(tu_splitmix64(x) % ((1 << 20) + 1));
}

/* test_round_trip_sessions -- several writer sessions (one file each, as the db
 * rotates WALs); every file replays to exactly its records, offsets included;
 * reopening a path truncates it. */
static void test_round_trip_sessions(void **state)
{
    fixture *fx = *state;
    uint64_t x = test_seed();
    enum { SESSIONS = 4 };
    expect *e[SESSIONS];
    char p[SESSIONS][PATH_MAX];
    io_stats st;
    memset(&st, 0, sizeof st);
    uint64_t total_written = 0;
    for (int s = 0; s < SESSIONS; s++) {
        char name[32];
        snprintf(name, sizeof name, "%06d.wal", s);
        fpath(fx, name, p[s]);
        e[s] = expect_new();
        wal_writer *w = NULL;
        assert_int_equal(open_log(p[s], &st, &w), 0);
        size_t nrec = 40 + (size_t)(tu_splitmix64(&x) % 60);
        uint64_t payload = 0;
        for (size_t i = 0; i < nrec; i++) {
            size_t n = random_size(&x);
            add_one(w, e[s], n, ((uint64_t)s << 32) | i);
            payload += n;
            if (tu_splitmix64(&x) % 8 == 0) assert_int_equal(wal_sync(w), 0);
        }
        assert_int_equal(wal_sync(w), 0);
        uint64_t sz = wal_size(w);
        assert_int_equal(wal_writer_close(w), 0);
        assert_int_equal(tu_file_size(p[s]), sz);
        total_written += sz;
        assert_int_equal(st.write_bytes[IO_WAL], total_written);

        /* this session's file and every earlier one still replay exactly */
        for (int t = 0; t <= s; t++) {
            wal_replay_stats rs;
            assert_int_equal(replay_check(p[t], e[t], &rs), 0);
            assert_int_equal(rs.records, e[t]->n);
            assert_int_equal(e[t]->seen, e[t]->n);
            assert_int_equal(rs.torn_tail_records, 0);
            assert_int_equal(rs.torn_tail_bytes, 0);
            if (t == s) assert_int_equal(rs.payload_bytes, payload);
        }
    }
    /* reopening session 0's path starts a new, empty log */
    expect *fresh = expect_new();
    wal_writer *w = NULL;
    assert_int_equal(open_log(p[0], &st, &w), 0);
    add_one(w, fresh, 5, 1);
    add_one(w, fresh, 0, 2);
    assert_int_equal(wal_writer_close(w), 0); /* no sync: still readable by this process */
    wal_replay_stats rs;
    assert_int_equal(replay_check(p[0], fresh, &rs), 0);
    assert_int_equal(rs.records, 2);
    assert_int_equal(fresh->seen, 2);
    expect_free(fresh);
    for (int s = 0; s < SESSIONS; s++) expect_free(e[s]);
}

/* ---------------------------------------------------------------- torn tails */

/* check_cut -- the first `len` bytes of raw, replayed: records 0..keep-1 come
 * back and the rest of the file is counted as a torn tail. */
static void check_cut(const char *path, const uint8_t *raw, size_t len, expect *e, size_t keep, uint64_t torn_from)
{
    write_all(path, raw, len);
    wal_replay_stats rs;
    size_t saved = e->n;
    e->n = keep;
    int rc = replay_check(path, e, &rs);
    e->n = saved;
    if (rc != 0) fail_msg("cut at %zu: rc %d %s", len, rc, tkv_errmsg());
    assert_int_equal(rs.records, keep);
    assert_int_equal(e->seen, keep);
    assert_int_equal(rs.torn_tail_records, len > torn_from ? 1 : 0);
    assert_int_equal(rs.torn_tail_bytes, len > torn_from ? len - torn_from : 0);
}

/* test_torn_tail_every_offset -- the file cut at every byte of its last record
 * (and inside its header) loses only that record. */
static void test_torn_tail_every_offset(void **state)
{
    fixture *fx = *state;
    char p[PATH_MAX], cut[PATH_MAX];
    fpath(fx, "full.wal", p);
    fpath(fx, "cut.wal", cut);
    static const size_t sizes[] = {10, 0, 300, 50, 200};
    expect *e = expect_new();
    write_file(p, e, sizes, 5);
    size_t len;
    uint8_t *raw = read_all(p, &len);
    uint64_t last = e->offs[4];
    for (size_t c = (size_t)last; c < len; c++) check_cut(cut, raw, c, e, 4, last);
    check_cut(cut, raw, len, e, 5, len);
    /* cuts inside the file header: an empty log (crash right after create) */
    for (size_t c = 0; c < hdr_size(); c++) {
        write_all(cut, raw, c);
        wal_replay_stats rs;
        assert_int_equal(wal_replay(cut, NULL, check_record, e, &rs), 0);
        assert_int_equal(rs.records, 0);
        assert_int_equal(rs.torn_tail_records, 0);
        assert_int_equal(rs.torn_tail_bytes, c);
    }
    free(raw);
    expect_free(e);

    /* a last record larger than the replay chunk, cut at chunk-relevant points */
    static const size_t sizes2[] = {1000, (1u << 20) + 4096};
    e = expect_new();
    write_file(p, e, sizes2, 2);
    raw = read_all(p, &len);
    last = e->offs[1];
    const size_t deltas[] = {1, 4, 7, 8, 9, 4096, (1u << 20) - 1, 1u << 20, (1u << 20) + 1};
    for (size_t i = 0; i < sizeof deltas / sizeof deltas[0]; i++)
        check_cut(cut, raw, (size_t)last + deltas[i], e, 1, last);
    check_cut(cut, raw, len - 1, e, 1, last);
    check_cut(cut, raw, len, e, 2, len);
    free(raw);
    expect_free(e);
}

/* test_zero_tail -- zero bytes after the last intact record (a preallocated or
 * zero-extended file after a crash) are a torn tail, not corruption; zeros
 * followed by data are corruption. */
static void test_zero_tail(void **state)
{
    fixture *fx = *state;
    char p[PATH_MAX];
    fpath(fx, "z.wal", p);
    static const size_t sizes[] = {100, 0, 5000};
    expect *e = expect_new();
    write_file(p, e, sizes, 3);
    uint64_t end = tu_file_size(p);
    wal_replay_stats rs;

    append_bytes(p, 0, 4096);
    assert_int_equal(replay_check(p, e, &rs), 0);
    assert_int_equal(rs.records, 3);
    assert_int_equal(rs.torn_tail_records, 1);
    assert_int_equal(rs.torn_tail_bytes, 4096);

    /* fewer zeros than a record header */
    assert_int_equal(truncate(p, (off_t)end + 5), 0);
    assert_int_equal(replay_check(p, e, &rs), 0);
    assert_int_equal(rs.records, 3);
    assert_int_equal(rs.torn_tail_bytes, 5);

    /* zeros spanning several replay chunks */
    assert_int_equal(truncate(p, (off_t)end + 3 * (1 << 20) + 13), 0);
    assert_int_equal(replay_check(p, e, &rs), 0);
    assert_int_equal(rs.records, 3);
    assert_int_equal(rs.torn_tail_records, 1);
    assert_int_equal(rs.torn_tail_bytes, 3 * (1 << 20) + 13);

    /* ... but one non-zero byte after them is data after a bad record:
     * corruption in version 1; in version 2, past the synced frontier, a
     * torn tail with a hole (pages written back out of order) */
    append_bytes(p, 0x5a, 1);
    if (g_ver == WAL_V1) {
        assert_int_equal(replay_check(p, e, &rs), TKV_CORRUPTION);
        assert_int_equal(rs.records, 3);
        char off[64];
        snprintf(off, sizeof off, "offset %llu", (unsigned long long)end);
        assert_msg_has(off);
        assert_msg_has(p);
    } else {
        assert_int_equal(replay_check(p, e, &rs), 0);
        assert_int_equal(rs.records, 3);
        assert_int_equal(rs.torn_tail_records, 1);
        assert_int_equal(rs.torn_hole, 1);
        assert_int_equal(rs.torn_zero, 0);
        assert_int_equal(rs.end, end);
        assert_int_equal(rs.torn_tail_bytes, 3 * (1 << 20) + 13 + 1);
    }

    /* the last record half written (payload tail zero-filled), then zeros */
    assert_int_equal(truncate(p, (off_t)end), 0);
    size_t len;
    uint8_t *raw = read_all(p, &len);
    memset(raw + e->offs[2] + 8 + 2500, 0, 2500);
    write_all(p, raw, len);
    append_bytes(p, 0, 8192);
    assert_int_equal(replay_check(p, e, &rs), 0);
    assert_int_equal(rs.records, 2);
    assert_int_equal(rs.torn_tail_records, 1);
    assert_int_equal(rs.torn_tail_bytes, 8 + 5000 + 8192);
    free(raw);
    expect_free(e);
}

/* ---------------------------------------------------------------- corruption */

/* test_flip_middle -- a flipped bit anywhere in a record that has intact
 * records after it is TKV_CORRUPTION naming the file and the record's offset;
 * the records before it were delivered. */
static void test_flip_middle(void **state)
{
    fixture *fx = *state;
    char p[PATH_MAX];
    fpath(fx, "m.wal", p);
    static const size_t sizes[] = {100, 200, 300, 400, 500};
    expect *e = expect_new();
    write_file(p, e, sizes, 5);
    size_t len;
    uint8_t *orig = read_all(p, &len);
    struct {
        size_t rec;
        uint64_t at; /* byte offset inside the record */
        int bit;
    } cases[] = {
        {2, 8 + 150, 3}, /* payload */
        {2, 8 + 299, 7}, /* last payload byte */
        {2, 1, 0},       /* checksum field */
        {2, 5, 0},       /* length 300 -> 44: ends inside the file, data follows */
        {2, 4, 0},       /* length 300 -> 301 */
        {0, 8, 0},       /* the first record */
        {3, 8 + 399, 1}, /* the one before the last */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_all(p, orig, len);
        uint64_t rec_off = e->offs[cases[i].rec];
        flip_bit(p, rec_off + cases[i].at, cases[i].bit);
        wal_replay_stats rs;
        tkv_err_clear();
        int rc = replay_check(p, e, &rs);
        if (rc != TKV_CORRUPTION) fail_msg("case %zu: rc %d (%s)", i, rc, tkv_errmsg());
        assert_int_equal(rs.records, cases[i].rec);
        assert_int_equal(e->seen, cases[i].rec);
        char off[64];
        snprintf(off, sizeof off, "offset %llu", (unsigned long long)rec_off);
        assert_msg_has(off);
        assert_msg_has(p);
    }
    free(orig);
    expect_free(e);
}

/* test_flip_last -- a flipped bit in the last record is a torn tail. */
static void test_flip_last(void **state)
{
    fixture *fx = *state;
    char p[PATH_MAX];
    fpath(fx, "l.wal", p);
    static const size_t sizes[] = {100, 200, 300, 400, 500};
    expect *e = expect_new();
    write_file(p, e, sizes, 5);
    size_t len;
    uint8_t *orig = read_all(p, &len);
    static const uint64_t at[] = {0, 3, 8, 8 + 250, 8 + 499};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        write_all(p, orig, len);
        flip_bit(p, e->offs[4] + at[i], (int)(i % 8));
        wal_replay_stats rs;
        int rc = replay_check(p, e, &rs);
        if (rc != 0) fail_msg("flip at +%llu: rc %d (%s)", (unsigned long long)at[i], rc, tkv_errmsg());
        assert_int_equal(rs.records, 4);
        assert_int_equal(e->seen, 4);
        assert_int_equal(rs.torn_tail_records, 1);
        assert_int_equal(rs.torn_tail_bytes, 8 + 500);
        /* ... and still a torn tail with zeros after it */
        append_bytes(p, 0, 1000);
        assert_int_equal(replay_check(p, e, &rs), 0);
        assert_int_equal(rs.records, 4);
        assert_int_equal(rs.torn_tail_bytes, 8 + 500 + 1000);
    }
    free(orig);
    expect_free(e);
}

/* test_impossible_length -- a length above 1 GiB: torn when it runs past EOF,
 * corruption when the (sparse) file is long enough and data follows. */
static void test_impossible_length(void **state)
{
    fixture *fx = *state;
    char p[PATH_MAX];
    fpath(fx, "big.wal", p);
    static const size_t sizes[] = {10};
    expect *e = expect_new();
    write_file(p, e, sizes, 1);
    uint64_t end = tu_file_size(p);
    uint8_t hdr[8];
    enc_u32(hdr, 0x12345678);
    enc_u32(hdr + 4, WAL_MAX_PAYLOAD + 1);
    FILE *f = fopen(p, "ab");
    assert_non_null(f);
    assert_int_equal(fwrite(hdr, 1, 8, f), 8);
    assert_int_equal(fclose(f), 0);
    wal_replay_stats rs;
    assert_int_equal(replay_check(p, e, &rs), 0);
    assert_int_equal(rs.records, 1);
    assert_int_equal(rs.torn_tail_bytes, 8);

    /* extend (sparse) past the declared end: zeros after it -> torn */
    uint64_t decl_end = end + 8 + (uint64_t)WAL_MAX_PAYLOAD + 1;
    assert_int_equal(truncate(p, (off_t)(decl_end + 100)), 0);
    assert_int_equal(replay_check(p, e, &rs), 0);
    assert_int_equal(rs.records, 1);
    assert_int_equal(rs.torn_tail_records, 1);
    /* data after the declared end -> corruption (version 2: past the
     * frontier, a torn hole) */
    append_bytes(p, 1, 1);
    if (g_ver == WAL_V2) {
        assert_int_equal(replay_check(p, e, &rs), 0);
        assert_int_equal(rs.records, 1);
        assert_int_equal(rs.torn_hole, 1);
        expect_free(e);
        return;
    }
    assert_int_equal(replay_check(p, e, &rs), TKV_CORRUPTION);
    char off[64];
    snprintf(off, sizeof off, "offset %llu", (unsigned long long)end);
    assert_msg_has(off);
    expect_free(e);
}

/* test_bad_header -- wrong magic, version or checksum is corruption; an
 * all-zero header is an empty log. */
static void test_bad_header(void **state)
{
    fixture *fx = *state;
    char p[PATH_MAX];
    fpath(fx, "h.wal", p);
    static const size_t sizes[] = {10, 20};
    expect *e = expect_new();
    write_file(p, e, sizes, 2);
    size_t len;
    uint8_t *orig = read_all(p, &len);
    uint8_t *b = malloc(len);
    assert_non_null(b);
    wal_replay_stats rs;

    for (int byte = 0; byte < 16; byte++) { /* any flipped header bit */
        memcpy(b, orig, len);
        b[byte] ^= 0x10;
        write_all(p, b, len);
        tkv_err_clear();
        assert_int_equal(replay_check(p, e, &rs), TKV_CORRUPTION);
        assert_int_equal(e->seen, 0);
        assert_msg_has(p);
    }
    /* version 4 with a correct checksum */
    memcpy(b, orig, len);
    enc_u32(b + 8, 4);
    enc_u32(b + 12, tkv_checksum(b, 12));
    write_all(p, b, len);
    assert_int_equal(replay_check(p, e, &rs), TKV_CORRUPTION);
    assert_msg_has("version 4");
    /* version 2 on a version-1 file: the version-2 fields (record bytes) fail their checksum */
    memcpy(b, orig, len);
    enc_u32(b + 8, 2);
    enc_u32(b + 12, tkv_checksum(b, 12));
    write_all(p, b, len);
    append_bytes(p, 0x33, 64); /* at least a version-2 header's length */
    assert_int_equal(replay_check(p, e, &rs), TKV_CORRUPTION);
    assert_msg_has("version 2 header checksum");
    /* one non-zero byte in an otherwise zero header is not "all zero" */
    memset(b, 0, len);
    b[15] = 1;
    write_all(p, b, 16);
    assert_int_equal(replay_check(p, e, &rs), TKV_CORRUPTION);
    /* an all-zero header (the create never reached the disk) */
    memset(b, 0, len);
    write_all(p, b, len);
    assert_int_equal(replay_check(p, e, &rs), 0);
    assert_int_equal(rs.records, 0);
    assert_int_equal(e->seen, 0);
    assert_int_equal(rs.torn_tail_bytes, len);
    free(b);
    free(orig);
    expect_free(e);
}

/* test_empty_and_short -- empty, short and header-only files; bad arguments. */
static void test_empty_and_short(void **state)
{
    fixture *fx = *state;
    char p[PATH_MAX];
    fpath(fx, "e.wal", p);
    wal_replay_stats rs;
    expect *e = expect_new();

    write_all(p, NULL, 0);
    memset(&rs, 0xff, sizeof rs);
    assert_int_equal(replay_check(p, e, &rs), 0);
    assert_int_equal(rs.records, 0);
    assert_int_equal(rs.payload_bytes, 0);
    assert_int_equal(rs.torn_tail_records, 0);
    assert_int_equal(rs.torn_tail_bytes, 0);

    write_all(p, "TKVWAL\0\1\1\0", 10);
    assert_int_equal(replay_check(p, e, &rs), 0);
    assert_int_equal(rs.records, 0);
    assert_int_equal(rs.torn_tail_bytes, 10);

    /* header only: opened, never written (synced or not) */
    wal_writer *w = NULL;
    assert_int_equal(open_log(p, NULL, &w), 0);
    assert_int_equal(wal_writer_close(w), 0);
    assert_int_equal(tu_file_size(p), hdr_size());
    assert_int_equal(replay_check(p, e, &rs), 0);
    assert_int_equal(rs.records, 0);
    assert_int_equal(rs.torn_tail_bytes, 0);
    assert_int_equal(e->seen, 0);
    /* fn and out may be NULL */
    assert_int_equal(wal_replay(p, NULL, NULL, NULL, NULL), 0);

    char missing[PATH_MAX];
    assert_int_equal(wal_replay(fpath(fx, "missing.wal", missing), NULL, NULL, NULL, &rs), TKV_IO_ERROR);
    assert_msg_has("missing.wal");
    assert_int_equal(wal_replay(NULL, NULL, NULL, NULL, &rs), TKV_INVALID);
    expect_free(e);
}

/* test_invalid_args -- misuse is TKV_INVALID and writes nothing. */
static void test_invalid_args(void **state)
{
    fixture *fx = *state;
    char p[PATH_MAX];
    fpath(fx, "i.wal", p);
    wal_writer *w = (wal_writer *)1;
    assert_int_equal(open_log(NULL, NULL, &w), TKV_INVALID);
    assert_null(w);
    assert_int_equal(open_log(p, NULL, NULL), TKV_INVALID);
    assert_int_equal(open_log(p, NULL, &w), 0);
    static const uint8_t one = 1;
    /* the length check comes before the payload is touched */
    assert_int_equal(wal_add_record(w, &one, (size_t)WAL_MAX_PAYLOAD + 1), TKV_INVALID);
    assert_int_equal(wal_add_record(w, NULL, 5), TKV_INVALID);
    assert_int_equal(wal_add_record(NULL, &one, 1), TKV_INVALID);
    assert_int_equal(wal_sync(NULL), TKV_INVALID);
    assert_int_equal(wal_size(w), hdr_size());
    assert_int_equal(wal_add_record(w, &one, 1), 0); /* still usable */
    assert_int_equal(wal_size(w), hdr_size() + 9);
    assert_int_equal(wal_size(NULL), 0);
    assert_int_equal(wal_writer_close(w), 0);
    assert_int_equal(wal_writer_close(NULL), 0);
}

/* test_callback_error -- a non-zero callback return stops replay and is
 * returned unchanged. */
static void test_callback_error(void **state)
{
    fixture *fx = *state;
    char p[PATH_MAX];
    fpath(fx, "cb.wal", p);
    static const size_t sizes[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    expect *e = expect_new();
    write_file(p, e, sizes, 10);
    e->fail_at = 3;
    e->fail_rc = TKV_BUSY;
    wal_replay_stats rs;
    assert_int_equal(replay_check(p, e, &rs), TKV_BUSY);
    assert_int_equal(e->seen, 4);
    assert_int_equal(rs.records, 4);
    e->fail_at = 0;
    e->fail_rc = -1000;
    assert_int_equal(replay_check(p, e, &rs), -1000);
    assert_int_equal(e->seen, 1);
    e->fail_at = -1;
    assert_int_equal(replay_check(p, e, &rs), 0);
    assert_int_equal(e->seen, 10);
    expect_free(e);
}

/* ---------------------------------------------------------------- faults */

static int no_mapping(const fixture *fx, const char *test);

/* fault_open -- a writer on p with stats st; mapped (a reservation) when st has a wmap. */
static int fault_open(const char *p, io_stats *st, wal_writer **w)
{
    int rc = open_log(p, st, w);
    if (rc == 0 && st) wal_writer_reserve(*w, 1u << 20);
    return rc;
}

/* fault_enospc -- ENOSPC on a record's write is TKV_NO_SPACE and leaves the
 * writer usable; a partial write poisons it and replays as a torn tail. */
static void fault_enospc(fixture *fx, io_stats *st)
{
    char p[PATH_MAX];
    fpath(fx, "f.wal", p);
    expect *e = expect_new();
    wal_writer *w = NULL;
    assert_int_equal(fault_open(p, st, &w), 0);
    add_one(w, e, 100, 1);
    add_one(w, e, 200, 2);

    tu_fault f = {IO_OP_WRITE, "f.wal", 0, 1, ENOSPC, 0};
    io_set_fault_hook(tu_fault_hook, &f);
    uint64_t before = wal_size(w);
    uint8_t buf[300];
    fill_payload(buf, sizeof buf, 3);
    tkv_err_clear();
    assert_int_equal(wal_add_record(w, buf, sizeof buf), TKV_NO_SPACE);
    assert_int_equal(f.hits, 1);
    assert_msg_has("f.wal");
    assert_int_equal(wal_size(w), before);
    io_set_fault_hook(NULL, NULL);
    /* nothing was written: the writer is still usable */
    add_one(w, e, 300, 3);
    assert_int_equal(wal_sync(w), 0);

    /* short write of 5 bytes, then ENOSPC: poisoned */
    tu_fault s = {IO_OP_WRITE, "f.wal", 0, 1, -5, 0};
    io_set_fault_hook(tu_fault_hook, &s);
    before = wal_size(w);
    assert_int_equal(wal_add_record(w, buf, 50), TKV_NO_SPACE);
    assert_int_equal(wal_size(w), before + 5);
    io_set_fault_hook(NULL, NULL);
    assert_int_equal(wal_add_record(w, buf, 50), TKV_NO_SPACE);
    assert_msg_has("unusable");
    assert_msg_has(strerror(ENOSPC)); /* the first failure's message, repeated */
    assert_int_equal(wal_sync(w), TKV_NO_SPACE);
    assert_int_equal(wal_size(w), before + 5);
    assert_int_equal(wal_writer_close(w), 0);
    wal_replay_stats rs;
    assert_int_equal(replay_check(p, e, &rs), 0);
    assert_int_equal(rs.records, 3);
    assert_int_equal(e->seen, 3);
    assert_int_equal(rs.torn_tail_records, 1);
    assert_int_equal(rs.torn_tail_bytes, 5);
    expect_free(e);

    /* a large (two-write) record whose payload write fails after its header */
    e = expect_new();
    assert_int_equal(fault_open(p, st, &w), 0);
    add_one(w, e, 10, 1);
    size_t big = 300 * 1024;
    uint8_t *bp = malloc(big);
    assert_non_null(bp);
    fill_payload(bp, big, 9);
    tu_fault g = {IO_OP_WRITE, "f.wal", 1, 1, ENOSPC, 0};
    io_set_fault_hook(tu_fault_hook, &g);
    before = wal_size(w);
    assert_int_equal(wal_add_record(w, bp, big), TKV_NO_SPACE);
    assert_int_equal(g.hits, 1);
    assert_int_equal(wal_size(w), before + 8);
    io_set_fault_hook(NULL, NULL);
    assert_int_equal(wal_add_record(w, bp, 1), TKV_NO_SPACE); /* poisoned */
    assert_int_equal(wal_writer_close(w), 0);
    assert_int_equal(replay_check(p, e, &rs), 0);
    assert_int_equal(rs.records, 1);
    assert_int_equal(rs.torn_tail_records, 1);
    assert_int_equal(rs.torn_tail_bytes, 8);
    free(bp);
    expect_free(e);
}

static void test_fault_enospc(void **state) { fault_enospc(*state, NULL); }

/* test_fault_enospc_mapped -- the same through a mapping: a failed append
 * writes nothing to the mapping either, a short one poisons the writer. */
static void test_fault_enospc_mapped(void **state)
{
    fixture *fx = *state;
    if (no_mapping(fx, "test_fault_enospc_mapped")) return;
    io_stats st;
    memset(&st, 0, sizeof st);
    assert_int_equal(io_wmap_start(&st.wmap, 0), 0);
    fault_enospc(fx, &st);
    io_wmap_stats ms;
    io_wmap_get_stats(st.wmap, &ms);
    assert_int_equal(ms.files, 2);
    assert_true(ms.mapped_bytes > 0);
    io_wmap_stop(st.wmap);
}

/* test_reserve -- wal_writer_reserve gives the log disk blocks beyond its
 * end without changing its records; version 1 keeps the file's size, a
 * version 2 file becomes as long as the reservation (zeros past the log); a failed reservation
 * (fallocate fault) is ignored and keeps the caller's message. */
static void test_reserve(void **state)
{
    fixture *fx = *state;
    char p[PATH_MAX];
    fpath(fx, "r.wal", p);
    expect *e = expect_new();
    wal_writer *w = NULL;
    assert_int_equal(open_log(p, NULL, &w), 0);
    add_one(w, e, 100, 1);
    uint64_t size = wal_size(w);
    const uint64_t reserve = 4u << 20;
    int fd = open(p, O_RDONLY);
    assert_true(fd >= 0);
    /* does this file system reserve at all? (tmpfs and ext4 do) */
    int supported = fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 0) == 0 || errno != EOPNOTSUPP;
    wal_writer_reserve(w, reserve);
    struct stat sb;
    assert_int_equal(fstat(fd, &sb), 0);
    if (g_ver == WAL_V1) assert_int_equal((uint64_t)sb.st_size, size);          /* the size is the log's */
    else if (supported) assert_int_equal((uint64_t)sb.st_size, size + reserve); /* io_extend_reserved */
    if (supported) assert_true((uint64_t)sb.st_blocks * 512 >= reserve);
    else fprintf(stderr, "# test_reserve: the file system has no fallocate; only the ignoring is checked\n");
    close(fd);
    /* a reservation that fails: ignored, message kept */
    tu_fault f = {IO_OP_FALLOCATE, "r.wal", 0, 1, ENOSPC, 0};
    io_set_fault_hook(tu_fault_hook, &f);
    tkv_err(TKV_INVALID, "the caller's message");
    wal_writer_reserve(w, reserve); /* covered by the first: nothing to reserve, no fallocate */
    assert_int_equal(f.hits, 0);
    wal_writer_reserve(w, 2 * reserve); /* past it */
    assert_int_equal(f.hits, 1);
    assert_string_equal(tkv_errmsg(), "the caller's message");
    io_set_fault_hook(NULL, NULL);
    add_one(w, e, 5000, 2);
    add_one(w, e, 300 * 1024, 3);
    assert_int_equal(wal_sync(w), 0);
    size = wal_size(w);
    assert_int_equal(wal_writer_close(w), 0);
    /* closing gives back what the log did not use */
    assert_int_equal(stat(p, &sb), 0);
    assert_int_equal((uint64_t)sb.st_size, size);
    if (supported) assert_true((uint64_t)sb.st_blocks * 512 < size + (1u << 20));
    wal_replay_stats rs;
    assert_int_equal(replay_check(p, e, &rs), 0);
    assert_int_equal(rs.records, 3);
    assert_int_equal(rs.torn_tail_records, 0);
    expect_free(e);
}

/* test_fault_other -- open, header, sync and read faults. */
static void test_fault_other(void **state)
{
    fixture *fx = *state;
    char p[PATH_MAX];
    fpath(fx, "o.wal", p);
    wal_writer *w = (wal_writer *)1;

    tu_fault f = {IO_OP_OPEN, "o.wal", 0, 1, ENOSPC, 0};
    io_set_fault_hook(tu_fault_hook, &f);
    assert_int_equal(open_log(p, NULL, &w), TKV_NO_SPACE);
    assert_null(w);
    /* the header write fails */
    tu_fault h = {IO_OP_WRITE, "o.wal", 0, 1, EIO, 0};
    io_set_fault_hook(tu_fault_hook, &h);
    assert_int_equal(open_log(p, NULL, &w), TKV_IO_ERROR);
    assert_null(w);
    assert_msg_has("o.wal");
    /* a sync failure poisons the writer */
    tu_fault s = {IO_OP_SYNC, "o.wal", 0, 1, EIO, 0};
    io_set_fault_hook(tu_fault_hook, &s);
    assert_int_equal(open_log(p, NULL, &w), 0);
    assert_int_equal(wal_add_record(w, "x", 1), 0);
    assert_int_equal(wal_sync(w), TKV_IO_ERROR);
    assert_int_equal(s.hits, 1);
    assert_int_equal(wal_add_record(w, "y", 1), TKV_IO_ERROR);
    assert_int_equal(wal_sync(w), TKV_IO_ERROR);
    assert_int_equal(s.hits, 1); /* the file was not touched again */
    assert_int_equal(wal_writer_close(w), 0);
    /* a read failure during replay */
    tu_fault r = {IO_OP_READ, "o.wal", 0, 1, EIO, 0};
    io_set_fault_hook(tu_fault_hook, &r);
    wal_replay_stats rs;
    assert_int_equal(wal_replay(p, NULL, NULL, NULL, &rs), TKV_IO_ERROR);
    assert_msg_has("o.wal");
    io_set_fault_hook(NULL, NULL);
    assert_int_equal(wal_replay(p, NULL, NULL, NULL, &rs), 0);
    assert_int_equal(rs.records, 1);
}

/* ---------------------------------------------------------------- mapped appends */

/* mapped_stats -- stats with the mapping helper and, so that write-back runs
 * beside the mapping (io_wmap_clean_upto), the WAL write-back thread. */
static void mapped_stats(io_stats *st, const char *dir)
{
    memset(st, 0, sizeof *st);
    st->wal_bytes_per_sync = 64u << 10;
    assert_int_equal(io_wb_start(&st->wb, dir), 0);
    assert_int_equal(io_wmap_start(&st->wmap, 0), 0);
}

static void mapped_stats_end(io_stats *st)
{
    io_wb_stop(st->wb);
    io_wmap_stop(st->wmap);
}

/* no_mapping -- 1 (and says so) if logs in fx's directory cannot be mapped:
 * its file system reserves no blocks (fallocate), so `test` is skipped. */
static int no_mapping(const fixture *fx, const char *test)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/probe", fx->dir);
    int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    int ok = fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, 4096) == 0;
    close(fd);
    unlink(p);
    if (!ok) fprintf(stderr, "# %s: no fallocate here: logs are not mapped; skipped\n", test);
    return !ok;
}

/* test_mapped_round_trip -- three logs written through mappings, each past
 * its mapped length (the rest by pwrite), one still open while the next is
 * written (as a switched-away log is): the file is as long as the mapping
 * while mapped and as long as the log after close, every byte appended went
 * one of the two ways, and each replays to its model exactly. */
static void test_mapped_round_trip(void **state)
{
    fixture *fx = *state;
    if (no_mapping(fx, "test_mapped_round_trip")) return;
    uint64_t x = test_seed() ^ 0x6d6170;
    io_stats st;
    mapped_stats(&st, fx->dir);
    const uint64_t reserve = 3u << 20, pg = (uint64_t)sysconf(_SC_PAGESIZE);
    enum { LOGS = 3 };
    char p[LOGS][PATH_MAX];
    expect *e[LOGS];
    wal_writer *prev = NULL;
    uint64_t appended = 0;
    for (int l = 0; l < LOGS; l++) {
        char name[32];
        snprintf(name, sizeof name, "%06d.wal", l);
        fpath(fx, name, p[l]);
        e[l] = expect_new();
        wal_writer *w = NULL;
        assert_int_equal(open_log(p[l], &st, &w), 0);
        wal_writer_reserve(w, reserve);
        uint64_t mapped_len = (hdr_size() + reserve + pg - 1) / pg * pg;
        assert_int_equal(tu_file_size(p[l]), mapped_len);
        for (uint64_t id = 1; wal_size(w) < mapped_len + (1u << 20); id++) {
            uint64_t r = tu_splitmix64(&x);
            size_t n = r % 16 == 0 ? 300u * 1024 + (size_t)(r >> 40) % 5000 : (size_t)(r >> 32) % 40000;
            add_one(w, e[l], n, ((uint64_t)l << 32) | id);
            if (r % 13 == 0) {
                assert_int_equal(wal_sync(w), 0);
                /* version 2: the slot's pwrite and the mapping's stores meet in one page cache */
                if (g_ver == WAL_V2) assert_int_equal(frontier_at(p[l]), wal_size(w));
            }
            if (wal_size(w) < mapped_len) assert_int_equal(tu_file_size(p[l]), mapped_len);
        }
        /* past the mapping: once the helper has dropped all of its entries, the next append's
         * write-back step is no longer held below them */
        io_wmap_drain(st.wmap);
        io_wb_stats before, after;
        io_wb_get_stats(st.wb, &before);
        add_one(w, e[l], 200u << 10, ((uint64_t)l << 32) | 0xffffffu); /* > 2 steps of 64 KiB past any sync */
        io_wb_get_stats(st.wb, &after);
        assert_true(after.queued + after.dropped > before.queued + before.dropped);
        appended += wal_size(w) - hdr_size();
        if (prev) assert_int_equal(wal_writer_close(prev), 0);
        prev = w;
    }
    assert_int_equal(wal_writer_close(prev), 0);
    io_wmap_stats ms;
    io_wmap_get_stats(st.wmap, &ms);
    assert_int_equal(ms.files, LOGS);
    assert_int_equal(ms.mapped_bytes + ms.written_bytes, appended);
    assert_true(ms.mapped_bytes > 0); /* how much depends on how far the helper keeps ahead on a busy machine */
    assert_true(ms.written_bytes >= (uint64_t)LOGS << 20); /* past the mapping: pwrite */
    assert_int_equal(ms.failures, 0);
    mapped_stats_end(&st);
    for (int l = 0; l < LOGS; l++) {
        wal_replay_stats rs;
        assert_int_equal(replay_check(p[l], e[l], &rs), 0);
        assert_int_equal(rs.records, e[l]->n);
        assert_int_equal(e[l]->seen, e[l]->n);
        assert_int_equal(rs.torn_tail_records, 0);
        assert_int_equal(rs.torn_tail_bytes, 0);
        assert_int_equal(tu_file_size(p[l]), e[l]->offs[e[l]->n - 1] + 8 + e[l]->lens[e[l]->n - 1]);
        expect_free(e[l]);
    }
}

/* The helper's piece hook (io_wmap_set_piece_hook): pauses the helper once,
 * at the `skip`+1-th call of the wanted kind, until released. */
typedef struct piece_pause {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int want, skip, armed, paused, released;
} piece_pause;

static void piece_pause_hook(void *arg, int in_piece)
{
    piece_pause *pp = arg;
    pthread_mutex_lock(&pp->mu);
    if (pp->armed && in_piece == pp->want && pp->skip-- == 0) {
        pp->armed = 0;
        pp->paused = 1;
        pthread_cond_broadcast(&pp->cv);
        while (!pp->released) pthread_cond_wait(&pp->cv, &pp->mu);
    }
    pthread_mutex_unlock(&pp->mu);
}

typedef struct claim_arg {
    io_wmap_file *m;
    uint64_t end;
    int done; /* atomic */
} claim_arg;

static void *claim_thread(void *arg)
{
    claim_arg *c = arg;
    io_wmap_claim(c->m, c->end);
    __atomic_store_n(&c->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

/* test_mapped_claim_overtakes_helper -- a writer that reaches the end of the
 * made pages while the helper makes a step: between two of the step's pieces
 * it takes the rest of the step at once (no wait) and the helper stops; while
 * a piece is being written it waits for that piece only. Either way the
 * writer's bytes are what the file holds afterwards (the helper never writes
 * zeros over them), checked byte for byte. */
static void test_mapped_claim_overtakes_helper(void **state)
{
    fixture *fx = *state;
    if (no_mapping(fx, "test_mapped_claim_overtakes_helper")) return;
    const uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE), len = 8u << 20, head = pg;
    const uint64_t piece = IO_WMAP_PIECE, data_len = 200u << 10; /* past a piece, inside a step */
    assert_true(IO_WMAP_STEP >= 3 * piece && data_len > 2 * piece && data_len < IO_WMAP_STEP);
    uint8_t *data = malloc(data_len), *back = malloc(data_len);
    assert_non_null(data);
    assert_non_null(back);
    for (int in_piece = 0; in_piece <= 1; in_piece++) {
        char p[PATH_MAX];
        fpath(fx, in_piece ? "claim-in-piece" : "claim-between", p);
        int fd = open(p, O_RDWR | O_CREAT | O_TRUNC, 0644);
        assert_true(fd >= 0);
        assert_int_equal(fallocate(fd, 0, 0, (off_t)len), 0);
        io_wmap *w = NULL;
        assert_int_equal(io_wmap_start(&w, 0), 0);
        piece_pause pp = {.want = in_piece, .skip = in_piece, .armed = 1}; /* in a piece: the second one */
        pthread_mutex_init(&pp.mu, NULL);
        pthread_cond_init(&pp.cv, NULL);
        io_wmap_set_piece_hook(piece_pause_hook, &pp);
        io_wmap_file *m = NULL;
        assert_int_equal(io_wmap_attach(w, fd, head, len, &m), 0); /* the helper starts its first step */
        pthread_mutex_lock(&pp.mu);
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_sec += 30;
        while (!pp.paused)
            if (pthread_cond_timedwait(&pp.cv, &pp.mu, &dl) == ETIMEDOUT) break;
        int paused = pp.paused;
        pthread_mutex_unlock(&pp.mu);
        if (!paused) io_wmap_set_piece_hook(NULL, NULL);
        assert_true(paused); /* the helper reached the pause point within 30 s */
        /* paused: between pieces 1 and 2 (made = head + piece), or while
         * piece 2 is in flight (made = head + piece, piece 2 up to head + 2 piece) */
        claim_arg c = {.m = m, .end = head + data_len};
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, claim_thread, &c), 0);
        for (uint64_t i = 0; i < data_len; i++) data[i] = (uint8_t)(0x41 + i % 23 + in_piece);
        if (!in_piece) {
            assert_int_equal(pthread_join(t, NULL), 0); /* returns while the helper stays paused */
            /* the writer's own pwrite of what it claimed (as wal.c does past the
             * made pages), before the helper goes on: it must not write there */
            assert_int_equal(pwrite(fd, data, data_len, (off_t)head), (ssize_t)data_len);
        } else {
            struct timespec ts = {0, 50 * 1000 * 1000};
            nanosleep(&ts, NULL);
            assert_int_equal(__atomic_load_n(&c.done, __ATOMIC_SEQ_CST), 0); /* waits for the piece */
        }
        pthread_mutex_lock(&pp.mu);
        pp.released = 1;
        pthread_cond_broadcast(&pp.cv);
        pthread_mutex_unlock(&pp.mu);
        if (in_piece) {
            assert_int_equal(pthread_join(t, NULL), 0);
            assert_int_equal(pwrite(fd, data, data_len, (off_t)head), (ssize_t)data_len);
        }
        io_wmap_appended(m, head + data_len, data_len, 0);
        io_wmap_drain(w); /* the helper goes on making pages past the writer's */
        io_wmap_stats ms;
        io_wmap_get_stats(w, &ms);
        assert_int_equal(ms.writer_waits, in_piece ? 1 : 0);
        /* between pieces: the rest of the step up to the claim was the writer's.
         * In a piece: the helper stopped at that piece's end and began no other
         * step while the writer waited; the writer took the pages past it as
         * its own (not part of a step) */
        uint64_t claimed_end = (head + data_len + pg - 1) / pg * pg;
        if (in_piece) assert_int_equal(ms.taken_bytes, 0); /* it began no other step while the writer waited */
        else assert_int_equal(ms.taken_bytes, claimed_end - head - piece);
        assert_int_equal(ms.failures, 0);
        io_wmap_detach(m);
        io_wmap_set_piece_hook(NULL, NULL);
        io_wmap_stop(w);
        assert_int_equal(pread(fd, back, data_len, (off_t)head), (ssize_t)data_len);
        assert_memory_equal(back, data, data_len);
        close(fd);
        pthread_cond_destroy(&pp.cv);
        pthread_mutex_destroy(&pp.mu);
    }
    free(data);
    free(back);
}

/* kill_len -- the length of record i of the killed writer's log. */
static size_t kill_len(uint64_t seed, uint64_t i)
{
    uint64_t x = seed ^ (i * 0x9e3779b97f4a7c15ull);
    return (size_t)(tu_splitmix64(&x) % 6000);
}

typedef struct kill_check {
    uint64_t seed, seen;
    int bad;
    uint8_t buf[6000];
} kill_check;

static int kill_record(void *arg, const uint8_t *payload, size_t n, uint64_t offset)
{
    (void)offset;
    kill_check *k = arg;
    size_t want = kill_len(k->seed, k->seen);
    fill_payload(k->buf, want, k->seen);
    if (n != want || memcmp(payload, k->buf, n) != 0) k->bad = 1;
    k->seen++;
    return 0;
}

/* test_mapped_killed_writer -- a child appends through a mapping (and past
 * it) and reports each record the log accepted; it is killed with SIGKILL
 * at a random point. Every reported record replays, in order and intact (a
 * process crash loses nothing the page cache holds), and the zero tail the
 * mapping leaves is read as a torn tail, not as corruption. */
static void test_mapped_killed_writer(void **state)
{
    fixture *fx = *state;
    if (no_mapping(fx, "test_mapped_killed_writer")) return;
    uint64_t seed = test_seed() ^ 0x6b696c6c;
    for (int round = 0; round < 3; round++) {
        char p[PATH_MAX], name[32];
        snprintf(name, sizeof name, "k%d.wal", round);
        fpath(fx, name, p);
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            io_stats st;
            memset(&st, 0, sizeof st);
            st.wal_bytes_per_sync = 64u << 10;
            wal_writer *w = NULL;
            if (io_wb_start(&st.wb, fx->dir) != 0 || io_wmap_start(&st.wmap, 0) != 0 || open_log(p, &st, &w) != 0)
                _exit(2);
            wal_writer_reserve(w, 2u << 20);
            uint8_t buf[6000];
            for (uint64_t i = 0;; i++) { /* ~3 KiB a record: past the 2 MiB mapping after ~700 */
                size_t n = kill_len(seed, i);
                fill_payload(buf, n, i);
                if (wal_add_record(w, buf, n) != 0) _exit(3);
                if (write(fds[1], &i, sizeof i) != (ssize_t)sizeof i) _exit(4);
            }
        }
        close(fds[1]);
        uint64_t x = seed + (uint64_t)round, target = 100 + tu_splitmix64(&x) % 1400, acked = 0, i;
        while (acked < target && read(fds[0], &i, sizeof i) == (ssize_t)sizeof i) acked = i + 1;
        assert_int_equal(kill(pid, SIGKILL), 0);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status)); /* it was still writing, not failed */
        while (read(fds[0], &i, sizeof i) == (ssize_t)sizeof i) acked = i + 1;
        close(fds[0]);
        kill_check k = {.seed = seed};
        wal_replay_stats rs;
        int rc = wal_replay(p, NULL, kill_record, &k, &rs);
        if (rc != 0)
            fail_msg("round %d, killed after %llu records: %s", round, (unsigned long long)acked, tkv_errmsg());
        assert_false(k.bad);
        assert_true(rs.records >= acked);
        assert_true(rs.records <= acked + 1);                 /* at most the one it was writing */
        if (acked < 600) assert_true(rs.torn_tail_bytes > 0); /* the mapping's zeros */
    }
}

/* hdr2 -- the header fields of a version-2 log after log `prev` at `size`. */
static wal_replay_stats hdr2(uint64_t number, uint64_t prev, uint64_t size)
{
    wal_replay_stats h;
    memset(&h, 0, sizeof h);
    h.version = WAL_V2;
    h.log_number = number;
    h.prev_number = prev;
    h.prev_size = size;
    return h;
}

/* replayed -- what wal_replay says of a log: its version, intact end and records; a torn tail (zero or not). */
static wal_replay_stats replayed(uint32_t ver, uint64_t end, uint64_t records, int torn, int torn_zero)
{
    wal_replay_stats st;
    memset(&st, 0, sizeof st);
    st.version = ver;
    st.end = end;
    st.records = records;
    st.torn_tail_records = torn != 0;
    st.torn_zero = torn_zero;
    return st;
}

/* test_chain_rule -- recovery's chain rule (db/recover.h, docs/format-wal.md
 * C1-C3): a version-2 log is replayed only after its predecessor reached the
 * size it names, with no record replayed after the predecessor; one naming
 * none (or a flushed one) only before any record; a version-1 log only while
 * nothing before it was dropped, skipped or cut short with non-zero bytes;
 * an empty log always (it holds nothing), but it is no predecessor. */
static void test_chain_rule(void **state)
{
    (void)state;
    wal_chain c = {.log_number = 10};
    wal_replay_stats h = hdr2(10, 8, 500), st;
    assert_null(wal_chain_check(&c, &h)); /* 8 < 10: flushed; nothing replayed yet */
    st = replayed(2, 700, 3, 0, 1);
    assert_int_equal(wal_chain_add(&c, 10, &st, WAL_CHAIN_REPLAYED), 0);
    h = hdr2(12, 10, 700);
    assert_null(wal_chain_check(&c, &h)); /* 10 reached 700 */
    h = hdr2(12, 10, 701);
    assert_non_null(strstr(wal_chain_check(&c, &h), "end before the size")); /* 10 lost its tail */
    h = hdr2(12, 11, 64);
    assert_non_null(strstr(wal_chain_check(&c, &h), "missing"));
    h = hdr2(12, 0, 0);
    assert_non_null(strstr(wal_chain_check(&c, &h), "holds writes")); /* names none, after records */
    h = hdr2(12, 9, 100);
    assert_non_null(wal_chain_check(&c, &h)); /* names a flushed one, after records */
    /* 12 dropped, 14 names it: dropped too; 16 names 10 at its end: fine (a later open's WAL) */
    h = hdr2(12, 10, 900);
    assert_non_null(wal_chain_check(&c, &h));
    assert_int_equal(wal_chain_add(&c, 12, &h, WAL_CHAIN_DROPPED), 0);
    h = hdr2(14, 12, 64);
    assert_non_null(strstr(wal_chain_check(&c, &h), "not replayed"));
    assert_int_equal(wal_chain_add(&c, 14, &h, WAL_CHAIN_DROPPED), 0);
    h = hdr2(16, 10, 700);
    assert_null(wal_chain_check(&c, &h));
    st = replayed(2, 64, 0, 0, 1); /* 16: no record yet */
    assert_int_equal(wal_chain_add(&c, 16, &st, WAL_CHAIN_REPLAYED), 0);
    h = hdr2(18, 10, 700);
    assert_null(wal_chain_check(&c, &h)); /* 16 after 10 holds no record */
    st = replayed(0, 0, 0, 0, 0);         /* 17: an empty log (no header) */
    assert_null(wal_chain_check(&c, &st));
    assert_int_equal(wal_chain_add(&c, 17, &st, WAL_CHAIN_REPLAYED), 0);
    h = hdr2(18, 17, 64);
    assert_non_null(wal_chain_check(&c, &h)); /* an empty log is no predecessor */
    const wal_chain_log *tip = wal_chain_tip(&c);
    assert_non_null(tip);
    assert_int_equal(tip->number, 16); /* the last replayed log with a header */
    /* 16 gets a record: 18 naming 10 would now skip it */
    c.logs[c.n - 2].records = 1;
    h = hdr2(18, 10, 700);
    assert_non_null(strstr(wal_chain_check(&c, &h), "after its predecessor"));
    /* a version-1 log after a drop */
    st = replayed(1, 0, 0, 0, 0);
    assert_non_null(wal_chain_check(&c, &st));
    wal_chain_free(&c);

    /* version 1: a zero tail lets the next log through, a non-zero one or a skipped corruption does not */
    wal_chain v = {.log_number = 3};
    wal_replay_stats v1 = replayed(1, 0, 0, 0, 0);
    st = replayed(1, 1000, 5, 1, 1);
    assert_null(wal_chain_check(&v, &v1));
    assert_int_equal(wal_chain_add(&v, 3, &st, WAL_CHAIN_REPLAYED), 0);
    assert_null(wal_chain_check(&v, &v1));
    st = replayed(1, 1000, 5, 1, 0);
    assert_int_equal(wal_chain_add(&v, 5, &st, WAL_CHAIN_REPLAYED), 0);
    assert_non_null(wal_chain_check(&v, &v1));
    h = hdr2(9, 5, 1000); /* the first version-2 log of an upgraded database names the version-1 tip */
    assert_null(wal_chain_check(&v, &h));
    wal_chain_free(&v);
    wal_chain w = {.log_number = 3};
    st = replayed(1, 400, 2, 0, 1);
    assert_int_equal(wal_chain_add(&w, 3, &st, WAL_CHAIN_CUT), 0);
    assert_non_null(wal_chain_check(&w, &v1));
    h = hdr2(5, 3, 401);
    assert_non_null(wal_chain_check(&w, &h)); /* the cut log ends before the size named */
    wal_chain_free(&w);
}

/* ---------------------------------------------------------------- version 2 */

/* The shared tests in version 2 (setup resets g_ver to 1). */
#define V2_CASE(name)                                                                                                  \
    static void name##_v2(void **state)                                                                                \
    {                                                                                                                  \
        g_ver = WAL_V2;                                                                                                \
        name(state);                                                                                                   \
    }
V2_CASE(test_round_trip_sessions)
V2_CASE(test_torn_tail_every_offset)
V2_CASE(test_zero_tail)
V2_CASE(test_flip_middle)
V2_CASE(test_flip_last)
V2_CASE(test_impossible_length)
V2_CASE(test_empty_and_short)
V2_CASE(test_invalid_args)
V2_CASE(test_callback_error)
V2_CASE(test_fault_enospc)
V2_CASE(test_fault_enospc_mapped)
V2_CASE(test_fault_other)
V2_CASE(test_reserve)
V2_CASE(test_mapped_round_trip)
V2_CASE(test_mapped_killed_writer)

/* test_v2_header_bytes -- the 64-byte header is what docs/format-wal.md
 * describes (its first 16 bytes a version-1 reader rejects by version), the
 * records start at 64, and replay and wal_read_header report its fields. */
static void test_v2_header_bytes(void **state)
{
    fixture *fx = *state;
    char p[PATH_MAX];
    fpath(fx, "000009.wal", p);
    wal_writer *w = NULL;
    assert_int_equal(wal_writer_open(p, NULL, 9, 7, 0x123456789aull, &w), 0);
    assert_int_equal(wal_size(w), 64);
    assert_int_equal(wal_add_record(w, "abc", 3), 0);
    assert_int_equal(wal_writer_close(w), 0);
    size_t len;
    uint8_t *raw = read_all(p, &len);
    assert_int_equal(len, 64 + 8 + 3);
    assert_memory_equal(raw, "TKVWAL\0\1", 8);
    assert_int_equal(dec_u32(raw + 8), 2);
    assert_int_equal(dec_u32(raw + 12), tkv_checksum(raw, 12));
    assert_int_equal(dec_u64(raw + 16), 9);
    assert_int_equal(dec_u64(raw + 24), 7);
    assert_int_equal(dec_u64(raw + 32), 0x123456789aull);
    assert_int_equal(dec_u32(raw + 40), tkv_checksum(raw, 40));
    assert_int_equal(dec_u32(raw + 44), 0);
    assert_int_equal(dec_u64(raw + 48), 0); /* nothing synced yet */
    assert_int_equal(dec_u32(raw + 56), tkv_checksum(raw + 48, 8));
    assert_int_equal(dec_u32(raw + 60), 0);
    assert_int_equal(dec_u32(raw + 68), 3); /* the record at 64 */
    assert_memory_equal(raw + 72, "abc", 3);
    assert_int_equal(dec_u32(raw + 64), tkv_checksum(raw + 68, 7));
    free(raw);

    wal_replay_stats rs;
    struct fmt_seen sn = {0, {0}, {0}, {0}};
    assert_int_equal(wal_replay(p, NULL, fmt_record, &sn, &rs), 0);
    assert_int_equal(sn.n, 1);
    assert_int_equal(sn.offs[0], 64);
    assert_int_equal(rs.version, 2);
    assert_int_equal(rs.log_number, 9);
    assert_int_equal(rs.prev_number, 7);
    assert_int_equal(rs.prev_size, 0x123456789aull);
    assert_int_equal(rs.frontier, 0);
    assert_int_equal(rs.frontier_ok, 1);
    assert_int_equal(rs.end, 64 + 11);
    assert_int_equal(rs.file_size, 64 + 11);
    assert_int_equal(rs.torn_tail_records, 0);
    memset(&rs, 0xff, sizeof rs);
    assert_int_equal(wal_read_header(p, NULL, &rs), 0);
    assert_int_equal(rs.version, 2);
    assert_int_equal(rs.log_number, 9);
    assert_int_equal(rs.prev_number, 7);
    assert_int_equal(rs.prev_size, 0x123456789aull);
    assert_int_equal(rs.records, 0);
    assert_int_equal(rs.end, 0);
    assert_int_equal(rs.file_size, 64 + 11);
    /* no predecessor: 0, 0 */
    assert_int_equal(wal_writer_open(p, NULL, 11, 0, 0, &w), 0);
    assert_int_equal(wal_writer_close(w), 0);
    assert_int_equal(wal_replay(p, NULL, NULL, NULL, &rs), 0);
    assert_int_equal(rs.version, 2);
    assert_int_equal(rs.log_number, 11);
    assert_int_equal(rs.prev_number, 0);
    assert_int_equal(rs.prev_size, 0);
    assert_int_equal(rs.end, 64);
    /* a version-1 file reports version 1 and no chain */
    assert_int_equal(wal_writer_open_v1(p, NULL, &w), 0);
    assert_int_equal(wal_writer_close(w), 0);
    assert_int_equal(wal_read_header(p, NULL, &rs), 0);
    assert_int_equal(rs.version, 1);
    assert_int_equal(rs.log_number, 0);
    assert_int_equal(rs.prev_number, 0);
}

/* dir_sync_hook -- counts the syncs of the directory *arg names; fails them
 * while dir_sync_fail is set. */
static int dir_sync_count, dir_sync_fail;
static int dir_sync_hook(io_op op, const char *path, size_t len, void *arg)
{
    (void)len;
    if (op != IO_OP_SYNC || strcmp(path, (const char *)arg) != 0) return 0;
    dir_sync_count++;
    return dir_sync_fail ? EIO : 0;
}

/* test_v2_frontier_step -- with the default step the slot is rewritten only
 * once the synced size is WAL_FRONTIER_STEP past it (each rewrite costs the
 * next fdatasync a second place to write), and at close whenever it is
 * behind the last sync at all; never ahead of a sync. */
static void test_v2_frontier_step(void **state)
{
    fixture *fx = *state;
    char p[PATH_MAX];
    fpath(fx, "fs.wal", p);
    wal_set_frontier_step(WAL_FRONTIER_STEP);
    wal_writer *w = NULL;
    int rc = wal_writer_open(p, NULL, 3, 0, 0, &w);
    wal_set_frontier_step(0);
    assert_int_equal(rc, 0);
    uint8_t *big = calloc(1, WAL_FRONTIER_STEP);
    assert_non_null(big);
    for (int i = 0; i < 10; i++) {
        assert_int_equal(wal_add_record(w, big, 1000), 0);
        assert_int_equal(wal_sync(w), 0);
    }
    assert_int_equal(frontier_at(p), 0); /* 10 KB synced: less than a step */
    assert_int_equal(wal_add_record(w, big, WAL_FRONTIER_STEP - 8), 0);
    assert_int_equal(wal_add_record(w, "x", 1), 0); /* appended, not synced */
    uint64_t synced = wal_size(w) - 9;
    assert_int_equal(frontier_at(p), 0);
    assert_int_equal(wal_sync(w), 0);
    assert_int_equal(frontier_at(p), synced + 9); /* a step past: rewritten */
    synced = wal_size(w);
    assert_int_equal(wal_add_record(w, "yz", 2), 0);
    assert_int_equal(wal_sync(w), 0);
    assert_int_equal(frontier_at(p), synced); /* lags: by less than a step */
    assert_int_equal(wal_add_record(w, "unsynced", 8), 0);
    uint64_t last_sync = wal_size(w) - 16;
    assert_int_equal(wal_writer_close(w), 0);
    assert_int_equal(frontier_at(p), last_sync); /* close: the last sync's size, not the unsynced record's */
    free(big);
}

/* test_v2_dir_sync -- a version-2 log's first successful fdatasync also
 * fsyncs its directory (a later log names it: its name must be durable
 * before a later sync write is acknowledged), later ones do not; a failed
 * directory sync fails the sync and poisons the writer. Version 1 (the
 * MANIFEST, whose directory its writer syncs) does not. */
static void test_v2_dir_sync(void **state)
{
    fixture *fx = *state;
    char p[PATH_MAX];
    fpath(fx, "d.wal", p);
    io_set_fault_hook(dir_sync_hook, fx->dir);
    dir_sync_count = dir_sync_fail = 0;
    wal_writer *w = NULL;
    assert_int_equal(wal_writer_open(p, NULL, 1, 0, 0, &w), 0);
    assert_int_equal(wal_add_record(w, "a", 1), 0);
    assert_int_equal(dir_sync_count, 0);
    assert_int_equal(wal_sync(w), 0);
    assert_int_equal(dir_sync_count, 1);
    assert_int_equal(wal_add_record(w, "b", 1), 0);
    assert_int_equal(wal_sync(w), 0);
    assert_int_equal(dir_sync_count, 1);
    assert_int_equal(wal_writer_close(w), 0);
    dir_sync_fail = 1;
    assert_int_equal(wal_writer_open(p, NULL, 2, 1, 100, &w), 0);
    assert_int_equal(wal_sync(w), TKV_IO_ERROR);
    assert_int_equal(wal_unsynced(w), 1);
    assert_int_equal(wal_add_record(w, "c", 1), TKV_IO_ERROR); /* poisoned */
    assert_int_equal(wal_writer_close(w), 0);
    dir_sync_fail = 0;
    dir_sync_count = 0;
    assert_int_equal(wal_writer_open_v1(p, NULL, &w), 0);
    assert_int_equal(wal_sync(w), 0);
    assert_int_equal(dir_sync_count, 0);
    assert_int_equal(wal_writer_close(w), 0);
    io_set_fault_hook(NULL, NULL);
}

/* test_v2_frontier -- each successful wal_sync writes the size it covered
 * into the header slot (only growing), appends do not; a never-synced log
 * counts as unsynced; a failed slot write leaves the old frontier and the
 * sync succeeds; version 1 has no slot. */
static void test_v2_frontier(void **state)
{
    fixture *fx = *state;
    char p[PATH_MAX];
    fpath(fx, "f2.wal", p);
    wal_writer *w = NULL;
    assert_int_equal(wal_writer_open(p, NULL, 3, 2, 100, &w), 0);
    assert_int_equal(wal_unsynced(w), 1); /* header only, never synced: a later log must not depend on it yet */
    assert_int_equal(frontier_at(p), 0);
    assert_int_equal(wal_sync(w), 0);
    assert_int_equal(wal_unsynced(w), 0);
    assert_int_equal(frontier_at(p), 64);
    assert_int_equal(wal_add_record(w, "0123456789", 10), 0);
    assert_int_equal(wal_unsynced(w), 1);
    assert_int_equal(frontier_at(p), 64); /* appends do not move it */
    assert_int_equal(wal_sync(w), 0);
    assert_int_equal(frontier_at(p), 64 + 18);
    assert_int_equal(wal_sync(w), 0); /* nothing new */
    assert_int_equal(frontier_at(p), 64 + 18);
    /* the slot write fails: the sync does not, the frontier stays */
    assert_int_equal(wal_add_record(w, "abc", 3), 0);
    tu_fault f = {IO_OP_WRITE, "f2.wal", 0, 1, EIO, 0};
    io_set_fault_hook(tu_fault_hook, &f);
    tkv_err_clear();
    assert_int_equal(wal_sync(w), 0);
    assert_int_equal(f.hits, 1);
    assert_string_equal(tkv_errmsg(), "");
    io_set_fault_hook(NULL, NULL);
    assert_int_equal(frontier_at(p), 64 + 18);
    assert_int_equal(wal_add_record(w, "de", 2), 0);
    assert_int_equal(wal_sync(w), 0); /* the next sync catches up */
    assert_int_equal(frontier_at(p), 64 + 18 + 11 + 10);
    assert_int_equal(wal_writer_close(w), 0);
    wal_replay_stats rs;
    assert_int_equal(wal_replay(p, NULL, NULL, NULL, &rs), 0);
    assert_int_equal(rs.records, 3);
    assert_int_equal(rs.frontier, 64 + 18 + 11 + 10);
    assert_int_equal(rs.end, rs.frontier);
    /* version 1: the header is never rewritten */
    assert_int_equal(wal_writer_open_v1(p, NULL, &w), 0);
    assert_int_equal(wal_add_record(w, "x", 1), 0);
    assert_int_equal(wal_sync(w), 0);
    assert_int_equal(wal_writer_close(w), 0);
    size_t len;
    uint8_t *raw = read_all(p, &len);
    assert_int_equal(len, 16 + 9);
    assert_int_equal(dec_u32(raw + 12), 0x6d6fb33a);
    free(raw);
}

/* hole_file -- a version-2 log of ten records of 3000 bytes, synced after
 * the first `synced` records (frontier = e->offs[synced]), then the bytes
 * [e->offs[hole] + 100, e->offs[hole + 1] + 50) -- the end of record `hole`
 * and the start of the next (for the last record: its bytes but the last
 * ten) -- overwritten with `fill` (0: zeros; else
 * pseudo-random bytes), as if those pages never reached the disk while
 * later ones did. */
static void hole_file(const char *p, expect *e, size_t synced, size_t hole, int fill)
{
    wal_writer *w = NULL;
    assert_int_equal(wal_writer_open(p, NULL, 4, 0, 0, &w), 0);
    for (size_t i = 0; i < 10; i++) {
        if (i == synced) assert_int_equal(wal_sync(w), 0);
        add_one(w, e, 3000, 500 + i);
    }
    assert_int_equal(wal_writer_close(w), 0);
    size_t len;
    uint8_t *raw = read_all(p, &len);
    uint64_t from = e->offs[hole] + 100, to = hole < 9 ? e->offs[hole + 1] + 50 : len - 10;
    uint64_t x = 99;
    for (uint64_t i = from; i < to; i++) raw[i] = fill ? (uint8_t)(tu_splitmix64(&x) | 1) : 0;
    write_all(p, raw, len);
    free(raw);
}

/* test_v2_hole_after_frontier -- a bad record at or past the synced frontier
 * followed by intact records (out-of-order write-back of unsynced pages at a
 * power cut) is a torn tail: the records before it come back, the ones
 * after it do not, and replay succeeds. (Version 1 reports this as
 * corruption, rule R5: the database would not open.) */
static void test_v2_hole_after_frontier(void **state)
{
    fixture *fx = *state;
    char p[PATH_MAX];
    fpath(fx, "hole.wal", p);
    static const struct {
        size_t synced, hole;
        int fill;
    } cases[] = {{5, 6, 0}, {5, 6, 1}, {5, 5, 0}, {5, 5, 1}, {0, 2, 1}, {9, 9, 0}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        expect *e = expect_new();
        hole_file(p, e, cases[c].synced, cases[c].hole, cases[c].fill);
        wal_replay_stats rs;
        int rc = replay_check(p, e, &rs);
        if (rc != 0) fail_msg("case %zu: rc %d (%s)", c, rc, tkv_errmsg());
        assert_int_equal(rs.records, cases[c].hole);
        assert_int_equal(e->seen, cases[c].hole); /* nothing after the hole */
        assert_int_equal(rs.torn_tail_records, 1);
        assert_int_equal(rs.torn_hole, cases[c].hole < 9 ? 1 : 0); /* the last record: nothing follows */
        assert_int_equal(rs.end, e->offs[cases[c].hole]);
        assert_int_equal(rs.torn_tail_bytes, tu_file_size(p) - e->offs[cases[c].hole]);
        assert_int_equal(rs.frontier, cases[c].synced ? e->offs[cases[c].synced] : 64);
        expect_free(e);
    }
}

/* test_v2_hole_before_frontier -- the same damage below the synced
 * frontier is synced data damaged: TKV_CORRUPTION naming the file, the
 * record's offset and the frontier, the records before it delivered; a file
 * that ends below its frontier likewise. A frontier slot that fails its
 * checksum counts as nothing synced (a lagging frontier is only more
 * lenient). */
static void test_v2_hole_before_frontier(void **state)
{
    fixture *fx = *state;
    char p[PATH_MAX];
    fpath(fx, "hole.wal", p);
    for (int fill = 0; fill <= 1; fill++) {
        expect *e = expect_new();
        hole_file(p, e, 7, 3, fill);
        wal_replay_stats rs;
        tkv_err_clear();
        assert_int_equal(replay_check(p, e, &rs), TKV_CORRUPTION);
        assert_int_equal(rs.records, 3);
        assert_int_equal(e->seen, 3);
        assert_int_equal(rs.end, e->offs[3]);
        char off[64];
        snprintf(off, sizeof off, "offset %llu", (unsigned long long)e->offs[3]);
        assert_msg_has(off);
        snprintf(off, sizeof off, "frontier %llu", (unsigned long long)e->offs[7]);
        assert_msg_has(off);
        assert_msg_has(p);
        /* the slot damaged: nothing is known to be synced, the hole is a torn tail */
        flip_bit(p, 50, 2);
        assert_int_equal(replay_check(p, e, &rs), 0);
        assert_int_equal(rs.frontier_ok, 0);
        assert_int_equal(rs.frontier, 0);
        assert_int_equal(rs.records, 3);
        assert_int_equal(rs.torn_hole, 1);
        expect_free(e);
    }
    /* cut below the frontier, at a record boundary and inside a record */
    expect *e = expect_new();
    hole_file(p, e, 7, 8, 0);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(truncate(p, (off_t)(e->offs[5] + (k ? 1000 : 0))), 0);
        tkv_err_clear();
        wal_replay_stats rs;
        assert_int_equal(replay_check(p, e, &rs), TKV_CORRUPTION);
        assert_int_equal(rs.records, 5);
        assert_msg_has("frontier");
    }
    expect_free(e);
}

/* test_v2_bad_header -- any flipped bit in the version-2 header's checked
 * fields (bytes 0..43) is corruption; in the frontier slot it only makes
 * the frontier unknown; a header cut by EOF is an empty log. */
static void test_v2_bad_header(void **state)
{
    fixture *fx = *state;
    char p[PATH_MAX];
    fpath(fx, "h2.wal", p);
    g_ver = WAL_V2;
    static const size_t sizes[] = {10, 20};
    expect *e = expect_new();
    write_file(p, e, sizes, 2);
    size_t len;
    uint8_t *orig = read_all(p, &len);
    uint8_t *b = malloc(len);
    assert_non_null(b);
    wal_replay_stats rs;
    for (int byte = 0; byte < 64; byte++) {
        memcpy(b, orig, len);
        b[byte] ^= 0x04;
        write_all(p, b, len);
        tkv_err_clear();
        int rc = replay_check(p, e, &rs);
        if (byte < 44) {
            if (rc != TKV_CORRUPTION) fail_msg("flip in header byte %d: rc %d", byte, rc);
            assert_int_equal(e->seen, 0);
            assert_msg_has(p);
            assert_int_equal(wal_read_header(p, NULL, &rs), TKV_CORRUPTION);
        } else {
            if (rc != 0) fail_msg("flip in header byte %d: rc %d (%s)", byte, rc, tkv_errmsg());
            assert_int_equal(rs.records, 2);
            assert_int_equal(rs.frontier_ok, byte >= 48 && byte < 60 ? 0 : 1);
        }
    }
    for (size_t c = 16; c < 64; c += 7) { /* the header's one write cut short */
        write_all(p, orig, c);
        assert_int_equal(replay_check(p, e, &rs), 0);
        assert_int_equal(rs.version, 0);
        assert_int_equal(rs.records, 0);
        assert_int_equal(rs.torn_tail_bytes, c);
    }
    free(b);
    free(orig);
    expect_free(e);
}

int main(void)
{
    test_seed();
    /* the frontier after every sync: the cases place it exactly (test_v2_frontier_step: the default) */
    wal_set_frontier_step(0);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_format_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_round_trip_sessions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_tail_every_offset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zero_tail, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flip_middle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flip_last, setup, teardown),
        cmocka_unit_test_setup_teardown(test_impossible_length, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_header, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_and_short, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_args, setup, teardown),
        cmocka_unit_test_setup_teardown(test_callback_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fault_enospc, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fault_enospc_mapped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fault_other, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reserve, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mapped_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mapped_killed_writer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mapped_claim_overtakes_helper, setup, teardown),
        cmocka_unit_test_setup_teardown(test_round_trip_sessions_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_tail_every_offset_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_zero_tail_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flip_middle_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flip_last_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_impossible_length_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_empty_and_short_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_args_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_callback_error_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fault_enospc_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fault_enospc_mapped_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fault_other_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_reserve_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mapped_round_trip_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mapped_killed_writer_v2, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_header_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_frontier, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_dir_sync, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_frontier_step, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_hole_after_frontier, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_hole_before_frontier, setup, teardown),
        cmocka_unit_test_setup_teardown(test_v2_bad_header, setup, teardown),
        cmocka_unit_test_setup_teardown(test_chain_rule, setup, teardown),
    };
    return cmocka_run_group_tests_name("wal", tests, NULL, NULL);
}
