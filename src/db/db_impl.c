// SPDX-License-Identifier: Apache-2.0
/*
 * db_impl.c -- the helpers every engine module shares: the sticky
 * background error, the read-only refusal, shutting down, timed waits on
 * bg_cv and waking the background work (db_impl.h).
 */
#include "db/db_impl.h"

#include <stdio.h>

#include "sched/clock.h"
#include "util/status.h"

void db_set_bg_error(tkv_db *db, int code)
{
    if (db->bg_error) return;
    db->bg_error = code;
    snprintf(db->bg_errmsg, sizeof db->bg_errmsg, "%s", tkv_errmsg());
    if (db->events) {
        tkv_event ev = {.type = TKV_EVENT_BG_ERROR, .status = code, .message = db->bg_errmsg};
        events_post(db->events, &ev);
    }
}

void db_event(tkv_db *db, int type, uint64_t job, int level, int status, uint64_t micros, uint64_t bytes_read,
              uint64_t bytes_written)
{
    if (!db->events) return;
    tkv_event ev = {.type = type,
                    .status = status,
                    .job = job,
                    .level = level,
                    .micros = micros,
                    .bytes_read = bytes_read,
                    .bytes_written = bytes_written};
    events_post(db->events, &ev);
}

int db_bg_error(tkv_db *db) { return tkv_err(db->bg_error, "%s", db->bg_errmsg); }

int db_check_writable(tkv_db *db, const char *what)
{
    if (!db->opts.read_only) return 0;
    return tkv_err(TKV_READ_ONLY, "%s: database %s is open read-only (read_only=1); nothing was written", what,
                   db->dir);
}

void db_shut_down(tkv_db *db)
{
    pthread_mutex_lock(&db->mu);
    db->shutting_down = 1;
    db_bg_signal(db);
    pthread_mutex_unlock(&db->mu);
}

void db_wait_us(tkv_db *db, uint64_t us) { (void)sched_cond_wait_us(&db->bg_cv, &db->mu, us); }

void db_bg_signal(tkv_db *db)
{
    pthread_cond_broadcast(&db->bg_cv);
    if (db->bg) bg_group_kick(db->bg);
}

void db_step_wait(tkv_db *db, uint64_t wait_us)
{
    if (wait_us) db_wait_us(db, wait_us);
    else pthread_cond_wait(&db->bg_cv, &db->mu);
}
