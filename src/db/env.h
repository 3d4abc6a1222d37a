// SPDX-License-Identifier: Apache-2.0
/*
 * env.h -- the tkv_env object: resources shared by the databases of one
 * process that were opened with the same env (tkv_options_set_env): one
 * block cache, a budget for the sum of their pmem pools, and (env_sched_*)
 * one device budget for their schedulers (docs/scheduler.md, "Several
 * databases: tkv_env").
 *
 * Lifetime: tkv_env_new makes it; every tkv_open with it attaches
 * (env_attach: a reference, and the settings freeze for good), every
 * tkv_close detaches; tkv_env_free refuses (TKV_BUSY) while a database is
 * attached. The shared resources are made at the first attach and live
 * until tkv_env_free.
 *
 * Locking: env.mu guards every field; it is a leaf lock (nothing else is
 * taken under it except the limiter's own mutex in env_sched_sample).
 * The shared limiter and cache are thread-safe objects of their own.
 */
#ifndef TKV_DB_ENV_H
#define TKV_DB_ENV_H

#include <stdint.h>

#include "sst/cache.h"
#include "tierkv.h"

#define ENV_DEFAULT_BLOCK_CACHE (UINT64_C(256) << 20)

/* env_attach -- a database at `dir` starts using env (tkv_open): takes a
 * reference, freezes the settings, and makes the shared block cache on the
 * first attach. TKV_NO_MEMORY. */
int env_attach(tkv_env *env, const char *dir);
/* env_detach -- the database has closed (tkv_close, last step). */
void env_detach(tkv_env *env);

/* env_block_cache -- the shared block cache (after env_attach). */
tkv_cache *env_block_cache(tkv_env *env);

/* env_pool_reserve -- counts a pmem pool of `bytes` for database `dir`
 * against the env's pmem_budget: 0, or TKV_NO_SPACE (nothing counted) when
 * the pools of the env's open databases and this one would exceed it.
 * env_pool_release gives the bytes back (close, or an open that failed). */
int env_pool_reserve(tkv_env *env, uint64_t bytes, const char *dir);
void env_pool_release(tkv_env *env, uint64_t bytes);

#endif
