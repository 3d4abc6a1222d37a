// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_sst_footer.c -- fuzz target: the SSTable footer. A real table's data
 * and metadata blocks (fuzzsst.h) end with the 64 footer bytes given by the
 * fuzzer; table_open decodes the footer (magic, checksum, version), range-
 * checks the three handles against the file as it reads each block, and a
 * table that opens is read in full (iterator, lookups).
 *
 * Input: flags byte, then the footer (shorter inputs are zero-padded).
 *   FZ_FIX   write the magic and the version, and recompute the checksum
 *   bit 1    handles relative to the base table's own: each u64 of the
 *            first 48 bytes is added to the real handle's field (so small
 *            mutations land near real blocks)
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzzsst.h"
#include "fuzz/fuzzutil.h"
#include "util/status.h"
#include "util/checksum.h"

#define FZ_RELATIVE 2u

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    uint8_t flags = data[0];
    data++, size--;
    const fz_sst *s = fz_sst_base();
    uint8_t foot[SST_FOOTER_SIZE] = {0};
    memcpy(foot, data, size < sizeof foot ? size : sizeof foot);
    if (flags & FZ_RELATIVE) {
        const uint8_t *real = s->file + s->size - SST_FOOTER_SIZE;
        for (int i = 0; i < 6; i++) enc_u64(foot + 8 * i, dec_u64(real + 8 * i) + dec_u64(foot + 8 * i));
    }
    if (flags & FZ_FIX) {
        enc_u32(foot + SST_FOOTER_VERSION_OFF, SST_FORMAT_VERSION);
        enc_u32(foot + SST_FOOTER_CHECKSUM_OFF, tkv_checksum(foot, SST_FOOTER_CHECKSUM_OFF));
        enc_u64(foot + SST_FOOTER_MAGIC_OFF, SST_MAGIC);
    }
    /* The decoder alone (as table_open calls it), then the whole open. */
    table_footer ft;
    int rc = table_decode_footer("fuzz.sst", 0, foot, &ft);
    fz_check(rc == 0 || rc == TKV_CORRUPTION, "footer decode failed with an unexpected code");
    size_t n;
    uint8_t *file = fz_sst_splice(NULL, NULL, NULL, foot, &n);
    if (!file) return 0;
    fz_sst_read(file, n, size > 8 ? slice(data + 8, size - 8 < 16 ? size - 8 : 16) : slice(NULL, 0));
    free(file);
    return 0;
}
