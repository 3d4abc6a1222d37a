// SPDX-License-Identifier: Apache-2.0

package raftd

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	tierkv "github.com/tierkv/tierkv/bindings/go"
)

// startLocal runs a one-node cluster in the test process, its raft log in
// memory.
func startLocal(t *testing.T) *Node {
	t.Helper()
	cfg := Config{
		ID: "solo", DataDir: t.TempDir(), HTTPAddr: "127.0.0.1:0", RaftAddr: "127.0.0.1:0",
		Bootstrap: true, StoreName: "inmem", MaxBody: 1024, MaxKey: 64,
		OpenStore: func(string) (Stores, error) {
			s := raft.NewInmemStore()
			return Stores{Log: s, Stable: s, Close: func() error { return nil }}, nil
		},
		HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond,
		LeaderLease: 100 * time.Millisecond, Logger: hclog.NewNullLogger(),
	}
	n, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Shutdown(); err != nil {
			t.Error(err)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for n.raft.State() != raft.Leader {
		if time.Now().After(deadline) {
			t.Fatal("no leader")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return n
}

// TestHTTPRequests sends good and malformed requests to a node: each gets
// its status code, and the database ends up with the good writes only.
func TestHTTPRequests(t *testing.T) {
	n := startLocal(t)
	base := "http://" + n.HTTPAddr()
	a := newAPI(nil, 10*time.Second)
	long := strings.Repeat("k", 65)
	for _, tc := range []struct {
		method, path string
		body         []byte
		code         int
		want         string // the body, for a 200
	}{
		{"PUT", "/key/a", []byte("1"), 204, ""},
		{"GET", "/key/a", nil, 200, "1"},
		{"GET", "/key/a?stale=true", nil, 200, "1"},
		{"GET", "/key/a?stale=maybe", nil, 400, ""},
		{"GET", "/key/missing", nil, 404, ""},
		{"PUT", "/key/b%2Fc%00d%20", []byte("binary key"), 204, ""},
		{"GET", "/key/b%2Fc%00d%20", nil, 200, "binary key"},
		{"PUT", "/key/e", []byte{}, 204, ""},
		{"GET", "/key/e", nil, 200, ""},
		{"DELETE", "/key/e", nil, 204, ""},
		{"GET", "/key/e", nil, 404, ""},
		{"PUT", "/key/", []byte("x"), 400, ""},
		{"PUT", "/key/" + long, []byte("x"), 400, ""},
		{"GET", "/key/" + long, nil, 400, ""},
		{"PUT", "/key/big", bytes.Repeat([]byte("v"), 1025), 413, ""},
		{"POST", "/key/a", []byte("x"), 405, ""},
		{"PATCH", "/status", nil, 405, ""},
		{"GET", "/join", nil, 405, ""},
		{"POST", "/join", []byte("{"), 400, ""},
		{"POST", "/join", []byte(`{"id":"x"}`), 400, ""},
		{"POST", "/join", []byte(`{"id":"x","raft_addr":"1","http_addr":"2","extra":1}`), 400, ""},
		{"POST", "/join", []byte(`{"id":"x","raft_addr":"127.0.0.1","http_addr":"127.0.0.1:1"}`), 400, ""},
		{"GET", "/nothing", nil, 404, ""},
		{"GET", "/key/big", nil, 404, ""},
		{"GET", "/key/a", nil, 200, "1"},
	} {
		r := a.do(tc.method, base+tc.path, tc.body)
		if r.netErr != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, r.netErr)
		}
		if r.code != tc.code || (tc.code == 200 && string(r.body) != tc.want) {
			t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.path, r.code, r.body, tc.code, tc.want)
		}
	}

	// A malformed escape, which Go's client would not send.
	conn, err := net.Dial("tcp", n.HTTPAddr())
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "PUT /key/%%zz HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx")
	raw, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if raw.StatusCode != http.StatusBadRequest {
		t.Errorf("PUT /key/%%zz: %d", raw.StatusCode)
	}

	// A body over the limit without a Content-Length (chunked).
	req, _ := http.NewRequest(http.MethodPut, base+"/key/chunked", io.MultiReader(bytes.NewReader(make([]byte, 600)), bytes.NewReader(make([]byte, 600))))
	req.ContentLength = -1
	resp, err := a.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("chunked body over the limit: %d", resp.StatusCode)
	}
	if r := a.do("GET", base+"/key/chunked", nil); r.code != 404 {
		t.Errorf("a refused write is there: %d", r.code)
	}
	waitFor(t, 10*time.Second, "the leader's HTTP address in /status", func() bool {
		st, err := a.status(n.HTTPAddr())
		return err == nil && st.State == "Leader" && st.LeaderHTTP == n.HTTPAddr()
	})
}

// TestWriteErrors: how a failed write is answered.
func TestWriteErrors(t *testing.T) {
	n := &Node{cfg: Config{ID: "x"}}
	for _, tc := range []struct {
		err     error
		code    int
		outcome string
	}{
		{fmt.Errorf("store logs: %w", &tierkv.Error{Code: tierkv.CodeNoSpace, Msg: "wal: no space"}), 507, "unknown"},
		{fmt.Errorf("append: %w", &os.PathError{Op: "write", Path: "seg", Err: syscall.ENOSPC}), 507, "unknown"},
		{raft.ErrEnqueueTimeout, 503, "not-applied"},
		{raft.ErrLeadershipLost, 503, "unknown"},
		{raft.ErrRaftShutdown, 503, "unknown"},
		{errors.New("something else"), 503, "unknown"},
	} {
		rec := httptest.NewRecorder()
		n.writeFailed(rec, httptest.NewRequest("PUT", "/key/k", nil), tc.err)
		if rec.Code != tc.code || rec.Header().Get(OutcomeHeader) != tc.outcome {
			t.Errorf("%v: %d %q, want %d %q", tc.err, rec.Code, rec.Header().Get(OutcomeHeader), tc.code, tc.outcome)
		}
	}
}

type memSink struct {
	bytes.Buffer
	cancelled, closed bool
}

func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }
func (s *memSink) Close() error  { s.closed = true; return nil }

func cmdLog(idx uint64, op byte, k, v string) *raft.Log {
	return &raft.Log{Index: idx, Term: 1, Type: raft.LogCommand, Data: encodeCommand(op, []byte(k), []byte(v))}
}

func dataOf(t *testing.T, dir string) (map[string]string, uint64) {
	t.Helper()
	m, idx, err := ReadData(dir)
	if err != nil {
		t.Fatal(err)
	}
	return m, idx
}

// TestFSM: batched apply with the applied index, replay skipped, a
// snapshot streamed and restored into a fresh FSM, an older snapshot
// skipped, a cut one refused with the database left as it was.
func TestFSM(t *testing.T) {
	dirA, dirB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	a, err := OpenFSM(dirA, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp := a.ApplyBatch([]*raft.Log{
		cmdLog(1, opPut, "x", "1"),
		cmdLog(2, opPut, "y", "2"),
		{Index: 3, Term: 1, Type: raft.LogConfiguration},
		cmdLog(4, opDelete, "x", ""),
		cmdLog(5, opMember, "n1", "127.0.0.1:1"),
		{Index: 6, Term: 1, Type: raft.LogCommand, Data: []byte{9, 1, 'k'}},
	})
	if resp[5] == nil || resp[0] != nil {
		t.Fatalf("responses %v", resp)
	}
	if a.Applied() != 6 {
		t.Fatalf("applied %d", a.Applied())
	}
	snapOld, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// Replayed entries (a restart) change nothing.
	a.ApplyBatch([]*raft.Log{cmdLog(2, opPut, "y", "stale"), cmdLog(7, opPut, "z", "3")})
	if v, _ := a.Get([]byte("y")); string(v) != "2" {
		t.Fatalf("y = %q after a replay", v)
	}
	if a.Member("n1") != "127.0.0.1:1" {
		t.Fatalf("member %q", a.Member("n1"))
	}
	snap, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink memSink
	if err := snap.Persist(&sink); err != nil || !sink.closed {
		t.Fatal(err)
	}
	snap.Release()
	var oldSink memSink
	if err := snapOld.Persist(&oldSink); err != nil {
		t.Fatal(err)
	}
	snapOld.Release()

	b, err := OpenFSM(dirB, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.ApplyBatch([]*raft.Log{cmdLog(1, opPut, "gone", "after the restore")})
	if err := b.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if b.Applied() != 7 || b.Restores() != 1 || b.Member("n1") != "127.0.0.1:1" {
		t.Fatalf("after restore: applied %d, restores %d", b.Applied(), b.Restores())
	}
	// An older snapshot is skipped; a cut one is refused.
	if err := b.Restore(io.NopCloser(bytes.NewReader(oldSink.Bytes()))); err != nil || b.Restores() != 1 {
		t.Fatalf("older snapshot: %v, restores %d", err, b.Restores())
	}
	b.ApplyBatch([]*raft.Log{cmdLog(8, opPut, "w", "4")})
	a.ApplyBatch([]*raft.Log{cmdLog(9, opPut, "v", "5")})
	newer, _ := a.Snapshot()
	var newSink memSink
	newer.Persist(&newSink)
	newer.Release()
	cut := newSink.Bytes()[:newSink.Len()-5]
	if err := b.Restore(io.NopCloser(bytes.NewReader(cut))); err == nil {
		t.Fatal("a cut snapshot was restored")
	}
	if b.Applied() != 8 {
		t.Fatalf("applied %d after a refused restore", b.Applied())
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dirB)
	for _, e := range ents {
		if e.Name() == "db-3" {
			t.Errorf("the refused restore left %s", e.Name())
		}
	}
	got, idx := dataOf(t, dirB)
	want := map[string]string{"y": "2", "z": "3", "w": "4"}
	if idx != 8 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("b: %v at %d, want %v at 8", got, idx, want)
	}
	got, idx = dataOf(t, dirA)
	want = map[string]string{"y": "2", "z": "3", "v": "5"}
	if idx != 9 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("a: %v at %d, want %v at 9", got, idx, want)
	}
	// Reopened, the FSM keeps its applied index and drops a leftover
	// database of an interrupted restore.
	if err := os.MkdirAll(filepath.Join(dirA, "db-7"), 0o755); err != nil {
		t.Fatal(err)
	}
	a, err = OpenFSM(dirA, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if a.Applied() != 9 {
		t.Fatalf("reopened at %d", a.Applied())
	}
	if _, err := os.Stat(filepath.Join(dirA, "db-7")); !os.IsNotExist(err) {
		t.Fatalf("leftover database kept: %v", err)
	}
}
