// SPDX-License-Identifier: Apache-2.0
/*
 * test_batch.c -- write-batch encoding: round trip, sequence assignment,
 * appending batches (group commit), limits, and malformed encodings.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mem/batch.h"
#include "tierkv.h"

typedef struct rec {
    uint64_t seq;
    ikey_type type;
    char key[64];
    size_t klen;
    char val[64];
    size_t vlen;
} rec;

typedef struct collect {
    rec r[64];
    int n;
} collect;

static int collect_fn(void *arg, uint64_t seq, ikey_type type, tkv_slice key, tkv_slice value)
{
    collect *c = arg;
    rec *r = &c->r[c->n++];
    r->seq = seq;
    r->type = type;
    r->klen = key.n;
    memcpy(r->key, key.p, key.n);
    r->vlen = value.n;
    if (value.n) memcpy(r->val, value.p, value.n);
    return 0;
}

static void test_round_trip(void **state)
{
    (void)state;
    tkv_batch *b = tkv_batch_new();
    assert_int_equal(tkv_batch_put(b, "a", 1, "1", 1), 0);
    assert_int_equal(tkv_batch_delete(b, "bb", 2), 0);
    assert_int_equal(tkv_batch_put(b, "a", 1, "", 0), 0); /* empty value, same key again */
    assert_int_equal(batch_count(b->rep.data), 3);
    batch_set_seq(b->rep.data, 100);
    collect c = {0};
    assert_int_equal(batch_iterate(b->rep.data, b->rep.len, collect_fn, &c), 0);
    assert_int_equal(c.n, 3);
    assert_int_equal(c.r[0].seq, 100);
    assert_int_equal(c.r[0].type, IKEY_VALUE);
    assert_memory_equal(c.r[0].key, "a", 1);
    assert_memory_equal(c.r[0].val, "1", 1);
    assert_int_equal(c.r[1].seq, 101);
    assert_int_equal(c.r[1].type, IKEY_DELETION);
    assert_int_equal(c.r[1].klen, 2);
    assert_int_equal(c.r[2].seq, 102);
    assert_int_equal(c.r[2].vlen, 0);
    tkv_batch_clear(b);
    assert_int_equal(batch_count(b->rep.data), 0);
    assert_int_equal(b->rep.len, BATCH_HEADER);
    tkv_batch_free(b);
    tkv_batch_free(NULL);
    tkv_batch_clear(NULL);
}

static void test_append(void **state)
{
    (void)state;
    tkv_batch *a = tkv_batch_new(), *b = tkv_batch_new();
    tkv_batch_put(a, "x", 1, "1", 1);
    tkv_batch_put(b, "y", 1, "2", 1);
    tkv_batch_delete(b, "z", 1);
    assert_int_equal(batch_append(a, b->rep.data, b->rep.len), 0);
    assert_int_equal(batch_count(a->rep.data), 3);
    batch_set_seq(a->rep.data, 7);
    collect c = {0};
    assert_int_equal(batch_iterate(a->rep.data, a->rep.len, collect_fn, &c), 0);
    assert_int_equal(c.n, 3);
    assert_int_equal(c.r[2].seq, 9);
    assert_memory_equal(c.r[2].key, "z", 1);
    tkv_batch_free(a);
    tkv_batch_free(b);
}

static void test_limits(void **state)
{
    (void)state;
    tkv_batch *b = tkv_batch_new();
    size_t len0 = b->rep.len;
    assert_int_equal(tkv_batch_put(b, "k", 0, "v", 1), TKV_INVALID);
    assert_int_equal(tkv_batch_put(b, NULL, 1, "v", 1), TKV_INVALID);
    assert_int_equal(tkv_batch_put(b, "k", TKV_MAX_KEY_SIZE + 1, "v", 1), TKV_INVALID);
    /* Oversized value: the length is checked before the data is touched. */
    assert_int_equal(tkv_batch_put(b, "k", 1, (const void *)1, (size_t)TKV_MAX_VALUE_SIZE + 1), TKV_INVALID);
    assert_int_equal(tkv_batch_put(b, "k", 1, NULL, 5), TKV_INVALID);
    assert_int_equal(tkv_batch_delete(b, NULL, 3), TKV_INVALID);
    assert_int_equal(tkv_batch_put(NULL, "k", 1, "v", 1), TKV_INVALID);
    assert_int_equal(b->rep.len, len0);
    assert_int_equal(batch_count(b->rep.data), 0);
    char *big = calloc(1, TKV_MAX_KEY_SIZE);
    assert_int_equal(tkv_batch_put(b, big, TKV_MAX_KEY_SIZE, NULL, 0), 0);
    free(big);
    tkv_batch_free(b);
}

static void test_malformed(void **state)
{
    (void)state;
    tkv_batch *b = tkv_batch_new();
    tkv_batch_put(b, "key", 3, "value", 5);
    tkv_batch_delete(b, "gone", 4);
    uint8_t copy[256];
    memcpy(copy, b->rep.data, b->rep.len);
    size_t len = b->rep.len;
    /* Every truncation is detected. */
    for (size_t cut = 0; cut < len; cut++) assert_int_equal(batch_validate(copy, cut), TKV_CORRUPTION);
    assert_int_equal(batch_validate(copy, len), 0);
    /* Count mismatch. */
    enc_u32(copy + 8, 3);
    assert_int_equal(batch_validate(copy, len), TKV_CORRUPTION);
    enc_u32(copy + 8, 2);
    /* Unknown type byte. */
    copy[BATCH_HEADER] = 7;
    assert_int_equal(batch_validate(copy, len), TKV_CORRUPTION);
    tkv_batch_free(b);
}

/* test_range_deletion -- a range deletion record: round trip (begin as the
 * key, end as the value, one sequence), the argument rules (begin == end
 * appends nothing, begin > end and bad keys are TKV_INVALID and change
 * nothing) and a record whose begin is not below its end is corruption. */
static void test_range_deletion(void **state)
{
    (void)state;
    tkv_batch *b = tkv_batch_new();
    assert_int_equal(tkv_batch_put(b, "k", 1, "v", 1), 0);
    assert_int_equal(tkv_batch_delete_range(b, "a", 1, "m", 1), 0);
    assert_int_equal(tkv_batch_delete_range(b, "q", 1, "q", 1), TKV_OK); /* empty: nothing appended */
    size_t len = b->rep.len;
    assert_int_equal(tkv_batch_delete_range(b, "z", 1, "a", 1), TKV_INVALID);
    assert_non_null(strstr(tkv_errmsg(), "begin > end"));
    assert_int_equal(tkv_batch_delete_range(b, NULL, 0, "a", 1), TKV_INVALID);
    assert_int_equal(tkv_batch_delete_range(b, "a", 1, "", 0), TKV_INVALID);
    assert_int_equal(tkv_batch_delete_range(b, "a", 1, NULL, 0), TKV_INVALID);
    assert_int_equal(tkv_batch_delete_range(b, "a", 1, "b", TKV_MAX_KEY_SIZE + 1), TKV_INVALID);
    assert_int_equal(tkv_batch_delete_range(NULL, "a", 1, "b", 1), TKV_INVALID);
    assert_int_equal(b->rep.len, len);
    assert_int_equal(batch_count(b->rep.data), 2);
    batch_set_seq(b->rep.data, 7);
    collect c = {0};
    assert_int_equal(batch_iterate(b->rep.data, b->rep.len, collect_fn, &c), 0);
    assert_int_equal(c.n, 2);
    assert_int_equal(c.r[1].seq, 8);
    assert_int_equal(c.r[1].type, IKEY_RANGE_DELETION);
    assert_int_equal(c.r[1].klen, 1);
    assert_memory_equal(c.r[1].key, "a", 1);
    assert_int_equal(c.r[1].vlen, 1);
    assert_memory_equal(c.r[1].val, "m", 1);
    /* The record is type 2, begin, end: swap them and it no longer validates. */
    uint8_t copy[256];
    memcpy(copy, b->rep.data, b->rep.len);
    size_t at = b->rep.len - 5; /* 02 01 a 01 m */
    assert_int_equal(copy[at], IKEY_RANGE_DELETION);
    copy[at + 2] = 'm';
    assert_int_equal(batch_validate(copy, b->rep.len), TKV_CORRUPTION);
    copy[at + 2] = 'a';
    copy[at + 3] = 0; /* an empty end */
    assert_int_equal(batch_validate(copy, b->rep.len - 1), TKV_CORRUPTION);
    tkv_batch_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip), cmocka_unit_test(test_append),         cmocka_unit_test(test_limits),
        cmocka_unit_test(test_malformed),  cmocka_unit_test(test_range_deletion),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
