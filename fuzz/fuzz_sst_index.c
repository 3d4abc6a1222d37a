// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_sst_index.c -- fuzz target: the SSTable index block. A real table's
 * data blocks, filter and properties get the index block given by the
 * fuzzer (and a valid footer naming it); table_open checks the index
 * (table_check_index: every handle decodes, lies inside the data area, in
 * order, as many as the properties say), and a table that opens is read in
 * full: the iterator and the point lookups follow the index's handles into
 * the real data blocks.
 *
 * Input: flags byte, then the index block contents.
 *   FZ_FIX   the contents get a trailer with a valid checksum; without it
 *            the input's last 5 bytes are taken as the trailer
 */
#include <stdlib.h>

#include "fuzz/fuzzsst.h"
#include "fuzz/fuzzutil.h"
#include "util/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    uint8_t flags = data[0];
    data++, size--;
    fz_block ix = {data, size, !(flags & FZ_FIX)};
    size_t n;
    uint8_t *file = fz_sst_splice(NULL, NULL, &ix, NULL, &n);
    if (!file) return 0;
    fz_sst_read(file, n, size > 4 ? slice(data + 4, size - 4 < 16 ? size - 4 : 16) : slice(NULL, 0));
    free(file);
    return 0;
}
