// SPDX-License-Identifier: Apache-2.0
/*
 * version_edit.c -- file_meta refcounting and the version_edit: building an
 * edit and its MANIFEST record codec (format: docs/format-manifest.md).
 *
 * Record = field* END, field = varint tag, then the tag's value:
 *   0 END          (must be the last byte: no field may follow)
 *   1 log_number   varint
 *   2 next_file    varint
 *   3 last_seq     varint
 *   4 deleted file varint level, varint number
 *   5 added file   varint level, number, size, num_entries, min_seq, max_seq,
 *                  varint len + smallest ikey, varint len + largest ikey
 *   6 row cursor   varint row id, varint cursor (matrix container)
 *   7 row removed  varint row id
 *   8 pool uuid    16 raw bytes (the matrix pool's uuid)
 *   9 added file with range tombstones: tag 5's fields, then varint
 *                  num_range_dels (> 0); written instead of 5 for such a file
 *  10 row cursor with a range tombstone start: tag 6's fields, then varint
 *                  len (> 0) + key; written instead of 6 for such a row
 * The END tag makes every strict prefix of a record malformed, so a decoder
 * never mistakes a cut record for a shorter edit. Decoding never reads past
 * the input and rejects unknown tags, levels >= VERSION_LEVELS, keys shorter
 * than an ikey trailer, smallest > largest and min_seq > max_seq.
 */
#include <stdlib.h>
#include <string.h>

#include "sst/version.h"
#include "util/status.h"

enum {
    EDIT_TAG_END = 0,
    EDIT_TAG_LOG_NUMBER = 1,
    EDIT_TAG_NEXT_FILE = 2,
    EDIT_TAG_LAST_SEQ = 3,
    EDIT_TAG_DELETED = 4,
    EDIT_TAG_ADDED = 5,
    EDIT_TAG_ROW_CURSOR = 6,
    EDIT_TAG_ROW_REMOVED = 7,
    EDIT_TAG_POOL_UUID = 8,
    EDIT_TAG_ADDED_RD = 9,
    EDIT_TAG_ROW_CURSOR_RD = 10,
};

row_key *row_key_new(tkv_slice k)
{
    row_key *r = malloc(sizeof *r + (k.n ? k.n : 1));
    if (!r) {
        tkv_err(TKV_NO_MEMORY, "out of memory for a row key");
        return NULL;
    }
    r->refs = 1;
    r->n = (uint32_t)k.n;
    if (k.n) memcpy(r->b, k.p, k.n);
    return r;
}

void row_key_ref(row_key *k)
{
    if (k) __atomic_fetch_add(&k->refs, 1, __ATOMIC_RELAXED);
}

void row_key_unref(row_key *k)
{
    if (k && __atomic_sub_fetch(&k->refs, 1, __ATOMIC_ACQ_REL) == 0) free(k);
}

/* ---------------------------------------------------------------- file_meta */

/* file_meta_new -- a zeroed file_meta with one reference. */
file_meta *file_meta_new(void)
{
    file_meta *f = calloc(1, sizeof *f);
    if (!f) {
        tkv_err(TKV_NO_MEMORY, "out of memory allocating a file_meta");
        return NULL;
    }
    f->refs = 1;
    return f;
}

/* file_meta_ref -- takes one more reference on f. */
void file_meta_ref(file_meta *f) { __atomic_fetch_add(&f->refs, 1, __ATOMIC_RELAXED); }

/* file_meta_unref -- drops a reference; frees the keys and f at 0. */
void file_meta_unref(file_meta *f)
{
    if (!f) return;
    if (__atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    buf_free(&f->smallest);
    buf_free(&f->largest);
    free(f);
}

/* set_key -- b = ikey(u, seq, type). */
static int set_key(tkv_buf *b, tkv_slice u, uint64_t seq, ikey_type type)
{
    b->len = 0;
    TKV_TRY(buf_reserve(b, u.n + IKEY_TRAILER));
    ikey_encode(b->data, u.p, u.n, seq, type);
    b->len = u.n + IKEY_TRAILER;
    return 0;
}

int file_meta_add_range_dels(file_meta *f, const rd_tomb *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        int first = f->num_entries == 0 && f->num_range_dels == 0;
        tkv_slice hi = rd_key_prev_incl(t[i].end);
        if (first || ukey_cmp(t[i].begin, ikey_user(slice(f->smallest.data, f->smallest.len))) <= 0)
            TKV_TRY(set_key(&f->smallest, t[i].begin, IKEY_MAX_SEQ, IKEY_SEEK_TYPE));
        if (first || ukey_cmp(hi, ikey_user(slice(f->largest.data, f->largest.len))) >= 0)
            TKV_TRY(set_key(&f->largest, hi, 0, IKEY_DELETION));
        if (first || t[i].seq < f->min_seq) f->min_seq = t[i].seq;
        if (first || t[i].seq > f->max_seq) f->max_seq = t[i].seq;
        f->num_range_dels++;
    }
    return 0;
}

/* ---------------------------------------------------------------- edit */

/* edit_init -- an empty edit (no fields, no arrays). */
void edit_init(version_edit *e) { memset(e, 0, sizeof *e); }

/* edit_free -- drops the refs on added files and releases the arrays. */
void edit_free(version_edit *e)
{
    if (!e) return;
    for (size_t i = 0; i < e->nadded; i++) file_meta_unref(e->added[i].f);
    free(e->added);
    free(e->deleted);
    for (size_t i = 0; i < e->ncursors; i++) row_key_unref(e->cursors[i].rd_start);
    free(e->cursors);
    free(e->rows_removed);
    edit_init(e);
}

/* edit_grow -- makes room for element n of an array that only grows one element
 * at a time: capacity is 4, 8, 16, ... so a realloc is due when n is 0 or a
 * power of two >= 4. */
static int edit_grow(void **arr, size_t n, size_t elem)
{
    if (n != 0 && (n < 4 || (n & (n - 1)) != 0)) return 0;
    size_t cap = n ? n * 2 : 4;
    if (cap > SIZE_MAX / elem) return tkv_err(TKV_NO_MEMORY, "version edit too large");
    void *p = realloc(*arr, cap * elem);
    if (!p) return tkv_err(TKV_NO_MEMORY, "out of memory growing a version edit");
    *arr = p;
    return 0;
}

/* edit_check_file -- the shape every file_meta of an edit must have; 0 or a
 * message (static) saying what is wrong. */
static const char *edit_check_file(const file_meta *f)
{
    if (f->smallest.len < IKEY_TRAILER || f->largest.len < IKEY_TRAILER) return "key shorter than an ikey trailer";
    if (ikey_cmp(slice(f->smallest.data, f->smallest.len), slice(f->largest.data, f->largest.len)) > 0)
        return "smallest key > largest key";
    if (f->min_seq > f->max_seq) return "min_seq > max_seq";
    return NULL;
}

/* edit_add_file -- records f as added at level (takes a ref). */
int edit_add_file(version_edit *e, int level, file_meta *f)
{
    if (!e || !f) return tkv_err(TKV_INVALID, "edit_add_file: NULL argument");
    if (level < 0 || level >= VERSION_LEVELS)
        return tkv_err(TKV_INVALID, "edit_add_file: level %d out of range", level);
    const char *why = edit_check_file(f);
    if (why) return tkv_err(TKV_INVALID, "edit_add_file: %06llu.sst: %s", (unsigned long long)f->number, why);
    TKV_TRY(edit_grow((void **)&e->added, e->nadded, sizeof e->added[0]));
    file_meta_ref(f);
    e->added[e->nadded].level = level;
    e->added[e->nadded].f = f;
    e->nadded++;
    return 0;
}

/* edit_delete_file -- records file `number` of `level` as deleted. */
int edit_delete_file(version_edit *e, int level, uint64_t number)
{
    if (!e) return tkv_err(TKV_INVALID, "edit_delete_file: NULL edit");
    if (level < 0 || level >= VERSION_LEVELS)
        return tkv_err(TKV_INVALID, "edit_delete_file: level %d out of range", level);
    TKV_TRY(edit_grow((void **)&e->deleted, e->ndeleted, sizeof e->deleted[0]));
    e->deleted[e->ndeleted].level = level;
    e->deleted[e->ndeleted].number = number;
    e->ndeleted++;
    return 0;
}

/* edit_has_row -- whether row_id is already set or removed by e. */
static int edit_has_row(const version_edit *e, uint64_t row_id)
{
    for (size_t i = 0; i < e->ncursors; i++)
        if (e->cursors[i].row_id == row_id) return 1;
    for (size_t i = 0; i < e->nrows_removed; i++)
        if (e->rows_removed[i] == row_id) return 1;
    return 0;
}

/* edit_set_row_cursor_rd -- records row_id's cursor and range tombstone
 * start (once per edit). */
int edit_set_row_cursor_rd(version_edit *e, uint64_t row_id, uint64_t cursor, row_key *rd_start)
{
    if (!e) return tkv_err(TKV_INVALID, "edit_set_row_cursor: NULL edit");
    if (edit_has_row(e, row_id))
        return tkv_err(TKV_INVALID, "edit_set_row_cursor: row %llu appears twice in one edit",
                       (unsigned long long)row_id);
    if (rd_start && rd_start->n == 0) return tkv_err(TKV_INVALID, "edit_set_row_cursor: empty range tombstone start");
    TKV_TRY(edit_grow((void **)&e->cursors, e->ncursors, sizeof e->cursors[0]));
    row_key_ref(rd_start);
    e->cursors[e->ncursors].row_id = row_id;
    e->cursors[e->ncursors].cursor = cursor;
    e->cursors[e->ncursors].rd_start = rd_start;
    e->ncursors++;
    return 0;
}

int edit_set_row_cursor(version_edit *e, uint64_t row_id, uint64_t cursor)
{
    return edit_set_row_cursor_rd(e, row_id, cursor, NULL);
}

/* edit_remove_row -- records row_id as leaving the version (once per edit). */
int edit_remove_row(version_edit *e, uint64_t row_id)
{
    if (!e) return tkv_err(TKV_INVALID, "edit_remove_row: NULL edit");
    if (edit_has_row(e, row_id))
        return tkv_err(TKV_INVALID, "edit_remove_row: row %llu appears twice in one edit", (unsigned long long)row_id);
    TKV_TRY(edit_grow((void **)&e->rows_removed, e->nrows_removed, sizeof e->rows_removed[0]));
    e->rows_removed[e->nrows_removed++] = row_id;
    return 0;
}

/* ---------------------------------------------------------------- codec */

/* edit_put_key -- varint length then the bytes. */
static int edit_put_key(tkv_buf *out, const tkv_buf *k)
{
    TKV_TRY(buf_append_varint(out, k->len));
    return buf_append(out, k->data, k->len);
}

/* edit_encode -- appends the record for e to out (out is not cleared). */
int edit_encode(const version_edit *e, tkv_buf *out)
{
    if (!e || !out) return tkv_err(TKV_INVALID, "edit_encode: NULL argument");
    if (e->has_log_number) {
        TKV_TRY(buf_append_varint(out, EDIT_TAG_LOG_NUMBER));
        TKV_TRY(buf_append_varint(out, e->log_number));
    }
    if (e->has_next_file) {
        TKV_TRY(buf_append_varint(out, EDIT_TAG_NEXT_FILE));
        TKV_TRY(buf_append_varint(out, e->next_file));
    }
    if (e->has_last_seq) {
        TKV_TRY(buf_append_varint(out, EDIT_TAG_LAST_SEQ));
        TKV_TRY(buf_append_varint(out, e->last_seq));
    }
    for (size_t i = 0; i < e->ndeleted; i++) {
        TKV_TRY(buf_append_varint(out, EDIT_TAG_DELETED));
        TKV_TRY(buf_append_varint(out, (uint64_t)e->deleted[i].level));
        TKV_TRY(buf_append_varint(out, e->deleted[i].number));
    }
    for (size_t i = 0; i < e->nadded; i++) {
        const file_meta *f = e->added[i].f;
        TKV_TRY(buf_append_varint(out, f->num_range_dels ? EDIT_TAG_ADDED_RD : EDIT_TAG_ADDED));
        TKV_TRY(buf_append_varint(out, (uint64_t)e->added[i].level));
        TKV_TRY(buf_append_varint(out, f->number));
        TKV_TRY(buf_append_varint(out, f->size));
        TKV_TRY(buf_append_varint(out, f->num_entries));
        TKV_TRY(buf_append_varint(out, f->min_seq));
        TKV_TRY(buf_append_varint(out, f->max_seq));
        TKV_TRY(edit_put_key(out, &f->smallest));
        TKV_TRY(edit_put_key(out, &f->largest));
        if (f->num_range_dels) TKV_TRY(buf_append_varint(out, f->num_range_dels));
    }
    for (size_t i = 0; i < e->ncursors; i++) {
        const row_key *rs = e->cursors[i].rd_start;
        TKV_TRY(buf_append_varint(out, rs ? EDIT_TAG_ROW_CURSOR_RD : EDIT_TAG_ROW_CURSOR));
        TKV_TRY(buf_append_varint(out, e->cursors[i].row_id));
        TKV_TRY(buf_append_varint(out, e->cursors[i].cursor));
        if (rs) TKV_TRY(buf_append_varint(out, rs->n));
        if (rs) TKV_TRY(buf_append(out, rs->b, rs->n));
    }
    for (size_t i = 0; i < e->nrows_removed; i++) {
        TKV_TRY(buf_append_varint(out, EDIT_TAG_ROW_REMOVED));
        TKV_TRY(buf_append_varint(out, e->rows_removed[i]));
    }
    if (e->has_pool_uuid) {
        TKV_TRY(buf_append_varint(out, EDIT_TAG_POOL_UUID));
        TKV_TRY(buf_append(out, e->pool_uuid, sizeof e->pool_uuid));
    }
    return buf_append_varint(out, EDIT_TAG_END);
}

/* A cursor over the record being decoded. */
typedef struct edit_reader {
    const uint8_t *p, *start, *limit;
} edit_reader;

/* edit_get_varint -- next varint, or TKV_CORRUPTION naming the field. */
static int edit_get_varint(edit_reader *r, uint64_t *v, const char *what)
{
    const uint8_t *q = dec_varint(r->p, r->limit, v);
    if (!q)
        return tkv_err(TKV_CORRUPTION, "version edit: truncated or overlong %s at byte %zu", what,
                       (size_t)(r->p - r->start));
    r->p = q;
    return 0;
}

/* edit_get_level -- a varint level < VERSION_LEVELS. */
static int edit_get_level(edit_reader *r, int *level)
{
    uint64_t v;
    size_t at = (size_t)(r->p - r->start);
    TKV_TRY(edit_get_varint(r, &v, "level"));
    if (v >= VERSION_LEVELS)
        return tkv_err(TKV_CORRUPTION, "version edit: level %llu at byte %zu is out of range", (unsigned long long)v,
                       at);
    *level = (int)v;
    return 0;
}

/* edit_get_key -- a length-prefixed internal key copied into k. */
static int edit_get_key(edit_reader *r, tkv_buf *k, const char *what)
{
    uint64_t len;
    TKV_TRY(edit_get_varint(r, &len, what));
    if (len > (uint64_t)(r->limit - r->p))
        return tkv_err(TKV_CORRUPTION, "version edit: %s of %llu bytes extends past the end of the record", what,
                       (unsigned long long)len);
    if (len < IKEY_TRAILER)
        return tkv_err(TKV_CORRUPTION, "version edit: %s of %llu bytes is shorter than an internal key", what,
                       (unsigned long long)len);
    TKV_TRY(buf_append(k, r->p, (size_t)len));
    r->p += len;
    return 0;
}

/* edit_decode_added -- the value of an added-file field (tag 5, or 9 with
 * `rd`: a tombstone count follows); adds it to e. */
static int edit_decode_added(edit_reader *r, version_edit *e, int rd)
{
    int level;
    TKV_TRY(edit_get_level(r, &level));
    file_meta *f = file_meta_new();
    if (!f) return TKV_NO_MEMORY;
    int rc = edit_get_varint(r, &f->number, "file number");
    if (rc == 0) rc = edit_get_varint(r, &f->size, "file size");
    if (rc == 0) rc = edit_get_varint(r, &f->num_entries, "entry count");
    if (rc == 0) rc = edit_get_varint(r, &f->min_seq, "min_seq");
    if (rc == 0) rc = edit_get_varint(r, &f->max_seq, "max_seq");
    if (rc == 0) rc = edit_get_key(r, &f->smallest, "smallest key");
    if (rc == 0) rc = edit_get_key(r, &f->largest, "largest key");
    if (rc == 0 && rd) rc = edit_get_varint(r, &f->num_range_dels, "range tombstone count");
    if (rc == 0 && rd && f->num_range_dels == 0)
        rc = tkv_err(TKV_CORRUPTION, "version edit: added file %06llu.sst with 0 range tombstones in tag 9",
                     (unsigned long long)f->number);
    if (rc == 0) {
        const char *why = edit_check_file(f);
        if (why)
            rc = tkv_err(TKV_CORRUPTION, "version edit: added file %06llu.sst: %s", (unsigned long long)f->number, why);
    }
    if (rc == 0) rc = edit_add_file(e, level, f);
    file_meta_unref(f); /* the edit holds its own ref */
    return rc;
}

/* edit_decode_cursor -- the value of a row-cursor field (tag 6, or 10 with
 * `rd`: a range tombstone start follows); sets it in e. */
static int edit_decode_cursor(edit_reader *r, version_edit *e, int rd, size_t at)
{
    uint64_t row, cur, len = 0;
    TKV_TRY(edit_get_varint(r, &row, "row id"));
    TKV_TRY(edit_get_varint(r, &cur, "row cursor"));
    if (rd) TKV_TRY(edit_get_varint(r, &len, "range tombstone start length"));
    if (rd && (len == 0 || len > RD_MAX_KEY || len > (uint64_t)(r->limit - r->p)))
        return tkv_err(TKV_CORRUPTION, "version edit: bad range tombstone start of row %llu (byte %zu)",
                       (unsigned long long)row, at);
    if (edit_has_row(e, row))
        return tkv_err(TKV_CORRUPTION, "version edit: row %llu appears twice (byte %zu)", (unsigned long long)row, at);
    row_key *k = rd ? row_key_new(slice(r->p, (size_t)len)) : NULL;
    if (rd && !k) return TKV_NO_MEMORY;
    r->p += len;
    int rc = edit_set_row_cursor_rd(e, row, cur, k);
    row_key_unref(k); /* the edit holds its own ref */
    return rc;
}

/* edit_decode_fields -- the body of edit_decode. */
static int edit_decode_fields(edit_reader *r, version_edit *e)
{
    for (;;) {
        uint64_t tag;
        size_t at = (size_t)(r->p - r->start);
        if (r->p == r->limit)
            return tkv_err(TKV_CORRUPTION, "version edit: record ends at byte %zu without its end marker", at);
        TKV_TRY(edit_get_varint(r, &tag, "tag"));
        switch (tag) {
        case EDIT_TAG_END:
            if (r->p != r->limit)
                return tkv_err(TKV_CORRUPTION, "version edit: %zu bytes after the end marker at byte %zu",
                               (size_t)(r->limit - r->p), at);
            return 0;
        case EDIT_TAG_LOG_NUMBER:
            TKV_TRY(edit_get_varint(r, &e->log_number, "log_number"));
            e->has_log_number = 1;
            break;
        case EDIT_TAG_NEXT_FILE:
            TKV_TRY(edit_get_varint(r, &e->next_file, "next_file"));
            e->has_next_file = 1;
            break;
        case EDIT_TAG_LAST_SEQ:
            TKV_TRY(edit_get_varint(r, &e->last_seq, "last_seq"));
            e->has_last_seq = 1;
            break;
        case EDIT_TAG_DELETED: {
            int level;
            uint64_t number;
            TKV_TRY(edit_get_level(r, &level));
            TKV_TRY(edit_get_varint(r, &number, "deleted file number"));
            TKV_TRY(edit_delete_file(e, level, number));
            break;
        }
        case EDIT_TAG_ADDED:
        case EDIT_TAG_ADDED_RD:
            TKV_TRY(edit_decode_added(r, e, tag == EDIT_TAG_ADDED_RD));
            break;
        case EDIT_TAG_ROW_CURSOR:
        case EDIT_TAG_ROW_CURSOR_RD:
            TKV_TRY(edit_decode_cursor(r, e, tag == EDIT_TAG_ROW_CURSOR_RD, at));
            break;
        case EDIT_TAG_ROW_REMOVED: {
            uint64_t row;
            TKV_TRY(edit_get_varint(r, &row, "removed row id"));
            if (edit_has_row(e, row))
                return tkv_err(TKV_CORRUPTION, "version edit: row %llu appears twice (byte %zu)",
                               (unsigned long long)row, at);
            TKV_TRY(edit_remove_row(e, row));
            break;
        }
        case EDIT_TAG_POOL_UUID:
            if ((size_t)(r->limit - r->p) < sizeof e->pool_uuid)
                return tkv_err(TKV_CORRUPTION, "version edit: truncated pool uuid at byte %zu", at);
            memcpy(e->pool_uuid, r->p, sizeof e->pool_uuid);
            r->p += sizeof e->pool_uuid;
            e->has_pool_uuid = 1;
            break;
        default:
            return tkv_err(TKV_CORRUPTION, "version edit: unknown tag %llu at byte %zu", (unsigned long long)tag, at);
        }
    }
}

/* edit_decode -- parses a record into e, which it initialises first (e must
 * not hold anything). On failure e is left empty. */
int edit_decode(const uint8_t *p, size_t n, version_edit *e)
{
    if (!e) return tkv_err(TKV_INVALID, "edit_decode: NULL edit");
    edit_init(e);
    if (n == 0) return tkv_err(TKV_CORRUPTION, "version edit: empty record (no end marker)");
    if (!p) return tkv_err(TKV_INVALID, "edit_decode: NULL input");
    edit_reader r = {p, p, p + n};
    int rc = edit_decode_fields(&r, e);
    if (rc < 0) edit_free(e);
    return rc;
}
