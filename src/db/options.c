// SPDX-License-Identifier: Apache-2.0
/*
 * options.c -- the option table, tkv_options_new/set/free, value parsers,
 * and values derived from options (level targets, the pool's path).
 *
 * To add an option: a field in struct tkv_options (options.h), a row in
 * OPTION_TABLE below (with range and default), and a line in docs/options.md.
 */
#include "db/options.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/coding.h"
#include "util/status.h"

/* OPT_SIZE_AUTO: a size in [min, max], or 0 for a value derived at open
 * (options_resolve_at_open). OPT_SIZE_OFF: a size in [min, max], or 0 for
 * "off". */
typedef enum opt_kind { OPT_BOOL, OPT_INT, OPT_SIZE, OPT_SIZE_AUTO, OPT_SIZE_OFF, OPT_ENUM, OPT_STRING } opt_kind;

typedef struct opt_def {
    const char *name;
    opt_kind kind;
    size_t offset;
    uint64_t min, max;
    const char *deflt;
    const char *const *names; /* OPT_ENUM: value i is names[i] (NULL-terminated) */
} opt_def;

static const char *const COMPRESSION_NAMES[] = {"none", "lz4", NULL};
/* l1_compression: a codec, or "same" (index 2): what `compression` says */
static const char *const L1_COMPRESSION_NAMES[] = {"none", "lz4", "same", NULL};
static const char *const L0_NAMES[] = {"sst", "matrix", NULL};
/* The order of emul/pmem.h's pm_mode and pm_profile. crashsim is for tests
 * (a power cut at the N-th persist, docs/pmem.md). */
static const char *const PMEM_MODE_NAMES[] = {"auto", "pmem", "emulated", "msync", "crashsim", "volatile", NULL};
static const char *const PROFILE_NAMES[] = {"none", "optane", NULL};
static const char *const SCHED_NAMES[] = {"silk", "fifo", NULL};
static const char *const COLUMN_GATE_NAMES[] = {"idle", "always", NULL};
static const char *const WCTL_NAMES[] = {"prl", "classic", "off", NULL};
static const char *const LATCAP_NAMES[] = {"auto", "on", "off", NULL};
static const char *const ASYNC_NAMES[] = {"auto", "on", "off", NULL};

#define OFF(f) offsetof(struct tkv_options, f)
static const opt_def OPTION_TABLE[] = {
    {"create_if_missing", OPT_BOOL, OFF(create_if_missing), 0, 1, "1", NULL},
    {"error_if_exists", OPT_BOOL, OFF(error_if_exists), 0, 1, "0", NULL},
    {"read_only", OPT_BOOL, OFF(read_only), 0, 1, "0", NULL},
    {"memtable_size", OPT_SIZE, OFF(memtable_size), 16u << 10, UINT64_C(4) << 30, "64M", NULL},
    {"memtables", OPT_INT, OFF(memtables), 2, 64, "2", NULL},
    {"wal", OPT_BOOL, OFF(wal), 0, 1, "1", NULL},
    {"sync", OPT_BOOL, OFF(sync), 0, 1, "0", NULL},
    {"wal_mmap", OPT_BOOL, OFF(wal_mmap), 0, 1, "1", NULL},
    {"wal_recycle", OPT_INT, OFF(wal_recycle), 0, DB_WAL_RECYCLE_MAX, "2", NULL},
    {"paranoid_checks", OPT_BOOL, OFF(paranoid_checks), 0, 1, "1", NULL},
    {"dram_budget", OPT_SIZE_OFF, OFF(dram_budget), 4u << 20, UINT64_C(1) << 40, "0", NULL},
    {"block_size", OPT_SIZE, OFF(block_size), 256, 16u << 20, "4K", NULL},
    {"block_cache_size", OPT_SIZE, OFF(block_cache_size), 0, UINT64_C(1) << 40, "256M", NULL},
    {"bloom_bits_per_key", OPT_INT, OFF(bloom_bits_per_key), 0, 64, "10", NULL},
    {"compression", OPT_ENUM, OFF(compression), 0, 1, "lz4", COMPRESSION_NAMES},
    {"l1_compression", OPT_ENUM, OFF(l1_compression), 0, 2, "same", L1_COMPRESSION_NAMES},
    {"sst_size", OPT_SIZE, OFF(sst_size), 64u << 10, UINT64_C(4) << 30, "64M", NULL},
    {"l1_size", OPT_SIZE_AUTO, OFF(l1_size), 64u << 10, UINT64_C(1) << 44, "0", NULL},
    {"level_multiplier", OPT_INT, OFF(level_multiplier), 2, 100, "10", NULL},
    {"l0_compaction_trigger", OPT_INT, OFF(l0_compaction_trigger), 1, 1000, "4", NULL},
    {"l0_slowdown_trigger", OPT_INT, OFF(l0_slowdown_trigger), 1, 1000, "8", NULL},
    {"l0_stop_trigger", OPT_INT, OFF(l0_stop_trigger), 1, 1000, "12", NULL},
    {"max_open_files", OPT_INT, OFF(max_open_files), 16, 1000000, "1000", NULL},
    {"preload_tables", OPT_BOOL, OFF(preload_tables), 0, 1, "1", NULL},
    {"bytes_per_sync", OPT_SIZE, OFF(bytes_per_sync), 0, UINT64_C(1) << 40, "1M", NULL},
    {"wal_bytes_per_sync", OPT_SIZE, OFF(wal_bytes_per_sync), 0, UINT64_C(1) << 40, "0", NULL},
    {"delete_chunk", OPT_SIZE, OFF(delete_chunk), 0, UINT64_C(1) << 40, "4M", NULL},
    {"delete_rate", OPT_SIZE, OFF(delete_rate), 0, UINT64_C(1) << 40, "256M", NULL},
    {"direct_io", OPT_BOOL, OFF(direct_io), 0, 1, "0", NULL},
    {"async_io", OPT_ENUM, OFF(async_io), 0, 2, "auto", ASYNC_NAMES},
    {"statistics", OPT_BOOL, OFF(statistics), 0, 1, "0", NULL},
    {"l0", OPT_ENUM, OFF(l0), 0, 1, "matrix", L0_NAMES},
    {"pmem_path", OPT_STRING, OFF(pmem_path), 0, sizeof(((struct tkv_options *)0)->pmem_path) - 1, "", NULL},
    {"pmem_size", OPT_SIZE, OFF(pmem_size), 0, UINT64_C(1) << 40, "0", NULL},
    {"pmem_mode", OPT_ENUM, OFF(pmem_mode), 0, 5, "auto", PMEM_MODE_NAMES},
    {"emul_profile", OPT_ENUM, OFF(emul_profile), 0, 1, "none", PROFILE_NAMES},
    {"pmem_writeback", OPT_SIZE, OFF(pmem_writeback), 0, UINT64_C(1) << 40, "256M", NULL},
    {"column_bytes", OPT_SIZE, OFF(column_bytes), 0, UINT64_C(1) << 40, "0", NULL},
    {"matrix_trigger", OPT_INT, OFF(matrix_trigger), 1, 100, "50", NULL},
    {"row_filter", OPT_BOOL, OFF(row_filter), 0, 1, "1", NULL},
    {"row_compression", OPT_ENUM, OFF(row_compression), 0, 1, "lz4", COMPRESSION_NAMES},
    {"seek_hints", OPT_BOOL, OFF(seek_hints), 0, 1, "1", NULL},
    {"column_threads", OPT_INT, OFF(column_threads), 1, 8, "2", NULL},
    {"column_gate", OPT_ENUM, OFF(column_gate), 0, 1, "idle", COLUMN_GATE_NAMES},
    {"scheduler", OPT_ENUM, OFF(scheduler), 0, 1, "silk", SCHED_NAMES},
    {"write_controller", OPT_ENUM, OFF(write_controller), 0, 2, "prl", WCTL_NAMES},
    {"device_bandwidth", OPT_SIZE, OFF(device_bandwidth), 0, UINT64_C(1) << 40, "0", NULL},
    {"adapt_bandwidth", OPT_BOOL, OFF(adapt_bandwidth), 0, 1, "0", NULL},
    {"min_internal_bandwidth", OPT_SIZE, OFF(min_internal_bandwidth), 1u << 20, UINT64_C(1) << 40, "32M", NULL},
    {"sched_epsilon", OPT_SIZE, OFF(sched_epsilon), 0, UINT64_C(1) << 40, "10M", NULL},
    {"sched_threshold", OPT_SIZE, OFF(sched_threshold), 0, UINT64_C(1) << 40, "10M", NULL},
    {"sched_latency", OPT_ENUM, OFF(sched_latency), 0, 2, "auto", LATCAP_NAMES},
    {"sched_latency_factor", OPT_INT, OFF(sched_latency_factor), 110, 10000, "200", NULL},
    {"deep_reserved_bandwidth", OPT_SIZE, OFF(deep_reserved_bandwidth), 0, UINT64_C(1) << 40, "4M", NULL},
    {"l0_reserved_bandwidth", OPT_SIZE, OFF(l0_reserved_bandwidth), 0, UINT64_C(1) << 40, "4M", NULL},
    {"pmem_bandwidth", OPT_SIZE, OFF(pmem_bandwidth), 0, UINT64_C(1) << 40, "0", NULL},
    {"compaction_threads", OPT_INT, OFF(compaction_threads), 1, 16, "2", NULL},
    {"deep_yield_wait", OPT_INT, OFF(deep_yield_wait), 0, 60000, "2000", NULL},
    {"background_nice", OPT_INT, OFF(background_nice), 0, 19, "10", NULL},
    {"background_slice", OPT_INT, OFF(background_slice), 0, 100000, "6000", NULL},
    {"compaction_readahead", OPT_SIZE, OFF(compaction_readahead), 0, 64u << 20, "256K", NULL},
    {"ssd_bandwidth", OPT_SIZE, OFF(ssd_bandwidth), 0, UINT64_C(1) << 40, "0", NULL},
};
#define N_OPTIONS (sizeof OPTION_TABLE / sizeof OPTION_TABLE[0])
_Static_assert(N_OPTIONS <= 64, "user_set has one bit per option");

int options_parse_size(const char *s, uint64_t *out)
{
    if (!s || !*s || !isdigit((unsigned char)*s)) return TKV_INVALID;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno) return TKV_INVALID;
    unsigned shift = 0;
    if (*end) {
        switch (toupper((unsigned char)*end)) {
        case 'K':
            shift = 10;
            break;
        case 'M':
            shift = 20;
            break;
        case 'G':
            shift = 30;
            break;
        case 'T':
            shift = 40;
            break;
        default:
            return TKV_INVALID;
        }
        end++;
        if (*end == 'B' || *end == 'b') end++; /* "64MB" */
        if (*end) return TKV_INVALID;
    }
    if (shift && v > (UINT64_MAX >> shift)) return TKV_INVALID;
    *out = (uint64_t)v << shift;
    return 0;
}

/* options_parse_bool: options.h */
int options_parse_bool(const char *s, uint64_t *out)
{
    static const char *yes[] = {"1", "true", "on", "yes"}, *no[] = {"0", "false", "off", "no"};
    for (size_t i = 0; i < 4; i++) {
        if (!strcasecmp(s, yes[i])) {
            *out = 1;
            return 0;
        }
        if (!strcasecmp(s, no[i])) {
            *out = 0;
            return 0;
        }
    }
    return TKV_INVALID;
}

/* store_string -- an OPT_STRING value (length checked against d->max). */
static int store_string(struct tkv_options *o, const opt_def *d, const char *value)
{
    size_t n = strlen(value);
    if (n > d->max)
        return tkv_err(TKV_INVALID, "option %s: value of %zu bytes is longer than %llu", d->name, n,
                       (unsigned long long)d->max);
    memcpy((char *)o + d->offset, value, n + 1);
    return 0;
}

static int is_size(const opt_def *d)
{
    return d->kind == OPT_SIZE || d->kind == OPT_SIZE_AUTO || d->kind == OPT_SIZE_OFF;
}
static int zero_ok(const opt_def *d) { return d->kind == OPT_SIZE_AUTO || d->kind == OPT_SIZE_OFF; }

static void store(struct tkv_options *o, const opt_def *d, uint64_t v)
{
    char *field = (char *)o + d->offset;
    if (is_size(d)) memcpy(field, &v, sizeof(uint64_t));
    else {
        int iv = (int)v;
        memcpy(field, &iv, sizeof(int));
    }
}

static uint64_t load(const struct tkv_options *o, const opt_def *d)
{
    const char *field = (const char *)o + d->offset;
    if (is_size(d)) {
        uint64_t v;
        memcpy(&v, field, sizeof v);
        return v;
    }
    int iv;
    memcpy(&iv, field, sizeof iv);
    return (uint64_t)iv;
}

/* set_one -- parses and range-checks one value; o unchanged on error. */
static int set_one(struct tkv_options *o, const opt_def *d, const char *value)
{
    uint64_t v;
    int rc;
    if (d->kind == OPT_STRING) return store_string(o, d, value);
    if (d->kind == OPT_BOOL) rc = options_parse_bool(value, &v);
    else if (d->kind == OPT_ENUM) {
        rc = TKV_INVALID;
        for (v = 0; d->names[v]; v++)
            if (!strcasecmp(d->names[v], value)) {
                rc = 0;
                break;
            }
        if (rc < 0) return tkv_err(TKV_INVALID, "option %s: unknown value \"%s\"", d->name, value);
    } else rc = options_parse_size(value, &v); /* ints accept plain digits; suffixes are harmless */
    if (rc < 0)
        return tkv_err(TKV_INVALID, "option %s: cannot parse \"%s\" (%s)", d->name, value,
                       d->kind == OPT_BOOL ? "expected 1/0/true/false/on/off/yes/no"
                       : is_size(d)        ? "expected a size such as 4096, 64K, 64M, 1G"
                                           : "expected a non-negative integer");
    if ((v < d->min || v > d->max) && !(zero_ok(d) && v == 0))
        return tkv_err(TKV_INVALID, "option %s: %s is out of range [%llu, %llu]%s", d->name, value,
                       (unsigned long long)d->min, (unsigned long long)d->max,
                       d->kind == OPT_SIZE_AUTO  ? " (or 0: automatic)"
                       : d->kind == OPT_SIZE_OFF ? " (or 0: off)"
                                                 : "");
    store(o, d, v);
    return 0;
}

void options_init_defaults(struct tkv_options *o)
{
    memset(o, 0, sizeof *o);
    for (size_t i = 0; i < N_OPTIONS; i++) {
        int rc = set_one(o, &OPTION_TABLE[i], OPTION_TABLE[i].deflt);
        (void)rc; /* defaults are valid by construction (tests/test_options checks) */
    }
}

tkv_options *tkv_options_new(void)
{
    struct tkv_options *o = malloc(sizeof *o);
    if (!o) {
        tkv_err(TKV_NO_MEMORY, "out of memory allocating options");
        return NULL;
    }
    options_init_defaults(o);
    return o;
}

void tkv_options_free(tkv_options *o) { free(o); }

int tkv_options_set(tkv_options *o, const char *name, const char *value)
{
    if (!o || !name || !value) return tkv_err(TKV_INVALID, "tkv_options_set: NULL argument");
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (!strcmp(OPTION_TABLE[i].name, name)) {
            TKV_TRY(set_one(o, &OPTION_TABLE[i], value));
            o->user_set |= UINT64_C(1) << i;
            return 0;
        }
    return tkv_err(TKV_INVALID, "unknown option \"%s\" (see docs/options.md)", name);
}

int tkv_options_set_listener(tkv_options *o, tkv_event_fn fn, void *arg)
{
    if (!o) return tkv_err(TKV_INVALID, "tkv_options_set_listener: NULL options");
    o->listener = fn;
    o->listener_arg = fn ? arg : NULL;
    return TKV_OK;
}

int options_user_set(const struct tkv_options *o, const char *name)
{
    for (size_t i = 0; i < N_OPTIONS; i++)
        if (!strcmp(OPTION_TABLE[i].name, name)) return (int)(o->user_set >> i & 1);
    return 0;
}

char *options_describe(const struct tkv_options *o)
{
    tkv_buf b = {0};
    char line[256];
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const opt_def *d = &OPTION_TABLE[i];
        if (d->kind == OPT_STRING) {
            const char *str = (const char *)o + d->offset;
            if (buf_append(&b, d->name, strlen(d->name)) < 0 || buf_append(&b, "=", 1) < 0 ||
                buf_append(&b, str, strlen(str)) < 0 || buf_append(&b, "\n", 1) < 0) {
                buf_free(&b);
                return NULL;
            }
            continue;
        }
        uint64_t v = load(o, d);
        int n = d->kind == OPT_ENUM ? snprintf(line, sizeof line, "%s=%s\n", d->name, d->names[v])
                                    : snprintf(line, sizeof line, "%s=%llu\n", d->name, (unsigned long long)v);
        if (buf_append(&b, line, (size_t)n) < 0) {
            buf_free(&b);
            return NULL;
        }
    }
    if (buf_append(&b, "", 1) < 0) {
        buf_free(&b);
        return NULL;
    }
    return (char *)b.data;
}

uint64_t options_level_target(const struct tkv_options *o, int level)
{
    uint64_t t = o->l1_size;
    for (int l = 1; l < level; l++)
        t = t > UINT64_MAX / (uint64_t)o->level_multiplier ? UINT64_MAX : t * (uint64_t)o->level_multiplier;
    return t;
}

void options_resolve_at_open(struct tkv_options *o, uint64_t pool_size)
{
    /* MatrixKV's flattened tree: L1 as large as the container above it, so
     * that a column merges the rows with about one pool's worth of L1. */
    if (o->l1_size == 0) o->l1_size = o->l0 == L0_MATRIX && pool_size ? pool_size : OPTIONS_L1_SIZE_SST;
}

char *options_pmem_path(const struct tkv_options *o, const char *dir)
{
    if (o->pmem_path[0]) return strdup(o->pmem_path);
    size_t n = strlen(dir) + sizeof "/matrix.pmem";
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/matrix.pmem", dir);
    return p;
}
