// SPDX-License-Identifier: Apache-2.0
/*
 * engine_impl.h -- private to the engine_*.c files: the per-engine operation
 * tables that engine.c registers, and the helpers they share (thread-local
 * error messages, string building, dlopen of a foreign engine library,
 * property-text parsing, sleeping and clocks).
 *
 * Not part of the interface tkv_bench sees (that is engine.h).
 */
#ifndef TKV_BENCH_ENGINE_IMPL_H
#define TKV_BENCH_ENGINE_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "bench/engine.h"

/* The engines (one table each, defined in engine_<name>.c). */
extern const engine_ops engine_tierkv_ops;
extern const engine_ops engine_rocksdb_ops;
extern const engine_ops engine_rocksdb_l0nvm_ops;
extern const engine_ops engine_rocksdb_deb_ops;
extern const engine_ops engine_leveldb_ops;
extern const engine_ops engine_null_ops;
extern const engine_ops engine_devread_ops;

/* The empty iterator, for engines that cannot iterate (null, devread):
 * never valid, seeks and moves do nothing. Defined in engine_null.c. */
engine_iter *eng_empty_iter_new(engine *e);
void eng_empty_iter_seek(engine_iter *it, const char *k, size_t kn);
void eng_empty_iter_move(engine_iter *it);
int eng_empty_iter_valid(engine_iter *it);
void eng_empty_iter_entry(engine_iter *it, size_t *kn, size_t *vn);
void eng_empty_iter_free(engine_iter *it);

/* eng_multi_get_each -- multi_get for an engine without a batched read:
 * one get per key, in order; found[i] = 1 if key i was found. Stops at the
 * first error and returns it (negative); 0 otherwise. */
int eng_multi_get_each(int (*get)(engine *, const char *, size_t, size_t *), engine *e, size_t n,
                       const char *const *keys, const size_t *kns, int *found);

/* How long wait_idle waits for background work before giving up. */
#define ENG_IDLE_TIMEOUT_S 600.0
/* How often wait_idle polls the engine. */
#define ENG_IDLE_POLL_MS 100

/* eng_fail -- records a printf-style message as this thread's last error
 * (what every engine's last_error() returns) and returns rc (negative). */
int eng_fail(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* eng_errf -- the same message into err[errlen] (open/available) and into
 * this thread's last error. Returns -1. */
int eng_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* eng_last_error -- this thread's last error message ("" if none). */
const char *eng_last_error(void);

/* eng_appendf -- printf-appends to buf[cap] whose current length is *len;
 * truncates (never overflows) and keeps buf NUL-terminated. */
void eng_appendf(char *buf, size_t cap, size_t *len, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* eng_flatten -- turns a multi-line text into one line in place: newlines
 * become single spaces, trailing whitespace is removed. */
void eng_flatten(char *s);

/* eng_dlopen -- dlopen(path, RTLD_NOW | RTLD_LOCAL), with RTLD_DEEPBIND
 * unless the process's malloc is interposed (sanitizers: see engine.c), or NULL with dlerror() in why. */
void *eng_dlopen(const char *path, char *why, size_t whylen);
/* eng_dlopen_mode -- the flags eng_dlopen uses, for describe(). */
const char *eng_dlopen_mode(void);
/* eng_dl_path -- the file a dlopen handle was loaded from (realpath'd when
 * possible) into buf; "" if unknown. */
void eng_dl_path(void *handle, char *buf, size_t n);
/* eng_exe_dir -- the directory of the running executable (/proc/self/exe). 0 ok. */
int eng_exe_dir(char *buf, size_t n);
/* eng_file_exists -- 1 if path names an existing file. */
int eng_file_exists(const char *path);
/* eng_read_line -- the first line of a small text file (trailing whitespace
 * removed). 0 ok, -1 if unreadable or empty. */
int eng_read_line(const char *path, char *buf, size_t n);

/* eng_find_u64 -- the unsigned decimal number written right after the first
 * occurrence of `tag` in text (e.g. tag "stall_micros="). 0 found, -1 not. */
int eng_find_u64(const char *text, const char *tag, uint64_t *out);

/* eng_now_s -- a monotonic clock in seconds. */
double eng_now_s(void);
/* eng_sleep_ms -- sleeps ms milliseconds. */
void eng_sleep_ms(unsigned ms);

/* eng_touch -- reads the first and last byte of p[n] (the "read and
 * discarded" of get/iter_entry: makes sure the bytes are really there). */
static inline void eng_touch(const void *p, size_t n)
{
    if (p && n) {
        const volatile unsigned char *b = p;
        (void)b[0];
        (void)b[n - 1];
    }
}

#endif
