// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_rowtable.c -- fuzz target: RowTables, the rows of the pmem pool. The
 * pool is opened (pool_open) and every committed row is opened as the
 * matrix container's recovery does (rowtable_open: the header against the
 * pool geometry, every page's checksum, the metadata, the key filter
 * rebuilt), then read: an iterator's scans and seeks, point lookups of each
 * key met and of a key from the input, the bounds and key accessors.
 *
 * Input: flags byte, then the pool file (zero-extended: fuzzpool.h).
 *   FZ_FIX        recompute the pool header's checksum
 *   FZ_FIX_ROWS   recompute each committed row header's checksum
 *   FZ_FIX_PAGES  recompute each RowTable page checksum (in the header body)
 */
#include <stdlib.h>

#include "fuzz/fuzzpool.h"
#include "fuzz/fuzzutil.h"
#include "matrix/pool.h"
#include "matrix/rowtable.h"
#include "util/status.h"

/* read_row -- everything a reader does with an open row. */
static void read_row(const rowtable *r, tkv_slice probe)
{
    rowtable_props pr;
    rowtable_get_props(r, &pr);
    fz_check(pr.cursor <= pr.entries, "cursor past the entries");
    tkv_it *it = rowtable_iter(r);
    if (it) {
        uint8_t ik[24] = {0};
        size_t pn = probe.n < 16 ? probe.n : 16;
        for (size_t i = 0; i < pn; i++) ik[i] = probe.p[i];
        fz_walk(it, slice(ik, pn + 8), 16);
        it_destroy(it);
    }
    tkv_buf key = {0}, val = {0};
    uint32_t n = rowtable_count(r);
    for (uint32_t i = rowtable_cursor(r); i < n && i < rowtable_cursor(r) + 64; i++) {
        if (rowtable_user_key(r, i, &key) < 0) break;
        row_get_result res = {0};
        row_hint hint;
        int rc = rowtable_get(r, slice(key.data, key.len), UINT64_MAX, NULL, &res, &val, &hint);
        fz_check(rc == 1 || rc == 0 || rc == TKV_CORRUPTION || rc == TKV_NO_MEMORY, "rowtable_get code");
        uint32_t lb, ub;
        if (rowtable_lower_bound(r, 0, slice(key.data, key.len), &lb) == 0 &&
            rowtable_upper_bound(r, 0, slice(key.data, key.len), &ub) == 0)
            fz_check(lb <= ub && ub <= n, "bounds out of order");
        uint64_t off;
        (void)rowtable_data_offset(r, i, &off);
        (void)rowtable_may_contain(r, rowtable_key_hash(slice(key.data, key.len)));
    }
    row_get_result res = {0};
    (void)rowtable_get(r, probe, UINT64_MAX, NULL, &res, &val, NULL);
    buf_free(&key);
    buf_free(&val);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    uint8_t flags = data[0];
    size_t n;
    uint8_t *img = fz_pool_image(data + 1, size - 1, flags & (FZ_FIX | FZ_FIX_ROWS | FZ_FIX_PAGES), &n);
    if (!img) return 0;
    const char *path = fz_pool_write(img, n);
    free(img);
    pool *p = NULL;
    if (fz_note("pool_open", pool_open(path, 0, PM_EMULATED, PM_PROFILE_NONE, NULL, &p, NULL)) < 0) return 0;
    pool_row_id *rows = NULL;
    size_t nrows = 0;
    tkv_slice probe = size > 9 ? slice(data + 1, 8) : slice(NULL, 0);
    if (pool_rows(p, &rows, &nrows) == 0) {
        for (size_t i = 0; i < nrows; i++) {
            rowtable *r = NULL;
            int rc = fz_note("rowtable_open", rowtable_open(p, rows[i].slot, &r));
            if (rc < 0) {
                fz_check(rc == TKV_CORRUPTION || rc == TKV_NO_MEMORY, "rowtable_open failed with an unexpected code");
                fz_check(r == NULL, "a failed rowtable_open returned a row");
                continue;
            }
            read_row(r, probe);
            rowtable_close(r);
        }
        free(rows);
    }
    pool_close(p);
    return 0;
}
