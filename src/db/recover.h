// SPDX-License-Identifier: Apache-2.0
/*
 * recover.h -- WAL recovery at open, and the chain rule it replays the logs
 * by (also tkv_verify's).
 */
#ifndef TKV_DB_RECOVER_H
#define TKV_DB_RECOVER_H

#include "db/db_impl.h"

/* recover_wals -- replays the WALs the MANIFEST does not cover (number >=
 * log_number) in order into memtables, as a chain (recover.c: a log whose
 * predecessor did not survive to the size it had when the log was started
 * is dropped, with what depends on it, so that what is recovered is a
 * prefix of the acknowledged writes); each WAL's data ends up in memtables
 * tagged with that WAL's number, so the flush thread can retire WALs one by
 * one. A torn tail (or torn hole) is counted and skipped; a corrupt record
 * fails with TKV_CORRUPTION under paranoid_checks (without it the log is
 * replayed up to it and no log after it that depends on the rest). The
 * replayed logs are synced, dropped ones deleted, the directory synced. Then
 * a fresh WAL is opened for new writes, naming the last log replayed at the
 * size replayed as its predecessor (a torn tail of an old WAL is never
 * followed by new records in the same file). Single-threaded (open), after
 * mx_open.
 * read_only=1: the replay alone. The memtables hold every replayed record
 * in DRAM -- as many memtables as the logs fill, past `memtables` and the
 * DRAM budget (nothing will flush them) -- and no log is synced, deleted
 * or opened for writing; db->wal stays NULL. */
int recover_wals(tkv_db *db);

/* ---------------------------------------------------------------- the chain rule */

/* What the chain rule remembers of one log it has seen (in number order). */
typedef struct wal_chain_log {
    uint64_t number;
    uint64_t end;     /* where its intact records end (wal_replay_stats.end) */
    uint64_t records; /* records replayed from it */
    int replayed;     /* its records were replayed (perhaps up to a skipped corruption) */
    int header_ok;    /* it has a valid header: it can be a predecessor */
    int dropped;      /* the chain rule refused it: recovery deletes it */
} wal_chain_log;

typedef struct wal_chain {
    uint64_t log_number; /* the MANIFEST's: logs below it are in the tiers below */
    wal_chain_log *logs;
    size_t n, cap;
    int v1_stop; /* a log was dropped, skipped or cut short: no version-1 log may follow */
} wal_chain;

/* How a log was taken (wal_chain_add). */
enum { WAL_CHAIN_REPLAYED, WAL_CHAIN_CUT, WAL_CHAIN_DROPPED, WAL_CHAIN_SKIPPED };

/* wal_header_number -- the header h of the log file numbered `number` (at
 * path) against its name (docs/format-wal.md N1, N2): 0 if they agree (or
 * the header names none: versions 0 and 1); 1 if it names a lower number --
 * a recycled log whose new header never reached the disk, which is read as
 * an empty log: h is cleared to version 0, its file_size kept;
 * TKV_CORRUPTION (message naming path) if it names a higher one. */
int wal_header_number(const char *path, uint64_t number, wal_replay_stats *h);

/* wal_chain_check -- NULL if the log whose header h describes (wal_read_header
 * or wal_replay) may be replayed after the logs added so far, else why not
 * (static text). An empty log (version 0) may always be: it holds nothing. */
const char *wal_chain_check(const wal_chain *c, const wal_replay_stats *h);

/* wal_chain_add -- records log `number` as taken `how`: WAL_CHAIN_REPLAYED
 * (st: its replay), WAL_CHAIN_CUT (replayed up to a corruption that was
 * skipped; st.end is where it stopped), WAL_CHAIN_DROPPED (refused by
 * wal_chain_check) or WAL_CHAIN_SKIPPED (a bad header, skipped). st may be
 * NULL for the last two. 0 or TKV_NO_MEMORY. */
int wal_chain_add(wal_chain *c, uint64_t number, const wal_replay_stats *st, int how);

/* wal_chain_tip -- the last replayed log with a valid header (the next WAL's
 * predecessor), or NULL. */
const wal_chain_log *wal_chain_tip(const wal_chain *c);

void wal_chain_free(wal_chain *c);

#endif
