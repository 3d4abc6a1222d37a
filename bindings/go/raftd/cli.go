// SPDX-License-Identifier: Apache-2.0

package raftd

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"
	tierkv "github.com/tierkv/tierkv/bindings/go"
)

// Main is tkv-raftd's command line: it parses args (without the program
// name), starts a node with the store named by -store, one of stores, and
// runs until SIGINT or SIGTERM. It returns the exit code.
func Main(args []string, stores map[string]StoreOpener, defaultStore string, stderr io.Writer) int {
	fs := flag.NewFlagSet("tkv-raftd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	names := make([]string, 0, len(stores))
	for k := range stores {
		names = append(names, k)
	}
	sort.Strings(names)
	var (
		cfg                 Config
		ca, cert, key       string
		logLevel            string
		maxBody             = fs.Int64("max-body", 1<<20, "largest value (PUT body) in bytes; larger is 413")
		maxKey              = fs.Int("max-key", 1024, fmt.Sprintf("longest key in bytes; longer is 400 (at most %d)", tierkv.MaxKeySize-1))
		snapThreshold       = fs.Uint64("snapshot-threshold", 8192, "raft entries since the last snapshot before another is taken")
		trailing            = fs.Uint64("trailing-logs", 10240, "raft entries kept behind a snapshot for followers to catch up from")
		snapInterval        = fs.Duration("snapshot-interval", 0, "how often raft checks whether to snapshot (0: raft's default, 120s)")
		heartbeat, election = fs.Duration("heartbeat-timeout", 0, "raft heartbeat timeout (0: raft's default, 1s)"),
			fs.Duration("election-timeout", 0, "raft election timeout (0: raft's default, 1s)")
		lease = fs.Duration("leader-lease", 0, "raft leader lease timeout (0: raft's default, 500ms)")
	)
	fs.StringVar(&cfg.ID, "id", "", "this node's raft server id (required)")
	fs.StringVar(&cfg.DataDir, "data", "", "data directory (required)")
	fs.StringVar(&cfg.HTTPAddr, "http", "127.0.0.1:8700", "HTTP API listen address")
	fs.StringVar(&cfg.HTTPAdvertise, "http-advertise", "", "HTTP address clients are redirected to (default: the listen address)")
	fs.StringVar(&cfg.RaftAddr, "raft", "127.0.0.1:8701", "raft transport listen address")
	fs.StringVar(&cfg.RaftAdvertise, "raft-advertise", "", "raft address peers dial (default: the listen address)")
	fs.BoolVar(&cfg.Bootstrap, "bootstrap", false, "start a new cluster with this node as its first voter (ignored once the node has raft state)")
	fs.StringVar(&cfg.Join, "join", "", "HTTP address of a cluster member to join through (ignored once the node has raft state)")
	fs.StringVar(&cfg.StoreName, "store", defaultStore, "raft log and stable store: "+strings.Join(names, ", "))
	fs.BoolVar(&cfg.StaleReads, "stale-reads", false, "serve GETs from this node's state machine by default (a request's ?stale=false still asks for a linearizable read)")
	fs.StringVar(&ca, "tls-ca", "", "PEM file of the cluster's CA: with -tls-cert and -tls-key, HTTP and raft require mutual TLS")
	fs.StringVar(&cert, "tls-cert", "", "PEM file of this node's certificate, signed by the CA")
	fs.StringVar(&key, "tls-key", "", "PEM file of this node's private key")
	fs.StringVar(&logLevel, "log-level", "info", "trace, debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	bad := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "tkv-raftd: "+format+"\n", a...)
		return 2
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q", fs.Arg(0))
	}
	if cfg.ID == "" || cfg.DataDir == "" {
		return bad("-id and -data are required")
	}
	open, ok := stores[cfg.StoreName]
	if !ok {
		return bad("unknown -store %q: this build has %s", cfg.StoreName, strings.Join(names, ", "))
	}
	cfg.OpenStore = open
	if *maxBody <= 0 || *maxBody > tierkv.MaxValueSize {
		return bad("-max-body must be in 1..%d", int64(tierkv.MaxValueSize))
	}
	if *maxKey <= 0 || *maxKey > tierkv.MaxKeySize-1 {
		return bad("-max-key must be in 1..%d", tierkv.MaxKeySize-1)
	}
	cfg.MaxBody, cfg.MaxKey = *maxBody, *maxKey
	cfg.SnapshotThreshold, cfg.TrailingLogs, cfg.SnapshotInterval = *snapThreshold, *trailing, *snapInterval
	cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLease = *heartbeat, *election, *lease
	if ca != "" || cert != "" || key != "" {
		t, err := LoadTLS(ca, cert, key)
		if err != nil {
			return bad("%v", err)
		}
		cfg.TLS = t
	}
	level := hclog.LevelFromString(logLevel)
	if level == hclog.NoLevel {
		return bad("bad -log-level %q", logLevel)
	}
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "tkv-raftd", Level: level, Output: stderr})
	if cfg.TLS == nil {
		for _, a := range []string{cfg.HTTPAddr, cfg.RaftAddr} {
			if !isLoopback(a) {
				cfg.Logger.Warn("listening beyond loopback without TLS: anyone who can reach the port can read and write", "addr", a)
			}
		}
	}

	node, err := Start(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "tkv-raftd: %v\n", err)
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	s := <-sig
	cfg.Logger.Info("stopping", "signal", s.String())
	if err := node.Shutdown(); err != nil {
		fmt.Fprintf(stderr, "tkv-raftd: shutdown: %v\n", err)
		return 1
	}
	return 0
}

func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
