// SPDX-License-Identifier: Apache-2.0
/*
 * test_sched_ratelimit.c -- the token bucket (src/sched/ratelimit.c): rates
 * and rate changes, priorities (high before low, reserved shares for low
 * and mid), large requests split, and two short real-thread tests: a blocked
 * rl_request is woken by rl_cancel and rl_shutdown, and a blocking
 * rl_request on a fake clock advances when the test advances the clock.
 * The rest runs on a fake clock and the deterministic core.
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

#include "sched/clock.h"
#include "sched/ratelimit.h"
#include "testutil.h"

#define MiB (1ull << 20)

#define KiB (1ull << 10)

/* ---- ratelimit ---- */
#define REFILL 5000u

static ratelimit *rl_new(sched_clock *c, uint64_t rate, uint64_t low_reserved)
{
    rl_options o;
    rl_options_default(&o);
    assert_int_equal(o.refill_us, REFILL);
    o.rate = rate;
    o.low_reserved = low_reserved;
    ratelimit *rl = NULL;
    assert_int_equal(rl_create(&o, c, &rl), TKV_OK);
    return rl;
}

/* A simulated requester: wants `left` bytes, asks through its ticket. */
typedef struct sim_req {
    rl_req t;
    rl_prio prio;
    uint64_t left, got, max_piece;
    int infinite;
} sim_req;

/* sim_poll -- drives one requester at time now: collects grants and asks
 * again until it has to wait (or is done). */
static void sim_poll(ratelimit *rl, sim_req *r, uint64_t now)
{
    while (r->infinite || r->left > 0) {
        uint64_t until = 0;
        int64_t g = rl_try_acquire(rl, &r->t, r->prio, r->infinite ? 1 * MiB : r->left, now, &until);
        assert_true(g >= 0);
        if (g == 0) {
            assert_true(until > now);
            return;
        }
        if ((uint64_t)g > r->max_piece) r->max_piece = (uint64_t)g;
        r->got += (uint64_t)g;
        if (!r->infinite) r->left -= (uint64_t)g;
    }
}

/* drain -- empties the bucket at time now (a HIGH grab of one burst). */
static void drain(ratelimit *rl, uint64_t now)
{
    rl_req t = RL_REQ_INIT;
    int64_t g = rl_try_acquire(rl, &t, RL_HIGH, rl_burst(rl), now, NULL);
    assert_int_equal(g, (int64_t)rl_burst(rl));
}

/* poll_all -- polls every requester at time now. */
static void poll_all(ratelimit *rl, sim_req **rs, int n, uint64_t now)
{
    for (int i = 0; i < n; i++) sim_poll(rl, rs[i], now);
}

/* run -- polls every requester at every refill time in [*now, *now + us);
 * *now ends at *now + us. */
static void run(ratelimit *rl, sim_req **rs, int n, uint64_t *now, uint64_t us)
{
    uint64_t end = *now + us;
    for (; *now < end; *now += REFILL) poll_all(rl, rs, n, *now);
}

/* rl_new3 -- a limiter with both reserves. */
static ratelimit *rl_new3(sched_clock *c, uint64_t rate, uint64_t low_reserved, uint64_t mid_reserved)
{
    rl_options o;
    rl_options_default(&o);
    assert_int_equal(o.mid_reserved, 0); /* strict by default */
    o.rate = rate;
    o.low_reserved = low_reserved;
    o.mid_reserved = mid_reserved;
    ratelimit *rl = NULL;
    assert_int_equal(rl_create(&o, c, &rl), TKV_OK);
    return rl;
}

typedef struct waiter_arg {
    ratelimit *rl;
    rl_prio prio;
    uint64_t n;
    atomic_int *flag;
    int rc;
    atomic_int done;
} waiter_arg;

static void *waiter_main(void *p)
{
    waiter_arg *a = p;
    a->rc = rl_request(a->rl, a->prio, a->n, a->flag);
    atomic_store(&a->done, 1);
    return NULL;
}

/* wait_done -- waits (real time, at most 2 s) for a waiter to return. */
static int wait_done(waiter_arg *a)
{
    for (int i = 0; i < 2000 && !atomic_load(&a->done); i++) sched_sleep_us(1000);
    return atomic_load(&a->done);
}

/* Rate 0 is unlimited: requests of any size are granted in full at once, and
 * switching to 0 grants the queued ones in full. */
static void test_rl_unlimited(void **state)
{
    (void)state;
    sched_clock c;
    sched_clock_init_fake(&c, 1000000);
    ratelimit *rl = rl_new(&c, 0, 0);
    rl_req t = RL_REQ_INIT;
    assert_int_equal(rl_try_acquire(rl, &t, RL_LOW, 5000 * MiB, 1000000, NULL), (int64_t)(5000 * MiB));
    assert_int_equal(rl_request(rl, RL_HIGH, 1ull << 40, NULL), TKV_OK);
    assert_int_equal(rl_burst(rl), 0);

    rl_set_rate(rl, 1 * MiB);
    drain(rl, 1000000);
    sim_req a = {.t = RL_REQ_INIT, .prio = RL_LOW, .left = 100 * MiB};
    sim_poll(rl, &a, 1000000);
    assert_int_equal(a.got, 0);
    rl_set_rate(rl, 0);
    sim_poll(rl, &a, 1000001);
    assert_int_equal(a.got, 100 * MiB);
    rl_stats st;
    rl_get_stats(rl, &st);
    assert_int_equal(st.waits[RL_LOW], 1);
    assert_int_equal(st.queued[RL_LOW], 0);
    assert_int_equal(st.granted[RL_LOW], 5100 * MiB);
    rl_free(rl);
    rl_free(NULL);
}

/* The granted bandwidth follows the rate, and a rate change takes effect at
 * the next refill; no piece exceeds one burst. */
static void test_rl_rate_and_change(void **state)
{
    (void)state;
    uint64_t now = 1000000;
    sched_clock c;
    sched_clock_init_fake(&c, now);
    ratelimit *rl = rl_new(&c, 10 * MiB, 0);
    assert_int_equal(rl_burst(rl), (10 * MiB * REFILL + 999999) / 1000000);
    sim_req a = {.t = RL_REQ_INIT, .prio = RL_HIGH, .infinite = 1};
    sim_req *rs[] = {&a};
    run(rl, rs, 1, &now, 1000000);
    print_message("1 s at 10 MiB/s: %llu bytes\n", (unsigned long long)a.got);
    assert_true(tu_absdiff(a.got, 10 * MiB) <= rl_burst(rl) + 1);
    assert_true(a.max_piece <= rl_burst(rl));

    sched_clock_set_us(&c, now);
    rl_set_rate(rl, 40 * MiB);
    assert_int_equal(rl_get_rate(rl), 40 * MiB);
    uint64_t before = a.got;
    run(rl, rs, 1, &now, 1000000);
    print_message("1 s at 40 MiB/s: %llu bytes\n", (unsigned long long)(a.got - before));
    assert_true(tu_absdiff(a.got - before, 40 * MiB) <= 2 * rl_burst(rl));
    assert_true(a.max_piece <= rl_burst(rl));

    sched_clock_set_us(&c, now);
    uint64_t old_burst = rl_burst(rl);
    rl_set_rate(rl, 2 * MiB); /* the refill due at `now` is still at 40 MiB/s */
    before = a.got;
    run(rl, rs, 1, &now, 1000000);
    print_message("1 s at 2 MiB/s: %llu bytes\n", (unsigned long long)(a.got - before));
    assert_true(tu_absdiff(a.got - before, 2 * MiB + old_burst) <= 2 * rl_burst(rl) + 1);
    rl_withdraw(rl, &a.t);
    rl_free(rl);
}

/* When both wait, HIGH is served before LOW (no reserve): LOW gets nothing
 * until HIGH's demand is met, then everything. */
static void test_rl_high_before_low(void **state)
{
    (void)state;
    uint64_t now = 1000000;
    sched_clock c;
    sched_clock_init_fake(&c, now);
    ratelimit *rl = rl_new(&c, 10 * MiB, 0);
    uint64_t b = rl_burst(rl);
    drain(rl, now);
    sim_req lo = {.t = RL_REQ_INIT, .prio = RL_LOW, .left = 3 * b};
    sim_req hi = {.t = RL_REQ_INIT, .prio = RL_HIGH, .left = 3 * b};
    sim_poll(rl, &lo, now); /* LOW queued first */
    sim_poll(rl, &hi, now);
    assert_int_equal(lo.got + hi.got, 0);
    sim_req *rs[] = {&lo, &hi};
    int refills = 0;
    while (hi.left > 0) {
        now += REFILL;
        poll_all(rl, rs, 2, now);
        refills++;
        if (hi.left > 0) assert_int_equal(lo.got, 0);
    }
    assert_true(refills <= 4);
    assert_true(lo.got < b); /* at most the leftover of HIGH's last refill */
    now += 3 * REFILL;
    poll_all(rl, rs, 2, now);
    assert_true(lo.got >= 2 * b);

    /* a late poller keeps its priority: HIGH polls only every 3 refills, yet
     * LOW (queued the whole time) gets nothing while HIGH still wants bytes */
    hi.left = 6 * b;
    lo.left = 100 * b;
    sim_poll(rl, &hi, now); /* may take what is in the bucket, then queues */
    sim_poll(rl, &lo, now);
    lo.got = 0;
    for (int i = 0; i < 3; i++) {
        now += 3 * REFILL;
        sim_poll(rl, &hi, now);
        sim_poll(rl, &lo, now);
        if (hi.left > 0) assert_int_equal(lo.got, 0);
    }
    assert_int_equal(hi.left, 0);

    rl_stats st;
    rl_get_stats(rl, &st);
    assert_true(st.waits[RL_LOW] >= 1 && st.waits[RL_HIGH] >= 1);
    assert_true(st.wait_us[RL_LOW] > st.wait_us[RL_HIGH]);
    rl_withdraw(rl, &lo.t);
    rl_free(rl);
}

/* Under an endless HIGH peak LOW still gets its reserved share, HIGH the
 * rest; with no reserve LOW starves; the reserve is capped at rate/2. */
static void test_rl_low_reserved(void **state)
{
    (void)state;
    for (int variant = 0; variant < 3; variant++) {
        uint64_t now = 1000000;
        sched_clock c;
        sched_clock_init_fake(&c, now);
        uint64_t rate = variant == 2 ? 4 * MiB : 100 * MiB;
        uint64_t res = variant == 1 ? 0 : 4 * MiB;
        ratelimit *rl = rl_new(&c, rate, res);
        drain(rl, now);
        sim_req h1 = {.t = RL_REQ_INIT, .prio = RL_HIGH, .infinite = 1};
        sim_req h2 = {.t = RL_REQ_INIT, .prio = RL_HIGH, .infinite = 1};
        sim_req lo = {.t = RL_REQ_INIT, .prio = RL_LOW, .infinite = 1};
        sim_req *rs[] = {&h1, &lo, &h2};
        run(rl, rs, 3, &now, 2000000); /* 2 s */
        uint64_t high = h1.got + h2.got;
        print_message("rate %llu MiB/s reserve %llu MiB/s: high %llu low %llu\n", (unsigned long long)(rate / MiB),
                      (unsigned long long)(res / MiB), (unsigned long long)high, (unsigned long long)lo.got);
        uint64_t want_low = variant == 0 ? 8 * MiB : variant == 1 ? 0 : 4 * MiB; /* 2 s of min(res, rate/2) */
        assert_true(tu_absdiff(lo.got, want_low) <= want_low / 50 + rl_burst(rl));
        assert_true(tu_absdiff(high + lo.got, 2 * rate) <= 2 * rl_burst(rl));
        rl_stats st;
        rl_get_stats(rl, &st);
        assert_int_equal(st.low_reserved, variant == 0 ? 4 * MiB : variant == 1 ? 0 : 2 * MiB);
        for (int i = 0; i < 3; i++) rl_withdraw(rl, &rs[i]->t);
        rl_free(rl);
    }
}

/* Three priorities without reserves: with all three waiting, MID gets
 * nothing while HIGH still wants bytes, LOW nothing while HIGH or MID does;
 * queued in the reverse order (LOW, MID, HIGH), and also when HIGH and MID
 * poll late. Then each finishes in priority order. */
static void test_rl_three_priorities(void **state)
{
    (void)state;
    for (int late = 0; late < 2; late++) {
        uint64_t now = 1000000;
        sched_clock c;
        sched_clock_init_fake(&c, now);
        ratelimit *rl = rl_new3(&c, 10 * MiB, 0, 0);
        uint64_t b = rl_burst(rl);
        drain(rl, now);
        sim_req lo = {.t = RL_REQ_INIT, .prio = RL_LOW, .left = 4 * b};
        sim_req mid = {.t = RL_REQ_INIT, .prio = RL_MID, .left = 4 * b};
        sim_req hi = {.t = RL_REQ_INIT, .prio = RL_HIGH, .left = 4 * b};
        sim_poll(rl, &lo, now);
        sim_poll(rl, &mid, now);
        sim_poll(rl, &hi, now);
        assert_int_equal(lo.got + mid.got + hi.got, 0);
        uint64_t step = late ? 3 * REFILL : REFILL; /* late: HIGH and MID poll every 3rd refill only */
        int hi_done = -1, mid_done = -1, lo_done = -1;
        for (int i = 0; i < 200 && (lo.left || mid.left || hi.left); i++) {
            now += step;
            sim_poll(rl, &hi, now);
            sim_poll(rl, &mid, now);
            sim_poll(rl, &lo, now);
            if (hi.left > 0) assert_int_equal(mid.got + lo.got, 0);
            if (mid.left > 0) assert_int_equal(lo.got, 0);
            if (!hi.left && hi_done < 0) hi_done = i;
            if (!mid.left && mid_done < 0) mid_done = i;
            if (!lo.left && lo_done < 0) lo_done = i;
        }
        print_message("late=%d: HIGH done at step %d, MID at %d, LOW at %d\n", late, hi_done, mid_done, lo_done);
        assert_true(hi_done >= 0 && hi_done <= mid_done && mid_done <= lo_done);
        assert_true(hi_done < lo_done);
        rl_stats st;
        rl_get_stats(rl, &st);
        for (int p = 0; p < RL_NPRIO; p++) assert_int_equal(st.granted[p], (p == RL_HIGH ? b : 0) + 4 * b);
        assert_true(st.wait_us[RL_LOW] > st.wait_us[RL_MID] && st.wait_us[RL_MID] > st.wait_us[RL_HIGH]);
        assert_int_equal(st.mid_reserved, 0);
        rl_free(rl);
    }
    /* a bad priority is refused */
    sched_clock c;
    sched_clock_init_fake(&c, 1);
    ratelimit *rl = rl_new3(&c, 10 * MiB, 0, 0);
    rl_req t = RL_REQ_INIT;
    assert_int_equal(rl_try_acquire(rl, &t, (rl_prio)RL_NPRIO, 1, 1, NULL), TKV_INVALID);
    assert_int_equal(rl_request(rl, (rl_prio)RL_NPRIO, 1, NULL), TKV_INVALID);
    rl_free(rl);
}

/* The reserves under endless demand, 2 s each, for (rate, low reserve, mid
 * reserve, who wants tokens):
 *   - an endless HIGH peak with MID and LOW waiting: LOW gets its reserve,
 *     MID its reserve, HIGH the rest -- nobody starves;
 *   - no MID reserve: MID starves under the HIGH peak (the negative control);
 *   - the caps: the reserves together take at most rate/2 (LOW's cap first);
 *   - no HIGH demand: MID takes everything LOW's reserve leaves (a reserve
 *     is a floor, not a ceiling), and LOW still gets its reserve under an
 *     endless MID peak. */
static void test_rl_mid_reserved(void **state)
{
    (void)state;
    static const struct {
        uint64_t rate, lres, mres;
        int high;                    /* HIGH wants tokens too */
        uint64_t want_low, want_mid; /* per second; HIGH gets the rest */
        uint64_t eff_low, eff_mid;
    } cs[] = {
        {100 * MiB, 4 * MiB, 8 * MiB, 1, 4 * MiB, 8 * MiB, 4 * MiB, 8 * MiB},
        {100 * MiB, 4 * MiB, 0, 1, 4 * MiB, 0, 4 * MiB, 0},
        {12 * MiB, 4 * MiB, 4 * MiB, 1, 4 * MiB, 2 * MiB, 4 * MiB, 2 * MiB},
        {8 * MiB, 8 * MiB, 4 * MiB, 1, 4 * MiB, 0, 4 * MiB, 0},
        {100 * MiB, 4 * MiB, 8 * MiB, 0, 4 * MiB, 96 * MiB, 4 * MiB, 8 * MiB},
    };
    for (size_t k = 0; k < sizeof cs / sizeof cs[0]; k++) {
        uint64_t now = 1000000;
        sched_clock c;
        sched_clock_init_fake(&c, now);
        ratelimit *rl = rl_new3(&c, cs[k].rate, cs[k].lres, cs[k].mres);
        drain(rl, now);
        sim_req hi = {.t = RL_REQ_INIT, .prio = RL_HIGH, .infinite = 1};
        sim_req mid = {.t = RL_REQ_INIT, .prio = RL_MID, .infinite = 1};
        sim_req lo = {.t = RL_REQ_INIT, .prio = RL_LOW, .infinite = 1};
        sim_req *rs[] = {&lo, &mid, &hi};
        run(rl, rs, cs[k].high ? 3 : 2, &now, 2000000);
        print_message("rate %llu, reserves low %llu mid %llu, high %s: high %llu mid %llu low %llu\n",
                      (unsigned long long)(cs[k].rate / MiB), (unsigned long long)(cs[k].lres / MiB),
                      (unsigned long long)(cs[k].mres / MiB), cs[k].high ? "on" : "off", (unsigned long long)hi.got,
                      (unsigned long long)mid.got, (unsigned long long)lo.got);
        uint64_t b = rl_burst(rl);
        assert_true(tu_absdiff(lo.got, 2 * cs[k].want_low) <= 2 * cs[k].want_low / 50 + b);
        assert_true(tu_absdiff(mid.got, 2 * cs[k].want_mid) <= 2 * cs[k].want_mid / 50 + b);
        assert_true(tu_absdiff(hi.got + mid.got + lo.got, 2 * cs[k].rate) <= 2 * b);
        if (cs[k].high) assert_true(hi.got + 2 * b >= cs[k].rate); /* HIGH keeps at least half (2 s x rate/2) */
        rl_stats st;
        rl_get_stats(rl, &st);
        assert_int_equal(st.low_reserved, cs[k].eff_low);
        assert_int_equal(st.mid_reserved, cs[k].eff_mid);
        for (int i = 0; i < 3; i++) rl_withdraw(rl, &rs[i]->t);
        rl_free(rl);
    }
    /* run time: a MID reserve set later applies from the next refill */
    uint64_t now = 1000000;
    sched_clock c;
    sched_clock_init_fake(&c, now);
    ratelimit *rl = rl_new3(&c, 100 * MiB, 0, 0);
    drain(rl, now);
    sim_req hi = {.t = RL_REQ_INIT, .prio = RL_HIGH, .infinite = 1};
    sim_req mid = {.t = RL_REQ_INIT, .prio = RL_MID, .infinite = 1};
    sim_req *rs[] = {&mid, &hi};
    run(rl, rs, 2, &now, 1000000);
    assert_int_equal(mid.got, 0);
    rl_set_mid_reserved(rl, 10 * MiB);
    run(rl, rs, 2, &now, 1000000);
    assert_true(tu_absdiff(mid.got, 10 * MiB) <= 10 * MiB / 50 + rl_burst(rl));
    for (int i = 0; i < 2; i++) rl_withdraw(rl, &rs[i]->t);
    rl_free(rl);
}

/* A request larger than one refill is granted in pieces of at most a burst
 * and does not hold the queue: a small request queued behind it is served at
 * most one refill after the large one's first piece. */
static void test_rl_split_large(void **state)
{
    (void)state;
    for (int prio = 0; prio < 2; prio++) {
        uint64_t now = 1000000;
        sched_clock c;
        sched_clock_init_fake(&c, now);
        ratelimit *rl = rl_new(&c, 10 * MiB, 0);
        uint64_t b = rl_burst(rl);
        drain(rl, now);
        sim_req big = {.t = RL_REQ_INIT, .prio = (rl_prio)prio, .left = 10 * MiB};
        sim_req small = {.t = RL_REQ_INIT, .prio = (rl_prio)prio, .left = 4 * KiB};
        sim_poll(rl, &big, now);
        sim_poll(rl, &small, now + 1);
        sim_req *rs[] = {&big, &small};
        now += REFILL;
        poll_all(rl, rs, 2, now); /* refill 1: the big one's first piece */
        assert_true(big.got >= b - 1 && big.got <= b);
        assert_int_equal(small.got, 0);
        now += REFILL;
        poll_all(rl, rs, 2, now); /* refill 2: the small one, one refill later */
        assert_int_equal(small.left, 0);
        while (big.left > 0) run(rl, rs, 2, &now, REFILL);
        assert_true(big.max_piece <= b);
        rl_stats st;
        rl_get_stats(rl, &st);
        assert_true(st.grants[prio] >= 10 * MiB / b);
        rl_free(rl);
    }
}

/* rl_cancel wakes the cancelled waiter at once (not the others), and
 * rl_shutdown wakes everyone; both return TKV_BUSY. Real threads, real
 * clock, a rate so low the requests could never finish. */
static void test_rl_cancel_shutdown(void **state)
{
    (void)state;
    ratelimit *rl = rl_new(NULL, RL_MIN_RATE, 0);
    atomic_int f1 = 0, f2 = 0;
    waiter_arg a1 = {.rl = rl, .prio = RL_LOW, .n = 100 * MiB, .flag = &f1};
    waiter_arg a2 = {.rl = rl, .prio = RL_HIGH, .n = 100 * MiB, .flag = &f2};
    pthread_t t1, t2;
    assert_int_equal(pthread_create(&t1, NULL, waiter_main, &a1), 0);
    assert_int_equal(pthread_create(&t2, NULL, waiter_main, &a2), 0);
    sched_sleep_us(20000);
    assert_false(atomic_load(&a1.done));
    uint64_t t0 = sched_mono_us();
    rl_cancel(rl, &f1);
    assert_true(wait_done(&a1));
    print_message("cancel woke the waiter in %llu us\n", (unsigned long long)(sched_mono_us() - t0));
    assert_true(sched_mono_us() - t0 < 500000);
    assert_int_equal(a1.rc, TKV_BUSY);
    sched_sleep_us(10000);
    assert_false(atomic_load(&a2.done));
    rl_shutdown(rl);
    assert_true(wait_done(&a2));
    assert_int_equal(a2.rc, TKV_BUSY);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    assert_int_equal(rl_request(rl, RL_HIGH, 1, NULL), TKV_BUSY);
    rl_req t = RL_REQ_INIT;
    assert_int_equal(rl_try_acquire(rl, &t, RL_LOW, 1, sched_mono_us(), NULL), TKV_BUSY);
    rl_stats st;
    rl_get_stats(rl, &st);
    assert_int_equal(st.cancelled, 3);
    assert_int_equal(st.queued[RL_HIGH] + st.queued[RL_LOW], 0);
    rl_free(rl);
}

/* The blocking rl_request: on a fake clock it completes exactly when the
 * test has advanced the clock far enough; on the real clock it takes about
 * n / rate. */
static void test_rl_request_blocking(void **state)
{
    (void)state;
    sched_clock c;
    sched_clock_init_fake(&c, 1000000);
    ratelimit *rl = rl_new(&c, 1000000, 0);
    uint64_t b = rl_burst(rl);
    assert_int_equal(b, 5000);
    drain(rl, 1000000);
    waiter_arg a = {.rl = rl, .prio = RL_LOW, .n = 4 * b};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, waiter_main, &a), 0);
    rl_stats st;
    do { /* from the moment it is queued its ticket stays queued (pieces
          * accumulate in it), so each refill below gives it exactly 5000 */
        sched_sleep_us(500);
        rl_get_stats(rl, &st);
    } while (st.queued[RL_LOW] == 0);
    for (int i = 0; i < 3; i++) {
        sched_sleep_us(3000);
        assert_false(atomic_load(&a.done));
        sched_clock_advance_us(&c, REFILL);
    }
    sched_sleep_us(3000);
    assert_false(atomic_load(&a.done)); /* 3 refills: 3 bursts of 4 */
    sched_clock_advance_us(&c, REFILL);
    assert_true(wait_done(&a));
    assert_int_equal(a.rc, TKV_OK);
    pthread_join(th, NULL);
    rl_free(rl);

    rl = rl_new(NULL, 20 * MiB, 0);
    uint64_t t0 = sched_mono_us();
    assert_int_equal(rl_request(rl, RL_HIGH, 2 * MiB, NULL), TKV_OK);
    uint64_t el = sched_mono_us() - t0;
    print_message("2 MiB at 20 MiB/s took %llu us\n", (unsigned long long)el);
    assert_true(el >= 90000 && el < 1000000); /* 100 ms less the initial burst */
    rl_free(rl);

    rl_options o;
    rl_options_default(&o);
    o.refill_us = 20000;
    assert_int_equal(rl_create(&o, NULL, &rl), TKV_INVALID);
}

int main(void)
{
    tu_seed();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rl_unlimited),        cmocka_unit_test(test_rl_rate_and_change),
        cmocka_unit_test(test_rl_high_before_low),  cmocka_unit_test(test_rl_low_reserved),
        cmocka_unit_test(test_rl_three_priorities), cmocka_unit_test(test_rl_mid_reserved),
        cmocka_unit_test(test_rl_split_large),      cmocka_unit_test(test_rl_cancel_shutdown),
        cmocka_unit_test(test_rl_request_blocking),
    };
    return cmocka_run_group_tests_name("sched_ratelimit", tests, NULL, NULL);
}
