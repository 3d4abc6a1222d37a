// SPDX-License-Identifier: Apache-2.0
/*
 * table_check.c -- walking a whole SSTable block by block, for verification
 * and dumps (table_check, table_get_layout in table.h): every data block's
 * checksum and structure, the order of every key, the index separators, the
 * filter, and the properties against what the blocks hold.
 *
 * table_open has already verified the footer and the filter, properties and
 * index blocks; this reads the data blocks it never touches. At most one
 * problem is reported per data block (the first one met in it), so a badly
 * damaged table does not flood the caller; the walk always goes on with the
 * next block.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sst/bloom.h"
#include "sst/table_int.h"
#include "util/status.h"

typedef struct check_state {
    table *t;
    const table_check_fns *fns;
    void *arg;
    table_check_stats st;
    int first;           /* the first problem's code, 0: none */
    char first_msg[512]; /* its message */
    tkv_buf prev;        /* the previous key, valid when have_prev */
    int have_prev;
    tkv_buf prev_sep; /* the previous block's index separator, valid when have_sep */
    int have_sep;
    int filter_reported; /* a missing key is reported once per table */
    /* what the blocks hold, against the properties */
    uint64_t min_seq, max_seq, key_bytes, value_bytes, data_bytes;
    tkv_buf smallest;
} check_state;

void table_get_layout(const table *t, table_layout *out)
{
    memset(out, 0, sizeof *out);
    out->index = t->index_h;
    out->filter = t->filter_h;
    out->props = t->props_h;
    out->range_dels = t->rd_h;
    out->version = t->version;
    out->data_end = t->data_end;
    out->index_entries = t->props.num_data_blocks; /* check_index made them equal */
    out->filter_bytes = t->filter->size;
    if (t->filter->size) out->filter_probes = t->filter->data[t->filter->size - 1];
}

/* problem -- counts the problem whose message tkv_err just recorded, keeps
 * the first one, and tells the caller. */
static void problem(check_state *c, int rc)
{
    if (!c->first) {
        c->first = rc;
        snprintf(c->first_msg, sizeof c->first_msg, "%s", tkv_errmsg());
    }
    c->st.problems++;
    if (c->fns && c->fns->problem) c->fns->problem(c->arg, rc);
}

/* bad -- TKV_CORRUPTION in the data block at off, reported. */
static int bad(check_state *c, uint64_t off, const char *detail)
{
    int rc = table_corrupt(c->t, off, "data block", detail);
    problem(c, rc);
    return rc;
}

/* check_entry -- one entry of the data block at off: type, order, filter;
 * then it is counted and becomes the previous key. */
static int check_entry(check_state *c, uint64_t off, tkv_slice k, tkv_slice v)
{
    ikey_type ty = ikey_get_type(k);
    if (ty != IKEY_VALUE && ty != IKEY_DELETION) return bad(c, off, "an entry of unknown type");
    tkv_slice prev = slice(c->prev.data, c->prev.len);
    if (c->have_prev && ikey_cmp(prev, k) >= 0) return bad(c, off, "keys out of order");
    int new_user = !c->have_prev || ukey_cmp(ikey_user(prev), ikey_user(k)) != 0;
    if (new_user && !c->filter_reported && !bloom_may_contain(c->t->filter->data, c->t->filter->size, ikey_user(k))) {
        c->filter_reported = 1;
        problem(c, table_corrupt(c->t, c->t->filter_h.offset, "filter block", "a key of the table is not in it"));
    }
    uint64_t seq = ikey_seq(k);
    if (c->st.entries == 0 || seq < c->min_seq) c->min_seq = seq;
    if (c->st.entries == 0 || seq > c->max_seq) c->max_seq = seq;
    c->st.entries++;
    c->st.deletions += ty == IKEY_DELETION;
    c->key_bytes += k.n;
    c->value_bytes += v.n;
    if (!c->smallest.len) TKV_TRY(buf_append(&c->smallest, k.p, k.n));
    c->prev.len = 0;
    TKV_TRY(buf_append(&c->prev, k.p, k.n));
    c->have_prev = 1;
    return 0;
}

/* check_block -- the entries of data block h (already read and verified
 * against its checksum) against their neighbours and the block's separator. */
static int check_block(check_state *c, block_handle h, const cached_block *b, tkv_slice sep)
{
    block_iter it = {0};
    int rc = block_iter_init(&it, b->data, b->size, c->t->f->path, h.offset);
    uint64_t n = 0;
    if (rc < 0) problem(c, rc);
    for (block_iter_seek_first(&it); rc == 0 && block_iter_valid(&it); block_iter_next(&it), n++) {
        tkv_slice k = block_iter_key(&it), v = block_iter_value(&it);
        if (n == 0 && c->have_sep && ikey_cmp(k, slice(c->prev_sep.data, c->prev_sep.len)) <= 0)
            rc = bad(c, h.offset, "its first key is not above the previous block's index separator");
        if (rc == 0) rc = check_entry(c, h.offset, k, v);
        if (rc == 0 && c->fns && c->fns->entry) rc = c->fns->entry(c->arg, k, v);
        if (rc > 0) break; /* a callback's stop */
    }
    if (rc == 0 && it.status < 0) problem(c, rc = it.status);
    if (rc == 0 && n == 0) rc = bad(c, h.offset, "an empty data block");
    if (rc == 0 && ikey_cmp(slice(c->prev.data, c->prev.len), sep) > 0)
        rc = bad(c, h.offset, "its last key is above its index separator");
    block_iter_clear(&it);
    if (rc < 0 && rc != TKV_NO_MEMORY) rc = 0; /* reported; the walk goes on */
    return rc;
}

/* walk_block -- reads data block i at h and checks it. A block that cannot
 * be read is reported (bad_blocks) and breaks the key order chain. */
static int walk_block(check_state *c, uint64_t i, block_handle h, tkv_slice sep)
{
    table_block b;
    int rc = table_data_block(c->t, h, &b);
    if (rc < 0) {
        c->st.bad_blocks++;
        c->have_prev = 0;
        problem(c, rc);
        return rc == TKV_NO_MEMORY ? rc : 0;
    }
    int compressed = b.blk->size != h.size; /* lz4 is stored only when it saves space */
    c->st.compressed_blocks += (uint64_t)compressed;
    c->data_bytes += h.size + SST_TRAILER_SIZE;
    if (c->fns && c->fns->block) rc = c->fns->block(c->arg, i, h, sep, b.blk->size, compressed);
    if (rc == 0) rc = check_block(c, h, b.blk, sep);
    table_block_release(c->t, &b);
    return rc;
}

/* props_mismatch -- the first property that differs from what the blocks
 * hold, described in d; 0 if they all match. */
static int props_mismatch(const check_state *c, char *d, size_t n)
{
    const table_props *p = &c->t->props;
    struct {
        const char *name;
        uint64_t want, have;
    } f[] = {
        {"entries", p->num_entries, c->st.entries},
        {"deletions", p->num_deletions, c->st.deletions},
        {"min_seq", p->min_seq, c->st.entries ? c->min_seq : 0},
        {"max_seq", p->max_seq, c->st.entries ? c->max_seq : 0},
        {"raw key bytes", p->raw_key_bytes, c->key_bytes},
        {"raw value bytes", p->raw_value_bytes, c->value_bytes},
        {"data bytes", p->data_bytes, c->data_bytes},
        {"compressed blocks", p->num_compressed_blocks, c->st.compressed_blocks},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (f[i].want != f[i].have) {
            snprintf(d, n, "it says %s=%llu, the data blocks hold %llu", f[i].name, (unsigned long long)f[i].want,
                     (unsigned long long)f[i].have);
            return 1;
        }
    }
    const tkv_buf *keys[][2] = {{&p->smallest, &c->smallest}, {&p->largest, &c->prev}};
    for (int i = 0; i < 2; i++) {
        if (keys[i][0]->len != keys[i][1]->len ||
            (keys[i][0]->len && memcmp(keys[i][0]->data, keys[i][1]->data, keys[i][0]->len) != 0)) {
            snprintf(d, n, "its %s key is not the data blocks' %s key", i ? "largest" : "smallest",
                     i ? "last" : "first");
            return 1;
        }
    }
    return 0;
}

/* table_check -- every data block in index order, then the properties
 * (only when every block could be read: otherwise the counts are short). */
int table_check(table *t, const table_check_fns *fns, void *arg, table_check_stats *st)
{
    check_state c = {.t = t, .fns = fns, .arg = arg};
    block_iter ix = {0};
    int rc = block_iter_init_checked(&ix, t->index->data, t->index->size, t->f->path, t->index_h.offset);
    if (rc < 0) problem(&c, rc);
    for (block_iter_seek_first(&ix); rc == 0 && block_iter_valid(&ix); block_iter_next(&ix)) {
        block_handle h;
        tkv_slice sep = block_iter_key(&ix);
        if ((rc = table_index_handle(t, &ix, &h)) < 0) {
            problem(&c, rc);
            break;
        }
        rc = walk_block(&c, c.st.data_blocks++, h, sep);
        c.prev_sep.len = 0;
        if (rc == 0 && (rc = buf_append(&c.prev_sep, sep.p, sep.n)) == 0) c.have_sep = 1;
    }
    if (rc == 0 && ix.status < 0) problem(&c, rc = ix.status);
    char d[200];
    if (rc == 0 && c.st.bad_blocks == 0 && c.st.problems == 0 && props_mismatch(&c, d, sizeof d))
        problem(&c, table_corrupt(t, t->props_h.offset, "properties block", d));
    block_iter_clear(&ix);
    buf_free(&c.prev);
    buf_free(&c.prev_sep);
    buf_free(&c.smallest);
    if (st) *st = c.st;
    if (rc > 0) return rc;
    if (rc == TKV_NO_MEMORY && !c.first) return tkv_err(rc, "out of memory checking %s", t->f->path);
    if (c.first) return tkv_err(c.first, "%s", c.first_msg);
    return 0;
}
