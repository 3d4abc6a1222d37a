// SPDX-License-Identifier: Apache-2.0
/*
 * block.c -- SSTable block builder and in-place block iterator (format in
 * block.h and docs/format-sst.md).
 */
#include "sst/block.h"

#include <stdlib.h>

#include "util/status.h"

/* ---------------------------------------------------------------- builder */

void block_builder_init(block_builder *b, int restart_interval)
{
    memset(b, 0, sizeof *b);
    b->interval = restart_interval < 1 ? 1 : restart_interval;
}

void block_builder_reset(block_builder *b)
{
    b->buf.len = 0;
    b->last_key.len = 0;
    b->restarts.len = 0;
    b->counter = 0;
    b->nentries = 0;
    b->finished = 0;
}

void block_builder_free(block_builder *b)
{
    buf_free(&b->buf);
    buf_free(&b->last_key);
    buf_free(&b->restarts);
    b->nentries = 0;
}

size_t block_builder_size(const block_builder *b)
{
    if (b->finished) return b->buf.len;
    return b->buf.len + b->restarts.len + 4;
}

/* block_builder_add -- appends one prefix-compressed entry; starts a restart run
 * (shared = 0, offset recorded) every `interval` entries. */
int block_builder_add(block_builder *b, tkv_slice key, tkv_slice value)
{
    if (b->finished) return tkv_err(TKV_INVALID, "block_builder_add after finish");
    size_t shared = 0;
    if (b->counter < b->interval && b->nentries > 0) {
        size_t lim = key.n < b->last_key.len ? key.n : b->last_key.len;
        while (shared < lim && b->last_key.data[shared] == key.p[shared]) shared++;
    } else {
        b->counter = 0;
    }
    size_t non_shared = key.n - shared;
    /* Offsets inside a block are u32: keep the whole block below 4 GiB. */
    uint64_t need = (uint64_t)b->buf.len + 30 + non_shared + value.n + b->restarts.len + 8;
    if (need > UINT32_MAX) return tkv_err(TKV_INVALID, "block would exceed 4 GiB");
    if (b->counter == 0) TKV_TRY(buf_append_u32(&b->restarts, (uint32_t)b->buf.len));
    TKV_TRY(buf_reserve(&b->buf, 30 + non_shared + value.n));
    uint8_t *p = b->buf.data + b->buf.len;
    p = enc_varint(p, shared);
    p = enc_varint(p, non_shared);
    p = enc_varint(p, value.n);
    if (non_shared) memcpy(p, key.p + shared, non_shared);
    p += non_shared;
    if (value.n) memcpy(p, value.p, value.n);
    p += value.n;
    b->buf.len = (size_t)(p - b->buf.data);
    b->last_key.len = shared;
    TKV_TRY(buf_append(&b->last_key, key.p + shared, non_shared));
    b->counter++;
    b->nentries++;
    return 0;
}

int block_builder_finish(block_builder *b, tkv_slice *out)
{
    if (!b->finished) {
        TKV_TRY(buf_append(&b->buf, b->restarts.data, b->restarts.len));
        TKV_TRY(buf_append_u32(&b->buf, (uint32_t)(b->restarts.len / 4)));
        b->finished = 1;
    }
    *out = slice(b->buf.data, b->buf.len);
    return 0;
}

/* ---------------------------------------------------------------- iterator */

static const tkv_it_ops block_iter_ops;

static inline uint32_t restart_point(const block_iter *it, uint32_t i)
{
    return dec_u32(it->data + it->restarts + 4 * (size_t)i);
}

/* corrupt -- records a corruption of this block and invalidates the iterator. */
static void corrupt(block_iter *it, const char *what)
{
    if (it->status == 0)
        it->status = tkv_err(TKV_CORRUPTION, "corrupt block in %s at offset %llu: %s", it->fname ? it->fname : "?",
                             (unsigned long long)it->boff, what);
    it->cur = it->restarts;
    it->key.len = 0;
}

static void mark_invalid(block_iter *it)
{
    it->cur = it->next = it->restarts;
    it->restart_idx = it->nrestarts;
}

/* decode_header -- parses the entry header at offset off; checks that the
 * entry lies inside the entry area. Returns a pointer to the key delta or NULL. */
static const uint8_t *decode_header(const block_iter *it, uint32_t off, uint64_t *shared, uint64_t *non_shared,
                                    uint64_t *vlen)
{
    if (off >= it->restarts) return NULL;
    const uint8_t *p = it->data + off, *limit = it->data + it->restarts;
    if (limit - p >= 3 && (p[0] | p[1] | p[2]) < 0x80) { /* fast path: three 1-byte varints */
        *shared = p[0];
        *non_shared = p[1];
        *vlen = p[2];
        p += 3;
    } else {
        if (!(p = dec_varint(p, limit, shared))) return NULL;
        if (!(p = dec_varint(p, limit, non_shared))) return NULL;
        if (!(p = dec_varint(p, limit, vlen))) return NULL;
    }
    uint64_t room = (uint64_t)(limit - p);
    if (*non_shared > room || *vlen > room - *non_shared) return NULL;
    return p;
}

/* parse_next -- decodes the entry at it->next into the current position.
 * Returns 1 if positioned, 0 at the end or on corruption (status set). */
static int parse_next(block_iter *it)
{
    uint32_t off = it->next;
    if (off >= it->restarts) {
        mark_invalid(it);
        return 0;
    }
    uint64_t shared, non_shared, vlen;
    const uint8_t *kp = decode_header(it, off, &shared, &non_shared, &vlen);
    if (!kp) {
        corrupt(it, "entry overruns the block");
        return 0;
    }
    /* Keep restart_idx = the last restart run starting at or before off. */
    while (it->restart_idx + 1 < it->nrestarts && restart_point(it, it->restart_idx + 1) <= off) it->restart_idx++;
    if (restart_point(it, it->restart_idx) == off && shared != 0) {
        corrupt(it, "restart entry has a shared prefix");
        return 0;
    }
    if (shared > it->key.len) {
        corrupt(it, "shared prefix longer than the previous key");
        return 0;
    }
    if (shared + non_shared < IKEY_TRAILER) {
        corrupt(it, "key shorter than an internal key trailer");
        return 0;
    }
    it->key.len = (size_t)shared;
    int rc = buf_append(&it->key, kp, (size_t)non_shared);
    if (rc < 0) {
        it->status = rc;
        it->cur = it->restarts;
        return 0;
    }
    it->cur = off;
    it->val = kp + non_shared;
    it->vlen = (uint32_t)vlen;
    it->next = (uint32_t)(it->val + vlen - it->data);
    return 1;
}

/* seek_to_restart -- prepares parse_next to read the first entry of run i. */
static void seek_to_restart(block_iter *it, uint32_t i)
{
    it->key.len = 0;
    it->restart_idx = i;
    it->next = restart_point(it, i);
}

/* restart_key -- the (full) key of restart run i, or NULL on corruption. */
static const uint8_t *restart_key(block_iter *it, uint32_t i, size_t *klen)
{
    uint64_t shared, non_shared, vlen;
    const uint8_t *kp = decode_header(it, restart_point(it, i), &shared, &non_shared, &vlen);
    if (!kp || shared != 0 || non_shared < IKEY_TRAILER) {
        corrupt(it, "bad entry at a restart point");
        return NULL;
    }
    *klen = (size_t)non_shared;
    return kp;
}

void block_iter_seek_first(block_iter *it)
{
    if (it->status) return;
    if (it->nrestarts == 0) {
        mark_invalid(it);
        return;
    }
    seek_to_restart(it, 0);
    parse_next(it);
}

void block_iter_seek_last(block_iter *it)
{
    if (it->status) return;
    if (it->nrestarts == 0) {
        mark_invalid(it);
        return;
    }
    seek_to_restart(it, it->nrestarts - 1);
    while (parse_next(it) && it->next < it->restarts) {}
}

/* block_iter_seek -- first entry >= target: binary search for the last restart
 * run whose first key is < target, then a linear scan inside it. */
void block_iter_seek(block_iter *it, tkv_slice target)
{
    if (it->status) return;
    if (it->nrestarts == 0) {
        mark_invalid(it);
        return;
    }
    uint32_t left = 0, right = it->nrestarts - 1;
    while (left < right) {
        uint32_t mid = left + (right - left + 1) / 2;
        size_t klen;
        const uint8_t *k = restart_key(it, mid, &klen);
        if (!k) return;
        if (ikey_cmp(slice(k, klen), target) < 0) left = mid; /* every key before mid's run is < target too */
        else right = mid - 1;
    }
    seek_to_restart(it, left);
    while (parse_next(it)) {
        if (ikey_cmp(block_iter_key(it), target) >= 0) return;
    }
}

void block_iter_next(block_iter *it)
{
    if (!block_iter_valid(it)) return;
    parse_next(it);
}

/* block_iter_prev -- the entry before the current one: rescan from the start
 * of the restart run that precedes it. */
void block_iter_prev(block_iter *it)
{
    if (!block_iter_valid(it)) return;
    uint32_t original = it->cur;
    while (restart_point(it, it->restart_idx) >= original) {
        if (it->restart_idx == 0) {
            mark_invalid(it);
            return;
        }
        it->restart_idx--;
    }
    seek_to_restart(it, it->restart_idx);
    while (parse_next(it) && it->next < original) {}
    if (it->status == 0 && it->cur < it->restarts && it->next != original)
        corrupt(it, "entry chain does not reach the previous position");
}

/* init -- block_iter_init; `walk` also checks every restart offset. */
static int init(block_iter *it, const uint8_t *data, size_t size, const char *fname, uint64_t boff, int walk)
{
    tkv_buf key = it->key;
    memset(it, 0, sizeof *it);
    it->base.ops = &block_iter_ops;
    it->key = key;
    it->key.len = 0;
    it->data = data;
    it->fname = fname;
    it->boff = boff;
    const char *why = NULL;
    if (size < 4 || size > UINT32_MAX) {
        why = "bad block size";
    } else {
        uint32_t n = dec_u32(data + size - 4);
        if (n > (size - 4) / 4) {
            why = "restart count exceeds the block";
        } else {
            it->nrestarts = n;
            it->restarts = (uint32_t)(size - 4 - 4 * (size_t)n);
            if (n == 0 && it->restarts != 0) why = "entries without restart points";
            for (uint32_t i = 0; i < (walk ? n : 0) && !why; i++) {
                uint32_t r = restart_point(it, i);
                /* Invariant checked: 0 = restart[0] < restart[1] < ... < entry area end. */
                if (i == 0 ? r != 0 : r <= restart_point(it, i - 1)) why = "restart offsets out of order";
                else if (r >= it->restarts) why = "restart offset beyond the entries";
            }
        }
    }
    if (why) {
        it->restarts = 0;
        it->nrestarts = 0;
        corrupt(it, why);
    }
    mark_invalid(it);
    return it->status;
}

int block_iter_init(block_iter *it, const uint8_t *data, size_t size, const char *fname, uint64_t boff)
{
    return init(it, data, size, fname, boff, 1);
}

int block_iter_init_checked(block_iter *it, const uint8_t *data, size_t size, const char *fname, uint64_t boff)
{
    return init(it, data, size, fname, boff, 0);
}

void block_iter_clear(block_iter *it) { buf_free(&it->key); }

/* ---------------------------------------------------------------- tkv_it ops */

static int op_valid(tkv_it *it) { return block_iter_valid((block_iter *)it); }
static void op_seek_first(tkv_it *it) { block_iter_seek_first((block_iter *)it); }
static void op_seek_last(tkv_it *it) { block_iter_seek_last((block_iter *)it); }
static void op_seek(tkv_it *it, tkv_slice t) { block_iter_seek((block_iter *)it, t); }
static void op_next(tkv_it *it) { block_iter_next((block_iter *)it); }
static void op_prev(tkv_it *it) { block_iter_prev((block_iter *)it); }
static tkv_slice op_key(tkv_it *it) { return block_iter_key((block_iter *)it); }
static tkv_slice op_value(tkv_it *it) { return block_iter_value((block_iter *)it); }
static int op_status(tkv_it *it) { return ((block_iter *)it)->status; }

static void op_destroy(tkv_it *it)
{
    block_iter *bi = (block_iter *)it;
    void (*release)(void *) = bi->release;
    void *arg = bi->release_arg;
    block_iter_clear(bi);
    free(bi);
    if (release) release(arg);
}

static const tkv_it_ops block_iter_ops = {op_valid, op_seek_first, op_seek_last, op_seek,   op_next,
                                          op_prev,  op_key,        op_value,     op_status, op_destroy};

tkv_it *block_iter_new(const uint8_t *data, size_t size, const char *fname, uint64_t boff, void (*release)(void *),
                       void *release_arg)
{
    block_iter *bi = calloc(1, sizeof *bi);
    if (!bi) {
        tkv_err(TKV_NO_MEMORY, "out of memory allocating a block iterator");
        if (release) release(release_arg);
        return NULL;
    }
    block_iter_init(bi, data, size, fname, boff);
    bi->release = release;
    bi->release_arg = release_arg;
    return &bi->base;
}
