// SPDX-License-Identifier: Apache-2.0
/*
 * drainmeter.c -- the pool's drain rate from column samples (drainmeter.h).
 */
#include "sched/drainmeter.h"
#include "util/num.h"

static uint64_t rate_of(double bytes, double us)
{
    double r = bytes * 1e6 / (us > 0 ? us : 1);
    return r >= 1 ? sat_u64(r) : 1;
}

void dm_note(drainmeter *m, uint64_t bytes, uint64_t us)
{
    m->bytes[m->pos] = bytes;
    m->us[m->pos] = us ? us : 1;
    m->pos = (m->pos + 1) % DM_SAMPLES;
    if (m->n < DM_SAMPLES) m->n++;
}

int dm_rate(const drainmeter *m, int running, uint64_t head_bytes, uint64_t head_us, uint64_t first_us, uint64_t *rate)
{
    *rate = 0;
    if (!m->n) {
        if (!running || head_us < first_us) return 0;
        *rate = rate_of((double)head_bytes, (double)head_us);
        return 1;
    }
    double bytes = 0, us = 0;
    for (unsigned i = 0; i < m->n; i++) {
        bytes += (double)m->bytes[i];
        us += (double)m->us[i];
    }
    uint64_t r = rate_of(bytes, us);
    if (running) {
        uint64_t with = rate_of(bytes + (double)head_bytes, us + (double)head_us);
        if (with < r) r = with;
    }
    *rate = r;
    return 1;
}
