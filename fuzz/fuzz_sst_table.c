// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_sst_table.c -- fuzz target: a whole SSTable file, as table_open and
 * every later read see it: footer, filter, properties and index blocks at
 * open, data blocks (checksums, lz4, block structure) through the iterator
 * and point lookups, with a block cache.
 *
 * Input: flags byte, then the file.
 *   FZ_FIX   recompute what a writer would: the footer's checksum (magic
 *            and version set), then the trailer checksum of each block the
 *            footer names and of each data block the index names (when the
 *            handles lie inside the file)
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzzsst.h"
#include "fuzz/fuzzutil.h"
#include "util/status.h"
#include "sst/block.h"
#include "util/checksum.h"

/* fix_block -- recomputes the trailer checksum of block h if it lies in f. */
static void fix_block(uint8_t *f, size_t n, block_handle h)
{
    if (h.size > n || h.offset > n - h.size || n - h.size - h.offset < SST_TRAILER_SIZE) return;
    enc_u32(f + h.offset + h.size + 1, tkv_checksum(f + h.offset, (size_t)h.size + 1));
}

/* fix_data_blocks -- the trailers of the data blocks the index names (the
 * index must be stored uncompressed, as the builder writes it). */
static void fix_data_blocks(uint8_t *f, size_t n, block_handle ix)
{
    if (ix.size > n || ix.offset > n - ix.size) return;
    block_iter it = {0};
    if (block_iter_init(&it, f + ix.offset, (size_t)ix.size, "fuzz.sst", ix.offset) == 0) {
        int count = 0;
        for (block_iter_seek_first(&it); block_iter_valid(&it) && count < 4096; block_iter_next(&it), count++) {
            block_handle h;
            tkv_slice v = block_iter_value(&it);
            if (handle_decode(v.p, v.p + v.n, &h)) fix_block(f, n, h);
        }
    }
    block_iter_clear(&it);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    uint8_t flags = data[0];
    data++, size--;
    uint8_t *f = malloc(size ? size : 1);
    if (!f) return 0;
    memcpy(f, data, size);
    if ((flags & FZ_FIX) && size >= SST_FOOTER_SIZE) {
        uint8_t *foot = f + size - SST_FOOTER_SIZE;
        block_handle ix = {dec_u64(foot), dec_u64(foot + 8)};
        fix_data_blocks(f, size, ix);
        fix_block(f, size, ix);
        fix_block(f, size, (block_handle){dec_u64(foot + 16), dec_u64(foot + 24)});
        fix_block(f, size, (block_handle){dec_u64(foot + 32), dec_u64(foot + 40)});
        enc_u32(foot + SST_FOOTER_VERSION_OFF, SST_FORMAT_VERSION);
        enc_u32(foot + SST_FOOTER_CHECKSUM_OFF, tkv_checksum(foot, SST_FOOTER_CHECKSUM_OFF));
        enc_u64(foot + SST_FOOTER_MAGIC_OFF, SST_MAGIC);
    }
    fz_sst_read(f, size, size > 16 ? slice(data + 8, 8) : slice(NULL, 0));
    free(f);
    return 0;
}
