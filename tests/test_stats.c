// SPDX-License-Identifier: Apache-2.0
/*
 * test_stats.c -- statistics and events (tkv_statistics,
 * tkv_options_set_listener), and the pieces under them:
 *
 *  lathist_buckets     every value lies in its bucket; buckets are ordered
 *                      and no wider than a quarter of their lower edge;
 *                      percentiles of known samples within that
 *  events_queue        the event thread delivers in order; a listener that
 *                      blocks makes later events drop past the queue's size,
 *                      counted, and events_stop delivers what is queued
 *  counters            tickers and histograms after a known workload, with
 *                      statistics=1 and =0; entries past the library's count
 *                      are zeroed; argument errors
 *  listener            flush, column and compaction events in begin/end
 *                      pairs, delivered without a database lock (the
 *                      listener reads the database), all before tkv_close
 *                      returns
 *  bg_error_event      a failed background flush reaches the listener as
 *                      TKV_EVENT_BG_ERROR with its status and message
 *
 * Randomized cases print their seed; rerun one with TKV_TEST_SEED=<seed>.
 */
#include <errno.h>
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

#include "db/events.h"
#include "io/io.h"
#include "testutil.h"
#include "tierkv.h"
#include "util/lathist.h"

/* ---------------------------------------------------------------- lathist */

static void lathist_buckets(void **state)
{
    (void)state;
    tu_rng r;
    tu_rng_init(&r, tu_seed());
    for (unsigned b = 1; b < LATHIST_BUCKETS; b++) {
        uint64_t lo = lathist_bucket_high(b - 1) + 1, hi = lathist_bucket_high(b);
        assert_true(hi >= lo);
        assert_int_equal(lathist_bucket_of(lo), b);
        assert_int_equal(lathist_bucket_of(hi), b);
        if (lo >= 4) assert_true(hi - lo + 1 <= lo / 4); /* at most 25 % of the lower edge */
    }
    assert_int_equal(lathist_bucket_high(LATHIST_BUCKETS - 1), UINT64_MAX);
    for (int i = 0; i < 100000; i++) {
        uint64_t v = tu_rng_next(&r) >> tu_rng_below(&r, 64);
        unsigned b = lathist_bucket_of(v);
        assert_true(b < LATHIST_BUCKETS);
        assert_true(v <= lathist_bucket_high(b));
        if (b) assert_true(v > lathist_bucket_high(b - 1));
    }
    /* 1..10000 once each: p50 = 5000, p99 = 9900, within a bucket's width above */
    static lathist h;
    memset(&h, 0, sizeof h);
    lathist_summary s;
    lathist_summarize(&h, &s);
    assert_int_equal(s.count, 0);
    assert_int_equal(s.p99, 0);
    for (uint64_t v = 1; v <= 10000; v++) lathist_add(&h, v);
    lathist_summarize(&h, &s);
    assert_int_equal(s.count, 10000);
    assert_int_equal(s.sum, 10000ull * 10001 / 2);
    assert_int_equal(s.max, 10000);
    assert_true(s.p50 >= 5000 && s.p50 <= 5000 + 5000 / 4);
    assert_true(s.p90 >= 9000 && s.p90 <= 9000 + 9000 / 4);
    assert_true(s.p99 >= 9900 && s.p99 <= 10000);
    assert_true(s.p999 >= 9990 && s.p999 <= 10000);
}

/* ---------------------------------------------------------------- events queue */

typedef struct qlisten {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int blocked; /* the listener waits while this is set */
    int waiting; /* it is waiting now */
    uint64_t jobs[2048];
    size_t n;
} qlisten;

static void qlisten_fn(const tkv_event *ev, void *arg)
{
    qlisten *q = arg;
    pthread_mutex_lock(&q->mu);
    while (q->blocked) {
        q->waiting = 1;
        pthread_cond_broadcast(&q->cv);
        pthread_cond_wait(&q->cv, &q->mu);
    }
    q->waiting = 0;
    assert_int_equal(ev->size, sizeof *ev);
    if (q->n < 2048) q->jobs[q->n++] = ev->job;
    pthread_mutex_unlock(&q->mu);
}

static void events_queue(void **state)
{
    (void)state;
    static qlisten q;
    memset(&q, 0, sizeof q);
    pthread_mutex_init(&q.mu, NULL);
    pthread_cond_init(&q.cv, NULL);
    q.blocked = 1;
    events *e;
    assert_int_equal(events_start(&e, qlisten_fn, &q, 0), 0);
    tkv_event ev = {.type = TKV_EVENT_FLUSH_BEGIN};
    ev.job = events_next_job(e);
    events_post(e, &ev); /* the thread takes this one and blocks in the listener */
    pthread_mutex_lock(&q.mu);
    while (!q.waiting) pthread_cond_wait(&q.cv, &q.mu);
    pthread_mutex_unlock(&q.mu);
    const unsigned extra = EVENTS_QUEUE + 100;
    for (unsigned i = 0; i < extra; i++) {
        ev.job = events_next_job(e);
        events_post(e, &ev);
    }
    assert_int_equal(events_dropped(e), 100); /* the queue held EVENTS_QUEUE of them */
    pthread_mutex_lock(&q.mu);
    q.blocked = 0;
    pthread_cond_broadcast(&q.cv);
    pthread_mutex_unlock(&q.mu);
    events_stop(e); /* delivers the queued ones first */
    assert_int_equal(q.n, 1 + EVENTS_QUEUE);
    for (size_t i = 0; i < q.n; i++) assert_int_equal(q.jobs[i], i + 1); /* in order; the dropped ones were the last */
    events_stop(NULL);
    events_post(NULL, &ev);
    assert_int_equal(events_next_job(NULL), 0);
}

/* ---------------------------------------------------------------- counters */

static void read_all(tkv_db *db, uint64_t *t, tkv_histogram_data *h)
{
    assert_int_equal(tkv_statistics(db, t, TKV_TICKER_COUNT, h, TKV_HIST_COUNT), TKV_OK);
}

static void counters(void **state)
{
    (void)state;
    for (int stats = 0; stats < 2; stats++) {
        char *dir = tu_tmpdir("stats-counters");
        tkv_options *o = tu_small_options();
        assert_int_equal(tkv_options_set(o, "statistics", stats ? "1" : "0"), TKV_OK);
        tkv_db *db = tu_open_ok(dir, o);
        char k[16], v[100];
        memset(v, 'v', sizeof v);
        for (int i = 0; i < 2000; i++) {
            snprintf(k, sizeof k, "k%05d", i);
            assert_int_equal(tkv_put(db, k, 6, v, sizeof v, 0), TKV_OK);
        }
        for (int i = 0; i < 100; i++) {
            snprintf(k, sizeof k, "k%05d", i * 7);
            assert_int_equal(tkv_delete(db, k, 6, 0), TKV_OK);
        }
        tkv_batch *b = tkv_batch_new();
        assert_int_equal(tkv_batch_put(b, "b1", 2, "x", 1), TKV_OK);
        assert_int_equal(tkv_batch_put(b, "b2", 2, "x", 1), TKV_OK);
        assert_int_equal(tkv_write(db, b, TKV_SYNC), TKV_OK);
        tkv_batch_free(b);
        assert_int_equal(tkv_flush(db), TKV_OK);
        assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK);
        int found = 0;
        for (int i = 0; i < 500; i++) {
            snprintf(k, sizeof k, "k%05d", i * 5);
            void *val;
            size_t vl;
            int rc = tkv_get(db, NULL, k, 6, &val, &vl);
            found += rc == TKV_OK;
            if (rc == TKV_OK) tkv_free(val);
        }
        const void *keys[3] = {"k00001", "k00007", "zz"};
        size_t klens[3] = {6, 6, 2}, vlens[3];
        void *vals[3];
        int st[3];
        assert_int_equal(tkv_multi_get(db, NULL, 3, keys, klens, vals, vlens, st), TKV_OK);
        for (int i = 0; i < 3; i++) tkv_free(vals[i]);
        for (int i = 0; i < 3; i++) {
            tkv_iter *it;
            assert_int_equal(tkv_iter_new(db, NULL, &it), TKV_OK);
            tkv_iter_free(it);
        }
        uint64_t t[TKV_TICKER_COUNT + 3];
        tkv_histogram_data h[TKV_HIST_COUNT + 2];
        memset(t, 0xaa, sizeof t);
        memset(h, 0xaa, sizeof h);
        assert_int_equal(tkv_statistics(db, t, TKV_TICKER_COUNT + 3, h, TKV_HIST_COUNT + 2), TKV_OK);
        for (int i = 0; i < 3; i++) assert_int_equal(t[TKV_TICKER_COUNT + i], 0); /* unknown to the library: 0 */
        for (int i = 0; i < 2; i++) assert_int_equal(h[TKV_HIST_COUNT + i].count, 0);
        assert_int_equal(t[TKV_TICKER_PUTS], 2002);
        assert_int_equal(t[TKV_TICKER_DELETES], 100);
        assert_int_equal(t[TKV_TICKER_BYTES_WRITTEN], 2000 * 106 + 100 * 6 + 2 * 3);
        assert_int_equal(t[TKV_TICKER_WRITE_BATCHES], 2101);
        assert_true(t[TKV_TICKER_WAL_SYNCS] >= 1);
        assert_int_equal(t[TKV_TICKER_GETS], 503);
        assert_int_equal(t[TKV_TICKER_GETS_FOUND], (uint64_t)found + 1); /* k00001 found, k00007 deleted */
        assert_int_equal(t[TKV_TICKER_ITERATORS], 3);
        assert_true(t[TKV_TICKER_FLUSHES] >= 1);
        assert_true(t[TKV_TICKER_COLUMNS] + t[TKV_TICKER_COMPACTIONS] >= 1);
        assert_true(t[TKV_TICKER_COMPACTION_WRITE_BYTES] > 0);
        assert_true(t[TKV_TICKER_SST_BYTES] > 0); /* everything compacted into SSTs */
        assert_true(t[TKV_TICKER_MEMTABLE_BYTES] > 0);
        assert_int_equal(t[TKV_TICKER_EVENTS_DROPPED], 0);
        assert_int_equal(h[TKV_HIST_GET].count, stats ? 501 : 0); /* per call: 500 gets, one multi_get */
        assert_int_equal(h[TKV_HIST_WRITE].count, stats ? 2101 : 0);
        assert_true(h[TKV_HIST_FLUSH].count >= 1); /* always measured */
        for (int i = 0; i < TKV_HIST_COUNT; i++) {
            const tkv_histogram_data *d = &h[i];
            if (!d->count) continue;
            assert_true(d->p50 <= d->p90 && d->p90 <= d->p99 && d->p99 <= d->p999 && d->p999 <= d->max);
            assert_true(d->sum >= d->max && d->max > 0);
        }
        uint64_t t2[TKV_TICKER_COUNT];
        tkv_histogram_data h2[TKV_HIST_COUNT];
        read_all(db, t2, h2);
        assert_int_equal(t2[TKV_TICKER_PUTS], 2002);
        assert_int_equal(tkv_statistics(db, NULL, 0, NULL, 0), TKV_OK);
        assert_int_equal(tkv_statistics(db, NULL, 1, NULL, 0), TKV_INVALID);
        assert_int_equal(tkv_statistics(db, t2, 1, NULL, 2), TKV_INVALID);
        assert_int_equal(tkv_statistics(NULL, t2, 1, NULL, 0), TKV_INVALID);
        tu_close_ok(db);
        tkv_options_free(o);
        tu_tmpdir_free(dir);
    }
    /* names: one per id, distinct, NULL outside */
    for (int i = 0; i < TKV_TICKER_COUNT; i++) {
        assert_non_null(tkv_ticker_name(i));
        for (int j = 0; j < i; j++) assert_string_not_equal(tkv_ticker_name(i), tkv_ticker_name(j));
    }
    for (int i = 0; i < TKV_HIST_COUNT; i++) {
        assert_non_null(tkv_histogram_name(i));
        for (int j = 0; j < i; j++) assert_string_not_equal(tkv_histogram_name(i), tkv_histogram_name(j));
    }
    assert_null(tkv_ticker_name(TKV_TICKER_COUNT));
    assert_null(tkv_ticker_name(-1));
    assert_null(tkv_histogram_name(TKV_HIST_COUNT));
    assert_string_equal(tkv_ticker_name(TKV_TICKER_PUTS), "puts");
    assert_string_equal(tkv_histogram_name(TKV_HIST_GET), "get_ns");
}

/* ---------------------------------------------------------------- listener */

#define MAX_EVENTS 4096

typedef struct recorder {
    pthread_mutex_t mu;
    tkv_event ev[MAX_EVENTS];
    char msg[256];
    size_t n;
    tkv_db *db;   /* set once open returned (atomic) */
    int reads_ok; /* reads the listener made, all TKV_OK */
    pthread_t listener_thread;
    int threads_differ;
} recorder;

static void record(const tkv_event *ev, void *arg)
{
    recorder *r = arg;
    tkv_db *db = __atomic_load_n(&r->db, __ATOMIC_ACQUIRE);
    if (db) { /* no lock of the database is held here: reading cannot deadlock */
        void *v;
        size_t vl;
        if (tkv_get(db, NULL, "anchor", 6, &v, &vl) == TKV_OK) {
            tkv_free(v);
            __atomic_fetch_add(&r->reads_ok, 1, __ATOMIC_RELAXED);
        }
        char *p = tkv_property(db, "tkv.levels");
        tkv_free(p);
    }
    pthread_mutex_lock(&r->mu);
    if (!r->n) r->listener_thread = pthread_self();
    else if (!pthread_equal(r->listener_thread, pthread_self())) r->threads_differ = 1;
    if (r->n < MAX_EVENTS) r->ev[r->n++] = *ev;
    if (ev->type == TKV_EVENT_BG_ERROR && ev->message) snprintf(r->msg, sizeof r->msg, "%s", ev->message);
    pthread_mutex_unlock(&r->mu);
}

/* check_pairs -- every BEGIN of a job has one END after it, and no END lacks
 * its BEGIN; returns how many pairs of type `begin` ended with TKV_OK. */
static size_t check_pairs(const recorder *r, int begin)
{
    size_t ok = 0;
    for (size_t i = 0; i < r->n; i++) {
        if (r->ev[i].type != begin && r->ev[i].type != begin + 1) continue;
        assert_true(r->ev[i].job > 0);
        size_t begins = 0, ends = 0, end_at = 0, begin_at = 0;
        for (size_t j = 0; j < r->n; j++) {
            if (r->ev[j].job != r->ev[i].job) continue;
            if (r->ev[j].type == begin) begins++, begin_at = j;
            if (r->ev[j].type == begin + 1) ends++, end_at = j;
        }
        assert_int_equal(begins, 1);
        assert_int_equal(ends, 1);
        assert_true(end_at > begin_at);
        if (r->ev[i].type == begin + 1 && r->ev[i].status == TKV_OK) ok++;
    }
    return ok;
}

static void listener(void **state)
{
    (void)state;
    static recorder r;
    memset(&r, 0, sizeof r);
    pthread_mutex_init(&r.mu, NULL);
    char *dir = tu_tmpdir("stats-listener");
    tkv_options *o = tu_small_options();
    assert_int_equal(tkv_options_set_listener(o, record, &r), TKV_OK);
    assert_int_equal(tkv_options_set_listener(NULL, record, &r), TKV_INVALID);
    tkv_db *db = tu_open_ok(dir, o);
    assert_int_equal(tkv_put(db, "anchor", 6, "a", 1, 0), TKV_OK);
    __atomic_store_n(&r.db, db, __ATOMIC_RELEASE);
    char k[16], v[200];
    memset(v, 'v', sizeof v);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 3000; i++) {
            snprintf(k, sizeof k, "k%05d", (i * 7919 + round) % 5000);
            assert_int_equal(tkv_put(db, k, 6, v, sizeof v, 0), TKV_OK);
        }
        assert_int_equal(tkv_flush(db), TKV_OK);
    }
    assert_int_equal(tkv_compact_range(db, NULL, 0, NULL, 0), TKV_OK);
    __atomic_store_n(&r.db, NULL, __ATOMIC_RELEASE); /* the listener must not read a closing database */
    tu_close_ok(db);
    /* everything was delivered before tkv_close returned: nothing comes later */
    size_t n = r.n;
    usleep(20000);
    assert_int_equal(r.n, n);
    assert_false(r.threads_differ);
    assert_true(r.reads_ok > 0);
    size_t flushes = check_pairs(&r, TKV_EVENT_FLUSH_BEGIN);
    size_t columns = check_pairs(&r, TKV_EVENT_COLUMN_BEGIN);
    size_t compactions = check_pairs(&r, TKV_EVENT_COMPACTION_BEGIN);
    size_t stall_begins = 0, stall_ends = 0;
    for (size_t i = 0; i < r.n; i++) {
        stall_begins += r.ev[i].type == TKV_EVENT_STALL_BEGIN;
        stall_ends += r.ev[i].type == TKV_EVENT_STALL_END;
    }
    assert_int_equal(stall_begins, stall_ends); /* stalls carry job 0: counted in pairs */
    print_message("%zu events: %zu flushes, %zu columns, %zu compactions, %d reads by the listener\n", r.n, flushes,
                  columns, compactions, r.reads_ok);
    assert_true(flushes >= 3);
    assert_true(columns + compactions >= 1);
    for (size_t i = 0; i < r.n; i++) {
        const tkv_event *e = &r.ev[i];
        assert_int_equal(e->size, sizeof *e);
        if (e->type == TKV_EVENT_FLUSH_END && e->status == TKV_OK) assert_true(e->bytes_written > 0);
        if ((e->type == TKV_EVENT_COLUMN_END || e->type == TKV_EVENT_COMPACTION_END) && e->status == TKV_OK)
            assert_true(e->bytes_written > 0 || e->bytes_read == 0); /* a trivial move reads and writes nothing */
        assert_true(e->type != TKV_EVENT_BG_ERROR);
    }
    tkv_options_free(o);
    tu_tmpdir_free(dir);
}

static tu_fault g_fault;

static void bg_error_event(void **state)
{
    (void)state;
    static recorder r;
    memset(&r, 0, sizeof r);
    pthread_mutex_init(&r.mu, NULL);
    char *dir = tu_tmpdir("stats-bgerror");
    tkv_options *o = tu_small_options();
    assert_int_equal(tkv_options_set(o, "l0", "sst"), TKV_OK);
    assert_int_equal(tkv_options_set_listener(o, record, &r), TKV_OK);
    tkv_db *db = tu_open_ok(dir, o);
    g_fault = (tu_fault){IO_OP_WRITE, ".sst", 0, 1000000, EIO, 0};
    io_set_fault_hook(tu_fault_hook, &g_fault);
    char k[16], v[200];
    memset(v, 'v', sizeof v);
    int rc = TKV_OK;
    for (int i = 0; i < 20000 && rc == TKV_OK; i++) {
        snprintf(k, sizeof k, "k%05d", i);
        rc = tkv_put(db, k, 6, v, sizeof v, 0);
        if (i % 1000 == 999) {
            pthread_mutex_lock(&r.mu);
            int seen = 0;
            for (size_t j = 0; j < r.n; j++) seen |= r.ev[j].type == TKV_EVENT_BG_ERROR;
            pthread_mutex_unlock(&r.mu);
            if (seen) break;
        }
    }
    rc = tkv_close(db);
    io_set_fault_hook(NULL, NULL);
    assert_int_equal(rc, TKV_IO_ERROR);
    size_t errors = 0;
    for (size_t i = 0; i < r.n; i++)
        if (r.ev[i].type == TKV_EVENT_BG_ERROR) {
            errors++;
            assert_int_equal(r.ev[i].status, TKV_IO_ERROR);
        }
    assert_int_equal(errors, 1); /* the first error makes the database read-only, once */
    assert_non_null(strstr(r.msg, ".sst"));
    int failed_flush = 0;
    for (size_t i = 0; i < r.n; i++) failed_flush |= r.ev[i].type == TKV_EVENT_FLUSH_END && r.ev[i].status < 0;
    assert_true(failed_flush);
    check_pairs(&r, TKV_EVENT_FLUSH_BEGIN);
    tkv_options_free(o);
    tu_tmpdir_free(dir);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lathist_buckets), cmocka_unit_test(events_queue),   cmocka_unit_test(counters),
        cmocka_unit_test(listener),        cmocka_unit_test(bg_error_event),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
