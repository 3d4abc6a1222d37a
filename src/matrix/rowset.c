// SPDX-License-Identifier: Apache-2.0
/*
 * rowset.c -- refcounted lists of rows read by one view (see rowset.h).
 */
#include "matrix/rowset.h"

#include <stdlib.h>
#include <string.h>

rowset *rowset_new(rowtable *const *rows, size_t n)
{
    rowset *rs = calloc(1, sizeof *rs);
    if (!rs) return NULL;
    rs->rows = calloc(n ? n : 1, sizeof *rs->rows);
    if (!rs->rows) {
        free(rs);
        return NULL;
    }
    if (n) memcpy(rs->rows, rows, n * sizeof *rows);
    rs->n = n;
    rs->refs = 1;
    return rs;
}

rowset *rowset_ref(rowset *rs)
{
    if (rs) __atomic_fetch_add(&rs->refs, 1, __ATOMIC_RELAXED);
    return rs;
}

void rowset_unref(rowset *rs)
{
    if (!rs || __atomic_sub_fetch(&rs->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    free(rs->rows);
    free(rs);
}
