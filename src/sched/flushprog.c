// SPDX-License-Identifier: Apache-2.0
/*
 * flushprog.c -- the running flush's progress and ETA (flushprog.h).
 *
 * Invariant: phase NONE has nothing running; BUILD has work > 0 and
 * done <= what fp_add reported; TAIL has built_us set. t0_us is 0 until the
 * first fp_add of the build, then done0 is what was counted at that call.
 */
#include "sched/flushprog.h"

#include <pthread.h>
#include <stdlib.h>

#include "util/status.h"

enum { FP_NONE, FP_BUILD, FP_TAIL };

struct flushprog {
    pthread_mutex_t mu;
    int phase;
    uint64_t work, done, done0, t0_us;
    uint64_t built_us;
    uint64_t tail_us; /* the last flush's */
};

flushprog *fp_new(void)
{
    flushprog *p = calloc(1, sizeof *p);
    if (!p) {
        tkv_err(TKV_NO_MEMORY, "out of memory creating the flush progress");
        return NULL;
    }
    pthread_mutex_init(&p->mu, NULL);
    return p;
}

void fp_free(flushprog *p)
{
    if (!p) return;
    pthread_mutex_destroy(&p->mu);
    free(p);
}

void fp_begin(flushprog *p, uint64_t work)
{
    pthread_mutex_lock(&p->mu);
    p->phase = work ? FP_BUILD : FP_NONE;
    p->work = work;
    p->done = p->done0 = p->t0_us = p->built_us = 0;
    pthread_mutex_unlock(&p->mu);
}

void fp_add(flushprog *p, uint64_t bytes, uint64_t now_us)
{
    pthread_mutex_lock(&p->mu);
    if (p->phase == FP_BUILD) {
        p->done += bytes;
        if (!p->t0_us) {
            p->t0_us = now_us ? now_us : 1;
            p->done0 = p->done;
        }
    }
    pthread_mutex_unlock(&p->mu);
}

void fp_built(flushprog *p, uint64_t now_us)
{
    pthread_mutex_lock(&p->mu);
    if (p->phase == FP_BUILD) {
        p->phase = FP_TAIL;
        p->built_us = now_us ? now_us : 1;
    }
    pthread_mutex_unlock(&p->mu);
}

void fp_end(flushprog *p, uint64_t now_us)
{
    pthread_mutex_lock(&p->mu);
    if (p->phase == FP_TAIL) p->tail_us = now_us > p->built_us ? now_us - p->built_us : 0;
    p->phase = FP_NONE;
    pthread_mutex_unlock(&p->mu);
}

int fp_eta(flushprog *p, uint64_t now_us, uint64_t *eta_us)
{
    int known = 0;
    pthread_mutex_lock(&p->mu);
    if (p->phase == FP_TAIL) {
        uint64_t since = now_us > p->built_us ? now_us - p->built_us : 0;
        /* a tail already longer than the last one (an fsync behind a busy
         * disk) is expected to take as long again as it has so far */
        *eta_us = p->tail_us > 2 * since ? p->tail_us - since : since;
        known = 1;
    } else if (p->phase == FP_BUILD && p->t0_us && p->done >= p->work / 16 && p->done > p->done0 && now_us > p->t0_us) {
        double rate = (double)(p->done - p->done0) / (double)(now_us - p->t0_us); /* bytes per us */
        double left = p->done < p->work ? (double)(p->work - p->done) / rate : 0.0;
        *eta_us = (left >= 1e15 ? (uint64_t)1e15 : (uint64_t)left) + p->tail_us;
        known = 1;
    }
    pthread_mutex_unlock(&p->mu);
    return known;
}

uint64_t fp_tail_us(flushprog *p)
{
    pthread_mutex_lock(&p->mu);
    uint64_t t = p->tail_us;
    pthread_mutex_unlock(&p->mu);
    return t;
}
