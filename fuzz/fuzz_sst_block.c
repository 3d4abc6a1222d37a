// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_sst_block.c -- fuzz target: one SSTable block as a read finds it on
 * disk (contents, then the 5-byte trailer: compression type and checksum),
 * through the decoder every block read uses (table_decode_block: checksum,
 * then lz4), then the block iterator over what it returns (scans both ways
 * and seeks, as table reads and iterators do).
 *
 * Input: flags byte, then the stored block with its trailer.
 *   FZ_FIX   recompute the trailer checksum
 *   bit 1    the rest is the *uncompressed* contents: the target compresses
 *            it with lz4 as the table builder does and frames it (varint
 *            size, lz4 block, type 1), so the fuzzer reaches the iterator
 *            behind real decompression
 */
#include <lz4.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzzutil.h"
#include "sst/block.h"
#include "sst/table_int.h"
#include "util/checksum.h"
#include "util/status.h"

#define FZ_LZ4 2u

/* frame_lz4 -- varint ulen | lz4(src) | type 1 | checksum; NULL if it does not compress. */
static uint8_t *frame_lz4(const uint8_t *src, size_t n, size_t *out_n)
{
    int bound = LZ4_compressBound((int)n);
    uint8_t *b = malloc(10 + (size_t)bound + SST_TRAILER_SIZE);
    if (!b) return NULL;
    uint8_t *p = enc_varint(b, n);
    int c = LZ4_compress_default((const char *)src, (char *)p, (int)n, bound);
    if (c <= 0) {
        free(b);
        return NULL;
    }
    p += c;
    *p = SST_COMPRESS_LZ4;
    size_t size = (size_t)(p - b);
    enc_u32(p + 1, tkv_checksum(b, size + 1));
    *out_n = size + SST_TRAILER_SIZE;
    return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 20)) return 0;
    uint8_t flags = data[0];
    data++, size--;
    uint8_t *stored;
    size_t n = size;
    if (flags & FZ_LZ4) {
        if (!(stored = frame_lz4(data, size, &n))) return 0;
    } else {
        if (!(stored = malloc(size ? size : 1))) return 0;
        memcpy(stored, data, size);
        if ((flags & FZ_FIX) && n >= SST_TRAILER_SIZE)
            enc_u32(stored + n - 4, tkv_checksum(stored, n - SST_TRAILER_SIZE + 1));
    }
    /* The handle a table's index would give for a block at offset 0. */
    block_handle h = {0, n >= SST_TRAILER_SIZE ? n - SST_TRAILER_SIZE : 0};
    cached_block *blk = NULL;
    int rc = fz_note("table_decode_block", table_decode_block("fuzz.sst", h, stored, n, "data block", NULL, &blk));
    if (rc == 0) {
        tkv_it *it = block_iter_new(blk->data, blk->size, "fuzz.sst", 0, NULL, NULL);
        if (it) {
            fz_walk(it, slice(data, size < 24 ? size : 24), 32);
            it_destroy(it);
        }
        block_mem_free(blk);
    } else {
        fz_check(rc == TKV_CORRUPTION || rc == TKV_NO_MEMORY, "block decode failed with an unexpected code");
        fz_check(blk == NULL, "a failed decode returned a block");
    }
    free(stored);
    return 0;
}
