// SPDX-License-Identifier: Apache-2.0
/*
 * engine.c -- the engine registry (engine_find, engine_names) and the helpers
 * the engine_*.c files share (see engine_impl.h): thread-local error messages,
 * bounded string building, dlopen with the right flags, small file and
 * property-text readers, clocks.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench/engine_impl.h"

/* ---------------------------------------------------------------- registry */

static const engine_ops *const ENGINES[] = {
    &engine_tierkv_ops,  &engine_rocksdb_ops, &engine_rocksdb_l0nvm_ops, &engine_rocksdb_deb_ops,
    &engine_leveldb_ops, &engine_null_ops,    &engine_devread_ops,
};
#define N_ENGINES (sizeof ENGINES / sizeof ENGINES[0])

const engine_ops *engine_find(const char *name)
{
    if (!name) return NULL;
    for (size_t i = 0; i < N_ENGINES; i++)
        if (!strcmp(ENGINES[i]->name, name)) return ENGINES[i];
    return NULL;
}

const char *engine_names(void)
{
    /* Kept in the order of ENGINES (checked by tests/test_bench_engines.c). */
    return "tierkv,rocksdb,rocksdb-l0nvm,rocksdb-deb,leveldb,null,devread";
}

int eng_multi_get_each(int (*get)(engine *, const char *, size_t, size_t *), engine *e, size_t n,
                       const char *const *keys, const size_t *kns, int *found)
{
    for (size_t i = 0; i < n; i++) {
        size_t vn;
        int rc = get(e, keys[i], kns[i], &vn);
        if (rc < 0) return rc;
        found[i] = rc == 0;
    }
    return 0;
}

/* ---------------------------------------------------------------- errors */

/* One message per thread, shared by all engines: "the last failed call on
 * this thread" whatever the engine. */
static __thread char last_error[1024];

static void set_error_v(const char *fmt, va_list ap) { vsnprintf(last_error, sizeof last_error, fmt, ap); }

int eng_fail(int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_error_v(fmt, ap);
    va_end(ap);
    return rc < 0 ? rc : -1;
}

int eng_errf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_error_v(fmt, ap);
    va_end(ap);
    if (err && errlen) snprintf(err, errlen, "%s", last_error);
    return -1;
}

const char *eng_last_error(void) { return last_error; }

/* ---------------------------------------------------------------- strings */

void eng_appendf(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    if (!cap || *len >= cap - 1) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (n < 0) {
        buf[*len] = '\0';
        return;
    }
    *len += (size_t)n;
    if (*len >= cap) *len = cap - 1; /* truncated; vsnprintf kept the NUL */
}

void eng_flatten(char *s)
{
    char *w = s;
    int space = 0;
    for (const char *r = s; *r; r++) {
        if (*r == '\n' || *r == '\r') {
            space = 1;
            continue;
        }
        if (space && w != s) *w++ = ' ';
        space = 0;
        *w++ = *r;
    }
    while (w > s && (w[-1] == ' ' || w[-1] == '\t')) w--;
    *w = '\0';
}

int eng_find_u64(const char *text, const char *tag, uint64_t *out)
{
    const char *p = text ? strstr(text, tag) : NULL;
    if (!p) return -1;
    p += strlen(tag);
    if (*p < '0' || *p > '9') return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(p, &end, 10);
    if (errno) return -1;
    *out = v;
    return 0;
}

/* ---------------------------------------------------------------- libraries */

/* malloc_interposed -- 1 if the process's malloc is not glibc's (a
 * sanitizer runtime; tierkv links no allocator: docs/design.md, "Linking"). */
static int malloc_interposed(void)
{
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    void *libc_malloc = libc ? dlsym(libc, "malloc") : NULL;
    void *used = dlsym(RTLD_DEFAULT, "malloc");
    if (libc) dlclose(libc); /* only drops the reference RTLD_NOLOAD took */
    return !libc_malloc || used != libc_malloc;
}

/* dlopen_flags -- RTLD_NOW | RTLD_LOCAL, plus RTLD_DEEPBIND when it is safe.
 *
 * RTLD_DEEPBIND makes a library bind to its own copies of the symbols it
 * exports (RocksDB's release build bundles lz4/zstd/bzip2 and exports them;
 * the bench links the system liblz4). But it also binds the library's
 * malloc/free to glibc's, while libc's own allocating functions (strdup,
 * realpath, ...) keep using the process's malloc: in a process whose malloc
 * is not glibc's, RocksDB 10.10.1 frees a realpath() result with glibc's
 * free() during rocksdb_open and aborts ("free(): invalid pointer"; the bench
 * met it while tierkv linked jemalloc), and the sanitizer runtimes refuse
 * RTLD_DEEPBIND outright. So DEEPBIND is used only when the process runs on
 * glibc's malloc -- every normal build now -- and in the sanitizer builds
 * RTLD_LOCAL alone (the library's calls to exported lz4 functions then go to
 * the system liblz4, an ABI-compatible 1.9.x). */
static int flags_value;
static pthread_once_t flags_once = PTHREAD_ONCE_INIT;
static void flags_init(void) { flags_value = RTLD_NOW | RTLD_LOCAL | (malloc_interposed() ? 0 : RTLD_DEEPBIND); }

static int dlopen_flags(void)
{
    pthread_once(&flags_once, flags_init);
    return flags_value;
}

const char *eng_dlopen_mode(void)
{
    return dlopen_flags() & RTLD_DEEPBIND ? "RTLD_LOCAL|RTLD_DEEPBIND" : "RTLD_LOCAL(no_DEEPBIND:malloc_interposed)";
}

void *eng_dlopen(const char *path, char *why, size_t whylen)
{
    dlerror();
    void *h = dlopen(path, dlopen_flags());
    if (!h && why && whylen) {
        const char *e = dlerror();
        snprintf(why, whylen, "%s", e ? e : "dlopen failed");
    }
    return h;
}

void eng_dl_path(void *handle, char *buf, size_t n)
{
    struct link_map *lm = NULL;
    if (!n) return;
    buf[0] = '\0';
    if (!handle || dlinfo(handle, RTLD_DI_LINKMAP, &lm) != 0 || !lm || !lm->l_name) return;
    char real[PATH_MAX];
    snprintf(buf, n, "%s", realpath(lm->l_name, real) ? real : lm->l_name);
}

int eng_exe_dir(char *buf, size_t n)
{
    char path[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", path, sizeof path - 1);
    if (len <= 0) return -1;
    path[len] = '\0';
    char *slash = strrchr(path, '/');
    if (!slash) return -1;
    *slash = '\0';
    if ((size_t)snprintf(buf, n, "%s", path) >= n) return -1;
    return 0;
}

int eng_file_exists(const char *path)
{
    struct stat st;
    return path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int eng_read_line(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int ok = fgets(buf, (int)n, f) != NULL;
    fclose(f);
    if (!ok) return -1;
    size_t len = strlen(buf);
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' ' || buf[len - 1] == '\t'))
        buf[--len] = '\0';
    return len ? 0 : -1;
}

/* ---------------------------------------------------------------- time */

double eng_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void eng_sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}
