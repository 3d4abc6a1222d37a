// SPDX-License-Identifier: Apache-2.0

package tierkv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// testOptions keep the memory of a test database small.
var testOptions = Options{"memtable_size": "1M", "block_cache_size": "1M", "pmem_size": "64M"}

func openTest(t *testing.T) (*DB, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "db")
	db, err := Open(dir, testOptions)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db, dir
}

func mustGet(t *testing.T, db *DB, key, want string) {
	t.Helper()
	v, err := db.Get([]byte(key))
	if err != nil {
		t.Fatalf("get %q: %v", key, err)
	}
	if string(v) != want {
		t.Fatalf("get %q = %q, want %q", key, v, want)
	}
}

func TestVersion(t *testing.T) {
	if Version() != HeaderVersion {
		t.Fatalf("library version %d, header %d", Version(), HeaderVersion)
	}
}

func TestPutGetDelete(t *testing.T) {
	db, _ := openTest(t)
	if err := db.Put([]byte("a"), []byte("1"), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("b"), []byte("2"), &WriteOptions{Sync: true}); err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("c"), []byte("3"), &WriteOptions{NoWAL: true}); err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("empty"), nil, nil); err != nil {
		t.Fatal(err)
	}
	mustGet(t, db, "a", "1")
	mustGet(t, db, "b", "2")
	mustGet(t, db, "c", "3")
	mustGet(t, db, "empty", "")
	if err := db.Delete([]byte("a"), &WriteOptions{Sync: true}); err != nil {
		t.Fatal(err)
	}
	if err := db.Delete([]byte("never-there"), nil); err != nil {
		t.Fatalf("delete of an absent key: %v", err)
	}
	_, err := db.Get([]byte("a"))
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("get deleted key: %v, want ErrNotFound", err)
	}
	if errors.Is(err, ErrInvalid) {
		t.Fatal("ErrNotFound matched ErrInvalid")
	}
}

func TestInvalidArguments(t *testing.T) {
	db, _ := openTest(t)
	err := db.Put(nil, []byte("v"), nil)
	var te *Error
	if !errors.As(err, &te) || te.Code != CodeInvalid || !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty key: %v, want ErrInvalid", err)
	}
	if te.Msg == "" || !strings.Contains(err.Error(), "tierkv: invalid argument") {
		t.Fatalf("empty key: message %q", err.Error())
	}
	big := make([]byte, MaxKeySize+1)
	if err := db.Put(big, nil, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("oversized key: %v", err)
	}
	if _, err := db.Get(big); !errors.Is(err, ErrInvalid) {
		t.Fatalf("get oversized key: %v", err)
	}
	if err := db.Delete([]byte{}, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("delete empty key: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	_, err := Open(dir, Options{"no_such_option": "1"})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "no_such_option") {
		t.Fatalf("unknown option: %v", err)
	}
	_, err = Open(dir, Options{"create_if_missing": "false"})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("missing dir without create: %v", err)
	}
	for _, bad := range []struct {
		dir  string
		opts Options
	}{{dir + "\x00x", nil}, {dir, Options{"memtable_size\x00": "1M"}}, {dir, Options{"memtable_size": "1M\x00"}}} {
		if _, err := Open(bad.dir, bad.opts); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "NUL") {
			t.Fatalf("NUL byte in %q %q: %v", bad.dir, bad.opts, err)
		}
	}
	db, err := Open(dir, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Property("tkv.stats\x00"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("NUL byte in a property name: %v", err)
	}
	_, err = Open(dir, testOptions)
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("second open: %v, want ErrBusy", err)
	}
	if err := Destroy(dir); !errors.Is(err, ErrBusy) {
		t.Fatalf("destroy while open: %v", err)
	}
}

// TestReadOnly: a DB opened with read_only=1 reads what was written (the WAL
// included), refuses writes with ErrReadOnly, shares the directory with
// another read-only DB and keeps a read-write Open out with ErrBusy.
func TestReadOnly(t *testing.T) {
	db, dir := openTest(t)
	if err := db.Put([]byte("k"), []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ro := Options{"read_only": "1"}
	for k, v := range testOptions {
		ro[k] = v
	}
	r1, err := Open(dir, ro)
	if err != nil {
		t.Fatalf("read-only open: %v", err)
	}
	defer r1.Close()
	r2, err := Open(dir, ro)
	if err != nil {
		t.Fatalf("second read-only open: %v", err)
	}
	defer r2.Close()
	mustGet(t, r1, "k", "v")
	mustGet(t, r2, "k", "v")
	if err := r1.Put([]byte("k"), []byte("w"), nil); !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("put on a read-only DB: %v, want ErrReadOnly naming %s", err, dir)
	}
	if err := r1.Flush(); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("flush on a read-only DB: %v, want ErrReadOnly", err)
	}
	if _, err := Open(dir, testOptions); !errors.Is(err, ErrBusy) {
		t.Fatalf("read-write open beside read-only ones: %v, want ErrBusy", err)
	}
	mustGet(t, r2, "k", "v")
}

func TestCloseIdempotentAndClosedUse(t *testing.T) {
	db, _ := openTest(t)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if err := db.Put([]byte("k"), []byte("v"), nil); !errors.Is(err, ErrClosed) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("put after close: %v", err)
	}
	if _, err := db.Get([]byte("k")); !errors.Is(err, ErrClosed) {
		t.Fatalf("get after close: %v", err)
	}
	if _, err := db.NewIterator(); !errors.Is(err, ErrClosed) {
		t.Fatalf("iterator after close: %v", err)
	}
	if _, err := db.NewSnapshot(); !errors.Is(err, ErrClosed) {
		t.Fatalf("snapshot after close: %v", err)
	}
	if _, err := db.Property("tkv.stats"); !errors.Is(err, ErrClosed) {
		t.Fatalf("property after close: %v", err)
	}
	if errors.Is(&Error{Code: CodeInvalid, Msg: "x"}, ErrClosed) {
		t.Fatal("any invalid-argument error matched ErrClosed")
	}
}

func TestCloseWithOpenHandles(t *testing.T) {
	db, _ := openTest(t)
	db.Put([]byte("k"), []byte("v"), nil)
	it, err := db.NewIterator()
	if err != nil {
		t.Fatal(err)
	}
	snap, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	sit, err := snap.NewIterator()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); !errors.Is(err, ErrBusy) {
		t.Fatalf("close with open iterators: %v, want ErrBusy", err)
	}
	// Still usable.
	mustGet(t, db, "k", "v")
	if err := snap.Close(); !errors.Is(err, ErrBusy) {
		t.Fatalf("snapshot close with an open iterator: %v", err)
	}
	sit.Close()
	sit.Close()
	it.Close()
	if err := db.Close(); !errors.Is(err, ErrBusy) {
		t.Fatalf("close with an open snapshot: %v", err)
	}
	if err := snap.Close(); err != nil {
		t.Fatal(err)
	}
	if err := snap.Close(); err != nil {
		t.Fatalf("second snapshot close: %v", err)
	}
	if _, err := snap.Get([]byte("k")); !errors.Is(err, ErrClosed) {
		t.Fatalf("get on a closed snapshot: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	it.SeekFirst()
	if it.Valid() || it.Key() != nil {
		t.Fatal("closed iterator moved")
	}
}

func TestBatch(t *testing.T) {
	db, _ := openTest(t)
	db.Put([]byte("gone"), []byte("x"), nil)
	var b Batch
	defer b.Close()
	if err := b.Put([]byte("k1"), []byte("v1")); err != nil {
		t.Fatal(err)
	}
	b.Put([]byte("k2"), []byte("v2"))
	b.Delete([]byte("gone"))
	b.Put([]byte("k1"), []byte("v1b")) // a later operation wins
	if err := b.Put(nil, []byte("bad")); !errors.Is(err, ErrInvalid) {
		t.Fatalf("batch put of an empty key: %v", err)
	}
	if b.Len() != 4 {
		t.Fatalf("len %d", b.Len())
	}
	if err := db.Write(&b, &WriteOptions{Sync: true}); err != nil {
		t.Fatal(err)
	}
	mustGet(t, db, "k1", "v1b")
	mustGet(t, db, "k2", "v2")
	if _, err := db.Get([]byte("gone")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted in batch: %v", err)
	}
	b.Clear()
	if b.Len() != 0 {
		t.Fatal("clear")
	}
	if err := db.Write(&b, nil); err != nil {
		t.Fatalf("empty batch: %v", err)
	}
	if err := db.Write(nil, nil); err != nil {
		t.Fatalf("nil batch: %v", err)
	}
	b.Close()
	b.Close()
	if err := b.Put([]byte("k3"), []byte("v3")); err != nil {
		t.Fatalf("reuse after close: %v", err)
	}
	if err := db.Write(&b, nil); err != nil {
		t.Fatal(err)
	}
	mustGet(t, db, "k3", "v3")
}

func TestDeleteRange(t *testing.T) {
	db, _ := openTest(t)
	for i := 0; i < 50; i++ {
		db.Put([]byte(fmt.Sprintf("k%02d", i)), []byte("v"), nil)
	}
	snap, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if err := db.DeleteRange([]byte("k10"), []byte("k20"), &WriteOptions{Sync: true}); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteRange([]byte("k30"), []byte("k30"), nil); err != nil {
		t.Fatalf("an empty range: %v", err)
	}
	if err := db.DeleteRange([]byte("k40"), []byte("k30"), nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("begin after end: %v", err)
	}
	if err := db.DeleteRange(nil, []byte("k30"), nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("empty begin: %v", err)
	}
	mustGet(t, db, "k09", "v")
	mustGet(t, db, "k20", "v")
	for _, k := range []string{"k10", "k15", "k19"} {
		if _, err := db.Get([]byte(k)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("get %s after DeleteRange: %v", k, err)
		}
		if v, err := snap.Get([]byte(k)); err != nil || string(v) != "v" {
			t.Fatalf("snapshot get %s: %q %v", k, v, err)
		}
	}
	var b Batch
	defer b.Close()
	b.Put([]byte("k25x"), []byte("gone"))
	if err := b.DeleteRange([]byte("k25"), []byte("k26")); err != nil {
		t.Fatal(err)
	}
	b.DeleteRange([]byte("k27"), []byte("k27")) // empty: nothing appended
	b.Put([]byte("k25y"), []byte("kept"))       // after the deletion in the batch: stays
	if b.Len() != 3 {
		t.Fatalf("batch len %d, want 3", b.Len())
	}
	if err := b.DeleteRange([]byte("k2"), []byte("k1")); !errors.Is(err, ErrInvalid) || b.Len() != 3 {
		t.Fatalf("batch DeleteRange with begin after end: %v, len %d", err, b.Len())
	}
	if err := db.Write(&b, nil); err != nil {
		t.Fatal(err)
	}
	mustGet(t, db, "k25y", "kept")
	for _, k := range []string{"k25", "k25x"} {
		if _, err := db.Get([]byte(k)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("get %s after a batch DeleteRange: %v", k, err)
		}
	}
	it, err := db.NewIterator()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for it.SeekFirst(); it.Valid(); it.Next() {
		k := string(it.Key())
		if (k >= "k10" && k < "k20") || k == "k25" || k == "k25x" {
			t.Fatalf("iterator shows deleted key %s", k)
		}
		n++
	}
	if n != 50-10-1+1 {
		t.Fatalf("iterator saw %d keys, want 40", n)
	}
}

func TestSnapshot(t *testing.T) {
	db, _ := openTest(t)
	db.Put([]byte("a"), []byte("old"), nil)
	snap, err := db.NewSnapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	db.Put([]byte("a"), []byte("new"), nil)
	db.Put([]byte("b"), []byte("new"), nil)
	v, err := snap.Get([]byte("a"))
	if err != nil || string(v) != "old" {
		t.Fatalf("snapshot get a = %q, %v", v, err)
	}
	if _, err := snap.Get([]byte("b")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("snapshot get b: %v", err)
	}
	vals, errs, err := snap.MultiGet([][]byte{[]byte("a"), []byte("b")})
	if err != nil || string(vals[0]) != "old" || errs[0] != nil || !errors.Is(errs[1], ErrNotFound) {
		t.Fatalf("snapshot multiget: %q %v %v", vals, errs, err)
	}
	it, err := snap.NewIterator()
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for it.SeekFirst(); it.Valid(); it.Next() {
		keys = append(keys, string(it.Key())+"="+string(it.Value()))
	}
	it.Close()
	if strings.Join(keys, ",") != "a=old" {
		t.Fatalf("snapshot iteration: %v", keys)
	}
	mustGet(t, db, "a", "new")
}

func TestIterator(t *testing.T) {
	db, _ := openTest(t)
	for i := 0; i < 100; i++ {
		db.Put([]byte(fmt.Sprintf("k%03d", i)), []byte(fmt.Sprintf("v%d", i)), nil)
	}
	it, err := db.NewIterator()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	if it.Valid() {
		t.Fatal("a new iterator is positioned")
	}
	n := 0
	for it.SeekFirst(); it.Valid(); it.Next() {
		if want := fmt.Sprintf("k%03d", n); string(it.Key()) != want {
			t.Fatalf("forward %d: %q want %q", n, it.Key(), want)
		}
		n++
	}
	if n != 100 || it.Err() != nil {
		t.Fatalf("forward: %d entries, err %v", n, it.Err())
	}
	it.Next() // a no-op when not valid
	n = 99
	for it.SeekLast(); it.Valid(); it.Prev() {
		if want := fmt.Sprintf("v%d", n); string(it.Value()) != want {
			t.Fatalf("backward %d: %q want %q", n, it.Value(), want)
		}
		n--
	}
	if n != -1 {
		t.Fatalf("backward stopped at %d", n)
	}
	it.Seek([]byte("k050x"))
	if !it.Valid() || string(it.Key()) != "k051" {
		t.Fatalf("seek: %q", it.Key())
	}
	it.Prev()
	if string(it.Key()) != "k050" {
		t.Fatalf("prev after seek: %q", it.Key())
	}
	it.Seek([]byte("z"))
	if it.Valid() || it.Key() != nil || it.Value() != nil || it.Err() != nil {
		t.Fatal("seek past the end")
	}
	// Keys returned are copies: they stay intact after the iterator moves.
	it.SeekFirst()
	k := it.Key()
	it.Next()
	if string(k) != "k000" {
		t.Fatalf("key changed under the caller: %q", k)
	}
}

func TestMultiGet(t *testing.T) {
	db, _ := openTest(t)
	db.Put([]byte("x"), []byte("1"), nil)
	db.Put([]byte("y"), bytes.Repeat([]byte("y"), 10000), nil)
	keys := [][]byte{[]byte("x"), []byte("missing"), []byte("y"), nil, []byte("x")}
	vals, errs, err := db.MultiGet(keys)
	if err != nil {
		t.Fatal(err)
	}
	if string(vals[0]) != "1" || errs[0] != nil || string(vals[4]) != "1" {
		t.Fatalf("x: %q %v", vals[0], errs[0])
	}
	if !errors.Is(errs[1], ErrNotFound) || vals[1] != nil {
		t.Fatalf("missing: %v", errs[1])
	}
	if len(vals[2]) != 10000 || errs[2] != nil {
		t.Fatalf("y: %d bytes, %v", len(vals[2]), errs[2])
	}
	if !errors.Is(errs[3], ErrInvalid) {
		t.Fatalf("empty key: %v", errs[3])
	}
	if v, e, err := db.MultiGet(nil); v != nil || e != nil || err != nil {
		t.Fatal("empty multiget")
	}
}

func TestPropertyAndVerify(t *testing.T) {
	db, dir := openTest(t)
	for i := 0; i < 1000; i++ {
		db.Put([]byte(fmt.Sprintf("key%05d", i)), bytes.Repeat([]byte{byte(i)}, 100), nil)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	s, err := db.Property("tkv.options")
	if err != nil || !strings.Contains(s, "memtable_size=") {
		t.Fatalf("tkv.options: %q %v", s, err)
	}
	if _, err := db.Property("tkv.no-such-property"); !errors.Is(err, ErrInvalid) {
		t.Fatalf("unknown property: %v", err)
	}
	if _, err := Verify(dir, nil); !errors.Is(err, ErrBusy) {
		t.Fatalf("verify of an open database: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	report, err := Verify(dir, nil)
	if err != nil || !strings.HasPrefix(report, "verify: dir=") || !strings.Contains(report, "problems=0") {
		t.Fatalf("verify: %v\n%s", err, report)
	}
	if _, err := Verify(filepath.Join(t.TempDir(), "none"), nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("verify of no database: %v", err)
	}
	if err := Destroy(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("destroy left %s: %v", dir, err)
	}
}

// TestCheckpoint: a checkpoint taken while goroutines write holds every
// write acknowledged before it, opens beside the source, and the two are
// independent; a second checkpoint to the same directory is ErrInvalid.
func TestCheckpoint(t *testing.T) {
	db, _ := openTest(t)
	for i := 0; i < 3000; i++ {
		if err := db.Put([]byte(fmt.Sprintf("k%05d", i)), []byte(fmt.Sprintf("v%d", i)), nil); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // writes beside the checkpoint, to keys the checks below do not read
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := db.Put([]byte(fmt.Sprintf("z%07d", i)), []byte("x"), nil); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	out := filepath.Join(t.TempDir(), "ckpt")
	err := db.Checkpoint(out)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Checkpoint(out); !errors.Is(err, ErrInvalid) {
		t.Fatalf("checkpoint to an existing directory: %v", err)
	}
	ck, err := Open(out, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	for i := 0; i < 3000; i += 7 {
		mustGet(t, ck, fmt.Sprintf("k%05d", i), fmt.Sprintf("v%d", i))
	}
	if err := db.Put([]byte("k00000"), []byte("source"), nil); err != nil {
		t.Fatal(err)
	}
	if err := ck.Put([]byte("k00001"), []byte("checkpoint"), nil); err != nil {
		t.Fatal(err)
	}
	mustGet(t, db, "k00000", "source")
	mustGet(t, db, "k00001", "v1")
	mustGet(t, ck, "k00000", "v0")
	mustGet(t, ck, "k00001", "checkpoint")
}

func TestReopenKeepsData(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "db")
	db, err := Open(dir, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	db.Put([]byte("persist"), []byte("yes"), &WriteOptions{Sync: true})
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mustGet(t, db, "persist", "yes")
}

// TestConcurrent runs writers, readers, iterators and snapshots from many
// goroutines at once (meant for -race), then closes the DB.
func TestConcurrent(t *testing.T) {
	db, _ := openTest(t)
	var wg sync.WaitGroup
	errc := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			var b Batch
			defer b.Close()
			for i := 0; i < 200; i++ {
				k := []byte(fmt.Sprintf("g%d-%04d", g, i))
				if err := db.Put(k, k, nil); err != nil {
					errc <- err
					return
				}
				if v, err := db.Get(k); err != nil || !bytes.Equal(v, k) {
					errc <- fmt.Errorf("get %s: %q %v", k, v, err)
					return
				}
				b.Put(append(k, 'b'), k)
				if i%50 == 49 {
					if err := db.Write(&b, nil); err != nil {
						errc <- err
						return
					}
					b.Clear()
					snap, err := db.NewSnapshot()
					if err != nil {
						errc <- err
						return
					}
					it, err := snap.NewIterator()
					if err != nil {
						errc <- err
						return
					}
					n := 0
					for it.Seek([]byte(fmt.Sprintf("g%d-", g))); it.Valid() && n < 10; it.Next() {
						n++
					}
					it.Close()
					snap.Close()
				}
			}
		}(g)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCloseRace closes the DB while other goroutines use it: each call either
// works or returns ErrClosed, and nothing crashes.
func TestCloseRace(t *testing.T) {
	db, _ := openTest(t)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				k := []byte(fmt.Sprintf("k%d", i%100))
				if err := db.Put(k, k, nil); err != nil {
					if !errors.Is(err, ErrClosed) {
						t.Errorf("put: %v", err)
					}
					return
				}
				if _, err := db.Get(k); err != nil && !errors.Is(err, ErrClosed) {
					t.Errorf("get: %v", err)
					return
				}
			}
		}()
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}

// TestErrorMessagePerCall: many goroutines fail at once, each with its own
// option name; every error carries the message of its own call (the glue
// takes tkv_errmsg in the same C call, whatever OS thread runs it).
func TestErrorMessagePerCall(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				name := fmt.Sprintf("bogus_option_g%d_i%d", g, i)
				_, err := Open(dir, Options{name: "1"})
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), name) {
					t.Errorf("open with %s: %v", name, err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
}
