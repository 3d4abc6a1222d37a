// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_version_edit.c -- fuzz target: one MANIFEST record, the version edit
 * codec (edit_decode, as MANIFEST replay calls it on each record). Property:
 * an edit that decodes encodes (edit_encode) to a record that decodes to the
 * same edit, and encoding that gives the same bytes again.
 *
 * Input: flags byte (unused), then the record payload.
 */
#include <string.h>

#include "fuzz/fuzzutil.h"
#include "sst/version.h"
#include "util/status.h"

/* same_buf -- two tkv_bufs hold the same bytes. */
static int same_buf(const tkv_buf *a, const tkv_buf *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

/* same_edit -- every decoded field of a and b is equal. */
static int same_edit(const version_edit *a, const version_edit *b)
{
    if (a->has_log_number != b->has_log_number || a->has_next_file != b->has_next_file ||
        a->has_last_seq != b->has_last_seq || a->has_pool_uuid != b->has_pool_uuid)
        return 0;
    if ((a->has_log_number && a->log_number != b->log_number) || (a->has_next_file && a->next_file != b->next_file) ||
        (a->has_last_seq && a->last_seq != b->last_seq) ||
        (a->has_pool_uuid && memcmp(a->pool_uuid, b->pool_uuid, 16) != 0))
        return 0;
    if (a->ndeleted != b->ndeleted || a->nadded != b->nadded || a->ncursors != b->ncursors ||
        a->nrows_removed != b->nrows_removed)
        return 0;
    for (size_t i = 0; i < a->ndeleted; i++)
        if (a->deleted[i].level != b->deleted[i].level || a->deleted[i].number != b->deleted[i].number) return 0;
    for (size_t i = 0; i < a->nadded; i++) {
        const file_meta *x = a->added[i].f, *y = b->added[i].f;
        if (a->added[i].level != b->added[i].level || x->number != y->number || x->size != y->size ||
            x->num_entries != y->num_entries || x->min_seq != y->min_seq || x->max_seq != y->max_seq ||
            !same_buf(&x->smallest, &y->smallest) || !same_buf(&x->largest, &y->largest))
            return 0;
    }
    for (size_t i = 0; i < a->ncursors; i++)
        if (a->cursors[i].row_id != b->cursors[i].row_id || a->cursors[i].cursor != b->cursors[i].cursor) return 0;
    for (size_t i = 0; i < a->nrows_removed; i++)
        if (a->rows_removed[i] != b->rows_removed[i]) return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    data++, size--;
    version_edit e, e2;
    int rc = fz_note("edit_decode", edit_decode(size ? data : (const uint8_t *)"", size, &e));
    if (rc < 0) {
        fz_check(rc == TKV_CORRUPTION || rc == TKV_NO_MEMORY, "edit_decode failed with an unexpected code");
        fz_check(e.nadded == 0 && e.ndeleted == 0 && e.ncursors == 0 && e.nrows_removed == 0,
                 "a failed decode left fields in the edit");
        return 0;
    }
    tkv_buf enc = {0}, enc2 = {0};
    if (edit_encode(&e, &enc) == 0) {
        rc = edit_decode(enc.data, enc.len, &e2);
        fz_check(rc == 0, "an encoded edit does not decode");
        fz_check(same_edit(&e, &e2), "decode(encode(edit)) differs from edit");
        if (edit_encode(&e2, &enc2) == 0) fz_check(same_buf(&enc, &enc2), "encoding is not stable");
        edit_free(&e2);
    }
    buf_free(&enc);
    buf_free(&enc2);
    edit_free(&e);
    return 0;
}
