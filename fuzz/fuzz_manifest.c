// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_manifest.c -- fuzz target: the MANIFEST reader. A database directory
 * holds CURRENT naming MANIFEST-000001, whose bytes the fuzzer gives, and
 * vset_open recovers it as tkv_open does: the record framing (the WAL's),
 * each record's version edit (edit_decode), the edits applied one by one
 * (version_build: level rules, file and row bookkeeping), the snapshot rule,
 * every listed SST checked on disk, then a new MANIFEST written. A version
 * set that opens is read (current version, live files) and closed.
 *
 * Input: flags byte, then the MANIFEST file.
 *   FZ_FIX   a valid framing header and record checksums (fz_fix_framing)
 *   bit 1    create the SST files the records add, with their recorded
 *            sizes (sparse), so recovery gets past the file check
 *   bit 2    no CURRENT file (the crash-at-creation path: MANIFEST-000001
 *            alone)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz/fuzzutil.h"
#include "mem/wal.h"
#include "sst/version.h"
#include "util/status.h"

#define FZ_MAKE_FILES 2u
#define FZ_NO_CURRENT 4u

/* make_files -- the SSTs the (framed) records add, at their sizes. */
static void make_files(const char *dir, const uint8_t *m, size_t n)
{
    size_t off = WAL_HEADER_SIZE, made = 0;
    while (n >= WAL_HEADER_SIZE && n - off >= WAL_RECORD_HEADER && made < 64) {
        size_t len = dec_u32(m + off + 4);
        if (len > n - off - WAL_RECORD_HEADER) break;
        version_edit e;
        if (edit_decode(m + off + WAL_RECORD_HEADER, len, &e) == 0) {
            for (size_t i = 0; i < e.nadded && made < 64; i++, made++) {
                char name[600];
                snprintf(name, sizeof name, "%s/%06llu.sst", dir, (unsigned long long)e.added[i].f->number);
                uint64_t sz = e.added[i].f->size;
                fz_write_file(name, "", 0, sz > (UINT64_C(1) << 40) ? 0 : sz);
            }
            edit_free(&e);
        }
        off += WAL_RECORD_HEADER + len;
    }
}

/* read_vset -- what a caller of a recovered version set reads. */
static void read_vset(version_set *vs)
{
    version *v = vset_current(vs);
    fz_check(v != NULL, "no current version");
    for (int l = 0; l < VERSION_LEVELS; l++) {
        fz_check(version_level_bytes(v, l) < UINT64_MAX, "level bytes");
        for (size_t i = 0; i < v->nfiles[l]; i++)
            fz_check(v->files[l][i]->number < vset_next_file_number(vs), "next_file not past a live file");
    }
    uint64_t *live = NULL;
    size_t n = 0;
    if (vset_live_files(vs, &live, &n) == 0) free(live);
    for (size_t i = 0; i < v->nrows; i++) {
        uint64_t floor;
        fz_check(vset_row_floor(vs, v->rows[i].row_id, &floor) == 1, "a row of the current version has no floor");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    uint8_t flags = data[0];
    data++, size--;
    char dir[512], path[600];
    fz_path(dir, sizeof dir, "db");
    mkdir(dir, 0755);
    uint8_t *m = malloc(size ? size : 1);
    if (!m) return 0;
    memcpy(m, data, size);
    if (flags & FZ_FIX) fz_fix_framing(m, size);
    snprintf(path, sizeof path, "%s/MANIFEST-000001", dir);
    fz_write_file(path, m, size, 0);
    if (!(flags & FZ_NO_CURRENT)) {
        snprintf(path, sizeof path, "%s/CURRENT", dir);
        fz_write_file(path, "MANIFEST-000001\n", 16, 0);
    }
    if (flags & FZ_MAKE_FILES) make_files(dir, m, size);
    free(m);
    version_set *vs = NULL;
    int rc = fz_note("vset_open", vset_open(dir, NULL, &vs));
    if (rc == 0) {
        read_vset(vs);
        vset_close(vs);
    } else {
        fz_check(rc == TKV_CORRUPTION || rc == TKV_NO_MEMORY, "vset_open failed with an unexpected code");
        fz_check(vs == NULL, "a failed vset_open returned a set");
    }
    fz_clear_dir(dir);
    return 0;
}
