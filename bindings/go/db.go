// SPDX-License-Identifier: Apache-2.0

// Package tierkv is a Go binding of tierkv, an embedded LSM key-value store
// whose tree is tiered across DRAM, persistent memory and SSD. It is a thin
// cgo layer over the C API in include/tierkv.h: the semantics (durability,
// limits, ordering, what each call returns) are the C library's, and the
// comments of tierkv.h are the reference.
//
// A DB is safe for concurrent use by any number of goroutines. A Batch or an
// Iterator belongs to one goroutine at a time; a Snapshot may be shared.
// Every handle has a Close; a DB refuses to close while iterators or
// snapshots of it are still open.
//
// Errors are *Error values carrying the status code and the library's
// message; errors.Is(err, ErrNotFound) (or ErrInvalid, ErrBusy, ...) tests the
// code. No Go pointer is kept by C beyond the call it was passed to: keys and
// values are copied by the library (or, for MultiGet, into C memory first),
// and values read are copied into Go memory.
package tierkv

// #include "glue.h"
//
// /* The glue functions keep no pointer they are given and never call into
//  * Go: so their arguments (the error buffer, out-values) may stay on the
//  * Go stack instead of taking a heap allocation each per call. */
// #cgo noescape gtkv_batch_delete
// #cgo nocallback gtkv_batch_delete
// #cgo noescape gtkv_batch_new
// #cgo nocallback gtkv_batch_new
// #cgo noescape gtkv_batch_put
// #cgo nocallback gtkv_batch_put
// #cgo noescape gtkv_checkpoint
// #cgo nocallback gtkv_checkpoint
// #cgo noescape gtkv_close
// #cgo nocallback gtkv_close
// #cgo noescape gtkv_delete
// #cgo nocallback gtkv_delete
// #cgo noescape gtkv_destroy
// #cgo nocallback gtkv_destroy
// #cgo noescape gtkv_flush
// #cgo nocallback gtkv_flush
// #cgo noescape gtkv_get
// #cgo nocallback gtkv_get
// #cgo noescape gtkv_iter_move
// #cgo nocallback gtkv_iter_move
// #cgo noescape gtkv_iter_new
// #cgo nocallback gtkv_iter_new
// #cgo noescape gtkv_multi_get
// #cgo nocallback gtkv_multi_get
// #cgo noescape gtkv_open
// #cgo nocallback gtkv_open
// #cgo noescape gtkv_options
// #cgo nocallback gtkv_options
// #cgo noescape gtkv_property
// #cgo nocallback gtkv_property
// #cgo noescape gtkv_put
// #cgo nocallback gtkv_put
// #cgo noescape gtkv_snapshot_new
// #cgo nocallback gtkv_snapshot_new
// #cgo noescape gtkv_verify
// #cgo nocallback gtkv_verify
// #cgo noescape gtkv_write
// #cgo nocallback gtkv_write
import "C"

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Limits, as tierkv.h enforces them.
const (
	MaxKeySize   = C.TKV_MAX_KEY_SIZE
	MaxValueSize = C.TKV_MAX_VALUE_SIZE
)

// HeaderVersion is the version number of the tierkv.h this package was
// compiled against.
const HeaderVersion = C.TKV_VERSION_NUMBER

// Version is the linked library's version number, major*10000 + minor*100 + patch.
func Version() int { return int(C.tkv_version()) }

// Options are tierkv options by name, with string values as tkv_options_set
// takes them ("memtable_size": "64M", "create_if_missing": "true"; the names
// are in docs/options.md). nil means every default.
type Options map[string]string

// cOptions builds the C options; the caller frees them with tkv_options_free.
func (o Options) cOptions() (*C.tkv_options, error) {
	names := make([]string, 0, len(o))
	for k := range o {
		names = append(names, k)
	}
	sort.Strings(names)
	var packed []byte
	for _, k := range names {
		if strings.IndexByte(k, 0) >= 0 || strings.IndexByte(o[k], 0) >= 0 {
			return nil, &Error{Code: CodeInvalid, Msg: fmt.Sprintf("option %q contains a NUL byte", k)}
		}
		packed = append(append(packed, k...), 0)
		packed = append(append(packed, o[k]...), 0)
	}
	packed = append(packed, 0)
	var e C.gtkv_err
	var opts *C.tkv_options
	rc := C.gtkv_options((*C.char)(unsafe.Pointer(&packed[0])), C.size_t(len(names)), &opts, &e)
	if err := newError(rc, &e); err != nil {
		return nil, err
	}
	return opts, nil
}

// WriteOptions are the flags of a write; nil means neither.
type WriteOptions struct {
	// Sync: the write (and every write acknowledged before it) is fdatasync'd
	// before the call returns, so it survives a power cut.
	Sync bool
	// NoWAL: the write skips the write-ahead log; a crash loses it until the
	// memtable holding it has been flushed.
	NoWAL bool
}

func (wo *WriteOptions) flags() C.unsigned {
	var f C.unsigned
	if wo != nil && wo.Sync {
		f |= C.TKV_SYNC
	}
	if wo != nil && wo.NoWAL {
		f |= C.TKV_NO_WAL
	}
	return f
}

// DB is an open database.
type DB struct {
	// mu: held shared by every call that uses c, exclusively by Close.
	mu    sync.RWMutex
	c     *C.tkv_db
	iters atomic.Int64 // open iterators (of the DB and of its snapshots)
	snaps atomic.Int64 // open snapshots
}

// bytesPtr is the address of b's first byte for a C call (nil when b has no
// backing array; the library rejects an empty key itself).
func bytesPtr(b []byte) unsafe.Pointer {
	return unsafe.Pointer(unsafe.SliceData(b))
}

// cString copies s into C memory (freed by the caller with C.free). A NUL
// byte inside s would cut the C string short, so it is refused.
func cString(what, s string) (*C.char, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, &Error{Code: CodeInvalid, Msg: what + " contains a NUL byte"}
	}
	return C.CString(s), nil
}

// Open opens, or (by default) creates, the database in directory dir.
func Open(dir string, opts Options) (*DB, error) {
	copts, err := opts.cOptions()
	if err != nil {
		return nil, err
	}
	defer C.tkv_options_free(copts)
	cdir, err := cString("directory name", dir)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cdir))
	var e C.gtkv_err
	var c *C.tkv_db
	if err := newError(C.gtkv_open(cdir, copts, &c, &e), &e); err != nil {
		return nil, err
	}
	return &DB{c: c}, nil
}

// Destroy removes the database in dir and its pmem pool; ErrBusy while it is
// open, nil if dir does not exist.
func Destroy(dir string) error {
	cdir, err := cString("directory name", dir)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(cdir))
	var e C.gtkv_err
	return newError(C.gtkv_destroy(cdir, &e), &e)
}

// Verify checks every checksum and structure of the closed database in dir
// without changing anything (tkv_verify). The report is returned whenever
// the library wrote one: with a nil error, and with ErrCorruption or
// ErrIOError, whose message gives the count and the first problem. Of opts
// only pmem_path is used; nil is fine.
func Verify(dir string, opts Options) (string, error) {
	copts, err := opts.cOptions()
	if err != nil {
		return "", err
	}
	defer C.tkv_options_free(copts)
	cdir, err := cString("directory name", dir)
	if err != nil {
		return "", err
	}
	defer C.free(unsafe.Pointer(cdir))
	var e C.gtkv_err
	var rep *C.char
	rc := C.gtkv_verify(cdir, copts, &rep, &e)
	var report string
	if rep != nil {
		report = C.GoString(rep)
		C.tkv_free(unsafe.Pointer(rep))
	}
	return report, newError(rc, &e)
}

// acquire returns the C handle with db.mu held shared, or ErrClosed.
func (db *DB) acquire() (*C.tkv_db, error) {
	db.mu.RLock()
	if db.c == nil {
		db.mu.RUnlock()
		return nil, ErrClosed
	}
	return db.c, nil
}

func (db *DB) release() { db.mu.RUnlock() }

// Close finishes background work, syncs the WAL and frees the handle. It
// returns ErrBusy and leaves the DB open while iterators or snapshots of it
// are open. A second Close is a no-op returning nil. Otherwise the handle is
// gone even when an error is returned (the background error that made the
// database read-only, or one met while finishing; data acknowledged before
// it comes back at the next Open).
func (db *DB) Close() error {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.c == nil {
		return nil
	}
	if n, s := db.iters.Load(), db.snaps.Load(); n > 0 || s > 0 {
		return &Error{Code: CodeBusy, Msg: fmt.Sprintf("close: %d iterator(s) and %d snapshot(s) still open", n, s)}
	}
	var e C.gtkv_err
	rc := C.gtkv_close(db.c, &e)
	db.c = nil
	return newError(rc, &e)
}

// Put sets key to value.
func (db *DB) Put(key, value []byte, wo *WriteOptions) error {
	c, err := db.acquire()
	if err != nil {
		return err
	}
	defer db.release()
	var e C.gtkv_err
	rc := C.gtkv_put(c, bytesPtr(key), C.size_t(len(key)), bytesPtr(value), C.size_t(len(value)), wo.flags(), &e)
	return newError(rc, &e)
}

// Delete removes key (nil if it is absent).
func (db *DB) Delete(key []byte, wo *WriteOptions) error {
	c, err := db.acquire()
	if err != nil {
		return err
	}
	defer db.release()
	var e C.gtkv_err
	return newError(C.gtkv_delete(c, bytesPtr(key), C.size_t(len(key)), wo.flags(), &e), &e)
}

// DeleteRange removes every key k with begin <= k < end (bytewise order)
// with one write, whatever the range holds; snapshots taken before it still
// see the keys, and a later Put of a key in the range is visible again. An
// empty range (begin equal to end) is a no-op; begin after end is ErrInvalid.
// Both bounds must be valid keys.
func (db *DB) DeleteRange(begin, end []byte, wo *WriteOptions) error {
	c, err := db.acquire()
	if err != nil {
		return err
	}
	defer db.release()
	var e C.gtkv_err
	rc := C.gtkv_delete_range(c, bytesPtr(begin), C.size_t(len(begin)), bytesPtr(end), C.size_t(len(end)), wo.flags(), &e)
	return newError(rc, &e)
}

// Write applies every operation of b atomically, in order. A nil or empty
// batch is a no-op.
func (db *DB) Write(b *Batch, wo *WriteOptions) error {
	c, err := db.acquire()
	if err != nil {
		return err
	}
	defer db.release()
	if b == nil || b.c == nil {
		return nil
	}
	var e C.gtkv_err
	return newError(C.gtkv_write(c, b.c, wo.flags(), &e), &e)
}

// Get returns key's value in a new slice, or ErrNotFound.
func (db *DB) Get(key []byte) ([]byte, error) {
	c, err := db.acquire()
	if err != nil {
		return nil, err
	}
	defer db.release()
	return get(c, nil, key)
}

func get(c *C.tkv_db, s *C.tkv_snapshot, key []byte) ([]byte, error) {
	var e C.gtkv_err
	var v unsafe.Pointer
	var vl C.size_t
	rc := C.gtkv_get(c, s, bytesPtr(key), C.size_t(len(key)), &v, &vl, &e)
	if rc != C.TKV_OK {
		return nil, newError(rc, &e)
	}
	out := C.GoBytes(v, C.int(vl))
	C.tkv_free(v)
	return out, nil
}

// MultiGet looks up every key at one consistent state. For each key i,
// values[i] is its value and errs[i] is nil, or errs[i] is ErrNotFound or
// the key's own error (an invalid key, an I/O error). err is non-nil only if
// the call as a whole failed.
func (db *DB) MultiGet(keys [][]byte) (values [][]byte, errs []error, err error) {
	c, err := db.acquire()
	if err != nil {
		return nil, nil, err
	}
	defer db.release()
	return multiGet(c, nil, keys)
}

func multiGet(c *C.tkv_db, s *C.tkv_snapshot, keys [][]byte) ([][]byte, []error, error) {
	n := len(keys)
	if n == 0 {
		return nil, nil, nil
	}
	total := 0
	for _, k := range keys {
		total += len(k)
	}
	// Keys, lengths and the result arrays live in C memory for the call.
	szSize := C.size_t(unsafe.Sizeof(C.size_t(0)))
	ptrSize := C.size_t(unsafe.Sizeof(unsafe.Pointer(nil)))
	intSize := C.size_t(unsafe.Sizeof(C.int(0)))
	mem := C.malloc(C.size_t(n)*(2*szSize+ptrSize+intSize) + C.size_t(total) + 1)
	if mem == nil {
		return nil, nil, &Error{Code: CodeNoMemory, Msg: "multi_get: out of memory"}
	}
	defer C.free(mem)
	klens := unsafe.Slice((*C.size_t)(mem), n)
	vlens := unsafe.Slice((*C.size_t)(unsafe.Add(mem, n*int(szSize))), n)
	vals := unsafe.Slice((*unsafe.Pointer)(unsafe.Add(mem, 2*n*int(szSize))), n)
	st := unsafe.Slice((*C.int)(unsafe.Add(mem, n*int(2*szSize+ptrSize))), n)
	kbuf := unsafe.Slice((*byte)(unsafe.Add(mem, n*int(2*szSize+ptrSize+intSize))), total+1)
	off := 0
	for i, k := range keys {
		off += copy(kbuf[off:], k)
		klens[i] = C.size_t(len(k))
		vals[i] = nil
	}
	var e C.gtkv_err
	rc := C.gtkv_multi_get(c, s, C.size_t(n), (*C.char)(unsafe.Pointer(&kbuf[0])), &klens[0], &vals[0], &vlens[0], &st[0], &e)
	if rc != C.TKV_OK {
		return nil, nil, newError(rc, &e)
	}
	values := make([][]byte, n)
	errs := make([]error, n)
	for i := range keys {
		switch st[i] {
		case C.TKV_OK:
			values[i] = C.GoBytes(vals[i], C.int(vlens[i]))
		case C.TKV_NOT_FOUND:
			errs[i] = ErrNotFound
		default:
			// The glue kept the message of the first failing key; the
			// others get their status name.
			errs[i] = &Error{Code: Code(st[i]), Msg: Code(st[i]).String()}
		}
		if vals[i] != nil {
			C.tkv_free(vals[i])
		}
	}
	for i := range keys {
		if st[i] < 0 {
			errs[i] = newError(st[i], &e)
			break
		}
	}
	return values, errs, nil
}

// Flush makes every write acknowledged so far durable in the next tier and
// waits for it.
func (db *DB) Flush() error {
	c, err := db.acquire()
	if err != nil {
		return err
	}
	defer db.release()
	var e C.gtkv_err
	return newError(C.gtkv_flush(c, &e), &e)
}

// Checkpoint makes a new database in dir, which must not exist, holding
// the contents of db at one moment while writes go on (tkv_checkpoint): its
// SSTs hard-linked (copied across file systems), the memtables and rows
// written as SSTs, an empty pmem pool of its own. Open it with Open like any
// database; it is independent of db. ErrInvalid if dir exists.
func (db *DB) Checkpoint(dir string) error {
	c, err := db.acquire()
	if err != nil {
		return err
	}
	defer db.release()
	cdir, err := cString("directory name", dir)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(cdir))
	var e C.gtkv_err
	return newError(C.gtkv_checkpoint(c, cdir, &e), &e)
}

// Property returns a text report by name ("tkv.stats", "tkv.levels",
// "tkv.options", numeric properties of docs/options.md), or ErrInvalid for
// an unknown name.
func (db *DB) Property(name string) (string, error) {
	c, err := db.acquire()
	if err != nil {
		return "", err
	}
	defer db.release()
	cname, err := cString("property name", name)
	if err != nil {
		return "", err
	}
	defer C.free(unsafe.Pointer(cname))
	var e C.gtkv_err
	var out *C.char
	if err := newError(C.gtkv_property(c, cname, &out, &e), &e); err != nil {
		return "", err
	}
	s := C.GoString(out)
	C.tkv_free(unsafe.Pointer(out))
	return s, nil
}
