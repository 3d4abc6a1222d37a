// SPDX-License-Identifier: Apache-2.0
/*
 * events.c -- the listener's queue and thread (events.h). The queue is a
 * ring of EVENTS_QUEUE slots; a BG_ERROR's message is copied into its slot.
 */
#include "db/events.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/status.h"
#include "util/thread.h"

typedef struct slot {
    tkv_event ev;
    char msg[256];
} slot;

struct events {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    tkv_event_fn fn;
    void *arg;
    slot *ring;
    uint64_t head, tail; /* posted: tail - head, slots ring[head % N] .. */
    int stopping;
    unsigned slice_us; /* the thread's CPU slice (thread_background) */
    uint64_t dropped;  /* atomic */
    uint64_t job;      /* atomic */
};

static void *events_main(void *p)
{
    events *q = p;
    thread_background("tkv-events", 0, q->slice_us);
    slot cur;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (q->head == q->tail && !q->stopping) pthread_cond_wait(&q->cv, &q->mu);
        if (q->head == q->tail) break; /* stopping and drained */
        cur = q->ring[q->head % EVENTS_QUEUE];
        q->head++;
        pthread_mutex_unlock(&q->mu);
        if (cur.ev.message) cur.ev.message = cur.msg;
        q->fn(&cur.ev, q->arg); /* no lock held */
        pthread_mutex_lock(&q->mu);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

int events_start(events **out, tkv_event_fn fn, void *arg, unsigned slice_us)
{
    *out = NULL;
    events *q = calloc(1, sizeof *q);
    if (q) q->ring = calloc(EVENTS_QUEUE, sizeof *q->ring);
    if (!q || !q->ring) {
        if (q) free(q);
        return tkv_err(TKV_NO_MEMORY, "out of memory for the event queue");
    }
    q->fn = fn;
    q->slice_us = slice_us;
    q->arg = arg;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    int rc = thread_create(&q->thread, events_main, q, "the event thread");
    if (rc) {
        pthread_cond_destroy(&q->cv);
        pthread_mutex_destroy(&q->mu);
        free(q->ring);
        free(q);
        return rc;
    }
    *out = q;
    return 0;
}

void events_post(events *q, const tkv_event *ev)
{
    if (!q || !ev) return;
    pthread_mutex_lock(&q->mu);
    if (q->tail - q->head >= EVENTS_QUEUE) {
        pthread_mutex_unlock(&q->mu);
        __atomic_fetch_add(&q->dropped, 1, __ATOMIC_RELAXED);
        return;
    }
    slot *s = &q->ring[q->tail % EVENTS_QUEUE];
    s->ev = *ev;
    s->ev.size = sizeof s->ev;
    if (ev->message) snprintf(s->msg, sizeof s->msg, "%s", ev->message);
    q->tail++;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

uint64_t events_next_job(events *q) { return q ? __atomic_add_fetch(&q->job, 1, __ATOMIC_RELAXED) : 0; }

uint64_t events_dropped(const events *q) { return q ? __atomic_load_n(&q->dropped, __ATOMIC_RELAXED) : 0; }

void events_stop(events *q)
{
    if (!q) return;
    pthread_mutex_lock(&q->mu);
    q->stopping = 1;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->thread, NULL);
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    free(q->ring);
    free(q);
}
