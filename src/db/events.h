// SPDX-License-Identifier: Apache-2.0
/*
 * events.h -- the event listener's delivery (tkv_options_set_listener): a
 * bounded queue that background threads post to without blocking, and the
 * "tkv-events" thread that calls the user's function, one event at a time,
 * in the order posted, holding no lock of the database (the queue's own lock
 * is released around each call). Posting never waits for the listener: a
 * full queue drops the event and counts it.
 *
 * Thread-safe; events_post may be called with db->mu held.
 */
#ifndef TKV_DB_EVENTS_H
#define TKV_DB_EVENTS_H

#include <stdint.h>

#include "tierkv.h"

#define EVENTS_QUEUE 1024u /* events queued at most (tierkv.h says so) */

typedef struct events events;

/* events_start -- starts the thread that calls fn(ev, arg), with a CPU
 * slice of slice_us (thread_background; 0: the kernel's). 0, TKV_NO_MEMORY
 * or the thread creation's error. */
int events_start(events **out, tkv_event_fn fn, void *arg, unsigned slice_us);
/* events_post -- queues a copy of ev (message copied too); NULL ev is
 * ignored, a NULL queue is a no-op (no listener). */
void events_post(events *q, const tkv_event *ev);
/* events_next_job -- a fresh job number for a begin/end pair (1, 2, ...). */
uint64_t events_next_job(events *q);
/* events_dropped -- events refused on a full queue so far. */
uint64_t events_dropped(const events *q);
/* events_stop -- delivers what is queued, stops the thread and frees q
 * (NULL is a no-op). Must not be called from the listener. */
void events_stop(events *q);

#endif
