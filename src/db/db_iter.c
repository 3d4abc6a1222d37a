// SPDX-License-Identifier: Apache-2.0
/*
 * db_iter.c -- user-visible iteration over an internal iterator (LevelDB's
 * DBIter): collapses the versions of each user key to the newest one visible at
 * the snapshot and hides deleted keys, forward and reverse.
 *
 * Direction invariants (as in LevelDB):
 *  - DIR_FWD, valid: the internal iterator is at the entry that is the current
 *    user key's newest visible version; key/value are read from it. saved_key
 *    is only scratch space.
 *  - DIR_REV, valid: the internal iterator is just before (in ikey order) every
 *    entry of the current user key, or not valid if there is nothing before
 *    -- or further before, after a skip over a range tombstone moved the
 *    children older than it back past it (rd_skip): what lies in between is
 *    covered, and a turn forward hides every key up to the current one.
 *    The current user key and value are copies in saved_key / saved_val.
 *  - status != 0: not valid, every call but free/status/valid/key/value is a no-op.
 *
 * Bounds (db_iter_set_bounds): every entry is tested against them as it is
 * met, visible or not, so a scan stops at the first entry past a bound and
 * never reads on into the next range: forward at the first user key >=
 * upper, backward at the first user key < lower. Seeks are clamped into
 * [lower, upper) before they reach the internal iterator.
 */
#include "db/db_iter.h"

#include <stdlib.h>

#include "util/coding.h"
#include "util/status.h"

enum { DIR_FWD, DIR_REV };

/* saved_val buffers larger than the value by more than this are released. */
#define SAVED_VAL_SLACK (1u << 20)

struct db_iter {
    tkv_it *in;
    uint64_t seq; /* snapshot: versions with a larger sequence are invisible */
    int dir;
    int valid;
    int status;
    tkv_buf saved_key; /* DIR_FWD: user key to skip past (or seek target); DIR_REV: current user key */
    tkv_buf saved_val; /* DIR_REV: current value */
    tkv_buf lower;     /* inclusive lower bound of user keys, if has_lower */
    tkv_buf upper;     /* exclusive upper bound, if has_upper */
    int has_lower, has_upper;
    rd_frags *rd;   /* range tombstones visible at the snapshot, by tier (db_iter_set_range_dels); NULL: none */
    size_t rd_at;   /* rd_frags_at's place */
    tkv_buf rd_key; /* scratch: a skip's target */
};

/* db_iter_new -- an unpositioned iterator owning `internal`. */
db_iter *db_iter_new(tkv_it *internal, uint64_t snapshot_seq)
{
    if (!internal) return NULL;
    db_iter *it = calloc(1, sizeof *it);
    if (!it) {
        it_destroy(internal);
        tkv_err(TKV_NO_MEMORY, "db iterator: out of memory");
        return NULL;
    }
    it->in = internal;
    it->seq = snapshot_seq > IKEY_MAX_SEQ ? IKEY_MAX_SEQ : snapshot_seq;
    it->dir = DIR_FWD;
    return it;
}

void db_iter_free(db_iter *it)
{
    if (!it) return;
    it_destroy(it->in);
    buf_free(&it->saved_key);
    buf_free(&it->saved_val);
    buf_free(&it->lower);
    buf_free(&it->upper);
    buf_free(&it->rd_key);
    rd_frags_unref(it->rd);
    free(it);
}

void db_iter_set_range_dels(db_iter *it, rd_frags *f)
{
    rd_frags_unref(it->rd);
    it->rd = f && rd_frags_count(f) ? f : NULL;
    if (!it->rd) rd_frags_unref(f);
    it->rd_at = 0;
}

/* set_buf -- replaces the contents of b with s. 0 or TKV_NO_MEMORY. */
static int set_buf(tkv_buf *b, tkv_slice s)
{
    b->len = 0;
    return buf_append(b, s.p, s.n);
}

static tkv_slice buf_slice(const tkv_buf *b) { return slice(b->data, b->len); }

/* buf_bytes -- b's bytes, never NULL (an empty bound has no storage). */
static const uint8_t *buf_bytes(const tkv_buf *b) { return b->data ? b->data : (const uint8_t *)""; }

/* past_upper / before_lower -- user key uk is outside the bounds. */
static int past_upper(const db_iter *it, tkv_slice uk)
{
    return it->has_upper && ukey_cmp(uk, buf_slice(&it->upper)) >= 0;
}
static int before_lower(const db_iter *it, tkv_slice uk)
{
    return it->has_lower && ukey_cmp(uk, buf_slice(&it->lower)) < 0;
}

int db_iter_set_bounds(db_iter *it, const void *lower, size_t llen, const void *upper, size_t ulen)
{
    it->lower.len = it->upper.len = 0;
    it->has_lower = lower != NULL;
    it->has_upper = upper != NULL;
    if (lower && buf_append(&it->lower, lower, llen)) return TKV_NO_MEMORY;
    if (upper && buf_append(&it->upper, upper, ulen)) return TKV_NO_MEMORY;
    return 0;
}

const void *db_iter_seek_target(const db_iter *it, const void *ukey, size_t *klen)
{
    if (before_lower(it, slice(ukey, *klen))) {
        *klen = it->lower.len;
        return buf_bytes(&it->lower);
    }
    return ukey;
}

/* clear_saved -- empties the saved key and value, releasing an oversized value buffer. */
static void clear_saved(db_iter *it)
{
    it->saved_key.len = 0;
    it->saved_val.len = 0;
    if (it->saved_val.cap > SAVED_VAL_SLACK) buf_free(&it->saved_val);
}

/* fail -- makes the error `code` sticky: not valid from now on. */
static void fail(db_iter *it, int code)
{
    it->valid = 0;
    it->status = code;
    clear_saved(it);
}

/* check_internal -- after an operation: if the internal iterator stopped on an
 * error (an iterator with an error is never valid), take the error over. */
static void check_internal(db_iter *it)
{
    if (!it->status && !it_valid(it->in)) {
        int s = it_status(it->in);
        if (s) fail(it, s);
    }
}

/* parse -- validates the internal key `ik`; TKV_CORRUPTION (recorded) if it is
 * too short or has an unknown type. */
static int parse(tkv_slice ik, ikey_type *type, uint64_t *seq)
{
    if (ik.n < IKEY_TRAILER)
        return tkv_err(TKV_CORRUPTION, "db iterator: internal key of %zu bytes is shorter than its trailer", ik.n);
    uint64_t tr = ikey_trailer(ik);
    if ((tr & 0xff) != IKEY_DELETION && (tr & 0xff) != IKEY_VALUE)
        return tkv_err(TKV_CORRUPTION, "db iterator: internal key with unknown type %u", (unsigned)(tr & 0xff));
    *type = (ikey_type)(tr & 0xff);
    *seq = tr >> 8;
    return 0;
}

/* rd_covers -- user key uk (an entry of seq `seq`) lies under a range
 * tombstone newer than it; *fr its fragment (whose seqs[0] and tiers[0] are
 * the newest tombstone over it and that one's tier). */
static int rd_covers(db_iter *it, tkv_slice uk, uint64_t seq, rd_frag *fr)
{
    if (!it->rd || !rd_frags_at(it->rd, &it->rd_at, uk)) return 0;
    rd_frags_get(it->rd, it->rd_at, fr);
    return fr->seqs[0] > seq;
}

/* rd_skip -- the entry just met (covered by fragment fr) comes from a tier
 * older than fr's newest tombstone: moves every child older than that
 * tombstone's past the fragment (forward: to its end, clamped to the upper
 * bound; backward: before its begin). 1 if the merging iterator moved (then
 * it stands on the next entry to look at), 0 if nothing moved. */
static int rd_skip(db_iter *it, const rd_frag *fr, int backward)
{
    size_t t = fr->tiers[0];
    if (merging_iter_current(it->in) <= t) return 0; /* an entry of its own tier or a newer one: step */
    tkv_slice u = backward ? fr->lo : fr->hi;
    if (!backward && it->has_upper && ukey_cmp(u, buf_slice(&it->upper)) > 0) u = buf_slice(&it->upper);
    if (buf_reserve(&it->rd_key, u.n + IKEY_TRAILER) < 0) return 0;       /* stepping is as right, only slower */
    ikey_encode(it->rd_key.data, u.p, u.n, IKEY_MAX_SEQ, IKEY_SEEK_TYPE); /* the first entry of user key u */
    return merging_iter_skip(it->in, t, slice(it->rd_key.data, u.n + IKEY_TRAILER), backward);
}

/* find_next_user_entry -- DIR_FWD, internal valid: moves forward to the first
 * visible entry that is the newest visible version of a live user key. With
 * `skipping`, entries whose user key is <= saved_key are hidden (after a
 * backward skip over a range tombstone the internal iterator may start well
 * before saved_key when the direction turns: rd_skip). */
static void find_next_user_entry(db_iter *it, int skipping)
{
    do {
        tkv_slice ik = it_key(it->in);
        if (ik.n >= IKEY_TRAILER && past_upper(it, ikey_user(ik))) break; /* so is every later entry: not read */
        ikey_type type;
        uint64_t seq;
        int rc = parse(ik, &type, &seq);
        if (rc) {
            fail(it, rc);
            return;
        }
        if (seq <= it->seq) {
            tkv_slice uk = ikey_user(ik);
            rd_frag fr;
            int covered = rd_covers(it, uk, seq, &fr);
            if (type == IKEY_DELETION || covered) {
                /* hide every older version of uk (they follow this entry); an
                 * entry below saved_key is hidden too, and leaves it: after
                 * a backward range tombstone skip, a turn forward starts
                 * before the current key (rd_skip) */
                if (!skipping || ukey_cmp(uk, buf_slice(&it->saved_key)) > 0) {
                    rc = set_buf(&it->saved_key, uk);
                    if (rc) {
                        fail(it, rc);
                        return;
                    }
                }
                skipping = 1;
                if (covered && rd_skip(it, &fr, 0)) continue; /* on the next entry already */
            } else if (!skipping || ukey_cmp(uk, buf_slice(&it->saved_key)) > 0) {
                it->valid = 1;
                it->saved_key.len = 0;
                return;
            }
        }
        it_next(it->in);
    } while (it_valid(it->in));
    it->saved_key.len = 0;
    it->valid = 0;
}

/* find_prev_user_entry -- DIR_REV: moves backward collecting, for the user key
 * just before the internal position, its newest visible version (the last one
 * met going backward); stops once a live key is complete and the previous user
 * key begins. Leaves the internal iterator before that key's entries. */
static void find_prev_user_entry(db_iter *it)
{
    ikey_type value_type = IKEY_DELETION; /* of the newest visible version seen for saved_key */
    while (it_valid(it->in)) {
        tkv_slice ik = it_key(it->in);
        if (ik.n >= IKEY_TRAILER && before_lower(it, ikey_user(ik))) break; /* so is every earlier entry */
        ikey_type type;
        uint64_t seq;
        int rc = parse(ik, &type, &seq);
        if (rc) {
            fail(it, rc);
            return;
        }
        if (seq <= it->seq) {
            tkv_slice uk = ikey_user(ik);
            if (value_type != IKEY_DELETION && ukey_cmp(uk, buf_slice(&it->saved_key)) < 0)
                break; /* an entry of an earlier user key: the saved one is complete */
            rd_frag fr;
            int covered = rd_covers(it, uk, seq, &fr);
            value_type = covered ? IKEY_DELETION : type;
            if (value_type == IKEY_DELETION) {
                clear_saved(it);
                if (covered && rd_skip(it, &fr, 1)) continue; /* on the next entry back already */
            } else {
                tkv_slice v = it_value(it->in);
                if (it->saved_val.cap > v.n + SAVED_VAL_SLACK) buf_free(&it->saved_val);
                rc = set_buf(&it->saved_key, uk);
                if (!rc) rc = set_buf(&it->saved_val, v);
                if (rc) {
                    fail(it, rc);
                    return;
                }
            }
        }
        it_prev(it->in);
    }
    if (value_type == IKEY_DELETION) { /* ran off the front */
        it->valid = 0;
        clear_saved(it);
        it->dir = DIR_FWD;
    } else {
        it->valid = 1;
    }
}

/* db_iter_seek_first -- the smallest live user key. */
void db_iter_seek_first(db_iter *it)
{
    if (it->status) return;
    if (it->has_lower) {
        db_iter_seek(it, buf_bytes(&it->lower), it->lower.len);
        return;
    }
    it->dir = DIR_FWD;
    clear_saved(it);
    it_seek_first(it->in);
    if (it_valid(it->in)) find_next_user_entry(it, 0);
    else it->valid = 0;
    check_internal(it);
}

/* step_back -- from the first entry at or after some target (or past the
 * end: not valid), to the last entry before it; not valid if there is none. */
static void step_back(db_iter *it)
{
    if (it_valid(it->in)) it_prev(it->in);
    else if (!it_status(it->in)) it_seek_last(it->in);
}

/* seek_before -- positions the internal iterator at the last entry that
 * sorts before internal key `target`, or unpositioned (not valid) if none. */
static void seek_before(db_iter *it, tkv_slice target)
{
    it_seek(it->in, target);
    step_back(it);
}

/* seek_rev_below_upper -- DIR_REV at the largest live user key below the upper
 * bound (db_iter_seek_last with one). */
static void seek_rev_below_upper(db_iter *it)
{
    int rc = buf_reserve(&it->saved_key, it->upper.len + IKEY_TRAILER);
    if (rc) {
        fail(it, rc);
        return;
    }
    ikey_encode(it->saved_key.data, buf_bytes(&it->upper), it->upper.len, IKEY_MAX_SEQ, IKEY_SEEK_TYPE);
    it->saved_key.len = it->upper.len + IKEY_TRAILER;
    seek_before(it, buf_slice(&it->saved_key)); /* the first entry of any key >= upper, minus one */
    it->saved_key.len = 0;
    find_prev_user_entry(it);
}

/* db_iter_seek_last -- the largest live user key (scanning back over its versions). */
void db_iter_seek_last(db_iter *it)
{
    if (it->status) return;
    it->dir = DIR_REV;
    clear_saved(it);
    if (it->has_upper) {
        seek_rev_below_upper(it);
    } else {
        it_seek_last(it->in);
        find_prev_user_entry(it);
    }
    check_internal(it);
}

/* db_iter_seek_for_prev -- the largest live user key <= ukey: seeks past
 * every version of ukey (ikey(ukey, 0, deletion) sorts after all of them but
 * one with that very trailer, stepped over), then scans backward. */
void db_iter_seek_for_prev(db_iter *it, const void *ukey, size_t klen)
{
    if (it->status) return;
    it->dir = DIR_REV;
    clear_saved(it);
    if (it->has_upper && ukey_cmp(slice(ukey, klen), buf_slice(&it->upper)) >= 0) {
        seek_rev_below_upper(it);
        check_internal(it);
        return;
    }
    int rc = buf_reserve(&it->saved_key, klen + IKEY_TRAILER);
    if (rc) {
        fail(it, rc);
        return;
    }
    ikey_encode(it->saved_key.data, ukey, klen, 0, IKEY_DELETION);
    it->saved_key.len = klen + IKEY_TRAILER;
    it_seek(it->in, buf_slice(&it->saved_key));
    while (it_valid(it->in) && ukey_cmp(ikey_user(it_key(it->in)), slice(ukey, klen)) == 0) it_next(it->in);
    step_back(it);
    it->saved_key.len = 0;
    find_prev_user_entry(it);
    check_internal(it);
}

/* db_iter_seek -- seeks to ikey(ukey, snapshot, IKEY_SEEK_TYPE): the newest visible
 * version of ukey, or the first entry of a larger key; then the first live key. */
void db_iter_seek(db_iter *it, const void *ukey, size_t klen)
{
    if (it->status) return;
    ukey = db_iter_seek_target(it, ukey, &klen);
    it->dir = DIR_FWD;
    clear_saved(it);
    int rc = buf_reserve(&it->saved_key, klen + IKEY_TRAILER);
    if (rc) {
        fail(it, rc);
        return;
    }
    ikey_encode(it->saved_key.data, ukey, klen, it->seq, IKEY_SEEK_TYPE);
    it->saved_key.len = klen + IKEY_TRAILER;
    it_seek(it->in, buf_slice(&it->saved_key));
    if (it_valid(it->in)) find_next_user_entry(it, 0); /* saved_key is only scratch from here on */
    else it->valid = 0;
    check_internal(it);
}

/* db_iter_next -- the next larger live user key. */
void db_iter_next(db_iter *it)
{
    if (!it->valid) return;
    if (it->dir == DIR_REV) {
        /* the internal iterator is before the current key's entries: step into
         * them, then skip them with the normal code (saved_key holds the key) */
        it->dir = DIR_FWD;
        if (!it_valid(it->in)) it_seek_first(it->in);
        else it_next(it->in);
    } else {
        /* remember the current user key so that its older versions get skipped */
        int rc = set_buf(&it->saved_key, ikey_user(it_key(it->in)));
        if (rc) {
            fail(it, rc);
            return;
        }
        it_next(it->in);
    }
    if (it_valid(it->in)) {
        find_next_user_entry(it, 1);
    } else {
        it->valid = 0;
        it->saved_key.len = 0;
    }
    check_internal(it);
}

/* db_iter_prev -- the next smaller live user key. */
void db_iter_prev(db_iter *it)
{
    if (!it->valid) return;
    if (it->dir == DIR_FWD) {
        /* the internal iterator is at the current entry: back up until the user
         * key changes, then use the normal reverse scan */
        int rc = set_buf(&it->saved_key, ikey_user(it_key(it->in)));
        if (rc) {
            fail(it, rc);
            return;
        }
        for (;;) {
            it_prev(it->in);
            if (!it_valid(it->in)) {
                it->valid = 0;
                clear_saved(it);
                check_internal(it);
                return;
            }
            if (ukey_cmp(ikey_user(it_key(it->in)), buf_slice(&it->saved_key)) < 0) break;
        }
        it->dir = DIR_REV;
    }
    find_prev_user_entry(it);
    check_internal(it);
}

int db_iter_valid(const db_iter *it) { return it->valid; }

const void *db_iter_key(const db_iter *it, size_t *klen)
{
    if (!it->valid) {
        *klen = 0;
        return NULL;
    }
    tkv_slice uk = it->dir == DIR_REV ? buf_slice(&it->saved_key) : ikey_user(it_key(it->in));
    *klen = uk.n;
    return uk.p ? (const void *)uk.p : ""; /* an empty buffer may have no storage */
}

const void *db_iter_value(const db_iter *it, size_t *vlen)
{
    if (!it->valid) {
        *vlen = 0;
        return NULL;
    }
    tkv_slice v = it->dir == DIR_REV ? buf_slice(&it->saved_val) : it_value(it->in);
    *vlen = v.n;
    return v.p ? (const void *)v.p : "";
}

int db_iter_status(const db_iter *it)
{
    if (it->status) return it->status;
    return it_status(it->in);
}
