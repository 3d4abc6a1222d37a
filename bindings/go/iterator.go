// SPDX-License-Identifier: Apache-2.0

package tierkv

// #include "glue.h"
import "C"

// Iterator walks the keys of a consistent view (of the DB when it was made,
// or of a snapshot) in order. It starts unpositioned: call a Seek first.
// It belongs to one goroutine at a time, and must be closed before its DB
// (and snapshot).
type Iterator struct {
	db   *DB
	snap *Snapshot
	c    *C.tkv_iter
	pos  C.gtkv_pos
	err  error
}

// NewIterator returns an iterator over the current state of the DB.
func (db *DB) NewIterator() (*Iterator, error) {
	c, err := db.acquire()
	if err != nil {
		return nil, err
	}
	defer db.release()
	return newIterator(db, c, nil)
}

func newIterator(db *DB, c *C.tkv_db, s *C.tkv_snapshot) (*Iterator, error) {
	var e C.gtkv_err
	var it *C.tkv_iter
	if err := newError(C.gtkv_iter_new(c, s, &it, &e), &e); err != nil {
		return nil, err
	}
	db.iters.Add(1)
	return &Iterator{db: db, c: it}, nil
}

func (it *Iterator) move(op C.int, key []byte) {
	if it.c == nil {
		return
	}
	var e C.gtkv_err
	C.gtkv_iter_move(it.c, op, bytesPtr(key), C.size_t(len(key)), &it.pos, &e)
	it.err = nil
	if it.pos.valid == 0 && it.pos.status < 0 {
		it.err = newError(it.pos.status, &e)
	}
}

// Seek positions the iterator at the first key >= key.
func (it *Iterator) Seek(key []byte) { it.move(C.GTKV_SEEK, key) }

// SeekFirst positions the iterator at the smallest key.
func (it *Iterator) SeekFirst() { it.move(C.GTKV_SEEK_FIRST, nil) }

// SeekLast positions the iterator at the largest key.
func (it *Iterator) SeekLast() { it.move(C.GTKV_SEEK_LAST, nil) }

// Valid reports whether the iterator is on an entry. It is false at either
// end and after an error (see Err).
func (it *Iterator) Valid() bool { return it.c != nil && it.pos.valid != 0 }

// Next moves to the next larger key; a no-op when not Valid.
func (it *Iterator) Next() {
	if it.Valid() {
		it.move(C.GTKV_NEXT, nil)
	}
}

// Prev moves to the next smaller key; a no-op when not Valid.
func (it *Iterator) Prev() {
	if it.Valid() {
		it.move(C.GTKV_PREV, nil)
	}
}

// Key returns a copy of the current key, nil when not Valid.
func (it *Iterator) Key() []byte {
	if !it.Valid() {
		return nil
	}
	return C.GoBytes(it.pos.key, C.int(it.pos.klen))
}

// Value returns a copy of the current value, nil when not Valid.
func (it *Iterator) Value() []byte {
	if !it.Valid() {
		return nil
	}
	return C.GoBytes(it.pos.val, C.int(it.pos.vlen))
}

// Err returns the error the last move met, nil if none.
func (it *Iterator) Err() error { return it.err }

// Close frees the iterator. It may be called more than once.
func (it *Iterator) Close() {
	if it.c == nil {
		return
	}
	C.tkv_iter_free(it.c)
	it.c = nil
	it.pos = C.gtkv_pos{}
	if it.snap != nil {
		it.snap.iters.Add(-1)
	}
	it.db.iters.Add(-1)
}
