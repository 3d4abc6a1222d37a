// SPDX-License-Identifier: Apache-2.0
/*
 * meter_iter.c -- the metering iterator of meter_iter.h.
 *
 * Invariant: pending < chunk after every move; pending is what has been
 * counted and not yet reported.
 */
#include "util/meter_iter.h"

#include <stdlib.h>

#include "util/status.h"

typedef struct meter_it {
    tkv_it base;
    tkv_it *in;
    unsigned pass, from_pass;
    uint64_t chunk, pending;
    meter_fn fn;
    void *arg;
} meter_it;

/* count -- after a move: adds the current entry (if any, on a counted pass)
 * and reports a full chunk. */
static void count(meter_it *m)
{
    if (m->pass < m->from_pass || !it_valid(m->in)) return;
    m->pending += it_key(m->in).n + it_value(m->in).n;
    if (m->pending >= m->chunk) {
        uint64_t b = m->pending;
        m->pending = 0;
        m->fn(m->arg, b);
    }
}

static int m_valid(tkv_it *it) { return it_valid(((meter_it *)it)->in); }

static void m_seek_first(tkv_it *it)
{
    meter_it *m = (meter_it *)it;
    m->pass++;
    it_seek_first(m->in);
    count(m);
}

static void m_seek_last(tkv_it *it)
{
    meter_it *m = (meter_it *)it;
    m->pass++;
    it_seek_last(m->in);
    count(m);
}

static void m_seek(tkv_it *it, tkv_slice target)
{
    meter_it *m = (meter_it *)it;
    m->pass++;
    it_seek(m->in, target);
    count(m);
}

static void m_next(tkv_it *it)
{
    meter_it *m = (meter_it *)it;
    it_next(m->in);
    count(m);
}

static void m_prev(tkv_it *it)
{
    meter_it *m = (meter_it *)it;
    it_prev(m->in);
    count(m);
}

static tkv_slice m_key(tkv_it *it) { return it_key(((meter_it *)it)->in); }
static tkv_slice m_value(tkv_it *it) { return it_value(((meter_it *)it)->in); }
static int m_status(tkv_it *it) { return it_status(((meter_it *)it)->in); }

static void m_destroy(tkv_it *it)
{
    meter_it *m = (meter_it *)it;
    if (m->pending) m->fn(m->arg, m->pending);
    it_destroy(m->in);
    free(m);
}

static const tkv_it_ops meter_ops = {m_valid, m_seek_first, m_seek_last, m_seek,   m_next,
                                     m_prev,  m_key,        m_value,     m_status, m_destroy};

tkv_it *meter_iter_new(tkv_it *inner, unsigned from_pass, uint64_t chunk, meter_fn fn, void *arg)
{
    if (!inner) return NULL;
    meter_it *m = calloc(1, sizeof *m);
    if (!m) {
        it_destroy(inner);
        tkv_err(TKV_NO_MEMORY, "out of memory creating an iterator");
        return NULL;
    }
    m->base.ops = &meter_ops;
    m->in = inner;
    m->from_pass = from_pass;
    m->chunk = chunk ? chunk : 64u << 10;
    m->fn = fn;
    m->arg = arg;
    return &m->base;
}
