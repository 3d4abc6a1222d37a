// SPDX-License-Identifier: Apache-2.0
/*
 * soak.h -- the soak driver's shared declarations: the per-thread model of
 * its key range, the checkable value encoding, and the worker's loop
 * (soak_work.c), driven by soak.c (phases, reopens, sampling, verdict).
 *
 * Keys: each worker thread t owns the keys "s<t>-<i>" (i < keys, fixed
 * width), so its model -- one version number per key, 0 = absent -- is
 * exact for every read it makes of its own range, whatever the other
 * threads do. Values encode (t, i, version) and a body generated from them,
 * so a read checks both which version it got and every byte of it.
 */
#ifndef TKV_SOAK_H
#define TKV_SOAK_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "tierkv.h"

#define SOAK_KEY_MAX 32

/* Operation counters of one worker (its own thread writes them; the main
 * thread reads them relaxed for the log). */
typedef struct soak_ops {
    uint64_t puts, deletes, batches, gets, multigets, scans, snapshots, flushes;
} soak_ops;

typedef struct soak_worker {
    int id;
    uint32_t keys;     /* keys in this worker's range */
    uint32_t *ver;     /* model: current version of key i, 0 = absent */
    uint32_t next_ver; /* versions grow per worker */
    uint64_t rng;
    tkv_db *db; /* set by the main thread before each phase */
    int *stop;  /* atomic: the phase is over */
    soak_ops ops;
    char fail[512]; /* set on the first wrong answer or error: the worker stops */
    pthread_t thread;
} soak_worker;

/* soak_key -- worker w's key i into buf (SOAK_KEY_MAX bytes); its length. */
size_t soak_key(int w, uint32_t i, char *buf);

/* soak_worker_init / soak_worker_free -- the model of an empty range. */
int soak_worker_init(soak_worker *w, int id, uint32_t keys, uint64_t seed);
void soak_worker_free(soak_worker *w);

/* soak_worker_run -- the worker's thread: random operations on its range,
 * each read checked against the model, until *stop or a failure. */
void *soak_worker_run(void *arg);

/* soak_verify_all -- a full forward scan of w's range and a get of a sample
 * of its keys, checked against the model (after a reopen). 0, or -1 with
 * w->fail set. */
int soak_verify_all(soak_worker *w);

/* soak_ops_total -- all operations counted in o. */
uint64_t soak_ops_total(const soak_ops *o);

#endif
