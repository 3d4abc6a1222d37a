// SPDX-License-Identifier: Apache-2.0
/*
 * pc_common.c -- the power-cut test's shared parts (see pc_common.h): the
 * operation generator, keys and values, the progress and state files, the
 * options string.
 */
#include "pc_common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- operations */

uint64_t pc_mix64(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

/* A splitmix64 stream. */
typedef struct pc_rng {
    uint64_t x;
} pc_rng;

static uint64_t rng_next(pc_rng *r) { return pc_mix64(r->x += UINT64_C(0x9e3779b97f4a7c15)); }
static uint64_t rng_below(pc_rng *r, uint64_t n)
{
    return n ? (uint64_t)(((unsigned __int128)rng_next(r) * n) >> 64) : 0;
}
static int rng_chance(pc_rng *r, uint32_t per_million) { return rng_below(r, 1000000) < per_million; }

void pc_gen(uint64_t seed, unsigned t, uint64_t i, pc_op *o)
{
    static const uint32_t sync_rate[4] = {0, 20000, 20000, 100000};
    pc_rng r = {seed ^ pc_mix64(((uint64_t)t << 52) ^ i)};
    uint64_t x = rng_below(&r, 100);
    o->sync = rng_chance(&r, sync_rate[pc_mix64(seed ^ 0x73796e63ull ^ ((uint64_t)t << 44) ^ (i >> 9)) % 4]);
    o->batch = x >= 65;
    o->n = o->batch ? 2 + (int)rng_below(&r, PC_MAX_ITEMS - 1) : 1;
    for (int j = 0; j < o->n; j++) {
        if (j > 0 && rng_chance(&r, 100000)) {
            o->it[j].key = o->it[j - 1].key;
            o->it[j].del = !o->it[j - 1].del;
            continue;
        }
        o->it[j].key = (uint32_t)rng_below(&r, PC_KEYS);
        o->it[j].del = o->batch ? rng_chance(&r, 250000) : x >= 55;
    }
}

size_t pc_key(unsigned t, uint32_t k, char *buf) { return (size_t)sprintf(buf, "t%02u.%05u", t, k); }

size_t pc_value(uint64_t seed, unsigned t, uint32_t k, uint64_t i, unsigned j, char *buf)
{
    uint64_t h = pc_mix64(seed ^ ((uint64_t)t << 56) ^ ((uint64_t)k << 36) ^ (i * 16 + j));
    size_t n = (size_t)sprintf(buf, "t%02u.%05u|i%llu|j%u|", t, k, (unsigned long long)i, j);
    size_t len = h % 100 < 2 ? 4000 + (size_t)(h >> 40) % 4001 : 700 + (size_t)(h >> 40) % 601;
    for (size_t p = n; p < len; p++) {
        if ((p & 7) == 0) h = pc_mix64(h);
        buf[p] = (char)('!' + (h >> ((p & 7) * 8)) % 90);
    }
    return len > n ? len : n;
}

/* ---------------------------------------------------------------- progress file */

size_t pc_progress_size(unsigned nthreads) { return PC_HDR_BYTES + (size_t)nthreads * PC_MAX_OPS * sizeof(pc_rec); }

pc_progress *pc_progress_create(const char *path, unsigned nthreads, uint64_t seed, const uint64_t *next)
{
    _Static_assert(sizeof(pc_progress) <= PC_HDR_BYTES, "progress header too large");
    size_t size = pc_progress_size(nthreads);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ftruncate(fd, (off_t)size) != 0) {
        fprintf(stderr, "pc: progress file %s: %s\n", path, strerror(errno));
        if (fd >= 0) close(fd);
        return NULL;
    }
    pc_progress *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) {
        fprintf(stderr, "pc: mmap %s: %s\n", path, strerror(errno));
        return NULL;
    }
    p->seed = seed;
    p->nthreads = nthreads;
    p->pid = (uint32_t)getpid();
    for (unsigned t = 0; t < nthreads; t++) {
        uint64_t s = next ? next[t] : 0;
        p->slot[t] = (pc_slot){.start = s, .issued = s, .acked = s, .acked_sync = s};
    }
    __atomic_store_n(&p->magic, PC_MAGIC, __ATOMIC_RELEASE);
    return p;
}

pc_progress *pc_progress_open(const char *path, unsigned nthreads)
{
    size_t size = pc_progress_size(nthreads);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return NULL;
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size != size) {
        close(fd);
        return NULL;
    }
    pc_progress *p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return NULL;
    if (p->magic != PC_MAGIC || p->nthreads != nthreads) {
        munmap(p, size);
        return NULL;
    }
    return p;
}

/* ---------------------------------------------------------------- state file */

#define PC_STATE_MAGIC 0x3174617473637770ull /* "pcstat1" */

void pc_state_init(pc_state *s, uint64_t seed, unsigned nthreads)
{
    memset(s, 0, sizeof *s);
    s->seed = seed;
    s->nthreads = nthreads;
    for (unsigned t = 0; t < nthreads; t++) {
        s->key[t] = calloc(PC_KEYS, sizeof(uint64_t));
        if (!s->key[t]) {
            fprintf(stderr, "pc: out of memory\n");
            exit(2);
        }
    }
}

void pc_state_free(pc_state *s)
{
    for (unsigned t = 0; t < s->nthreads; t++) free(s->key[t]);
}

int pc_state_load(pc_state *s, const char *path, uint64_t seed, unsigned nthreads)
{
    pc_state_init(s, seed, nthreads);
    if (!strcmp(path, "-")) return 0;
    FILE *f = fopen(path, "rb");
    uint64_t hdr[4];
    if (!f || fread(hdr, sizeof hdr, 1, f) != 1 || hdr[0] != PC_STATE_MAGIC || hdr[1] != seed || hdr[2] != nthreads ||
        hdr[3] != PC_KEYS || fread(s->next, sizeof s->next, 1, f) != 1) {
        fprintf(stderr, "pc: state file %s is missing or not for seed %llu, %u threads\n", path,
                (unsigned long long)seed, nthreads);
        if (f) fclose(f);
        return -1;
    }
    for (unsigned t = 0; t < nthreads; t++)
        if (fread(s->key[t], sizeof(uint64_t), PC_KEYS, f) != PC_KEYS) {
            fprintf(stderr, "pc: state file %s is short\n", path);
            fclose(f);
            return -1;
        }
    fclose(f);
    return 0;
}

int pc_state_save(const pc_state *s, const char *path)
{
    FILE *f = fopen(path, "wb");
    uint64_t hdr[4] = {PC_STATE_MAGIC, s->seed, s->nthreads, PC_KEYS};
    int ok = f && fwrite(hdr, sizeof hdr, 1, f) == 1 && fwrite(s->next, sizeof s->next, 1, f) == 1;
    for (unsigned t = 0; ok && t < s->nthreads; t++) ok = fwrite(s->key[t], sizeof(uint64_t), PC_KEYS, f) == PC_KEYS;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok) fprintf(stderr, "pc: cannot write state file %s: %s\n", path, strerror(errno));
    return ok ? 0 : -1;
}

/* ---------------------------------------------------------------- options */

tkv_options *pc_options(const char *spec, char *err, size_t errlen)
{
    tkv_options *o = tkv_options_new();
    char *copy = strdup(spec ? spec : "");
    if (!o || !copy) {
        snprintf(err, errlen, "out of memory");
        tkv_options_free(o);
        free(copy);
        return NULL;
    }
    char *save = NULL;
    for (char *tok = strtok_r(copy, ", \t\n", &save); tok; tok = strtok_r(NULL, ", \t\n", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) {
            snprintf(err, errlen, "option \"%s\" is not name=value", tok);
            goto fail;
        }
        *eq = 0;
        if (tkv_options_set(o, tok, eq + 1) != TKV_OK) {
            snprintf(err, errlen, "option %s=%s: %s", tok, eq + 1, tkv_errmsg());
            goto fail;
        }
    }
    free(copy);
    return o;
fail:
    free(copy);
    tkv_options_free(o);
    return NULL;
}

double pc_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}
