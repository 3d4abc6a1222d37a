// SPDX-License-Identifier: Apache-2.0
/*
 * engine_null.c -- the "null" engine: every call succeeds at once and stores
 * nothing (get finds nothing, iterators are never valid). It measures the
 * harness itself, e.g. how fast its open-loop load generator can issue work.
 * Also defines the empty iterator (eng_empty_iter_*, engine_impl.h) that the
 * devread engine uses too.
 */
#include <stdlib.h>

#include "bench/engine_impl.h"

struct engine {
    char unused;
};

struct engine_iter {
    char unused;
};

static int n_available(char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    return 1;
}

static const char *n_version(void) { return "null (no storage)"; }

static int n_open(const engine_config *cfg, engine **out, char *err, size_t errlen)
{
    (void)cfg;
    *out = calloc(1, sizeof **out);
    return *out ? 0 : eng_errf(err, errlen, "null open: out of memory");
}

static void n_close(engine *e) { free(e); }

static const char *n_describe(engine *e)
{
    (void)e;
    return "engine=null stores=nothing";
}

static int n_put(engine *e, const char *k, size_t kn, const char *v, size_t vn)
{
    (void)e, (void)k, (void)kn, (void)v, (void)vn;
    return 0;
}

static int n_del(engine *e, const char *k, size_t kn)
{
    (void)e, (void)k, (void)kn;
    return 0;
}

static int n_get(engine *e, const char *k, size_t kn, size_t *vn)
{
    (void)e, (void)k, (void)kn;
    *vn = 0;
    return 1;
}

static int n_multi_get(engine *e, size_t n, const char *const *keys, const size_t *kns, int *found)
{
    (void)e, (void)keys, (void)kns;
    for (size_t i = 0; i < n; i++) found[i] = 0;
    return 0;
}

/* The empty iterator (engine_impl.h), shared with the devread engine. */
engine_iter *eng_empty_iter_new(engine *e)
{
    (void)e;
    engine_iter *it = calloc(1, sizeof *it);
    if (!it) eng_fail(-1, "iter_new: out of memory");
    return it;
}

void eng_empty_iter_seek(engine_iter *it, const char *k, size_t kn) { (void)it, (void)k, (void)kn; }
void eng_empty_iter_move(engine_iter *it) { (void)it; }
int eng_empty_iter_valid(engine_iter *it)
{
    (void)it;
    return 0;
}

void eng_empty_iter_entry(engine_iter *it, size_t *kn, size_t *vn)
{
    (void)it;
    *kn = 0;
    *vn = 0;
}

void eng_empty_iter_free(engine_iter *it) { free(it); }

static int n_wait_idle(engine *e)
{
    (void)e;
    return 0;
}

static int n_stats(engine *e, engine_stats *out)
{
    (void)e;
    out->device_bytes_written = 0;
    out->stall_count = 0;
    out->stall_micros = 0;
    out->pmem_bytes_written = -1;
    out->detail[0] = '\0';
    return 0;
}

const engine_ops engine_null_ops = {
    .name = "null",
    .available = n_available,
    .version = n_version,
    .open = n_open,
    .close = n_close,
    .describe = n_describe,
    .put = n_put,
    .del = n_del,
    .get = n_get,
    .multi_get = n_multi_get,
    .iter_new = eng_empty_iter_new,
    .iter_seek = eng_empty_iter_seek,
    .iter_seek_first = eng_empty_iter_move,
    .iter_seek_last = eng_empty_iter_move,
    .iter_valid = eng_empty_iter_valid,
    .iter_next = eng_empty_iter_move,
    .iter_prev = eng_empty_iter_move,
    .iter_entry = eng_empty_iter_entry,
    .iter_free = eng_empty_iter_free,
    .wait_idle = n_wait_idle,
    .stats = n_stats,
    .last_error = eng_last_error,
};
