// SPDX-License-Identifier: Apache-2.0
/*
 * superversion.h -- views: the refcounted superversion (memtables and the
 * matrix container's rows, db_impl.h) and pinning it together with the
 * current version of the SSD tree.
 *
 * A view is a superversion and the version pinned with it, both taken under
 * db->mu, so the two always agree (mx_int.h, invariant 1). Superversions
 * are immutable: every change installs a new one under mu.
 */
#ifndef TKV_DB_SUPERVERSION_H
#define TKV_DB_SUPERVERSION_H

#include "db/db_impl.h"

/* sv_new -- a superversion holding mem and imm[0..nimm) (plus one more
 * immutable memtable `extra` with WAL number `extra_wal` appended when
 * non-NULL) and `rows`; takes new references on all of them. NULL on out
 * of memory. */
superversion *sv_new(memtable *mem, memtable *const *imm, const uint64_t *imm_wal, size_t nimm, memtable *extra,
                     uint64_t extra_wal, rowset *rows);

/* sv_ref / sv_unref -- reference counting (sv_unref is NULL-safe and frees
 * with the last reference). */
superversion *sv_ref(superversion *sv);
void sv_unref(superversion *sv);

/* sv_install -- makes nsv (reference passed) the current superversion and
 * drops the old one. Caller holds mu. */
void sv_install(tkv_db *db, superversion *nsv);

/* sv_replace -- installs a new current superversion: the current one without
 * its `drop_imm` oldest immutable memtables, with `rows` (ref taken; NULL =
 * keep the current rowset). Caller holds mu. 0 or TKV_NO_MEMORY (nothing
 * changed). */
int sv_replace(tkv_db *db, size_t drop_imm, rowset *rows);

/* sv_get_view -- pins the current superversion and the current version (*v;
 * release it with version_unref) and reads the sequence to read at (the
 * snapshot's, or the last published one). Takes mu. */
superversion *sv_get_view(tkv_db *db, const tkv_snapshot *snap, uint64_t *seq, version **v);

#endif
