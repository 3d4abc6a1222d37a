// SPDX-License-Identifier: Apache-2.0
/*
 * rowtable_read.c -- point lookups: one row searched inside the window the
 * next-newer row's forward pointers give (the window's edges verified, a
 * full binary search if they do not hold; rowtable_seek.c searches the rows
 * of a seek the same way), the search over rows newest first that passes
 * each row's window on to the next (invariant (2) of rowtable_int.h), and
 * the positional lookups column compaction sizes its columns with.
 */
#include "matrix/rowtable_int.h"

#include "util/status.h"

/* ---------------------------------------------------------------- lookups */

/* search_window -- the lower bound in [lo, hi) of a hint window: probes
 * downward from hi at distances 1, 2, 4, ... until an entry below the target
 * brackets the answer, then binary-searches the bracket. The cost is
 * O(log(hi - answer)), not O(log(hi - lo)): the low end of a window from
 * forward pointers holds every older version of the newer row's previous
 * user key (all below the target when the user keys differ), which for a hot
 * key can be many, while the answer sits near hi. Keeps rt_lower_bound's
 * contract, and: if the result pos > lo, entry pos-1 was compared < target. */
static uint32_t search_window(probe *pr, uint32_t lo, uint32_t hi, int *hi_ueq)
{
    for (uint32_t step = 1; hi > lo && !pr->err; step *= 2) {
        uint32_t at = hi - lo > step ? hi - step : lo;
        int ueq;
        if (rt_cmp_at(pr, at, &ueq) < 0) {
            lo = at + 1;
            break;
        }
        hi = at;
        *hi_ueq = ueq;
    }
    return rt_lower_bound(pr, lo, hi, hi_ueq);
}

/* rowtable_get -- rowtable_get_at with the row's own cursor. */
int rowtable_get(const rowtable *r, tkv_slice ukey, uint64_t snap, const row_hint *hint_in, row_get_result *res,
                 tkv_buf *value, row_hint *hint_out)
{
    return rowtable_get_at(r, 0, ukey, snap, hint_in, res, value, hint_out);
}

/* rt_search_hint -- the lower bound of the target inside window `h` of this
 * row: clamps the window to the live entries [c, n), searches inside it,
 * then verifies the edges the answer rests on. The lower bound is proven
 * when entry pos-1 < T (or pos is the cursor) and entry pos >= T (or
 * pos == n); the search compared entry pos-1 if pos > hl and entry pos if
 * pos < hh, so only an answer on the window's edge needs one more comparison
 * (the upper one also tells whether entry pos holds the user key). Returns 1
 * with *pos and *hi_ueq if the edges hold, else 0 (*hi_ueq reset): the
 * window was wrong, and the caller searches the whole row. */
int rt_search_hint(probe *pr, const row_hint *h, uint32_t c, uint32_t n, uint32_t *pos, int *hi_ueq)
{
    uint32_t hl = h->lo > c ? h->lo : c, hh = h->hi < n ? h->hi : n;
    if (hl > n) hl = n;
    if (hh < hl) hh = hl; /* a window below the cursor: the answer is the cursor */
    int ueq = 0, hinted = 1;
    *pos = search_window(pr, hl, hh, hi_ueq);
    if (*pos == hl && hl > c && !pr->err && rt_cmp_at(pr, hl - 1, &ueq) >= 0) hinted = 0;
    if (hinted && *pos == hh && hh < n && !pr->err) {
        if (rt_cmp_at(pr, hh, &ueq) < 0) hinted = 0;
        else *hi_ueq = ueq;
    }
    if (!hinted) *hi_ueq = 0;
    return hinted;
}

/* load_answer -- entry pos is the answer: its type and seq into res, and
 * unless value is NULL its value into *value (value->len set; 0 for a
 * deletion). 1, or <0 (TKV_CORRUPTION, TKV_NO_MEMORY). */
static int load_answer(probe *pr, uint32_t pos, row_get_result *res, tkv_buf *value)
{
    const rowtable *r = pr->r;
    meta m;
    meta_load(r, pos, &m);
    res->type = (ikey_type)(m.trailer & 0xff);
    res->seq = m.trailer >> 8;
    if (!value) return 1;
    value->len = 0;
    if (res->type != IKEY_VALUE) return 1;
    ent_loc e;
    pm_read_delay(r->reg, 1);
    pr->nprobe++;
    TKV_TRY(rt_entry_decode(r, pos, &m, &e));
    if (e.lz4) {
        tkv_slice v;
        TKV_TRY(rt_value(r, pos, &e, value, &v)); /* decompressed into value */
        return 1;
    }
    TKV_TRY(buf_reserve(value, e.val_len + 1));
    rt_data_copy(r, e.val_off, value->data, e.val_len);
    value->len = e.val_len;
    return 1;
}

/* rt_older_hint -- the window for the next-older row: the forward pointers
 * of the entries on either side of lower bound pos (invariant (2) of
 * rowtable_int.h); a zeroed hint for a row built without an older row. */
void rt_older_hint(const rowtable *r, uint32_t c, uint32_t pos, row_hint *out)
{
    if (r->older_id == 0) {
        *out = (row_hint){0, 0, 0};
        return;
    }
    out->row_id = r->older_id;
    out->lo = pos > c ? dec_u32(meta_ptr(r, pos - 1) + ME_FWD) : 0;
    out->hi = pos < r->n ? dec_u32(meta_ptr(r, pos) + ME_FWD) : UINT32_MAX;
}

/* rowtable_get_at -- the lower bound of (ukey, snap) among the live entries,
 * inside hint_in's window when that holds (rt_search_hint), else by a
 * binary search of the whole row; then the answer (load_answer) and the
 * window for the older row (rt_older_hint). */
int rowtable_get_at(const rowtable *r, uint32_t cursor, tkv_slice ukey, uint64_t snap, const row_hint *hint_in,
                    row_get_result *res, tkv_buf *value, row_hint *hint_out)
{
    if (snap > IKEY_MAX_SEQ) snap = IKEY_MAX_SEQ;
    target t;
    target_init(&t, ukey, ikey_pack(snap, IKEY_SEEK_TYPE));
    probe pr = {r, &t, 0, 0, 0};
    uint32_t c = live_from(r, cursor), n = r->n, pos = 0;
    int hi_ueq = 0, hinted = 0, rc = 0;
    res->rows_searched++;
    if (hint_in && hint_in->row_id != 0 && hint_in->row_id == r->row_id) {
        hinted = rt_search_hint(&pr, hint_in, c, n, &pos, &hi_ueq);
        if (hinted) res->hints_used++;
        else res->hints_rejected++;
    }
    if (!hinted) pos = rt_lower_bound(&pr, c, n, &hi_ueq);
    if (pr.err) {
        rc = pr.err;
        goto done;
    }
    /* pos < n: entry pos was compared (or verified as the window's top edge),
     * so hi_ueq says whether it holds the target user key -- and being >= T
     * it is then the newest version with seq <= snap. */
    if (pos < n && hi_ueq) {
        rc = load_answer(&pr, pos, res, value);
        if (rc < 0) goto done;
    }
    if (hint_out) rt_older_hint(r, c, pos, hint_out);
done:
    res->comparisons += pr.ncmp;
    res->media_probes += pr.nprobe;
    return rc;
}

/* rowtable_rows_get -- rowtable_rows_get_at with each row's own cursor and
 * no key filter. */
int rowtable_rows_get(rowtable *const *rows, size_t k, tkv_slice ukey, uint64_t snap, row_get_result *res,
                      tkv_buf *value)
{
    return rowtable_rows_get_at(rows, NULL, k, ukey, snap, 0, res, value);
}

/* rowtable_rows_get_at -- rowtable_get_at over the rows, newest first, each
 * row's window passed on to the next, until no older row can hold a newer
 * entry. */
int rowtable_rows_get_at(rowtable *const *rows, const uint32_t *cursors, size_t k, tkv_slice ukey, uint64_t snap,
                         unsigned flags, row_get_result *res, tkv_buf *value)
{
    uint64_t h = flags & ROWTABLE_ROWS_GET_FILTER ? rowtable_key_hash(ukey) : 0;
    row_hint hint = {0, 0, 0};
    int found = 0;
    uint64_t best_seq = 0;
    ikey_type best_type = IKEY_VALUE;
    if (snap > IKEY_MAX_SEQ) snap = IKEY_MAX_SEQ;
    for (size_t i = 0; i < k; i++) {
        const rowtable *r = rows[i];
        if (!r) continue;
        if (found && r->max_seq <= best_seq) break; /* every older entry is older than the answer */
        uint32_t c = cursors ? cursors[i] : 0;
        if (r->n == 0 || r->min_seq > snap || live_from(r, c) == r->n) {
            hint = (row_hint){0, 0, 0};
            continue;
        }
        if ((flags & ROWTABLE_ROWS_GET_FILTER) && !rowtable_may_contain(r, h)) {
            res->rows_filtered++;
            hint = (row_hint){0, 0, 0}; /* the next row has no window: a binary search if it is searched */
            continue;
        }
        int rc = rowtable_get_at(r, c, ukey, snap, &hint, res, found ? NULL : value, &hint);
        if (rc < 0) return rc;
        if (rc == 1 && (!found || res->seq > best_seq)) {
            if (found && value && res->type == IKEY_VALUE) { /* overlapping rows: fetch the better value */
                row_hint none = {0, 0, 0};
                rc = rowtable_get_at(r, c, ukey, snap, &none, res, value, NULL);
                if (rc < 0) return rc;
            } else if (found && value) {
                value->len = 0;
            }
            found = 1;
            best_seq = res->seq;
            best_type = res->type;
            res->row_index = i;
        } else if (found) {
            res->seq = best_seq;
            res->type = best_type;
        }
    }
    return found;
}

/* ---------------------------------------------------------------- column support */

/* rowtable_lower_bound -- the lower bound of ukey's first internal key. */
int rowtable_lower_bound(const rowtable *r, uint32_t from, tkv_slice ukey, uint32_t *out)
{
    /* (ukey, the largest trailer) is the first internal key of ukey. */
    target t;
    target_init(&t, ukey, UINT64_MAX);
    probe pr = {r, &t, 0, 0, 0};
    int ueq = 0;
    uint32_t pos = rt_lower_bound(&pr, live_from(r, from), r->n, &ueq);
    if (pr.err) return pr.err;
    *out = pos;
    return 0;
}

/* rowtable_upper_bound -- the first entry past every version of ukey. */
int rowtable_upper_bound(const rowtable *r, uint32_t from, tkv_slice ukey, uint32_t *out)
{
    /* (ukey, trailer 0) is the last internal key of ukey: the lower bound of
     * it is past every version of ukey except one with trailer 0 (seq 0 is
     * never assigned, but a corrupt-free row could still hold it). */
    target t;
    target_init(&t, ukey, 0);
    probe pr = {r, &t, 0, 0, 0};
    int ueq = 0;
    uint32_t lo = live_from(r, from);
    uint32_t pos = rt_lower_bound(&pr, lo, r->n, &ueq);
    if (pr.err) return pr.err;
    if (pos < r->n && ueq) pos++;
    *out = pos;
    return 0;
}

/* data_offset -- entry i's data-stream offset (the end of the entries for n); i <= n. */
static uint64_t data_offset(const rowtable *r, uint32_t i)
{
    return i == r->n ? r->entries_end : dec_u64(meta_ptr(r, i) + ME_DATA_OFF);
}

/* rowtable_data_offset -- entry i's data-stream offset (the entries' end for n). */
int rowtable_data_offset(const rowtable *r, uint32_t i, uint64_t *off)
{
    if (i > r->n || i < cursor_load(r))
        return tkv_err(TKV_INVALID, "pool %s: row %llu: entry %u outside the live entries [%u, %u]", pool_path(r->pl),
                       (unsigned long long)r->row_id, i, cursor_load(r), r->n);
    *off = data_offset(r, i);
    return 0;
}

/* willneed_stream -- asks for the list pages [first, limit) that hold bytes
 * [begin, end) of the stream starting at list page `first`. */
static void willneed_stream(const rowtable *r, uint32_t first, uint32_t limit, uint64_t begin, uint64_t end)
{
    if (begin >= end) return;
    uint32_t lo = first + (uint32_t)(begin >> r->shift), hi = first + (uint32_t)((end - 1) >> r->shift) + 1;
    if (hi > limit) hi = limit;
    if (lo < hi) pool_willneed_pages(r->pl, r->pages + lo, hi - lo);
}

/* rowtable_willneed -- asks for the pages that hold entries [from, to)
 * (clamped to the live entries) to be read into the page cache in the
 * background: their metadata and their data. For a reader about to walk the
 * range once (a column compaction): the pool's mapping has no readahead, so
 * a row that is not resident (after a restart) would otherwise be read 4 KiB
 * fault by fault. */
void rowtable_willneed(const rowtable *r, uint32_t from, uint32_t to)
{
    uint32_t c = cursor_load(r);
    if (from < c) from = c;
    if (to > r->n) to = r->n;
    if (from >= to) return;
    willneed_stream(r, 0, r->nmeta, r->meta_off + (uint64_t)from * ROWTABLE_META_ENTRY_SIZE,
                    r->meta_off + (uint64_t)to * ROWTABLE_META_ENTRY_SIZE);
    uint64_t d1 = data_offset(r, to);
    if (d1 > r->data_bytes) return; /* metadata a reader will report */
    willneed_stream(r, r->nmeta, r->npages, data_offset(r, from), d1);
}

/* rowtable_user_key -- copies entry i's user key out of the data stream. */
int rowtable_user_key(const rowtable *r, uint32_t i, tkv_buf *out)
{
    if (i >= r->n || i < cursor_load(r))
        return tkv_err(TKV_INVALID, "pool %s: row %llu: entry %u outside the live entries [%u, %u)", pool_path(r->pl),
                       (unsigned long long)r->row_id, i, cursor_load(r), r->n);
    meta m;
    ent_loc e;
    meta_load(r, i, &m);
    TKV_TRY(rt_entry_decode(r, i, &m, &e));
    out->len = 0;
    TKV_TRY(buf_reserve(out, m.klen ? m.klen : 1));
    rt_data_copy(r, e.key_off, out->data, m.klen);
    out->len = m.klen;
    return 0;
}
