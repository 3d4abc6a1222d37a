// SPDX-License-Identifier: Apache-2.0
/*
 * ratelimit.c -- the three-priority token bucket (policy in ratelimit.h).
 *
 * State, all under rl->mu:
 *   avail        tokens in the bucket (bytes), <= burst
 *   next_refill  clock time of the next refill; refills happen lazily, when a
 *                call observes now >= next_refill (one loop iteration per
 *                elapsed period while requests are queued, a jump otherwise)
 *   q[prio]      FIFO queues of tickets (singly linked, head/tail)
 *   carry, lcarry, mcarry  sub-byte remainders (units: byte*us) so that
 *                refills of rate*refill_us/1e6 bytes (and the reserves')
 *                add up exactly over time
 * Invariants:
 *   (I1) avail > 0  =>  every queue q[0..RL_NPRIO) is empty.
 *   (I2) rate == 0  =>  every queue is empty and avail == 0.
 *   (I3) a ticket is QUEUED iff it is linked in q[ticket->prio]; it is DONE
 *        once granted all it asked for, and IDLE otherwise. A queued ticket
 *        may already hold a partial grant (granted > 0): its owner takes it
 *        at its next poll.
 */
#include "sched/ratelimit.h"

#include <pthread.h>
#include <stdlib.h>

#include "tierkv.h"

enum { RL_REQ_IDLE = 0, RL_REQ_QUEUED = 1, RL_REQ_DONE = 2 };

typedef struct rl_queue {
    rl_req *head, *tail;
    uint64_t len;
} rl_queue;

struct ratelimit {
    pthread_mutex_t mu;
    pthread_cond_t cv; /* broadcast when a ticket is served, the rate changes,
                        * or on cancel/shutdown */
    sched_clock *clk;
    uint64_t rate, refill_us, low_reserved, mid_reserved;
    uint64_t burst; /* ceil(rate * refill_us / 1e6) */
    uint64_t avail;
    uint64_t next_refill;
    uint64_t carry, lcarry, mcarry;
    int shutdown;
    rl_queue q[RL_NPRIO];
    rl_stats st; /* counters (the rate fields are filled on read) */
};

/* rl_options_default -- unlimited, 5 ms refills, 4 MiB/s low reserve, no
 * mid reserve. */
void rl_options_default(rl_options *o)
{
    o->rate = 0;
    o->refill_us = 5000;
    o->low_reserved = 4u << 20;
    o->mid_reserved = 0;
}

/* eff_rate -- the stored rate: RL_MIN_RATE..RL_MAX_RATE, or 0. */
static uint64_t eff_rate(uint64_t r)
{
    if (r == 0) return 0;
    return r < RL_MIN_RATE ? RL_MIN_RATE : r > RL_MAX_RATE ? RL_MAX_RATE : r;
}

/* eff_low_reserved -- the reserve capped at rate/2, so HIGH (flushes) always
 * keeps at least half of the budget. */
static uint64_t eff_low_reserved(const ratelimit *rl)
{
    uint64_t cap = rl->rate / 2;
    return rl->low_reserved < cap ? rl->low_reserved : cap;
}

/* eff_mid_reserved -- the MID reserve capped at rate/2 less the LOW cap
 * (not less the LOW reserve in effect: the cap must not depend on whether
 * deep work waits), so the two reserves never take more than half. */
static uint64_t eff_mid_reserved(const ratelimit *rl)
{
    uint64_t lcap = rl->low_reserved < rl->rate / 2 ? rl->low_reserved : rl->rate / 2;
    uint64_t cap = rl->rate / 2 - lcap;
    return rl->mid_reserved < cap ? rl->mid_reserved : cap;
}

/* reserve_tokens -- this refill's share of a reserve of `bps` bytes/s,
 * with its sub-byte remainder carried in *carry. */
static uint64_t reserve_tokens(const ratelimit *rl, uint64_t bps, uint64_t *carry)
{
    uint64_t x = bps * rl->refill_us + *carry;
    *carry = x % 1000000u;
    return x / 1000000u;
}

/* any_queued -- 1 if some queue holds a ticket. */
static int any_queued(const ratelimit *rl)
{
    for (int p = 0; p < RL_NPRIO; p++)
        if (rl->q[p].head) return 1;
    return 0;
}

/* set_burst -- burst from the current rate; clips the bucket. */
static void set_burst(ratelimit *rl)
{
    rl->burst = rl->rate ? (rl->rate * rl->refill_us + 999999u) / 1000000u : 0;
    if (rl->avail > rl->burst) rl->avail = rl->burst;
}

/* q_push / q_pop / q_remove -- FIFO queue operations; keep (I3). */
static void q_push(rl_queue *q, rl_req *r)
{
    r->next = NULL;
    if (q->tail) q->tail->next = r;
    else q->head = r;
    q->tail = r;
    q->len++;
}

static rl_req *q_pop(rl_queue *q)
{
    rl_req *r = q->head;
    if (!r) return NULL;
    q->head = r->next;
    if (!q->head) q->tail = NULL;
    r->next = NULL;
    q->len--;
    return r;
}

static void q_remove(rl_queue *q, rl_req *r)
{
    rl_req *prev = NULL;
    for (rl_req *p = q->head; p; prev = p, p = p->next) {
        if (p != r) continue;
        if (prev) prev->next = p->next;
        else q->head = p->next;
        if (q->tail == p) q->tail = prev;
        p->next = NULL;
        q->len--;
        return;
    }
}

/* grant_locked -- adds `g` bytes to a ticket at time t (stats included). */
static void grant_locked(ratelimit *rl, rl_req *r, uint64_t g, uint64_t t)
{
    if (r->granted == 0) rl->st.wait_us[r->prio] += t > r->enq_us ? t - r->enq_us : 0;
    r->granted += g;
    r->want -= g;
    rl->st.granted[r->prio] += g;
    rl->st.grants[r->prio]++;
}

/* serve_locked -- hands up to `tokens` to q[prio] in FIFO order. Each head
 * takes min(what it still wants, tokens left); a satisfied head leaves the
 * queue (DONE); an unsatisfied one has taken every token left, and moves to
 * the tail so that it cannot hold the queue at the next refill. Returns the
 * tokens left. */
static uint64_t serve_locked(ratelimit *rl, rl_prio prio, uint64_t tokens, uint64_t t, int *served)
{
    while (tokens > 0 && rl->q[prio].head) {
        rl_req *r = q_pop(&rl->q[prio]);
        uint64_t g = r->want < tokens ? r->want : tokens;
        grant_locked(rl, r, g, t);
        tokens -= g;
        *served = 1;
        if (r->want == 0) r->state = RL_REQ_DONE;
        else q_push(&rl->q[prio], r); /* tokens == 0 here: rotate and stop */
    }
    return tokens;
}

/* serve_reserve -- step (2a) for one class: up to its reserve's tokens of
 * this refill (never more than the pool) to its queue; returns the pool
 * less what the class took (what it leaves stays in the pool). */
static uint64_t serve_reserve(ratelimit *rl, rl_prio prio, uint64_t reserve, uint64_t pool, uint64_t t, int *served)
{
    if (reserve > pool) reserve = pool;
    uint64_t left = serve_locked(rl, prio, reserve, t, served);
    return pool - (reserve - left);
}

/* refill_locked -- performs every refill due by `now` (policy step (2) of
 * ratelimit.h), then broadcasts if any queued ticket was served. */
static void refill_locked(ratelimit *rl, uint64_t now)
{
    int served = 0;
    if (rl->rate == 0) return; /* (I2): nothing queued, nothing to refill */
    while (now >= rl->next_refill) {
        uint64_t t = rl->next_refill;
        if (!any_queued(rl)) {
            /* Idle: the bucket just fills up to burst; skip to the refill
             * after `now` in one step. */
            uint64_t k = (now - t) / rl->refill_us + 1;
            rl->next_refill = t + k * rl->refill_us;
            rl->avail = rl->burst;
            rl->carry = rl->lcarry = rl->mcarry = 0;
            break;
        }
        uint64_t tokens = reserve_tokens(rl, rl->rate, &rl->carry);
        uint64_t lres = reserve_tokens(rl, eff_low_reserved(rl), &rl->lcarry);
        uint64_t mres = reserve_tokens(rl, eff_mid_reserved(rl), &rl->mcarry);
        /* (I1): queues were non-empty, so avail was 0 before this refill. */
        uint64_t pool = rl->avail + tokens;
        pool = serve_reserve(rl, RL_LOW, lres, pool, t, &served); /* (2a) */
        pool = serve_reserve(rl, RL_MID, mres, pool, t, &served);
        pool = serve_locked(rl, RL_HIGH, pool, t, &served); /* (2b) */
        pool = serve_locked(rl, RL_MID, pool, t, &served);  /* (2c) */
        pool = serve_locked(rl, RL_LOW, pool, t, &served);  /* (2d) */
        rl->avail = pool < rl->burst ? pool : rl->burst;    /* (2e) */
        rl->next_refill = t + rl->refill_us;
    }
    if (served) pthread_cond_broadcast(&rl->cv);
}

/* rl_create -- see ratelimit.h. */
int rl_create(const rl_options *o, sched_clock *clk, ratelimit **out)
{
    if (!o || !out || o->refill_us < RL_MIN_REFILL_US || o->refill_us > RL_MAX_REFILL_US) return TKV_INVALID;
    ratelimit *rl = calloc(1, sizeof *rl);
    if (!rl) return TKV_NO_MEMORY;
    if (pthread_mutex_init(&rl->mu, NULL) != 0) {
        free(rl);
        return TKV_NO_MEMORY;
    }
    if (sched_cond_init(&rl->cv) != 0) {
        pthread_mutex_destroy(&rl->mu);
        free(rl);
        return TKV_NO_MEMORY;
    }
    rl->clk = clk ? clk : sched_clock_real();
    rl->refill_us = o->refill_us;
    rl->low_reserved = o->low_reserved;
    rl->mid_reserved = o->mid_reserved;
    rl->rate = eff_rate(o->rate);
    set_burst(rl);
    rl->avail = rl->burst; /* starts full */
    rl->next_refill = sched_clock_now_us(rl->clk) + rl->refill_us;
    *out = rl;
    return TKV_OK;
}

/* rl_free -- see ratelimit.h. */
void rl_free(ratelimit *rl)
{
    if (!rl) return;
    pthread_cond_destroy(&rl->cv);
    pthread_mutex_destroy(&rl->mu);
    free(rl);
}

/* rl_set_rate -- refills due are processed at the old rate first; leaving
 * "unlimited" restarts the refill schedule from now with a full bucket;
 * entering it grants every queued ticket in full (I2). */
void rl_set_rate(ratelimit *rl, uint64_t bytes_per_s)
{
    pthread_mutex_lock(&rl->mu);
    uint64_t now = sched_clock_now_us(rl->clk);
    uint64_t old = rl->rate;
    refill_locked(rl, now);
    rl->rate = eff_rate(bytes_per_s);
    set_burst(rl);
    if (rl->rate == 0) {
        for (int p = 0; p < RL_NPRIO; p++) {
            rl_req *r;
            while ((r = q_pop(&rl->q[p])) != NULL) {
                grant_locked(rl, r, r->want, now);
                r->state = RL_REQ_DONE;
            }
        }
        rl->avail = 0;
    } else if (old == 0) {
        rl->avail = rl->burst;
        rl->next_refill = now + rl->refill_us;
        rl->carry = rl->lcarry = rl->mcarry = 0;
    }
    pthread_cond_broadcast(&rl->cv);
    pthread_mutex_unlock(&rl->mu);
}

/* rl_get_rate -- current rate. */
uint64_t rl_get_rate(ratelimit *rl)
{
    pthread_mutex_lock(&rl->mu);
    uint64_t r = rl->rate;
    pthread_mutex_unlock(&rl->mu);
    return r;
}

/* rl_burst -- current burst. */
uint64_t rl_burst(ratelimit *rl)
{
    pthread_mutex_lock(&rl->mu);
    uint64_t b = rl->burst;
    pthread_mutex_unlock(&rl->mu);
    return b;
}

/* rl_set_low_reserved -- takes effect at the next refill. */
void rl_set_low_reserved(ratelimit *rl, uint64_t bytes_per_s)
{
    pthread_mutex_lock(&rl->mu);
    rl->low_reserved = bytes_per_s;
    pthread_mutex_unlock(&rl->mu);
}

/* rl_set_mid_reserved -- takes effect at the next refill. */
void rl_set_mid_reserved(ratelimit *rl, uint64_t bytes_per_s)
{
    pthread_mutex_lock(&rl->mu);
    rl->mid_reserved = bytes_per_s;
    pthread_mutex_unlock(&rl->mu);
}

/* withdraw_locked -- rl_withdraw with the mutex held. Bytes a queued ticket
 * was granted so far stay counted as used. */
static void withdraw_locked(ratelimit *rl, rl_req *req)
{
    if (req->state == RL_REQ_QUEUED) q_remove(&rl->q[req->prio], req);
    req->state = RL_REQ_IDLE;
}

/* take_locked -- a polled ticket that has been granted something leaves the
 * limiter with it (the caller asks again for the rest). Returns the bytes. */
static int64_t take_locked(ratelimit *rl, rl_req *req)
{
    withdraw_locked(rl, req);
    return (int64_t)req->granted;
}

/* try_acquire_locked -- rl_try_acquire with the mutex held. */
static int64_t try_acquire_locked(ratelimit *rl, rl_req *req, rl_prio prio, uint64_t n, uint64_t now,
                                  uint64_t *wait_until)
{
    if (rl->shutdown) {
        withdraw_locked(rl, req);
        return TKV_BUSY;
    }
    refill_locked(rl, now);
    if (req->state != RL_REQ_IDLE) { /* a poll */
        if (req->granted > 0) return take_locked(rl, req);
        if (wait_until) *wait_until = rl->next_refill;
        return 0;
    }
    /* A new request. */
    if (n == 0 || (unsigned)prio >= RL_NPRIO) return TKV_INVALID;
    if (n > INT64_MAX) n = INT64_MAX;
    req->prio = prio;
    req->enq_us = now;
    req->want = n;
    req->granted = 0;
    req->next = NULL;
    if (rl->rate == 0 || rl->avail > 0) { /* unlimited, or (I1): nobody is queued */
        uint64_t g = rl->rate == 0 ? n : n < rl->avail ? n : rl->avail;
        if (rl->rate) rl->avail -= g;
        grant_locked(rl, req, g, now);
        return (int64_t)g;
    }
    req->state = RL_REQ_QUEUED;
    q_push(&rl->q[prio], req);
    rl->st.waits[prio]++;
    if (wait_until) *wait_until = rl->next_refill;
    return 0;
}

/* rl_try_acquire -- see ratelimit.h. */
int64_t rl_try_acquire(ratelimit *rl, rl_req *req, rl_prio prio, uint64_t n, uint64_t now_us, uint64_t *wait_until_us)
{
    pthread_mutex_lock(&rl->mu);
    int64_t g = try_acquire_locked(rl, req, prio, n, now_us, wait_until_us);
    pthread_mutex_unlock(&rl->mu);
    return g;
}

/* rl_withdraw -- see ratelimit.h. */
void rl_withdraw(ratelimit *rl, rl_req *req)
{
    pthread_mutex_lock(&rl->mu);
    withdraw_locked(rl, req);
    pthread_mutex_unlock(&rl->mu);
}

/* rl_request -- the blocking wrapper: poll the core, and between polls wait
 * on rl->cv until the next refill (or a wake-up from a refill that served
 * us, a rate change, rl_cancel or rl_shutdown). The cancel flag is read
 * under rl->mu and rl_cancel broadcasts under rl->mu, so a cancel cannot slip
 * between the check and the wait. */
int rl_request(ratelimit *rl, rl_prio prio, uint64_t n, const atomic_int *cancel)
{
    if (n == 0) return TKV_OK;
    if ((unsigned)prio >= RL_NPRIO) return TKV_INVALID;
    rl_req req = RL_REQ_INIT;
    int rc = TKV_OK;
    pthread_mutex_lock(&rl->mu);
    while (n > 0) {
        if (cancel && atomic_load_explicit(cancel, memory_order_acquire)) {
            rc = TKV_BUSY;
            break;
        }
        uint64_t now = sched_clock_now_us(rl->clk);
        uint64_t until = 0;
        int64_t g = try_acquire_locked(rl, &req, prio, n, now, &until);
        if (g < 0) {
            rc = (int)g;
            break;
        }
        if (g > 0) {
            n -= (uint64_t)g;
            continue;
        }
        sched_cond_wait_us(&rl->cv, &rl->mu, sched_wait_budget_us(rl->clk, until > now ? until - now : 1));
    }
    if (rc != TKV_OK) {
        withdraw_locked(rl, &req);
        rl->st.cancelled++;
    }
    pthread_mutex_unlock(&rl->mu);
    return rc;
}

/* rl_cancel -- see ratelimit.h. */
void rl_cancel(ratelimit *rl, atomic_int *flag)
{
    pthread_mutex_lock(&rl->mu);
    if (flag) atomic_store_explicit(flag, 1, memory_order_release);
    pthread_cond_broadcast(&rl->cv);
    pthread_mutex_unlock(&rl->mu);
}

/* rl_shutdown -- see ratelimit.h. Queued tickets are withdrawn by their
 * owners (their next poll returns TKV_BUSY). */
void rl_shutdown(ratelimit *rl)
{
    pthread_mutex_lock(&rl->mu);
    rl->shutdown = 1;
    pthread_cond_broadcast(&rl->cv);
    pthread_mutex_unlock(&rl->mu);
}

/* rl_get_stats -- snapshot under the mutex. */
void rl_get_stats(ratelimit *rl, rl_stats *st)
{
    pthread_mutex_lock(&rl->mu);
    *st = rl->st;
    st->rate = rl->rate;
    st->burst = rl->burst;
    st->low_reserved = eff_low_reserved(rl);
    st->mid_reserved = eff_mid_reserved(rl);
    st->refill_us = rl->refill_us;
    for (int p = 0; p < RL_NPRIO; p++) st->queued[p] = rl->q[p].len;
    pthread_mutex_unlock(&rl->mu);
}
