/*
 * thread.c -- background threads' name and CPU priority (see thread.h).
 */
#include "util/thread.h"

#include <errno.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

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

int thread_get_nice(void)
{
    return getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
}

void thread_background(const char *name, int nice)
{
    pthread_setname_np(pthread_self(), name);
    (void)thread_set_nice(nice); /* best effort */
}
