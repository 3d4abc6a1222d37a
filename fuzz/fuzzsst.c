// SPDX-License-Identifier: Apache-2.0
/* fuzzsst.c -- SSTable helpers of the fuzz targets (fuzzsst.h). */
#include "fuzz/fuzzsst.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/fuzzutil.h"
#include "sst/table.h"
#include "util/checksum.h"
#include "util/status.h"

static fz_sst base;

/* build_base -- writes the base table with the table builder, reads it back. */
static void build_base(void)
{
    char path[512];
    fz_path(path, sizeof path, "base.sst");
    io_file *f;
    if (io_open_append(path, 0, IO_FLUSH, NULL, &f) < 0) fz_fail(__FILE__, __LINE__, tkv_errmsg());
    table_options o;
    table_options_default(&o);
    o.block_size = 256;
    o.restart_interval = 4;
    o.compression = SST_COMPRESS_LZ4;
    table_builder *b;
    if (table_builder_new(f, &o, &b) < 0) fz_fail(__FILE__, __LINE__, tkv_errmsg());
    for (unsigned i = 0; i < FZ_SST_KEYS; i++) {
        uint8_t ik[32], val[64];
        int kl = snprintf((char *)ik, sizeof ik, "key%05u", i);
        ikey_type t = i % 7 == 3 ? IKEY_DELETION : IKEY_VALUE;
        ikey_encode(ik, ik, (size_t)kl, 1000 + i, t);
        size_t vl = t == IKEY_VALUE ? 8 + i % 50 : 0;
        for (size_t j = 0; j < vl; j++) val[j] = (uint8_t)(i % 2 ? 'v' : (i * 31 + j * 17) % 251);
        if (table_builder_add(b, slice(ik, (size_t)kl + IKEY_TRAILER), slice(val, vl)) < 0)
            fz_fail(__FILE__, __LINE__, tkv_errmsg());
    }
    if (table_builder_finish(b) < 0) fz_fail(__FILE__, __LINE__, tkv_errmsg());
    table_builder_free(b);
    io_close(f);
    uint8_t *d;
    size_t n;
    if (io_read_file(path, IO_META, NULL, &d, &n) < 0) fz_fail(__FILE__, __LINE__, tkv_errmsg());
    base.file = d;
    base.size = n;
    if (table_decode_footer(path, n - SST_FOOTER_SIZE, d + n - SST_FOOTER_SIZE, &base.ft) < 0)
        fz_fail(__FILE__, __LINE__, tkv_errmsg());
    base.data_end = base.ft.filter.offset;
    io_remove(path);
}

const fz_sst *fz_sst_base(void)
{
    if (!base.file) build_base();
    return &base;
}

/* put_block -- appends a metadata block at *off; *h receives its handle. */
static void put_block(uint8_t *dst, size_t *off, const fz_block *b, block_handle own, block_handle *h)
{
    const fz_sst *s = &base;
    if (!b || !b->p) {
        memcpy(dst + *off, s->file + own.offset, (size_t)own.size + SST_TRAILER_SIZE);
        *h = (block_handle){*off, own.size};
        *off += (size_t)own.size + SST_TRAILER_SIZE;
        return;
    }
    memcpy(dst + *off, b->p, b->n);
    if (b->raw) {
        *h = (block_handle){*off, b->n >= SST_TRAILER_SIZE ? b->n - SST_TRAILER_SIZE : 0};
        *off += b->n;
        return;
    }
    dst[*off + b->n] = SST_COMPRESS_NONE;
    enc_u32(dst + *off + b->n + 1, tkv_checksum(dst + *off, b->n + 1));
    *h = (block_handle){*off, b->n};
    *off += b->n + SST_TRAILER_SIZE;
}

uint8_t *fz_sst_splice(const fz_block *filter, const fz_block *props, const fz_block *index, const uint8_t *footer,
                       size_t *out_n)
{
    const fz_sst *s = fz_sst_base();
    size_t cap = s->size + SST_FOOTER_SIZE + 3 * SST_TRAILER_SIZE;
    const fz_block *given[3] = {filter, props, index};
    for (int i = 0; i < 3; i++)
        if (given[i] && given[i]->p) cap += given[i]->n;
    uint8_t *f = malloc(cap);
    if (!f) return NULL;
    size_t off = (size_t)s->data_end;
    memcpy(f, s->file, off);
    table_footer ft;
    put_block(f, &off, filter, s->ft.filter, &ft.filter);
    put_block(f, &off, props, s->ft.props, &ft.props);
    put_block(f, &off, index, s->ft.index, &ft.index);
    if (footer) {
        memcpy(f + off, footer, SST_FOOTER_SIZE);
    } else {
        memset(f + off, 0, SST_FOOTER_SIZE);
        enc_u64(f + off, ft.index.offset);
        enc_u64(f + off + 8, ft.index.size);
        enc_u64(f + off + 16, ft.filter.offset);
        enc_u64(f + off + 24, ft.filter.size);
        enc_u64(f + off + 32, ft.props.offset);
        enc_u64(f + off + 40, ft.props.size);
        enc_u32(f + off + SST_FOOTER_VERSION_OFF, SST_FORMAT_VERSION);
        enc_u32(f + off + SST_FOOTER_CHECKSUM_OFF, tkv_checksum(f + off, SST_FOOTER_CHECKSUM_OFF));
        enc_u64(f + off + SST_FOOTER_MAGIC_OFF, SST_MAGIC);
    }
    *out_n = off + SST_FOOTER_SIZE;
    return f;
}

/* get_key -- table_get of one user key; the answer is not checked (the
 * table may be garbage), only that it is a legal one. */
static void get_key(table *t, tkv_slice ukey, tkv_buf *val)
{
    ikey_type type;
    int rc = table_get(t, ukey, IKEY_MAX_SEQ, &type, val);
    fz_check(rc == 0 || rc == 1 || rc == TKV_CORRUPTION || rc == TKV_INVALID || rc == TKV_NO_MEMORY,
             "table_get returned an unexpected code");
    if (rc == 1) fz_check(type == IKEY_VALUE || type == IKEY_DELETION, "table_get returned a bad type");
}

int fz_sst_read(const uint8_t *file, size_t n, tkv_slice probe)
{
    static tkv_cache *cache;
    if (!cache && !(cache = cache_new(1u << 20, 0))) return TKV_NO_MEMORY;
    char path[512];
    fz_path(path, sizeof path, "in.sst");
    fz_write_file(path, file, n, 0);
    io_file *f;
    if (io_open_read(path, IO_USER_READ, NULL, &f) < 0) fz_fail(__FILE__, __LINE__, tkv_errmsg());
    table *t;
    int rc = fz_note("table_open", table_open(f, n, cache, &t));
    if (rc < 0) {
        fz_check(rc == TKV_CORRUPTION || rc == TKV_NO_MEMORY, "table_open failed with an unexpected code");
        fz_check(t == NULL, "a failed table_open returned a table");
        return rc;
    }
    tkv_it *it = table_iter(t);
    if (it) {
        fz_walk(it, probe.n >= IKEY_TRAILER ? probe : slice(NULL, 0), 16);
        it_destroy(it);
    }
    tkv_buf val = {0};
    for (unsigned i = 0; i < FZ_SST_KEYS; i += 13) {
        char k[16];
        int kl = snprintf(k, sizeof k, "key%05u", i);
        get_key(t, slice(k, (size_t)kl), &val);
    }
    get_key(t, probe, &val);
    buf_free(&val);
    table_close(t);
    return 0;
}
