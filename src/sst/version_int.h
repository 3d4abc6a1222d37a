// SPDX-License-Identifier: Apache-2.0
/*
 * version_int.h -- the private interface between version.c (the immutable
 * version object) and version_set.c (the set that owns the live-version list,
 * the current version and the MANIFEST). Not for use outside src/sst/version*.c.
 */
#ifndef TKV_SST_VERSION_INT_H
#define TKV_SST_VERSION_INT_H

#include <stdint.h>

#include "sst/version.h"

/* version_new -- an empty, unlinked version of vs with 0 refs (NULL and
 * TKV_NO_MEMORY recorded when out of memory). */
version *version_new(version_set *vs);

/* version_free -- drops the file refs and frees v (which must be unlinked). */
void version_free(version *v);

/* version_build -- base + e as a new unlinked version of vs with 0 refs
 * (base may be NULL: empty). Checks the level rules (version.c, invariant 2);
 * nothing is changed on error. */
int version_build(version_set *vs, const version *base, const version_edit *e, version **out);

/* vset_unlink_version -- takes v off vs's live list under the list's lock
 * (version_set.c, invariant 1); called by version_unref before it frees v. */
void vset_unlink_version(version_set *vs, version *v);

/* version_cmp_u64 -- qsort comparator of uint64_t, ascending. */
static inline int version_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

#endif
