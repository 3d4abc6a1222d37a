// SPDX-License-Identifier: Apache-2.0
/*
 * ratelimit.h -- SILK's token bucket for internal I/O, with three priorities.
 *
 * The bucket meters the internal budget I (bytes/s, set at run time by the
 * monitor through rl_set_rate). Time is cut into refill periods of
 * `refill_us` (<= 10 ms, default 5 ms); each period adds rate * refill_us
 * bytes of tokens, and the bucket holds at most one period's worth
 * (burst = ceil(rate * refill_us / 1e6)).
 *
 * Priorities (SILK's order: flushes, then L0->L1, then deeper levels):
 *   RL_HIGH  flushes (IO_FLUSH)
 *   RL_MID   L0->L1 work: the column compaction, an L0->L1 compaction
 *            (IO_COMPACT_L0)
 *   RL_LOW   deep compactions (IO_COMPACT_DEEP)
 *
 * Queueing and service (the whole policy):
 *   (1) A request that finds tokens in the bucket takes min(n, tokens) at once.
 *       Otherwise it queues (FIFO per priority) and is served at a refill.
 *   (2) At each refill the period's tokens are handed out in this order:
 *         a. the reserves (anti-starvation): min(low_reserved, rate/2) *
 *            refill_us of the tokens go to queued LOW requests, then
 *            min(mid_reserved, rate/2 - that cap) * refill_us to queued MID
 *            requests -- so deep compactions and L0->L1 work keep these
 *            rates even under an endless flush peak, and the two reserves
 *            together never take more than half the rate (HIGH keeps the
 *            rest); whatever a class does not take stays in the pool;
 *         b. queued HIGH requests, FIFO;
 *         c. queued MID requests, FIFO (MID gets what HIGH leaves);
 *         d. queued LOW requests, FIFO (LOW gets what both leave);
 *         e. the rest stays in the bucket, capped at burst.
 *   (3) At one refill a queued request takes at most what it still wants and
 *       at most the tokens left, so never more than burst bytes. A request
 *       not satisfied by a refill has taken every token left and moves to
 *       the TAIL of its queue, keeping what it was granted: a large request
 *       is served in pieces of at most one burst per refill and never holds
 *       the queue -- a small request queued behind it is served at the next
 *       refill after the large one's piece. The owner collects the pieces at
 *       its next poll (rl_try_acquire returns them and the request leaves the
 *       limiter; it asks again for the rest, at the tail). A piece stays in
 *       the queue until collected, so a late poller keeps its priority.
 *   Invariant: tokens in the bucket > 0 implies every queue is empty (every
 *   refill drains the bucket into the queues first).
 *
 * Rate 0 means unlimited: every request is granted in full at once (and
 * setting the rate to 0 grants every queued request in full). A rate below
 * RL_MIN_RATE is raised to it, so every refill hands out at least one byte
 * (and one above RL_MAX_RATE lowered to it, so the arithmetic cannot overflow).
 * A rate change takes effect at the next refill (<= refill_us later); the
 * bucket is clipped to the new burst at once.
 *
 * Two layers:
 *   - the deterministic core, rl_try_acquire / rl_withdraw, takes `now_us`
 *     and never sleeps: a caller-owned ticket (rl_req) carries a queued
 *     request between calls;
 *   - the blocking wrapper, rl_request, loops over the core for n bytes and
 *     waits on a condition variable between refills (real clock; see
 *     sched/clock.h for fake clocks). rl_cancel and rl_shutdown wake it.
 *
 * Thread safety: a ratelimit is safe for concurrent use by any number of
 * threads (one mutex). An rl_req belongs to one caller at a time.
 */
#ifndef TKV_SCHED_RATELIMIT_H
#define TKV_SCHED_RATELIMIT_H

#include <stdatomic.h>
#include <stdint.h>

#include "sched/clock.h"

typedef enum rl_prio { RL_HIGH = 0, RL_MID = 1, RL_LOW = 2, RL_NPRIO = 3 } rl_prio;

#define RL_MIN_RATE      1024u        /* bytes/s: lower nonzero rates are raised */
#define RL_MAX_RATE      (1ull << 40) /* bytes/s: higher rates are lowered (1 TiB/s) */
#define RL_MIN_REFILL_US 1000u        /* refill period range, microseconds */
#define RL_MAX_REFILL_US 10000u

typedef struct rl_options {
    uint64_t rate;         /* bytes/s; 0 = unlimited. Default 0. Run time: rl_set_rate */
    uint64_t refill_us;    /* refill period, RL_MIN_REFILL_US..RL_MAX_REFILL_US. Default 5000 */
    uint64_t low_reserved; /* bytes/s kept for queued LOW requests, capped at rate/2.
                            * Default 4 MiB/s; 0 = strict priority. Run time: rl_set_low_reserved */
    uint64_t mid_reserved; /* bytes/s kept for queued MID requests, capped at rate/2 minus
                            * the LOW cap. Default 0 (strict). Run time: rl_set_mid_reserved */
} rl_options;

/* A request ticket, owned by the caller (typically on its stack). Initialise
 * with RL_REQ_INIT; the fields are the limiter's. */
typedef struct rl_req {
    int state; /* RL_REQ_IDLE / QUEUED / DONE (ratelimit.c) */
    rl_prio prio;
    uint64_t want;       /* bytes asked by the queued request */
    uint64_t granted;    /* bytes granted (state DONE) */
    uint64_t enq_us;     /* when it was queued */
    struct rl_req *next; /* queue link */
} rl_req;
#define RL_REQ_INIT                                                                                                    \
    {                                                                                                                  \
        0, RL_HIGH, 0, 0, 0, NULL                                                                                      \
    }

typedef struct rl_stats {
    uint64_t rate;         /* current bytes/s (0 = unlimited) */
    uint64_t burst;        /* bytes per refill */
    uint64_t low_reserved; /* effective reserve, bytes/s (after the rate/2 cap) */
    uint64_t mid_reserved; /* effective MID reserve, bytes/s (after its cap) */
    uint64_t refill_us;
    uint64_t granted[RL_NPRIO]; /* bytes granted */
    uint64_t grants[RL_NPRIO];  /* grants (pieces) handed out */
    uint64_t waits[RL_NPRIO];   /* requests that had to queue */
    uint64_t wait_us[RL_NPRIO]; /* total queueing time of granted requests
                                   * (enqueue -> the refill that served them) */
    uint64_t queued[RL_NPRIO];  /* requests queued right now */
    uint64_t cancelled;         /* rl_request calls ended by rl_cancel/rl_shutdown */
} rl_stats;

typedef struct ratelimit ratelimit;

/* rl_options_default -- fills the defaults above. */
void rl_options_default(rl_options *o);

/* rl_create -- a limiter on clock `clk` (NULL = the real clock; a fake clock
 * must outlive the limiter). The bucket starts full and the first refill is
 * one period after the clock's current time. Returns TKV_OK and *out,
 * TKV_INVALID (NULL argument, refill_us out of range) or TKV_NO_MEMORY. */
int rl_create(const rl_options *o, sched_clock *clk, ratelimit **out);

/* rl_free -- frees the limiter; NULL is a no-op. No thread may be inside or
 * queued in it (call rl_shutdown and let the waiters return first). */
void rl_free(ratelimit *rl);

/* rl_set_rate -- changes the rate (bytes/s, 0 = unlimited); see the header
 * comment for when it takes effect. Wakes blocked requests. */
void rl_set_rate(ratelimit *rl, uint64_t bytes_per_s);

/* rl_get_rate -- the current rate (0 = unlimited). */
uint64_t rl_get_rate(ratelimit *rl);

/* rl_burst -- bytes one refill hands out at the current rate (0 if
 * unlimited): the most a request gets per refill, and the bucket's size. */
uint64_t rl_burst(ratelimit *rl);

/* rl_set_low_reserved / rl_set_mid_reserved -- change the LOW / MID
 * reserve (bytes/s); they take effect at the next refill. */
void rl_set_low_reserved(ratelimit *rl, uint64_t bytes_per_s);
void rl_set_mid_reserved(ratelimit *rl, uint64_t bytes_per_s);

/* rl_try_acquire -- the deterministic core: asks for up to n bytes at time
 * now_us with ticket `req`.
 *   - A new ticket (RL_REQ_INIT, or one whose previous call returned a grant)
 *     starts a request of n bytes at priority `prio`.
 *   - A queued ticket is polled (n and prio are ignored); if it holds pieces
 *     granted by refills since, they are returned and it leaves the queue.
 * Refills due by now_us are processed first (serving queued tickets, in the
 * order the header comment gives). Returns:
 *   > 0   bytes granted (<= n; at most one burst per refill since the
 *         request was queued, unless unlimited); the ticket is free again.
 *         Ask again for the rest.
 *   0     nothing yet: the ticket is queued; *wait_until_us (if not NULL) is
 *         the next refill time, the earliest at which polling can succeed.
 *   TKV_INVALID  n == 0 for a new ticket, or bad prio (not < RL_NPRIO).
 *   TKV_BUSY     the limiter is shut down (a queued ticket is withdrawn).
 * `now_us` must not go backwards between calls on one limiter. */
int64_t rl_try_acquire(ratelimit *rl, rl_req *req, rl_prio prio, uint64_t n, uint64_t now_us, uint64_t *wait_until_us);

/* rl_withdraw -- takes a queued ticket out of its queue; bytes it was
 * granted meanwhile count as used (they are not returned to the bucket).
 * No-op for a free ticket. */
void rl_withdraw(ratelimit *rl, rl_req *req);

/* rl_request -- blocks until n bytes have been granted (in pieces of at most
 * one burst per refill, rejoining the queue's tail after each), waiting
 * between refills. `cancel` may be NULL; when it is
 * nonzero (see rl_cancel) the wait ends. Returns TKV_OK, or TKV_BUSY when
 * cancelled or the limiter is shut down (bytes granted before that stay
 * charged). n == 0 returns TKV_OK at once. */
int rl_request(ratelimit *rl, rl_prio prio, uint64_t n, const atomic_int *cancel);

/* rl_cancel -- sets *flag to 1 and wakes every blocked rl_request: those
 * whose `cancel` is `flag` return TKV_BUSY, the others wait on. This is how
 * an aborted or paused compaction stops waiting for tokens. */
void rl_cancel(ratelimit *rl, atomic_int *flag);

/* rl_shutdown -- permanently: every blocked and every later rl_request /
 * rl_try_acquire returns TKV_BUSY. */
void rl_shutdown(ratelimit *rl);

/* rl_get_stats -- a consistent snapshot of the counters. */
void rl_get_stats(ratelimit *rl, rl_stats *st);

#endif
