// SPDX-License-Identifier: Apache-2.0

package tierkv_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	tierkv "github.com/tierkv/tierkv/bindings/go"
)

// exampleDir returns a fresh directory for an example's database and a
// function that removes it.
func exampleDir() (string, func()) {
	tmp, err := os.MkdirTemp("", "tierkv-example-")
	if err != nil {
		log.Fatal(err)
	}
	return filepath.Join(tmp, "db"), func() { os.RemoveAll(tmp) }
}

func Example() {
	dir, cleanup := exampleDir()
	defer cleanup()

	db, err := tierkv.Open(dir, tierkv.Options{"memtable_size": "4M"})
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	// A synced write survives a power cut once Put returns.
	if err := db.Put([]byte("greeting"), []byte("hello"), &tierkv.WriteOptions{Sync: true}); err != nil {
		log.Fatal(err)
	}
	v, err := db.Get([]byte("greeting"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s\n", v)

	_, err = db.Get([]byte("nobody"))
	fmt.Println(errors.Is(err, tierkv.ErrNotFound))
	// Output:
	// hello
	// true
}

func ExampleDB_Write() {
	dir, cleanup := exampleDir()
	defer cleanup()
	db, err := tierkv.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	// Both puts and the delete become visible, and durable, together.
	var b tierkv.Batch
	defer b.Close()
	b.Put([]byte("account/alice"), []byte("90"))
	b.Put([]byte("account/bob"), []byte("110"))
	b.Delete([]byte("pending/alice-bob"))
	if err := db.Write(&b, &tierkv.WriteOptions{Sync: true}); err != nil {
		log.Fatal(err)
	}
	v, _ := db.Get([]byte("account/bob"))
	fmt.Printf("bob=%s, %d operations\n", v, b.Len())
	// Output: bob=110, 3 operations
}

func ExampleIterator() {
	dir, cleanup := exampleDir()
	defer cleanup()
	db, err := tierkv.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	for _, k := range []string{"b", "d", "a", "c"} {
		db.Put([]byte(k), []byte("value of "+k), nil)
	}

	it, err := db.NewIterator()
	if err != nil {
		log.Fatal(err)
	}
	defer it.Close() // before db.Close, which refuses while it is open
	for it.Seek([]byte("b")); it.Valid(); it.Next() {
		fmt.Printf("%s: %s\n", it.Key(), it.Value())
	}
	if err := it.Err(); err != nil {
		log.Fatal(err)
	}
	it.SeekLast()
	fmt.Printf("last: %s\n", it.Key())
	// Output:
	// b: value of b
	// c: value of c
	// d: value of d
	// last: d
}

func ExampleSnapshot() {
	dir, cleanup := exampleDir()
	defer cleanup()
	db, err := tierkv.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	db.Put([]byte("k"), []byte("before"), nil)
	snap, err := db.NewSnapshot()
	if err != nil {
		log.Fatal(err)
	}
	defer snap.Close()
	db.Put([]byte("k"), []byte("after"), nil)

	then, _ := snap.Get([]byte("k"))
	now, _ := db.Get([]byte("k"))
	fmt.Printf("%s %s\n", then, now)
	// Output: before after
}

func ExampleDB_MultiGet() {
	dir, cleanup := exampleDir()
	defer cleanup()
	db, err := tierkv.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	db.Put([]byte("x"), []byte("1"), nil)
	db.Put([]byte("z"), []byte("3"), nil)

	vals, errs, err := db.MultiGet([][]byte{[]byte("x"), []byte("y"), []byte("z")})
	if err != nil {
		log.Fatal(err)
	}
	for i, v := range vals {
		if errors.Is(errs[i], tierkv.ErrNotFound) {
			fmt.Println("missing")
			continue
		}
		fmt.Printf("%s\n", v)
	}
	// Output:
	// 1
	// missing
	// 3
}

func ExampleVerify() {
	dir, cleanup := exampleDir()
	defer cleanup()
	db, err := tierkv.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	db.Put([]byte("k"), []byte("v"), &tierkv.WriteOptions{Sync: true})
	if err := db.Close(); err != nil {
		log.Fatal(err)
	}
	// The database must be closed; nothing is changed.
	_, err = tierkv.Verify(dir, nil)
	fmt.Println(err == nil)
	// Output: true
}

func ExampleError() {
	dir, cleanup := exampleDir()
	defer cleanup()
	_, err := tierkv.Open(dir, tierkv.Options{"memtable_size": "lots"})
	var te *tierkv.Error
	if errors.As(err, &te) {
		fmt.Println(te.Code == tierkv.CodeInvalid, errors.Is(err, tierkv.ErrInvalid))
	}
	// Output: true true
}
