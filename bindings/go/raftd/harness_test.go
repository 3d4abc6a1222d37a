// SPDX-License-Identifier: Apache-2.0

package raftd

// The harness of the process tests: it builds cmd/tkv-raftd once, runs
// nodes as child processes on 127.0.0.1 ports, kills and restarts them,
// and talks to them over HTTP.

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// daemon builds cmd/tkv-raftd into a directory that lives as long as the
// test binary (with -race when the tests run with it), or returns
// $TKV_RAFTD_BIN (say, boltd's tkv-raftd-bolt, with TKV_RAFTD_STORE=bolt).
func daemon(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("TKV_RAFTD_BIN"); p != "" {
		return p
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tkv-raftd-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "tkv-raftd")
		args := []string{"build", "-o", binPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		args = append(args, "./cmd/tkv-raftd")
		cmd := exec.Command(goTool(), args...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

func goTool() string {
	if p := filepath.Join(os.Getenv("GOROOT"), "bin", "go"); os.Getenv("GOROOT") != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "/usr/local/go/bin/go"
}

// freeAddr returns a 127.0.0.1 address with a port free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// proc is one node run as a child process.
type proc struct {
	t       testing.TB
	bin     string
	id      string
	data    string
	http    string
	raft    string
	args    []string // the flags beyond id, data and addresses
	logPath string
	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	watch   atomic.Pointer[watch]
}

// watch is a signal on the next stderr line containing s: the reader of
// stderr runs f (with the process) at once, then closes hit. The
// kill-mid-snapshot test sends SIGKILL from f, as close to the line as it
// can.
type watch struct {
	s   string
	f   func(*os.Process)
	hit chan struct{}
}

func newProc(t testing.TB, bin, root, id string, args ...string) *proc {
	p := &proc{t: t, bin: bin, id: id, data: filepath.Join(root, id), http: freeAddr(t), raft: freeAddr(t), args: args}
	p.logPath = filepath.Join(root, id+".log")
	return p
}

func (p *proc) start(extra ...string) {
	p.t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	args := append([]string{"-id", p.id, "-data", p.data, "-http", p.http, "-raft", p.raft}, p.args...)
	args = append(args, extra...)
	cmd := exec.Command(p.bin, args...)
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		p.t.Fatal(err)
	}
	fmt.Fprintf(logf, "=== start %s %s\n", p.bin, strings.Join(args, " "))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		p.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	p.cmd = cmd
	exited := make(chan struct{})
	p.exited = exited
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if w := p.watch.Load(); w != nil && strings.Contains(line, w.s) && p.watch.CompareAndSwap(w, nil) {
				if w.f != nil {
					w.f(cmd.Process)
				}
				close(w.hit)
			}
			fmt.Fprintln(logf, line)
		}
		io.Copy(logf, stderr)
		cmd.Wait()
		fmt.Fprintf(logf, "=== exited: %v\n", cmd.ProcessState)
		logf.Close()
		close(exited)
	}()
}

// setWatch arms a signal on the next stderr line containing s.
func (p *proc) setWatch(s string, f func(*os.Process)) chan struct{} {
	w := &watch{s: s, f: f, hit: make(chan struct{})}
	p.watch.Store(w)
	return w.hit
}

// kill sends SIGKILL and waits for the process to be gone.
func (p *proc) kill() {
	p.t.Helper()
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// stop sends SIGTERM and waits for a clean exit.
func (p *proc) stop() {
	p.t.Helper()
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		p.t.Errorf("%s did not stop on SIGTERM within 20s (killed)", p.id)
		return
	}
	if !cmd.ProcessState.Success() {
		p.t.Errorf("%s exited with %v after SIGTERM; see %s", p.id, cmd.ProcessState, p.logPath)
	}
}

func (p *proc) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// api is an HTTP client of the nodes that does not follow redirects.
type api struct {
	c      *http.Client
	scheme string
}

func newAPI(cfg *tls.Config, timeout time.Duration) *api {
	a := &api{scheme: "http", c: &http.Client{
		Timeout:       timeout,
		Transport:     &http.Transport{TLSClientConfig: cfg, MaxIdleConnsPerHost: 16},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
	if cfg != nil {
		a.scheme = "https"
	}
	return a
}

type reply struct {
	code    int
	body    []byte
	header  http.Header
	netErr  error // no answer (connection refused, reset, timeout)
	request string
}

func (a *api) do(method, url string, body []byte) reply {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return reply{netErr: err}
	}
	resp, err := a.c.Do(req)
	if err != nil {
		return reply{netErr: err, request: method + " " + url}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{netErr: err, request: method + " " + url}
	}
	return reply{code: resp.StatusCode, body: b, header: resp.Header, request: method + " " + url}
}

func (a *api) status(addr string) (Status, error) {
	r := a.do(http.MethodGet, a.scheme+"://"+addr+"/status", nil)
	if r.netErr != nil {
		return Status{}, r.netErr
	}
	if r.code != http.StatusOK {
		return Status{}, fmt.Errorf("status %d: %s", r.code, r.body)
	}
	var st Status
	err := json.Unmarshal(r.body, &st)
	return st, err
}

// waitFor polls cond every 50ms until it is true or d has passed.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cluster is a set of nodes and a client of them.
type cluster struct {
	t     testing.TB
	nodes []*proc
	api   *api
}

// leader returns the running node every running node agrees is the leader
// in one term, or nil.
func (c *cluster) leader() *proc {
	var lead string
	var term uint64
	for _, p := range c.nodes {
		if !p.running() {
			continue
		}
		st, err := c.api.status(p.http)
		if err != nil {
			return nil
		}
		if st.State == "Leader" {
			if lead != "" {
				return nil
			}
			lead, term = st.ID, st.Term
		}
	}
	if lead == "" {
		return nil
	}
	for _, p := range c.nodes {
		if !p.running() {
			continue
		}
		st, err := c.api.status(p.http)
		if err != nil || st.LeaderID != lead || st.Term != term {
			return nil
		}
	}
	for _, p := range c.nodes {
		if p.id == lead {
			return p
		}
	}
	return nil
}

func (c *cluster) waitLeader(d time.Duration) *proc {
	c.t.Helper()
	var l *proc
	waitFor(c.t, d, "a leader all running nodes agree on", func() bool {
		l = c.leader()
		return l != nil
	})
	return l
}

// waitCaughtUp waits until p's FSM holds every entry the leader's FSM had
// applied when the wait began (the leader's applied index, not its commit
// index: no-op entries never reach an FSM).
func (c *cluster) waitCaughtUp(p *proc, d time.Duration) Status {
	c.t.Helper()
	var target uint64
	waitFor(c.t, d, "the leader's status", func() bool {
		l := c.leader()
		if l == nil {
			return false
		}
		st, err := c.api.status(l.http)
		target = st.FSMApplied
		return err == nil && st.State == "Leader"
	})
	var st Status
	waitFor(c.t, d, fmt.Sprintf("%s to apply index %d", p.id, target), func() bool {
		var err error
		st, err = c.api.status(p.http)
		return err == nil && st.FSMApplied >= target
	})
	return st
}

func (c *cluster) byID(id string) *proc {
	for _, p := range c.nodes {
		if p.id == id {
			return p
		}
	}
	return nil
}

// startCluster starts n nodes: the first bootstraps, the others join it.
func startCluster(t testing.TB, n int, cfg *tls.Config, args ...string) *cluster {
	t.Helper()
	bin := daemon(t)
	root := t.TempDir()
	if os.Getenv("TKV_RAFTD_KEEP") != "" {
		var err error
		if root, err = os.MkdirTemp("", "tkv-raftd-test-"); err != nil {
			t.Fatal(err)
		}
		t.Logf("nodes' data and logs in %s (TKV_RAFTD_KEEP)", root)
	}
	c := &cluster{t: t, api: newAPI(cfg, 3*time.Second)}
	for i := 1; i <= n; i++ {
		c.nodes = append(c.nodes, newProc(t, bin, root, fmt.Sprintf("n%d", i), args...))
	}
	t.Cleanup(func() {
		for _, p := range c.nodes {
			if p.running() {
				p.kill()
			}
		}
		if t.Failed() {
			for _, p := range c.nodes {
				b, _ := os.ReadFile(p.logPath)
				if len(b) > 8000 {
					b = b[len(b)-8000:]
				}
				t.Logf("--- tail of %s:\n%s", p.logPath, b)
			}
		}
	})
	c.nodes[0].start("-bootstrap")
	c.waitLeader(15 * time.Second)
	for _, p := range c.nodes[1:] {
		p.start("-join", c.nodes[0].http)
	}
	waitFor(t, 30*time.Second, "every node in the configuration and applying", func() bool {
		l := c.leader()
		if l == nil {
			return false
		}
		st, err := c.api.status(l.http)
		if err != nil || len(st.Servers) != n {
			return false
		}
		for _, s := range st.Servers {
			if s.HTTP == "" {
				return false
			}
		}
		for _, p := range c.nodes {
			ps, err := c.api.status(p.http)
			if err != nil || ps.FSMApplied < st.FSMApplied {
				return false
			}
		}
		return true
	})
	return c
}

// restartWith stops every node and starts it again with more flags.
func (c *cluster) restartWith(extra []string) {
	c.t.Helper()
	for _, p := range c.nodes {
		p.stop()
		p.args = append(p.args, extra...)
	}
	for _, p := range c.nodes {
		p.start()
	}
	c.waitLeader(15 * time.Second)
}
