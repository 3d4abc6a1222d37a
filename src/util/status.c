// SPDX-License-Identifier: Apache-2.0
/*
 * status.c -- tkv_strerror, tkv_errmsg and the thread-local message buffer.
 */
#include "util/status.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static __thread char tls_errmsg[512];

const char *tkv_strerror(int status)
{
    switch (status) {
    case TKV_OK:
        return "OK";
    case TKV_NOT_FOUND:
        return "not found";
    case TKV_TRUNCATED:
        return "value larger than the buffer";
    case TKV_INVALID:
        return "invalid argument";
    case TKV_IO_ERROR:
        return "I/O error";
    case TKV_CORRUPTION:
        return "corruption";
    case TKV_NO_SPACE:
        return "no space";
    case TKV_BUSY:
        return "busy";
    case TKV_NO_MEMORY:
        return "out of memory";
    case TKV_READ_ONLY:
        return "read-only";
    default:
        return "unknown status";
    }
}

const char *tkv_errmsg(void) { return tls_errmsg; }

void tkv_err_clear(void) { tls_errmsg[0] = '\0'; }

void tkv_errmsg_save(tkv_errmsg_saved *s) { snprintf(s->msg, sizeof s->msg, "%s", tls_errmsg); }

void tkv_errmsg_restore(const tkv_errmsg_saved *s) { snprintf(tls_errmsg, sizeof tls_errmsg, "%s", s->msg); }

int tkv_err(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tls_errmsg, sizeof tls_errmsg, fmt, ap);
    va_end(ap);
    return code;
}

int tkv_err_errno(int errno_value, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tls_errmsg, sizeof tls_errmsg, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof tls_errmsg)
        snprintf(tls_errmsg + n, sizeof tls_errmsg - (size_t)n, ": %s", strerror(errno_value));
    if (errno_value == ENOSPC || errno_value == EDQUOT) return TKV_NO_SPACE;
    if (errno_value == ENOMEM) return TKV_NO_MEMORY;
    return TKV_IO_ERROR;
}
