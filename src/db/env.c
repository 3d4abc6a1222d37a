// SPDX-License-Identifier: Apache-2.0
/*
 * env.c -- the tkv_env object (env.h): tkv_env_new/set/free,
 * tkv_options_set_env, the reference count of the databases using it, the
 * shared block cache, the pmem pool budget and the shared scheduler (one
 * monitor and one internal limiter for all of the env's databases).
 */
#include "db/env.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "db/options.h"
#include "sched/bgpool.h"
#include "sched/clock.h"
#include "util/status.h"

struct tkv_env {
    pthread_mutex_t mu;
    int refs; /* databases open with it */
    int used; /* a database has used it: the settings are fixed */
    /* settings */
    uint64_t device_bandwidth; /* T of the shared scheduler; 0 = the first database's (set or probed) */
    uint64_t block_cache_size;
    uint64_t pmem_budget; /* 0 = none */
    uint64_t background_threads;
    /* shared resources (made at the first attach) */
    tkv_cache *cache;
    uint64_t pmem_reserved; /* pools of the open databases */
    bg_pool *pool;          /* the background threads: run while refs > 0 */
    /* the one monitor ticker of the env's databases (env_tick_add): runs while refs > 0 */
    monitor_thread *ticker;
    pthread_mutex_t tick_mu; /* guards ticks[]; held while they run (order: tick_mu -> mu) */
    struct env_tick {
        void (*fn)(void *, uint64_t);
        void *arg;
    } * ticks;
    size_t nticks, tick_cap;
    /* the shared scheduler (env_sched_attach) */
    monitor *mon;
    ratelimit *rl;
    uint64_t T;
    uint64_t born_us;   /* when rl was made */
    uint64_t win_bytes; /* client bytes reported since the last sample */
    uint64_t win_start; /* when that window began */
    monitor_stats last; /* the monitor's stats after the last sample */
};

tkv_env *tkv_env_new(void)
{
    tkv_env *env = calloc(1, sizeof *env);
    if (!env) return NULL;
    pthread_mutex_init(&env->mu, NULL);
    pthread_mutex_init(&env->tick_mu, NULL);
    env->block_cache_size = ENV_DEFAULT_BLOCK_CACHE;
    env->background_threads = ENV_DEFAULT_THREADS;
    return env;
}

int tkv_env_set(tkv_env *env, const char *name, const char *value)
{
    if (!env || !name || !value) return tkv_err(TKV_INVALID, "tkv_env_set: NULL argument");
    uint64_t *field = !strcmp(name, "device_bandwidth")     ? &env->device_bandwidth
                      : !strcmp(name, "block_cache_size")   ? &env->block_cache_size
                      : !strcmp(name, "pmem_budget")        ? &env->pmem_budget
                      : !strcmp(name, "background_threads") ? &env->background_threads
                                                            : NULL;
    if (!field)
        return tkv_err(
            TKV_INVALID,
            "tkv_env_set: unknown setting \"%s\" (device_bandwidth, block_cache_size, pmem_budget, background_threads)",
            name);
    uint64_t v;
    if (options_parse_size(value, &v) < 0)
        return tkv_err(TKV_INVALID, "tkv_env_set: %s=\"%s\" is not a size (e.g. 64M)", name, value);
    if (v > (UINT64_C(1) << 40)) return tkv_err(TKV_INVALID, "tkv_env_set: %s=%s is above 1T", name, value);
    if (field == &env->background_threads && (v < 2 || v > BG_MAX_THREADS))
        return tkv_err(TKV_INVALID, "tkv_env_set: background_threads=%s is out of range (2..%d)", value,
                       BG_MAX_THREADS);
    pthread_mutex_lock(&env->mu);
    int used = env->used;
    if (!used) *field = v;
    pthread_mutex_unlock(&env->mu);
    if (used)
        return tkv_err(TKV_BUSY,
                       "tkv_env_set: %s cannot change: a database has used this env already (settings are "
                       "fixed from the first tkv_open with it)",
                       name);
    return TKV_OK;
}

int tkv_options_set_env(tkv_options *opts, tkv_env *env)
{
    if (!opts) return tkv_err(TKV_INVALID, "tkv_options_set_env: NULL opts");
    opts->env = env;
    return TKV_OK;
}

int tkv_env_free(tkv_env *env)
{
    if (!env) return TKV_OK;
    pthread_mutex_lock(&env->mu);
    int refs = env->refs;
    pthread_mutex_unlock(&env->mu);
    if (refs) return tkv_err(TKV_BUSY, "tkv_env_free: %d database(s) still use this env; close them first", refs);
    cache_free(env->cache);
    bg_pool_free(env->pool);
    free(env->ticks);
    pthread_mutex_destroy(&env->tick_mu);
    rl_free(env->rl);
    monitor_free(env->mon);
    pthread_mutex_destroy(&env->mu);
    free(env);
    return TKV_OK;
}

/* tick_all -- the env's ticker: every registered tick, in turn. */
static void tick_all(void *arg, uint64_t now_us)
{
    tkv_env *env = arg;
    pthread_mutex_lock(&env->tick_mu);
    for (size_t i = 0; i < env->nticks; i++) env->ticks[i].fn(env->ticks[i].arg, now_us);
    pthread_mutex_unlock(&env->tick_mu);
}

int env_tick_add(tkv_env *env, void (*fn)(void *, uint64_t), void *arg)
{
    pthread_mutex_lock(&env->tick_mu);
    int rc = 0;
    if (env->nticks == env->tick_cap) {
        size_t cap = env->tick_cap ? 2 * env->tick_cap : 8;
        struct env_tick *t = realloc(env->ticks, cap * sizeof *t);
        if (t) {
            env->ticks = t;
            env->tick_cap = cap;
        } else {
            rc = tkv_err(TKV_NO_MEMORY, "out of memory starting the scheduler's monitor");
        }
    }
    if (rc == 0) env->ticks[env->nticks++] = (struct env_tick){fn, arg};
    pthread_mutex_unlock(&env->tick_mu);
    return rc;
}

void env_tick_remove(tkv_env *env, void *arg)
{
    pthread_mutex_lock(&env->tick_mu); /* waits for a tick under way */
    for (size_t i = 0; i < env->nticks; i++)
        if (env->ticks[i].arg == arg) {
            env->ticks[i] = env->ticks[--env->nticks];
            break;
        }
    pthread_mutex_unlock(&env->tick_mu);
}

int env_attach(tkv_env *env, const char *dir, int nice, unsigned slice_us)
{
    pthread_mutex_lock(&env->mu);
    int rc = 0;
    if (!env->cache && !(env->cache = cache_new(env->block_cache_size, -1)))
        rc = tkv_err(TKV_NO_MEMORY, "out of memory creating the env's block cache (opening %s)", dir);
    if (rc == 0 && !env->pool) rc = bg_pool_new((int)env->background_threads, &env->pool);
    if (rc == 0 && env->refs == 0) { /* the first database: the threads start */
        rc = bg_pool_start(env->pool, nice, slice_us);
        if (rc == 0 && (rc = monitor_thread_start(ENV_TICK_US, tick_all, env, &env->ticker)) < 0)
            bg_pool_stop(env->pool);
    }
    if (rc == 0) {
        env->refs++;
        env->used = 1;
    }
    pthread_mutex_unlock(&env->mu);
    return rc;
}

void env_detach(tkv_env *env)
{
    pthread_mutex_lock(&env->mu);
    /* the last database: its tasks are gone, so the threads only wait for
     * work and never take env->mu; stopping under it keeps a concurrent
     * first open from starting them again before they have ended */
    if (--env->refs == 0) {
        bg_pool_stop(env->pool);
        monitor_thread_stop(env->ticker); /* no tick left: tick_all takes only tick_mu */
        env->ticker = NULL;
    }
    pthread_mutex_unlock(&env->mu);
}

bg_pool *env_pool(tkv_env *env) { return env->pool; }

tkv_cache *env_block_cache(tkv_env *env) { return env->cache; }

int env_pool_reserve(tkv_env *env, uint64_t bytes, const char *dir)
{
    pthread_mutex_lock(&env->mu);
    uint64_t have = env->pmem_reserved, budget = env->pmem_budget;
    int fits = !budget || (bytes <= budget && have <= budget - bytes);
    if (fits) env->pmem_reserved += bytes;
    pthread_mutex_unlock(&env->mu);
    if (!fits)
        return tkv_err(TKV_NO_SPACE,
                       "opening %s: its pmem pool of %llu bytes would take the env's pools to %llu bytes, over its "
                       "pmem_budget of %llu (lower pmem_size, close a database, or raise the budget)",
                       dir, (unsigned long long)bytes, (unsigned long long)(have + bytes), (unsigned long long)budget);
    return 0;
}

void env_pool_release(tkv_env *env, uint64_t bytes)
{
    pthread_mutex_lock(&env->mu);
    env->pmem_reserved -= bytes < env->pmem_reserved ? bytes : env->pmem_reserved;
    pthread_mutex_unlock(&env->mu);
}

uint64_t env_device_bandwidth(tkv_env *env)
{
    pthread_mutex_lock(&env->mu);
    uint64_t t = env->device_bandwidth;
    pthread_mutex_unlock(&env->mu);
    return t;
}

/* sched_create -- the env's monitor and limiter from the first database's
 * options and T. Caller holds mu. */
static int sched_create(tkv_env *env, const struct tkv_options *o, uint64_t T, uint64_t period_us)
{
    env->T = env->device_bandwidth ? env->device_bandwidth : T;
    monitor_options mo;
    monitor_options_default(&mo);
    mo.device_bw = env->T;
    mo.min_internal_bw = o->min_internal_bandwidth;
    mo.epsilon = o->sched_epsilon;
    mo.threshold = o->sched_threshold;
    mo.period_us = period_us;
    uint64_t now = sched_mono_us();
    TKV_TRY(monitor_create(&mo, now, &env->mon));
    rl_options ro;
    rl_options_default(&ro);
    ro.rate = monitor_internal_bw(env->mon);
    ro.low_reserved = o->deep_reserved_bandwidth;
    ro.mid_reserved = o->l0_reserved_bandwidth;
    int rc = rl_create(&ro, NULL, &env->rl);
    if (rc < 0) {
        monitor_free(env->mon);
        env->mon = NULL;
        return rc;
    }
    env->born_us = env->win_start = now;
    monitor_get_stats(env->mon, &env->last);
    return 0;
}

int env_sched_attach(tkv_env *env, const struct tkv_options *o, uint64_t T, uint64_t period_us, ratelimit **rl,
                     uint64_t *T_out)
{
    pthread_mutex_lock(&env->mu);
    int rc = env->rl ? 0 : sched_create(env, o, T, period_us);
    *rl = env->rl;
    *T_out = env->T;
    pthread_mutex_unlock(&env->mu);
    return rc;
}

void env_sched_sample(tkv_env *env, uint64_t client_bytes, uint64_t now_us, uint64_t period_us, monitor_stats *out)
{
    pthread_mutex_lock(&env->mu);
    env->win_bytes += client_bytes;
    if (now_us > env->win_start && now_us - env->win_start >= period_us) {
        if (monitor_sample(env->mon, env->win_bytes, now_us)) rl_set_rate(env->rl, monitor_internal_bw(env->mon));
        monitor_get_stats(env->mon, &env->last);
        env->win_bytes = 0;
        env->win_start = now_us;
    }
    if (out) *out = env->last;
    pthread_mutex_unlock(&env->mu);
}

void env_sched_stats(tkv_env *env, rl_stats *rs, uint64_t *T, uint64_t *age_us)
{
    pthread_mutex_lock(&env->mu);
    memset(rs, 0, sizeof *rs);
    if (env->rl) rl_get_stats(env->rl, rs);
    *T = env->T;
    *age_us = env->rl ? sched_mono_us() - env->born_us : 0;
    pthread_mutex_unlock(&env->mu);
}
