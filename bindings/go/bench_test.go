// SPDX-License-Identifier: Apache-2.0

package tierkv

import (
	"path/filepath"
	"testing"
)

// What one call costs through the binding (CPU only: the writes are not
// synced and the reads hit the memtable).

func benchDB(b *testing.B) *DB {
	b.Helper()
	db, err := Open(filepath.Join(b.TempDir(), "db"), testOptions)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

func BenchmarkGet(b *testing.B) {
	db := benchDB(b)
	key, val := []byte("key-000001"), make([]byte, 100)
	if err := db.Put(key, val, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := db.Get(key); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPut(b *testing.B) {
	db := benchDB(b)
	key, val := []byte("key-000001"), make([]byte, 100)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := db.Put(key, val, nil); err != nil {
			b.Fatal(err)
		}
	}
}
