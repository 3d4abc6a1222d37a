/*
 * compact_pick.c -- choosing compactions of the leveled SSD tree: level
 * scores, a pick's input files closed under overlap, round-robin cursors per
 * level, manual range picks (compact_pick.h).
 */
#include "db/compact_pick.h"

#include <stdlib.h>
#include <string.h>

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
        if (version_overlapping(v, 0, &lo, &hi, &c->inputs[0], &c->ninputs[0]) < 0) { free(c); return NULL; }
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
    /* Leveled: the first non-busy file after the level's compaction cursor
     * (round robin over the key space, as LevelDB's compact pointer). */
    size_t n = v->nfiles[level];
    size_t start = (size_t)db->compact_cursor[level] % (n ? n : 1);
    for (size_t k = 0; k < n; k++) {
        size_t i = (start + k) % n;
        if (v->files[level][i]->being_compacted) continue;
        file_meta **in = malloc(sizeof *in);
        if (!in) return NULL;
        in[0] = v->files[level][i];
        int file_busy = 0;
        compaction *c = finish_pick(v, level, in, 1, &file_busy);
        if (c) {
            db->compact_cursor[level] = i + 1;
            return c;
        }
    }
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
