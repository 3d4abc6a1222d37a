module github.com/tierkv/tierkv/bindings/go/raftd/boltd

go 1.25.0

// raft-boltdb v2.3.1 imports github.com/hashicorp/go-metrics/compat, which
// go-metrics v0.7.0 (required by raft v1.8.0, and so by the raftd module)
// no longer has. This module replaces raft with v1.7.3 and go-metrics with
// v0.5.4 for the whole build: the raftd package uses only API both raft
// versions have (it does not import raftstore, whose CommitTrackingLogStore
// is v1.8.0's).
replace (
	github.com/hashicorp/go-metrics => github.com/hashicorp/go-metrics v0.5.4
	github.com/hashicorp/raft => github.com/hashicorp/raft v1.7.3
	github.com/tierkv/tierkv/bindings/go => ../../
	github.com/tierkv/tierkv/bindings/go/raftd => ../
	github.com/tierkv/tierkv/bindings/go/raftstore => ../../raftstore
)

require (
	github.com/hashicorp/raft-boltdb/v2 v2.3.1
	github.com/tierkv/tierkv/bindings/go/raftd v0.0.0
)

require (
	github.com/armon/go-metrics v0.4.1 // indirect
	github.com/boltdb/bolt v1.3.1 // indirect
	github.com/fatih/color v1.13.0 // indirect
	github.com/hashicorp/go-hclog v1.6.3 // indirect
	github.com/hashicorp/go-immutable-radix v1.3.1 // indirect
	github.com/hashicorp/go-metrics v0.7.0 // indirect
	github.com/hashicorp/go-msgpack/v2 v2.1.5 // indirect
	github.com/hashicorp/golang-lru v1.0.2 // indirect
	github.com/hashicorp/raft v1.8.0 // indirect
	github.com/mattn/go-colorable v0.1.12 // indirect
	github.com/mattn/go-isatty v0.0.14 // indirect
	github.com/tierkv/tierkv/bindings/go v0.0.0 // indirect
	go.etcd.io/bbolt v1.3.6 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
