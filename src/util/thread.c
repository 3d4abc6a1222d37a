// SPDX-License-Identifier: Apache-2.0
/*
 * thread.c -- starting background threads, their name and CPU priority
 * (see thread.h).
 */
#include "util/thread.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
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

/* struct sched_attr of sched_setattr(2), its first version (48 bytes):
 * glibc 2.36 has no wrapper. */
typedef struct thread_sched_attr {
    uint32_t size, policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
} thread_sched_attr;

static int sched_attr_of(int tid, thread_sched_attr *a)
{
    memset(a, 0, sizeof *a);
    return syscall(SYS_sched_getattr, tid, a, (unsigned)sizeof *a, 0u) == 0 ? 0 : errno;
}

int thread_set_slice(unsigned us)
{
    if (us == 0) return 0;
    thread_sched_attr a;
    int e = sched_attr_of(0, &a);
    if (e) return e;
    if (a.policy != 0 && a.policy != 3 && a.policy != 5) return 0; /* SCHED_OTHER, _BATCH, _IDLE only: no RT policy */
    a.size = (uint32_t)sizeof a;
    a.flags = 0;
    a.runtime = (uint64_t)us * 1000u; /* kept: policy (the host's SCHED_BATCH or SCHED_IDLE too) and nice */
    return syscall(SYS_sched_setattr, 0, &a, 0u) == 0 ? 0 : errno;
}

long thread_get_slice(int tid)
{
    thread_sched_attr a;
    return sched_attr_of(tid, &a) ? -1 : (long)(a.runtime / 1000u);
}

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

void thread_background(const char *name, int nice, unsigned slice_us)
{
    /* the priority first: whoever finds the thread by its name (top, perf,
     * sched_background_nice) sees it at its final nice value */
    (void)thread_set_nice(nice); /* best effort */
    (void)thread_set_slice(slice_us);
    pthread_setname_np(pthread_self(), name);
}
