// SPDX-License-Identifier: Apache-2.0

// Command tkv-raftd-bolt is tkv-raftd with raft's log and stable store on
// raft-boltdb (bbolt), for comparison: raft-boltdb v2.3.1 does not build
// with raft v1.8.0 (it imports go-metrics' compat package, which the
// go-metrics raft v1.8.0 needs no longer has), so this module builds the
// same daemon package against raft v1.7.3 (see go.mod). It is a separate
// binary with one store, "bolt"; the main one (../cmd/tkv-raftd) has
// tierkv and wal.
package main

import (
	"os"
	"path/filepath"

	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/tierkv/tierkv/bindings/go/raftd"
)

var stores = map[string]raftd.StoreOpener{
	"bolt": func(dir string) (raftd.Stores, error) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return raftd.Stores{}, err
		}
		s, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
		if err != nil {
			return raftd.Stores{}, err
		}
		return raftd.Stores{Log: s, Stable: s, Close: s.Close}, nil
	},
}

func main() {
	os.Exit(raftd.Main(os.Args[1:], stores, "bolt", os.Stderr))
}
