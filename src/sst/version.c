// SPDX-License-Identifier: Apache-2.0
/*
 * version.c -- the immutable version object: refs, level queries (bytes,
 * file search, overlapping files), row cursors, and building the next
 * version from a base and an edit (rules: docs/format-manifest.md,
 * "Applying an edit"). The set that owns versions is version_set.c.
 *
 * Invariants:
 *  (1) Every version is immutable once built. Applying an edit copies the file
 *      arrays of the current version (sharing the file_meta refs) and changes
 *      the copy; the old version lives on while anyone references it.
 *  (2) L0 is sorted newest first: max_seq descending, ties larger number first.
 *      L1+ are sorted by smallest key and their user-key ranges are disjoint
 *      (largest user key of a file < smallest user key of the next). An edit
 *      that would break this, delete a file its level does not hold, or list
 *      a file number twice is TKV_CORRUPTION and nothing is installed.
 */
#include "sst/version.h"

#include <stdlib.h>

#include "sst/version_int.h"
#include "util/status.h"

/* ---------------------------------------------------------------- helpers */

/* version_smallest_ukey, version_largest_ukey -- the user keys of f's bounds. */
static tkv_slice version_smallest_ukey(const file_meta *f)
{
    return ikey_user(slice(f->smallest.data, f->smallest.len));
}
static tkv_slice version_largest_ukey(const file_meta *f) { return ikey_user(slice(f->largest.data, f->largest.len)); }

/* ---------------------------------------------------------------- versions */

/* version_new -- an empty, unlinked version with 0 refs. */
version *version_new(version_set *vs)
{
    version *v = calloc(1, sizeof *v);
    if (!v) {
        tkv_err(TKV_NO_MEMORY, "out of memory allocating a version");
        return NULL;
    }
    v->vs = vs;
    return v;
}

/* version_free -- drops the file refs and frees v (which must be unlinked). */
void version_free(version *v)
{
    for (int l = 0; l < VERSION_LEVELS; l++) {
        for (size_t i = 0; i < v->nfiles[l]; i++) file_meta_unref(v->files[l][i]);
        free(v->files[l]);
    }
    for (size_t i = 0; i < v->nrows; i++) row_key_unref(v->rows[i].rd_start);
    free(v->rows);
    free(v);
}

/* version_ref -- takes one more reference on v. */
void version_ref(version *v) { __atomic_fetch_add(&v->refs, 1, __ATOMIC_RELAXED); }

/* version_ref_files -- a files-only reference (pins no matrix rows). Order:
 * refs up before file_refs, file_refs down before refs, so that
 * refs == file_refs never holds while a row reader is among the refs. */
void version_ref_files(version *v)
{
    version_ref(v);
    __atomic_fetch_add(&v->file_refs, 1, __ATOMIC_RELEASE);
}

/* version_unref_files -- drops a version_ref_files reference. */
int version_unref_files(version *v)
{
    if (!v) return 0;
    __atomic_fetch_sub(&v->file_refs, 1, __ATOMIC_RELEASE);
    return version_unref(v);
}

/* version_unref -- at 0 unlinks v from the live list (under its lock) and
 * frees it; 1 then. */
int version_unref(version *v)
{
    if (!v) return 0;
    if (__atomic_sub_fetch(&v->refs, 1, __ATOMIC_ACQ_REL) != 0) return 0;
    if (v->vs) vset_unlink_version(v->vs, v);
    version_free(v);
    return 1;
}

/* version_level_bytes -- sum of file sizes at level. */
uint64_t version_level_bytes(const version *v, int level)
{
    if (level < 0 || level >= VERSION_LEVELS) return 0;
    uint64_t sum = 0;
    for (size_t i = 0; i < v->nfiles[level]; i++) sum += v->files[level][i]->size;
    return sum;
}

/* version_find_file -- binary search for the first file whose largest user key
 * >= ukey (L1+ order; on L0 it is only meaningful for a single file). */
size_t version_find_file(const version *v, int level, tkv_slice ukey)
{
    if (level < 0 || level >= VERSION_LEVELS) return 0;
    size_t lo = 0, hi = v->nfiles[level];
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ukey_cmp(version_largest_ukey(v->files[level][mid]), ukey) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* version_overlapping -- files of level intersecting [lo, hi] in level order. */
int version_overlapping(const version *v, int level, const tkv_slice *lo, const tkv_slice *hi, file_meta ***out,
                        size_t *n)
{
    if (!v || !out || !n) return tkv_err(TKV_INVALID, "version_overlapping: NULL argument");
    *out = NULL;
    *n = 0;
    if (level < 0 || level >= VERSION_LEVELS)
        return tkv_err(TKV_INVALID, "version_overlapping: level %d out of range", level);
    file_meta **files = v->files[level];
    size_t nf = v->nfiles[level];
    /* L1+ is sorted and disjoint: skip the files entirely below lo. */
    size_t start = (level > 0 && lo) ? version_find_file(v, level, *lo) : 0;
    /* Two passes: count, then fill. */
    size_t cnt = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = start; i < nf; i++) {
            if (lo && ukey_cmp(version_largest_ukey(files[i]), *lo) < 0) continue;
            if (hi && ukey_cmp(version_smallest_ukey(files[i]), *hi) > 0) {
                if (level > 0) break; /* sorted: nothing further can intersect */
                continue;
            }
            if (pass == 1) (*out)[(*n)++] = files[i];
            else cnt++;
        }
        if (pass == 0) {
            if (cnt == 0) return 0;
            *out = malloc(cnt * sizeof **out);
            if (!*out) return tkv_err(TKV_NO_MEMORY, "out of memory listing %zu overlapping files", cnt);
        }
    }
    return 0;
}

/* version_cmp_l0 -- newest first: max_seq descending, then number descending. */
static int version_cmp_l0(const void *a, const void *b)
{
    const file_meta *x = *(file_meta *const *)a, *y = *(file_meta *const *)b;
    if (x->max_seq != y->max_seq) return x->max_seq > y->max_seq ? -1 : 1;
    if (x->number != y->number) return x->number > y->number ? -1 : 1;
    return 0;
}

/* version_cmp_sorted -- L1+: smallest internal key ascending, then number. */
static int version_cmp_sorted(const void *a, const void *b)
{
    const file_meta *x = *(file_meta *const *)a, *y = *(file_meta *const *)b;
    int c = ikey_cmp(slice(x->smallest.data, x->smallest.len), slice(y->smallest.data, y->smallest.len));
    if (c) return c;
    return x->number < y->number ? -1 : x->number > y->number;
}

/* version_build_level -- the files of `level` in base minus e's deletions plus
 * its additions, sorted (invariant 2 checked for L1+). Marks found[] deletions. */
static int version_build_level(version *v, const version *base, const version_edit *e, int level, char *found)
{
    size_t nadd = 0;
    for (size_t i = 0; i < e->nadded; i++) nadd += e->added[i].level == level;
    size_t nbase = base ? base->nfiles[level] : 0;
    if (nbase + nadd == 0) return 0;
    file_meta **files = malloc((nbase + nadd) * sizeof *files);
    if (!files) return tkv_err(TKV_NO_MEMORY, "out of memory building a version");
    v->files[level] = files;
    size_t n = 0;
    for (size_t i = 0; i < nbase; i++) {
        file_meta *f = base->files[level][i];
        int deleted = 0;
        for (size_t d = 0; d < e->ndeleted; d++) {
            if (e->deleted[d].level == level && e->deleted[d].number == f->number) {
                found[d] = 1;
                deleted = 1;
            }
        }
        if (deleted) continue;
        file_meta_ref(f);
        files[n++] = f;
        v->nfiles[level] = n;
    }
    for (size_t i = 0; i < e->nadded; i++) {
        if (e->added[i].level != level) continue;
        file_meta_ref(e->added[i].f);
        files[n++] = e->added[i].f;
        v->nfiles[level] = n;
    }
    if (n == 0) {
        free(files);
        v->files[level] = NULL;
        return 0;
    }
    qsort(files, n, sizeof *files, level == 0 ? version_cmp_l0 : version_cmp_sorted);
    if (level > 0) {
        for (size_t i = 1; i < n; i++) {
            if (ukey_cmp(version_largest_ukey(files[i - 1]), version_smallest_ukey(files[i])) >= 0)
                return tkv_err(TKV_CORRUPTION, "edit would overlap files at L%d (%06llu.sst and %06llu.sst)", level,
                               (unsigned long long)files[i - 1]->number, (unsigned long long)files[i]->number);
        }
    }
    return 0;
}

/* version_check_unique -- every file number appears once in v. */
static int version_check_unique(const version *v)
{
    size_t total = 0;
    for (int l = 0; l < VERSION_LEVELS; l++) total += v->nfiles[l];
    if (total < 2) return 0;
    uint64_t *nums = malloc(total * sizeof *nums);
    if (!nums) return tkv_err(TKV_NO_MEMORY, "out of memory checking a version");
    size_t k = 0;
    for (int l = 0; l < VERSION_LEVELS; l++)
        for (size_t i = 0; i < v->nfiles[l]; i++) nums[k++] = v->files[l][i]->number;
    qsort(nums, total, sizeof *nums, version_cmp_u64);
    int rc = 0;
    for (size_t i = 1; i < total && rc == 0; i++)
        if (nums[i] == nums[i - 1])
            rc = tkv_err(TKV_CORRUPTION, "edit would list %06llu.sst twice", (unsigned long long)nums[i]);
    free(nums);
    return rc;
}

/* version_row_cursor -- binary search of v's rows (sorted by row_id). */
int version_row_cursor(const version *v, uint64_t row_id, uint64_t *cursor)
{
    size_t lo = 0, hi = v->nrows;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v->rows[mid].row_id < row_id) lo = mid + 1;
        else hi = mid;
    }
    if (lo == v->nrows || v->rows[lo].row_id != row_id) return 0;
    *cursor = v->rows[lo].cursor;
    return 1;
}

const row_key *version_row_rd_start(const version *v, uint64_t row_id)
{
    size_t lo = 0, hi = v->nrows;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v->rows[mid].row_id < row_id) lo = mid + 1;
        else hi = mid;
    }
    return lo < v->nrows && v->rows[lo].row_id == row_id ? v->rows[lo].rd_start : NULL;
}

/* version_cmp_row -- row_cursor by row_id ascending. */
static int version_cmp_row(const void *a, const void *b)
{
    uint64_t x = ((const row_cursor *)a)->row_id, y = ((const row_cursor *)b)->row_id;
    return x < y ? -1 : x > y;
}

/* version_build_rows -- v->rows = base's rows with e's cursors set/added and
 * e's removed rows dropped. Removing a row the base does not have is
 * TKV_CORRUPTION (as is deleting a file a level does not hold). */
static int version_build_rows(version *v, const version *base, const version_edit *e)
{
    size_t nbase = base ? base->nrows : 0, cap = nbase + e->ncursors;
    if (cap == 0) return 0;
    row_cursor *rows = malloc(cap * sizeof *rows);
    if (!rows) return tkv_err(TKV_NO_MEMORY, "out of memory building a version");
    size_t n = 0;
    for (size_t i = 0; i < nbase; i++) {
        const row_cursor *rc = &base->rows[i];
        int drop = 0;
        for (size_t j = 0; j < e->nrows_removed && !drop; j++) drop = e->rows_removed[j] == rc->row_id;
        for (size_t j = 0; j < e->ncursors && !drop; j++)
            drop = e->cursors[j].row_id == rc->row_id; /* re-added below */
        if (!drop) rows[n++] = *rc;
    }
    for (size_t j = 0; j < e->nrows_removed; j++) {
        uint64_t c;
        if (!base || !version_row_cursor(base, e->rows_removed[j], &c)) {
            free(rows);
            return tkv_err(TKV_CORRUPTION, "edit removes matrix row %llu, which the version does not hold",
                           (unsigned long long)e->rows_removed[j]);
        }
    }
    for (size_t j = 0; j < e->ncursors; j++) rows[n++] = e->cursors[j];
    for (size_t i = 0; i < n; i++) row_key_ref(rows[i].rd_start); /* v's own */
    qsort(rows, n, sizeof *rows, version_cmp_row);
    v->rows = rows;
    v->nrows = n;
    return 0;
}

/* version_build -- base + e as a new unlinked version with 0 refs (base may be
 * NULL: empty). Nothing is changed on error. */
int version_build(version_set *vs, const version *base, const version_edit *e, version **out)
{
    *out = NULL;
    version *v = version_new(vs);
    if (!v) return TKV_NO_MEMORY;
    char *found = e->ndeleted ? calloc(e->ndeleted, 1) : NULL;
    int rc = (e->ndeleted && !found) ? tkv_err(TKV_NO_MEMORY, "out of memory building a version") : 0;
    for (int l = 0; l < VERSION_LEVELS && rc == 0; l++) rc = version_build_level(v, base, e, l, found);
    for (size_t d = 0; d < e->ndeleted && rc == 0; d++)
        if (!found[d])
            rc = tkv_err(TKV_CORRUPTION, "edit deletes %06llu.sst from L%d, which does not hold it",
                         (unsigned long long)e->deleted[d].number, e->deleted[d].level);
    if (rc == 0) rc = version_check_unique(v);
    if (rc == 0) rc = version_build_rows(v, base, e);
    free(found);
    if (rc < 0) {
        version_free(v);
        return rc;
    }
    *out = v;
    return 0;
}
