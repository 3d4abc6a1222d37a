// SPDX-License-Identifier: Apache-2.0

package raftd

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	tierkv "github.com/tierkv/tierkv/bindings/go"
)

// The FSM's database holds three kinds of key, apart by their first byte:
//
//	0x00 "applied"   the index of the last raft entry in the database, 8 bytes BE
//	0x01 <server id> a member's HTTP address (for redirects to the leader)
//	0x02 <key>       a client key and its value
//
// The FSM directory holds the databases (db-<n>) and a file, CURRENT,
// naming the one in use; a restore fills db-<n+1> and then replaces CURRENT.
const (
	prefixMeta   = 0x00
	prefixMember = 0x01
	prefixUser   = 0x02
)

var keyApplied = []byte("\x00applied")

// Commands carried in raft entries: an op byte, the key's length as a
// uvarint, the key, and the rest is the value.
const (
	opPut    = 1
	opDelete = 2
	opMember = 3 // key: server id, value: its HTTP address
	// opBarrier changes nothing but the applied index. A new leader
	// commits one before its first linearizable read; raft's own barrier
	// and no-op entries never reach the FSM, so they would leave the
	// FSM's applied index short of the commit index.
	opBarrier = 4 // key: the leader's id, no value
)

type command struct {
	op    byte
	key   []byte
	value []byte
}

func encodeCommand(op byte, key, value []byte) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen64+len(key)+len(value))
	b = append(b, op)
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	return append(b, value...)
}

func decodeCommand(b []byte) (command, error) {
	if len(b) < 2 {
		return command{}, errors.New("command too short")
	}
	op := b[0]
	n, w := binary.Uvarint(b[1:])
	if w <= 0 || n == 0 || n > uint64(len(b)-1-w) {
		return command{}, errors.New("bad key length in command")
	}
	key := b[1+w : 1+w+int(n)]
	value := b[1+w+int(n):]
	switch op {
	case opPut, opMember:
	case opDelete, opBarrier:
		if len(value) != 0 {
			return command{}, errors.New("delete with a value")
		}
	default:
		return command{}, fmt.Errorf("unknown op %d", op)
	}
	return command{op: op, key: key, value: value}, nil
}

func userKey(k []byte) []byte   { return append([]byte{prefixUser}, k...) }
func memberKey(k []byte) []byte { return append([]byte{prefixMember}, k...) }

// dbRef counts the snapshots being persisted from a database, so that a
// database replaced by a restore is closed only when the last one is done.
type dbRef struct {
	db      *tierkv.DB
	dir     string
	refs    int
	retired bool // replaced by a restore, or the FSM closed
	keep    bool // closed with the FSM: close it, do not remove it
}

// FSM is the daemon's state machine: a tierkv database. Entries are
// applied in batches (raft.BatchingFSM), and each batch writes, with the
// entries, the index of the last entry it covers; entries at or below that
// index are skipped, so the raft log may be replayed over the database
// after a restart. The batches are not synced: the raft log is, and a
// database that lost its tail in a power cut is brought forward again by
// the replay (or by a snapshot restore, see Restore).
type FSM struct {
	dir string
	log hclog.Logger

	mu  sync.RWMutex // held shared to use cur, exclusively to swap it
	cur *dbRef
	gen int

	refMu sync.Mutex // guards dbRef.refs and dbRef.retired

	applied  atomic.Uint64
	notifyMu sync.Mutex
	notify   chan struct{} // closed and replaced when applied moves

	failed   atomic.Pointer[error] // a write that failed: the FSM stops applying
	restores atomic.Int64
}

var _ raft.BatchingFSM = (*FSM)(nil)

// OpenFSM opens the FSM in dir, creating it if needed, and removes what an
// interrupted restore left behind.
func OpenFSM(dir string, logger hclog.Logger) (*FSM, error) {
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f := &FSM{dir: dir, log: logger, notify: make(chan struct{})}
	gen, err := readCurrent(dir)
	if err != nil {
		return nil, err
	}
	if gen == 0 {
		gen = 1
		if err := writeCurrent(dir, gen); err != nil {
			return nil, err
		}
	}
	// Databases other than the current one are what a restore left when it
	// failed or was cut short, or the old one after a swap.
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, e := range ents {
		if n, ok := dbGen(e.Name()); ok && n != gen {
			p := filepath.Join(dir, e.Name())
			_ = tierkv.Destroy(p)
			if err := os.RemoveAll(p); err != nil {
				return nil, err
			}
		}
	}
	p := filepath.Join(dir, dbName(gen))
	db, err := tierkv.Open(p, nil)
	if err != nil {
		return nil, err
	}
	idx, err := readApplied(db)
	if err != nil {
		db.Close()
		return nil, err
	}
	f.cur = &dbRef{db: db, dir: p}
	f.gen = gen
	f.applied.Store(idx)
	return f, nil
}

func dbName(gen int) string { return "db-" + strconv.Itoa(gen) }

func dbGen(name string) (int, bool) {
	s, ok := strings.CutPrefix(name, "db-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n > 0
}

// readCurrent returns the generation CURRENT names, 0 if there is none.
func readCurrent(dir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "CURRENT"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, ok := dbGen(strings.TrimSpace(string(b)))
	if !ok {
		return 0, fmt.Errorf("fsm: bad CURRENT file in %s: %q", dir, b)
	}
	return n, nil
}

// writeCurrent replaces CURRENT atomically and durably.
func writeCurrent(dir string, gen int) error {
	tmp := filepath.Join(dir, "CURRENT.tmp")
	fh, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := fh.WriteString(dbName(gen) + "\n"); err != nil {
		fh.Close()
		return err
	}
	if err := fh.Sync(); err != nil {
		fh.Close()
		return err
	}
	if err := fh.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, "CURRENT")); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func readApplied(db *tierkv.DB) (uint64, error) {
	v, err := db.Get(keyApplied)
	if errors.Is(err, tierkv.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("fsm: applied index of %d bytes", len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// Applied is the index of the last raft entry the database holds.
func (f *FSM) Applied() uint64 { return f.applied.Load() }

// Restores counts the snapshots restored since the FSM was opened.
func (f *FSM) Restores() int64 { return f.restores.Load() }

// Err is the write error that stopped the FSM, or nil.
func (f *FSM) Err() error {
	if p := f.failed.Load(); p != nil {
		return *p
	}
	return nil
}

func (f *FSM) setApplied(idx uint64) {
	f.applied.Store(idx)
	f.notifyMu.Lock()
	close(f.notify)
	f.notify = make(chan struct{})
	f.notifyMu.Unlock()
}

// WaitApplied returns once the FSM has applied index idx, or when done is
// closed (then false).
func (f *FSM) WaitApplied(idx uint64, done <-chan struct{}) bool {
	for {
		f.notifyMu.Lock()
		ch := f.notify
		f.notifyMu.Unlock()
		if f.applied.Load() >= idx {
			return true
		}
		select {
		case <-ch:
		case <-done:
			return f.applied.Load() >= idx
		}
	}
}

// Apply is ApplyBatch of one entry.
func (f *FSM) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

// ApplyBatch writes the batch's commands and the index of its last entry in
// one tierkv batch. The response of each entry is nil, or the error of a
// command that could not be decoded or of a failed write.
func (f *FSM) ApplyBatch(logs []*raft.Log) []any {
	resp := make([]any, len(logs))
	if err := f.Err(); err != nil {
		for i := range resp {
			resp[i] = err
		}
		return resp
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	applied := f.applied.Load()
	last := applied
	b := tierkv.NewBatch()
	defer b.Close()
	for i, l := range logs {
		if l.Index <= applied {
			continue // already in the database: a replay after a restart
		}
		last = l.Index
		if l.Type != raft.LogCommand {
			continue
		}
		c, err := decodeCommand(l.Data)
		if err != nil {
			resp[i] = fmt.Errorf("entry %d: %w", l.Index, err)
			continue
		}
		switch c.op {
		case opPut:
			err = b.Put(userKey(c.key), c.value)
		case opDelete:
			err = b.Delete(userKey(c.key))
		case opMember:
			err = b.Put(memberKey(c.key), c.value)
		case opBarrier:
		}
		if err != nil {
			// Only an entry the leader should have refused (a key or
			// value over tierkv's limits); every node refuses it alike.
			resp[i] = fmt.Errorf("entry %d: %w", l.Index, err)
		}
	}
	if last == applied {
		return resp
	}
	var idx [8]byte
	binary.BigEndian.PutUint64(idx[:], last)
	err := b.Put(keyApplied, idx[:])
	if err == nil {
		err = f.cur.db.Write(b, nil)
	}
	if err != nil {
		// The entries are committed but not in this node's database. The
		// FSM stops here (it neither skips them nor snapshots) and says so
		// in /status; after a restart raft replays them from the log.
		err = fmt.Errorf("fsm: applying entries %d..%d: %w", logs[0].Index, last, err)
		f.failed.Store(&err)
		f.log.Error("fsm stopped", "error", err)
		for i := range resp {
			resp[i] = err
		}
		return resp
	}
	f.setApplied(last)
	return resp
}

// Get reads a client key from the database as it is now.
func (f *FSM) Get(key []byte) ([]byte, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.cur.db.Get(userKey(key))
}

// Member returns the HTTP address recorded for a server id, "" if none.
func (f *FSM) Member(id string) string {
	f.mu.RLock()
	defer f.mu.RUnlock()
	v, err := f.cur.db.Get(memberKey([]byte(id)))
	if err != nil {
		return ""
	}
	return string(v)
}

func (f *FSM) release(r *dbRef) {
	f.refMu.Lock()
	r.refs--
	last := r.retired && r.refs == 0
	f.refMu.Unlock()
	if last {
		f.dropDB(r)
	}
}

func (f *FSM) dropDB(r *dbRef) {
	if err := r.db.Close(); err != nil {
		f.log.Warn("fsm: closing a replaced database", "dir", r.dir, "error", err)
	}
	if r.keep {
		return
	}
	_ = tierkv.Destroy(r.dir)
	if err := os.RemoveAll(r.dir); err != nil {
		f.log.Warn("fsm: removing a replaced database", "dir", r.dir, "error", err)
	}
}

// Snapshot pins the database with a tierkv snapshot; Persist streams it.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	if err := f.Err(); err != nil {
		return nil, err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	s, err := f.cur.db.NewSnapshot()
	if err != nil {
		return nil, err
	}
	f.refMu.Lock()
	f.cur.refs++
	f.refMu.Unlock()
	return &fsmSnapshot{f: f, ref: f.cur, snap: s}, nil
}

// The snapshot stream: a magic line, the applied index (uvarint), then one
// record per key (key length uvarint, key, value length uvarint, value),
// keys with their prefix byte, in order; then a zero key length and the
// record count (uvarint) and the magic again, so that a cut stream is
// refused.
const snapMagic = "tkv-raftd snapshot 1\n"

type fsmSnapshot struct {
	f    *FSM
	ref  *dbRef
	snap *tierkv.Snapshot
	once sync.Once
}

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	err := s.write(sink)
	if err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *fsmSnapshot) write(sink io.Writer) error {
	applied, err := s.snap.Get(keyApplied)
	var idx uint64
	switch {
	case errors.Is(err, tierkv.ErrNotFound):
	case err != nil:
		return err
	case len(applied) == 8:
		idx = binary.BigEndian.Uint64(applied)
	default:
		return fmt.Errorf("fsm: applied index of %d bytes", len(applied))
	}
	s.f.log.Info("fsm: persisting snapshot", "applied", idx)
	w := bufio.NewWriterSize(sink, 256<<10)
	var tmp [binary.MaxVarintLen64]byte
	uv := func(n uint64) error {
		_, err := w.Write(binary.AppendUvarint(tmp[:0], n))
		return err
	}
	if _, err := w.WriteString(snapMagic); err != nil {
		return err
	}
	if err := uv(idx); err != nil {
		return err
	}
	it, err := s.snap.NewIterator()
	if err != nil {
		return err
	}
	defer it.Close()
	var n uint64
	for it.Seek([]byte{prefixMember}); it.Valid(); it.Next() {
		k, v := it.Key(), it.Value()
		if err := uv(uint64(len(k))); err != nil {
			return err
		}
		if _, err := w.Write(k); err != nil {
			return err
		}
		if err := uv(uint64(len(v))); err != nil {
			return err
		}
		if _, err := w.Write(v); err != nil {
			return err
		}
		n++
	}
	if err := it.Err(); err != nil {
		return err
	}
	if err := uv(0); err != nil {
		return err
	}
	if err := uv(n); err != nil {
		return err
	}
	if _, err := w.WriteString(snapMagic); err != nil {
		return err
	}
	return w.Flush()
}

func (s *fsmSnapshot) Release() {
	s.once.Do(func() {
		s.snap.Close()
		s.f.release(s.ref)
	})
}

// restoreBatchBytes is about how much a restore puts in one tierkv batch.
const restoreBatchBytes = 4 << 20

// Restore replaces the database with the snapshot's, unless the database
// already holds the snapshot's index or a later one (as after a restart:
// raft restores the latest snapshot at start, and the database kept
// everything up to its applied index). The snapshot is written into a new
// database beside the current one; CURRENT is switched to it only once it
// is complete and flushed, and then the handle is swapped in and the old
// database dropped. A failure or a crash part way leaves the old one in use.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	r := bufio.NewReaderSize(rc, 256<<10)
	magic := make([]byte, len(snapMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != snapMagic {
		return fmt.Errorf("fsm restore: not a tkv-raftd snapshot")
	}
	idx, err := binary.ReadUvarint(r)
	if err != nil {
		return fmt.Errorf("fsm restore: %w", err)
	}
	if cur := f.applied.Load(); idx <= cur && f.Err() == nil {
		f.log.Info("fsm: restore skipped, the database is as new", "snapshot", idx, "applied", cur)
		return nil
	}
	f.log.Info("fsm: restoring snapshot", "snapshot", idx, "applied", f.applied.Load())
	f.mu.RLock()
	gen := f.gen + 1
	f.mu.RUnlock()
	dir := filepath.Join(f.dir, dbName(gen))
	_ = tierkv.Destroy(dir)
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	db, err := tierkv.Open(dir, nil)
	if err != nil {
		return fmt.Errorf("fsm restore: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			db.Close()
			_ = tierkv.Destroy(dir)
			os.RemoveAll(dir)
		}
	}()
	if err := fillFromSnapshot(db, r, idx); err != nil {
		return fmt.Errorf("fsm restore: %w", err)
	}
	if err := db.Flush(); err != nil {
		return fmt.Errorf("fsm restore: %w", err)
	}
	if err := writeCurrent(f.dir, gen); err != nil {
		return fmt.Errorf("fsm restore: %w", err)
	}
	ok = true
	f.mu.Lock()
	old := f.cur
	f.cur = &dbRef{db: db, dir: dir}
	f.gen = gen
	f.failed.Store(nil)
	f.restores.Add(1)
	f.setApplied(idx)
	f.mu.Unlock()
	f.refMu.Lock()
	old.retired = true
	last := old.refs == 0
	f.refMu.Unlock()
	if last {
		f.dropDB(old)
	}
	f.log.Info("fsm: restored snapshot", "applied", idx)
	return nil
}

func fillFromSnapshot(db *tierkv.DB, r *bufio.Reader, idx uint64) error {
	b := tierkv.NewBatch()
	defer b.Close()
	size := 0
	var n uint64
	for {
		kl, err := binary.ReadUvarint(r)
		if err != nil {
			return err
		}
		if kl == 0 {
			break
		}
		if kl > tierkv.MaxKeySize {
			return fmt.Errorf("key of %d bytes", kl)
		}
		k := make([]byte, kl)
		if _, err := io.ReadFull(r, k); err != nil {
			return err
		}
		if k[0] != prefixMember && k[0] != prefixUser {
			return fmt.Errorf("key with prefix %#x", k[0])
		}
		vl, err := binary.ReadUvarint(r)
		if err != nil {
			return err
		}
		if vl > tierkv.MaxValueSize {
			return fmt.Errorf("value of %d bytes", vl)
		}
		v := make([]byte, vl)
		if _, err := io.ReadFull(r, v); err != nil {
			return err
		}
		if err := b.Put(k, v); err != nil {
			return err
		}
		n++
		size += len(k) + len(v)
		if size >= restoreBatchBytes {
			if err := db.Write(b, nil); err != nil {
				return err
			}
			b.Clear()
			size = 0
		}
	}
	count, err := binary.ReadUvarint(r)
	if err != nil {
		return err
	}
	if count != n {
		return fmt.Errorf("snapshot says %d records, read %d", count, n)
	}
	magic := make([]byte, len(snapMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != snapMagic {
		return errors.New("snapshot cut short (no end mark)")
	}
	var ib [8]byte
	binary.BigEndian.PutUint64(ib[:], idx)
	if err := b.Put(keyApplied, ib[:]); err != nil {
		return err
	}
	return db.Write(b, nil)
}

// Close closes the database. Snapshots still being persisted keep theirs
// open until they are released.
func (f *FSM) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cur == nil {
		return nil
	}
	f.refMu.Lock()
	busy := f.cur.refs > 0
	f.cur.retired = true
	f.cur.keep = true
	f.refMu.Unlock()
	var err error
	if !busy {
		err = f.cur.db.Close()
	}
	f.cur = nil
	return err
}

// ReadData returns every client key and value of the FSM in dir, which must
// not be open (the tests compare the nodes' databases with it).
func ReadData(dir string) (map[string]string, uint64, error) {
	gen, err := readCurrent(dir)
	if err != nil {
		return nil, 0, err
	}
	if gen == 0 {
		return nil, 0, fmt.Errorf("no FSM in %s", dir)
	}
	db, err := tierkv.Open(filepath.Join(dir, dbName(gen)), tierkv.Options{"create_if_missing": "false"})
	if err != nil {
		return nil, 0, err
	}
	defer db.Close()
	idx, err := readApplied(db)
	if err != nil {
		return nil, 0, err
	}
	it, err := db.NewIterator()
	if err != nil {
		return nil, 0, err
	}
	defer it.Close()
	out := map[string]string{}
	for it.Seek([]byte{prefixUser}); it.Valid(); it.Next() {
		out[string(it.Key()[1:])] = string(it.Value())
	}
	return out, idx, it.Err()
}
