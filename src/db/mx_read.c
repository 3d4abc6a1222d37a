// SPDX-License-Identifier: Apache-2.0
/*
 * mx_read.c -- reads over the matrix container's rows: point lookups and
 * iterator seeks, both with cross-row hint search, at the cursors of the
 * reader's pinned view (mx.h; invariant 1 of mx_int.h).
 */
#include "db/mx_int.h"

#include <stdlib.h>
#include <string.h>

#include "db/silk_pmem.h"
#include "util/status.h"

int mx_row_range_dels(const version *v, const rowtable *r, tkv_slice *start)
{
    if (!rowtable_range_dels(r)) return 0;
    *start = row_key_slice(version_row_rd_start(v, rowtable_id(r)));
    return 1;
}

/* raise_rd -- *rd up to the newest range tombstone of the rows of rs visible
 * at seq that covers ukey (each row's from its start on). The rows are all
 * newer than the SSD tree, so this is where the search may stop. */
static void raise_rd(const version *v, const rowset *rs, tkv_slice ukey, uint64_t seq, uint64_t *rd)
{
    for (size_t i = 0; i < rs->n; i++) {
        tkv_slice start;
        if (!mx_row_range_dels(v, rs->rows[i], &start) || ukey_cmp(ukey, start) < 0) continue;
        uint64_t c = rd_frags_covering(rowtable_range_dels(rs->rows[i]), ukey, seq);
        if (c > *rd) *rd = c;
    }
}

int mx_get(tkv_db *db, superversion *sv, version *v, tkv_slice ukey, uint64_t seq, uint64_t *rd, ikey_type *type,
           tkv_buf *val)
{
    rowset *rs = sv->rows;
    if (!rs || rs->n == 0) return 0;
    raise_rd(v, rs, ukey, seq, rd);
    uint32_t stack[64], *cur = rs->n <= 64 ? stack : malloc(rs->n * sizeof *cur);
    if (!cur) return tkv_err(TKV_NO_MEMORY, "out of memory reading rows");
    int rc = 0;
    for (size_t i = 0; i < rs->n && rc == 0; i++) rc = mx_cursor_in(v, rs->rows[i], &cur[i]);
    row_get_result res;
    memset(&res, 0, sizeof res);
    unsigned flags = db->opts.row_filter ? ROWTABLE_ROWS_GET_FILTER : 0;
    if (rc == 0) rc = rowtable_rows_get_at(rs->rows, cur, rs->n, ukey, seq, flags, &res, val);
    if (cur != stack) free(cur);
    mx_counters *c = &db->mx->ctr;
    ctr_add(&c->lookups, 1);
    ctr_add(&c->rows_searched, res.rows_searched);
    if (res.hints_used) ctr_add(&c->hints_used, res.hints_used);
    if (res.hints_rejected) ctr_add(&c->hints_rejected, res.hints_rejected);
    ctr_add(&c->comparisons, res.comparisons);
    if (res.rows_filtered) ctr_add(&c->rows_filtered, res.rows_filtered);
    if (rc == 1) *type = res.seq < *rd ? IKEY_DELETION : res.type; /* an entry under a newer range tombstone */
    if (rc == 0 && *rd) {                                          /* nothing older can be newer than it */
        *type = IKEY_DELETION;
        rc = 1;
    }
    /* the scheduler's pmem tier: a cache line per media access, and the
     * value found */
    silk_pmem_charge(db, IO_USER_READ, 0, res.media_probes * MX_PMEM_LINE + (rc == 1 ? val->len : 0));
    return rc;
}

size_t mx_iter_count(const superversion *sv) { return sv->rows ? sv->rows->n : 0; }

int mx_range_dels(const superversion *sv, const version *v, uint32_t tier, rd_list *out)
{
    rowset *rs = sv->rows;
    for (size_t i = 0; rs && i < rs->n; i++) {
        tkv_slice start;
        if (!mx_row_range_dels(v, rs->rows[i], &start)) continue;
        size_t from = out->n;
        TKV_TRY(rd_frags_emit(rowtable_range_dels(rs->rows[i]), start.n ? &start : NULL, NULL, NULL, NULL, out));
        for (size_t j = from; j < out->n; j++) out->t[j].tier = tier + (uint32_t)i;
    }
    return 0;
}

int mx_add_iters(tkv_db *db, superversion *sv, version *v, tkv_it **children, size_t *k)
{
    rowset *rs = sv->rows;
    if (!rs || rs->n == 0) return 0;
    uint32_t stack[64], *cur = rs->n <= 64 ? stack : malloc(rs->n * sizeof *cur);
    if (!cur) return tkv_err(TKV_NO_MEMORY, "out of memory creating an iterator");
    int rc = 0;
    for (size_t i = 0; i < rs->n && rc == 0; i++) rc = mx_cursor_in(v, rs->rows[i], &cur[i]);
    unsigned flags = db->opts.seek_hints ? ROWTABLE_SEEK_HINTS : 0;
    if (rc == 0) rc = rowtable_iters_at(rs->rows, cur, rs->n, flags, &db->mx->ctr.seeks, children + *k);
    if (cur != stack) free(cur);
    if (rc < 0) return rc;
    /* the scheduler's pmem tier counts what client scans read of the rows */
    for (size_t i = 0; i < rs->n; i++) {
        tkv_it **c = &children[*k + i];
        if (!(*c = silk_pmem_meter(db, *c, IO_USER_READ, 0, 1))) rc = TKV_NO_MEMORY;
    }
    if (rc < 0) { /* none is added: the slots are left empty, as on the error above */
        for (size_t i = 0; i < rs->n; i++) {
            it_destroy(children[*k + i]);
            children[*k + i] = NULL;
        }
        return tkv_err(TKV_NO_MEMORY, "out of memory creating an iterator");
    }
    *k += rs->n;
    return rc;
}

int mx_row_iters(tkv_db *db, superversion *sv, version *v, io_class cls, tkv_it **out)
{
    rowset *rs = sv->rows;
    int rc = 0;
    for (size_t i = 0; rs && i < rs->n; i++) out[i] = NULL;
    for (size_t i = 0; rs && i < rs->n && rc == 0; i++) {
        uint32_t cur;
        rc = mx_cursor_in(v, rs->rows[i], &cur);
        if (rc == 0 && !(out[i] = silk_pmem_meter(db, rowtable_iter_at(rs->rows[i], cur), cls, 0, 1)))
            rc = tkv_err(TKV_NO_MEMORY, "out of memory creating a row iterator");
    }
    for (size_t i = 0; rc < 0 && rs && i < rs->n; i++) {
        it_destroy(out[i]);
        out[i] = NULL;
    }
    return rc;
}
