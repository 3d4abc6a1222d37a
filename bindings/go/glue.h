// SPDX-License-Identifier: Apache-2.0
/*
 * glue.h -- the C side of the Go binding: one small function per tierkv call
 * that also copies tkv_errmsg() into the caller's gtkv_err when the call
 * fails. tkv_errmsg() is per thread, and a goroutine may run its next cgo call
 * on another OS thread, so the message is taken inside the same C call as the
 * function that failed.
 *
 * Nothing here keeps a pointer it was given after it returns.
 */
#ifndef TIERKV_GO_GLUE_H
#define TIERKV_GO_GLUE_H

#include <stddef.h>
#include <stdlib.h>

#include "tierkv.h"

#define GTKV_MSG_CAP 1024

/* gtkv_err -- where a failing call leaves tkv_errmsg() (NUL-terminated,
 * truncated to GTKV_MSG_CAP-1 bytes). */
typedef struct {
    char msg[GTKV_MSG_CAP];
} gtkv_err;

/* gtkv_pos -- an iterator's position after a move: its entry when valid, its
 * status when not. */
typedef struct {
    const void *key;
    size_t klen;
    const void *val;
    size_t vlen;
    int valid;
    int status;
} gtkv_pos;

enum { GTKV_SEEK = 0, GTKV_SEEK_FIRST, GTKV_SEEK_LAST, GTKV_NEXT, GTKV_PREV };

int gtkv_options(const char *packed, size_t n, tkv_options **out, gtkv_err *e);
int gtkv_open(const char *dir, const tkv_options *opts, tkv_db **out, gtkv_err *e);
int gtkv_close(tkv_db *db, gtkv_err *e);
int gtkv_destroy(const char *dir, gtkv_err *e);
int gtkv_put(tkv_db *db, const void *k, size_t kl, const void *v, size_t vl, unsigned flags, gtkv_err *e);
int gtkv_delete(tkv_db *db, const void *k, size_t kl, unsigned flags, gtkv_err *e);
int gtkv_delete_range(tkv_db *db, const void *b, size_t bl, const void *en, size_t el, unsigned flags, gtkv_err *e);
int gtkv_get(tkv_db *db, const tkv_snapshot *s, const void *k, size_t kl, void **v, size_t *vl, gtkv_err *e);
int gtkv_multi_get(tkv_db *db, const tkv_snapshot *s, size_t n, const char *keys, const size_t *klens, void **vals,
                   size_t *vlens, int *st, gtkv_err *e);
int gtkv_batch_new(tkv_batch **out, gtkv_err *e);
int gtkv_batch_put(tkv_batch *b, const void *k, size_t kl, const void *v, size_t vl, gtkv_err *e);
int gtkv_batch_delete(tkv_batch *b, const void *k, size_t kl, gtkv_err *e);
int gtkv_batch_delete_range(tkv_batch *b, const void *k, size_t kl, const void *en, size_t el, gtkv_err *e);
int gtkv_write(tkv_db *db, tkv_batch *b, unsigned flags, gtkv_err *e);
int gtkv_snapshot_new(tkv_db *db, const tkv_snapshot **out, gtkv_err *e);
int gtkv_iter_new(tkv_db *db, const tkv_snapshot *s, tkv_iter **out, gtkv_err *e);
void gtkv_iter_move(tkv_iter *it, int op, const void *k, size_t kl, gtkv_pos *p, gtkv_err *e);
int gtkv_flush(tkv_db *db, gtkv_err *e);
int gtkv_checkpoint(tkv_db *db, const char *dir, gtkv_err *e);
int gtkv_property(tkv_db *db, const char *name, char **out, gtkv_err *e);
int gtkv_verify(const char *dir, const tkv_options *opts, char **report, gtkv_err *e);

#endif
