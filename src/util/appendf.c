// SPDX-License-Identifier: Apache-2.0
/*
 * appendf.c -- printf into a growing tkv_buf (see appendf.h).
 */
#include "util/appendf.h"

#include <stdarg.h>
#include <stdio.h>

void buf_appendf(tkv_buf *b, int *oom, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof line) n = sizeof line - 1;
    if (buf_append(b, line, (size_t)n) < 0) *oom = 1;
}
