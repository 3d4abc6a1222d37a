// SPDX-License-Identifier: Apache-2.0
/*
 * fuzzpool.h -- pool helpers of the fuzz targets: turning the fuzzer's bytes
 * into a pool file (zero-extended to the size its header names) and
 * recomputing the checksums a writer would have stored: the pool header's,
 * each committed row header's and, for RowTables, each page's. Offsets are
 * those of docs/format-matrix.md (sections 2, 4.2, 5.1 and 5.2), written out
 * here because the library keeps them private to its pool and RowTable files.
 */
#ifndef TKV_FUZZ_FUZZPOOL_H
#define TKV_FUZZ_FUZZPOOL_H

#include <stddef.h>
#include <stdint.h>

/* Pools the targets accept: at most this many bytes once extended. */
#define FZ_POOL_MAX (UINT64_C(4) << 20)

#define FZ_FIX_ROWS  2u /* flags bit: recompute row header checksums */
#define FZ_FIX_PAGES 4u /* flags bit: recompute RowTable page checksums (before the row's) */

/* fz_pool_image -- a malloc'd pool file from data[0..n): padded with zeros
 * to a multiple of 4096, or to the header's pool size if that is larger
 * (and at most FZ_POOL_MAX); checksums fixed as `flags` asks (FZ_FIX: the
 * header's, FZ_FIX_ROWS, FZ_FIX_PAGES). *out_n is its size; NULL if the
 * input cannot be a pool (empty, or larger than FZ_POOL_MAX). */
uint8_t *fz_pool_image(const uint8_t *data, size_t n, unsigned flags, size_t *out_n);

/* fz_pool_write -- writes the image to the scratch pool file; returns its path. */
const char *fz_pool_write(const uint8_t *img, size_t n);

#endif
