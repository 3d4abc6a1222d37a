// SPDX-License-Identifier: Apache-2.0

package tierkv

// #include "glue.h"
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// Snapshot pins the state of a DB: reads through it see exactly the writes
// acknowledged before NewSnapshot. It may be shared between goroutines. It
// must be closed before its DB, and its iterators before it.
type Snapshot struct {
	db    *DB
	mu    sync.RWMutex // shared by reads, exclusive for Close
	c     *C.tkv_snapshot
	iters atomic.Int64
}

// NewSnapshot pins the current state.
func (db *DB) NewSnapshot() (*Snapshot, error) {
	c, err := db.acquire()
	if err != nil {
		return nil, err
	}
	defer db.release()
	var e C.gtkv_err
	var s *C.tkv_snapshot
	if err := newError(C.gtkv_snapshot_new(c, &s, &e), &e); err != nil {
		return nil, err
	}
	db.snaps.Add(1)
	return &Snapshot{db: db, c: s}, nil
}

// acquire returns the DB's and the snapshot's C handles with s.mu held
// shared. While the snapshot is open its DB cannot close, so the DB handle
// needs no lock of its own here.
func (s *Snapshot) acquire() (*C.tkv_db, *C.tkv_snapshot, error) {
	s.mu.RLock()
	if s.c == nil {
		s.mu.RUnlock()
		return nil, nil, ErrClosed
	}
	return s.db.c, s.c, nil
}

// Get reads key at the snapshot; ErrNotFound if it was absent then.
func (s *Snapshot) Get(key []byte) ([]byte, error) {
	c, sc, err := s.acquire()
	if err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	return get(c, sc, key)
}

// MultiGet is DB.MultiGet at the snapshot.
func (s *Snapshot) MultiGet(keys [][]byte) ([][]byte, []error, error) {
	c, sc, err := s.acquire()
	if err != nil {
		return nil, nil, err
	}
	defer s.mu.RUnlock()
	return multiGet(c, sc, keys)
}

// NewIterator returns an iterator over the snapshot's state.
func (s *Snapshot) NewIterator() (*Iterator, error) {
	c, sc, err := s.acquire()
	if err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	it, err := newIterator(s.db, c, sc)
	if err != nil {
		return nil, err
	}
	it.snap = s
	s.iters.Add(1)
	return it, nil
}

// Close releases the snapshot. It returns ErrBusy while iterators of the
// snapshot are open; a second Close is a no-op returning nil.
func (s *Snapshot) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c == nil {
		return nil
	}
	if n := s.iters.Load(); n > 0 {
		return &Error{Code: CodeBusy, Msg: fmt.Sprintf("snapshot close: %d iterator(s) still open", n)}
	}
	C.tkv_snapshot_free(s.db.c, s.c)
	s.c = nil
	s.db.snaps.Add(-1)
	return nil
}
