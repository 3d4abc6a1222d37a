// SPDX-License-Identifier: Apache-2.0
/*
 * status.h -- status codes and the thread-local detailed error message.
 *
 * Every failing internal function returns a negative TKV_* code and, at the
 * point where the failure is first detected, records a human message with
 * tkv_err(). Callers that merely propagate a code do not overwrite it.
 */
#ifndef TKV_UTIL_STATUS_H
#define TKV_UTIL_STATUS_H

#include "tierkv.h"

/* tkv_err -- records a printf-style message for the calling thread and returns
 * `code` so that it can be used as `return tkv_err(TKV_INVALID, "...")`. */
int tkv_err(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* tkv_err_errno -- tkv_err for a failed system call: maps errno (ENOSPC ->
 * TKV_NO_SPACE, ENOMEM -> TKV_NO_MEMORY, else TKV_IO_ERROR) and appends
 * strerror(errno_value). */
int tkv_err_errno(int errno_value, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* tkv_err_clear -- empties the calling thread's message. */
void tkv_err_clear(void);

/* tkv_errmsg_saved -- a copy of the calling thread's message, for best-effort
 * work (removing obsolete files, discarding outputs) that runs between a
 * failure and its report: such work may fail and absorb its own failures
 * (a file another remover took first), and must not replace the message the
 * caller is about to report. tkv_errmsg_save, then tkv_errmsg_restore. */
typedef struct tkv_errmsg_saved {
    char msg[512];
} tkv_errmsg_saved;
void tkv_errmsg_save(tkv_errmsg_saved *s);
void tkv_errmsg_restore(const tkv_errmsg_saved *s);

/* TKV_TRY -- return the status of `expr` if it is an error (< 0). */
#define TKV_TRY(expr)                                                                                                  \
    do {                                                                                                               \
        int tkv_try_rc_ = (expr);                                                                                      \
        if (tkv_try_rc_ < 0) return tkv_try_rc_;                                                                       \
    } while (0)

#endif
