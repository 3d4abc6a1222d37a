// SPDX-License-Identifier: Apache-2.0
/*
 * matrixutil.h -- what the tests of src/matrix/ share: rows of random
 * entries (several versions of a key, deletions, the empty key, keys that
 * share long prefixes), a pool in a temporary directory, building and
 * reopening rows, and the checks of a row against the entries it was built
 * from (iteration, seeks) and of the pool's page accounting.
 *
 * Used by test_matrix_pool.c, test_matrix_rowtable.c and
 * test_matrix_column.c. Every helper fails the running test on an error.
 */
#ifndef TKV_TESTS_MATRIXUTIL_H
#define TKV_TESTS_MATRIXUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "matrix/pool.h"
#include "matrix/rowtable.h"
#include "testutil.h"
#include "util/iter.h"
#include "util/status.h"

/* ---------------------------------------------------------------- rows */

/* ent -- one entry of a generated row: an internal key and its value. */
typedef struct ent {
    uint8_t *k; /* internal key */
    size_t kn;
    uint8_t *v;
    size_t vn;
} ent;

/* row_data -- a generated row: its entries in ikey order. */
typedef struct row_data {
    ent *e; /* sorted by ikey_cmp */
    size_t n;
} row_data;

/* ekey -- the entry's internal key. */
static inline tkv_slice ekey(const ent *e) { return slice(e->k, e->kn); }

/* key_boundary -- the first cursor >= c that does not split the versions of a
 * user key (rowtable_set_cursor refuses one that does). */
uint32_t key_boundary(const row_data *d, size_t c);

/* ukey_of -- user key number u: u == 0 is the empty key; every 7th key is
 * short (<= 8 bytes, decided by the metadata prefix alone); the others share
 * the 8-byte prefix "key00000" with many neighbours (so comparisons read the
 * data) and carry a suffix of 0..12 letters. */
size_t ukey_of(uint64_t u, char *out);

/* absent_key_of -- a key never generated: ukey_of(u) followed by a digit
 * (generated suffixes are letters, short keys are 7 bytes); it sorts right
 * after ukey_of(u), between existing keys. */
size_t absent_key_of(uint64_t u, char *out);

/* ent_cmp -- qsort order of entries: ikey_cmp of their keys. */
int ent_cmp(const void *a, const void *b);

/* gen_row -- n entries over user keys [1, universe): each pick adds 1..3
 * versions of one key with fresh increasing sequence numbers from *seq;
 * 15 % are deletions; values 0..maxv bytes, now and then a `big` one. */
row_data gen_row(tu_rng *r, size_t n, uint64_t universe, uint64_t *seq, size_t maxv, size_t big);

/* free_row -- frees the entries of d and empties it. */
void free_row(row_data *d);

/* iter_of -- a vec_iter over the entries of d (the input of rowtable_build). */
tkv_it *iter_of(const row_data *d);

/* lower_bound -- first index of e[lo, hi) whose key is >= t. */
size_t lower_bound(const ent *e, size_t lo, size_t hi, tkv_slice t);

/* ---------------------------------------------------------------- pools */

/* fixture -- a temporary directory holding one pool file. */
typedef struct fixture {
    char *dir;
    char *path;
} fixture;

/* fx_new -- a fresh temporary directory and the pool path matrix.pmem in it. */
fixture fx_new(const char *tag);

/* fx_tmpfs -- 1 if the fixture's directory is on tmpfs (no prefault thread,
 * nothing can be evicted). */
int fx_tmpfs(const fixture *f);

/* fx_free -- removes the fixture's directory and frees its paths. */
void fx_free(fixture *f);

/* open_pool -- pool_open that fails the test with the error. */
pool *open_pool(const char *path, uint64_t size, pm_mode mode, const pool_options *o);

/* build_row -- rowtable_build of row `id` from d over `older`, committed if
 * `commit`; fails the test on an error. */
rowtable *build_row(pool *p, uint64_t id, const row_data *d, const rowtable *older, int commit);

/* check_accounting -- free pages + pages owned by committed rows == all pages. */
void check_accounting(pool *p, const char *what);

/* open_all -- rowtable_open of every committed row, sorted newest first. */
size_t open_all(pool *p, rowtable **out, size_t cap);

/* expect_corruption -- rc is TKV_CORRUPTION and tkv_errmsg() names `needle`. */
void expect_corruption(int rc, const char *needle, const char *what);

/* ---------------------------------------------------------------- checks */

/* check_iter -- check_iter_from on rowtable_iter(r) (the row's own cursor). */
void check_iter(tu_rng *rng, const rowtable *r, const row_data *d, uint32_t cursor, const char *what);

/* check_iter_from -- forward, reverse and random seeks over entries
 * [cursor, n) of an iterator `it` (destroyed here). */
void check_iter_from(tkv_it *it, tu_rng *rng, const row_data *d, uint32_t cursor, const char *what);

#endif
