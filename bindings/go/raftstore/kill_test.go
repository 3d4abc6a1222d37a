// SPDX-License-Identifier: Apache-2.0

package raftstore

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	tierkv "github.com/tierkv/tierkv/bindings/go"
)

// The kill -9 test runs this test binary again as a writer (TestMain sees
// killChildEnv and runs killChild instead of the tests).
const killChildEnv = "RAFTSTORE_KILL_CHILD_DIR"

func TestMain(m *testing.M) {
	if dir := os.Getenv(killChildEnv); dir != "" {
		killChild(dir)
		os.Exit(2) // killChild never returns but by dying
	}
	os.Exit(m.Run())
}

// payload is entry idx's data: its length and bytes follow from idx.
func payload(idx uint64) []byte {
	n := int(idx%997) + 8
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(idx*131 + uint64(i)*7)
	}
	return b
}

// killChild appends synced batches to the store in dir until it is killed,
// acknowledging each write on stdout once it has returned:
//
//	L <last index> <commit index written with it>
//	T <term set with SetUint64>
//	D <first index after a DeleteRange>
func killChild(dir string) {
	s, err := Open(dir, testOptions)
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		os.Exit(1)
	}
	fail := func(what string, err error) {
		fmt.Fprintf(os.Stderr, "child %s: %v\n", what, err)
		os.Exit(1)
	}
	ack := func(format string, args ...any) {
		if _, err := fmt.Fprintf(os.Stdout, format+"\n", args...); err != nil {
			os.Exit(1)
		}
	}
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	term, err := s.GetUint64([]byte("term"))
	if err != nil && err != ErrKeyNotFound {
		fail("get term", err)
	}
	rng := rand.New(rand.NewSource(int64(os.Getpid())))
	for it := 1; ; it++ {
		n := uint64(1 + rng.Intn(16))
		logs := make([]*raft.Log, 0, n)
		for i := last + 1; i <= last+n; i++ {
			logs = append(logs, &raft.Log{Index: i, Term: term, Data: payload(i)})
		}
		commit := last // what this batch writes: every entry before it is committed
		s.StageCommitIndex(commit)
		if err := s.StoreLogs(logs); err != nil {
			fail("store logs", err)
		}
		if first == 0 {
			first = last + 1
		}
		last += n
		ack("L %d %d", last, commit)
		if it%10 == 0 {
			term++
			if err := s.SetUint64([]byte("term"), term); err != nil {
				fail("set term", err)
			}
			ack("T %d", term)
		}
		if it%25 == 0 && last-first > 300 {
			if err := s.DeleteRange(first, last-200); err != nil {
				fail("delete range", err)
			}
			first = last - 199
			ack("D %d", first)
		}
	}
}

// acked is what a killed child acknowledged.
type acked struct {
	lines                     int
	last, commit, term, first uint64
}

func (a *acked) add(line string) error {
	var v, c uint64
	switch {
	case strings.HasPrefix(line, "L "):
		if _, err := fmt.Sscanf(line, "L %d %d", &v, &c); err != nil {
			return err
		}
		a.last, a.commit = v, c
	case strings.HasPrefix(line, "T "):
		if _, err := fmt.Sscanf(line, "T %d", &v); err != nil {
			return err
		}
		a.term = v
	case strings.HasPrefix(line, "D "):
		if _, err := fmt.Sscanf(line, "D %d", &v); err != nil {
			return err
		}
		a.first = v
	default:
		return fmt.Errorf("unexpected line %q", line)
	}
	a.lines++
	return nil
}

// runAndKill starts a writer on dir, kills it with SIGKILL once it has
// acknowledged `after` lines, and returns everything it acknowledged (lines
// it wrote before it died included).
func runAndKill(t *testing.T, dir string, after int) acked {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), killChildEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var a acked
	sc := bufio.NewScanner(out)
	deadline := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	defer deadline.Stop()
	killed := false
	for sc.Scan() {
		if err := a.add(sc.Text()); err != nil {
			cmd.Process.Kill()
			t.Fatal(err)
		}
		if a.lines == after && !killed {
			if err := cmd.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			killed = true
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("writer stopped by itself after %d lines: %v\n%s", a.lines, err, stderr.String())
	}
	if a.lines == 0 {
		t.Fatalf("writer acknowledged nothing\n%s", stderr.String())
	}
	return a
}

// TestKill9 kills a writer of synced batches with SIGKILL at a random moment,
// three times on one store, and checks after each that nothing it
// acknowledged is lost: every entry up to its last acknowledged index, the
// commit index written with it, its last term, and no entry it had deleted.
func TestKill9(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "raft")
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	var prevLast uint64
	for round := 0; round < 3; round++ {
		after := 100 + rng.Intn(400)
		a := runAndKill(t, dir, after)
		if _, err := tierkv.Verify(dir, nil); err != nil {
			t.Fatalf("round %d: verify after the kill: %v", round, err)
		}
		s, err := Open(dir, testOptions)
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		first, _ := s.FirstIndex()
		last, _ := s.LastIndex()
		commit, _ := s.GetCommitIndex()
		term, err := s.GetUint64([]byte("term"))
		if err != nil && err != ErrKeyNotFound {
			t.Fatal(err)
		}
		t.Logf("round %d: killed after %d lines; acknowledged last=%d commit=%d term=%d first=%d; reopened first=%d last=%d commit=%d term=%d",
			round, a.lines, a.last, a.commit, a.term, a.first, first, last, commit, term)
		if last < a.last {
			t.Fatalf("round %d: last index %d below the acknowledged %d", round, last, a.last)
		}
		if last > a.last+16 {
			t.Fatalf("round %d: last index %d beyond the one batch that may be unacknowledged (%d)", round, last, a.last)
		}
		if first < a.first || first == 0 || first > a.last {
			t.Fatalf("round %d: first index %d (acknowledged first %d, last %d)", round, first, a.first, a.last)
		}
		if commit < a.commit || commit > last {
			t.Fatalf("round %d: commit index %d (acknowledged %d, last %d)", round, commit, a.commit, last)
		}
		if term < a.term {
			t.Fatalf("round %d: term %d below the acknowledged %d", round, term, a.term)
		}
		for i := first; i <= last; i++ {
			var l raft.Log
			if err := s.GetLog(i, &l); err != nil {
				t.Fatalf("round %d: entry %d: %v", round, i, err)
			}
			if l.Index != i || !bytes.Equal(l.Data, payload(i)) {
				t.Fatalf("round %d: entry %d holds the wrong data", round, i)
			}
		}
		if first > 1 {
			if err := s.GetLog(first-1, new(raft.Log)); err != raft.ErrLogNotFound {
				t.Fatalf("round %d: entry %d below the first: %v", round, first-1, err)
			}
		}
		if last < prevLast {
			t.Fatalf("round %d: the log shrank from %d to %d", round, prevLast, last)
		}
		prevLast = last
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
