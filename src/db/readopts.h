// SPDX-License-Identifier: Apache-2.0
/*
 * readopts.h -- the tkv_read_options object (tierkv.h): what one read or
 * iterator sees (a snapshot, key bounds) and how it reads (fill_cache,
 * verify_checksums). Plain data owned by the caller; the functions that take
 * it copy what they keep (an iterator copies the bounds), so one object may
 * serve many reads and be freed after them.
 */
#ifndef TKV_DB_READOPTS_H
#define TKV_DB_READOPTS_H

#include <stddef.h>

#include "tierkv.h"
#include "util/coding.h"

struct tkv_read_options {
    const tkv_snapshot *snap; /* NULL: the latest state at the call */
    tkv_buf lower, upper;     /* iterator bounds: [lower, upper) */
    int has_lower, has_upper;
    int fill_cache;       /* 1: SST blocks read from the file go into the block cache */
    int verify_checksums; /* 1: SST data blocks read from the file have their checksum checked */
};

/* readopts_table_flags -- the sst read flags (sst/table.h TABLE_READ_*) of ro
 * (NULL: the defaults, none). */
unsigned readopts_table_flags(const tkv_read_options *ro);

#endif
