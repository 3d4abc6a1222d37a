// SPDX-License-Identifier: Apache-2.0

// Command tkv-raftd is a replicated key-value daemon: hashicorp/raft over a
// TCP (or mutual-TLS) transport, a tierkv database as each node's state
// machine, and raft's log and stable store on tierkv (raftstore, the
// default) or raft-wal (-store wal). See ../../README.md.
package main

import (
	"os"

	raftwal "github.com/hashicorp/raft-wal"
	"github.com/tierkv/tierkv/bindings/go/raftd"
	"github.com/tierkv/tierkv/bindings/go/raftstore"
)

var stores = map[string]raftd.StoreOpener{
	"tierkv": func(dir string) (raftd.Stores, error) {
		s, err := raftstore.Open(dir, nil)
		if err != nil {
			return raftd.Stores{}, err
		}
		return raftd.Stores{Log: s, Stable: s, Close: s.Close}, nil
	},
	"wal": func(dir string) (raftd.Stores, error) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return raftd.Stores{}, err
		}
		w, err := raftwal.Open(dir)
		if err != nil {
			return raftd.Stores{}, err
		}
		return raftd.Stores{Log: w, Stable: w, Close: w.Close}, nil
	},
}

func main() {
	os.Exit(raftd.Main(os.Args[1:], stores, "tierkv", os.Stderr))
}
