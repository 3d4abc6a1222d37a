// SPDX-License-Identifier: Apache-2.0
/*
 * vec_iter.h -- an internal iterator (util/iter.h) over an in-memory array of
 * (internal key, value) pairs, with error injection for tests.
 *
 * The pairs are copied and sorted by ikey_cmp (stable: equal internal keys keep
 * their input order), so the caller's buffers may be freed after the call.
 */
#ifndef TKV_UTIL_VEC_ITER_H
#define TKV_UTIL_VEC_ITER_H

#include <stddef.h>

#include "util/iter.h"

/* vec_iter_new -- an iterator over copies of the n pairs (ikeys[i], vals[i]).
 * Every ikeys[i] must be at least IKEY_TRAILER bytes. n may be 0 (ikeys and vals
 * may then be NULL). Returns NULL on out of memory (TKV_NO_MEMORY recorded) or a
 * too-short internal key (TKV_INVALID recorded). */
tkv_it *vec_iter_new(const tkv_slice *ikeys, const tkv_slice *vals, size_t n);

/* vec_iter_set_error -- makes `it` (a vec_iter) not valid with status `code`
 * (< 0) from now on; later seeks and moves leave it so. code 0 clears the
 * error (the iterator stays unpositioned). */
void vec_iter_set_error(tkv_it *it, int code);

/* vec_iter_fail_after -- arms a delayed error: the iterator works normally for
 * `moves` more positioning calls (seek_first, seek_last, seek, next, prev); the
 * next one leaves it not valid with status `code` (< 0), as vec_iter_set_error. */
void vec_iter_fail_after(tkv_it *it, size_t moves, int code);

#endif
