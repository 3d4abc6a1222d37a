// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_sst_filter.c -- fuzz target: the SSTable filter block (the bloom
 * filter). First the filter decoder on its own (bloom_filter_valid, then
 * bloom_may_contain for keys taken from the input, as table_get probes it),
 * and a property: a filter built from those keys answers "may contain" for
 * every one of them. Then the block in a real table (fuzzsst.h) through
 * table_open (trailer checksum, bloom_filter_valid) and the table's lookups.
 *
 * Input: flags byte, then the filter block contents.
 *   FZ_FIX   the contents get a trailer with a valid checksum in the table;
 *            without it the input's last 5 bytes are taken as the trailer
 */
#include <stdlib.h>

#include "fuzz/fuzzsst.h"
#include "fuzz/fuzzutil.h"
#include "util/status.h"
#include "sst/bloom.h"

/* no_false_negative -- keys are the input cut into 1..8-byte pieces. */
static void no_false_negative(const uint8_t *data, size_t size, int bits)
{
    bloom_builder b;
    bloom_builder_init(&b, bits);
    size_t off = 0, nkeys = 0;
    while (off < size && nkeys < 64) {
        size_t kl = 1 + data[off] % 8;
        if (kl > size - off) kl = size - off;
        if (bloom_builder_add(&b, slice(data + off, kl)) < 0) break;
        off += kl, nkeys++;
    }
    tkv_buf f = {0};
    if (bloom_builder_finish(&b, &f) == 0) {
        fz_check(bloom_filter_valid(f.data, f.len), "a built filter is not valid");
        off = 0;
        for (size_t i = 0; i < nkeys; i++) {
            size_t kl = 1 + data[off] % 8;
            if (kl > size - off) kl = size - off;
            fz_check(bloom_may_contain(f.data, f.len, slice(data + off, kl)), "bloom filter false negative");
            off += kl;
        }
    }
    buf_free(&f);
    bloom_builder_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    uint8_t flags = data[0];
    data++, size--;
    if (bloom_filter_valid(data, size)) {
        volatile int sink = 0;
        for (size_t off = 0; off + 4 <= size && off < 64; off += 4)
            sink += bloom_may_contain(data, size, slice(data + off, 4));
        (void)sink;
    }
    no_false_negative(data, size, size ? 1 + data[0] % 30 : 10);
    fz_block fb = {data, size, !(flags & FZ_FIX)};
    size_t n;
    uint8_t *file = fz_sst_splice(&fb, NULL, NULL, NULL, &n);
    if (!file) return 0;
    fz_sst_read(file, n, size > 2 ? slice(data + 2, size - 2 < 12 ? size - 2 : 12) : slice(NULL, 0));
    free(file);
    return 0;
}
