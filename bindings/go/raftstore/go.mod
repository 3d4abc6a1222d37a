module github.com/tierkv/tierkv/bindings/go/raftstore

go 1.25.0

require (
	github.com/hashicorp/go-hclog v1.6.3
	github.com/hashicorp/raft v1.8.0
	github.com/tierkv/tierkv/bindings/go v0.0.0
)

require (
	github.com/fatih/color v1.13.0 // indirect
	github.com/hashicorp/go-immutable-radix v1.3.1 // indirect
	github.com/hashicorp/go-metrics v0.7.0 // indirect
	github.com/hashicorp/go-msgpack/v2 v2.1.5 // indirect
	github.com/hashicorp/golang-lru v1.0.2 // indirect
	github.com/mattn/go-colorable v0.1.12 // indirect
	github.com/mattn/go-isatty v0.0.14 // indirect
	golang.org/x/sys v0.47.0 // indirect
)

// The binding is the directory above, built against the repository's
// build/libtierkv.a (make lib).
replace github.com/tierkv/tierkv/bindings/go => ../
