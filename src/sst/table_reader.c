// SPDX-License-Identifier: Apache-2.0
/*
 * table_reader.c -- opens an SSTable (footer, index, filter, properties are
 * read, verified and kept in memory) and serves point lookups over its data
 * blocks, through the block cache when one is given. The iterator is in
 * table_iter.c; what both share is in table_int.h.
 *
 * Every block read verifies the trailer checksum before anything else looks at
 * the bytes (before decompression too); any mismatch or malformed structure is
 * TKV_CORRUPTION with a message naming the file and the block offset.
 */
#include <lz4.h>
#include <stdlib.h>
#include <string.h>

#include "sst/bloom.h"
#include "sst/table_int.h"
#include "util/checksum.h"
#include "util/status.h"

/* corrupt_at -- TKV_CORRUPTION naming the file, the offset and what was wrong. */
static int corrupt_at(const char *path, uint64_t off, const char *what, const char *detail)
{
    return tkv_err(TKV_CORRUPTION, "%s: corrupt %s at offset %llu: %s", path, what, (unsigned long long)off, detail);
}

int table_corrupt(const table *t, uint64_t off, const char *what, const char *detail)
{
    return corrupt_at(t->f->path, off, what, detail);
}

/* handle_in_range -- 1 if block h (with its trailer) lies inside [0, end). */
static int handle_in_range(block_handle h, uint64_t end)
{
    return end >= SST_TRAILER_SIZE && h.size <= end - SST_TRAILER_SIZE && h.offset <= end - SST_TRAILER_SIZE - h.size;
}

static int decode_block(const char *path, block_handle h, const uint8_t *p, size_t got, const char *what, int verify,
                        cached_block *raw, cached_block **out);

/* The calling thread's read flags (table.h). */
static _Thread_local unsigned read_flags;

unsigned table_read_flags_set(unsigned flags)
{
    unsigned old = read_flags;
    read_flags = flags;
    return old;
}

/* table_decode_block: table_int.h */
int table_decode_block(const char *path, block_handle h, const uint8_t *p, size_t got, const char *what,
                       cached_block *raw, cached_block **out)
{
    return decode_block(path, h, p, got, what, 1, raw, out);
}

/* decode_block -- table_decode_block, the trailer checksum checked only if
 * `verify`. */
static int decode_block(const char *path, block_handle h, const uint8_t *p, size_t got, const char *what, int verify,
                        cached_block *raw, cached_block **out)
{
    *out = NULL;
    size_t n = (size_t)h.size + SST_TRAILER_SIZE;
    int rc;
    cached_block *blk = NULL;
    if (got < n) {
        rc = corrupt_at(path, h.offset, what, "truncated file (block extends past the end)");
        goto fail;
    }
    uint8_t type = p[h.size];
    if (verify && tkv_checksum(p, (size_t)h.size + 1) != dec_u32(p + h.size + 1)) {
        rc = corrupt_at(path, h.offset, what, "checksum mismatch");
        goto fail;
    }
    if (type == SST_COMPRESS_NONE) {
        if (!raw && !(raw = block_mem_alloc((size_t)h.size))) {
            rc = tkv_err(TKV_NO_MEMORY, "%s: out of memory for a %zu-byte block", path, n);
            goto fail;
        }
        if (p != raw->data) memcpy(raw->data, p, (size_t)h.size);
        raw->size = (size_t)h.size;
        *out = raw;
        return 0;
    }
    if (type != SST_COMPRESS_LZ4) {
        rc = corrupt_at(path, h.offset, what, "unknown compression type");
        goto fail;
    }
    /* lz4 payload: varint uncompressed size, then the lz4 block. lz4 expands at
     * most ~255x, which bounds the allocation a bad size could ask for. */
    uint64_t ulen;
    const uint8_t *q = dec_varint(p, p + h.size, &ulen);
    size_t clen = q ? (size_t)(p + h.size - q) : 0;
    if (!q || ulen > UINT32_MAX || ulen > (uint64_t)clen * 255 + 16 || clen > LZ4_MAX_INPUT_SIZE) {
        rc = corrupt_at(path, h.offset, what, "bad compressed block header");
        goto fail;
    }
    if (!(blk = block_mem_alloc((size_t)ulen))) {
        rc = tkv_err(TKV_NO_MEMORY, "%s: out of memory decompressing a block", path);
        goto fail;
    }
    int d = LZ4_decompress_safe((const char *)q, (char *)blk->data, (int)clen, (int)ulen);
    if (d < 0 || (uint64_t)d != ulen) {
        block_mem_free(blk);
        rc = corrupt_at(path, h.offset, what, "lz4 decompression failed");
        goto fail;
    }
    block_mem_free(raw);
    *out = blk;
    return 0;
fail:
    block_mem_free(raw);
    return rc;
}

/* data_verify -- whether a block read now checks its trailer checksum: always
 * but for data blocks read with TABLE_READ_NO_VERIFY. */
static int data_verify(const char *what)
{
    return !(read_flags & TABLE_READ_NO_VERIFY) || strcmp(what, "data block") != 0;
}

/* read_block -- reads block h and its trailer with io_pread and decodes it
 * (table_decode_block); `end` bounds where the block may lie. */
static int read_block(table *t, block_handle h, uint64_t end, const char *what, cached_block **out)
{
    *out = NULL;
    if (!handle_in_range(h, end)) return table_corrupt(t, h.offset, what, "block handle out of range");
    size_t n = (size_t)h.size + SST_TRAILER_SIZE;
    cached_block *raw = block_mem_alloc(n);
    if (!raw) return tkv_err(TKV_NO_MEMORY, "%s: out of memory reading a %zu-byte block", t->f->path, n);
    size_t got = 0;
    int rc = io_pread(t->f, h.offset, raw->data, n, &got);
    if (rc < 0) {
        block_mem_free(raw);
        return rc;
    }
    return decode_block(t->f->path, h, raw->data, got, what, data_verify(what), raw, out);
}

static void block_deleter(const void *key, size_t klen, void *value)
{
    (void)key;
    (void)klen;
    block_mem_free(value);
}

/* block_key -- the block cache key of block h of t. */
static void block_key(const table *t, block_handle h, uint8_t key[16])
{
    enc_u64(key, t->cache_id);
    enc_u64(key + 8, h.offset);
}

int table_block_cached(table *t, block_handle h, table_block *r)
{
    r->blk = NULL;
    r->h = NULL;
    if (!t->cache) return 0;
    uint8_t key[16];
    block_key(t, h, key);
    cache_handle *ch = cache_lookup(t->cache, key, sizeof key);
    if (!ch) return 0;
    table_stat_add(&t->st_cache_hits);
    r->h = ch;
    r->blk = cache_value(ch);
    return 1;
}

/* keep_block -- a data block just read: counted, then cached (r pins it) or
 * owned by r when there is no cache or the insert fails. */
static void keep_block(table *t, block_handle h, cached_block *blk, table_block *r)
{
    table_stat_add(&t->st_block_reads);
    r->blk = blk;
    r->h = NULL;
    if (!t->cache || (read_flags & (TABLE_READ_NO_FILL | TABLE_READ_NO_VERIFY))) return; /* unverified: never shared */
    uint8_t key[16];
    block_key(t, h, key);
    r->h = cache_insert(t->cache, key, sizeof key, blk, blk->size, block_deleter); /* NULL: we own it */
}

int table_data_block(table *t, block_handle h, table_block *r)
{
    if (table_block_cached(t, h, r)) return 0;
    cached_block *blk;
    TKV_TRY(read_block(t, h, t->data_end, "data block", &blk));
    keep_block(t, h, blk, r);
    return 0;
}

int table_block_parse(table *t, block_handle h, const uint8_t *p, size_t got, table_block *r)
{
    r->blk = NULL;
    r->h = NULL;
    if (!handle_in_range(h, t->data_end)) return table_corrupt(t, h.offset, "data block", "block handle out of range");
    cached_block *blk;
    TKV_TRY(decode_block(t->f->path, h, p, got, "data block", data_verify("data block"), NULL, &blk));
    keep_block(t, h, blk, r);
    return 0;
}

/* table_block_release, table_index_handle: table_int.h */
void table_block_release(table *t, table_block *r)
{
    if (r->h) cache_release(t->cache, r->h);
    else block_mem_free(r->blk);
    r->blk = NULL;
    r->h = NULL;
}

int table_index_handle(table *t, const block_iter *ix, block_handle *h)
{
    tkv_slice v = block_iter_value(ix);
    const uint8_t *p = handle_decode(v.p, v.p + v.n, h);
    if (!p || p != v.p + v.n) return table_corrupt(t, t->index_h.offset, "index block", "malformed block handle");
    if (!handle_in_range(*h, t->data_end))
        return table_corrupt(t, t->index_h.offset, "index block", "data block handle out of range");
    return 0;
}

/* ---------------------------------------------------------------- open/close */

/* parse_rd_props -- format version 2's two more properties: the range
 * tombstone count (> 0) and the range deletion block's handle. */
static const uint8_t *parse_rd_props(table *t, const uint8_t *p, const uint8_t *limit)
{
    if (t->version < SST_FORMAT_VERSION_RD) return p;
    if (!(p = dec_varint(p, limit, &t->props.num_range_dels)) || !(p = handle_decode(p, limit, &t->rd_h))) return NULL;
    return t->props.num_range_dels ? p : NULL;
}

/* parse_props -- decodes the properties block into t->props. */
static int parse_props(table *t, const cached_block *pb, uint64_t off)
{
    const uint8_t *p = pb->data, *limit = pb->data + pb->size;
    table_props *pr = &t->props;
    uint64_t *fields[] = {&pr->num_entries,   &pr->num_deletions,        &pr->min_seq,    &pr->max_seq,
                          &pr->raw_key_bytes, &pr->raw_value_bytes,      &pr->data_bytes, &pr->num_data_blocks,
                          &pr->compression,   &pr->num_compressed_blocks};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (!(p = dec_varint(p, limit, fields[i]))) return table_corrupt(t, off, "properties block", "truncated field");
    tkv_buf *keys[] = {&pr->smallest, &pr->largest};
    for (int i = 0; i < 2; i++) {
        uint64_t n;
        if (!(p = dec_varint(p, limit, &n)) || n > (uint64_t)(limit - p))
            return table_corrupt(t, off, "properties block", "truncated key");
        if (pr->num_entries ? n < IKEY_TRAILER : n != 0)
            return table_corrupt(t, off, "properties block", "bad smallest/largest key");
        TKV_TRY(buf_append(keys[i], p, (size_t)n));
        p += n;
    }
    if (!(p = parse_rd_props(t, p, limit)))
        return table_corrupt(t, off, "properties block", "truncated or empty range deletion fields");
    if (p != limit) return table_corrupt(t, off, "properties block", "trailing bytes");
    if (pr->num_deletions > pr->num_entries || pr->min_seq > pr->max_seq ||
        pr->num_compressed_blocks > pr->num_data_blocks || (pr->num_entries == 0) != (pr->num_data_blocks == 0))
        return table_corrupt(t, off, "properties block", "inconsistent counts");
    return 0;
}

/* table_check_index: table_int.h */
int table_check_index(table *t)
{
    block_iter ix = {0};
    int rc = block_iter_init(&ix, t->index->data, t->index->size, t->f->path, t->index_h.offset);
    uint64_t count = 0, next_off = 0;
    if (rc == 0) {
        for (block_iter_seek_first(&ix); block_iter_valid(&ix); block_iter_next(&ix)) {
            block_handle h;
            if ((rc = table_index_handle(t, &ix, &h)) < 0) break;
            if (h.offset < next_off) {
                rc = table_corrupt(t, t->index_h.offset, "index block", "data blocks out of order");
                break;
            }
            next_off = h.offset + h.size + SST_TRAILER_SIZE;
            count++;
        }
        if (rc == 0) rc = ix.status;
    }
    if (rc == 0 && count != t->props.num_data_blocks)
        rc = table_corrupt(t, t->index_h.offset, "index block", "entry count does not match the properties");
    block_iter_clear(&ix);
    return rc;
}

size_t table_memory(const table *t)
{
    size_t rd = t->rd.cap * sizeof *t->rd.t; /* the tombstones twice: as stored and as fragments */
    for (size_t i = 0; i < t->rd.n; i++) rd += 2 * (t->rd.t[i].begin.n + t->rd.t[i].end.n) + 64;
    return sizeof *t + sizeof *t->f + (t->f->path ? strlen(t->f->path) + 1 : 0) +
           (t->index ? sizeof *t->index + t->index->size : 0) + (t->filter ? sizeof *t->filter + t->filter->size : 0) +
           t->props.smallest.cap + t->props.largest.cap + rd;
}

void table_close(table *t)
{
    if (!t) return;
    rd_list_free(&t->rd);
    rd_frags_unref(t->rd_frags);
    block_mem_free(t->index);
    block_mem_free(t->filter);
    buf_free(&t->props.smallest);
    buf_free(&t->props.largest);
    io_close(t->f);
    free(t);
}

/* table_decode_footer: table_int.h */
int table_decode_footer(const char *path, uint64_t foot_off, const uint8_t foot[SST_FOOTER_SIZE], table_footer *out)
{
    if (dec_u64(foot + SST_FOOTER_MAGIC_OFF) != SST_MAGIC)
        return corrupt_at(path, foot_off, "footer", "bad magic number (not a table, or truncated)");
    if (tkv_checksum(foot, SST_FOOTER_CHECKSUM_OFF) != dec_u32(foot + SST_FOOTER_CHECKSUM_OFF))
        return corrupt_at(path, foot_off, "footer", "checksum mismatch");
    out->version = dec_u32(foot + SST_FOOTER_VERSION_OFF);
    if (out->version != SST_FORMAT_VERSION && out->version != SST_FORMAT_VERSION_RD)
        return corrupt_at(path, foot_off, "footer", "unsupported format version");
    out->index = (block_handle){dec_u64(foot + 0), dec_u64(foot + 8)};
    out->filter = (block_handle){dec_u64(foot + 16), dec_u64(foot + 24)};
    out->props = (block_handle){dec_u64(foot + 32), dec_u64(foot + 40)};
    return 0;
}

/* read_range_dels -- format version 2: the range deletion block (checksum,
 * every tombstone well formed, as many as the properties say), kept as
 * t->rd and its fragments. It lies among the metadata blocks, before the
 * footer and at or after the data area's end. */
static int read_range_dels(table *t, uint64_t foot_off)
{
    if (t->rd_h.offset < t->data_end)
        return table_corrupt(t, t->rd_h.offset, "range deletion block", "block inside the data area");
    cached_block *b;
    TKV_TRY(read_block(t, t->rd_h, foot_off, "range deletion block", &b));
    const char *why = NULL;
    int rc = rd_decode(b->data, b->size, &t->rd, &why);
    block_mem_free(b);
    if (rc < 0) return rc;
    if (rc > 0) return table_corrupt(t, t->rd_h.offset, "range deletion block", why);
    if (t->rd.n != t->props.num_range_dels)
        return table_corrupt(t, t->rd_h.offset, "range deletion block", "count does not match the properties");
    if (!(t->rd_frags = rd_frags_new(t->rd.t, t->rd.n, UINT64_MAX))) return TKV_NO_MEMORY;
    return 0;
}

const rd_list *table_range_del_list(const table *t) { return &t->rd; }
const rd_frags *table_range_dels(const table *t) { return t->rd_frags; }

/* table_open -- steps: footer (magic, checksum, version, handle ranges), then
 * the filter, properties and index blocks (checksums, structure, consistency)
 * and, in format version 2, the range deletion block. */
int table_open(io_file *f, uint64_t file_size, tkv_cache *cache, table **out)
{
    *out = NULL;
    table *t = calloc(1, sizeof *t);
    if (!t) {
        io_close(f);
        return tkv_err(TKV_NO_MEMORY, "out of memory opening a table");
    }
    t->f = f;
    t->file_size = file_size;
    t->cache = cache;
    int rc;
    if (file_size < SST_FOOTER_SIZE) {
        rc = tkv_err(TKV_CORRUPTION, "%s: truncated table: %llu bytes is shorter than the footer", f->path,
                     (unsigned long long)file_size);
        goto fail;
    }
    uint64_t foot_off = file_size - SST_FOOTER_SIZE;
    uint8_t foot[SST_FOOTER_SIZE];
    size_t got = 0;
    if ((rc = io_pread(f, foot_off, foot, sizeof foot, &got)) < 0) goto fail;
    if (got < sizeof foot) {
        rc = table_corrupt(t, foot_off, "footer", "truncated file");
        goto fail;
    }
    table_footer ft;
    if ((rc = table_decode_footer(f->path, foot_off, foot, &ft)) < 0) goto fail;
    block_handle filter_h = ft.filter, props_h = ft.props;
    t->version = ft.version;
    t->index_h = ft.index;
    t->filter_h = filter_h;
    t->props_h = props_h;
    /* Data blocks precede every metadata block. */
    t->data_end = filter_h.offset;
    if (props_h.offset < t->data_end) t->data_end = props_h.offset;
    if (t->index_h.offset < t->data_end) t->data_end = t->index_h.offset;

    cached_block *pb = NULL;
    if ((rc = read_block(t, filter_h, foot_off, "filter block", &t->filter)) < 0) goto fail;
    if (!bloom_filter_valid(t->filter->data, t->filter->size)) {
        rc = table_corrupt(t, filter_h.offset, "filter block", "bad probe count or size");
        goto fail;
    }
    if ((rc = read_block(t, props_h, foot_off, "properties block", &pb)) < 0) goto fail;
    rc = parse_props(t, pb, props_h.offset);
    block_mem_free(pb);
    if (rc < 0) goto fail;
    if (t->props.num_range_dels && (rc = read_range_dels(t, foot_off)) < 0) goto fail;
    if ((rc = read_block(t, t->index_h, foot_off, "index block", &t->index)) < 0) goto fail;
    if ((rc = table_check_index(t)) < 0) goto fail;
    if (cache) t->cache_id = cache_new_id(cache);
    *out = t;
    return 0;
fail:
    table_close(t);
    return rc;
}

const table_props *table_properties(const table *t) { return &t->props; }

io_file *table_file(const table *t) { return t->f; }

void table_get_read_stats(table *t, table_read_stats *out)
{
    out->bloom_checks = __atomic_load_n(&t->st_bloom_checks, __ATOMIC_RELAXED);
    out->bloom_negatives = __atomic_load_n(&t->st_bloom_negatives, __ATOMIC_RELAXED);
    out->block_reads = __atomic_load_n(&t->st_block_reads, __ATOMIC_RELAXED);
    out->block_cache_hits = __atomic_load_n(&t->st_cache_hits, __ATOMIC_RELAXED);
}

/* ---------------------------------------------------------------- point reads */

int table_may_contain(table *t, tkv_slice ukey)
{
    table_stat_add(&t->st_bloom_checks);
    int r = bloom_may_contain(t->filter->data, t->filter->size, ukey);
    if (!r) table_stat_add(&t->st_bloom_negatives);
    return r;
}

/* seek_target -- the internal key (ukey, seq, seek type) in stackbuf when it
 * fits, else malloc'd (the caller frees it if it is not stackbuf). */
static uint8_t *seek_target(tkv_slice ukey, uint64_t seq, uint8_t *stackbuf, size_t cap, tkv_slice *target)
{
    if (seq > IKEY_MAX_SEQ) seq = IKEY_MAX_SEQ;
    uint8_t *tk = ukey.n + IKEY_TRAILER <= cap ? stackbuf : malloc(ukey.n + IKEY_TRAILER);
    if (!tk) return NULL;
    ikey_encode(tk, ukey.p, ukey.n, seq, IKEY_SEEK_TYPE);
    *target = slice(tk, ukey.n + IKEY_TRAILER);
    return tk;
}

/* Point lookups rebuild the keys of the index and data blocks they seek in
 * a buffer on the stack this large (longer keys move it to the heap), so a
 * lookup whose blocks are cached allocates nothing. */
#define LOOKUP_KEY_STACK 256

int table_locate(table *t, tkv_slice ukey, uint64_t seq, block_handle *h)
{
    if (ukey.n > TKV_MAX_KEY_SIZE) return tkv_err(TKV_INVALID, "table_get: key of %zu bytes", ukey.n);
    if (!table_may_contain(t, ukey)) return 0;
    uint8_t stackbuf[256];
    tkv_slice target;
    uint8_t *tk = seek_target(ukey, seq, stackbuf, sizeof stackbuf, &target);
    if (!tk) return tkv_err(TKV_NO_MEMORY, "out of memory in table_get");
    uint8_t keybuf[LOOKUP_KEY_STACK];
    block_iter ix = {0};
    buf_init_fixed(&ix.key, keybuf, sizeof keybuf); /* no allocation for keys up to its size */
    int rc = block_iter_init_checked(&ix, t->index->data, t->index->size, t->f->path, t->index_h.offset);
    if (rc == 0) {
        block_iter_seek(&ix, target);
        if (!block_iter_valid(&ix)) rc = ix.status; /* 0: target is past the last key */
        else if ((rc = table_index_handle(t, &ix, h)) == 0) rc = 1;
    }
    block_iter_clear(&ix);
    if (tk != stackbuf) free(tk);
    return rc;
}

int table_block_find(table *t, block_handle h, const table_block *b, tkv_slice ukey, uint64_t seq, ikey_type *type,
                     tkv_buf *val, uint64_t *found_seq)
{
    uint8_t stackbuf[256];
    tkv_slice target;
    uint8_t *tk = seek_target(ukey, seq, stackbuf, sizeof stackbuf, &target);
    if (!tk) return tkv_err(TKV_NO_MEMORY, "out of memory in table_get");
    uint8_t keybuf[LOOKUP_KEY_STACK];
    block_iter db = {0};
    buf_init_fixed(&db.key, keybuf, sizeof keybuf);
    int rc = block_iter_init(&db, b->blk->data, b->blk->size, t->f->path, h.offset);
    if (rc < 0) goto out;
    block_iter_seek(&db, target);
    if (!block_iter_valid(&db)) {
        rc = db.status;
        goto out;
    }
    tkv_slice k = block_iter_key(&db);
    if (ukey_cmp(ikey_user(k), ukey) != 0) {
        rc = 0;
        goto out;
    }
    ikey_type ty = ikey_get_type(k);
    if (ty != IKEY_VALUE && ty != IKEY_DELETION) {
        rc = table_corrupt(t, h.offset, "data block", "unknown entry type");
        goto out;
    }
    tkv_slice v = block_iter_value(&db);
    val->len = 0;
    if ((rc = buf_append(val, v.p, v.n)) < 0) goto out;
    *type = ty;
    if (found_seq) *found_seq = ikey_seq(k);
    rc = 1;
out:
    block_iter_clear(&db);
    if (tk != stackbuf) free(tk);
    return rc;
}

/* table_get -- bloom filter, then index seek to the one block that can hold
 * (ukey, seq) (builder invariant 2), then a seek inside that block. */
int table_get_seq(table *t, tkv_slice ukey, uint64_t seq, ikey_type *type, tkv_buf *val, uint64_t *found_seq)
{
    block_handle h;
    int rc = table_locate(t, ukey, seq, &h);
    if (rc <= 0) return rc;
    table_block b;
    TKV_TRY(table_data_block(t, h, &b));
    rc = table_block_find(t, h, &b, ukey, seq, type, val, found_seq);
    table_block_release(t, &b);
    return rc;
}

int table_get(table *t, tkv_slice ukey, uint64_t seq, ikey_type *type, tkv_buf *val)
{
    return table_get_seq(t, ukey, seq, type, val, NULL);
}
