// SPDX-License-Identifier: Apache-2.0
/* glue.c -- see glue.h. */
#include "glue.h"

#include <stdio.h>
#include <string.h>

/* fail -- copies this thread's tierkv message for status rc into e (the
 * status name when the library left none) and returns rc. */
static int fail(int rc, gtkv_err *e)
{
    const char *m = tkv_errmsg();
    if (m == NULL || *m == '\0') m = tkv_strerror(rc);
    snprintf(e->msg, sizeof e->msg, "%s", m);
    return rc;
}

static int check(int rc, gtkv_err *e)
{
    return rc < 0 ? fail(rc, e) : rc;
}

/* gtkv_options -- options from n name/value pairs packed as
 * "name\0value\0name\0value\0...". On error nothing is returned in *out. */
int gtkv_options(const char *packed, size_t n, tkv_options **out, gtkv_err *e)
{
    *out = NULL;
    tkv_options *o = tkv_options_new();
    if (o == NULL) return fail(TKV_NO_MEMORY, e);
    const char *p = packed;
    for (size_t i = 0; i < n; i++) {
        const char *name = p;
        const char *val = name + strlen(name) + 1;
        p = val + strlen(val) + 1;
        int rc = tkv_options_set(o, name, val);
        if (rc != TKV_OK) {
            fail(rc, e);
            tkv_options_free(o);
            return rc;
        }
    }
    *out = o;
    return TKV_OK;
}

int gtkv_open(const char *dir, const tkv_options *opts, tkv_db **out, gtkv_err *e)
{
    return check(tkv_open(dir, opts, out), e);
}

int gtkv_close(tkv_db *db, gtkv_err *e)
{
    return check(tkv_close(db), e);
}

int gtkv_destroy(const char *dir, gtkv_err *e)
{
    return check(tkv_destroy(dir), e);
}

int gtkv_put(tkv_db *db, const void *k, size_t kl, const void *v, size_t vl, unsigned flags, gtkv_err *e)
{
    return check(tkv_put(db, k, kl, v, vl, flags), e);
}

int gtkv_delete(tkv_db *db, const void *k, size_t kl, unsigned flags, gtkv_err *e)
{
    return check(tkv_delete(db, k, kl, flags), e);
}

int gtkv_delete_range(tkv_db *db, const void *b, size_t bl, const void *en, size_t el, unsigned flags, gtkv_err *e)
{
    return check(tkv_delete_range(db, b, bl, en, el, flags), e);
}

int gtkv_get(tkv_db *db, const tkv_snapshot *s, const void *k, size_t kl, void **v, size_t *vl, gtkv_err *e)
{
    return check(tkv_get(db, s, k, kl, v, vl), e);
}

/* gtkv_multi_get -- the n keys lie back to back in `keys`, klens[i] bytes
 * each; the pointer array tkv_multi_get wants is built here, in C memory.
 * The first key whose status is an error leaves its message in e. */
int gtkv_multi_get(tkv_db *db, const tkv_snapshot *s, size_t n, const char *keys, const size_t *klens, void **vals,
                   size_t *vlens, int *st, gtkv_err *e)
{
    const void **ptrs = malloc((n ? n : 1) * sizeof *ptrs);
    if (ptrs == NULL) return fail(TKV_NO_MEMORY, e);
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        ptrs[i] = keys + off;
        off += klens[i];
    }
    int rc = tkv_multi_get(db, s, n, (const void *const *)ptrs, klens, vals, vlens, st);
    free(ptrs);
    if (rc < 0) return fail(rc, e);
    for (size_t i = 0; i < n; i++)
        if (st[i] < 0) {
            fail(st[i], e);
            break;
        }
    return rc;
}

int gtkv_batch_new(tkv_batch **out, gtkv_err *e)
{
    *out = tkv_batch_new();
    return *out ? TKV_OK : fail(TKV_NO_MEMORY, e);
}

int gtkv_batch_put(tkv_batch *b, const void *k, size_t kl, const void *v, size_t vl, gtkv_err *e)
{
    return check(tkv_batch_put(b, k, kl, v, vl), e);
}

int gtkv_batch_delete(tkv_batch *b, const void *k, size_t kl, gtkv_err *e)
{
    return check(tkv_batch_delete(b, k, kl), e);
}

int gtkv_batch_delete_range(tkv_batch *b, const void *k, size_t kl, const void *en, size_t el, gtkv_err *e)
{
    return check(tkv_batch_delete_range(b, k, kl, en, el), e);
}

int gtkv_write(tkv_db *db, tkv_batch *b, unsigned flags, gtkv_err *e)
{
    return check(tkv_write(db, b, flags), e);
}

int gtkv_snapshot_new(tkv_db *db, const tkv_snapshot **out, gtkv_err *e)
{
    *out = tkv_snapshot_new(db);
    return *out ? TKV_OK : fail(TKV_NO_MEMORY, e);
}

int gtkv_iter_new(tkv_db *db, const tkv_snapshot *s, tkv_iter **out, gtkv_err *e)
{
    return check(tkv_iter_new(db, s, out), e);
}

/* gtkv_iter_move -- one move (op: GTKV_*; k/kl for GTKV_SEEK) and where it
 * left the iterator, in one call. */
void gtkv_iter_move(tkv_iter *it, int op, const void *k, size_t kl, gtkv_pos *p, gtkv_err *e)
{
    switch (op) {
    case GTKV_SEEK: tkv_iter_seek(it, k, kl); break;
    case GTKV_SEEK_FIRST: tkv_iter_seek_first(it); break;
    case GTKV_SEEK_LAST: tkv_iter_seek_last(it); break;
    case GTKV_NEXT: tkv_iter_next(it); break;
    case GTKV_PREV: tkv_iter_prev(it); break;
    default: break;
    }
    p->valid = tkv_iter_valid(it);
    p->status = TKV_OK;
    p->key = p->val = NULL;
    p->klen = p->vlen = 0;
    if (p->valid) {
        p->key = tkv_iter_key(it, &p->klen);
        p->val = tkv_iter_value(it, &p->vlen);
    } else {
        p->status = check(tkv_iter_status(it), e);
    }
}

int gtkv_flush(tkv_db *db, gtkv_err *e)
{
    return check(tkv_flush(db), e);
}

int gtkv_checkpoint(tkv_db *db, const char *dir, gtkv_err *e)
{
    return check(tkv_checkpoint(db, dir), e);
}

int gtkv_property(tkv_db *db, const char *name, char **out, gtkv_err *e)
{
    *out = tkv_property(db, name);
    return *out ? TKV_OK : fail(TKV_INVALID, e);
}

int gtkv_verify(const char *dir, const tkv_options *opts, char **report, gtkv_err *e)
{
    *report = NULL;
    return check(tkv_verify(dir, opts, report), e);
}
