// SPDX-License-Identifier: Apache-2.0
/*
 * table_builder.c -- writes an SSTable: data blocks as keys arrive, then the
 * filter, range deletion (if any), properties and index blocks and the footer
 * (docs/format-sst.md).
 *
 * Invariants kept here:
 *  (1) keys are strictly increasing in ikey_cmp order (checked on every add);
 *  (2) the index entry of data block i is written when the first key of block
 *      i+1 arrives (or at finish), with a separator S such that
 *      last(i) <= S < first(i+1), and user(S) is either user(last(i)) or
 *      strictly between user(last(i)) and user(first(i+1)) -- so a lookup of
 *      (ukey, seq) finds the newest visible version of ukey in the one block
 *      the index points it to (table_reader.c relies on this);
 *  (3) every block is followed by its trailer [type][checksum(contents+type)];
 *  (4) the footer is the last thing written: a table without a valid footer is
 *      unfinished.
 */
#include <lz4.h>
#include <stdlib.h>

#include "sst/block.h"
#include "sst/bloom.h"
#include "sst/format.h"
#include "sst/table.h"
#include "util/checksum.h"
#include "util/status.h"

struct table_builder {
    io_file *f;
    table_options o;
    uint64_t base; /* f->size when the builder started */
    block_builder data;
    block_builder index;
    bloom_builder bloom;
    tkv_buf last_key;     /* the last key added */
    tkv_buf cbuf;         /* compressed block + trailer */
    tkv_buf meta;         /* filter / properties contents + trailer */
    tkv_buf sep;          /* separator scratch */
    block_handle pending; /* last data block, its index entry not yet written */
    int pending_index;
    int status; /* sticky error (< 0) */
    int finished;
    table_props props; /* counters (smallest/largest filled at finish) */
    tkv_buf smallest;
    rd_list rd; /* range tombstones, written at finish */
};

void table_options_default(table_options *o)
{
    o->block_size = 4096;
    o->restart_interval = 16;
    o->bloom_bits_per_key = 10;
    o->compression = SST_COMPRESS_NONE;
}

int table_builder_new(io_file *f, const table_options *o, table_builder **out)
{
    *out = NULL;
    table_options def;
    if (!o) {
        table_options_default(&def);
        o = &def;
    }
    if (!f) return tkv_err(TKV_INVALID, "table_builder_new: NULL file");
    if (o->block_size < 1 || o->block_size > (1u << 30))
        return tkv_err(TKV_INVALID, "block_size %zu out of range 1..1G", o->block_size);
    if (o->restart_interval < 1 || o->restart_interval > 65536)
        return tkv_err(TKV_INVALID, "restart_interval %d out of range 1..65536", o->restart_interval);
    if (o->bloom_bits_per_key < 0 || o->bloom_bits_per_key > 64)
        return tkv_err(TKV_INVALID, "bloom_bits_per_key %d out of range 0..64", o->bloom_bits_per_key);
    if (o->compression != SST_COMPRESS_NONE && o->compression != SST_COMPRESS_LZ4)
        return tkv_err(TKV_INVALID, "compression %d unknown (0 none, 1 lz4)", o->compression);
    table_builder *b = calloc(1, sizeof *b);
    if (!b) return tkv_err(TKV_NO_MEMORY, "out of memory allocating a table builder");
    b->f = f;
    b->o = *o;
    b->base = f->size;
    block_builder_init(&b->data, o->restart_interval);
    block_builder_init(&b->index, 1); /* index: a restart per entry, binary search only */
    bloom_builder_init(&b->bloom, o->bloom_bits_per_key);
    b->props.compression = (uint64_t)o->compression;
    *out = b;
    return 0;
}

void table_builder_free(table_builder *b)
{
    if (!b) return;
    block_builder_free(&b->data);
    block_builder_free(&b->index);
    bloom_builder_free(&b->bloom);
    buf_free(&b->last_key);
    buf_free(&b->cbuf);
    buf_free(&b->meta);
    buf_free(&b->sep);
    buf_free(&b->smallest);
    rd_list_free(&b->rd);
    free(b);
}

void table_builder_abandon(table_builder *b) { table_builder_free(b); }

uint64_t table_builder_file_size(const table_builder *b)
{
    uint64_t n = b->f->size - b->base;
    if (!b->finished && !block_builder_empty(&b->data)) n += block_builder_size(&b->data);
    return n;
}

uint64_t table_builder_num_entries(const table_builder *b) { return b->props.num_entries; }

/* sticky -- records the first error of the builder and returns it. */
static int sticky(table_builder *b, int rc)
{
    if (rc < 0 && b->status == 0) b->status = rc;
    return rc;
}

/* write_block -- writes `raw` (the contents in raw->data[0..len), with room to
 * grow) as one block + trailer, lz4-compressed when allowed and it saves at
 * least 1/8; fills *h. raw->len is restored before returning. */
static int write_block(table_builder *b, tkv_buf *raw, int allow_compress, block_handle *h, int *compressed)
{
    size_t rawlen = raw->len;
    tkv_buf *out = raw;
    uint8_t type = SST_COMPRESS_NONE;
    if (allow_compress && b->o.compression == SST_COMPRESS_LZ4 && rawlen > 0 && rawlen <= LZ4_MAX_INPUT_SIZE) {
        /* Stored lz4 block: varint uncompressed size, then the lz4 block. */
        int bound = LZ4_compressBound((int)rawlen);
        b->cbuf.len = 0;
        TKV_TRY(buf_reserve(&b->cbuf, 10 + (size_t)bound + SST_TRAILER_SIZE));
        uint8_t *p = enc_varint(b->cbuf.data, rawlen);
        size_t hdr = (size_t)(p - b->cbuf.data);
        int c = LZ4_compress_default((const char *)raw->data, (char *)p, (int)rawlen, bound);
        if (c > 0 && hdr + (size_t)c <= rawlen - rawlen / 8) {
            b->cbuf.len = hdr + (size_t)c;
            out = &b->cbuf;
            type = SST_COMPRESS_LZ4;
        }
    }
    size_t len = out->len;
    TKV_TRY(buf_reserve(out, SST_TRAILER_SIZE));
    out->data[len] = type;
    enc_u32(out->data + len + 1, tkv_checksum(out->data, len + 1));
    h->offset = b->f->size;
    h->size = len;
    int rc = io_append(b->f, out->data, len + SST_TRAILER_SIZE);
    raw->len = rawlen;
    if (compressed) *compressed = type != SST_COMPRESS_NONE;
    return rc;
}

/* flush_data -- writes the current data block; its index entry waits for the
 * next key (invariant 2). */
static int flush_data(table_builder *b)
{
    if (block_builder_empty(&b->data)) return 0;
    tkv_slice contents;
    TKV_TRY(block_builder_finish(&b->data, &contents));
    int compressed = 0;
    TKV_TRY(write_block(b, &b->data.buf, 1, &b->pending, &compressed));
    b->pending_index = 1;
    b->props.data_bytes += b->pending.size + SST_TRAILER_SIZE;
    b->props.num_data_blocks++;
    b->props.num_compressed_blocks += (uint64_t)compressed;
    block_builder_reset(&b->data);
    return 0;
}

/* make_separator -- into b->sep: a key S with a <= S < next (or, with next.n
 * == 0, any S >= a), shorter than a when a user key in between allows it
 * (invariant 2); otherwise a itself. */
static int make_separator(table_builder *b, tkv_slice a, tkv_slice next)
{
    tkv_slice ua = ikey_user(a);
    size_t cut = SIZE_MAX; /* keep ua[0..cut), then ua[cut] + 1 */
    if (next.n) {
        tkv_slice ub = ikey_user(next);
        size_t i = 0, lim = ua.n < ub.n ? ua.n : ub.n;
        while (i < lim && ua.p[i] == ub.p[i]) i++;
        /* ua < ub and they differ at i, so ua[i] < ub[i]; ua[i] + 1 < ub[i]
         * keeps the shortened key strictly below ub. */
        if (i < lim && ua.p[i] < 0xff && ua.p[i] + 1 < ub.p[i]) cut = i;
    } else {
        for (size_t i = 0; i < ua.n; i++)
            if (ua.p[i] != 0xff) {
                cut = i;
                break;
            }
    }
    b->sep.len = 0;
    if (cut == SIZE_MAX || cut + 1 >= ua.n) return buf_append(&b->sep, a.p, a.n);
    TKV_TRY(buf_reserve(&b->sep, cut + 1 + IKEY_TRAILER));
    memcpy(b->sep.data, ua.p, cut);
    b->sep.data[cut] = (uint8_t)(ua.p[cut] + 1);
    /* the smallest internal key of that user key */
    enc_u64(b->sep.data + cut + 1, ikey_pack(IKEY_MAX_SEQ, IKEY_SEEK_TYPE));
    b->sep.len = cut + 1 + IKEY_TRAILER;
    return 0;
}

/* add_pending_index -- writes the index entry of the last flushed block. */
static int add_pending_index(table_builder *b, tkv_slice next)
{
    if (!b->pending_index) return 0;
    TKV_TRY(make_separator(b, slice(b->last_key.data, b->last_key.len), next));
    uint8_t hbuf[SST_HANDLE_MAX_LEN];
    size_t hlen = (size_t)(handle_encode(hbuf, b->pending) - hbuf);
    TKV_TRY(block_builder_add(&b->index, slice(b->sep.data, b->sep.len), slice(hbuf, hlen)));
    b->pending_index = 0;
    return 0;
}

int table_builder_add(table_builder *b, tkv_slice ikey, tkv_slice value)
{
    if (b->status) return b->status;
    if (b->finished) return tkv_err(TKV_INVALID, "table_builder_add after finish (%s)", b->f->path);
    if (ikey.n < IKEY_TRAILER || ikey.n - IKEY_TRAILER > TKV_MAX_KEY_SIZE)
        return tkv_err(TKV_INVALID, "table_builder_add: bad internal key length %zu", ikey.n);
    if (value.n > TKV_MAX_VALUE_SIZE) return tkv_err(TKV_INVALID, "table_builder_add: value of %zu bytes", value.n);
    ikey_type type = ikey_get_type(ikey);
    if (type != IKEY_VALUE && type != IKEY_DELETION)
        return tkv_err(TKV_INVALID, "table_builder_add: bad key type %d", (int)type);
    tkv_slice last = slice(b->last_key.data, b->last_key.len);
    int first = b->props.num_entries == 0;
    if (!first && ikey_cmp(last, ikey) >= 0)
        return tkv_err(TKV_INVALID, "table_builder_add: keys out of order in %s", b->f->path);

    if (sticky(b, add_pending_index(b, ikey)) < 0) return b->status;
    if (first || ukey_cmp(ikey_user(last), ikey_user(ikey)) != 0)
        if (sticky(b, bloom_builder_add(&b->bloom, ikey_user(ikey))) < 0) return b->status;
    if (sticky(b, block_builder_add(&b->data, ikey, value)) < 0) return b->status;
    b->last_key.len = 0;
    if (sticky(b, buf_append(&b->last_key, ikey.p, ikey.n)) < 0) return b->status;
    if (first && sticky(b, buf_append(&b->smallest, ikey.p, ikey.n)) < 0) return b->status;

    uint64_t seq = ikey_seq(ikey);
    if (first || seq < b->props.min_seq) b->props.min_seq = seq;
    if (first || seq > b->props.max_seq) b->props.max_seq = seq;
    b->props.num_entries++;
    b->props.num_deletions += type == IKEY_DELETION;
    b->props.raw_key_bytes += ikey.n;
    b->props.raw_value_bytes += value.n;

    if (block_builder_size(&b->data) >= b->o.block_size) return sticky(b, flush_data(b));
    return 0;
}

int table_builder_add_range_dels(table_builder *b, const rd_tomb *t, size_t n)
{
    if (b->status) return b->status;
    if (b->finished) return tkv_err(TKV_INVALID, "table_builder_add_range_dels after finish (%s)", b->f->path);
    for (size_t i = 0; i < n; i++)
        if (t[i].begin.n == 0 || t[i].begin.n > RD_MAX_KEY || t[i].end.n == 0 || t[i].end.n > RD_MAX_KEY ||
            ukey_cmp(t[i].begin, t[i].end) >= 0 || t[i].seq == 0 || t[i].seq > IKEY_MAX_SEQ)
            return tkv_err(TKV_INVALID, "table_builder_add_range_dels: malformed tombstone (%s)", b->f->path);
    return sticky(b, rd_list_append(&b->rd, t, n));
}

/* encode_props -- the properties block contents (docs/format-sst.md). */
static int encode_props(table_builder *b, block_handle rd_h, tkv_buf *out)
{
    const table_props *p = &b->props;
    uint64_t v[] = {p->num_entries,     p->num_deletions, p->min_seq,         p->max_seq,     p->raw_key_bytes,
                    p->raw_value_bytes, p->data_bytes,    p->num_data_blocks, p->compression, p->num_compressed_blocks};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) TKV_TRY(buf_append_varint(out, v[i]));
    size_t lastlen = p->num_entries ? b->last_key.len : 0;
    TKV_TRY(buf_append_varint(out, b->smallest.len));
    TKV_TRY(buf_append(out, b->smallest.data, b->smallest.len));
    TKV_TRY(buf_append_varint(out, lastlen));
    TKV_TRY(buf_append(out, b->last_key.data, lastlen));
    if (b->rd.n == 0) return 0; /* format version 1 */
    TKV_TRY(buf_append_varint(out, b->rd.n));
    uint8_t h[SST_HANDLE_MAX_LEN];
    return buf_append(out, h, (size_t)(handle_encode(h, rd_h) - h));
}

/* finish -- steps in file order: last data block, filter, properties, index,
 * then the footer (invariant 4). */
static int finish(table_builder *b)
{
    block_handle filter_h, props_h, index_h, rd_h = {0, 0};
    TKV_TRY(flush_data(b));

    b->meta.len = 0;
    TKV_TRY(bloom_builder_finish(&b->bloom, &b->meta));
    TKV_TRY(write_block(b, &b->meta, 0, &filter_h, NULL));

    if (b->rd.n) { /* format version 2: the range deletion block */
        rd_list_sort(&b->rd);
        b->meta.len = 0;
        TKV_TRY(rd_encode(b->rd.t, b->rd.n, &b->meta));
        TKV_TRY(write_block(b, &b->meta, 0, &rd_h, NULL));
        b->props.num_range_dels = b->rd.n;
    }

    b->meta.len = 0;
    TKV_TRY(encode_props(b, rd_h, &b->meta));
    TKV_TRY(write_block(b, &b->meta, 0, &props_h, NULL));

    TKV_TRY(add_pending_index(b, slice(NULL, 0)));
    tkv_slice contents;
    TKV_TRY(block_builder_finish(&b->index, &contents));
    TKV_TRY(write_block(b, &b->index.buf, 0, &index_h, NULL));

    uint8_t foot[SST_FOOTER_SIZE];
    enc_u64(foot + 0, index_h.offset);
    enc_u64(foot + 8, index_h.size);
    enc_u64(foot + 16, filter_h.offset);
    enc_u64(foot + 24, filter_h.size);
    enc_u64(foot + 32, props_h.offset);
    enc_u64(foot + 40, props_h.size);
    enc_u32(foot + SST_FOOTER_VERSION_OFF, b->rd.n ? SST_FORMAT_VERSION_RD : SST_FORMAT_VERSION);
    enc_u32(foot + SST_FOOTER_CHECKSUM_OFF, tkv_checksum(foot, SST_FOOTER_CHECKSUM_OFF));
    enc_u64(foot + SST_FOOTER_MAGIC_OFF, SST_MAGIC);
    return io_append(b->f, foot, sizeof foot);
}

int table_builder_finish(table_builder *b)
{
    if (b->status) return b->status;
    if (b->finished) return tkv_err(TKV_INVALID, "table_builder_finish called twice (%s)", b->f->path);
    int rc = sticky(b, finish(b));
    b->finished = 1;
    return rc;
}
