// SPDX-License-Identifier: Apache-2.0
/*
 * column.c -- column picking for column compaction (interface and the rules:
 * column.h).
 */
#include "matrix/column.h"

#include <stdlib.h>
#include <string.h>

#include "util/ikey.h"
#include "util/num.h"
#include "util/status.h"

/* Candidate end keys sampled per row: the column's size is found to within
 * about 1/SAMPLES_PER_ROW of a row's remaining bytes. */
#define SAMPLES_PER_ROW 16
/* Step 5 (c): at most this many small L1 neighbours per column, which
 * bounds the input files a column opens where many tiny files lie side by
 * side (files that shrank, e.g. by deletes). */
#define COLUMN_MAX_MERGED 16
/* Step 2's tail rule: a column that would leave less than target_bytes /
 * COLUMN_TAIL_DIV in the compactor rows takes that rest too. A tail on its
 * own is a column of a few bytes that still rewrites whole L1 files (seen:
 * 1 KB of rows rewriting one 64 MB file, 20 KB/s of drain). */
#define COLUMN_TAIL_DIV 4

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
    while (plan->l1_end < in->nl1 && ukey_cmp(in->l1_smallest[plan->l1_end], slice(plan->hi.data, plan->hi.len)) <= 0)
        plan->l1_end++;
    return 0;
}

/* measure_rows -- each row's data offset at its cursor (pk->start_off), and
 * the bytes and entries left in the rows. */
static int measure_rows(picker *pk, uint64_t *total, uint64_t *entries)
{
    const column_input *in = pk->in;
    for (size_t r = 0; r < in->nrows; r++) {
        uint64_t end;
        TKV_TRY(rowtable_data_offset(in->rows[r], in->cursors[r], &pk->start_off[r]));
        TKV_TRY(rowtable_data_offset(in->rows[r], rowtable_count(in->rows[r]), &end));
        *total += end - pk->start_off[r];
        *entries += rowtable_count(in->rows[r]) - in->cursors[r];
    }
    return 0;
}

/* sample_ends -- (2) candidate ends: SAMPLES_PER_ROW user keys spread over
 * each row's remaining entries, sorted and deduplicated into cand[0..*u).
 * *cand (calloc'd) holds *ncand buffers, duplicates included: the caller
 * frees them, on error too. */
static int sample_ends(const column_input *in, tkv_buf **cand, size_t *ncand, size_t *u)
{
    size_t k = in->nrows;
    tkv_buf *c0 = *cand = calloc(k * SAMPLES_PER_ROW, sizeof *c0);
    if (!c0) return tkv_err(TKV_NO_MEMORY, "out of memory picking a column");
    for (size_t r = 0; r < k; r++) {
        uint32_t c = in->cursors[r], n = rowtable_count(in->rows[r]);
        if (c >= n) continue;
        for (uint32_t j = 1; j <= SAMPLES_PER_ROW; j++) {
            uint32_t pos = c + (uint32_t)(((uint64_t)(n - c) * j + SAMPLES_PER_ROW - 1) / SAMPLES_PER_ROW) - 1;
            TKV_TRY(rowtable_user_key(in->rows[r], pos, &c0[*ncand]));
            (*ncand)++;
        }
    }
    qsort(c0, *ncand, sizeof *c0, cmp_buf);
    *u = 0;
    for (size_t i = 0; i < *ncand; i++) {
        if (*u && cmp_buf(&c0[*u - 1], &c0[i]) == 0) continue;
        tkv_buf t = c0[*u];
        c0[*u] = c0[i];
        c0[i] = t;
        (*u)++;
    }
    return 0;
}

/* smallest_reaching -- the smallest of the sorted candidates cand[0..u) whose
 * column reaches the target (the largest candidate is the largest key left,
 * so one does), by binary search. */
static int smallest_reaching(picker *pk, const tkv_buf *cand, size_t u, tkv_slice *key)
{
    size_t lo = 0, hi = u - 1;
    uint64_t bytes;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        TKV_TRY(bytes_until(pk, slice(cand[mid].data, cand[mid].len), 1, &bytes));
        if (bytes >= pk->in->target_bytes) hi = mid;
        else lo = mid + 1;
    }
    *key = slice(cand[lo].data, cand[lo].len);
    return 0;
}

/* set_end -- steps (3) and (4) for end key `key`: align it to an L1 file
 * boundary, then plan->new_cursors (each on a user-key change) and
 * plan->row_bytes. */
static int set_end(picker *pk, tkv_slice key, column_plan *plan)
{
    const column_input *in = pk->in;
    size_t f = first_file_reaching(in, key);
    if (f < in->nl1 && ukey_cmp(in->l1_smallest[f], key) <= 0) {
        uint64_t before = 0;
        TKV_TRY(bytes_until(pk, in->l1_smallest[f], 0, &before));
        if (before > 0 && before >= in->target_bytes / 2) {
            memcpy(plan->new_cursors, pk->scratch, in->nrows * sizeof *pk->scratch);
            plan->row_bytes = before;
            return 0;
        }
        key = in->l1_largest[f];
    }
    TKV_TRY(bytes_until(pk, key, 1, &plan->row_bytes));
    memcpy(plan->new_cursors, pk->scratch, in->nrows * sizeof *pk->scratch);
    return 0;
}

/* l1_per_entry -- L1's average bytes per entry (0 when unknown: no sizes,
 * no entries). */
static double l1_per_entry(const column_input *in)
{
    uint64_t bytes = 0, entries = 0;
    for (size_t i = 0; i < in->nl1; i++) {
        bytes += in->l1_bytes[i];
        entries += in->l1_entries ? in->l1_entries[i] : 0;
    }
    return entries ? (double)bytes / (double)entries : 0.0;
}

/* COLUMN_EST_MAX -- an estimate too large for a uint64_t: still huge, with
 * room for the sums it goes into (start_merge adds the L1 overlap). */
#define COLUMN_EST_MAX (UINT64_MAX / 4)

/* to_u64 -- an estimate x (>= 0) as a byte count; COLUMN_EST_MAX when it
 * does not fit (sat_u64 returns UINT64_MAX only then). */
static uint64_t to_u64(double x)
{
    uint64_t u = sat_u64(x);
    return u == UINT64_MAX ? COLUMN_EST_MAX : u;
}

/* start_merge -- step 5's out (the column's estimated output: the L1 files
 * it overlaps plus its row entries at L1's bytes per entry, or its raw row
 * bytes when that is unknown) and, for the compactor's last column, the
 * compactor's estimated output (every entry its rows had) in *whole. */
static void start_merge(const column_input *in, const column_plan *plan, uint64_t *out, uint64_t *whole)
{
    double per = l1_per_entry(in);
    uint64_t overlap = 0;
    for (size_t i = plan->l1_first; i < plan->l1_end; i++) overlap += in->l1_bytes[i];
    *out = overlap + (per > 0 ? to_u64((double)plan->row_entries * per) : plan->row_bytes);
    *whole = plan->to_end ? to_u64((double)in->compactor_entries * per) : 0;
}

/* key_left -- the smallest user key left in the compactor rows after the
 * column (*have = 0 when the column takes everything). */
static int key_left(const column_input *in, const column_plan *plan, tkv_buf *out, tkv_buf *tmp, int *have)
{
    *have = 0;
    for (size_t r = 0; r < in->nrows; r++) {
        if (plan->new_cursors[r] >= rowtable_count(in->rows[r])) continue;
        TKV_TRY(rowtable_user_key(in->rows[r], plan->new_cursors[r], tmp));
        if (*have && ukey_cmp(slice(tmp->data, tmp->len), slice(out->data, out->len)) >= 0) continue;
        out->len = 0;
        TKV_TRY(buf_append(out, tmp->data, tmp->len));
        *have = 1;
    }
    return 0;
}

/* may_merge -- step 5's (a)-(c) for L1 file f, given the estimated output
 * so far and the compactor's (0 unless this is its last column). */
static int may_merge(const column_input *in, const column_plan *plan, size_t f, uint64_t out, uint64_t whole)
{
    uint64_t b = in->l1_bytes[f], s = in->sst_size, scale = out > whole ? out : whole;
    if (in->l1_busy && in->l1_busy[f]) return 0;
    if (b / 2 > scale || (b >= s / 2 && out + b > s)) return 0;                   /* (a), (b) */
    return plan->l1_merged_bytes + b <= s && plan->l1_merged < COLUMN_MAX_MERGED; /* (c) */
}

/* merge_neighbours -- step 5 (column.h): widens [l1_first, l1_end) over
 * adjacent L1 files, left then right. Invariant: the range stays a run of
 * whole adjacent files, so the outputs replace exactly them (L1 stays
 * sorted and disjoint) and no L1 file straddles the column's end; the left
 * neighbours hold only keys below lo, which every compactor row has left,
 * and a right neighbour is taken only with no compactor key left at or
 * below its largest (d), so no later column of this compactor overlaps
 * what this one writes. */
static int merge_neighbours(const column_input *in, column_plan *plan, tkv_buf *tmp)
{
    if (!in->l1_bytes || in->sst_size == 0 || in->nl1 == 0) return 0;
    uint64_t out, whole;
    start_merge(in, plan, &out, &whole);
    while (plan->l1_first > 0 && may_merge(in, plan, plan->l1_first - 1, out, whole)) {
        plan->l1_first--;
        out += in->l1_bytes[plan->l1_first];
        plan->l1_merged_bytes += in->l1_bytes[plan->l1_first];
        plan->l1_merged++;
    }
    tkv_buf left = {0};
    int have_left, rc = key_left(in, plan, &left, tmp, &have_left);
    while (rc == 0 && plan->l1_end < in->nl1 && may_merge(in, plan, plan->l1_end, out, whole) &&
           (!have_left || ukey_cmp(in->l1_largest[plan->l1_end], slice(left.data, left.len)) < 0)) {
        out += in->l1_bytes[plan->l1_end];
        plan->l1_merged_bytes += in->l1_bytes[plan->l1_end];
        plan->l1_merged++;
        plan->l1_end++;
    }
    buf_free(&left);
    return rc;
}

/* finish_plan -- from the new cursors: the entry count, to_end, the key
 * range with the L1 files it overlaps (set_range), and the small L1
 * neighbours it takes in (merge_neighbours). */
static int finish_plan(const column_input *in, column_plan *plan)
{
    tkv_buf tmp = {0};
    plan->row_entries = 0;
    plan->to_end = 1;
    for (size_t r = 0; r < in->nrows; r++) {
        plan->row_entries += plan->new_cursors[r] - in->cursors[r];
        if (plan->new_cursors[r] < rowtable_count(in->rows[r])) plan->to_end = 0;
    }
    int rc = set_range(in, plan, &tmp);
    if (rc == 0) rc = merge_neighbours(in, plan, &tmp);
    buf_free(&tmp);
    return rc;
}

/* column_pick -- the steps of column.h: what is left (measure_rows); if more
 * than the target, sampled candidate ends (sample_ends), the smallest that
 * reaches the target (smallest_reaching), aligned to L1 (set_end); then the
 * plan's entry count and key range (finish_plan). */
int column_pick(const column_input *in, column_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    if (in->target_bytes == 0) return tkv_err(TKV_INVALID, "column_pick: target of 0 bytes");
    size_t k = in->nrows;
    picker pk = {in, calloc(k ? k : 1, sizeof *pk.start_off), calloc(k ? k : 1, sizeof *pk.scratch)};
    plan->new_cursors = calloc(k ? k : 1, sizeof *plan->new_cursors);
    tkv_buf *cand = NULL;
    size_t ncand = 0;
    uint64_t total = 0, entries = 0;
    int rc = 0;
    if (!pk.start_off || !pk.scratch || !plan->new_cursors) {
        rc = tkv_err(TKV_NO_MEMORY, "out of memory picking a column");
        goto out;
    }
    if ((rc = measure_rows(&pk, &total, &entries)) < 0) goto out;
    if (entries == 0) {
        plan->empty = 1;
        goto out;
    }
    if (total <= in->target_bytes) { /* the last column: everything left */
        plan->to_end = 1;
        plan->row_bytes = total;
        for (size_t r = 0; r < k; r++) plan->new_cursors[r] = rowtable_count(in->rows[r]);
    } else {
        size_t u = 0;
        tkv_slice key;
        if ((rc = sample_ends(in, &cand, &ncand, &u)) < 0) goto out;
        if ((rc = smallest_reaching(&pk, cand, u, &key)) < 0) goto out;
        if ((rc = set_end(&pk, key, plan)) < 0) goto out;
        if (total - plan->row_bytes < in->target_bytes / COLUMN_TAIL_DIV) { /* the tail rule */
            plan->row_bytes = total;
            for (size_t r = 0; r < k; r++) plan->new_cursors[r] = rowtable_count(in->rows[r]);
        }
    }
    rc = finish_plan(in, plan);
out:
    for (size_t i = 0; i < ncand; i++) buf_free(&cand[i]);
    free(cand);
    free(pk.start_off);
    free(pk.scratch);
    if (rc < 0) column_plan_free(plan);
    return rc;
}

/* column_plan_free -- frees the plan's cursors and key range, and zeroes it. */
void column_plan_free(column_plan *plan)
{
    free(plan->new_cursors);
    buf_free(&plan->lo);
    buf_free(&plan->hi);
    memset(plan, 0, sizeof *plan);
}
