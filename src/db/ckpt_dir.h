// SPDX-License-Identifier: Apache-2.0
/*
 * ckpt_dir.h -- the directory a checkpoint is built in (tkv_checkpoint,
 * db_checkpoint.c): a temporary sibling of the final name, marked
 * incomplete and locked while it is built, SSTs hard-linked or copied into
 * it, and published by one rename at the end (docs/checkpoint.md).
 *
 * Persistence order (a crash or power cut at any step leaves no directory
 * at the final name, or a complete one):
 *  (1) mkdir OUT.tmp-ckpt-<pid>-<n>; flock it; create the marker
 *      CKPT_MARKER_FILE in it and fsync the directory: from here on,
 *      tkv_open refuses the directory (ckpt_dir_incomplete);
 *  (2) the caller fills it: every file written is fsynced, every name
 *      (links included) made durable by a directory fsync;
 *  (3) ckpt_dir_publish: fsync the directory, remove the marker, fsync it
 *      again, rename it to OUT (never over an existing OUT), fsync the
 *      parent.
 * On failure before (3) ends, ckpt_dir_end removes the temporary
 * directory. One a crash left behind (marker present, lock free) is
 * removed by the next checkpoint to the same OUT.
 */
#ifndef TKV_DB_CKPT_DIR_H
#define TKV_DB_CKPT_DIR_H

#include <stdint.h>

#include "io/io.h"

/* Present in a checkpoint's directory until it is complete. */
#define CKPT_MARKER_FILE "CHECKPOINT-INCOMPLETE"

typedef struct ckpt_dir {
    char *out;    /* the final name (trailing slashes dropped) */
    char *tmp;    /* where it is built: out + ".tmp-ckpt-<pid>-<n>" */
    char *parent; /* the directory holding both */
    int lock_fd;  /* tmp, flock'd (LOCK_EX) while it is built; -1: none */
    int made;     /* tmp exists (ckpt_dir_end removes it unless published) */
    int copy;     /* a link failed with IO_LINK_UNSUPPORTED: copy every later file */
    io_stats *st;
} ckpt_dir;

/* ckpt_dir_begin -- step (1) for the final name out_dir: TKV_INVALID if it
 * is empty or exists, or if its parent does not exist or is not a
 * directory; first removes what earlier checkpoints to out_dir left behind
 * (temporary directories with the marker whose builder is gone). I/O is
 * counted in st. On error the caller still calls ckpt_dir_end. */
int ckpt_dir_begin(ckpt_dir *d, const char *out_dir, io_stats *st);
/* ckpt_dir_add -- puts the file `src` of `size` bytes into the directory as
 * `name`: a hard link, or where the file systems cannot link (another file
 * system) a copy, fdatasync'd (TKV_CORRUPTION if src is shorter than size).
 * The name is made durable by ckpt_dir_publish's directory fsync. */
int ckpt_dir_add(ckpt_dir *d, const char *src, const char *name, uint64_t size);
/* ckpt_dir_publish -- step (3). On error the final name does not exist. */
int ckpt_dir_publish(ckpt_dir *d);
/* ckpt_dir_end -- removes the temporary directory unless published,
 * releases its lock and frees d's strings. */
void ckpt_dir_end(ckpt_dir *d);

/* ckpt_dir_incomplete -- 1 if directory `dir` holds the marker: a
 * checkpoint still being built, or one a crash cut short. */
int ckpt_dir_incomplete(const char *dir);

#endif
