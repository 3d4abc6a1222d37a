// SPDX-License-Identifier: Apache-2.0
/*
 * monitor.h -- SILK's control law: from the client bandwidth C, the internal
 * I/O budget I that the rate limiter (ratelimit.h) is set to.
 *
 * The owner feeds one sample per window (~10 ms): monitor_sample(m, bytes,
 * now_us) with the client bytes (WAL writes + reads that missed the cache)
 * charged since the previous sample. Per sample:
 *
 *   1. raw_k = bytes_k / (now_k - now_{k-1})                (this window)
 *   2. C     = sum(bytes) / sum(duration) over the last `smooth_windows`
 *              windows (default 2): a duration-weighted moving average
 *   3. cand  = max(floor, T - C - epsilon)                  (floor = min_internal_bw)
 *   4. deadband D = max(threshold, noise_mult * N), where N, the noise
 *              level, is the mean of |raw_j - raw_{j-1}| over the last
 *              MONITOR_NOISE_WINDOWS windows before this one, leaving out the
 *              largest eighth of them (so the one or two large differences a
 *              step in load makes do not widen D, while sustained noise does)
 *   5. publish: if |cand - I| > D then I = cand, `changes`++ and
 *              monitor_sample returns 1 (the caller then calls rl_set_rate).
 *
 * Properties (tested in tests/test_sched_monitor.c):
 *   - Step response: after a step in client load, C reaches the new level
 *     after `smooth_windows` windows, so I settles (is within D of its
 *     target, and stays there) within smooth_windows periods (2 by default). A step larger
 *     than 2 D is published in two moves (half-way, then final), a step
 *     between D and 2 D in one move at the second window.
 *   - Noise: for load fluctuating uniformly by +-a per window, N ~ 0.54 a,
 *     so with noise_mult = 5, D ~ 2.7 a, while two 2-window averages differ
 *     by at most 2 a: steady noisy load practically never moves I (the test
 *     bound is <= 2 changes per second, checked for loads of 20..480 MiB/s
 *     at +-5% with uniform and bell-shaped noise). The price: a change in
 *     load smaller than D is not followed. N learns a new noise level in
 *     about MONITOR_NOISE_WINDOWS windows (0.32 s); until then, when noise
 *     grows suddenly, I may move a few extra times.
 *   - I >= floor always; I never exceeds max(floor, T - epsilon).
 *
 * Read-latency cap (optional, latency_factor_pct > 0): SILK's law only sees
 * bandwidth, but on a real disk internal writes hurt client reads well
 * before T - C is used up (device-cache flushes, queueing behind large
 * writes, CPU). So the monitor also watches the mean latency of client
 * reads, fed per window with monitor_sample_reads, pooled into intervals of
 * latency_interval_us (default 100 ms). Per interval with at least
 * latency_min_reads reads, mean L:
 *   - target = latency_target_us if set, else factor * B, where the
 *     baseline B is the lowest interval mean seen, forgetting slowly:
 *     B = L if L < B, else B += (L - B) * interval / latency_baseline_tau_us
 *   - L > target: the cap backs off, cap = max(floor, min(cap, I) * backoff)
 *     (multiplicative decrease from what is in effect; `backoffs`++)
 *   - else (or too few reads: nobody to protect): cap += step, up to T
 *     (additive increase; step default T / 32 per interval)
 * and the candidate of step 3 becomes max(floor, min(cand, cap)). While the
 * cap binds, the deadband is the plain threshold (the noise term is about
 * client load, not the cap), and reaching the floor is always published.
 * The cap never takes I below the floor: flushes and column compactions
 * keep min_internal_bw whatever the latency. With it off (the default of
 * monitor_options_default) monitor_sample_reads is monitor_sample.
 *
 * Before the first sample I = max(floor, T - epsilon) (no client load seen).
 * A window of zero length (now_us not later than the previous sample) is
 * merged into the next one.
 *
 * The core is deterministic: no threads, no clock reads. monitor_thread_*
 * is an optional helper that calls a function every period on the real
 * clock; the engine may use it or its own thread.
 *
 * Thread safety: a monitor is safe for concurrent use (one mutex), e.g. one
 * thread sampling and others reading monitor_get_stats.
 */
#ifndef TKV_SCHED_MONITOR_H
#define TKV_SCHED_MONITOR_H

#include <stdint.h>

#define MONITOR_MAX_SMOOTH    8  /* largest smooth_windows */
#define MONITOR_NOISE_WINDOWS 32 /* window-to-window differences N looks at */

typedef struct monitor_options {
    uint64_t device_bw;       /* T, bytes/s (> 0). Default 500 MiB/s. Run time: monitor_set_device_bw */
    uint64_t min_internal_bw; /* the floor of I, bytes/s. Default 50 MiB/s */
    uint64_t epsilon;         /* SILK's epsilon, bytes/s. Default 10 MiB/s */
    uint64_t threshold;       /* least change of I that is published, bytes/s. Default 10 MiB/s */
    unsigned smooth_windows;  /* windows averaged into C, 1..MONITOR_MAX_SMOOTH. Default 2 */
    unsigned noise_mult;      /* deadband multiple of the noise level N; 0 = the plain
                               * SILK rule (D = threshold). Default 5 */
    uint64_t period_us;       /* the intended sampling period (for monitor_thread and
                               * documentation; samples carry their own times). Default 10000 */
    /* the read-latency cap (above); all have defaults, factor 0 = off */
    unsigned latency_factor_pct;      /* target = this percent of the baseline; 0 = no cap. Default 0 */
    uint64_t latency_target_us;       /* a fixed target instead (0 = factor * baseline). Default 0 */
    uint64_t latency_interval_us;     /* windows pooled per latency decision. Default 100000 */
    uint64_t latency_min_reads;       /* fewer reads in an interval: no signal (cap recovers). Default 16 */
    unsigned latency_backoff_pct;     /* multiplicative decrease, percent kept (1..99). Default 70 */
    uint64_t latency_step;            /* additive increase per interval, bytes/s; 0 = T / 32. Default 0 */
    uint64_t latency_baseline_tau_us; /* how slowly the baseline forgets its low. Default 30 s */
} monitor_options;

typedef struct monitor_stats {
    uint64_t device_bw;    /* T */
    uint64_t client_bw;    /* C (smoothed) */
    uint64_t client_raw;   /* the last window's raw client bandwidth */
    uint64_t internal_bw;  /* I, the published budget */
    uint64_t candidate;    /* the last computed max(floor, T - C - epsilon) */
    uint64_t deadband;     /* the last D */
    uint64_t samples;      /* windows seen */
    uint64_t changes;      /* times I was published with a new value */
    uint64_t client_bytes; /* total client bytes sampled */
    /* read-latency cap (zeros while it is off) */
    uint64_t read_latency_ns;     /* the last interval's mean client read latency */
    uint64_t latency_baseline_ns; /* B */
    uint64_t latency_target_ns;   /* the target in use */
    uint64_t latency_cap;         /* the cap, bytes/s (T when not backed off) */
    uint64_t latency_intervals;   /* intervals evaluated (with enough reads) */
    uint64_t latency_backoffs;    /* intervals above the target */
    int latency_capped;           /* the cap is below the bandwidth law's candidate now */
} monitor_stats;

typedef struct monitor monitor;

/* monitor_options_default -- fills the defaults above. */
void monitor_options_default(monitor_options *o);

/* monitor_create -- a monitor whose first window starts at now_us. Returns
 * TKV_OK and *out, TKV_INVALID (NULL argument, device_bw == 0,
 * smooth_windows out of range, latency_backoff_pct not in 1..99 or
 * latency_interval_us 0 with the cap on) or TKV_NO_MEMORY. */
int monitor_create(const monitor_options *o, uint64_t now_us, monitor **out);

/* monitor_free -- NULL is a no-op. */
void monitor_free(monitor *m);

/* monitor_sample -- closes the window ending at now_us, which saw
 * client_bytes of client I/O, and applies the control law. Returns 1 when
 * the published I changed (read it with monitor_internal_bw), else 0. */
int monitor_sample(monitor *m, uint64_t client_bytes, uint64_t now_us);

/* monitor_sample_reads -- monitor_sample, with the window's client reads:
 * how many, and their summed latency in ns (for the read-latency cap). */
int monitor_sample_reads(monitor *m, uint64_t client_bytes, uint64_t reads, uint64_t read_ns, uint64_t now_us);

/* monitor_internal_bw -- the published I, bytes/s. */
uint64_t monitor_internal_bw(monitor *m);

/* monitor_set_device_bw -- changes T (> 0; 0 is ignored); the next sample
 * republishes I even when the change is inside the deadband. */
void monitor_set_device_bw(monitor *m, uint64_t device_bw);

/* monitor_get_stats -- a consistent snapshot. */
void monitor_get_stats(monitor *m, monitor_stats *st);

/*
 * monitor_thread -- optional helper: a thread that calls fn(arg, now_us)
 * every period_us of real (CLOCK_MONOTONIC) time, on an absolute schedule
 * (no drift); ticks missed while fn ran long are skipped, not bunched.
 * monitor_thread_stop wakes it at once, joins it and frees it (NULL is a
 * no-op); fn is not called after stop returns.
 */
typedef void (*monitor_tick_fn)(void *arg, uint64_t now_us);
typedef struct monitor_thread monitor_thread;

/* monitor_thread_start -- TKV_OK and *out, TKV_INVALID (NULL fn/out,
 * period_us == 0), or TKV_NO_MEMORY (also when the thread cannot be
 * created: thread_create). */
int monitor_thread_start(uint64_t period_us, monitor_tick_fn fn, void *arg, monitor_thread **out);
void monitor_thread_stop(monitor_thread *t);

#endif
