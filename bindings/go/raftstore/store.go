// SPDX-License-Identifier: Apache-2.0

// Package raftstore keeps a hashicorp/raft node's log and stable state in one
// tierkv database: it implements raft.LogStore, raft.StableStore and
// raft.CommitTrackingLogStore.
//
// Layout of the database (it belongs to the store; keep nothing else in it):
//
//	0x00 'c'               the commit index staged by raft, 8 bytes big-endian
//	0x01 <key>             a StableStore key, its value as given
//	0x02 <index, 8 bytes BE> a log entry (encoding in codec.go)
//
// Log keys sort by index, and sort after every other key, so the first and
// last index are found at open with two seeks. From then on they are kept
// in memory.
//
// Every write is synced (tierkv's TKV_SYNC): StoreLogs writes its entries,
// and the commit index staged since the last call, as one synced batch, so
// after a crash either all of it is there or none. DeleteRange deletes the
// keys of the indexes it is given, worked out from the range and the known
// first and last index; it does not scan. Entries are deleted in an order
// that leaves the remaining log contiguous if a crash cuts the deletion
// short (oldest first when the range starts at the first index, newest first
// otherwise).
package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/raft"
	tierkv "github.com/tierkv/tierkv/bindings/go"
)

const (
	prefixMeta   = 0x00
	prefixStable = 0x01
	prefixLog    = 0x02

	logKeyLen = 9
	// deleteChunk is the most deletes DeleteRange puts in one batch.
	deleteChunk = 16384
)

var keyCommit = []byte{prefixMeta, 'c'}

// ErrKeyNotFound is what Get and GetUint64 return for a key never set. Its
// text is "not found", which is what raft checks for.
var ErrKeyNotFound = errors.New("not found")

var (
	_ raft.LogStore               = (*Store)(nil)
	_ raft.StableStore            = (*Store)(nil)
	_ raft.CommitTrackingLogStore = (*Store)(nil)
)

// DefaultOptions are the tierkv options Open starts from: every write of a
// raft store is synced, and tierkv's docs/options.md advises wal_mmap=0 for
// a writer that syncs most writes. Options given to Open override these.
var DefaultOptions = tierkv.Options{"wal_mmap": "0"}

var syncWrite = &tierkv.WriteOptions{Sync: true}

// Store is a raft log and stable store on one tierkv database. It is safe
// for concurrent use.
type Store struct {
	db *tierkv.DB

	// wmu orders the writers (StoreLogs, DeleteRange, Close), so that the
	// indexes kept in memory follow the order of the writes.
	wmu    sync.Mutex
	batch  tierkv.Batch
	buf    []byte
	closed bool

	// mu guards what follows.
	mu          sync.RWMutex
	hasLogs     bool
	first, last uint64
	staged      uint64 // the commit index raft staged last
	committed   uint64 // the commit index in the database
}

// Open opens (creating if needed) the store's database in directory dir.
// opts are tierkv options (docs/options.md) applied over DefaultOptions;
// nil keeps the defaults.
func Open(dir string, opts tierkv.Options) (*Store, error) {
	o := tierkv.Options{}
	for k, v := range DefaultOptions {
		o[k] = v
	}
	for k, v := range opts {
		o[k] = v
	}
	db, err := tierkv.Open(dir, o)
	if err != nil {
		return nil, err
	}
	s := &Store{db: db}
	if err := s.load(); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// load reads the first and last index and the commit index.
func (s *Store) load() error {
	it, err := s.db.NewIterator()
	if err != nil {
		return err
	}
	defer it.Close()
	it.Seek([]byte{prefixLog})
	if it.Valid() {
		k := it.Key()
		if len(k) != logKeyLen || k[0] != prefixLog {
			return fmt.Errorf("raftstore: unexpected key %x in the log", k)
		}
		s.first = binary.BigEndian.Uint64(k[1:])
		it.SeekLast()
		k = it.Key()
		if !it.Valid() || len(k) != logKeyLen || k[0] != prefixLog {
			return fmt.Errorf("raftstore: unexpected last key %x", k)
		}
		s.last = binary.BigEndian.Uint64(k[1:])
		s.hasLogs = true
	}
	if err := it.Err(); err != nil {
		return err
	}
	v, err := s.db.Get(keyCommit)
	switch {
	case errors.Is(err, tierkv.ErrNotFound):
	case err != nil:
		return err
	case len(v) != 8:
		return fmt.Errorf("raftstore: commit index of %d bytes", len(v))
	default:
		s.committed = binary.BigEndian.Uint64(v)
		s.staged = s.committed
	}
	return nil
}

// Close closes the database. Further calls return tierkv.ErrClosed.
func (s *Store) Close() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.batch.Close()
	s.closed = true
	return s.db.Close()
}

// DB is the store's database, for properties and statistics. Writing to it
// behind the store's back breaks the store.
func (s *Store) DB() *tierkv.DB { return s.db }

func logKey(dst []byte, index uint64) []byte {
	dst = append(dst[:0], prefixLog)
	return binary.BigEndian.AppendUint64(dst, index)
}

// FirstIndex returns the first index in the log, 0 when it is empty.
func (s *Store) FirstIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.first, nil
}

// LastIndex returns the last index in the log, 0 when it is empty.
func (s *Store) LastIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.last, nil
}

// GetLog reads the entry at index into log; raft.ErrLogNotFound if there is
// none.
func (s *Store) GetLog(index uint64, log *raft.Log) error {
	s.mu.RLock()
	out := !s.hasLogs || index < s.first || index > s.last
	s.mu.RUnlock()
	if out {
		return raft.ErrLogNotFound
	}
	var kb [logKeyLen]byte
	v, err := s.db.Get(logKey(kb[:0], index))
	if errors.Is(err, tierkv.ErrNotFound) {
		return raft.ErrLogNotFound
	}
	if err != nil {
		return err
	}
	return decodeLog(index, v, log)
}

// StoreLog stores one entry (as StoreLogs).
func (s *Store) StoreLog(log *raft.Log) error {
	return s.StoreLogs([]*raft.Log{log})
}

// StoreLogs stores the entries, and the commit index staged since the last
// call, in one synced batch.
func (s *Store) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closed {
		return tierkv.ErrClosed
	}
	b := &s.batch
	b.Clear()
	var kb [logKeyLen]byte
	lo, hi := logs[0].Index, logs[0].Index
	for _, l := range logs {
		s.buf = encodeLog(s.buf[:0], l)
		if err := b.Put(logKey(kb[:0], l.Index), s.buf); err != nil {
			return err
		}
		lo, hi = min(lo, l.Index), max(hi, l.Index)
	}
	s.mu.RLock()
	staged, committed := s.staged, s.committed
	s.mu.RUnlock()
	if staged != committed {
		var cb [8]byte
		binary.BigEndian.PutUint64(cb[:], staged)
		if err := b.Put(keyCommit, cb[:]); err != nil {
			return err
		}
	}
	if err := s.db.Write(b, syncWrite); err != nil {
		return err
	}
	s.mu.Lock()
	if !s.hasLogs {
		s.first, s.last, s.hasLogs = lo, hi, true
	} else {
		s.first, s.last = min(s.first, lo), max(s.last, hi)
	}
	s.committed = staged
	s.mu.Unlock()
	return nil
}

// DeleteRange deletes the entries from min to max, both included. The keys
// are those of the indexes in [min, max] that lie within the known first and
// last index; the database is not scanned for them.
func (s *Store) DeleteRange(min, max uint64) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.closed {
		return tierkv.ErrClosed
	}
	s.mu.RLock()
	hasLogs, first, last := s.hasLogs, s.first, s.last
	s.mu.RUnlock()
	if !hasLogs || min > max || max < first || min > last {
		return nil
	}
	lo, hi := maxU(min, first), minU(max, last)
	ascending := lo == first
	if err := s.deleteKeys(lo, hi, ascending); err != nil {
		return err
	}
	switch {
	case lo == first && hi == last:
		hasLogs, first, last = false, 0, 0
	case lo == first:
		next, err := s.nextAfter(hi)
		if err != nil {
			return err
		}
		first = next
	case hi == last:
		prev, err := s.prevBefore(lo)
		if err != nil {
			return err
		}
		last = prev
	}
	s.mu.Lock()
	s.hasLogs, s.first, s.last = hasLogs, first, last
	s.mu.Unlock()
	return nil
}

// deleteKeys deletes the keys of indexes lo..hi in batches of deleteChunk,
// oldest or newest first; the last batch is synced, which syncs all.
func (s *Store) deleteKeys(lo, hi uint64, ascending bool) error {
	b := &s.batch
	var kb [logKeyLen]byte
	n := hi - lo + 1
	for done := uint64(0); done < n; {
		b.Clear()
		m := minU(n-done, deleteChunk)
		for j := uint64(0); j < m; j++ {
			idx := lo + done + j
			if !ascending {
				idx = hi - done - j
			}
			if err := b.Delete(logKey(kb[:0], idx)); err != nil {
				return err
			}
		}
		done += m
		wo := (*tierkv.WriteOptions)(nil)
		if done == n {
			wo = syncWrite
		}
		if err := s.db.Write(b, wo); err != nil {
			return err
		}
	}
	return nil
}

// nextAfter is the smallest index in the log above hi, which exists (hi is
// below the last index): hi+1 in a contiguous log, else found with one seek.
func (s *Store) nextAfter(hi uint64) (uint64, error) {
	var kb [logKeyLen]byte
	if _, err := s.db.Get(logKey(kb[:0], hi+1)); err == nil {
		return hi + 1, nil
	} else if !errors.Is(err, tierkv.ErrNotFound) {
		return 0, err
	}
	it, err := s.db.NewIterator()
	if err != nil {
		return 0, err
	}
	defer it.Close()
	it.Seek(logKey(kb[:0], hi+1))
	return logIndexAt(it)
}

// prevBefore is the largest index in the log below lo, which exists (lo is
// above the first index): lo-1 in a contiguous log, else found by stepping
// back from where a seek to lo lands.
func (s *Store) prevBefore(lo uint64) (uint64, error) {
	var kb [logKeyLen]byte
	if _, err := s.db.Get(logKey(kb[:0], lo-1)); err == nil {
		return lo - 1, nil
	} else if !errors.Is(err, tierkv.ErrNotFound) {
		return 0, err
	}
	it, err := s.db.NewIterator()
	if err != nil {
		return 0, err
	}
	defer it.Close()
	it.Seek(logKey(kb[:0], lo))
	if it.Valid() {
		it.Prev()
	} else if it.Err() == nil {
		it.SeekLast()
	}
	return logIndexAt(it)
}

func logIndexAt(it *tierkv.Iterator) (uint64, error) {
	if err := it.Err(); err != nil {
		return 0, err
	}
	k := it.Key()
	if !it.Valid() || len(k) != logKeyLen || k[0] != prefixLog {
		return 0, fmt.Errorf("raftstore: log index bound not found (key %x)", k)
	}
	return binary.BigEndian.Uint64(k[1:]), nil
}

func minU(a, b uint64) uint64 {
	if a < b {
		return a
	}
	return b
}

func maxU(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// StageCommitIndex stages index to be written with the next StoreLogs, in
// the same batch (never on its own).
func (s *Store) StageCommitIndex(index uint64) error {
	s.mu.Lock()
	s.staged = index
	s.mu.Unlock()
	return nil
}

// GetCommitIndex returns the commit index last written with StoreLogs (read
// from the database at open), never above the last index; 0 if none.
func (s *Store) GetCommitIndex() (uint64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return minU(s.committed, s.last), nil
}

func stableKey(k []byte) []byte {
	return append([]byte{prefixStable}, k...)
}

// Set stores a stable key (synced).
func (s *Store) Set(key, val []byte) error {
	return s.db.Put(stableKey(key), val, syncWrite)
}

// Get returns a stable key's value, or ErrKeyNotFound.
func (s *Store) Get(key []byte) ([]byte, error) {
	v, err := s.db.Get(stableKey(key))
	if errors.Is(err, tierkv.ErrNotFound) {
		return nil, ErrKeyNotFound
	}
	return v, err
}

// SetUint64 stores val under a stable key, 8 bytes big-endian.
func (s *Store) SetUint64(key []byte, val uint64) error {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], val)
	return s.Set(key, b[:])
}

// GetUint64 returns the value SetUint64 stored, or ErrKeyNotFound.
func (s *Store) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("raftstore: key %q holds %d bytes, not a uint64", key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}
