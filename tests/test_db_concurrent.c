// SPDX-License-Identifier: Apache-2.0
/*
 * test_db_concurrent.c -- the database under concurrent writers and readers:
 * group commit loses nothing, batches are atomic to concurrent readers
 * (iterators and snapshot gets), memtable switches under load, and the result
 * survives reopen. Run under TSan by `make tsan`.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tierkv.h"

#define WRITERS    4
#define PER_WRITER 3000

static char g_dir[256];
static tkv_db *g_db;
static volatile int g_stop;

/* writer_main -- each batch puts "a:<w>:<i>" and "b:<w>:<i>" with the same
 * value and bumps the counter key "c:<w>" : the three must be seen together. */
static void *writer_main(void *arg)
{
    int w = (int)(intptr_t)arg;
    tkv_batch *b = tkv_batch_new();
    for (int i = 0; i < PER_WRITER; i++) {
        char ka[32], kb[32], kc[32], v[160];
        int na = snprintf(ka, sizeof ka, "a:%d:%06d", w, i);
        int nb = snprintf(kb, sizeof kb, "b:%d:%06d", w, i);
        int nc = snprintf(kc, sizeof kc, "c:%d", w);
        int nv = snprintf(v, sizeof v, "%d-%d-%0*d", w, i, (i % 7) * 20, 0);
        tkv_batch_clear(b);
        tkv_batch_put(b, ka, (size_t)na, v, (size_t)nv);
        tkv_batch_put(b, kb, (size_t)nb, v, (size_t)nv);
        char cnt[16];
        int ncnt = snprintf(cnt, sizeof cnt, "%d", i + 1);
        tkv_batch_put(b, kc, (size_t)nc, cnt, (size_t)ncnt);
        int rc = tkv_write(g_db, b, (i % 50 == 0) ? TKV_SYNC : 0);
        if (rc != TKV_OK) {
            fprintf(stderr, "write failed: %s %s\n", tkv_strerror(rc), tkv_errmsg());
            abort();
        }
    }
    tkv_batch_free(b);
    return NULL;
}

/* reader_main -- repeatedly: snapshot, read each writer's counter c, then
 * check that a:<w>:<c-1> and b:<w>:<c-1> exist at that snapshot and that an
 * iterator over the snapshot sees exactly c "a:" keys for the writer. */
static void *reader_main(void *arg)
{
    (void)arg;
    long checks = 0;
    while (!__atomic_load_n(&g_stop, __ATOMIC_ACQUIRE) || checks < 5) {
        const tkv_snapshot *s = tkv_snapshot_new(g_db);
        assert_non_null(s);
        int counts[WRITERS];
        for (int w = 0; w < WRITERS; w++) {
            char kc[16];
            int nc = snprintf(kc, sizeof kc, "c:%d", w);
            void *v;
            size_t vl;
            int rc = tkv_get(g_db, s, kc, (size_t)nc, &v, &vl);
            counts[w] = 0;
            if (rc == TKV_OK) {
                counts[w] = atoi(v);
                tkv_free(v);
            } else {
                assert_int_equal(rc, TKV_NOT_FOUND);
            }
            if (counts[w] > 0) {
                char ka[32], kb[32];
                int na = snprintf(ka, sizeof ka, "a:%d:%06d", w, counts[w] - 1);
                int nb = snprintf(kb, sizeof kb, "b:%d:%06d", w, counts[w] - 1);
                void *va, *vb;
                size_t la, lb;
                assert_int_equal(tkv_get(g_db, s, ka, (size_t)na, &va, &la), TKV_OK);
                assert_int_equal(tkv_get(g_db, s, kb, (size_t)nb, &vb, &lb), TKV_OK);
                assert_int_equal(la, lb);
                assert_memory_equal(va, vb, la);
                tkv_free(va);
                tkv_free(vb);
            }
        }
        tkv_iter *it;
        assert_int_equal(tkv_iter_new(g_db, s, &it), TKV_OK);
        int seen[WRITERS] = {0};
        for (tkv_iter_seek(it, "a:", 2); tkv_iter_valid(it); tkv_iter_next(it)) {
            size_t kl;
            const char *k = tkv_iter_key(it, &kl);
            if (kl < 2 || k[0] != 'a') break;
            seen[k[2] - '0']++;
        }
        assert_int_equal(tkv_iter_status(it), TKV_OK);
        tkv_iter_free(it);
        for (int w = 0; w < WRITERS; w++) assert_int_equal(seen[w], counts[w]);
        tkv_snapshot_free(g_db, s);
        checks++;
    }
    return NULL;
}

static void verify_all(tkv_db *db)
{
    for (int w = 0; w < WRITERS; w++)
        for (int i = 0; i < PER_WRITER; i += 97) {
            char ka[32];
            int na = snprintf(ka, sizeof ka, "a:%d:%06d", w, i);
            void *v;
            size_t vl;
            assert_int_equal(tkv_get(db, NULL, ka, (size_t)na, &v, &vl), TKV_OK);
            tkv_free(v);
        }
    tkv_iter *it;
    assert_int_equal(tkv_iter_new(db, NULL, &it), TKV_OK);
    long n = 0;
    for (tkv_iter_seek_first(it); tkv_iter_valid(it); tkv_iter_next(it)) n++;
    assert_int_equal(n, (long)WRITERS * PER_WRITER * 2 + WRITERS);
    n = 0;
    for (tkv_iter_seek_last(it); tkv_iter_valid(it); tkv_iter_prev(it)) n++;
    assert_int_equal(n, (long)WRITERS * PER_WRITER * 2 + WRITERS);
    tkv_iter_free(it);
}

static void test_concurrent_writers_readers(void **state)
{
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/tkv_conc_XXXXXX");
    assert_non_null(mkdtemp(g_dir));
    tkv_options *o = tkv_options_new();
    assert_int_equal(tkv_options_set(o, "memtable_size", "256K"), TKV_OK); /* many switches */
    assert_int_equal(tkv_open(g_dir, o, &g_db), TKV_OK);
    pthread_t wt[WRITERS], rt[2];
    for (int i = 0; i < 2; i++) pthread_create(&rt[i], NULL, reader_main, NULL);
    for (int i = 0; i < WRITERS; i++) pthread_create(&wt[i], NULL, writer_main, (void *)(intptr_t)i);
    for (int i = 0; i < WRITERS; i++) pthread_join(wt[i], NULL);
    __atomic_store_n(&g_stop, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; i++) pthread_join(rt[i], NULL);
    verify_all(g_db);
    char *st = tkv_property(g_db, "tkv.stats");
    assert_non_null(st);
    assert_non_null(strstr(st, "memtable.switches"));
    tkv_free(st);
    assert_int_equal(tkv_close(g_db), TKV_OK);
    assert_int_equal(tkv_open(g_dir, o, &g_db), TKV_OK);
    verify_all(g_db);
    assert_int_equal(tkv_close(g_db), TKV_OK);
    assert_int_equal(tkv_destroy(g_dir), TKV_OK);
    tkv_options_free(o);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_concurrent_writers_readers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
