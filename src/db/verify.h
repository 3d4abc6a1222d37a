// SPDX-License-Identifier: Apache-2.0
/*
 * verify.h -- the checks behind tkv_verify (db_verify.c): every file of a
 * closed database, read without changing anything, and whether the files
 * agree with each other.
 *
 *   verify_manifest  CURRENT and the MANIFEST it names (every record's
 *                    checksum, every edit decoded and applied)
 *   verify_wals      every WAL the MANIFEST does not cover (every record's
 *                    checksum, every batch decoded)
 *   verify_ssts      every SST the MANIFEST lists (footer, index, filter,
 *                    properties, every data block and entry: table_check),
 *                    against the MANIFEST's record of it; other SSTs noted
 *   verify_pool      the pmem pool (header, directory, every row header and
 *                    page ownership, every RowTable: pages, metadata, entries)
 *                    and its agreement with the MANIFEST (uuid, rows, cursors)
 *
 * Rules: nothing is written, created, renamed, deleted, reserved or
 * punched (files are opened O_RDONLY, the pool is mapped PROT_READ); the
 * caller holds shared locks so that no database opens meanwhile. A problem
 * (damage, or files that disagree) is recorded with the reader's own
 * message, which names the file, and the checks go on with the next object;
 * a note is something a crash legitimately leaves that the next open will
 * clean up (a torn log tail, an orphan SST, a row the MANIFEST does not
 * list). Implemented in verify_files.c (recording, the MANIFEST, the WALs,
 * the SSTs) and verify_pool.c, which uses the recording of verify_files.c
 * (src/db/LAYERS).
 */
#ifndef TKV_DB_VERIFY_H
#define TKV_DB_VERIFY_H

#include <stdint.h>

#include "db/options.h"
#include "sst/version.h"
#include "util/coding.h"

/* Problems listed in the report (all are counted). */
#define VERIFY_MAX_LISTED 100

typedef struct verify_ctx {
    const char *dir;
    const struct tkv_options *opts; /* pmem_path; never NULL */
    version_set *vs;                /* the MANIFEST's state; NULL when it could not be read */
    char manifest[64];              /* "MANIFEST-000005", or "" */
    /* what was checked */
    uint64_t manifest_records;
    uint64_t wal_files, wal_records, wal_bytes;
    uint64_t sst_files, sst_blocks, sst_entries;
    char pool_path[4096]; /* "" when there is no pool */
    int pool_checked;     /* 1: the pool's header and directory were read */
    uint64_t pool_rows, pool_pages, row_entries;
    /* what was found */
    uint64_t problems, notes;
    int status;       /* TKV_CORRUPTION if a problem was, else TKV_IO_ERROR (0: no problem) */
    char first[1024]; /* the first problem's message */
    tkv_buf problem_lines, note_lines;
    int oom; /* the report text is incomplete */
} verify_ctx;

/* verify_problem -- records a problem of code rc whose message is
 * tkv_errmsg(); `file` (a path or a name, may be NULL) is put in front of
 * the message unless the message names it already. */
void verify_problem(verify_ctx *v, int rc, const char *file);
/* verify_note -- records a note (printf-style). */
void verify_note(verify_ctx *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* verify_manifest -- reads CURRENT and the MANIFEST (v->vs on success).
 * Returns 0, or TKV_NO_MEMORY (everything else is a problem). */
int verify_manifest(verify_ctx *v);
/* verify_wals -- the WALs the MANIFEST's log number does not cover (all of
 * them without a MANIFEST). 0 or TKV_NO_MEMORY. */
int verify_wals(verify_ctx *v);
/* verify_ssts -- the SSTs the MANIFEST lists (every one in the directory
 * without a MANIFEST). 0 or TKV_NO_MEMORY. */
int verify_ssts(verify_ctx *v);
/* verify_pool -- the pmem pool, if there is one. 0, TKV_BUSY (an open
 * database holds the pool) or TKV_NO_MEMORY. */
int verify_pool(verify_ctx *v);

/* verify_list -- the sorted numbers of the files "<digits><suffix>" in dir
 * (*out malloc'd, NULL when none). 0 or an error. */
int verify_list(const char *dir, const char *suffix, uint64_t **out, size_t *n);

#endif
