// SPDX-License-Identifier: Apache-2.0
/*
 * rowset.h -- an immutable, refcounted list of the matrix container's rows
 * that one view reads, newest first.
 *
 * A rowset is shared by superversions (db/superversion.h). It holds no
 * reference on its rowtable handles: they belong to the matrix container's
 * registry (db/mx_int.h), which closes a handle only once no live version
 * lists its row; a reader always pins a version that lists every row of its
 * rowset (db/mx_int.h, invariant 1), so the handles outlive every reader.
 * Thread safety: ref/unref from any thread; the contents never change.
 */
#ifndef TKV_MATRIX_ROWSET_H
#define TKV_MATRIX_ROWSET_H

#include <stddef.h>
#include <stdint.h>

#include "matrix/rowtable.h"

typedef struct rowset {
    uint32_t refs; /* atomic */
    size_t n;
    rowtable **rows; /* newest first */
} rowset;

/* rowset_new -- a rowset of rows[0..n) (the array is copied), refs 1; NULL on
 * out of memory. */
rowset *rowset_new(rowtable *const *rows, size_t n);
/* rowset_ref -- takes a reference; returns rs (NULL-safe). */
rowset *rowset_ref(rowset *rs);
/* rowset_unref -- drops a reference, freeing the rowset with the last (NULL-safe). */
void rowset_unref(rowset *rs);

#endif
