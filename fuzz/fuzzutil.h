// SPDX-License-Identifier: Apache-2.0
/*
 * fuzzutil.h -- what the fuzz targets share: a scratch directory on tmpfs for
 * the decoders that read files, the flags byte that opens every input, and
 * helpers that walk an iterator or repair checksums the way a writer would.
 *
 * Every target's input starts with one flags byte. FZ_FIX asks the target to
 * recompute the checksums its format carries after the mutation (so the
 * fuzzer reaches the structure behind them); without it the bytes go to the
 * decoder as they are (so the checksum checks themselves are exercised).
 * What the other bits mean is the target's own (its first comment says).
 */
#ifndef TKV_FUZZ_FUZZUTIL_H
#define TKV_FUZZ_FUZZUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "util/coding.h"
#include "util/iter.h"

#define FZ_FIX 1u

/* The libFuzzer entry point every target defines. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* fz_check -- a property of the decoder that must hold: aborts (a finding,
 * for libFuzzer and for the replay driver) with the message if it does not. */
#define fz_check(cond, msg) ((cond) ? (void)0 : fz_fail(__FILE__, __LINE__, (msg)))
void fz_fail(const char *file, int line, const char *msg) __attribute__((noreturn));

/* fz_note -- with TKV_FUZZ_DEBUG set in the environment, prints what a
 * decoder said (rc and tkv_errmsg) on stderr: for checking that a seed
 * reaches the code it is meant to. Returns rc. */
int fz_note(const char *what, int rc);

/* fz_dir -- this process's scratch directory (under $TMPDIR if set, else
 * /dev/shm when it exists, else /tmp), created at the first call and removed with its
 * files at exit. */
const char *fz_dir(void);
/* fz_path -- fz_dir()/name in a static buffer (one per call site is enough:
 * targets use a few fixed names). */
const char *fz_path(char *buf, size_t cap, const char *name);
/* fz_write_file -- path holds exactly p[0..n) afterwards (and, when
 * extend_to > n, zeros up to extend_to, sparse). */
void fz_write_file(const char *path, const void *p, size_t n, uint64_t extend_to);
/* fz_clear_dir -- removes every file in directory dir (not dir itself). */
void fz_clear_dir(const char *dir);

/* fz_walk -- drives an internal iterator the way readers do: a forward scan,
 * a backward scan, and seeks to each key met (at most max_seeks) and to
 * `extra` (if at least IKEY_TRAILER bytes). Touches every key and value byte
 * (so a bad pointer shows up under ASan). When every pass ends without an
 * error, the two scans must agree on the count. Returns the forward count. */
size_t fz_walk(tkv_it *it, tkv_slice extra, size_t max_seeks);

/* fz_fix_framing -- the WAL record framing (docs/format-wal.md) in buf[0..n):
 * a valid version-1 file header (the MANIFEST's) and, for each record whose
 * declared length fits, its checksum recomputed. */
void fz_fix_framing(uint8_t *buf, size_t n);
/* fz_fix_framing_v2 -- the same with a version-2 header (the database's
 * WALs): its chain fields and frontier (bytes 16..39, 48..55) kept as the
 * input has them, its checksums recomputed (the frontier slot's only with
 * fix_slot), the records from byte 64. */
void fz_fix_framing_v2(uint8_t *buf, size_t n, int fix_slot);

#endif
