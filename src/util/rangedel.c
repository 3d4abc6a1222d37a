// SPDX-License-Identifier: Apache-2.0
/*
 * rangedel.c -- range tombstones: lists, the block encoding, and the
 * fragmented form reads and compactions use (rangedel.h).
 *
 * Fragments (rd_frags_new): the distinct begin and end keys, sorted, cut the
 * key space into elementary intervals; a sweep over them in key order keeps
 * the tombstones that cover the current interval (begin <= point < end) and
 * writes one fragment per covered interval with their seqs, newest first.
 * Invariants of the result: fragments are sorted, disjoint (hi[i] <=
 * lo[i+1]) and non-empty (lo < hi), every fragment has at least one seq,
 * and seqs are strictly decreasing within a fragment.
 */
#include "util/rangedel.h"

#include <stdlib.h>
#include <string.h>

#include "util/status.h"

struct rd_frags {
    int refs; /* atomic */
    size_t n, ntombs;
    tkv_slice *lo, *hi; /* fragment i: [lo[i], hi[i]), into keymem */
    size_t *off;        /* seqs of fragment i: [off[i], off[i + 1]) */
    uint64_t *seqs;
    uint32_t *tiers;
    uint8_t *keymem;
};

/* ---------------------------------------------------------------- lists */

int rd_list_add(rd_list *l, tkv_slice begin, tkv_slice end, uint64_t seq, uint32_t tier)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 8;
        rd_tomb *p = realloc(l->t, cap * sizeof *p);
        if (!p) return tkv_err(TKV_NO_MEMORY, "out of memory for range tombstones");
        l->t = p;
        l->cap = cap;
    }
    uint8_t *mem = malloc(begin.n + end.n ? begin.n + end.n : 1);
    if (!mem) return tkv_err(TKV_NO_MEMORY, "out of memory for a range tombstone");
    if (begin.n) memcpy(mem, begin.p, begin.n);
    if (end.n) memcpy(mem + begin.n, end.p, end.n);
    l->t[l->n++] = (rd_tomb){slice(mem, begin.n), slice(mem + begin.n, end.n), seq, tier};
    return 0;
}

int rd_list_append(rd_list *l, const rd_tomb *src, size_t n)
{
    if (l->n + n > l->cap) { /* room first: src may be l's own array, which a realloc moves */
        size_t at = src >= l->t && src < l->t + l->n ? (size_t)(src - l->t) : SIZE_MAX;
        rd_tomb *p = realloc(l->t, (l->n + n) * sizeof *p);
        if (!p) return tkv_err(TKV_NO_MEMORY, "out of memory for range tombstones");
        l->t = p;
        l->cap = l->n + n;
        if (at != SIZE_MAX) src = l->t + at;
    }
    for (size_t i = 0; i < n; i++) TKV_TRY(rd_list_add(l, src[i].begin, src[i].end, src[i].seq, src[i].tier));
    return 0;
}

static int tomb_cmp(const void *a, const void *b)
{
    const rd_tomb *x = a, *y = b;
    int c = ukey_cmp(x->begin, y->begin);
    if (c) return c;
    return x->seq > y->seq ? -1 : x->seq < y->seq ? 1 : 0;
}

void rd_list_sort(rd_list *l)
{
    if (l->n > 1) qsort(l->t, l->n, sizeof *l->t, tomb_cmp);
}

void rd_list_clear(rd_list *l)
{
    for (size_t i = 0; i < l->n; i++) free((void *)l->t[i].begin.p); /* begin owns both keys */
    l->n = 0;
}

void rd_list_free(rd_list *l)
{
    rd_list_clear(l);
    free(l->t);
    memset(l, 0, sizeof *l);
}

void rd_extent(const rd_tomb *t, size_t n, tkv_slice *lo, tkv_slice *hi)
{
    *lo = t[0].begin;
    *hi = t[0].end;
    for (size_t i = 1; i < n; i++) {
        if (ukey_cmp(t[i].begin, *lo) < 0) *lo = t[i].begin;
        if (ukey_cmp(t[i].end, *hi) > 0) *hi = t[i].end;
    }
}

tkv_slice rd_key_prev_incl(tkv_slice end)
{
    if (end.n > 1 && end.p[end.n - 1] == 0) return slice(end.p, end.n - 1);
    return end;
}

/* ---------------------------------------------------------------- encoding */

int rd_encode(const rd_tomb *t, size_t n, tkv_buf *out)
{
    TKV_TRY(buf_append_varint(out, n));
    for (size_t i = 0; i < n; i++) {
        TKV_TRY(buf_append_varint(out, t[i].begin.n));
        TKV_TRY(buf_append(out, t[i].begin.p, t[i].begin.n));
        TKV_TRY(buf_append_varint(out, t[i].end.n));
        TKV_TRY(buf_append(out, t[i].end.p, t[i].end.n));
        TKV_TRY(buf_append_varint(out, t[i].seq));
    }
    return 0;
}

/* dec_key -- one length-prefixed key of [*p, end); NULL if malformed. */
static const uint8_t *dec_key(const uint8_t *p, const uint8_t *end, tkv_slice *k)
{
    uint64_t len;
    p = dec_varint(p, end, &len);
    if (!p || len == 0 || len > RD_MAX_KEY || len > (uint64_t)(end - p)) return NULL;
    *k = slice(p, (size_t)len);
    return p + len;
}

int rd_decode(const uint8_t *p, size_t n, rd_list *out, const char **why)
{
    const uint8_t *end = p + n;
    uint64_t count;
    if (!(p = dec_varint(p, end, &count))) {
        *why = "truncated count";
        return 1;
    }
    if (count > n) { /* every tombstone takes at least 5 bytes: a bad count, before any allocation */
        *why = "count larger than the block";
        return 1;
    }
    for (uint64_t i = 0; i < count; i++) {
        tkv_slice b, e;
        uint64_t seq;
        if (!(p = dec_key(p, end, &b)) || !(p = dec_key(p, end, &e)) || !(p = dec_varint(p, end, &seq))) {
            *why = "truncated or oversized tombstone";
            return 1;
        }
        if (ukey_cmp(b, e) >= 0 || seq == 0 || seq > IKEY_MAX_SEQ) {
            *why =
                ukey_cmp(b, e) >= 0 ? "tombstone whose begin is not below its end" : "tombstone sequence out of range";
            return 1;
        }
        TKV_TRY(rd_list_add(out, b, e, seq, 0));
    }
    if (p != end) {
        *why = "trailing bytes";
        return 1;
    }
    return 0;
}

/* ---------------------------------------------------------------- fragments */

static int slice_cmp(const void *a, const void *b) { return ukey_cmp(*(const tkv_slice *)a, *(const tkv_slice *)b); }

typedef struct seq_tier {
    uint64_t seq;
    uint32_t tier;
} seq_tier;

static int seq_tier_cmp(const void *a, const void *b)
{
    const seq_tier *x = a, *y = b;
    if (x->seq != y->seq) return x->seq > y->seq ? -1 : 1;
    return x->tier < y->tier ? -1 : x->tier > y->tier ? 1 : 0;
}

static void frags_free(rd_frags *f)
{
    free(f->lo);
    free(f->hi);
    free(f->off);
    free(f->seqs);
    free(f->tiers);
    free(f->keymem);
    free(f);
}

/* unique_points -- the distinct begin and end keys of t[0..m), sorted,
 * copied into f->keymem: pts[0..*np). */
static int unique_points(rd_frags *f, const rd_tomb *t, size_t m, tkv_slice *pts, size_t *np)
{
    size_t k = 0, bytes = 0;
    for (size_t i = 0; i < m; i++) {
        pts[k++] = t[i].begin;
        pts[k++] = t[i].end;
    }
    qsort(pts, k, sizeof *pts, slice_cmp);
    size_t u = 0;
    for (size_t i = 0; i < k; i++)
        if (u == 0 || ukey_cmp(pts[u - 1], pts[i]) != 0) {
            pts[u++] = pts[i];
            bytes += pts[i].n;
        }
    f->keymem = malloc(bytes ? bytes : 1);
    if (!f->keymem) return TKV_NO_MEMORY;
    uint8_t *p = f->keymem;
    for (size_t i = 0; i < u; i++) {
        memcpy(p, pts[i].p, pts[i].n);
        pts[i].p = p;
        p += pts[i].n;
    }
    *np = u;
    return 0;
}

/* push_seqs -- appends fragment [a, b) with the deduplicated seqs of
 * st[0..k) (sorted newest first) to f; *cap is the seq arrays' room. */
static int push_frag(rd_frags *f, tkv_slice a, tkv_slice b, seq_tier *st, size_t k, size_t *cap)
{
    qsort(st, k, sizeof *st, seq_tier_cmp);
    size_t at = f->off[f->n];
    if (at + k > *cap) {
        size_t ncap = (*cap ? *cap * 2 : 16) + k;
        uint64_t *s = realloc(f->seqs, ncap * sizeof *s);
        if (s) f->seqs = s;
        uint32_t *t = realloc(f->tiers, ncap * sizeof *t);
        if (t) f->tiers = t;
        if (!s || !t) return TKV_NO_MEMORY;
        *cap = ncap;
    }
    for (size_t i = 0; i < k; i++) {
        if (i && st[i].seq == st[i - 1].seq) continue; /* the same tombstone twice: once, at its smaller tier */
        f->seqs[at] = st[i].seq;
        f->tiers[at++] = st[i].tier;
    }
    f->lo[f->n] = a;
    f->hi[f->n] = b;
    f->off[++f->n] = at;
    return 0;
}

/* sweep -- the fragments of tombstones s[0..m) (sorted by begin) over the
 * points pts[0..np) (the sweep of the header comment). */
static int sweep(rd_frags *f, const rd_tomb *s, size_t m, const tkv_slice *pts, size_t np)
{
    const rd_tomb **act = malloc((m ? m : 1) * sizeof *act);
    seq_tier *st = malloc((m ? m : 1) * sizeof *st);
    f->lo = malloc((np ? np : 1) * sizeof *f->lo);
    f->hi = malloc((np ? np : 1) * sizeof *f->hi);
    f->off = calloc(np + 1, sizeof *f->off);
    int rc = act && st && f->lo && f->hi && f->off ? 0 : TKV_NO_MEMORY;
    size_t na = 0, k = 0, cap = 0;
    for (size_t j = 0; rc == 0 && j + 1 < np; j++) {
        while (k < m && ukey_cmp(s[k].begin, pts[j]) <= 0) act[na++] = &s[k++];
        size_t keep = 0;
        for (size_t i = 0; i < na; i++)
            if (ukey_cmp(act[i]->end, pts[j]) > 0) act[keep++] = act[i];
        na = keep;
        if (na == 0) continue;
        for (size_t i = 0; i < na; i++) st[i] = (seq_tier){act[i]->seq, act[i]->tier};
        rc = push_frag(f, pts[j], pts[j + 1], st, na, &cap);
    }
    free(act);
    free(st);
    return rc;
}

rd_frags *rd_frags_new(const rd_tomb *t, size_t n, uint64_t max_seq)
{
    rd_frags *f = calloc(1, sizeof *f);
    rd_tomb *s = malloc((n ? n : 1) * sizeof *s);
    tkv_slice *pts = malloc((n ? 2 * n : 1) * sizeof *pts);
    int rc = f && s && pts ? 0 : TKV_NO_MEMORY;
    size_t m = 0, np = 0;
    if (rc == 0) {
        f->refs = 1;
        f->ntombs = n;
        for (size_t i = 0; i < n; i++)
            if (t[i].seq <= max_seq && ukey_cmp(t[i].begin, t[i].end) < 0) s[m++] = t[i];
        qsort(s, m, sizeof *s, tomb_cmp);
        rc = unique_points(f, s, m, pts, &np);
    }
    if (rc == 0) rc = sweep(f, s, m, pts, np);
    free(s);
    free(pts);
    if (rc < 0) {
        if (f) frags_free(f);
        tkv_err(TKV_NO_MEMORY, "out of memory fragmenting %zu range tombstones", n);
        return NULL;
    }
    return f;
}

void rd_frags_ref(rd_frags *f) { __atomic_fetch_add(&f->refs, 1, __ATOMIC_RELAXED); }

void rd_frags_unref(rd_frags *f)
{
    if (f && __atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) == 0) frags_free(f);
}

size_t rd_frags_count(const rd_frags *f) { return f ? f->n : 0; }
size_t rd_frags_tombs(const rd_frags *f) { return f ? f->ntombs : 0; }

size_t rd_frags_find(const rd_frags *f, tkv_slice key)
{
    size_t lo = 0, hi = f->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ukey_cmp(f->hi[mid], key) <= 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

void rd_frags_get(const rd_frags *f, size_t i, rd_frag *out)
{
    out->lo = f->lo[i];
    out->hi = f->hi[i];
    out->seqs = f->seqs + f->off[i];
    out->tiers = f->tiers + f->off[i];
    out->nseq = f->off[i + 1] - f->off[i];
}

uint64_t rd_frags_covering(const rd_frags *f, tkv_slice key, uint64_t snap)
{
    if (!f || f->n == 0) return 0;
    size_t i = rd_frags_find(f, key);
    if (i == f->n || ukey_cmp(f->lo[i], key) > 0) return 0;
    for (size_t j = f->off[i]; j < f->off[i + 1]; j++)
        if (f->seqs[j] <= snap) return f->seqs[j];
    return 0;
}

int rd_frags_at(const rd_frags *f, size_t *at, tkv_slice key)
{
    if (!f || f->n == 0) return 0;
    size_t i = *at < f->n ? *at : f->n - 1;
    if (ukey_cmp(key, f->lo[i]) < 0) i = rd_frags_find(f, key); /* behind: search */
    else
        for (int steps = 0; i < f->n && ukey_cmp(f->hi[i], key) <= 0; i++)
            if (++steps == 8) { /* far ahead: search */
                i = rd_frags_find(f, key);
                break;
            }
    *at = i;
    return i < f->n && ukey_cmp(f->lo[i], key) <= 0;
}

uint64_t rd_frags_covering_at(const rd_frags *f, size_t *at, tkv_slice key, uint64_t snap)
{
    if (!rd_frags_at(f, at, key)) return 0;
    for (size_t j = f->off[*at]; j < f->off[*at + 1]; j++)
        if (f->seqs[j] <= snap) return f->seqs[j];
    return 0;
}

/* An open piece of rd_frags_emit: seq has been kept since `begin`. */
typedef struct rd_open {
    uint64_t seq;
    uint32_t tier;
    tkv_slice begin;
} rd_open;

/* emit_step -- rd_frags_emit for clipped fragment [a, b) of fr: closes the
 * open pieces (open[0..*no), newest first) that do not go on into it
 * (ending at prev, or the fragment is not adjacent) and opens its kept seqs. */
static int emit_step(rd_open *open, size_t *no, rd_open *next, const rd_frag *fr, tkv_slice a, int adjacent,
                     tkv_slice prev, rd_keep_fn keep, void *arg, rd_list *out)
{
    size_t nn = 0, o = 0;
    for (size_t j = 0; j < fr->nseq; j++) {
        if (keep && !keep(arg, fr, j)) continue;
        while (o < *no && open[o].seq > fr->seqs[j]) { /* older: not in this fragment */
            TKV_TRY(rd_list_add(out, open[o].begin, prev, open[o].seq, open[o].tier));
            o++;
        }
        if (adjacent && o < *no && open[o].seq == fr->seqs[j]) {
            next[nn++] = open[o++];
        } else {
            next[nn++] = (rd_open){fr->seqs[j], fr->tiers[j], a};
        }
    }
    for (; o < *no; o++) TKV_TRY(rd_list_add(out, open[o].begin, prev, open[o].seq, open[o].tier));
    memcpy(open, next, nn * sizeof *open);
    *no = nn;
    return 0;
}

int rd_frags_emit(const rd_frags *f, const tkv_slice *lo, const tkv_slice *hi, rd_keep_fn keep, void *arg, rd_list *out)
{
    if (!f || f->n == 0) return 0;
    size_t maxseq = 0, start = out->n;
    for (size_t i = 0; i < f->n; i++)
        if (f->off[i + 1] - f->off[i] > maxseq) maxseq = f->off[i + 1] - f->off[i];
    rd_open *open = malloc(maxseq * sizeof *open), *next = malloc(maxseq * sizeof *next);
    int rc = open && next ? 0 : tkv_err(TKV_NO_MEMORY, "out of memory writing range tombstones");
    size_t no = 0;
    tkv_slice prev = {0};
    int have_prev = 0;
    for (size_t i = lo ? rd_frags_find(f, *lo) : 0; rc == 0 && i < f->n; i++) {
        rd_frag fr;
        rd_frags_get(f, i, &fr);
        if (hi && ukey_cmp(fr.lo, *hi) >= 0) break;
        tkv_slice a = lo && ukey_cmp(fr.lo, *lo) < 0 ? *lo : fr.lo;
        tkv_slice b = hi && ukey_cmp(fr.hi, *hi) > 0 ? *hi : fr.hi;
        if (ukey_cmp(a, b) >= 0) continue;
        int adjacent = have_prev && ukey_cmp(prev, a) == 0;
        rc = emit_step(open, &no, next, &fr, a, adjacent, prev, keep, arg, out);
        prev = b;
        have_prev = 1;
    }
    for (size_t o = 0; rc == 0 && o < no; o++) rc = rd_list_add(out, open[o].begin, prev, open[o].seq, open[o].tier);
    free(open);
    free(next);
    if (rc == 0 && out->n - start > 1) qsort(out->t + start, out->n - start, sizeof *out->t, tomb_cmp);
    return rc;
}
