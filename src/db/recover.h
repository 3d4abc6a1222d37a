/*
 * recover.h -- WAL recovery at open.
 */
#ifndef TKV_DB_RECOVER_H
#define TKV_DB_RECOVER_H

#include "db/db_impl.h"

/* recover_wals -- replays the WALs the MANIFEST does not cover (number >=
 * log_number) in order into memtables; each WAL's data ends up in memtables
 * tagged with that WAL's number, so the flush thread can retire WALs one by
 * one. A torn tail is counted and skipped; a corrupt record in the middle
 * fails with TKV_CORRUPTION under paranoid_checks. Then a fresh WAL is
 * opened for new writes (a torn tail of an old WAL is never followed by new
 * records in the same file). Single-threaded (open), after mx_open. */
int recover_wals(tkv_db *db);

#endif
