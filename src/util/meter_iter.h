// SPDX-License-Identifier: Apache-2.0
/*
 * meter_iter.h -- an internal iterator (util/iter.h) that passes another
 * through and reports the bytes (key + value) of the entries it is
 * positioned on, in chunks: the scheduler's accounting of reads and writes
 * of the pmem tier, which have no I/O call to count them at (the rows are
 * mapped memory).
 *
 * A pass begins at each seek_first, seek_last or seek. Entries are counted
 * from pass `from_pass` on (1: all; 2: a source its consumer reads twice,
 * such as rowtable_build_at's, counted on the pass that writes). Every time
 * `chunk` bytes have gathered, fn(arg, bytes) is called before the iterator
 * moves on, so a fn that waits (a rate limiter) paces the consumer; what is
 * left is reported at destroy. fn is called on the iterator's thread.
 */
#ifndef TKV_UTIL_METER_ITER_H
#define TKV_UTIL_METER_ITER_H

#include <stdint.h>

#include "util/iter.h"

typedef void (*meter_fn)(void *arg, uint64_t bytes);

/* meter_iter_new -- takes ownership of `inner` (destroyed with the meter,
 * and at once when this returns NULL: out of memory, TKV_NO_MEMORY
 * recorded). A NULL inner gives NULL. chunk 0 means 64 KiB. */
tkv_it *meter_iter_new(tkv_it *inner, unsigned from_pass, uint64_t chunk, meter_fn fn, void *arg);

#endif
