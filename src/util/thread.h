// SPDX-License-Identifier: Apache-2.0
/*
 * thread.h -- the engine's background threads: starting them (with a
 * failure hook for tests), their name and CPU priority.
 *
 * On a machine with few cores, a flush, a column or a deep compaction that
 * is merging and compressing competes for the CPU with the client threads.
 * A client thread preempted while it leads a group commit (or holds db->mu)
 * makes every other writer wait for it: in the SILK trace on 2 cores, client
 * threads waited up to 20 ms in the run queue. Background threads therefore
 * run at a lower CPU priority (a higher nice value) than the application's
 * threads; they still get every idle cycle. Linux: the nice value is per
 * thread (setpriority on the thread id).
 */
#ifndef TKV_UTIL_THREAD_H
#define TKV_UTIL_THREAD_H

/* thread_set_nice -- raises the calling thread's nice value to `nice`
 * (1..19; 0, or a value not above the current one, leaves it unchanged: the
 * priority never goes up). Best effort: returns 0, or an errno value if the
 * kernel refused (lowering a priority never needs a privilege). */
int thread_set_nice(int nice);

/* thread_set_slice -- asks the kernel for a CPU slice of `us` microseconds
 * for the calling thread: sched_setattr's sched_runtime, with the thread's
 * policy and nice value kept. Linux 6.12 and later (EEVDF) give a thread a
 * slice of its own, and a waking thread whose slice is shorter than the
 * running one's may preempt it at once; older kernels ignore the runtime of
 * a SCHED_OTHER thread. 0 leaves the slice alone. Best effort: returns 0,
 * or an errno value if the kernel refused. */
int thread_set_slice(unsigned us);

/* thread_get_slice -- the slice (sched_runtime, microseconds) of thread
 * `tid` of this process; 0 if it has none of its own, -1 if unknown. */
long thread_get_slice(int tid);

/* thread_background -- first call of every background thread of the
 * engine (flush, column, L0 and deep compactions, the WAL's mapping helper,
 * the event listener, an env's pool): names the calling thread `name` (for
 * top and perf; at most 15 characters), lowers its CPU priority to `nice` as
 * thread_set_nice does and asks for a slice of `slice_us` as
 * thread_set_slice does (both best effort). */
void thread_background(const char *name, int nice, unsigned slice_us);

/* thread_get_nice -- the calling thread's nice value (for tests). */
int thread_get_nice(void);

#include <pthread.h>

/* thread_create -- starts fn(arg) in a new joinable thread (*t): 0, or
 * TKV_NO_MEMORY with tkv_errmsg() "cannot start <what>: <reason>" (the
 * system's thread limit, memory for the stack). Every thread of the library
 * is started here. */
int thread_create(pthread_t *t, void *(*fn)(void *), void *arg, const char *what);

/* thread_fail_after -- tests (process-wide): the thread_create call that
 * comes after n more successful ones fails as if the system refused it
 * (EAGAIN); n < 0 disarms. One failure per arming. Returns the countdown it
 * replaces: >= 0 if the armed failure has not happened yet, else -1. */
int thread_fail_after(int n);

#endif
