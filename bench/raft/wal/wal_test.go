// SPDX-License-Identifier: Apache-2.0

// Package walbench runs make bench-raft's benchmarks on raft-wal (the same
// names as bindings/go/raftstore's bench_test.go, for one table).
package walbench

import (
	"testing"

	"github.com/hashicorp/raft"
	raftwal "github.com/hashicorp/raft-wal"
	raftbench "github.com/hashicorp/raft/bench"
)

func benchStore(b *testing.B) *raftwal.WAL {
	b.Helper()
	w, err := raftwal.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { w.Close() })
	return w
}

func BenchmarkFirstIndex(b *testing.B) { raftbench.FirstIndex(b, benchStore(b)) }
func BenchmarkLastIndex(b *testing.B)  { raftbench.LastIndex(b, benchStore(b)) }
func BenchmarkGetLog(b *testing.B)     { raftbench.GetLog(b, benchStore(b)) }
func BenchmarkStoreLogs(b *testing.B)  { raftbench.StoreLogs(b, benchStore(b)) }

// raft-wal takes only consecutive indexes from 1 on (it is a
// raft.MonotonicLogStore); these two raftbench functions write index 0 and
// leave gaps, and raft-wal refuses the first append.
const notMonotonic = "raft-wal refuses raftbench's indexes: it needs 1, 2, 3... and this writes 0 or gaps"

func BenchmarkStoreLog(b *testing.B)    { b.Skip(notMonotonic) }
func BenchmarkDeleteRange(b *testing.B) { b.Skip(notMonotonic) }
func BenchmarkSet(b *testing.B)         { raftbench.Set(b, benchStore(b)) }
func BenchmarkGet(b *testing.B)         { raftbench.Get(b, benchStore(b)) }
func BenchmarkSetUint64(b *testing.B)   { raftbench.SetUint64(b, benchStore(b)) }
func BenchmarkGetUint64(b *testing.B)   { raftbench.GetUint64(b, benchStore(b)) }

// BenchmarkAppend64x1KiB: each op is one StoreLogs of 64 new 1 KiB entries.
func BenchmarkAppend64x1KiB(b *testing.B) {
	appendBatches(b, benchStore(b), 64, 1024)
}

// appendWarmBytes: the batched append measures a store in its steady state,
// as a raft leader that has run for a while finds it: before the timer
// starts, each store takes this many bytes of the same appends (raft-wal has
// rotated its 64 MiB segments by then, tierkv writes its logs into recycled
// WAL files, bbolt has grown its tree). The same in all three stores'
// benchmarks (bindings/go/raftstore, bench/raft/wal, bench/raft/bolt).
const appendWarmBytes = 192 << 20

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
