// SPDX-License-Identifier: Apache-2.0
/*
 * test_io_wmap.c -- how the mapping helper of io/wmap.h makes pages: one
 * pwrite per page at the start of a log and while its writer syncs often,
 * whole pieces otherwise ("Synced logs" in wmap.h). The appends, replay and
 * the helper's races are tested through the WAL in test_wal.c.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "io/wmap.h"
#include "testutil.h"

#define MAP_LEN (24u << 20)

typedef struct phase {
    uint64_t made, pages; /* bytes the helper made, pwrites of one page, during the phase */
} phase;

/* append -- the writer appends `bytes` in records of `rec` through the
 * mapping (pwrite where the helper has not made pages yet), syncing every
 * `sync_every` bytes (0: never), then lets the helper catch up. */
static phase append(io_wmap *w, io_wmap_file *m, int fd, uint64_t *size, uint64_t bytes, size_t rec,
                    uint64_t sync_every)
{
    static uint8_t buf[64u << 10];
    memset(buf, 0xab, sizeof buf);
    io_wmap_stats a, b;
    io_wmap_drain(w);
    io_wmap_get_stats(w, &a);
    uint64_t last_sync = *size;
    for (uint64_t end = *size + bytes; *size < end;) {
        if (!io_wmap_store(m, *size, buf, rec)) {
            io_wmap_claim(m, *size + rec);
            assert_int_equal(pwrite(fd, buf, rec, (off_t)*size), (ssize_t)rec);
            io_wmap_appended(m, *size + rec, rec, 0);
        }
        *size += rec;
        if (sync_every && *size - last_sync >= sync_every) {
            assert_int_equal(fdatasync(fd), 0);
            io_wmap_synced(m, *size);
            last_sync = *size;
        }
        io_wmap_drain(w); /* the helper keeps IO_WMAP_AHEAD ahead: a deterministic pace */
    }
    io_wmap_get_stats(w, &b);
    return (phase){b.made_bytes - a.made_bytes, b.page_writes - a.page_writes};
}

/* test_pages_follow_syncs -- the first IO_WMAP_AHEAD bytes of a log are made
 * a page at a time; past them, a writer that never syncs gets whole pieces;
 * once it syncs every 4 KiB, pages again; syncing every 2 MiB (more than
 * IO_WMAP_SYNC_GAP apart), pieces again. */
static void test_pages_follow_syncs(void **state)
{
    (void)state;
    char *dir = tu_tmpdir("wmap"), path[4096];
    snprintf(path, sizeof path, "%s/log", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    if (fallocate(fd, 0, 0, MAP_LEN) != 0) {
        fprintf(stderr, "# no fallocate here: skipped\n");
        close(fd);
        tu_tmpdir_free(dir);
        return;
    }
    const uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE);
    io_wmap *w = NULL;
    assert_int_equal(io_wmap_start(&w, 0), 0);
    io_wmap_file *m = NULL;
    uint64_t size = 64;
    assert_int_equal(io_wmap_attach(w, fd, size, MAP_LEN, &m), 0);

    /* the first IO_WMAP_AHEAD bytes, made before the writer appends: a page at a time */
    io_wmap_drain(w);
    io_wmap_stats st;
    io_wmap_get_stats(w, &st);
    assert_true(st.made_bytes >= IO_WMAP_AHEAD - pg);
    assert_int_equal(st.page_writes * pg, st.made_bytes);

    phase quiet = append(w, m, fd, &size, 3u << 20, 1024, 0); /* past them, no sync: pieces */
    assert_true(quiet.made >= (2u << 20));
    assert_int_equal(quiet.pages, 0);

    phase synced = append(w, m, fd, &size, 2u << 20, 1024, 4096); /* syncs 4 KiB apart: pages */
    assert_true(synced.made >= (1u << 20));
    assert_true(synced.pages * pg + IO_WMAP_STEP >= synced.made); /* all but a step made before the second sync */

    phase rare = append(w, m, fd, &size, 8u << 20, 1024, 2u << 20); /* syncs 2 MiB apart: pieces again */
    assert_true(rare.made >= (6u << 20));
    assert_true(rare.pages * pg <= (2u << 20) + 2 * IO_WMAP_STEP); /* pages until its first sync only */

    io_wmap_get_stats(w, &st);
    assert_int_equal(st.failures, 0);
    io_wmap_detach(m);
    io_wmap_stop(w);
    close(fd);
    tu_tmpdir_free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pages_follow_syncs),
    };
    return cmocka_run_group_tests_name("io_wmap", tests, NULL, NULL);
}
