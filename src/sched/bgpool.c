// SPDX-License-Identifier: Apache-2.0
/*
 * bgpool.c -- the shared background thread pool (bgpool.h): groups of
 * tasks, priorities with caps, round-robin between groups, kicks, timed
 * idling, joins.
 */
#include "sched/bgpool.h"

#include <pthread.h>
#include <stdlib.h>

#include "sched/clock.h"
#include "tierkv.h"
#include "util/status.h"
#include "util/thread.h"

enum { T_RUNNABLE, T_RUNNING, T_IDLE, T_SLEEP, T_DONE };

struct bg_task {
    bg_group *g;
    int prio;
    bg_step_fn fn;
    void *arg;
    int state;
    int kicked;       /* kicked while running: runnable when the step returns */
    uint64_t wake_at; /* T_IDLE: runnable from then on */
    bg_task *next;    /* in g->tasks */
};

struct bg_group {
    bg_pool *p;
    bg_task *tasks;
    uint64_t steps[BG_NPRIO];
    bg_group *prev, *next; /* the pool's ring of groups */
};

struct bg_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;   /* a task may have become runnable, or stop */
    pthread_cond_t done; /* a task ended */
    int nthreads, started, stopping;
    pthread_t *threads;
    int nice;
    unsigned slice_us;        /* their CPU slice (thread_background) */
    bg_group *ring;           /* any group of the ring, or NULL */
    bg_group *last[BG_NPRIO]; /* the group served last at each priority (round-robin) */
    int running[BG_NPRIO];    /* tasks running now, by priority */
    int cap[BG_NPRIO];        /* at most this many running tasks of priority >= p */
    int busy_max;
    uint64_t steps[BG_NPRIO];
    uint64_t ngroups, ntasks;
};

int bg_pool_new(int threads, bg_pool **out)
{
    *out = NULL;
    if (threads < 1 || threads > BG_MAX_THREADS)
        return tkv_err(TKV_INVALID, "background_threads=%d is out of range (1..%d)", threads, BG_MAX_THREADS);
    bg_pool *p = calloc(1, sizeof *p);
    if (!p || !(p->threads = calloc((size_t)threads, sizeof *p->threads))) {
        free(p);
        return tkv_err(TKV_NO_MEMORY, "out of memory creating the background pool");
    }
    pthread_mutex_init(&p->mu, NULL);
    sched_cond_init(&p->cv);
    sched_cond_init(&p->done);
    p->nthreads = threads;
    p->cap[0] = threads;
    p->cap[1] = threads > 1 ? threads - 1 : 1;
    p->cap[2] = threads > 2 ? threads - 2 : 1;
    *out = p;
    return 0;
}

void bg_pool_free(bg_pool *p)
{
    if (!p) return;
    pthread_cond_destroy(&p->cv);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
    free(p->threads);
    free(p);
}

/* running_from -- running tasks of priority >= prio. Caller holds mu. */
static int running_from(const bg_pool *p, int prio)
{
    int n = 0;
    for (int q = prio; q < BG_NPRIO; q++) n += p->running[q];
    return n;
}

/* ready -- 1 if t may run now (runnable, or idle and due). */
static int ready(const bg_task *t, uint64_t now)
{
    return t->state == T_RUNNABLE || ((t->state == T_IDLE || t->state == T_SLEEP) && t->wake_at <= now);
}

/* pick_in -- the first task of g at prio that may run now, or NULL. */
static bg_task *pick_in(bg_group *g, int prio, uint64_t now)
{
    for (bg_task *t = g->tasks; t; t = t->next)
        if (t->prio == prio && ready(t, now)) return t;
    return NULL;
}

/* pick -- the task a free thread runs next (see bgpool.h), or NULL; and in
 * *next_us the earliest time an idle task becomes due. Caller holds mu. */
static bg_task *pick(bg_pool *p, uint64_t now, uint64_t *next_us)
{
    *next_us = now + BG_IDLE_MAX_US;
    if (!p->ring) return NULL;
    for (int prio = 0; prio < BG_NPRIO; prio++) {
        if (running_from(p, prio) >= p->cap[prio]) continue;
        bg_group *start = p->last[prio] ? p->last[prio]->next : p->ring, *g = start;
        do {
            bg_task *t = pick_in(g, prio, now);
            if (t) {
                p->last[prio] = g;
                return t;
            }
            g = g->next;
        } while (g != start);
    }
    bg_group *g = p->ring;
    do {
        for (bg_task *t = g->tasks; t; t = t->next)
            if ((t->state == T_IDLE || t->state == T_SLEEP) && t->wake_at < *next_us) *next_us = t->wake_at;
        g = g->next;
    } while (g != p->ring);
    return NULL;
}

/* step_done -- t's step returned r (wait: its *wait_us). Caller holds mu. */
static void step_done(bg_pool *p, bg_task *t, int r, uint64_t wait)
{
    p->running[t->prio]--;
    p->steps[t->prio]++;
    t->g->steps[t->prio]++;
    if (r == BG_DONE) {
        t->state = T_DONE;
        pthread_cond_broadcast(&p->done);
    } else if (r == BG_AGAIN || (r == BG_IDLE && t->kicked)) {
        t->state = T_RUNNABLE;
    } else {
        t->state = r == BG_SLEEP ? T_SLEEP : T_IDLE;
        t->wake_at = sched_mono_us() + (wait && wait < BG_IDLE_MAX_US ? wait : BG_IDLE_MAX_US);
    }
    pthread_cond_broadcast(&p->cv); /* a thread is free: a capped class may run */
}

static void *pool_main(void *arg)
{
    bg_pool *p = arg;
    thread_background("tkv-bg", p->nice, p->slice_us);
    pthread_mutex_lock(&p->mu);
    while (!p->stopping) {
        uint64_t now = sched_mono_us(), next;
        bg_task *t = pick(p, now, &next);
        if (!t) {
            sched_cond_wait_us(&p->cv, &p->mu, next > now ? next - now : 1);
            continue;
        }
        t->state = T_RUNNING;
        t->kicked = 0;
        p->running[t->prio]++;
        int busy = running_from(p, 0);
        if (busy > p->busy_max) p->busy_max = busy;
        pthread_mutex_unlock(&p->mu);
        uint64_t wait = 0;
        int r = t->fn(t->arg, &wait);
        pthread_mutex_lock(&p->mu);
        step_done(p, t, r, wait);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

int bg_pool_start(bg_pool *p, int nice, unsigned slice_us)
{
    p->nice = nice;
    p->slice_us = slice_us;
    p->stopping = 0;
    int rc = 0;
    while (p->started < p->nthreads &&
           (rc = thread_create(&p->threads[p->started], pool_main, p, "a background pool thread")) == 0)
        p->started++;
    if (rc < 0) bg_pool_stop(p);
    return rc;
}

void bg_pool_stop(bg_pool *p)
{
    pthread_mutex_lock(&p->mu);
    p->stopping = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->started; i++) pthread_join(p->threads[i], NULL);
    p->started = 0;
}

bg_group *bg_group_new(bg_pool *p)
{
    bg_group *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->p = p;
    pthread_mutex_lock(&p->mu);
    if (!p->ring) {
        g->prev = g->next = g;
        p->ring = g;
    } else {
        g->next = p->ring;
        g->prev = p->ring->prev;
        g->prev->next = g;
        p->ring->prev = g;
    }
    p->ngroups++;
    pthread_mutex_unlock(&p->mu);
    return g;
}

void bg_group_free(bg_group *g)
{
    if (!g) return;
    bg_pool *p = g->p;
    pthread_mutex_lock(&p->mu);
    for (int q = 0; q < BG_NPRIO; q++)
        if (p->last[q] == g) p->last[q] = g->next != g ? g->prev : NULL;
    if (g->next == g) {
        p->ring = NULL;
    } else {
        g->prev->next = g->next;
        g->next->prev = g->prev;
        if (p->ring == g) p->ring = g->next;
    }
    p->ngroups--;
    pthread_mutex_unlock(&p->mu);
    free(g);
}

void bg_group_kick(bg_group *g)
{
    bg_pool *p = g->p;
    pthread_mutex_lock(&p->mu);
    int any = 0;
    for (bg_task *t = g->tasks; t; t = t->next) {
        if (t->state == T_RUNNING) t->kicked = 1;
        else if (t->state == T_IDLE) t->state = T_RUNNABLE, any = 1;
    }
    if (any) pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

int bg_task_add(bg_group *g, int prio, bg_step_fn fn, void *arg, bg_task **out)
{
    *out = NULL;
    bg_task *t = calloc(1, sizeof *t);
    if (!t) return tkv_err(TKV_NO_MEMORY, "out of memory adding a background task");
    t->g = g;
    t->prio = prio < 0 ? 0 : prio >= BG_NPRIO ? BG_NPRIO - 1 : prio;
    t->fn = fn;
    t->arg = arg;
    t->state = T_RUNNABLE;
    bg_pool *p = g->p;
    pthread_mutex_lock(&p->mu);
    t->next = g->tasks;
    g->tasks = t;
    p->ntasks++;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    *out = t;
    return 0;
}

void *bg_task_arg(const bg_task *t) { return t->arg; }

void bg_task_join(bg_task *t)
{
    if (!t) return;
    bg_group *g = t->g;
    bg_pool *p = g->p;
    pthread_mutex_lock(&p->mu);
    while (t->state != T_DONE) {
        if (t->state == T_RUNNING) t->kicked = 1;
        else if (t->state == T_IDLE || t->state == T_SLEEP) t->state = T_RUNNABLE;
        pthread_cond_broadcast(&p->cv);
        sched_cond_wait_us(&p->done, &p->mu, BG_IDLE_MAX_US);
    }
    for (bg_task **pp = &g->tasks; *pp; pp = &(*pp)->next)
        if (*pp == t) {
            *pp = t->next;
            break;
        }
    p->ntasks--;
    pthread_mutex_unlock(&p->mu);
    free(t);
}

void bg_pool_get_stats(bg_pool *p, bg_pool_stats *out)
{
    pthread_mutex_lock(&p->mu);
    out->threads = p->started;
    out->busy = running_from(p, 0);
    out->busy_max = p->busy_max;
    for (int q = 0; q < BG_NPRIO; q++) out->steps[q] = p->steps[q];
    out->groups = p->ngroups;
    out->tasks = p->ntasks;
    pthread_mutex_unlock(&p->mu);
}

uint64_t bg_group_steps(bg_group *g, int prio)
{
    bg_pool *p = g->p;
    pthread_mutex_lock(&p->mu);
    uint64_t n = prio >= 0 && prio < BG_NPRIO ? g->steps[prio] : 0;
    pthread_mutex_unlock(&p->mu);
    return n;
}
