// SPDX-License-Identifier: Apache-2.0
/*
 * thread.c -- starting background threads, their name and CPU priority
 * (see thread.h).
 */
#include "util/thread.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/status.h"

int thread_set_nice(int nice)
{
    if (nice <= 0) return 0;
    if (nice > 19) nice = 19;
    /* never raise the priority above what the thread inherited (a process
     * started under `nice -n 15` keeps 15; as root it could go lower) */
    if (thread_get_nice() >= nice) return 0;
    /* PRIO_PROCESS with a thread id sets that thread only (Linux) */
    if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice) != 0) return errno;
    return 0;
}

int thread_get_nice(void) { return getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid)); }

/* creations left before one fails (thread_fail_after); -1: none will */
static int fail_countdown = -1;

int thread_fail_after(int n) { return __atomic_exchange_n(&fail_countdown, n < 0 ? -1 : n, __ATOMIC_ACQ_REL); }

int thread_create(pthread_t *t, void *(*fn)(void *), void *arg, const char *what)
{
    int e = 0, left = __atomic_load_n(&fail_countdown, __ATOMIC_ACQUIRE);
    while (left >= 0) {
        if (__atomic_compare_exchange_n(&fail_countdown, &left, left - 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            if (left == 0) e = EAGAIN; /* this one fails; the countdown is now -1 */
            break;
        }
    }
    if (e == 0) e = pthread_create(t, NULL, fn, arg);
    if (e != 0) return tkv_err(TKV_NO_MEMORY, "cannot start %s: %s", what, strerror(e));
    return 0;
}

void thread_background(const char *name, int nice)
{
    /* the priority first: whoever finds the thread by its name (top, perf,
     * sched_background_nice) sees it at its final nice value */
    (void)thread_set_nice(nice); /* best effort */
    pthread_setname_np(pthread_self(), name);
}
