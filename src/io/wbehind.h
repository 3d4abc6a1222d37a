// SPDX-License-Identifier: Apache-2.0
/*
 * wbehind.h -- write-behind for a direct append file (io.h, IO_WRITE_BEHIND):
 * a full staging buffer goes to the device through a private io_uring ring
 * while the writer fills the other buffer, so a compaction's CPU work and
 * its device writes overlap instead of taking turns.
 *
 * One write is in flight at a time (two staging buffers: the one in flight
 * and the one being filled). When the file syncs incrementally
 * (bytes_per_sync), the fdatasync is linked after the write in the same
 * submission, so it too runs behind the writer. A write's result is known
 * only at the next io_wbehind_wait -- made before its buffer is reused,
 * before io_sync writes the tail, and at io_close -- so an error surfaces
 * one stage late, on the call that waits. That is enough for the files that
 * use it (SST outputs): nothing acknowledges a byte of them before io_sync
 * returns, and a failed output is discarded whole.
 *
 * Thread safety: none; the file's single writer owns it (as io_file).
 */
#ifndef TKV_IO_WBEHIND_H
#define TKV_IO_WBEHIND_H

#include <stddef.h>
#include <stdint.h>

typedef struct io_wbehind io_wbehind;

/* io_wbehind_new -- a private ring for one file; NULL when io_uring cannot
 * be set up (the file then writes synchronously: nothing is lost). */
io_wbehind *io_wbehind_new(void);
/* io_wbehind_submit -- starts writing n bytes of buf (aligned, kept
 * untouched until the wait) at off of fd, then, if sync, an fdatasync of fd
 * linked after it. At most one submission may be outstanding. 0, or an
 * errno (the submission failed: nothing was started). */
int io_wbehind_submit(io_wbehind *w, int fd, const uint8_t *buf, size_t n, uint64_t off, int sync);
/* io_wbehind_wait -- waits for the outstanding submission (none: returns at
 * once). 0 when the write and its fdatasync completed; else an errno and
 * *what says which ("write" or "fdatasync") and *at the file offset of the
 * first byte not written. A short write is finished here with pwrite. Sets
 * *synced when a linked fdatasync completed. */
int io_wbehind_wait(io_wbehind *w, const char **what, uint64_t *at, int *synced);
/* io_wbehind_free -- waits for anything outstanding (its result dropped),
 * then frees the ring. NULL ok. */
void io_wbehind_free(io_wbehind *w);

#endif
