// SPDX-License-Identifier: Apache-2.0
/*
 * testutil.h -- helpers shared by the API-level tests: temporary directories,
 * a seeded deterministic PRNG, the TKV_TEST_SCALE factor, small-memory options,
 * and an ordered in-memory model of a key-value store to compare tierkv with.
 *
 * Reproducing a failure: every test prints "seed=N"; rerun with TKV_TEST_SEED=N.
 * Running one case: TKV_TEST_FILTER=name (a cmocka pattern, `*` and `?`), in
 * the tests whose main calls tu_seed() before cmocka_run_group_tests.
 */
#ifndef TKV_TESTUTIL_H
#define TKV_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "io/io.h"
#include "tierkv.h"

/* ---------------------------------------------------------------- directories */

/* tu_tmpdir -- creates a fresh directory /tmp/tkv-<tag>-XXXXXX (mkdtemp) and
 * returns its malloc'd path; aborts the test on failure. */
char *tu_tmpdir(const char *tag);
/* tu_rmrf -- removes path and everything below it (ignores errors). */
void tu_rmrf(const char *path);
/* tu_tmpdir_free -- tu_rmrf(path) then free(path); NULL is a no-op. Set
 * TKV_TEST_KEEP=1 to keep the directory for inspection. */
void tu_tmpdir_free(char *path);
/* tu_path -- malloc'd "dir/name". */
char *tu_path(const char *dir, const char *name);

/* ---------------------------------------------------------------- randomness */

/* xoshiro256** state. */
typedef struct tu_rng {
    uint64_t s[4];
} tu_rng;

/* tu_seed -- the run's seed: TKV_TEST_SEED if set, else derived from the time
 * and pid. Printed on first use ("seed=N") so that failures can be replayed.
 * The first call also applies TKV_TEST_FILTER (cmocka_set_test_filter). */
uint64_t tu_seed(void);
/* tu_rng_init -- seeds r (splitmix64 expansion of seed). */
void tu_rng_init(tu_rng *r, uint64_t seed);
uint64_t tu_rng_next(tu_rng *r);
/* tu_rng_below -- uniform in [0, n); n == 0 gives 0. */
uint64_t tu_rng_below(tu_rng *r, uint64_t n);
/* tu_rng_range -- uniform in [lo, hi]. */
uint64_t tu_rng_range(tu_rng *r, uint64_t lo, uint64_t hi);
/* tu_rng_chance -- 1 with probability per_million / 1e6. */
int tu_rng_chance(tu_rng *r, uint32_t per_million);
/* tu_rng_fill -- n pseudo-random bytes. */
void tu_rng_fill(tu_rng *r, void *p, size_t n);
/* tu_mix64 -- a stateless 64-bit mixer (splitmix64 finaliser). */
uint64_t tu_mix64(uint64_t x);
/* tu_splitmix64 -- the splitmix64 generator: the next output of the state *x,
 * which it advances (the output is tu_mix64 of the state before the step). */
uint64_t tu_splitmix64(uint64_t *x);
/* tu_rng_init_splitmix -- seeds r with four successive tu_splitmix64 outputs
 * from seed, the usual xoshiro256** seeding. tu_rng_init seeds differently;
 * tests whose expected numbers were tuned on this sequence keep it. */
void tu_rng_init_splitmix(tu_rng *r, uint64_t seed);
/* tu_rng_signed_unit -- uniform in [-1, 1) (53 bits). */
double tu_rng_signed_unit(tu_rng *r);

/* tu_scale -- TKV_TEST_SCALE (>= 1, default 1). */
unsigned tu_scale(void);

/* ---------------------------------------------------------------- misc */

/* tu_now_ms -- monotonic milliseconds. */
double tu_now_ms(void);

/* tu_is_sst -- 1 if path names an SST file (ends in ".sst"): for fault hooks. */
int tu_is_sst(const char *path);
/* tu_thread_is -- 1 if the calling thread is named `name` (the engine names
 * its threads: tkv-flush, tkv-column, tkv-deep, ...): for fault hooks. */
int tu_thread_is(const char *name);
/* tu_hex -- printable rendering of bytes (at most ~48 shown) in one of a few
 * rotating static buffers: for failure messages only. */
const char *tu_hex(const void *p, size_t n);
/* tu_opt -- tkv_options_set that tolerates options this build does not have:
 * on TKV_INVALID it logs tkv_errmsg() once per option name and returns it. */
int tu_opt(tkv_options *o, const char *name, const char *value);
/* tu_small_options -- options with small memory (memtable_size 64K, or
 * TKV_TEST_MEMTABLE_SIZE if set; small tiers where the options exist). */
tkv_options *tu_small_options(void);

/* tu_open_ok / tu_close_ok -- tkv_open / tkv_close that fail the test with
 * the error code and message. */
tkv_db *tu_open_ok(const char *dir, const tkv_options *o);
void tu_close_ok(tkv_db *db);
/* tu_prop_u64 -- the number right after `field` (e.g. "columns: count=") in
 * property `name`; fails the test if the property or field is missing. */
uint64_t tu_prop_u64(tkv_db *db, const char *name, const char *field);
/* tu_list_numbered -- the numbers N of the files "<N><suffix>" in dir (e.g.
 * suffix ".sst", ".wal"), sorted, in a malloc'd array *out; returns the count. */
size_t tu_list_numbered(const char *dir, const char *suffix, uint64_t **out);
/* tu_count_missing -- how many of a[0..na) are absent from b[0..nb). */
size_t tu_count_missing(const uint64_t *a, size_t na, const uint64_t *b, size_t nb);
/* tu_wait_quiet -- waits (<= timeout_ms) until no immutable memtable is
 * queued, no deep compaction runs or is due (every level L1+ below its
 * target), no L0 -> L1 compaction runs or is due (L0 below
 * l0_compaction_trigger SSTs), and no column runs or is due (the matrix
 * container is not busy and its pool below matrix_trigger), twice in a row
 * 5 ms apart; 1 if it got there, 0 on timeout. It does not flush: call
 * tkv_flush first. A database made read-only by a background error is
 * quiet once no deep compaction and no column runs. */
int tu_wait_quiet(tkv_db *db, double timeout_ms);
/* tu_check_pool_pages -- (l0=matrix) every pool page in use belongs to a
 * row (tkv.matrix "pages: used=" equals "owned_by_rows="); a mismatch must
 * last 2 s to fail the test (a flush holds pages no row owns yet). */
void tu_check_pool_pages(tkv_db *db, const char *what);
/* tu_keycmp -- the documented key order (memcmp, shorter first on a prefix). */
int tu_keycmp(const void *a, size_t an, const void *b, size_t bn);
/* tu_cmp_u64 -- qsort comparator of uint64_t, ascending. */
int tu_cmp_u64(const void *a, const void *b);
/* tu_absdiff -- |a - b| of two unsigned numbers. */
uint64_t tu_absdiff(uint64_t a, uint64_t b);
/* tu_file_size -- st_size of path; fails the test if it cannot be stat'ed. */
uint64_t tu_file_size(const char *path);
/* tu_copy_file -- a sparse copy of src to dst (blocks of zeros become holes:
 * a pool stays small); fails the test on an error. */
void tu_copy_file(const char *src, const char *dst);
/* tu_copy_db -- a copy of the closed database directory src in dst (removed
 * first, then made), every file copied by tu_copy_file; its LOCK file only
 * when with_lock. */
void tu_copy_db(const char *src, const char *dst, int with_lock);
/* tu_dir_state_take -- what dir holds now: the list of its files, and for
 * the directory and each file its size, allocated blocks, mode, mtime,
 * ctime and (files) a hash of every byte. tu_dir_state_expect_same fails
 * the test, naming `what`, the file and what changed, unless b is a. */
typedef struct tu_dir_state tu_dir_state;
tu_dir_state *tu_dir_state_take(const char *dir);
void tu_dir_state_expect_same(const tu_dir_state *a, const tu_dir_state *b, const char *what);
/* tu_dir_state_expect_same_linked -- the same, but the ctime of files whose
 * name ends in `suffix` may differ: hard links to them (a checkpoint's)
 * change their ctime and link count, and nothing else. */
void tu_dir_state_expect_same_linked(const tu_dir_state *a, const tu_dir_state *b, const char *what,
                                     const char *suffix);
void tu_dir_state_free(tu_dir_state *s);

/* ---------------------------------------------------------------- faults */

/* tu_fault -- a fault plan for the I/O layer's hook:
 * io_set_fault_hook(tu_fault_hook, &plan). Of the operations `op` on a path
 * containing `match` (NULL: any path), the first `skip` go through, the next
 * `times` fail with `ret` (an errno, or -n for a short write of n bytes;
 * times < 0: every one from then on), the rest go through; `hits` counts the
 * failures. The counters change atomically, so a plan may serve the
 * engine's threads; set them before installing the hook. */
typedef struct tu_fault {
    io_op op;
    const char *match;
    int skip;
    int times;
    int ret;
    int hits;
} tu_fault;

/* tu_fault_hook -- the io_fault_hook of a tu_fault plan (arg). */
int tu_fault_hook(io_op op, const char *path, size_t len, void *arg);

/* ---------------------------------------------------------------- model */

/* An ordered map of byte-string keys to byte-string values (a sorted array of
 * entries whose key/value blobs are reference counted, so tu_model_copy costs
 * one array copy: use it to remember the state a snapshot must see). */
typedef struct tu_model tu_model;

tu_model *tu_model_new(void);
void tu_model_free(tu_model *m);
tu_model *tu_model_copy(const tu_model *m);
size_t tu_model_count(const tu_model *m);
void tu_model_put(tu_model *m, const void *k, size_t kn, const void *v, size_t vn);
void tu_model_del(tu_model *m, const void *k, size_t kn);
/* tu_model_del_range -- removes every key k with b <= k < e (none if b >= e). */
void tu_model_del_range(tu_model *m, const void *b, size_t bn, const void *e, size_t en);
/* tu_model_get -- 1 and the value (v, vn) if present, else 0. */
int tu_model_get(const tu_model *m, const void *k, size_t kn, const void **v, size_t *vn);
/* tu_model_lower_bound -- index of the first key >= k (count if none). */
size_t tu_model_lower_bound(const tu_model *m, const void *k, size_t kn);
/* tu_model_at -- entry i (0 <= i < count); any out pointer may be NULL. */
void tu_model_at(const tu_model *m, size_t i, const void **k, size_t *kn, const void **v, size_t *vn);
/* tu_put_model -- tkv_put(db, k, v, flags) and, when it returns TKV_OK, the
 * same put into the model m; returns tkv_put's result. */
int tu_put_model(tkv_db *db, tu_model *m, const void *k, size_t kn, const void *v, size_t vn, unsigned flags);

/* ---------------------------------------------------------------- checks */

/* tu_check_db -- compares everything readable in db at snap (NULL = latest)
 * with m: a full forward and a full backward iteration, and a tkv_get of every
 * model key. Fails the current cmocka test with a precise message on the first
 * difference; `what` is included in it. */
void tu_check_db(tkv_db *db, const tkv_snapshot *snap, const tu_model *m, const char *what);
/* tu_close_reopen_check -- closes db, opens dir again with o, compares it
 * with m (tu_check_db, labelled `what`) and closes it: nothing was lost. */
void tu_close_reopen_check(tkv_db *db, const char *dir, const tkv_options *o, const tu_model *m, const char *what);

#endif
