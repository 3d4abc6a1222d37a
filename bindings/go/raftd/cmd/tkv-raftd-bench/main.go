// SPDX-License-Identifier: Apache-2.0

// Command tkv-raftd-bench measures writes through tkv-raftd: it starts a
// cluster of daemons on 127.0.0.1 (the binary given by -bin, with -store),
// has -clients clients PUT values of -value bytes through the leader for
// -duration after a -warmup, and prints one line: writes/s and the
// latency percentiles of the acknowledged writes, with the errors. The
// daemons are stopped and their data removed at the end (-keep keeps it).
// make bench-raft runs it (bench/raft/run_raftd.sh).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"
)

type status struct {
	ID         string `json:"id"`
	State      string `json:"state"`
	LeaderHTTP string `json:"leader_http"`
	FSMApplied uint64 `json:"fsm_applied"`
	Servers    []struct {
		HTTP string `json:"http"`
	} `json:"servers"`
}

type node struct {
	id, http, raft, data string
	cmd                  *exec.Cmd
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "tkv-raftd-bench:", err)
	os.Exit(1)
}

var client = &http.Client{
	Timeout:       10 * time.Second,
	Transport:     &http.Transport{MaxIdleConnsPerHost: 256},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

func getStatus(addr string) (status, error) {
	var st status
	resp, err := client.Get("http://" + addr + "/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st, err
}

func waitFor(what string, d time.Duration, cond func() bool) {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			fatal(fmt.Errorf("timed out waiting for %s", what))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func main() {
	bin := flag.String("bin", "tkv-raftd", "the tkv-raftd binary")
	store := flag.String("store", "tierkv", "the daemons' -store")
	nodes := flag.Int("nodes", 3, "cluster size")
	clients := flag.Int("clients", 32, "concurrent writers")
	valueSize := flag.Int("value", 1024, "value bytes")
	keys := flag.Int("keys", 100000, "distinct keys written, round robin per client")
	duration := flag.Duration("duration", 10*time.Second, "measured time")
	warmup := flag.Duration("warmup", 2*time.Second, "unmeasured time first")
	dir := flag.String("dir", "", "where the nodes' data goes (default: a new temporary directory)")
	keep := flag.Bool("keep", false, "keep the data and logs")
	flag.Parse()

	root := *dir
	var err error
	if root == "" {
		root = os.TempDir()
	}
	if root, err = os.MkdirTemp(root, "tkv-raftd-bench-"); err != nil {
		fatal(err)
	}
	var ns []*node
	stopAll := func() {
		for _, n := range ns {
			if n.cmd != nil && n.cmd.Process != nil {
				n.cmd.Process.Signal(syscall.SIGTERM)
			}
		}
		for _, n := range ns {
			if n.cmd != nil {
				n.cmd.Wait()
			}
		}
		if !*keep {
			os.RemoveAll(root)
		}
	}
	start := func(n *node, extra ...string) {
		args := append([]string{"-id", n.id, "-data", n.data, "-http", n.http, "-raft", n.raft, "-store", *store, "-log-level", "warn"}, extra...)
		n.cmd = exec.Command(*bin, args...)
		logf, err := os.Create(filepath.Join(root, n.id+".log"))
		if err != nil {
			fatal(err)
		}
		n.cmd.Stdout, n.cmd.Stderr = logf, logf
		if err := n.cmd.Start(); err != nil {
			fatal(err)
		}
	}
	for i := 1; i <= *nodes; i++ {
		id := fmt.Sprintf("n%d", i)
		ns = append(ns, &node{id: id, http: freeAddr(), raft: freeAddr(), data: filepath.Join(root, id)})
	}
	start(ns[0], "-bootstrap")
	waitFor("the first node to lead", 20*time.Second, func() bool {
		st, err := getStatus(ns[0].http)
		return err == nil && st.State == "Leader" && st.LeaderHTTP != ""
	})
	for _, n := range ns[1:] {
		start(n, "-join", ns[0].http)
	}
	var leader string
	waitFor("every node to join", 30*time.Second, func() bool {
		st, err := getStatus(ns[0].http)
		if err != nil || st.State != "Leader" || len(st.Servers) != *nodes {
			return false
		}
		for _, s := range st.Servers {
			if s.HTTP == "" {
				return false
			}
		}
		leader = ns[0].http
		return true
	})

	value := bytes.Repeat([]byte("v"), *valueSize)
	var (
		mu       sync.Mutex
		lats     []time.Duration
		errs     = map[string]int{}
		measured bool
		stop     = make(chan struct{})
		wg       sync.WaitGroup
	)
	for c := 0; c < *clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			var mine []time.Duration
			myErrs := map[string]int{}
			for i := 0; ; i++ {
				select {
				case <-stop:
					mu.Lock()
					lats = append(lats, mine...)
					for k, v := range myErrs {
						errs[k] += v
					}
					mu.Unlock()
					return
				default:
				}
				key := fmt.Sprintf("c%d-%d", c, (i*(*clients)+c)%*keys)
				req, _ := http.NewRequest(http.MethodPut, "http://"+leader+"/key/"+key, bytes.NewReader(value))
				t0 := time.Now()
				resp, err := client.Do(req)
				d := time.Since(t0)
				mu.Lock()
				on := measured
				mu.Unlock()
				if err != nil {
					if on {
						myErrs["no answer"]++
					}
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusNoContent {
					if on {
						myErrs[resp.Status]++
					}
					continue
				}
				if on {
					mine = append(mine, d)
				}
			}
		}(c)
	}
	time.Sleep(*warmup)
	mu.Lock()
	measured = true
	mu.Unlock()
	t0 := time.Now()
	time.Sleep(*duration)
	mu.Lock()
	measured = false
	mu.Unlock()
	elapsed := time.Since(t0)
	close(stop)
	wg.Wait()
	stopAll()

	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	pct := func(p float64) float64 {
		if len(lats) == 0 {
			return 0
		}
		i := int(p * float64(len(lats)-1))
		return float64(lats[i].Microseconds()) / 1000
	}
	nerr := 0
	for _, v := range errs {
		nerr += v
	}
	fmt.Printf("store=%s nodes=%d clients=%d value=%d writes=%d seconds=%.1f writes_per_s=%.0f p50_ms=%.2f p99_ms=%.2f p999_ms=%.2f errors=%d\n",
		*store, *nodes, *clients, *valueSize, len(lats), elapsed.Seconds(), float64(len(lats))/elapsed.Seconds(),
		pct(0.50), pct(0.99), pct(0.999), nerr)
	if nerr > 0 {
		fmt.Fprintf(os.Stderr, "tkv-raftd-bench: errors: %v\n", errs)
	}
}
