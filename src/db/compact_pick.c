// SPDX-License-Identifier: Apache-2.0
/*
 * compact_pick.c -- choosing compactions of the leveled SSD tree: level
 * scores, a pick's input files closed under overlap, round-robin cursors per
 * level, manual range picks (compact_pick.h).
 */
#include "db/compact_pick.h"

#include <stdlib.h>
#include <string.h>

#include "sched/clock.h"
#include "util/status.h"

void cmp_free(compaction *c)
{
    if (!c) return;
    for (int w = 0; w < 2; w++) {
        for (size_t i = 0; i < c->ninputs[w]; i++) file_meta_unref(c->inputs[w][i]);
        free(c->inputs[w]);
    }
    free(c);
}

double cmp_score_in(const version *v, const struct tkv_options *o, int lo, int hi, int *level)
{
    double best = -1.0;
    *level = lo;
    if (lo == 0) {
        best = (double)v->nfiles[0] / (double)o->l0_compaction_trigger;
        /* l0=matrix: L0 SST files are left from an l0=sst past and go to L1
         * before any column may (mx_int.h, invariant 4) */
        if (o->l0 == L0_MATRIX && v->nfiles[0] > 0 && best < 1.0) best = 1.0;
    }
    for (int l = lo > 1 ? lo : 1; l <= hi && l < VERSION_LEVELS - 1; l++) {
        double s = (double)version_level_bytes(v, l) / (double)options_level_target(o, l);
        if (s > best) {
            best = s;
            *level = l;
        }
    }
    return best;
}

static tkv_slice fm_small(const file_meta *f) { return slice(f->smallest.data, f->smallest.len); }
static tkv_slice fm_large(const file_meta *f) { return slice(f->largest.data, f->largest.len); }

/* any_busy -- 1 if a file of the list is being compacted. */
static int any_busy(file_meta **f, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (f[i]->being_compacted) return 1;
    return 0;
}

/* range_of -- smallest and largest user key over files. */
static void range_of(file_meta **f, size_t n, tkv_slice *lo, tkv_slice *hi)
{
    *lo = ikey_user(fm_small(f[0]));
    *hi = ikey_user(fm_large(f[0]));
    for (size_t i = 1; i < n; i++) {
        tkv_slice a = ikey_user(fm_small(f[i])), b = ikey_user(fm_large(f[i]));
        if (ukey_cmp(a, *lo) < 0) *lo = a;
        if (ukey_cmp(b, *hi) > 0) *hi = b;
    }
}

/* finish_pick -- adds the overlapping files of level+1, checks nothing is
 * busy, marks and refs everything. Takes ownership of in0. */
static compaction *finish_pick(version *v, int level, file_meta **in0, size_t n0, int *busy)
{
    compaction *c = calloc(1, sizeof *c);
    if (!c) {
        free(in0);
        return NULL;
    }
    c->level = level;
    c->out_level = level + 1;
    c->cls = level == 0 ? IO_COMPACT_L0 : IO_COMPACT_DEEP;
    c->inputs[0] = in0;
    c->ninputs[0] = n0;
    if (level == 0) {
        /* L0 files overlap each other: widen the range until it is closed
         * under overlap, so no older version of a key stays behind. */
        tkv_slice lo, hi;
        range_of(in0, n0, &lo, &hi);
        free(c->inputs[0]);
        c->inputs[0] = NULL;
        if (version_overlapping(v, 0, &lo, &hi, &c->inputs[0], &c->ninputs[0]) < 0) {
            free(c);
            return NULL;
        }
    }
    tkv_slice lo, hi;
    range_of(c->inputs[0], c->ninputs[0], &lo, &hi);
    if (version_overlapping(v, c->out_level, &lo, &hi, &c->inputs[1], &c->ninputs[1]) < 0) {
        free(c->inputs[0]);
        free(c);
        return NULL;
    }
    if (any_busy(c->inputs[0], c->ninputs[0]) || any_busy(c->inputs[1], c->ninputs[1])) {
        if (busy) *busy = 1;
        free(c->inputs[0]);
        free(c->inputs[1]);
        free(c);
        return NULL;
    }
    for (int w = 0; w < 2; w++)
        for (size_t i = 0; i < c->ninputs[w]; i++) {
            file_meta_ref(c->inputs[w][i]);
            c->inputs[w][i]->being_compacted = 1;
            c->est_bytes += c->inputs[w][i]->size;
        }
    c->trivial_move = level > 0 && c->ninputs[0] == 1 && c->ninputs[1] == 0;
    return c;
}

/* below -- [*b0, *b1): the files of level+1 that f overlaps (contiguous). */
static void below(const version *v, int level, const file_meta *f, size_t *b0, size_t *b1)
{
    tkv_slice hi = ikey_user(fm_large(f));
    *b0 = version_find_file(v, level + 1, ikey_user(fm_small(f)));
    *b1 = *b0;
    while (*b1 < v->nfiles[level + 1] && ukey_cmp(ikey_user(fm_small(v->files[level + 1][*b1])), hi) <= 0) (*b1)++;
}

/* takeable -- 1 if f and the files below it in [b0, b1) are free for a deep
 * pick: not being compacted, and f not wanted by L0->L1 work. */
static int takeable(const version *v, int level, const file_meta *f, size_t b0, size_t b1, uint64_t now)
{
    if (f->being_compacted || f->wanted_until_us > now) return 0;
    for (size_t i = b0; i < b1; i++)
        if (v->files[level + 1][i]->being_compacted) return 0;
    return 1;
}

/* A deep run being chosen: files [first, end) of the level, the files below
 * them as index ranges (one per file, disjoint, increasing). */
typedef struct run {
    size_t first, end;
    size_t *b0, *b1;
    uint64_t bytes_in, bytes_all;
} run;

/* run_extend -- adds the files after r's first while they are takeable, the
 * overlap below each is disjoint from the previous file's (a clean cut
 * between them), the level's bytes taken are below `excess` and the input
 * below `budget`. */
static void run_extend(const version *v, int level, run *r, uint64_t excess, uint64_t budget, uint64_t now)
{
    while (r->end < v->nfiles[level] && r->bytes_in < excess) {
        const file_meta *g = v->files[level][r->end];
        size_t b0, b1;
        below(v, level, g, &b0, &b1);
        size_t k = r->end - r->first;
        if (b1 > b0 && b0 < r->b1[k - 1]) break; /* a file below straddles the two: no cut point */
        if (!takeable(v, level, g, b0, b1, now)) break;
        uint64_t add = g->size;
        for (size_t i = b0; i < b1; i++) add += v->files[level + 1][i]->size;
        if (r->bytes_all + add > budget) break;
        r->b0[k] = b0;
        r->b1[k] = b1;
        r->bytes_in += g->size;
        r->bytes_all += add;
        r->end++;
    }
}

/* run_compaction -- the compaction of run r (inputs ref'd and marked). */
static compaction *run_compaction(const version *v, int level, const run *r)
{
    size_t n0 = r->end - r->first, n1 = 0;
    for (size_t k = 0; k < n0; k++) n1 += r->b1[k] - r->b0[k];
    compaction *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->inputs[0] = malloc(n0 * sizeof *c->inputs[0]);
    c->inputs[1] = malloc((n1 ? n1 : 1) * sizeof *c->inputs[1]);
    if (!c->inputs[0] || !c->inputs[1]) {
        free(c->inputs[0]);
        free(c->inputs[1]);
        free(c);
        return NULL;
    }
    c->level = level;
    c->out_level = level + 1;
    c->cls = IO_COMPACT_DEEP;
    for (size_t k = 0; k < n0; k++) {
        c->inputs[0][c->ninputs[0]++] = v->files[level][r->first + k];
        for (size_t i = r->b0[k]; i < r->b1[k]; i++) c->inputs[1][c->ninputs[1]++] = v->files[level + 1][i];
    }
    for (int w = 0; w < 2; w++)
        for (size_t i = 0; i < c->ninputs[w]; i++) {
            file_meta_ref(c->inputs[w][i]);
            c->inputs[w][i]->being_compacted = 1;
            c->est_bytes += c->inputs[w][i]->size;
        }
    c->trivial_move = c->ninputs[0] == 1 && c->ninputs[1] == 0;
    return c;
}

/* pick_run -- the deep pick of `level` (cmp_pick_in): the first takeable
 * file after the level's compaction cursor (round robin over the key space,
 * as LevelDB's compact pointer), extended into a run. *wanted (may be NULL)
 * is set when it took nothing and some file was passed over only because
 * L0->L1 work wants it. */
static compaction *pick_run(tkv_db *db, version *v, int level, int *wanted)
{
    size_t n = v->nfiles[level];
    run r = {0};
    r.b0 = malloc(2 * (n ? n : 1) * sizeof *r.b0);
    if (!r.b0) return NULL;
    r.b1 = r.b0 + (n ? n : 1);
    uint64_t now = sched_mono_us(), target = options_level_target(&db->opts, level), busy = 0;
    for (size_t i = 0; i < n; i++) busy += v->files[level][i]->being_compacted ? v->files[level][i]->size : 0;
    uint64_t bytes = version_level_bytes(v, level);
    uint64_t excess = bytes > target + busy ? bytes - target - busy : 0;
    uint64_t budget = CMP_RUN_FILES * db->opts.sst_size;
    size_t start = (size_t)db->compact_cursor[level] % (n ? n : 1);
    compaction *c = NULL;
    for (size_t k = 0; k < n && !c; k++) {
        size_t i = (start + k) % n;
        const file_meta *f = v->files[level][i];
        below(v, level, f, &r.b0[0], &r.b1[0]);
        if (!takeable(v, level, f, r.b0[0], r.b1[0], now)) {
            if (wanted && !f->being_compacted && f->wanted_until_us > now) *wanted = 1;
            continue;
        }
        r.first = i;
        r.end = i + 1;
        r.bytes_in = r.bytes_all = f->size;
        for (size_t j = r.b0[0]; j < r.b1[0]; j++) r.bytes_all += v->files[level + 1][j]->size;
        run_extend(v, level, &r, excess, budget, now);
        c = run_compaction(v, level, &r);
        if (c) db->compact_cursor[level] = r.end;
        break; /* (out of memory: no pick now) */
    }
    free(r.b0);
    return c;
}

compaction *cmp_pick_in(tkv_db *db, version *v, int lo, int hi, int *busy)
{
    int level;
    if (cmp_score_in(v, &db->opts, lo, hi, &level) < 1.0) return NULL;
    if (level == 0) {
        file_meta **in = malloc(v->nfiles[0] * sizeof *in);
        if (!in) return NULL;
        memcpy(in, v->files[0], v->nfiles[0] * sizeof *in);
        return finish_pick(v, 0, in, v->nfiles[0], busy);
    }
    return pick_run(db, v, level, busy);
}

int cmp_l0_needs(const version *v, file_meta ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (v->nfiles[0] == 0) return 0;
    tkv_slice lo, hi;
    range_of(v->files[0], v->nfiles[0], &lo, &hi);
    return version_overlapping(v, 1, &lo, &hi, out, n);
}

compaction *cmp_pick_range_dels(version *v, int level, const tkv_slice *lo, const tkv_slice *hi, uint64_t below,
                                int *busy)
{
    file_meta **in;
    size_t n;
    if (version_overlapping(v, level, lo, hi, &in, &n) < 0) return NULL;
    size_t i = 0;
    while (i < n && (!in[i]->num_range_dels || in[i]->number >= below)) i++;
    compaction *c = i < n ? calloc(1, sizeof *c) : NULL;
    if (c && in[i]->being_compacted) {
        *busy = 1;
        free(c);
        c = NULL;
    } else if (c) {
        c->level = c->out_level = level; /* rewritten in place: nothing below it is read */
        c->cls = IO_COMPACT_DEEP;
        c->inputs[0] = in;
        c->ninputs[0] = 1;
        in[0] = in[i];
        file_meta_ref(in[0]);
        in[0]->being_compacted = 1;
        c->est_bytes = in[0]->size;
        c->manual = 1;
        return c;
    }
    free(in);
    return NULL;
}

compaction *cmp_pick_range(version *v, int level, const tkv_slice *lo, const tkv_slice *hi, int *busy)
{
    file_meta **in;
    size_t n;
    if (version_overlapping(v, level, lo, hi, &in, &n) < 0) return NULL;
    if (n == 0) {
        free(in);
        return NULL;
    }
    compaction *c = finish_pick(v, level, in, n, busy);
    if (c) {
        c->manual = 1;
        c->trivial_move = 0; /* a manual compaction rewrites (drops tombstones) */
    }
    return c;
}
