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

/* TKV_TRY -- return the status of `expr` if it is an error (< 0). */
#define TKV_TRY(expr)                                                                                         \
    do {                                                                                                      \
        int tkv_try_rc_ = (expr);                                                                             \
        if (tkv_try_rc_ < 0) return tkv_try_rc_;                                                              \
    } while (0)

#endif
