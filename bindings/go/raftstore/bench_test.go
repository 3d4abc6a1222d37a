// SPDX-License-Identifier: Apache-2.0

package raftstore

import (
	"os"
	"strings"
	"testing"

	tierkv "github.com/tierkv/tierkv/bindings/go"

	"github.com/hashicorp/raft"
	raftbench "github.com/hashicorp/raft/bench"
)

// The ten functions of github.com/hashicorp/raft/bench on a fresh store each,
// with the store's default tierkv options (as an application would open it),
// then the append a busy leader makes: 64 entries of 1 KiB in one synced
// StoreLogs.

// RAFTSTORE_BENCH_OPTS="name=value,..." adds tierkv options to the store's
// defaults (for ablations, e.g. wal_recycle=0 or wal_mmap=1).
func benchStore(b *testing.B) *Store {
	b.Helper()
	var o tierkv.Options
	if e := os.Getenv("RAFTSTORE_BENCH_OPTS"); e != "" {
		o = tierkv.Options{}
		for _, kv := range strings.Split(e, ",") {
			p := strings.SplitN(kv, "=", 2)
			o[p[0]] = p[1]
		}
	}
	s, err := Open(b.TempDir(), o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func BenchmarkFirstIndex(b *testing.B)  { raftbench.FirstIndex(b, benchStore(b)) }
func BenchmarkLastIndex(b *testing.B)   { raftbench.LastIndex(b, benchStore(b)) }
func BenchmarkGetLog(b *testing.B)      { raftbench.GetLog(b, benchStore(b)) }
func BenchmarkStoreLog(b *testing.B)    { raftbench.StoreLog(b, benchStore(b)) }
func BenchmarkStoreLogs(b *testing.B)   { raftbench.StoreLogs(b, benchStore(b)) }
func BenchmarkDeleteRange(b *testing.B) { raftbench.DeleteRange(b, benchStore(b)) }
func BenchmarkSet(b *testing.B)         { raftbench.Set(b, benchStore(b)) }
func BenchmarkGet(b *testing.B)         { raftbench.Get(b, benchStore(b)) }
func BenchmarkSetUint64(b *testing.B)   { raftbench.SetUint64(b, benchStore(b)) }
func BenchmarkGetUint64(b *testing.B)   { raftbench.GetUint64(b, benchStore(b)) }

// BenchmarkAppend64x1KiB: each op is one StoreLogs of 64 new 1 KiB entries;
// entries/s = 64 / (ns/op).
func BenchmarkAppend64x1KiB(b *testing.B) {
	s := benchStore(b)
	appendBatches(b, s, 64, 1024)
}

// appendWarmBytes: the batched append measures a store in its steady state,
// as a raft leader that has run for a while finds it: before the timer
// starts, each store takes this many bytes of the same appends (raft-wal has
// rotated its 64 MiB segments by then, tierkv writes its logs into recycled
// WAL files, bbolt has grown its tree). The same in all three stores'
// benchmarks (bindings/go/raftstore, bench/raft/wal, bench/raft/bolt).
const appendWarmBytes = 192 << 20

// appendBatches runs b.N StoreLogs calls of `batch` consecutive entries of
// `size` bytes each on store, reporting bytes/s and entries/s.
func appendBatches(b *testing.B, store raft.LogStore, batch, size int) {
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i * 7)
	}
	logs := make([]*raft.Log, batch)
	for i := range logs {
		logs[i] = &raft.Log{Term: 1, Type: raft.LogCommand, Data: data}
	}
	b.SetBytes(int64(batch * size))
	next := uint64(1)
	appendOne := func() {
		for _, l := range logs {
			l.Index = next
			next++
		}
		if err := store.StoreLogs(logs); err != nil {
			b.Fatal(err)
		}
	}
	if b.N > 1 { // (not the 1-op probe go test starts with)
		for w := 0; w < appendWarmBytes/(batch*size); w++ {
			appendOne()
		}
	}
	b.ResetTimer()
	for n := 0; n < b.N; n++ {
		appendOne()
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "entries/s")
}
