// SPDX-License-Identifier: Apache-2.0
/*
 * env.h -- the tkv_env object: resources shared by the databases of one
 * process that were opened with the same env (tkv_options_set_env): one
 * block cache, a budget for the sum of their pmem pools, (env_sched_*)
 * one device budget for their schedulers, and one pool of background
 * threads (sched/bgpool.h) (docs/scheduler.md, "Several
 * databases: tkv_env").
 *
 * Lifetime: tkv_env_new makes it; every tkv_open with it attaches
 * (env_attach: a reference, and the settings freeze for good), every
 * tkv_close detaches; tkv_env_free refuses (TKV_BUSY) while a database is
 * attached. The shared resources are made at the first attach and live
 * until tkv_env_free.
 *
 * Locking: env.mu guards every field but the ticks; nothing of a database
 * is taken under it (only the limiter's and the pool's own mutexes, and the
 * pool's threads are joined under it once no database is left). tick_mu
 * guards the ticks and is held while they run: tick_mu -> db locks -> mu.
 * The shared limiter, pool and cache are thread-safe objects of their own.
 */
#ifndef TKV_DB_ENV_H
#define TKV_DB_ENV_H

#include <stdint.h>

#include "sched/bgpool.h"
#include "sched/monitor.h"
#include "sched/ratelimit.h"
#include "sst/cache.h"
#include "tierkv.h"

#define ENV_DEFAULT_BLOCK_CACHE (UINT64_C(256) << 20)
#define ENV_DEFAULT_THREADS     4

/* env_attach -- a database at `dir` starts using env (tkv_open): takes a
 * reference, freezes the settings, and makes the shared block cache and
 * the background pool on the first attach; the pool's threads start (at
 * CPU nice value `nice`) when no other database is attached.
 * TKV_NO_MEMORY. */
int env_attach(tkv_env *env, const char *dir, int nice, unsigned slice_us);
/* env_detach -- the database has closed (tkv_close, last step, every task
 * of its group joined); the last one stops the pool's threads. */
void env_detach(tkv_env *env);

/* env_pool -- the background pool (after env_attach). */
bg_pool *env_pool(tkv_env *env);

/* env_tick_add -- fn(arg, now_us) is called every ENV_TICK_US by the env's
 * one monitor thread (tkv-sched-mon, running while a database is
 * attached), after the ticks added before it: each database's scheduler
 * tick, instead of a monitor thread per database. TKV_NO_MEMORY.
 * env_tick_remove -- no call with arg runs once it returns (a tick under
 * way is waited for); not from a tick. */
#define ENV_TICK_US 10000u
int env_tick_add(tkv_env *env, void (*fn)(void *, uint64_t), void *arg);
void env_tick_remove(tkv_env *env, void *arg);

/* env_block_cache -- the shared block cache (after env_attach). */
tkv_cache *env_block_cache(tkv_env *env);

/* env_pool_reserve -- counts a pmem pool of `bytes` for database `dir`
 * against the env's pmem_budget: 0, or TKV_NO_SPACE (nothing counted) when
 * the pools of the env's open databases and this one would exceed it.
 * env_pool_release gives the bytes back (close, or an open that failed). */
int env_pool_reserve(tkv_env *env, uint64_t bytes, const char *dir);
void env_pool_release(tkv_env *env, uint64_t bytes);

/* env_device_bandwidth -- the env's device_bandwidth setting (0: unset). */
uint64_t env_device_bandwidth(tkv_env *env);

/* env_sched_attach -- a database with scheduler=silk (options o, its T)
 * joins the env's shared scheduler: one internal limiter (three
 * priorities) for every database of the env, its rate
 * I = max(floor, T - C - epsilon) set by one monitor (window period_us)
 * from the client bytes of all of them. The first database makes them with
 * its floor (min_internal_bandwidth), epsilon, threshold and reserves, and
 * the env's device_bandwidth as T when set, else its own T. Returns the
 * shared limiter (*rl) and the env's T (*T_out). TKV_NO_MEMORY, or the
 * monitor's TKV_INVALID. */
int env_sched_attach(tkv_env *env, const struct tkv_options *o, uint64_t T, uint64_t period_us, ratelimit **rl,
                     uint64_t *T_out);

/* env_sched_sample -- one monitor window of one database: its client bytes
 * are added to the env's window; once SILK_PERIOD has passed since the
 * env's last sample, the env's monitor takes the sum and a published
 * change sets the shared limiter's rate. *out (may be NULL) gets the env
 * monitor's stats (client_bw of all databases, candidate), for the pause
 * decision. Any monitor thread of the env's databases may call it. */
void env_sched_sample(tkv_env *env, uint64_t client_bytes, uint64_t now_us, uint64_t period_us, monitor_stats *out);

/* env_sched_stats -- the shared limiter's counters, its T, and the
 * microseconds since it was created (0s if no database has joined). For
 * tkv.sched and the tests. */
void env_sched_stats(tkv_env *env, rl_stats *rs, uint64_t *T, uint64_t *age_us);

#endif
