// SPDX-License-Identifier: Apache-2.0
/*
 * bgpool.h -- a pool of background threads shared by several owners (the
 * databases of one tkv_env): each owner has a group of tasks, each task a
 * priority and a step function that does one unit of work and says when it
 * wants to run again. docs/scheduler.md, "Several databases: tkv_env".
 *
 * Scheduling. A free thread takes the runnable task of the best priority
 * (0 first: flushes, then 1: L0->L1 work, then 2: deep compactions) whose
 * class is below its cap, going round the groups from the one after the
 * group it served last at that priority (round-robin: no owner starves
 * another at the same priority). Caps keep threads for better classes:
 * tasks of priority >= 1 run on at most max(1, n - 1) threads at once and
 * tasks of priority 2 on at most max(1, n - 2), so with n >= 2 a flush
 * never waits for a long compaction to end, only for a free thread.
 * A step must not wait for something only another task can bring about
 * (it returns BG_IDLE instead), except for work that is already running.
 *
 * Tasks. A step returns BG_AGAIN (run again when a thread is free),
 * BG_IDLE (nothing to do: run again when the group is kicked, or after
 * *wait_us if it is nonzero, and at the latest after BG_IDLE_MAX_US in
 * case a kick was missed), BG_SLEEP (idle for *wait_us whatever kicks come:
 * for a task that waits for a change kicks do not announce, such as room in
 * a full pool, and must not run at every kick meanwhile), or BG_DONE (the
 * task is over). A kick that comes while a task runs makes it runnable
 * again when its step returns BG_AGAIN or BG_IDLE.
 *
 * Threads: bg_pool_start starts them ("tkv-bg", at the given nice value),
 * bg_pool_stop joins them; the owner starts them with its first group and
 * stops them after its last. Thread-safe; the pool's mutex is a leaf:
 * callers may hold their own locks when they kick (steps never run under
 * the pool's mutex).
 */
#ifndef TKV_SCHED_BGPOOL_H
#define TKV_SCHED_BGPOOL_H

#include <stdint.h>

#define BG_NPRIO       3
#define BG_AGAIN       0
#define BG_IDLE        1
#define BG_DONE        2
#define BG_SLEEP       3
#define BG_IDLE_MAX_US 100000u
#define BG_MAX_THREADS 64

typedef struct bg_pool bg_pool;
typedef struct bg_group bg_group;
typedef struct bg_task bg_task;

/* bg_step_fn -- one step of a task (see above). *wait_us is 0 on entry. */
typedef int (*bg_step_fn)(void *arg, uint64_t *wait_us);

/* bg_pool_new -- a pool of `threads` threads (1..BG_MAX_THREADS), none
 * started. TKV_INVALID or TKV_NO_MEMORY. */
int bg_pool_new(int threads, bg_pool **out);
/* bg_pool_free -- frees a stopped pool with no group left. NULL: nothing. */
void bg_pool_free(bg_pool *p);
/* bg_pool_start -- starts the threads, at CPU nice value `nice` and CPU
 * slice `slice_us` (thread_background). TKV_NO_MEMORY (those started are stopped again). */
int bg_pool_start(bg_pool *p, int nice, unsigned slice_us);
/* bg_pool_stop -- every group gone: ends and joins the threads. */
void bg_pool_stop(bg_pool *p);

/* bg_group_new -- a new owner's group (NULL on out of memory). */
bg_group *bg_group_new(bg_pool *p);
/* bg_group_free -- after every task of g has been joined. NULL: nothing. */
void bg_group_free(bg_group *g);
/* bg_group_kick -- every idle task of g is runnable now; a running one
 * runs again once its step returns. Cheap; callers may hold their locks. */
void bg_group_kick(bg_group *g);

/* bg_task_add -- a task of g at priority prio (0..BG_NPRIO-1) running
 * fn(arg), runnable at once. 0 or TKV_NO_MEMORY. */
int bg_task_add(bg_group *g, int prio, bg_step_fn fn, void *arg, bg_task **out);
/* bg_task_arg -- the arg t was added with. */
void *bg_task_arg(const bg_task *t);
/* bg_task_join -- kicks t, waits until a step of it has returned BG_DONE,
 * and frees it. Not from a step of the same pool. */
void bg_task_join(bg_task *t);

/* Counters (for tkv.sched and the tests). */
typedef struct bg_pool_stats {
    int threads;              /* threads running now */
    int busy, busy_max;       /* threads running a step now, and at most at once */
    uint64_t steps[BG_NPRIO]; /* steps run, by priority */
    uint64_t groups, tasks;   /* groups and tasks now */
} bg_pool_stats;

void bg_pool_get_stats(bg_pool *p, bg_pool_stats *out);
/* bg_group_steps -- steps run by g's tasks of priority prio. */
uint64_t bg_group_steps(bg_group *g, int prio);

#endif
