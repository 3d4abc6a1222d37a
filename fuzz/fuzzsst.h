// SPDX-License-Identifier: Apache-2.0
/*
 * fuzzsst.h -- SSTable helpers of the fuzz targets: a real table written by
 * the table builder (built once per process), tables spliced from its data
 * blocks and metadata blocks given by the fuzzer, and opening and reading a
 * table from bytes the way the engine does (table_open on a file, then an
 * iterator and point lookups through a block cache).
 */
#ifndef TKV_FUZZ_FUZZSST_H
#define TKV_FUZZ_FUZZSST_H

#include <stddef.h>
#include <stdint.h>

#include "sst/table_int.h"

#define FZ_SST_KEYS 300

/* The base table: FZ_SST_KEYS keys "key%05u" (every 7th a deletion), 256-byte
 * blocks, bloom filter, lz4 (values alternate compressible and not). */
typedef struct fz_sst {
    uint8_t *file;
    size_t size;
    table_footer ft;
    uint64_t data_end; /* where the data blocks end: the filter block's offset */
} fz_sst;

/* fz_sst_base -- the base table (built at the first call). */
const fz_sst *fz_sst_base(void);

/* A metadata block for fz_sst_splice: contents, and whether they already end
 * with their own trailer (raw) or get a type-0 trailer and checksum. */
typedef struct fz_block {
    const uint8_t *p;
    size_t n;
    int raw;
} fz_block;

/* fz_sst_splice -- a table file in *out (malloc'd, *out_n bytes): the base
 * table's data blocks, then filter, props and index blocks (each NULL p: the
 * base table's own), then a footer naming them (or, if footer is not NULL,
 * those 64 bytes as given). */
uint8_t *fz_sst_splice(const fz_block *filter, const fz_block *props, const fz_block *index, const uint8_t *footer,
                       size_t *out_n);

/* fz_sst_read -- writes file[0..n) to a scratch file, opens it as a table
 * (table_open, with a block cache) and, if it opens, reads it all: an
 * iterator's scans and seeks (fz_walk), then table_get of every base key and
 * of `probe` (a user key). Returns table_open's code. */
int fz_sst_read(const uint8_t *file, size_t n, tkv_slice probe);

#endif
