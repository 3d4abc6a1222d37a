// SPDX-License-Identifier: Apache-2.0

package raftd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// TestClusterKills runs three tkv-raftd processes on 127.0.0.1 while
// clients write and read through them, and in each round
//
//  1. kills the leader with SIGKILL, waits for a new one, restarts the old
//     leader at once and waits for it to catch up from the log (TrailingLogs
//     is 1000, more than the clients write meanwhile);
//  2. kills the leader (even rounds; a follower in odd rounds), writes
//     until the new leader's log has been compacted past it
//     (SnapshotThreshold and TrailingLogs are low), restarts it, kills it
//     again while its FSM restores the snapshot the leader sent, restarts
//     it and waits for it to catch up from an installed snapshot;
//  3. asks a follower for a snapshot and kills it with SIGKILL as it
//     starts persisting (its snapshot directory keeps the cut .tmp), then
//     restarts it.
//
// At the end the clients' history must be linearizable (porcupine, a
// key-value model partitioned by key) and every node's database, read from
// disk after a clean stop, must hold exactly the acknowledged writes: the
// final linearizable reads of the clients' keys and every bulk write.
//
// One round by default (about 16 s, 30 s with -race); TKV_RAFTD_ROUNDS=n
// runs n rounds, TKV_RAFTD_STORE=wal runs it on raft-wal, and
// TKV_RAFTD_ARGS adds daemon flags (TKV_RAFTD_ARGS=-stale-reads must fail
// the linearizability check: it shows the check can).
func TestClusterKills(t *testing.T) {
	rounds := 1
	if s := os.Getenv("TKV_RAFTD_ROUNDS"); s != "" {
		if _, err := fmt.Sscan(s, &rounds); err != nil || rounds < 1 {
			t.Fatalf("bad TKV_RAFTD_ROUNDS=%q", s)
		}
	}
	store := "tierkv"
	if s := os.Getenv("TKV_RAFTD_STORE"); s != "" {
		store = s
	}
	c := startCluster(t, 3, nil,
		"-store", store,
		"-snapshot-threshold", "300", "-trailing-logs", "1000", "-snapshot-interval", "500ms",
		"-heartbeat-timeout", "500ms", "-election-timeout", "500ms", "-leader-lease", "250ms",
		"-log-level", "info")
	if extra := strings.Fields(os.Getenv("TKV_RAFTD_ARGS")); len(extra) > 0 {
		c.restartWith(extra)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Bulk data: acknowledged writes outside the clients' keys, which make
	// the snapshots big enough to be killed in the middle of.
	want := map[string]string{}
	bulk := func(prefix string, n, size int) {
		kv := map[string]string{}
		for i := 0; i < n; i++ {
			kv[fmt.Sprintf("%s/%05d", prefix, i)] = fmt.Sprintf("%s-%d-", prefix, i) + strings.Repeat("x", size)
		}
		c.putAll(ctx, kv)
		for k, v := range kv {
			want[k] = v
		}
	}
	bulk("bulk", 1500, 2048)

	w := newWorkload(c, 4, 8)
	w.start()
	stats := map[string]int{}
	for r := 0; r < rounds; r++ {
		// 1: the leader, killed and caught up from the log.
		old := c.waitLeader(10 * time.Second)
		old.kill()
		t0 := time.Now()
		nl := c.waitLeader(15 * time.Second)
		t.Logf("round %d: killed leader %s; %s leads after %v", r, old.id, nl.id, time.Since(t0).Round(time.Millisecond))
		old.start()
		st := c.waitCaughtUp(old, 30*time.Second)
		if st.FSMRestores != 0 {
			t.Fatalf("round %d: %s caught up from a snapshot, not from the log", r, old.id)
		}
		stats["leader kills, restarted and caught up from the log"]++

		// 2: the leader (even rounds) or a follower (odd rounds), caught
		// up from an installed snapshot.
		l := c.waitLeader(10 * time.Second)
		victim, what := l, "leader"
		if r%2 == 1 {
			victim, what = c.follower(l), "follower"
		}
		vst, err := c.api.status(victim.http)
		if err != nil {
			t.Fatal(err)
		}
		victim.kill()
		l = c.waitLeader(15 * time.Second)
		for i := 0; ; i++ {
			bulk(fmt.Sprintf("fill%d-%d", r, i), 300, 64)
			c.api.do(http.MethodPost, c.api.scheme+"://"+l.http+"/snapshot", nil)
			// vst was read just before the kill: the margin covers what
			// the node may have appended in between.
			if lst, err := c.api.status(l.http); err == nil && lst.FirstIndex > vst.LastIndex+300 {
				break
			}
			if i == 20 {
				t.Fatalf("the leader's log was not compacted past %s's last index %d", victim.id, vst.LastIndex)
			}
			if c.leader() != l {
				l = c.waitLeader(10 * time.Second)
			}
		}
		// The first restart is killed while its FSM restores the
		// snapshot the leader sent: the new database is left beside the
		// current one, which CURRENT still names.
		curPath := filepath.Join(victim.data, "fsm", "CURRENT")
		before, _ := os.ReadFile(curPath)
		hit := victim.setWatch("fsm: restoring snapshot", func(p *os.Process) { p.Signal(syscall.SIGKILL) })
		t1 := time.Now()
		victim.start()
		select {
		case <-hit:
			victim.kill()
			after, _ := os.ReadFile(curPath)
			if bytes.Equal(before, after) {
				stats["restarts killed mid-restore (CURRENT still the old database)"]++
			} else {
				stats["restarts killed after the restore had switched CURRENT"]++
			}
			t.Logf("round %d: %s killed %v after its restart, restoring a snapshot; CURRENT %s -> %s", r, victim.id,
				time.Since(t1).Round(time.Millisecond), bytes.TrimSpace(before), bytes.TrimSpace(after))
			victim.start()
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not start restoring a snapshot", victim.id)
		}
		st = c.waitCaughtUp(victim, 30*time.Second)
		t.Logf("round %d: %s caught up %v after its first restart", r, victim.id, time.Since(t1).Round(time.Millisecond))
		if st.FSMRestores == 0 {
			t.Fatalf("%s caught up without installing a snapshot (first index of the leader past its log)", victim.id)
		}
		stats[what+" kills, restarted and caught up from an installed snapshot"]++

		// 3: a follower, killed while it persists a snapshot.
		l = c.waitLeader(10 * time.Second)
		f := c.follower(l)
		mid := false
		for try := 0; try < 5 && !mid; try++ {
			before, _ := filepath.Glob(filepath.Join(f.data, "snapshots", "*.tmp"))
			hit := f.setWatch("fsm: persisting snapshot", func(p *os.Process) { p.Signal(syscall.SIGKILL) })
			go c.api.do(http.MethodPost, c.api.scheme+"://"+f.http+"/snapshot", nil)
			select {
			case <-hit:
			case <-time.After(5 * time.Second):
				f.setWatch("never", nil)
				time.Sleep(200 * time.Millisecond) // new entries for the next try
				continue
			}
			f.kill() // waits for the exit
			after, _ := filepath.Glob(filepath.Join(f.data, "snapshots", "*.tmp"))
			mid = len(after) > len(before)
			if mid {
				stats["followers killed mid-snapshot"]++
			} else {
				stats["follower kills that came after the snapshot was done"]++
			}
			f.start()
			c.waitCaughtUp(f, 30*time.Second)
		}
		if !mid {
			t.Errorf("round %d: no kill landed in the middle of a snapshot", r)
		}
	}
	w.stop()

	// Final reads of every client key, through the leader, into the
	// history; then every node must hold the same.
	for _, p := range c.nodes {
		if !p.running() {
			t.Fatalf("%s is not running", p.id)
		}
	}
	c.waitLeader(15 * time.Second)
	for _, k := range w.keys {
		v, found, ok := w.read(w.nclients, k, 20*time.Second)
		if !ok {
			t.Fatalf("final read of %s failed", k)
		}
		if found {
			want[k] = v
		}
	}
	for _, p := range c.nodes {
		c.waitCaughtUp(p, 30*time.Second)
	}
	for _, p := range c.nodes {
		p.stop()
	}
	for _, p := range c.nodes {
		got, applied, err := ReadData(filepath.Join(p.data, "fsm"))
		if err != nil {
			t.Fatalf("%s: %v", p.id, err)
		}
		if d := diffMaps(want, got); d != "" {
			t.Errorf("%s (applied index %d): database differs from the acknowledged writes:\n%s", p.id, applied, d)
		} else {
			t.Logf("%s: %d keys, applied index %d: exactly the acknowledged writes", p.id, len(got), applied)
		}
	}

	ops := w.history()
	unknown := 0
	for _, op := range ops {
		if op.Return == math.MaxInt64 {
			unknown++
		}
	}
	res, info := porcupine.CheckOperationsVerbose(kvModel, ops, 60*time.Second)
	t.Logf("history: %d operations (%d writes of unknown outcome) by %d clients over %d keys: %s",
		len(ops), unknown, w.nclients, len(w.keys), res)
	for _, k := range sortedKeys(stats) {
		t.Logf("  %s: %d", k, stats[k])
	}
	switch res {
	case porcupine.Ok:
	case porcupine.Illegal:
		out := filepath.Join(os.TempDir(), fmt.Sprintf("tkv-raftd-history-%d.html", time.Now().Unix()))
		if err := porcupine.VisualizePath(kvModel, info, out); err == nil {
			t.Errorf("the history is not linearizable: see %s", out)
		} else {
			t.Errorf("the history is not linearizable (visualization failed: %v)", err)
		}
	default:
		t.Errorf("the linearizability check did not finish in time")
	}
}

// follower returns a running node other than l.
func (c *cluster) follower(l *proc) *proc {
	for _, p := range c.nodes {
		if p != l && p.running() {
			return p
		}
	}
	c.t.Fatal("no follower is running")
	return nil
}

// putAll writes every key through the leader with 8 writers; every write
// must succeed (a write refused before raft took it is retried).
func (c *cluster) putAll(ctx context.Context, kv map[string]string) {
	c.t.Helper()
	keys := sortedKeys(kv)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	next := make(chan string)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var target string
			for k := range next {
				for attempt := 0; ; attempt++ {
					if attempt > 200 || ctx.Err() != nil {
						errs <- fmt.Errorf("put %s: gave up", k)
						return
					}
					if target == "" {
						if l := c.leader(); l != nil {
							target = l.http
						} else {
							time.Sleep(50 * time.Millisecond)
							continue
						}
					}
					r := c.api.do(http.MethodPut, c.api.scheme+"://"+target+"/key/"+url.PathEscape(k), []byte(kv[k]))
					if r.netErr == nil && r.code == http.StatusNoContent {
						break
					}
					if r.netErr == nil && r.header.Get(OutcomeHeader) == "not-applied" || errors.Is(r.netErr, syscall.ECONNREFUSED) {
						target = ""
						time.Sleep(20 * time.Millisecond)
						continue
					}
					errs <- fmt.Errorf("put %s: %d %s %v", k, r.code, r.body, r.netErr)
					return
				}
			}
		}()
	}
	for _, k := range keys {
		select {
		case next <- k:
		case err := <-errs:
			close(next)
			wg.Wait()
			c.t.Fatal(err)
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		c.t.Fatal(err)
	default:
	}
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func diffMaps(want, got map[string]string) string {
	var b strings.Builder
	n := 0
	for _, k := range sortedKeys(want) {
		if g, ok := got[k]; !ok {
			fmt.Fprintf(&b, "  missing %q\n", k)
			n++
		} else if g != want[k] {
			fmt.Fprintf(&b, "  %q = %.40q, want %.40q\n", k, g, want[k])
			n++
		}
		if n >= 10 {
			return b.String() + "  ...\n"
		}
	}
	for _, k := range sortedKeys(got) {
		if _, ok := want[k]; !ok {
			fmt.Fprintf(&b, "  extra %q = %.40q\n", k, got[k])
			n++
		}
		if n >= 10 {
			return b.String() + "  ...\n"
		}
	}
	return b.String()
}

// The model: one register per key; "" is absent (values are never empty).
type kvInput struct {
	op    byte // 'g', 'p', 'd'
	key   string
	value string
}

type kvOutput struct {
	value string // "" when absent
}

var kvModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		for _, op := range h {
			k := op.Input.(kvInput).key
			by[k] = append(by[k], op)
		}
		var out [][]porcupine.Operation
		for _, k := range sortedKeys(by) {
			out = append(out, by[k])
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		in, st := input.(kvInput), state.(string)
		switch in.op {
		case 'g':
			return output.(kvOutput).value == st, st
		case 'p':
			return true, in.value
		default:
			return true, ""
		}
	},
	DescribeOperation: func(input, output any) string {
		in := input.(kvInput)
		switch in.op {
		case 'g':
			return fmt.Sprintf("get(%s) -> %q", in.key, output.(kvOutput).value)
		case 'p':
			return fmt.Sprintf("put(%s, %s)", in.key, in.value)
		default:
			return fmt.Sprintf("delete(%s)", in.key)
		}
	},
}

// workload is nclients clients doing gets, puts and deletes of keys at
// random through the cluster, each op recorded with its call and return
// times. A write whose outcome is unknown (no answer, or a 5xx that does
// not say it was refused) is recorded as never returning: porcupine may
// order it anywhere after its call, and last of all when no read saw it,
// which is the same as not applied. A write refused before raft took it,
// and a read that got no answer, are left out.
type workload struct {
	c        *cluster
	nclients int
	keys     []string
	t0       time.Time
	mu       sync.Mutex
	ops      []porcupine.Operation
	done     chan struct{}
	wg       sync.WaitGroup
	hints    []string // per client: the node it last reached the leader at
}

func newWorkload(c *cluster, nclients, nkeys int) *workload {
	w := &workload{c: c, nclients: nclients, t0: time.Now(), done: make(chan struct{}), hints: make([]string, nclients+1)}
	for i := 0; i < nkeys; i++ {
		w.keys = append(w.keys, fmt.Sprintf("k%d", i))
	}
	return w
}

func (w *workload) now() int64 { return time.Since(w.t0).Nanoseconds() }

func (w *workload) record(client int, in kvInput, out kvOutput, call, ret int64) {
	w.mu.Lock()
	w.ops = append(w.ops, porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret})
	w.mu.Unlock()
}

func (w *workload) history() []porcupine.Operation {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]porcupine.Operation(nil), w.ops...)
}

func (w *workload) start() {
	for i := 0; i < w.nclients; i++ {
		w.wg.Add(1)
		go func(id int) {
			defer w.wg.Done()
			rng := rand.New(rand.NewSource(int64(id) + time.Now().UnixNano()))
			for seq := 0; ; seq++ {
				select {
				case <-w.done:
					return
				default:
				}
				k := w.keys[rng.Intn(len(w.keys))]
				switch x := rng.Intn(10); {
				case x < 4:
					w.read(id, k, 5*time.Second)
				case x < 9:
					w.write(id, kvInput{op: 'p', key: k, value: fmt.Sprintf("c%d-%d", id, seq)})
				default:
					w.write(id, kvInput{op: 'd', key: k})
				}
			}
		}(i)
	}
}

func (w *workload) stop() {
	close(w.done)
	w.wg.Wait()
}

// target returns the node client id should try: its hint, else a running
// node at random.
func (w *workload) target(id int) string {
	if w.hints[id] != "" {
		return w.hints[id]
	}
	var up []string
	for _, p := range w.c.nodes {
		if p.running() {
			up = append(up, p.http)
		}
	}
	if len(up) == 0 {
		return w.c.nodes[0].http
	}
	return up[rand.Intn(len(up))]
}

func redirectHost(r reply) string {
	u, err := url.Parse(r.header.Get("Location"))
	if err != nil {
		return ""
	}
	return u.Host
}

// write runs one put or delete to a definite or unknown outcome, or drops
// it when every try was refused before raft took it.
func (w *workload) write(id int, in kvInput) {
	call := w.now()
	deadline := time.Now().Add(5 * time.Second)
	method, body := http.MethodPut, []byte(in.value)
	if in.op == 'd' {
		method, body = http.MethodDelete, nil
	}
	for time.Now().Before(deadline) {
		addr := w.target(id)
		r := w.c.api.do(method, w.c.api.scheme+"://"+addr+"/key/"+in.key, body)
		switch {
		case r.netErr != nil:
			w.hints[id] = ""
			if errors.Is(r.netErr, syscall.ECONNREFUSED) {
				time.Sleep(20 * time.Millisecond)
				continue // never sent
			}
			w.record(id, in, kvOutput{}, call, math.MaxInt64)
			return
		case r.code == http.StatusNoContent:
			w.hints[id] = addr
			w.record(id, in, kvOutput{}, call, w.now())
			return
		case r.code == http.StatusTemporaryRedirect:
			w.hints[id] = redirectHost(r)
		case r.header.Get(OutcomeHeader) == "not-applied":
			w.hints[id] = ""
			time.Sleep(20 * time.Millisecond)
		case r.code >= 500:
			w.hints[id] = ""
			w.record(id, in, kvOutput{}, call, math.MaxInt64)
			return
		default:
			w.c.t.Errorf("%s: unexpected %d %s", r.request, r.code, r.body)
			w.record(id, in, kvOutput{}, call, math.MaxInt64)
			return
		}
	}
	// Every try was refused before raft took it: no effect.
}

// read runs one linearizable get; it is recorded only when answered.
func (w *workload) read(id int, key string, limit time.Duration) (string, bool, bool) {
	call := w.now()
	deadline := time.Now().Add(limit)
	for try := 0; time.Now().Before(deadline); try++ {
		addr := w.target(id)
		if try == 0 && rand.Intn(2) == 0 {
			// Half the reads start at a node at random: a follower
			// redirects them (or, with -stale-reads, answers itself).
			addr = w.c.nodes[rand.Intn(len(w.c.nodes))].http
		}
		r := w.c.api.do(http.MethodGet, w.c.api.scheme+"://"+addr+"/key/"+key, nil)
		switch {
		case r.netErr != nil:
			w.hints[id] = ""
			time.Sleep(20 * time.Millisecond)
		case r.code == http.StatusOK || r.code == http.StatusNotFound:
			w.hints[id] = addr
			v := ""
			if r.code == http.StatusOK {
				v = string(r.body)
			}
			w.record(id, kvInput{op: 'g', key: key}, kvOutput{value: v}, call, w.now())
			return v, r.code == http.StatusOK, true
		case r.code == http.StatusTemporaryRedirect:
			w.hints[id] = redirectHost(r)
		case r.code >= 500:
			w.hints[id] = ""
			time.Sleep(20 * time.Millisecond)
		default:
			w.c.t.Errorf("%s: unexpected %d %s", r.request, r.code, r.body)
			return "", false, false
		}
	}
	return "", false, false
}
