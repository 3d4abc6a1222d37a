// SPDX-License-Identifier: Apache-2.0
/*
 * test_sched_bgpool.c -- the shared background pool (src/sched/bgpool.c):
 *  - bgpool_caps: on two threads, a held deep task (priority 2) keeps the
 *    second deep task waiting (its cap is one thread) but not a flush
 *    (priority 0), which runs beside it.
 *  - bgpool_round_robin: on one thread, three groups whose tasks always
 *    have work get their turns in rotation (counts within one of each
 *    other), and a flush task of a fourth group goes before all of them.
 *  - bgpool_sleep_join_restart: a task sleeping for an hour is woken by its
 *    join (it would hang otherwise); the pool's threads stop and start
 *    again, as the env does with its first and last database.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include <cmocka.h>

#include "sched/bgpool.h"
#include "tierkv.h"

/* A task that holds its thread while `hold` is set. */
typedef struct held {
    int hold;    /* atomic: 1 keeps the step running */
    int started; /* atomic: steps begun */
    int done;    /* atomic: steps finished */
} held;

static int held_step(void *arg, uint64_t *wait_us)
{
    (void)wait_us;
    held *h = arg;
    __atomic_add_fetch(&h->started, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(&h->hold, __ATOMIC_ACQUIRE)) usleep(1000);
    __atomic_add_fetch(&h->done, 1, __ATOMIC_ACQ_REL);
    return BG_DONE;
}

/* wait_for -- waits until *v >= want (for at most about 60 s: a hang guard). */
static int wait_for(int *v, int want)
{
    for (int i = 0; i < 60000 && __atomic_load_n(v, __ATOMIC_ACQUIRE) < want; i++) usleep(1000);
    return __atomic_load_n(v, __ATOMIC_ACQUIRE);
}

static void bgpool_caps(void **state)
{
    (void)state;
    bg_pool *p;
    assert_int_equal(bg_pool_new(2, &p), 0);
    assert_int_equal(bg_pool_start(p, 0, 0), 0);
    bg_group *a = bg_group_new(p), *b = bg_group_new(p);
    assert_non_null(a);
    assert_non_null(b);
    held d1 = {.hold = 1}, d2 = {.hold = 1}, fl = {0};
    bg_task *t1, *t2, *tf;
    assert_int_equal(bg_task_add(a, 2, held_step, &d1, &t1), 0);
    assert_int_equal(bg_task_add(a, 2, held_step, &d2, &t2), 0);
    /* one deep task runs; the other may not (cap: one thread for priority 2 of 2) */
    for (int i = 0; i < 60000 &&
                    __atomic_load_n(&d1.started, __ATOMIC_ACQUIRE) + __atomic_load_n(&d2.started, __ATOMIC_ACQUIRE) < 1;
         i++)
        usleep(1000);
    assert_int_equal(__atomic_load_n(&d1.started, __ATOMIC_ACQUIRE) + __atomic_load_n(&d2.started, __ATOMIC_ACQUIRE),
                     1);
    /* a flush runs on the other thread while the deep task holds its own */
    assert_int_equal(bg_task_add(b, 0, held_step, &fl, &tf), 0);
    assert_int_equal(wait_for(&fl.done, 1), 1);
    bg_pool_stats st;
    bg_pool_get_stats(p, &st);
    assert_int_equal(st.busy_max, 2);
    assert_int_equal(__atomic_load_n(&d1.started, __ATOMIC_ACQUIRE) + __atomic_load_n(&d2.started, __ATOMIC_ACQUIRE),
                     1); /* still only one deep task, with a thread free again */
    __atomic_store_n(&d1.hold, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&d2.hold, 0, __ATOMIC_RELEASE);
    bg_task_join(t1);
    bg_task_join(t2);
    bg_task_join(tf);
    assert_int_equal(d1.done + d2.done, 2);
    bg_group_free(a);
    bg_group_free(b);
    bg_pool_stop(p);
    bg_pool_free(p);
}

/* A task that always has work, until a shared budget of steps is used. */
typedef struct busy {
    int *left; /* shared: steps left for all (atomic) */
    int steps;
    int *order; /* the log of the first steps: prio-0 task = 1, others 2 */
    int *nlog;
    int mark;
} busy;

static int busy_step(void *arg, uint64_t *wait_us)
{
    (void)wait_us;
    busy *b = arg;
    int n = __atomic_fetch_add(b->nlog, 1, __ATOMIC_ACQ_REL);
    if (n < 64) b->order[n] = b->mark;
    if (b->mark == 1) return ++b->steps >= 10 ? BG_DONE : BG_AGAIN; /* the flush: 10 steps */
    if (__atomic_sub_fetch(b->left, 1, __ATOMIC_ACQ_REL) < 0) return BG_DONE;
    b->steps++;
    return BG_AGAIN;
}

static void bgpool_round_robin(void **state)
{
    (void)state;
    bg_pool *p;
    assert_int_equal(bg_pool_new(1, &p), 0);
    bg_group *g[4];
    bg_task *t[4];
    int left = 300, order[64], nlog = 0;
    busy b[4];
    for (int i = 0; i < 4; i++) {
        g[i] = bg_group_new(p);
        assert_non_null(g[i]);
        b[i] = (busy){.left = &left, .order = order, .nlog = &nlog, .mark = i == 3 ? 1 : 2};
        /* added before the threads start: all are runnable at once */
        assert_int_equal(bg_task_add(g[i], i == 3 ? 0 : 1, busy_step, &b[i], &t[i]), 0);
    }
    assert_int_equal(bg_pool_start(p, 0, 0), 0);
    for (int i = 0; i < 4; i++) bg_task_join(t[i]);
    for (int i = 0; i < 10; i++) assert_int_equal(order[i], 1); /* the flush first, all of it */
    for (int i = 0; i < 3; i++) {
        printf("group %d: %d steps\n", i, b[i].steps);
        assert_true(b[i].steps >= 99 && b[i].steps <= 101);
    }
    for (int i = 0; i < 4; i++) bg_group_free(g[i]);
    bg_pool_stop(p);
    bg_pool_free(p);
}

static int sleep_step(void *arg, uint64_t *wait_us)
{
    int *n = arg;
    if (++*n >= 2) return BG_DONE;
    *wait_us = UINT64_C(3600) * 1000000; /* an hour: only the join can end it */
    return BG_SLEEP;
}

static void bgpool_sleep_join_restart(void **state)
{
    (void)state;
    bg_pool *p;
    assert_int_equal(bg_pool_new(0, &p), TKV_INVALID);
    assert_int_equal(bg_pool_new(BG_MAX_THREADS + 1, &p), TKV_INVALID);
    assert_int_equal(bg_pool_new(3, &p), 0);
    for (int round = 0; round < 2; round++) {
        assert_int_equal(bg_pool_start(p, 0, 0), 0);
        bg_pool_stats st;
        bg_pool_get_stats(p, &st);
        assert_int_equal(st.threads, 3);
        bg_group *g = bg_group_new(p);
        assert_non_null(g);
        int n = 0;
        bg_task *t;
        assert_int_equal(bg_task_add(g, 1, sleep_step, &n, &t), 0);
        bg_task_join(t); /* wakes the sleeper */
        assert_int_equal(n, 2);
        bg_group_free(g);
        bg_pool_stop(p);
        bg_pool_get_stats(p, &st);
        assert_int_equal(st.threads, 0);
        assert_int_equal(st.groups, 0);
        assert_int_equal(st.tasks, 0);
    }
    bg_pool_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bgpool_caps),
        cmocka_unit_test(bgpool_round_robin),
        cmocka_unit_test(bgpool_sleep_join_restart),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
