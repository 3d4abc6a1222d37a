/*
 * column.c -- column picking for column compaction (interface and the rules:
 * column.h).
 */
#include "matrix/column.h"

#include <stdlib.h>
#include <string.h>

#include "mem/ikey.h"
#include "util/status.h"

/* Candidate end keys sampled per row: the column's size is found to within
 * about 1/SAMPLES_PER_ROW of a row's remaining bytes. */
#define SAMPLES_PER_ROW 16

typedef struct picker {
    const column_input *in;
    uint64_t *start_off; /* data offset of each row's cursor */
    uint32_t *scratch;   /* cursors computed for one candidate */
} picker;

/* bytes_until -- the rows' bytes from their cursors up to (after == 1: past
 * every version of ukey; after == 0: before ukey), and the new cursors in
 * pk->scratch. */
static int bytes_until(picker *pk, tkv_slice ukey, int after, uint64_t *bytes)
{
    const column_input *in = pk->in;
    uint64_t total = 0;
    for (size_t r = 0; r < in->nrows; r++) {
        uint32_t pos;
        TKV_TRY(after ? rowtable_upper_bound(in->rows[r], in->cursors[r], ukey, &pos)
                      : rowtable_lower_bound(in->rows[r], in->cursors[r], ukey, &pos));
        uint64_t off;
        TKV_TRY(rowtable_data_offset(in->rows[r], pos, &off));
        total += off - pk->start_off[r];
        pk->scratch[r] = pos;
    }
    *bytes = total;
    return 0;
}

static int cmp_buf(const void *a, const void *b)
{
    const tkv_buf *x = a, *y = b;
    return ukey_cmp(slice(x->data, x->len), slice(y->data, y->len));
}

/* first_file_reaching -- index of the first L1 file whose largest key is >=
 * ukey (nl1 if none). */
static size_t first_file_reaching(const column_input *in, tkv_slice ukey)
{
    size_t lo = 0, hi = in->nl1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ukey_cmp(in->l1_largest[mid], ukey) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* set_range -- plan->lo/hi from the rows' first and last entries inside the
 * column, and the L1 files overlapping [lo, hi]. */
static int set_range(const column_input *in, column_plan *plan, tkv_buf *tmp)
{
    int have = 0;
    for (size_t r = 0; r < in->nrows; r++) {
        if (plan->new_cursors[r] <= in->cursors[r]) continue;
        TKV_TRY(rowtable_user_key(in->rows[r], in->cursors[r], tmp));
        if (!have || ukey_cmp(slice(tmp->data, tmp->len), slice(plan->lo.data, plan->lo.len)) < 0) {
            plan->lo.len = 0;
            TKV_TRY(buf_append(&plan->lo, tmp->data, tmp->len));
        }
        TKV_TRY(rowtable_user_key(in->rows[r], plan->new_cursors[r] - 1, tmp));
        if (!have || ukey_cmp(slice(tmp->data, tmp->len), slice(plan->hi.data, plan->hi.len)) > 0) {
            plan->hi.len = 0;
            TKV_TRY(buf_append(&plan->hi, tmp->data, tmp->len));
        }
        have = 1;
    }
    plan->l1_first = first_file_reaching(in, slice(plan->lo.data, plan->lo.len));
    plan->l1_end = plan->l1_first;
    while (plan->l1_end < in->nl1 &&
           ukey_cmp(in->l1_smallest[plan->l1_end], slice(plan->hi.data, plan->hi.len)) <= 0)
        plan->l1_end++;
    return 0;
}

int column_pick(const column_input *in, column_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    if (in->target_bytes == 0) return tkv_err(TKV_INVALID, "column_pick: target of 0 bytes");
    size_t k = in->nrows;
    picker pk = {in, calloc(k ? k : 1, sizeof *pk.start_off), calloc(k ? k : 1, sizeof *pk.scratch)};
    plan->new_cursors = calloc(k ? k : 1, sizeof *plan->new_cursors);
    tkv_buf *cand = NULL, tmp = {0};
    size_t ncand = 0;
    int rc = 0;
    if (!pk.start_off || !pk.scratch || !plan->new_cursors) {
        rc = tkv_err(TKV_NO_MEMORY, "out of memory picking a column");
        goto out;
    }
    uint64_t total = 0, entries = 0;
    for (size_t r = 0; r < k && rc == 0; r++) {
        uint64_t end;
        rc = rowtable_data_offset(in->rows[r], in->cursors[r], &pk.start_off[r]);
        if (rc == 0) rc = rowtable_data_offset(in->rows[r], rowtable_count(in->rows[r]), &end);
        if (rc == 0) total += end - pk.start_off[r];
        entries += rowtable_count(in->rows[r]) - in->cursors[r];
    }
    if (rc < 0) goto out;
    if (entries == 0) {
        plan->empty = 1;
        goto out;
    }
    if (total <= in->target_bytes) { /* the last column: everything left */
        plan->to_end = 1;
        plan->row_bytes = total;
        for (size_t r = 0; r < k; r++) plan->new_cursors[r] = rowtable_count(in->rows[r]);
        goto done;
    }

    /* (2) candidate ends: SAMPLES_PER_ROW user keys spread over each row's
     * remaining entries, sorted and deduplicated */
    cand = calloc(k * SAMPLES_PER_ROW, sizeof *cand);
    if (!cand) {
        rc = tkv_err(TKV_NO_MEMORY, "out of memory picking a column");
        goto out;
    }
    for (size_t r = 0; r < k && rc == 0; r++) {
        uint32_t c = in->cursors[r], n = rowtable_count(in->rows[r]);
        if (c >= n) continue;
        for (uint32_t j = 1; j <= SAMPLES_PER_ROW && rc == 0; j++) {
            uint32_t pos = c + (uint32_t)(((uint64_t)(n - c) * j + SAMPLES_PER_ROW - 1) / SAMPLES_PER_ROW) - 1;
            rc = rowtable_user_key(in->rows[r], pos, &cand[ncand]);
            if (rc == 0) ncand++;
        }
    }
    if (rc < 0) goto out;
    qsort(cand, ncand, sizeof *cand, cmp_buf);
    size_t u = 0;
    for (size_t i = 0; i < ncand; i++) {
        if (u && cmp_buf(&cand[u - 1], &cand[i]) == 0) continue;
        tkv_buf t = cand[u];
        cand[u] = cand[i];
        cand[i] = t;
        u++;
    }
    /* the smallest candidate whose column reaches the target (the largest
     * candidate is the largest key left, so one does) */
    size_t lo = 0, hi = u - 1;
    uint64_t bytes;
    while (lo < hi && rc == 0) {
        size_t mid = lo + (hi - lo) / 2;
        rc = bytes_until(&pk, slice(cand[mid].data, cand[mid].len), 1, &bytes);
        if (rc == 0 && bytes >= in->target_bytes) hi = mid;
        else lo = mid + 1;
    }
    if (rc < 0) goto out;
    tkv_slice key = slice(cand[lo].data, cand[lo].len);

    /* (3) align the end to an L1 file boundary; (4) cursors end on a user-key change */
    size_t f = first_file_reaching(in, key);
    if (f < in->nl1 && ukey_cmp(in->l1_smallest[f], key) <= 0) {
        uint64_t before = 0;
        rc = bytes_until(&pk, in->l1_smallest[f], 0, &before);
        if (rc < 0) goto out;
        if (before > 0 && before >= in->target_bytes / 2) {
            memcpy(plan->new_cursors, pk.scratch, k * sizeof *pk.scratch);
            plan->row_bytes = before;
            goto done;
        }
        key = in->l1_largest[f];
    }
    rc = bytes_until(&pk, key, 1, &plan->row_bytes);
    if (rc < 0) goto out;
    memcpy(plan->new_cursors, pk.scratch, k * sizeof *pk.scratch);
done:
    plan->row_entries = 0;
    plan->to_end = 1;
    for (size_t r = 0; r < k; r++) {
        plan->row_entries += plan->new_cursors[r] - in->cursors[r];
        if (plan->new_cursors[r] < rowtable_count(in->rows[r])) plan->to_end = 0;
    }
    rc = set_range(in, plan, &tmp);
out:
    for (size_t i = 0; i < ncand; i++) buf_free(&cand[i]);
    free(cand);
    buf_free(&tmp);
    free(pk.start_off);
    free(pk.scratch);
    if (rc < 0) column_plan_free(plan);
    return rc;
}

void column_plan_free(column_plan *plan)
{
    free(plan->new_cursors);
    buf_free(&plan->lo);
    buf_free(&plan->hi);
    memset(plan, 0, sizeof *plan);
}
