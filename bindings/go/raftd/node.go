// SPDX-License-Identifier: Apache-2.0

// Package raftd is tkv-raftd, a replicated key-value daemon: hashicorp/raft
// for replication, a tierkv database as each node's state machine, and an
// HTTP API. The binary is cmd/tkv-raftd; see README.md.
package raftd

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Stores is what a StoreOpener returns: raft's log and stable store (often
// one value), and how to close them.
type Stores struct {
	Log    raft.LogStore
	Stable raft.StableStore
	Close  func() error
}

// StoreOpener opens the log and stable store of a node in directory dir.
type StoreOpener func(dir string) (Stores, error)

// Config is a node's configuration; cmd/tkv-raftd fills it from flags.
type Config struct {
	ID            string // raft server id, unique in the cluster
	DataDir       string
	HTTPAddr      string // address the HTTP API listens on
	HTTPAdvertise string // address other nodes redirect clients to (default: HTTPAddr's)
	RaftAddr      string // address the raft transport listens on
	RaftAdvertise string // address peers dial (default: RaftAddr's)
	Bootstrap     bool   // start a new cluster with this node as its only voter
	Join          string // HTTP address of a member to ask for admission
	StoreName     string // recorded in /status
	OpenStore     StoreOpener
	StaleReads    bool        // serve GETs from the local FSM unless ?stale=0
	TLS           *tls.Config // mutual TLS for HTTP and raft; nil: plain TCP
	MaxBody       int64       // largest value, bytes
	MaxKey        int         // longest key, bytes

	SnapshotThreshold uint64
	SnapshotInterval  time.Duration
	TrailingLogs      uint64
	HeartbeatTimeout  time.Duration
	ElectionTimeout   time.Duration
	LeaderLease       time.Duration
	ApplyTimeout      time.Duration // how long a request may wait for raft

	Logger hclog.Logger

	// OnFatal is called when the node cannot go on: raft's stable store
	// failed to save the current term or vote (a full disk), after which
	// raft panics. It must not return; nil means log the error and exit
	// with status 1 (the stores are crash-safe: a restart once there is
	// room again recovers every acknowledged write).
	OnFatal func(error)
}

// guardedStable passes raft's stable store calls through, and on a failed
// write calls the node's OnFatal before raft would panic on the error.
type guardedStable struct {
	raft.StableStore
	fatal func(error)
}

func (g guardedStable) Set(key, val []byte) error {
	err := g.StableStore.Set(key, val)
	if err != nil {
		g.fatal(fmt.Errorf("raft's stable store failed to save %q: %w", key, err))
	}
	return err
}

func (g guardedStable) SetUint64(key []byte, val uint64) error {
	err := g.StableStore.SetUint64(key, val)
	if err != nil {
		g.fatal(fmt.Errorf("raft's stable store failed to save %q: %w", key, err))
	}
	return err
}

// Node is a running tkv-raftd node.
type Node struct {
	cfg       Config
	log       hclog.Logger
	fsm       *FSM
	raft      *raft.Raft
	trans     *raft.NetworkTransport
	stores    Stores
	snaps     *raft.FileSnapshotStore
	httpLn    net.Listener
	httpSrv   *http.Server
	client    *http.Client
	scheme    string
	httpAdv   string
	readyTerm atomic.Uint64 // a term in which this leader has applied a barrier
	done      chan struct{}
	wg        sync.WaitGroup
	stopOnce  sync.Once
}

// Start opens the node's stores and FSM, starts raft and the HTTP API, and
// bootstraps or joins if asked and the node has no raft state yet.
func Start(cfg Config) (*Node, error) {
	if cfg.ID == "" || cfg.DataDir == "" || cfg.OpenStore == nil {
		return nil, errors.New("raftd: ID, DataDir and OpenStore are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "tkv-raftd", Output: os.Stderr})
	}
	if cfg.OnFatal == nil {
		logger := cfg.Logger
		cfg.OnFatal = func(err error) {
			logger.Error("stopping: raft cannot go on without saving its term and vote; "+
				"make room (or fix the store) and restart the node", "error", err)
			os.Exit(1)
		}
	}
	if cfg.ApplyTimeout <= 0 {
		cfg.ApplyTimeout = 10 * time.Second
	}
	n := &Node{cfg: cfg, log: cfg.Logger, done: make(chan struct{}), scheme: "http"}
	if cfg.TLS != nil {
		n.scheme = "https"
	}
	n.client = &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: cfg.TLS},
	}
	ok := false
	defer func() {
		if !ok {
			n.closeAll()
		}
	}()
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, err
	}
	var err error
	if n.fsm, err = OpenFSM(filepath.Join(cfg.DataDir, "fsm"), n.log.Named("fsm")); err != nil {
		return nil, err
	}
	// A snapshot cut short by a crash stays behind as <id>.tmp, which the
	// snapshot store skips (with a warning each time it lists them).
	tmps, _ := filepath.Glob(filepath.Join(cfg.DataDir, "snapshots", "*.tmp"))
	for _, d := range tmps {
		n.log.Info("removing an unfinished snapshot", "dir", d)
		if err := os.RemoveAll(d); err != nil {
			return nil, err
		}
	}
	if n.snaps, err = raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, 2, n.log.Named("snapshots")); err != nil {
		return nil, err
	}
	if n.stores, err = cfg.OpenStore(filepath.Join(cfg.DataDir, "raft-"+cfg.StoreName)); err != nil {
		return nil, fmt.Errorf("raftd: opening the %s store: %w", cfg.StoreName, err)
	}
	n.stores.Stable = guardedStable{StableStore: n.stores.Stable, fatal: cfg.OnFatal}
	sl, err := newStreamLayer(cfg.RaftAddr, cfg.RaftAdvertise, cfg.TLS)
	if err != nil {
		return nil, err
	}
	n.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  sl,
		MaxPool: 4,
		Timeout: 10 * time.Second,
		Logger:  n.log.Named("raft-net"),
	})
	if n.httpLn, err = net.Listen("tcp", cfg.HTTPAddr); err != nil {
		return nil, err
	}
	n.httpAdv = cfg.HTTPAdvertise
	if n.httpAdv == "" {
		n.httpAdv = n.httpLn.Addr().String()
	}

	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.ID)
	rc.Logger = n.log.Named("raft")
	if cfg.SnapshotThreshold > 0 {
		rc.SnapshotThreshold = cfg.SnapshotThreshold
	}
	if cfg.SnapshotInterval > 0 {
		rc.SnapshotInterval = cfg.SnapshotInterval
	}
	if cfg.TrailingLogs > 0 {
		rc.TrailingLogs = cfg.TrailingLogs
	}
	if cfg.HeartbeatTimeout > 0 {
		rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	}
	if cfg.ElectionTimeout > 0 {
		rc.ElectionTimeout = cfg.ElectionTimeout
	}
	if cfg.LeaderLease > 0 {
		rc.LeaderLeaseTimeout = cfg.LeaderLease
	}
	// The FSM is a database that keeps its applied index, so raft's
	// RestoreCommittedLogs is not used (with it, raft v1.8.0 restarts a node
	// whose only configuration entry was replayed, with no snapshot, without
	// peers); after a restart raft restores the latest snapshot (the FSM
	// skips it when it is as new, see FSM.Restore) and replays the log past
	// it, which the FSM skips up to its applied index.
	hasState, err := raft.HasExistingState(n.stores.Log, n.stores.Stable, n.snaps)
	if err != nil {
		return nil, err
	}
	if n.raft, err = newRaft(rc, n.fsm, n.stores, n.snaps, n.trans); err != nil {
		return nil, err
	}
	if !hasState && cfg.Bootstrap {
		f := n.raft.BootstrapCluster(raft.Configuration{Servers: []raft.Server{
			{Suffrage: raft.Voter, ID: rc.LocalID, Address: n.trans.LocalAddr()},
		}})
		if err := f.Error(); err != nil {
			return nil, fmt.Errorf("raftd: bootstrap: %w", err)
		}
	}
	n.httpSrv = &http.Server{
		Handler:           n,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    cfg.MaxKey*3 + 16<<10, // a key percent-encoded, and headers
		TLSConfig:         cfg.TLS,
		ErrorLog:          n.log.Named("http").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
	ln := n.httpLn
	if cfg.TLS != nil {
		ln = tls.NewListener(ln, cfg.TLS)
	}
	n.wg.Add(2)
	go func() {
		defer n.wg.Done()
		if err := n.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			n.log.Error("http server", "error", err)
		}
	}()
	go func() {
		defer n.wg.Done()
		n.memberLoop(!hasState && cfg.Join != "")
	}()
	ok = true
	n.log.Info("node started", "id", cfg.ID, "http", n.httpAdv, "raft", n.trans.LocalAddr(),
		"store", cfg.StoreName, "tls", cfg.TLS != nil, "existing_state", hasState, "fsm_applied", n.fsm.Applied())
	return n, nil
}

// newRaft is raft.NewRaft, with a panic turned into an error: raft panics
// when its log store cannot read an entry it replays at start (a damaged
// store), and the daemon should then say so and exit, not dump a stack.
func newRaft(rc *raft.Config, fsm raft.FSM, st Stores, snaps raft.SnapshotStore, trans raft.Transport) (r *raft.Raft, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("raftd: starting raft: the log store failed: %v", p)
		}
	}()
	return raft.NewRaft(rc, fsm, st.Log, st.Stable, snaps, trans)
}

// HTTPAddr is the address the HTTP API listens on.
func (n *Node) HTTPAddr() string { return n.httpLn.Addr().String() }

// memberLoop joins the cluster when asked to (retrying until it is let
// in), then keeps this node's HTTP address in the FSM: a leader records
// its own, so that followers can redirect clients to it.
func (n *Node) memberLoop(join bool) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for join {
		err := n.join()
		if err == nil {
			n.log.Info("joined the cluster", "via", n.cfg.Join)
			break
		}
		n.log.Warn("join failed, retrying", "via", n.cfg.Join, "error", err)
		select {
		case <-n.done:
			return
		case <-t.C:
		}
	}
	for {
		select {
		case <-n.done:
			return
		case <-t.C:
		}
		if n.raft.State() != raft.Leader || n.fsm.Member(n.cfg.ID) == n.httpAdv {
			continue
		}
		cmd := encodeCommand(opMember, []byte(n.cfg.ID), []byte(n.httpAdv))
		if err := n.raft.Apply(cmd, n.cfg.ApplyTimeout).Error(); err != nil {
			n.log.Warn("recording this node's HTTP address", "error", err)
		}
	}
}

type joinRequest struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	HTTPAddr string `json:"http_addr"`
}

// join asks the node at cfg.Join (following redirects to the leader) to
// add this one as a voter.
func (n *Node) join() error {
	body, _ := json.Marshal(joinRequest{ID: n.cfg.ID, RaftAddr: string(n.trans.LocalAddr()), HTTPAddr: n.httpAdv})
	req, err := http.NewRequest(http.MethodPost, n.scheme+"://"+n.cfg.Join+"/join", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := n.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// addVoter admits a server (POST /join on the leader). A server already in
// the configuration with the same id and address is left as it is; one
// with the same id or address but not both is removed first.
func (n *Node) addVoter(j joinRequest) error {
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return err
	}
	present := false
	for _, s := range cf.Configuration().Servers {
		sameID, sameAddr := s.ID == raft.ServerID(j.ID), s.Address == raft.ServerAddress(j.RaftAddr)
		switch {
		case sameID && sameAddr:
			present = true
		case sameID || sameAddr:
			if err := n.raft.RemoveServer(s.ID, 0, n.cfg.ApplyTimeout).Error(); err != nil {
				return fmt.Errorf("removing %s (%s): %w", s.ID, s.Address, err)
			}
		}
	}
	if !present {
		f := n.raft.AddVoter(raft.ServerID(j.ID), raft.ServerAddress(j.RaftAddr), 0, n.cfg.ApplyTimeout)
		if err := f.Error(); err != nil {
			return err
		}
		n.log.Info("added voter", "id", j.ID, "raft", j.RaftAddr, "http", j.HTTPAddr)
	}
	cmd := encodeCommand(opMember, []byte(j.ID), []byte(j.HTTPAddr))
	return n.raft.Apply(cmd, n.cfg.ApplyTimeout).Error()
}

// Status is the body of GET /status.
type Status struct {
	ID           string   `json:"id"`
	State        string   `json:"state"`
	Term         uint64   `json:"term"`
	LeaderID     string   `json:"leader_id"`
	LeaderRaft   string   `json:"leader_raft"`
	LeaderHTTP   string   `json:"leader_http"`
	CommitIndex  uint64   `json:"commit_index"`
	AppliedIndex uint64   `json:"applied_index"` // raft's
	FSMApplied   uint64   `json:"fsm_applied"`   // in the FSM's database
	LastIndex    uint64   `json:"last_index"`
	FirstIndex   uint64   `json:"first_index"`
	Snapshot     uint64   `json:"snapshot_index"`
	FSMRestores  int64    `json:"fsm_restores"`
	FSMError     string   `json:"fsm_error,omitempty"`
	Store        string   `json:"store"`
	TLS          bool     `json:"tls"`
	Servers      []Member `json:"servers"`
}

// Member is one server of the raft configuration.
type Member struct {
	ID       string `json:"id"`
	Raft     string `json:"raft"`
	HTTP     string `json:"http"`
	Suffrage string `json:"suffrage"`
}

// Status reports the node's raft state and its FSM's.
func (n *Node) Status() Status {
	laddr, lid := n.raft.LeaderWithID()
	st := Status{
		ID: n.cfg.ID, State: n.raft.State().String(), Term: n.raft.CurrentTerm(),
		LeaderID: string(lid), LeaderRaft: string(laddr),
		CommitIndex: n.raft.CommitIndex(), AppliedIndex: n.raft.AppliedIndex(),
		FSMApplied: n.fsm.Applied(), LastIndex: n.raft.LastIndex(),
		FSMRestores: n.fsm.Restores(), Store: n.cfg.StoreName, TLS: n.cfg.TLS != nil,
	}
	if lid != "" {
		st.LeaderHTTP = n.fsm.Member(string(lid))
	}
	st.FirstIndex, _ = n.stores.Log.FirstIndex()
	if metas, err := n.snaps.List(); err == nil && len(metas) > 0 {
		st.Snapshot = metas[0].Index
	}
	if err := n.fsm.Err(); err != nil {
		st.FSMError = err.Error()
	}
	if cf := n.raft.GetConfiguration(); cf.Error() == nil {
		for _, s := range cf.Configuration().Servers {
			st.Servers = append(st.Servers, Member{
				ID: string(s.ID), Raft: string(s.Address), HTTP: n.fsm.Member(string(s.ID)), Suffrage: s.Suffrage.String(),
			})
		}
	}
	return st
}

// Shutdown stops the HTTP API and raft and closes the stores and the FSM.
func (n *Node) Shutdown() error {
	var err error
	n.stopOnce.Do(func() {
		close(n.done)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if e := n.httpSrv.Shutdown(ctx); e != nil {
			n.httpSrv.Close()
		}
		n.wg.Wait()
		err = n.closeAll()
		n.log.Info("node stopped", "id", n.cfg.ID)
	})
	return err
}

// closeAll shuts raft down and closes what Start opened, in reverse order.
func (n *Node) closeAll() error {
	var errs []error
	if n.raft != nil {
		errs = append(errs, n.raft.Shutdown().Error())
	}
	if n.trans != nil {
		errs = append(errs, n.trans.Close())
	}
	if n.httpLn != nil && n.httpSrv == nil {
		n.httpLn.Close()
	}
	if n.stores.Close != nil {
		errs = append(errs, n.stores.Close())
	}
	if n.fsm != nil {
		errs = append(errs, n.fsm.Close())
	}
	return errors.Join(errs...)
}
