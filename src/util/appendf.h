// SPDX-License-Identifier: Apache-2.0
/*
 * appendf.h -- printf into a growing tkv_buf (the text of property reports).
 */
#ifndef TKV_UTIL_APPENDF_H
#define TKV_UTIL_APPENDF_H

#include "util/coding.h"

/* buf_appendf -- appends the formatted text (at most 1023 bytes per call:
 * longer text is cut) to b; sets *oom on out of memory and leaves b as it
 * was. */
void buf_appendf(tkv_buf *b, int *oom, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
