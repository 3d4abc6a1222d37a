// SPDX-License-Identifier: Apache-2.0
/*
 * pc_common.h -- what the power-cut writer (pc_writer.c) and checker
 * (pc_check.c) of `make crashtest-power` share: the operations of a writer
 * thread (a function of seed, thread and index only), the keys and values,
 * the progress file the writer fills and the checker reads, the state file
 * the checker writes for the next run, and the options string.
 * tests/powercut/README.md describes the method.
 */
#ifndef TKV_PC_COMMON_H
#define TKV_PC_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "tierkv.h"

#define PC_MAX_THREADS 16
#define PC_KEYS        4096u /* keys per thread: "t<tt>.<kkkkk>" */
#define PC_KEY_LEN     9
#define PC_MAX_ITEMS   8          /* items of a batch */
#define PC_MAX_VALUE   8300       /* the longest value pc_value makes */
#define PC_MAX_OPS     (1u << 21) /* operations of one thread in one run (the records' room) */

/* ---------------------------------------------------------------- operations */

uint64_t pc_mix64(uint64_t x);

typedef struct pc_item {
    uint32_t key;
    int del;
} pc_item;

typedef struct pc_op {
    int n;     /* items */
    int batch; /* tkv_write of a batch (else one tkv_put / tkv_delete) */
    int sync;  /* TKV_SYNC */
    pc_item it[PC_MAX_ITEMS];
} pc_op;

/* pc_gen -- operation i of thread t: 55 % a put, 10 % a delete, 35 % a batch
 * of 2..8 puts and deletes (a quarter deletes; sometimes the same key twice).
 * TKV_SYNC comes in phases of 512 operations of a thread: none, 2 % (twice as
 * often as the others) or 10 %. */
void pc_gen(uint64_t seed, unsigned t, uint64_t i, pc_op *o);

/* pc_key -- thread t's key k, "t<tt>.<kkkkk>" (PC_KEY_LEN bytes, no NUL
 * counted). */
size_t pc_key(unsigned t, uint32_t k, char *buf);

/* pc_value -- the value item j of operation i of thread t puts at key k:
 * "t<tt>.<kkkkk>|i<i>|j<j>|" and filler, 700..1300 bytes, 2 % of them
 * 4000..8000; buf holds PC_MAX_VALUE bytes. */
size_t pc_value(uint64_t seed, unsigned t, uint32_t k, uint64_t i, unsigned j, char *buf);

/* A key's state in a model: 0 = absent, else (op i, item j) + 1. */
static inline uint64_t pc_enc(uint64_t i, unsigned j) { return ((i << 4) | j) + 1; }
static inline uint64_t pc_enc_op(uint64_t e) { return (e - 1) >> 4; }
static inline unsigned pc_enc_item(uint64_t e) { return (unsigned)((e - 1) & 15); }

/* ---------------------------------------------------------------- progress file */

/* One thread's counters (absolute operation indexes). The writer stores
 * issued = i + 1 before it issues operation i, acked = i + 1 after its
 * acknowledgement, and for a TKV_SYNC one acked_sync = i + 1 too. */
typedef struct pc_slot {
    uint64_t start;      /* the first operation of this run (earlier ones: earlier runs) */
    uint64_t issued;     /* operations started: the next one's index */
    uint64_t acked;      /* operations acknowledged */
    uint64_t acked_sync; /* operations up to the last acknowledged TKV_SYNC one */
    uint64_t sync_acked; /* TKV_SYNC operations acknowledged in this run */
    uint64_t pad[3];
} pc_slot;

/* Operation start + k of a thread: ack_g is the process-wide acknowledgement
 * index it got + 1 (0: not acknowledged), issue_G the number of
 * acknowledgements (of any thread) there had been when it was issued. */
typedef struct pc_rec {
    uint64_t ack_g;
    uint64_t issue_G;
} pc_rec;

#define PC_MAGIC     0x3174756372776370ull /* "pcwrcut1" */
#define PC_HDR_BYTES 8192

typedef struct pc_progress {
    uint64_t magic; /* stored last by the writer's setup: the file is valid */
    uint64_t seed;
    uint32_t nthreads, pid;
    uint64_t global_acks; /* acknowledgements so far: the next ack index */
    int32_t opened;       /* tkv_open returned TKV_OK */
    int32_t failed;       /* the writer met an error: msg */
    double open_ms;       /* how long tkv_open took */
    char msg[1024];
    pc_slot slot[PC_MAX_THREADS];
} pc_progress;

size_t pc_progress_size(unsigned nthreads);
static inline pc_rec *pc_recs(pc_progress *p, unsigned t)
{
    return (pc_rec *)((char *)p + PC_HDR_BYTES) + (size_t)t * PC_MAX_OPS;
}
/* pc_progress_create -- (writer) a new progress file at path, mapped shared,
 * its slots starting at next[t] (NULL: 0), its magic stored. NULL and a
 * message on stderr on failure. */
pc_progress *pc_progress_create(const char *path, unsigned nthreads, uint64_t seed, const uint64_t *next);
/* pc_progress_open -- (checker) maps an existing progress file read-only;
 * NULL if it is missing, short or not valid yet (the writer died before
 * its setup ended: nothing was issued). */
pc_progress *pc_progress_open(const char *path, unsigned nthreads);

/* ---------------------------------------------------------------- state file */

/* What the checker found: per thread the next operation index of the next
 * run (the last run's issued) and each key's state (pc_enc). */
typedef struct pc_state {
    uint64_t seed;
    unsigned nthreads;
    uint64_t next[PC_MAX_THREADS];
    uint64_t *key[PC_MAX_THREADS]; /* PC_KEYS each */
} pc_state;

/* pc_state_init -- an empty database's state (everything absent, next 0). */
void pc_state_init(pc_state *s, uint64_t seed, unsigned nthreads);
void pc_state_free(pc_state *s);
/* pc_state_load / pc_state_save -- 0, or -1 with a message on stderr. A
 * path of "-" loads the empty state. */
int pc_state_load(pc_state *s, const char *path, uint64_t seed, unsigned nthreads);
int pc_state_save(const pc_state *s, const char *path);

/* ---------------------------------------------------------------- options */

/* pc_options -- tkv_options_new() with each "name=value" of spec applied
 * (separated by commas or white space). NULL and a message in err on an
 * option the library refuses. */
tkv_options *pc_options(const char *spec, char *err, size_t errlen);

double pc_now_ms(void);

#endif
