// SPDX-License-Identifier: Apache-2.0

package raftstore

import (
	"testing"

	"github.com/hashicorp/raft"
	raftbench "github.com/hashicorp/raft/bench"
)

// The ten functions of github.com/hashicorp/raft/bench on a fresh store each,
// with the store's default tierkv options (as an application would open it),
// then the append a busy leader makes: 64 entries of 1 KiB in one synced
// StoreLogs.

func benchStore(b *testing.B) *Store {
	b.Helper()
	s, err := Open(b.TempDir(), nil)
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
	b.ResetTimer()
	next := uint64(1)
	for n := 0; n < b.N; n++ {
		for _, l := range logs {
			l.Index = next
			next++
		}
		if err := store.StoreLogs(logs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "entries/s")
}
