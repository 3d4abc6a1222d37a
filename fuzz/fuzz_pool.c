// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_pool.c -- fuzz target: the pmem pool file's header and row
 * directory, opened as tkv_open opens the pool (pool_open: the header's
 * magic, checksum, version and geometry; every committed row header
 * verified; page ownership rebuilt), then listed (pool_rows, pool_row_read
 * of every slot, stats and space) and closed.
 *
 * Input: flags byte, then the pool file (zero-extended: fuzzpool.h).
 *   FZ_FIX        recompute the pool header's checksum
 *   FZ_FIX_ROWS   recompute each committed row header's checksum
 */
#include <stdlib.h>

#include "fuzz/fuzzpool.h"
#include "fuzz/fuzzutil.h"
#include "matrix/pool.h"
#include "util/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    uint8_t flags = data[0];
    size_t n;
    uint8_t *img = fz_pool_image(data + 1, size - 1, flags & (FZ_FIX | FZ_FIX_ROWS), &n);
    if (!img) return 0;
    const char *path = fz_pool_write(img, n);
    free(img);
    pool *p = NULL;
    int rc = fz_note("pool_open", pool_open(path, 0, PM_EMULATED, PM_PROFILE_NONE, NULL, &p, NULL));
    if (rc < 0) {
        fz_check(rc == TKV_CORRUPTION || rc == TKV_INVALID || rc == TKV_NO_MEMORY,
                 "pool_open failed with an unexpected code");
        fz_check(p == NULL, "a failed pool_open returned a pool");
        return 0;
    }
    pool_stats st;
    pool_get_stats(p, &st);
    fz_check(st.pages_free <= st.pages_total && st.rows <= st.dir_slots, "pool stats out of range");
    pool_row_id *rows = NULL;
    size_t nrows = 0;
    if (pool_rows(p, &rows, &nrows) == 0) {
        fz_check(nrows == st.rows, "pool_rows disagrees with the stats");
        for (size_t i = 0; i < nrows; i++) {
            pool_row r;
            fz_check(pool_row_read(p, rows[i].slot, &r) == 0, "a listed row does not read");
            fz_check(r.npages == rows[i].npages && r.first_page < st.pages_total, "row read disagrees with the list");
            volatile unsigned sink = 0;
            for (uint32_t j = 0; j < r.body_len; j++) sink += r.body[j];
            for (uint32_t j = 0; j < r.npages; j++) sink += pool_row_page(&r, j) + (unsigned)pool_row_released(&r, j);
            (void)sink;
        }
        free(rows);
    }
    pool_space_stats sp;
    (void)pool_space(p, &sp);
    pool_close(p);
    return 0;
}
