// SPDX-License-Identifier: Apache-2.0

package raftd

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDiskFull fills a node's disk (a 300 MiB tmpfs; the test needs root
// and is skipped without it): writes succeed until one is answered 507
// with the store's reason; the node then either goes on answering or,
// when raft must save a new term it cannot write, exits with status 1 and
// says why (raft would panic). Given room and restarted, it has every
// acknowledged write and takes new ones.
func TestDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to mount a small tmpfs")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=300m", "tkv-raftd-test", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
	})
	p := newProc(t, daemon(t), mnt, "s1", "-max-body", "1048576",
		"-heartbeat-timeout", "500ms", "-election-timeout", "500ms", "-leader-lease", "250ms")
	p.logPath = filepath.Join(t.TempDir(), "s1.log")
	c := &cluster{t: t, nodes: []*proc{p}, api: newAPI(nil, 10*time.Second)}
	t.Cleanup(func() {
		if p.running() {
			p.kill()
		}
		if t.Failed() {
			b, _ := os.ReadFile(p.logPath)
			t.Logf("--- %s:\n%s", p.logPath, b)
		}
	})
	p.start("-bootstrap")
	c.waitLeader(15 * time.Second)

	value := make([]byte, 900<<10)
	rand.Read(value)
	var acked []string
	full := false
	for i := 0; i < 1000 && !full; i++ {
		k := fmt.Sprintf("k%d", i)
		r := c.api.do(http.MethodPut, "http://"+p.http+"/key/"+k, value)
		switch {
		case r.netErr == nil && r.code == http.StatusNoContent:
			acked = append(acked, k)
		case r.netErr == nil && r.code == http.StatusInsufficientStorage:
			if !strings.Contains(string(r.body), "no space") {
				t.Errorf("507 without the reason: %s", r.body)
			}
			t.Logf("after %d writes of 900 KiB: %d %s", len(acked), r.code, strings.TrimSpace(string(r.body)))
			full = true
		default:
			t.Fatalf("put %s: %d %s %v", k, r.code, r.body, r.netErr)
		}
	}
	if !full {
		t.Fatal("the disk never filled")
	}
	// A single node steps down when its log store fails; its next
	// election needs to save a term.
	deadline := time.Now().Add(10 * time.Second)
	for p.running() && time.Now().Before(deadline) {
		if r := c.api.do(http.MethodPut, "http://"+p.http+"/key/more", []byte("x")); r.netErr == nil && r.code < 300 {
			t.Fatalf("a write succeeded on a full disk: %d", r.code)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !p.running() {
		code := p.cmd.ProcessState.ExitCode()
		log, _ := os.ReadFile(p.logPath)
		if code != 1 || bytes.Contains(log, []byte("panic:")) || !bytes.Contains(log, []byte("raft cannot go on")) {
			t.Fatalf("the node exited with %d; want 1, a reason and no panic", code)
		}
		t.Logf("the node exited with status 1, saying why")
	} else {
		t.Logf("the node is still up, answering")
		p.stop()
	}

	if out, err := exec.Command("mount", "-o", "remount,size=700m", mnt).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v: %s", err, out)
	}
	p.start()
	c.waitLeader(15 * time.Second)
	for _, k := range acked {
		r := c.api.do(http.MethodGet, "http://"+p.http+"/key/"+k, nil)
		if r.netErr != nil || r.code != http.StatusOK || !bytes.Equal(r.body, value) {
			t.Fatalf("acknowledged %s after the restart: %d %v", k, r.code, r.netErr)
		}
	}
	if r := c.api.do(http.MethodPut, "http://"+p.http+"/key/after", value); r.netErr != nil || r.code != http.StatusNoContent {
		t.Fatalf("a write after the restart: %d %s %v", r.code, r.body, r.netErr)
	}
	t.Logf("restarted with room: all %d acknowledged writes there, new writes taken", len(acked))
	p.stop()
}
