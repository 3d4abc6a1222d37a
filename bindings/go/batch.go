// SPDX-License-Identifier: Apache-2.0

package tierkv

// #include "glue.h"
import "C"

import "bytes"

// Batch collects puts and deletes that DB.Write applies atomically. The zero
// value is an empty batch. Its operations are copied into C memory as they
// are added; Close frees that memory (a closed Batch may be used again: it
// starts empty). A Batch belongs to one goroutine at a time.
type Batch struct {
	c *C.tkv_batch
	n int
}

// NewBatch returns an empty batch.
func NewBatch() *Batch { return &Batch{} }

func (b *Batch) handle() (*C.tkv_batch, error) {
	if b.c == nil {
		var e C.gtkv_err
		if err := newError(C.gtkv_batch_new(&b.c, &e), &e); err != nil {
			return nil, err
		}
	}
	return b.c, nil
}

// Put appends a put of key to value. On error the batch is unchanged.
func (b *Batch) Put(key, value []byte) error {
	c, err := b.handle()
	if err != nil {
		return err
	}
	var e C.gtkv_err
	rc := C.gtkv_batch_put(c, bytesPtr(key), C.size_t(len(key)), bytesPtr(value), C.size_t(len(value)), &e)
	if err := newError(rc, &e); err != nil {
		return err
	}
	b.n++
	return nil
}

// Delete appends a delete of key. On error the batch is unchanged.
func (b *Batch) Delete(key []byte) error {
	c, err := b.handle()
	if err != nil {
		return err
	}
	var e C.gtkv_err
	if err := newError(C.gtkv_batch_delete(c, bytesPtr(key), C.size_t(len(key)), &e), &e); err != nil {
		return err
	}
	b.n++
	return nil
}

// DeleteRange appends a deletion of every key k with begin <= k < end, with
// DB.DeleteRange's meaning: it applies in order within the batch, an empty
// range (begin equal to end) appends nothing, begin after end is ErrInvalid.
// On error the batch is unchanged.
func (b *Batch) DeleteRange(begin, end []byte) error {
	c, err := b.handle()
	if err != nil {
		return err
	}
	var e C.gtkv_err
	rc := C.gtkv_batch_delete_range(c, bytesPtr(begin), C.size_t(len(begin)), bytesPtr(end), C.size_t(len(end)), &e)
	if err := newError(rc, &e); err != nil {
		return err
	}
	if !bytes.Equal(begin, end) {
		b.n++
	}
	return nil
}

// Len is the number of operations in the batch.
func (b *Batch) Len() int { return b.n }

// Clear empties the batch, keeping its buffer for reuse.
func (b *Batch) Clear() {
	if b.c != nil {
		C.tkv_batch_clear(b.c)
	}
	b.n = 0
}

// Close frees the batch's C memory. It may be called more than once.
func (b *Batch) Close() {
	C.tkv_batch_free(b.c)
	b.c = nil
	b.n = 0
}
