// SPDX-License-Identifier: Apache-2.0
/*
 * readopts.c -- the tkv_read_options object: constructor, setters, and the
 * table read flags the read path sets from it (readopts.h).
 */
#include "db/readopts.h"

#include <stdlib.h>
#include <string.h>

#include "db/options.h"
#include "sst/table.h"
#include "util/status.h"

tkv_read_options *tkv_read_options_new(void)
{
    tkv_read_options *ro = calloc(1, sizeof *ro);
    if (!ro) {
        tkv_err(TKV_NO_MEMORY, "out of memory for read options");
        return NULL;
    }
    ro->fill_cache = 1;
    ro->verify_checksums = 1;
    return ro;
}

void tkv_read_options_free(tkv_read_options *ro)
{
    if (!ro) return;
    buf_free(&ro->lower);
    buf_free(&ro->upper);
    free(ro);
}

void tkv_read_options_set_snapshot(tkv_read_options *ro, const tkv_snapshot *snap)
{
    if (ro) ro->snap = snap;
}

/* set_bound -- copies one bound (NULL: none). 0 or TKV_NO_MEMORY. */
static int set_bound(tkv_buf *b, int *has, const void *key, size_t klen)
{
    b->len = 0;
    *has = 0;
    if (!key) return 0;
    TKV_TRY(buf_append(b, key, klen));
    *has = 1;
    return 0;
}

int tkv_read_options_set_bounds(tkv_read_options *ro, const void *lower, size_t llen, const void *upper, size_t ulen)
{
    if (!ro) return tkv_err(TKV_INVALID, "tkv_read_options_set_bounds: NULL read options");
    if ((lower && llen > TKV_MAX_KEY_SIZE) || (upper && ulen > TKV_MAX_KEY_SIZE))
        return tkv_err(TKV_INVALID, "tkv_read_options_set_bounds: a bound of %zu bytes is longer than a key may be",
                       lower && llen > TKV_MAX_KEY_SIZE ? llen : ulen);
    if (!lower && llen)
        return tkv_err(TKV_INVALID, "tkv_read_options_set_bounds: NULL lower bound with length %zu", llen);
    if (!upper && ulen)
        return tkv_err(TKV_INVALID, "tkv_read_options_set_bounds: NULL upper bound with length %zu", ulen);
    if (lower && upper) {
        size_t n = llen < ulen ? llen : ulen;
        int c = n ? memcmp(lower, upper, n) : 0;
        if (c > 0 || (c == 0 && llen > ulen))
            return tkv_err(TKV_INVALID, "tkv_read_options_set_bounds: the lower bound is above the upper bound");
    }
    int rc = set_bound(&ro->lower, &ro->has_lower, lower, llen);
    if (rc == 0) rc = set_bound(&ro->upper, &ro->has_upper, upper, ulen);
    if (rc) {
        ro->has_lower = ro->has_upper = 0; /* never half set */
        return tkv_err(TKV_NO_MEMORY, "tkv_read_options_set_bounds: out of memory");
    }
    return TKV_OK;
}

int tkv_read_options_set(tkv_read_options *ro, const char *name, const char *value)
{
    if (!ro || !name || !value) return tkv_err(TKV_INVALID, "tkv_read_options_set: NULL argument");
    int *field = strcmp(name, "fill_cache") == 0         ? &ro->fill_cache
                 : strcmp(name, "verify_checksums") == 0 ? &ro->verify_checksums
                                                         : NULL;
    if (!field) return tkv_err(TKV_INVALID, "unknown read option \"%s\" (fill_cache, verify_checksums)", name);
    uint64_t v;
    if (options_parse_bool(value, &v))
        return tkv_err(TKV_INVALID, "read option %s: \"%s\" is not a boolean (0, 1, false, true, off, on, no, yes)",
                       name, value);
    *field = (int)v;
    return TKV_OK;
}

unsigned readopts_table_flags(const tkv_read_options *ro)
{
    if (!ro) return 0;
    return (ro->fill_cache ? 0 : TABLE_READ_NO_FILL) | (ro->verify_checksums ? 0 : TABLE_READ_NO_VERIFY);
}
