// SPDX-License-Identifier: Apache-2.0

package raftstore

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	tierkv "github.com/tierkv/tierkv/bindings/go"
)

// testOptions keep a test store's memory and pool small.
var testOptions = tierkv.Options{"memtable_size": "1M", "block_cache_size": "1M", "pmem_size": "64M"}

func newStore(t testing.TB) (*Store, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "raft")
	s, err := Open(dir, testOptions)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

func reopen(t testing.TB, s *Store, dir string) *Store {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	s, err := Open(dir, testOptions)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func entry(idx uint64, data string) *raft.Log {
	return &raft.Log{Index: idx, Term: idx/10 + 1, Data: []byte(data)}
}

func entries(lo, hi uint64) []*raft.Log {
	var out []*raft.Log
	for i := lo; i <= hi; i++ {
		out = append(out, entry(i, fmt.Sprintf("entry %d", i)))
	}
	return out
}

func wantBounds(t *testing.T, s *Store, first, last uint64) {
	t.Helper()
	f, err1 := s.FirstIndex()
	l, err2 := s.LastIndex()
	if err1 != nil || err2 != nil || f != first || l != last {
		t.Fatalf("first, last = %d, %d (%v, %v); want %d, %d", f, l, err1, err2, first, last)
	}
}

func wantMissing(t *testing.T, s *Store, idx ...uint64) {
	t.Helper()
	for _, i := range idx {
		if err := s.GetLog(i, new(raft.Log)); err != raft.ErrLogNotFound {
			t.Fatalf("GetLog(%d) = %v, want raft.ErrLogNotFound", i, err)
		}
	}
}

func wantEntry(t *testing.T, s *Store, want *raft.Log) {
	t.Helper()
	var got raft.Log
	if err := s.GetLog(want.Index, &got); err != nil {
		t.Fatalf("GetLog(%d): %v", want.Index, err)
	}
	if !reflect.DeepEqual(&got, want) {
		t.Fatalf("GetLog(%d) = %+v, want %+v", want.Index, got, *want)
	}
}

// The checklist of raft-boltdb's own tests, then what this store adds.

func TestFirstIndex(t *testing.T) {
	s, _ := newStore(t)
	if i, err := s.FirstIndex(); err != nil || i != 0 {
		t.Fatalf("empty store: %d, %v", i, err)
	}
	if err := s.StoreLogs(entries(1, 3)); err != nil {
		t.Fatal(err)
	}
	if i, _ := s.FirstIndex(); i != 1 {
		t.Fatalf("first index %d, want 1", i)
	}
}

func TestLastIndex(t *testing.T) {
	s, _ := newStore(t)
	if i, err := s.LastIndex(); err != nil || i != 0 {
		t.Fatalf("empty store: %d, %v", i, err)
	}
	if err := s.StoreLogs(entries(1, 3)); err != nil {
		t.Fatal(err)
	}
	if i, _ := s.LastIndex(); i != 3 {
		t.Fatalf("last index %d, want 3", i)
	}
}

func TestGetLog(t *testing.T) {
	s, _ := newStore(t)
	wantMissing(t, s, 1)
	logs := entries(1, 3)
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	wantEntry(t, s, logs[1])
	wantMissing(t, s, 0, 4)
}

func TestStoreLog(t *testing.T) {
	s, _ := newStore(t)
	l := &raft.Log{Index: 1, Data: []byte("log1")}
	if err := s.StoreLog(l); err != nil {
		t.Fatal(err)
	}
	wantEntry(t, s, l)
	wantBounds(t, s, 1, 1)
}

func TestStoreLogs(t *testing.T) {
	s, _ := newStore(t)
	logs := entries(1, 2)
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	wantEntry(t, s, logs[0])
	wantEntry(t, s, logs[1])
	if err := s.StoreLogs(nil); err != nil {
		t.Fatalf("no entries: %v", err)
	}
}

func TestDeleteRange(t *testing.T) {
	s, _ := newStore(t)
	if err := s.StoreLogs(entries(1, 3)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(1, 2); err != nil {
		t.Fatal(err)
	}
	wantMissing(t, s, 1, 2)
	wantEntry(t, s, entries(3, 3)[0])
	wantBounds(t, s, 3, 3)
}

func TestSetGet(t *testing.T) {
	s, _ := newStore(t)
	if _, err := s.Get([]byte("bad")); err != ErrKeyNotFound || err.Error() != "not found" {
		t.Fatalf("missing key: %v", err)
	}
	if err := s.Set([]byte("hello"), []byte("world")); err != nil {
		t.Fatal(err)
	}
	v, err := s.Get([]byte("hello"))
	if err != nil || !bytes.Equal(v, []byte("world")) {
		t.Fatalf("get: %q, %v", v, err)
	}
}

func TestSetUint64GetUint64(t *testing.T) {
	s, _ := newStore(t)
	if _, err := s.GetUint64([]byte("bad")); err != ErrKeyNotFound {
		t.Fatalf("missing key: %v", err)
	}
	if err := s.SetUint64([]byte("abc"), 123); err != nil {
		t.Fatal(err)
	}
	if v, err := s.GetUint64([]byte("abc")); err != nil || v != 123 {
		t.Fatalf("get: %d, %v", v, err)
	}
	s.Set([]byte("short"), []byte{1, 2})
	if _, err := s.GetUint64([]byte("short")); err == nil {
		t.Fatal("a 2-byte value read as a uint64")
	}
}

func TestEntryFields(t *testing.T) {
	s, dir := newStore(t)
	at := time.Unix(1700000000, 123456789)
	logs := []*raft.Log{
		{Index: 5, Term: 1 << 40, Type: raft.LogConfiguration, Data: []byte("cfg"), Extensions: []byte("ext"), AppendedAt: at},
		{Index: 6, Term: 2, Type: raft.LogNoop},
		{Index: 7, Term: 2, Type: raft.LogCommand, Data: bytes.Repeat([]byte{0xab}, 1<<20)},
	}
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s, dir)
	for _, l := range logs {
		var got raft.Log
		if err := s.GetLog(l.Index, &got); err != nil {
			t.Fatal(err)
		}
		if !got.AppendedAt.Equal(l.AppendedAt) {
			t.Fatalf("entry %d: appended at %v, want %v", l.Index, got.AppendedAt, l.AppendedAt)
		}
		got.AppendedAt = l.AppendedAt
		if !reflect.DeepEqual(&got, l) {
			t.Fatalf("entry %d differs after reopen", l.Index)
		}
	}
	// The log read into is overwritten whole.
	dirty := raft.Log{Data: []byte("stale"), Extensions: []byte("stale"), AppendedAt: at}
	if err := s.GetLog(6, &dirty); err != nil || dirty.Data != nil || dirty.Extensions != nil || !dirty.AppendedAt.IsZero() {
		t.Fatalf("reused log: %+v %v", dirty, err)
	}
}

func TestStableKeysApartFromLog(t *testing.T) {
	s, dir := newStore(t)
	// A stable key spelled like a log key, and one that sorts after them all.
	logLike := []byte{prefixLog, 0, 0, 0, 0, 0, 0, 0, 1}
	s.Set(logLike, []byte("stable"))
	s.Set([]byte{0xff, 0xff}, []byte("high"))
	s.SetUint64([]byte("CurrentTerm"), 7)
	wantBounds(t, s, 0, 0)
	if err := s.StoreLogs(entries(1, 2)); err != nil {
		t.Fatal(err)
	}
	s = reopen(t, s, dir)
	wantBounds(t, s, 1, 2)
	if v, err := s.Get(logLike); err != nil || string(v) != "stable" {
		t.Fatalf("stable key: %q %v", v, err)
	}
	wantEntry(t, s, entries(1, 1)[0])
}

func TestBoundsRebuiltAtOpen(t *testing.T) {
	s, dir := newStore(t)
	s = reopen(t, s, dir)
	wantBounds(t, s, 0, 0)
	if err := s.StoreLogs(entries(10, 500)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(10, 99); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(401, 500); err != nil {
		t.Fatal(err)
	}
	wantBounds(t, s, 100, 400)
	s = reopen(t, s, dir)
	wantBounds(t, s, 100, 400)
	wantMissing(t, s, 99, 401)
	wantEntry(t, s, entries(100, 100)[0])
	wantEntry(t, s, entries(400, 400)[0])
}

func TestDeleteRangeCases(t *testing.T) {
	s, dir := newStore(t)
	s.StoreLogs(entries(1, 100))

	// Outside the log, or empty: nothing happens.
	for _, r := range [][2]uint64{{200, 300}, {0, 0}, {50, 40}} {
		if err := s.DeleteRange(r[0], r[1]); err != nil {
			t.Fatal(err)
		}
	}
	wantBounds(t, s, 1, 100)

	// A range reaching past both ends is clamped to the log.
	if err := s.DeleteRange(0, 10); err != nil {
		t.Fatal(err)
	}
	wantBounds(t, s, 11, 100)
	if err := s.DeleteRange(90, 1<<62); err != nil {
		t.Fatal(err)
	}
	wantBounds(t, s, 11, 89)

	// The middle: the bounds stay.
	s.DeleteRange(40, 60)
	wantBounds(t, s, 11, 89)
	wantMissing(t, s, 40, 50, 60)

	// Ranges ending at a gap: the new bound is the next entry that exists.
	s.DeleteRange(11, 39)
	wantBounds(t, s, 61, 89)
	s.StoreLogs(entries(20, 25)) // 20..25, gap, 61..89
	wantBounds(t, s, 20, 89)
	s.DeleteRange(61, 89)
	wantBounds(t, s, 20, 25)
	s.StoreLogs(entries(70, 75)) // 20..25, gap, 70..75
	s.DeleteRange(20, 25)
	wantBounds(t, s, 70, 75)
	s.StoreLogs(entries(20, 25))
	s.DeleteRange(70, 100)
	wantBounds(t, s, 20, 25)
	s = reopen(t, s, dir)
	wantBounds(t, s, 20, 25)

	// Everything.
	if err := s.DeleteRange(0, ^uint64(0)); err != nil {
		t.Fatal(err)
	}
	wantBounds(t, s, 0, 0)
	wantMissing(t, s, 20, 25)
	s = reopen(t, s, dir)
	wantBounds(t, s, 0, 0)

	// More deletes than one batch holds.
	s.StoreLogs(entries(1, 3*deleteChunk))
	if err := s.DeleteRange(1, 2*deleteChunk+5); err != nil {
		t.Fatal(err)
	}
	wantBounds(t, s, 2*deleteChunk+6, 3*deleteChunk)
	wantMissing(t, s, 1, deleteChunk, 2*deleteChunk+5)
	s = reopen(t, s, dir)
	wantBounds(t, s, 2*deleteChunk+6, 3*deleteChunk)
}

// TestConflictTruncation is raft's own pattern on a follower: drop a suffix,
// then store the leader's entries from there.
func TestConflictTruncation(t *testing.T) {
	s, _ := newStore(t)
	s.StoreLogs(entries(1, 10))
	if err := s.DeleteRange(6, 10); err != nil {
		t.Fatal(err)
	}
	wantBounds(t, s, 1, 5)
	replaced := []*raft.Log{{Index: 6, Term: 9, Data: []byte("new 6")}, {Index: 7, Term: 9, Data: []byte("new 7")}}
	s.StoreLogs(replaced)
	wantBounds(t, s, 1, 7)
	wantEntry(t, s, replaced[1])
}

func TestCommitIndex(t *testing.T) {
	s, dir := newStore(t)
	if c, err := s.GetCommitIndex(); err != nil || c != 0 {
		t.Fatalf("empty: %d %v", c, err)
	}
	s.StoreLogs(entries(1, 5))
	s.StageCommitIndex(3)
	if c, _ := s.GetCommitIndex(); c != 0 {
		t.Fatalf("a staged commit index was read back before StoreLogs: %d", c)
	}
	s = reopen(t, s, dir)
	if c, _ := s.GetCommitIndex(); c != 0 {
		t.Fatalf("a staged commit index was written without StoreLogs: %d", c)
	}
	s.StageCommitIndex(3)
	s.StoreLogs(entries(6, 6))
	if c, _ := s.GetCommitIndex(); c != 3 {
		t.Fatalf("after StoreLogs: %d, want 3", c)
	}
	s = reopen(t, s, dir)
	if c, _ := s.GetCommitIndex(); c != 3 {
		t.Fatalf("after reopen: %d, want 3", c)
	}
	// Never above the last index.
	s.StageCommitIndex(100)
	s.StoreLogs(entries(7, 8))
	if c, _ := s.GetCommitIndex(); c != 8 {
		t.Fatalf("commit index above the log: %d, want 8", c)
	}
	s.DeleteRange(7, 8)
	if c, _ := s.GetCommitIndex(); c != 6 {
		t.Fatalf("after truncation: %d, want 6", c)
	}
}

func TestClosed(t *testing.T) {
	s, _ := newStore(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if err := s.StoreLogs(entries(1, 1)); !errors.Is(err, tierkv.ErrClosed) {
		t.Fatalf("StoreLogs after close: %v", err)
	}
	if err := s.Set([]byte("k"), []byte("v")); !errors.Is(err, tierkv.ErrClosed) {
		t.Fatalf("Set after close: %v", err)
	}
}
