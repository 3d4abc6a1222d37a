// SPDX-License-Identifier: Apache-2.0
/*
 * superversion.c -- views: superversions and pinning them with the current
 * version (superversion.h).
 */
#include "db/superversion.h"

#include <stdlib.h>

#include "util/status.h"

superversion *sv_ref(superversion *sv)
{
    __atomic_fetch_add(&sv->refs, 1, __ATOMIC_RELAXED);
    return sv;
}

void sv_unref(superversion *sv)
{
    if (!sv || __atomic_sub_fetch(&sv->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    memtable_unref(sv->mem);
    for (size_t i = 0; i < sv->nimm; i++) memtable_unref(sv->imm[i]);
    rowset_unref(sv->rows);
    free(sv->imm);
    free(sv->imm_wal);
    free(sv);
}

superversion *sv_new(memtable *mem, memtable *const *imm, const uint64_t *imm_wal, size_t nimm, memtable *extra,
                     uint64_t extra_wal, rowset *rows)
{
    superversion *sv = calloc(1, sizeof *sv);
    size_t n = nimm + (extra != NULL);
    if (!sv) return NULL;
    sv->imm = calloc(n ? n : 1, sizeof *sv->imm);
    sv->imm_wal = calloc(n ? n : 1, sizeof *sv->imm_wal);
    if (!sv->imm || !sv->imm_wal) {
        free(sv->imm);
        free(sv->imm_wal);
        free(sv);
        return NULL;
    }
    sv->refs = 1;
    sv->mem = mem;
    memtable_ref(mem);
    for (size_t i = 0; i < nimm; i++) {
        sv->imm[i] = imm[i];
        sv->imm_wal[i] = imm_wal[i];
        memtable_ref(imm[i]);
    }
    if (extra) {
        sv->imm[nimm] = extra;
        sv->imm_wal[nimm] = extra_wal;
        memtable_ref(extra);
    }
    sv->nimm = n;
    sv->rows = rowset_ref(rows);
    return sv;
}

void sv_install(tkv_db *db, superversion *nsv)
{
    superversion *old = db->sv;
    db->sv = nsv;
    sv_unref(old);
}

int sv_replace(tkv_db *db, size_t drop_imm, rowset *rows)
{
    superversion *cur = db->sv;
    if (drop_imm > cur->nimm) drop_imm = cur->nimm;
    superversion *nsv = sv_new(cur->mem, cur->imm + drop_imm, cur->imm_wal + drop_imm, cur->nimm - drop_imm, NULL, 0,
                               rows ? rows : cur->rows);
    if (!nsv) return tkv_err(TKV_NO_MEMORY, "out of memory installing a superversion");
    sv_install(db, nsv);
    return 0;
}

superversion *sv_get_view(tkv_db *db, const tkv_snapshot *snap, uint64_t *seq, version **v)
{
    pthread_mutex_lock(&db->mu);
    superversion *sv = sv_ref(db->sv);
    *v = vset_current(db->vs);
    version_ref(*v);
    *seq = snap ? snap->seq : __atomic_load_n(&db->last_seq, __ATOMIC_ACQUIRE);
    pthread_mutex_unlock(&db->mu);
    return sv;
}
