// SPDX-License-Identifier: Apache-2.0
/*
 * io_int.h -- what the I/O layer's own files share (io.c, uring.c): the
 * fault hook, the scheduler's gate and the read accounting, so that a read
 * issued through io_uring is seen exactly as a pread is. Not for other
 * folders: they go through io.h and uring.h.
 */
#ifndef TKV_IO_IO_INT_H
#define TKV_IO_IO_INT_H

#include "io/io.h"

/* io_fault -- asks the process-wide fault hook about an operation: 0 =
 * proceed, > 0 an errno to fail with, < 0 a short write (io.h). */
int io_fault(io_op op, const char *path, size_t len);
/* io_admit -- passes n bytes of f through the scheduler's gate (may sleep,
 * may refuse with a TKV_* error). */
int io_admit(io_file *f, int is_write, size_t n);
/* io_count_read_op -- one read of class cls that started (before the gate)
 * at t0_ns: read_ops and read_ns (io_stats). NULL st is a no-op. Bytes are
 * counted by the caller in read_bytes. */
void io_count_read_op(io_stats *st, io_class cls, uint64_t t0_ns);

#endif
