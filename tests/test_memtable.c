// SPDX-License-Identifier: Apache-2.0
/*
 * test_memtable.c -- the arena (alignment, separate blocks for big allocations,
 * usage accounting) and the memtable's point reads: visibility by sequence,
 * deletions, empty and prefix keys, large values, counters, memory usage,
 * reference counting, a randomized check of memtable_get against a model, and
 * range tombstones (the list, its fragments, readers beside the writer).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "mem/arena.h"
#include "util/ikey.h"
#include "mem/memtable.h"
#include "testutil.h"
#include "util/iter.h"

static void assert_slice_eq(tkv_slice s, const void *p, size_t n)
{
    assert_int_equal(s.n, n);
    if (n) assert_memory_equal(s.p, p, n);
}

/* get_str -- memtable_get of a C-string key; returns the found flag. */
static int get_str(memtable *m, const char *k, uint64_t seq, ikey_type *t, tkv_slice *v)
{
    return memtable_get(m, k, strlen(k), seq, t, v);
}

/* ---------------------------------------------------------------- arena */

/* Allocations are 8-aligned, disjoint and keep their contents. */
static void test_arena_alloc(void **state)
{
    (void)state;
    arena a;
    arena_init(&a, 64 * 1024);
    assert_int_equal(arena_memory_usage(&a), 0);
    enum { N = 3000 };
    uint8_t *ptr[N];
    size_t len[N];
    uint64_t seed = 3;
    size_t total = 0;
    for (int i = 0; i < N; i++) {
        len[i] = tu_splitmix64(&seed) % 20000; /* some exceed a quarter block: own block */
        total += len[i];
        ptr[i] = arena_alloc(&a, len[i]);
        assert_non_null(ptr[i]);
        assert_int_equal((uintptr_t)ptr[i] % 8, 0);
        memset(ptr[i], i & 0xff, len[i]);
    }
    for (int i = 0; i < N; i++)
        for (size_t j = 0; j < len[i]; j++) assert_int_equal(ptr[i][j], i & 0xff);
    assert_true(arena_memory_usage(&a) >= total);
    assert_true(arena_memory_usage(&a) < 2 * total);
    void *z1 = arena_alloc(&a, 0), *z2 = arena_alloc(&a, 0);
    assert_non_null(z1);
    assert_ptr_not_equal(z1, z2);
    arena_destroy(&a);
    assert_int_equal(arena_memory_usage(&a), 0);
    /* reusable after destroy */
    assert_non_null(arena_alloc(&a, 10));
    assert_true(arena_memory_usage(&a) >= 64 * 1024);
    arena_destroy(&a);
    arena_destroy(NULL);
}

/* An allocation that does not fit in the current block and is larger than a
 * quarter block gets its own block; the current block stays in use. */
static void test_arena_big_block(void **state)
{
    (void)state;
    arena a;
    arena_init(&a, 0);
    uint8_t *small = arena_alloc(&a, 100);
    assert_non_null(small);
    size_t u1 = arena_memory_usage(&a);
    assert_int_equal(u1, ARENA_DEFAULT_BLOCK); /* one standard block, header included */

    /* more than a quarter block but it fits: taken from the current block */
    size_t q_n = ARENA_DEFAULT_BLOCK / 4 + 1;
    uint8_t *q = arena_alloc(&a, q_n);
    assert_ptr_equal(q, small + 104);
    assert_int_equal(arena_memory_usage(&a), u1);

    /* does not fit in what is left: a block of its own, sized to fit */
    size_t big_n = ARENA_DEFAULT_BLOCK - 4096;
    uint8_t *big = arena_alloc(&a, big_n);
    assert_non_null(big);
    assert_int_equal((uintptr_t)big % 8, 0);
    size_t u2 = arena_memory_usage(&a);
    assert_true(u2 >= u1 + big_n && u2 < u1 + big_n + 64);

    /* the next small allocation continues the first block */
    uint8_t *small2 = arena_alloc(&a, 8);
    assert_ptr_equal(small2, q + ((q_n + 7) & ~(size_t)7));
    assert_int_equal(arena_memory_usage(&a), u2);

    /* a small allocation that does not fit starts a new standard block (16: the block header) */
    size_t left = ARENA_DEFAULT_BLOCK - 16 - 104 - ((q_n + 7) & ~(size_t)7) - 8;
    while (left >= 8192) {
        assert_non_null(arena_alloc(&a, 8192));
        left -= 8192;
    }
    assert_int_equal(arena_memory_usage(&a), u2);
    assert_non_null(arena_alloc(&a, 8192));
    assert_int_equal(arena_memory_usage(&a), u2 + ARENA_DEFAULT_BLOCK);
    memset(big, 1, big_n);
    memset(q, 2, q_n);
    arena_destroy(&a);
}

/* Spares: a destroyed arena's standard blocks go to the list and the next
 * arena takes exactly those blocks back (no new allocation, contents of the
 * old owner's still there: nothing was faulted anew); own-size blocks are
 * freed; the cap holds live (the account) + listed bytes; what would pass it
 * is freed and counted. */
static void test_arena_spares(void **state)
{
    (void)state;
    enum { BLOCK = 64 * 1024 };
    size_t live = 0;
    arena_spares sp;
    assert_int_equal(arena_spares_init(&sp, BLOCK, 8 * BLOCK, &live), 0);
    arena a;
    arena_init(&a, BLOCK);
    arena_set_account(&a, &live);
    arena_set_spares(&a, &sp);
    enum { PIECE = 16000 }; /* four to a standard block (65,520 bytes of data), under a quarter block each */
    uint8_t *first[6];
    for (int i = 0; i < 24; i++) { /* six standard blocks; first[] their first pieces */
        uint8_t *p = arena_alloc(&a, PIECE);
        assert_non_null(p);
        if (i % 4 == 0) {
            first[i / 4] = p;
            memset(p, 0x40 + i / 4, 16);
        }
    }
    assert_non_null(arena_alloc(&a, BLOCK));        /* own-size block: never listed */
    assert_int_equal(live, 6 * BLOCK + BLOCK + 16); /* 16: the own block's header */
    size_t bytes;
    uint64_t reused, freed;
    arena_destroy(&a);
    assert_int_equal(live, 0);
    arena_spares_get(&sp, &bytes, &reused, &freed, NULL);
    assert_int_equal(bytes, 6 * BLOCK);
    assert_int_equal(reused, 0);
    assert_int_equal(freed, 0);
    /* a new arena on the same spares gets the same six blocks back */
    arena b;
    arena_init(&b, BLOCK);
    arena_set_account(&b, &live);
    arena_set_spares(&b, &sp);
    int found = 0;
    for (int i = 0; i < 24; i++) {
        uint8_t *p = arena_alloc(&b, PIECE);
        assert_non_null(p);
        if (i % 4) continue;
        for (int j = 0; j < 6; j++)
            if (p == first[j]) {
                found++;
                assert_int_equal(p[0], 0x40 + j); /* the old owner's bytes: the block was not replaced */
            }
    }
    assert_int_equal(found, 6);
    arena_spares_get(&sp, &bytes, &reused, &freed, NULL);
    assert_int_equal(bytes, 0);
    assert_int_equal(reused, 6);
    /* the cap: with 5 blocks live elsewhere (the account), only 3 of b's 7 fit (5 + 3 = 8) */
    assert_non_null(arena_alloc(&b, PIECE)); /* a 7th block, from the heap */
    live += 5 * BLOCK;                       /* another arena's blocks on the same account */
    arena_destroy(&b);
    arena_spares_get(&sp, &bytes, &reused, &freed, NULL);
    assert_int_equal(bytes, 3 * BLOCK);
    assert_int_equal(freed, 4);
    live -= 5 * BLOCK;
    /* block sizes other than the list's are never taken from it */
    arena c;
    arena_init(&c, 2 * BLOCK);
    arena_set_spares(&c, &sp);
    assert_non_null(arena_alloc(&c, 10));
    arena_spares_get(&sp, &bytes, &reused, NULL, NULL);
    assert_int_equal(bytes, 3 * BLOCK);
    assert_int_equal(reused, 6);
    arena_set_spares(&c, NULL);
    arena_destroy(&c);
    /* reserve: tops the list up to `want`, within the cap beside live */
    uint64_t reserved;
    assert_int_equal(arena_spares_reserve(&sp, 3 * BLOCK), 0); /* 3 listed already */
    live += 3 * BLOCK;                                         /* 3 live + 3 listed: room for 2 */
    assert_int_equal(arena_spares_reserve(&sp, 10 * BLOCK), 2 * BLOCK);
    arena_spares_get(&sp, &bytes, &reused, &freed, &reserved);
    assert_int_equal(bytes, 5 * BLOCK);
    assert_int_equal(reserved, 2);
    assert_int_equal(arena_spares_reserve(&sp, 10 * BLOCK), 0); /* at the cap */
    live -= 3 * BLOCK;
    /* an arena takes the reserved blocks like any other: no block from the heap */
    arena d;
    arena_init(&d, BLOCK);
    arena_set_account(&d, &live);
    arena_set_spares(&d, &sp);
    for (int i = 0; i < 20; i++) { /* five standard blocks */
        uint8_t *p = arena_alloc(&d, PIECE);
        assert_non_null(p);
        memset(p, 0x5a, PIECE); /* reserved blocks are writable memory */
    }
    arena_spares_get(&sp, &bytes, &reused, NULL, NULL);
    assert_int_equal(bytes, 0);
    assert_int_equal(reused, 6 + 5);
    assert_int_equal(live, 5 * BLOCK);
    arena_destroy(&d);
    arena_spares_destroy(&sp);
    arena_spares_destroy(NULL);
}

typedef struct spare_worker {
    arena_spares *sp;
    size_t *live;
    int rounds;
} spare_worker;

/* spare_round -- one thread's arenas: fill, check, hand back, many times. */
static void *spare_round(void *arg)
{
    spare_worker *w = arg;
    for (int r = 0; r < w->rounds; r++) {
        arena a;
        arena_init(&a, 4096);
        arena_set_account(&a, w->live);
        arena_set_spares(&a, w->sp);
        uint8_t *p[40]; /* four pieces of 1,000 bytes to a standard block: ten blocks */
        for (int i = 0; i < 40; i++) {
            p[i] = arena_alloc(&a, 1000);
            if (!p[i]) return (void *)1;
            memset(p[i], (r + i) & 0xff, 1000);
        }
        for (int i = 0; i < 40; i++)
            for (int j = 0; j < 1000; j += 111)
                if (p[i][j] != ((r + i) & 0xff)) return (void *)2; /* two arenas got one block */
        arena_destroy(&a);
    }
    return NULL;
}

/* spare_reserver -- tops the list up again and again beside the arenas. */
static void *spare_reserver(void *arg)
{
    spare_worker *w = arg;
    for (int r = 0; r < w->rounds; r++) (void)arena_spares_reserve(w->sp, 30 * 4096);
    return NULL;
}

/* Four threads share one list (TSan: make tsan), and a fifth reserves blocks
 * into it meanwhile: no block is handed to two arenas at once, and the list
 * ends within its cap. */
static void test_arena_spares_threads(void **state)
{
    (void)state;
    size_t live = 0;
    arena_spares sp;
    assert_int_equal(arena_spares_init(&sp, 4096, 100 * 4096, &live), 0);
    pthread_t t[5];
    spare_worker w = {&sp, &live, 200};
    for (int i = 0; i < 4; i++) assert_int_equal(pthread_create(&t[i], NULL, spare_round, &w), 0);
    assert_int_equal(pthread_create(&t[4], NULL, spare_reserver, &w), 0);
    for (int i = 0; i < 5; i++) {
        void *rc;
        pthread_join(t[i], &rc);
        assert_null(rc);
    }
    size_t bytes;
    uint64_t reused;
    arena_spares_get(&sp, &bytes, &reused, NULL, NULL);
    print_message("spares: %zu bytes listed, %llu blocks reused\n", bytes, (unsigned long long)reused);
    assert_int_equal(__atomic_load_n(&live, __ATOMIC_RELAXED), 0);
    assert_true(bytes <= 100 * 4096 && bytes >= 10 * 4096);
    assert_true(reused > 4 * 150 * 10); /* all but the first rounds' blocks came from the list */
    arena_spares_destroy(&sp);
}

/* ---------------------------------------------------------------- memtable */

/* A get sees the newest version at or below its sequence, deletions included. */
static void test_get_visibility(void **state)
{
    (void)state;
    memtable *m = memtable_new();
    assert_non_null(m);
    assert_int_equal(memtable_add(m, 10, IKEY_VALUE, "a", 1, "v10", 3), 0);
    assert_int_equal(memtable_add(m, 30, IKEY_VALUE, "a", 1, "v30", 3), 0);
    assert_int_equal(memtable_add(m, 20, IKEY_DELETION, "a", 1, NULL, 0), 0);
    assert_int_equal(memtable_add(m, 15, IKEY_VALUE, "b", 1, "b15", 3), 0);

    ikey_type t;
    tkv_slice v;
    for (uint64_t s = 0; s < 10; s++) assert_int_equal(get_str(m, "a", s, &t, &v), 0);
    for (uint64_t s = 10; s < 20; s++) {
        assert_int_equal(get_str(m, "a", s, &t, &v), 1);
        assert_int_equal(t, IKEY_VALUE);
        assert_slice_eq(v, "v10", 3);
    }
    for (uint64_t s = 20; s < 30; s++) {
        assert_int_equal(get_str(m, "a", s, &t, &v), 1);
        assert_int_equal(t, IKEY_DELETION);
        assert_int_equal(v.n, 0);
    }
    for (uint64_t s = 30; s < 40; s++) {
        assert_int_equal(get_str(m, "a", s, &t, &v), 1);
        assert_int_equal(t, IKEY_VALUE);
        assert_slice_eq(v, "v30", 3);
    }
    /* "newest" for sequences beyond the 56-bit range */
    assert_int_equal(get_str(m, "a", IKEY_MAX_SEQ, &t, &v), 1);
    assert_slice_eq(v, "v30", 3);
    assert_int_equal(get_str(m, "a", UINT64_MAX, &t, &v), 1);
    assert_slice_eq(v, "v30", 3);

    assert_int_equal(get_str(m, "b", 14, &t, &v), 0);
    assert_int_equal(get_str(m, "b", 15, &t, &v), 1);
    assert_slice_eq(v, "b15", 3);
    /* absent keys: before, between, after, and prefixes/extensions */
    assert_int_equal(get_str(m, "", 100, &t, &v), 0);
    assert_int_equal(get_str(m, "ab", 100, &t, &v), 0);
    assert_int_equal(memtable_get(m, "a\0", 2, 100, &t, &v), 0);
    assert_int_equal(get_str(m, "c", 100, &t, &v), 0);

    assert_int_equal(memtable_num_entries(m), 4);
    assert_int_equal(memtable_num_deletes(m), 1);
    memtable_unref(m);
}

/* The empty user key (klen 0) is a key like any other and sorts first. */
static void test_empty_key(void **state)
{
    (void)state;
    memtable *m = memtable_new();
    assert_non_null(m);
    ikey_type t;
    tkv_slice v;
    assert_int_equal(memtable_get(m, NULL, 0, 100, &t, &v), 0);
    assert_int_equal(memtable_add(m, 5, IKEY_VALUE, "x", 1, "X", 1), 0);
    assert_int_equal(memtable_get(m, NULL, 0, 100, &t, &v), 0);
    assert_int_equal(memtable_add(m, 3, IKEY_VALUE, NULL, 0, "e3", 2), 0);
    assert_int_equal(memtable_add(m, 4, IKEY_DELETION, "", 0, NULL, 0), 0);
    assert_int_equal(memtable_add(m, 6, IKEY_VALUE, "", 0, NULL, 0), 0); /* empty value */

    assert_int_equal(memtable_get(m, NULL, 0, 3, &t, &v), 1);
    assert_int_equal(t, IKEY_VALUE);
    assert_slice_eq(v, "e3", 2);
    assert_int_equal(memtable_get(m, "", 0, 4, &t, &v), 1);
    assert_int_equal(t, IKEY_DELETION);
    assert_int_equal(memtable_get(m, "", 0, 6, &t, &v), 1);
    assert_int_equal(t, IKEY_VALUE);
    assert_int_equal(v.n, 0);
    assert_int_equal(get_str(m, "x", 100, &t, &v), 1);
    assert_slice_eq(v, "X", 1);

    tkv_it *it = memtable_iter(m);
    assert_non_null(it);
    it_seek_first(it);
    assert_true(it_valid(it));
    assert_int_equal(it_key(it).n, IKEY_TRAILER);
    assert_int_equal(ikey_seq(it_key(it)), 6);
    it_destroy(it);
    memtable_unref(m);
}

/* A 1 MiB value goes to a block of its own and reads back intact. */
static void test_large_values(void **state)
{
    (void)state;
    memtable *m = memtable_new();
    assert_non_null(m);
    size_t head = memtable_memory_usage(m);
    assert_true(head > 0); /* the head node's block */
    assert_int_equal(memtable_add(m, 1, IKEY_VALUE, "small", 5, "s", 1), 0);
    size_t base = memtable_memory_usage(m);
    assert_int_equal(base, 2 * head); /* the node fits the head's block; the value starts the value arena's */
    assert_int_equal(memtable_add(m, 6, IKEY_VALUE, "small3", 6, "u", 1), 0);
    assert_int_equal(memtable_memory_usage(m), base);

    size_t n = (size_t)1 << 20;
    uint8_t *big = malloc(n);
    assert_non_null(big);
    uint64_t seed = 9;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t r = tu_splitmix64(&seed);
        memcpy(big + i, &r, 8);
    }
    for (uint64_t s = 2; s <= 4; s++) {
        big[0] = (uint8_t)s;
        assert_int_equal(memtable_add(m, s, IKEY_VALUE, "big", 3, big, n), 0);
        size_t u = memtable_memory_usage(m);
        assert_true(u >= base + (s - 1) * n);
    }
    size_t after_big = memtable_memory_usage(m);
    /* small entries still go to the first block */
    assert_int_equal(memtable_add(m, 5, IKEY_VALUE, "small2", 6, "t", 1), 0);
    assert_int_equal(memtable_memory_usage(m), after_big);

    ikey_type t;
    tkv_slice v;
    for (uint64_t s = 2; s <= 4; s++) {
        assert_int_equal(get_str(m, "big", s, &t, &v), 1);
        big[0] = (uint8_t)s;
        assert_slice_eq(v, big, n);
    }
    assert_int_equal(get_str(m, "small", 100, &t, &v), 1);
    assert_slice_eq(v, "s", 1);
    /* the iterator returns the large value too */
    tkv_it *it = memtable_iter(m);
    assert_non_null(it);
    uint8_t target[3 + IKEY_TRAILER];
    ikey_encode(target, "big", 3, 3, IKEY_SEEK_TYPE);
    it_seek(it, slice(target, sizeof target));
    assert_true(it_valid(it));
    assert_int_equal(ikey_seq(it_key(it)), 3);
    big[0] = 3;
    assert_slice_eq(it_value(it), big, n);
    it_destroy(it);
    free(big);
    memtable_unref(m);
}

/* Memory usage grows with the data and counters count every entry. */
static void test_memory_usage_grows(void **state)
{
    (void)state;
    memtable *m = memtable_new();
    assert_non_null(m);
    size_t prev = memtable_memory_usage(m);
    uint8_t val[100];
    memset(val, 'v', sizeof val);
    uint64_t dels = 0;
    for (uint64_t i = 1; i <= 50000; i++) {
        char key[24];
        int kl = snprintf(key, sizeof key, "key%010llu", (unsigned long long)(i * 7919 % 50021));
        ikey_type t = i % 10 == 0 ? IKEY_DELETION : IKEY_VALUE;
        dels += t == IKEY_DELETION;
        assert_int_equal(memtable_add(m, i, t, key, (size_t)kl, val, t == IKEY_VALUE ? sizeof val : 0), 0);
        size_t u = memtable_memory_usage(m);
        assert_true(u >= prev);
        prev = u;
    }
    assert_int_equal(memtable_num_entries(m), 50000);
    assert_int_equal(memtable_num_deletes(m), dels);
    /* at least the payload, and not absurdly more (nodes are ~2x payload at most) */
    assert_true(prev >= 45000 * sizeof val + 50000 * (13 + IKEY_TRAILER));
    assert_true(prev < 3 * (45000 * sizeof val + 50000 * (13 + IKEY_TRAILER)));
    memtable_unref(m);
}

/* Extra references keep the memtable alive; NULL unref is a no-op. */
static void test_refcount(void **state)
{
    (void)state;
    memtable *m = memtable_new();
    assert_non_null(m);
    memtable_ref(m);
    memtable_ref(m);
    memtable_unref(m);
    memtable_unref(m);
    assert_int_equal(memtable_add(m, 1, IKEY_VALUE, "k", 1, "v", 1), 0); /* still alive */
    ikey_type t;
    tkv_slice v;
    assert_int_equal(get_str(m, "k", 1, &t, &v), 1);
    memtable_unref(m); /* last one: ASan reports a leak if this did not free */
    memtable_unref(NULL);
}

/* Oversized keys and values are refused without inserting anything. */
static void test_too_large(void **state)
{
    (void)state;
    memtable *m = memtable_new();
    assert_non_null(m);
    size_t before = memtable_memory_usage(m);
    assert_int_equal(memtable_add(m, 1, IKEY_VALUE, "k", TKV_MAX_KEY_SIZE + 1, "v", 1), TKV_INVALID);
    assert_int_equal(memtable_add(m, 1, IKEY_VALUE, "k", 1, "v", (size_t)TKV_MAX_VALUE_SIZE + 1), TKV_INVALID);
    assert_int_equal(memtable_num_entries(m), 0);
    assert_int_equal(memtable_memory_usage(m), before);
    memtable_unref(m);
}

/* Random puts/deletes on a small key space; every get at random sequences
 * agrees with a brute-force scan of the operation log. */
static void test_get_vs_model(void **state)
{
    (void)state;
    enum { NOPS = 4000, NKEYS = 60 };
    memtable *m = memtable_new();
    assert_non_null(m);
    struct op {
        int key;
        ikey_type t;
        uint64_t seq;
    } *ops = malloc(NOPS * sizeof *ops);
    assert_non_null(ops);
    uint64_t seed = 77;
    char kbuf[16], vbuf[32];
    for (int i = 0; i < NOPS; i++) {
        ops[i].key = (int)(tu_splitmix64(&seed) % NKEYS);
        ops[i].t = tu_splitmix64(&seed) % 4 == 0 ? IKEY_DELETION : IKEY_VALUE;
        ops[i].seq = 2 * (uint64_t)i + 1; /* odd sequences: gaps to read between */
        int kl = snprintf(kbuf, sizeof kbuf, "k%d", ops[i].key);
        int vl = snprintf(vbuf, sizeof vbuf, "val-%llu", (unsigned long long)ops[i].seq);
        assert_int_equal(
            memtable_add(m, ops[i].seq, ops[i].t, kbuf, (size_t)kl, vbuf, ops[i].t == IKEY_VALUE ? (size_t)vl : 0), 0);
    }
    for (int q = 0; q < 20000; q++) {
        int key = (int)(tu_splitmix64(&seed) % (NKEYS + 5)); /* some never written */
        uint64_t seq = tu_splitmix64(&seed) % (2 * NOPS + 4);
        int want = -1;
        for (int i = 0; i < NOPS && ops[i].seq <= seq; i++)
            if (ops[i].key == key) want = i;
        int kl = snprintf(kbuf, sizeof kbuf, "k%d", key);
        ikey_type t;
        tkv_slice v;
        int found = memtable_get(m, kbuf, (size_t)kl, seq, &t, &v);
        if (want < 0) {
            assert_int_equal(found, 0);
            continue;
        }
        assert_int_equal(found, 1);
        assert_int_equal(t, ops[want].t);
        if (t == IKEY_VALUE) {
            int vl = snprintf(vbuf, sizeof vbuf, "val-%llu", (unsigned long long)ops[want].seq);
            assert_slice_eq(v, vbuf, (size_t)vl);
        }
    }
    free(ops);
    memtable_unref(m);
}

/* ---------------------------------------------------------------- range tombstones */

/* test_range_dels -- tombstones beside the entries: counted as entries, in
 * the order added by memtable_range_del_list, their fragments rebuilt once a
 * tombstone was added (the newest below a snapshot covers), and
 * memtable_get_seq gives the entry's sequence. */
static void test_range_dels(void **state)
{
    (void)state;
    memtable *m = memtable_new();
    uint64_t seq = 99;
    assert_int_equal(memtable_range_del_covering(m, slice("b", 1), 100, &seq), 0);
    assert_int_equal(seq, 0);
    rd_frags *f = (rd_frags *)1;
    assert_int_equal(memtable_range_dels(m, &f), 0);
    assert_null(f);
    assert_int_equal(memtable_add(m, 1, IKEY_VALUE, "b", 1, "v", 1), 0);
    assert_int_equal(memtable_add_range_del(m, 2, "a", 1, "c", 1), 0);
    assert_int_equal(memtable_num_range_dels(m), 1);
    assert_int_equal(memtable_num_entries(m), 2);
    assert_int_equal(memtable_range_del_covering(m, slice("b", 1), 100, &seq), 0);
    assert_int_equal(seq, 2);
    assert_int_equal(memtable_range_del_covering(m, slice("b", 1), 1, &seq), 0);
    assert_int_equal(seq, 0);
    assert_int_equal(memtable_range_del_covering(m, slice("c", 1), 100, &seq), 0);
    assert_int_equal(seq, 0);
    assert_int_equal(memtable_range_dels(m, &f), 0);
    assert_int_equal(rd_frags_tombs(f), 1);
    assert_int_equal(memtable_add_range_del(m, 5, "b", 1, "d", 1), 0); /* the fragments are rebuilt */
    assert_int_equal(memtable_range_del_covering(m, slice("c", 1), 100, &seq), 0);
    assert_int_equal(seq, 5);
    assert_int_equal(rd_frags_covering(f, slice("c", 1), 100), 0); /* an older set stays valid */
    rd_frags_unref(f);
    rd_list l = {0};
    assert_int_equal(memtable_range_del_list(m, &l), 0);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.t[0].seq, 2);
    assert_int_equal(l.t[1].seq, 5);
    assert_int_equal(ukey_cmp(l.t[1].end, slice("d", 1)), 0);
    rd_list_free(&l);
    ikey_type t;
    tkv_slice v;
    uint64_t found = 0;
    assert_int_equal(memtable_get_seq(m, "b", 1, 100, &t, &v, &found), 1);
    assert_int_equal(found, 1);
    memtable_unref(m);
}

/* The writer adds tombstones [k, k+1) one after another while readers ask
 * for the newest covering each key: a reader sees a prefix of the list, so
 * for key k it finds the tombstone of k or nothing, never garbage. */
typedef struct rd_race {
    memtable *m;
    int stop;
    int errors;
} rd_race;

static void *rd_reader(void *arg)
{
    rd_race *r = arg;
    while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
        uint64_t n = memtable_num_range_dels(r->m);
        for (uint64_t k = 0; k < n; k++) {
            char key[24];
            snprintf(key, sizeof key, "%08llu", (unsigned long long)k);
            uint64_t seq;
            if (memtable_range_del_covering(r->m, slice(key, 8), UINT64_MAX, &seq) < 0 || seq != k + 1)
                __atomic_fetch_add(&r->errors, 1, __ATOMIC_RELAXED);
        }
    }
    return NULL;
}

static void test_range_dels_threads(void **state)
{
    (void)state;
    rd_race r = {memtable_new(), 0, 0};
    pthread_t th[2];
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&th[i], NULL, rd_reader, &r), 0);
    for (uint64_t k = 0; k < 300; k++) {
        char b[24], e[24];
        snprintf(b, sizeof b, "%08llu", (unsigned long long)k);
        snprintf(e, sizeof e, "%08llu", (unsigned long long)k + 1);
        assert_int_equal(memtable_add_range_del(r.m, k + 1, b, 8, e, 8), 0);
    }
    __atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    assert_int_equal(r.errors, 0);
    memtable_unref(r.m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arena_alloc),        cmocka_unit_test(test_arena_big_block),
        cmocka_unit_test(test_arena_spares),       cmocka_unit_test(test_arena_spares_threads),
        cmocka_unit_test(test_get_visibility),     cmocka_unit_test(test_empty_key),
        cmocka_unit_test(test_large_values),       cmocka_unit_test(test_memory_usage_grows),
        cmocka_unit_test(test_refcount),           cmocka_unit_test(test_too_large),
        cmocka_unit_test(test_get_vs_model),       cmocka_unit_test(test_range_dels),
        cmocka_unit_test(test_range_dels_threads),
    };
    return cmocka_run_group_tests_name("memtable", tests, NULL, NULL);
}
