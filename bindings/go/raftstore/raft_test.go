// SPDX-License-Identifier: Apache-2.0

package raftstore

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// countFSM counts the commands applied to it.
type countFSM struct {
	mu      sync.Mutex
	applied []string
}

func (f *countFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = append(f.applied, string(l.Data))
	return len(f.applied)
}

func (f *countFSM) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.applied)
}

// Snapshot holds the commands applied so far, one a line.
func (f *countFSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return listSnapshot(strings.Join(f.applied, "\n")), nil
}

func (f *countFSM) Restore(r io.ReadCloser) error {
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.applied = nil
	if len(b) > 0 {
		f.applied = strings.Split(string(b), "\n")
	}
	return nil
}

type listSnapshot string

func (l listSnapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := io.WriteString(sink, string(l)); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (listSnapshot) Release() {}

func startRaft(t *testing.T, s *Store, fsm raft.FSM, snaps raft.SnapshotStore, bootstrap bool) *raft.Raft {
	t.Helper()
	conf := raft.DefaultConfig()
	conf.LocalID = "node1"
	conf.Logger = hclog.New(&hclog.LoggerOptions{Output: io.Discard})
	conf.HeartbeatTimeout = 50 * time.Millisecond
	conf.ElectionTimeout = 50 * time.Millisecond
	conf.LeaderLeaseTimeout = 50 * time.Millisecond
	conf.CommitTimeout = 5 * time.Millisecond
	conf.RestoreCommittedLogs = true
	addr, trans := raft.NewInmemTransport("node1")
	if bootstrap {
		cfg := raft.Configuration{Servers: []raft.Server{{ID: conf.LocalID, Address: addr}}}
		if err := raft.BootstrapCluster(conf, s, s, snaps, trans, cfg); err != nil {
			t.Fatalf("bootstrap: %v", err)
		}
	}
	r, err := raft.NewRaft(conf, fsm, s, s, snaps, trans)
	if err != nil {
		t.Fatalf("new raft: %v", err)
	}
	return r
}

func waitLeader(t *testing.T, r *raft.Raft) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for r.State() != raft.Leader {
		if time.Now().After(deadline) {
			t.Fatal("no leader after 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRaftNode runs a one-node hashicorp/raft cluster on the store: it
// applies commands, takes a snapshot half way, applies more, shuts down,
// reopens the store and starts raft again with RestoreCommittedLogs. Raft
// then replays the entries from the snapshot up to the commit index the
// store kept (GetCommitIndex) before NewRaft returns, and every command is
// there once the node leads again.
//
// The snapshot matters: raft v1.8.0 with RestoreCommittedLogs starts its
// scan for configuration entries after the replayed ones, so a node whose
// only configuration entry is below the stored commit index and in no
// snapshot comes back with no peers.
func TestRaftNode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "raft")
	s, err := Open(dir, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	snaps := raft.NewInmemSnapshotStore()
	fsm := &countFSM{}
	r := startRaft(t, s, fsm, snaps, true)
	waitLeader(t, r)
	const n = 200
	apply := func(from, to int) {
		futures := make([]raft.ApplyFuture, 0, to-from)
		for i := from; i < to; i++ {
			futures = append(futures, r.Apply([]byte(fmt.Sprintf("cmd-%d", i)), 5*time.Second))
		}
		for i, f := range futures {
			if err := f.Error(); err != nil {
				t.Fatalf("apply %d: %v", from+i, err)
			}
		}
	}
	apply(0, n/2)
	if err := r.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	apply(n/2, n)
	if err := r.Shutdown().Error(); err != nil {
		t.Fatal(err)
	}
	if fsm.count() != n {
		t.Fatalf("applied %d of %d", fsm.count(), n)
	}
	last, _ := s.LastIndex()
	commit, _ := s.GetCommitIndex()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = Open(dir, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if l, _ := s.LastIndex(); l != last {
		t.Fatalf("last index %d after reopen, was %d", l, last)
	}
	if c, _ := s.GetCommitIndex(); c != commit || c == 0 {
		t.Fatalf("commit index %d after reopen, was %d", c, commit)
	}
	fsm2 := &countFSM{}
	r = startRaft(t, s, fsm2, snaps, false)
	defer r.Shutdown()
	// Replayed from the store before NewRaft returned: raft handed every
	// entry up to the stored commit index to the FSM.
	if applied := r.AppliedIndex(); applied != commit {
		t.Fatalf("applied index %d at start, stored commit index %d", applied, commit)
	}
	waitLeader(t, r)
	if err := r.Barrier(5 * time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if got := fsm2.count(); got != n {
		t.Fatalf("after the barrier %d commands applied, want %d", got, n)
	}
	for i, c := range fsm2.applied {
		if c != fmt.Sprintf("cmd-%d", i) {
			t.Fatalf("command %d is %q", i, c)
		}
	}
}
