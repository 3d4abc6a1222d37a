// SPDX-License-Identifier: Apache-2.0

package raftstore

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// A log entry's value (its index is the key):
//
//	byte     format (1)
//	byte     raft.LogType
//	byte     flags: bit 0 set when AppendedAt is set
//	uvarint  term
//	varint   AppendedAt's Unix seconds   \ only with flag bit 0
//	uvarint  AppendedAt's nanoseconds    /
//	uvarint  length of Data, then Data
//	uvarint  length of Extensions, then Extensions
const (
	codecFormat     = 1
	flagAppendedAt  = 1
	codecHeaderSize = 3
)

func encodeLog(dst []byte, l *raft.Log) []byte {
	var flags byte
	if !l.AppendedAt.IsZero() {
		flags |= flagAppendedAt
	}
	dst = append(dst, codecFormat, byte(l.Type), flags)
	dst = binary.AppendUvarint(dst, l.Term)
	if flags&flagAppendedAt != 0 {
		dst = binary.AppendVarint(dst, l.AppendedAt.Unix())
		dst = binary.AppendUvarint(dst, uint64(l.AppendedAt.Nanosecond()))
	}
	dst = binary.AppendUvarint(dst, uint64(len(l.Data)))
	dst = append(dst, l.Data...)
	dst = binary.AppendUvarint(dst, uint64(len(l.Extensions)))
	return append(dst, l.Extensions...)
}

// decodeLog fills l from v, the value stored for index. Data and Extensions
// alias v (a fresh copy per read); empty ones are nil.
func decodeLog(index uint64, v []byte, l *raft.Log) error {
	bad := func(what string) error {
		return fmt.Errorf("raftstore: log entry %d: %s", index, what)
	}
	if len(v) < codecHeaderSize || v[0] != codecFormat {
		return bad("unknown format")
	}
	typ, flags := raft.LogType(v[1]), v[2]
	p := v[codecHeaderSize:]
	term, n := binary.Uvarint(p)
	if n <= 0 {
		return bad("bad term")
	}
	p = p[n:]
	var at time.Time
	if flags&flagAppendedAt != 0 {
		sec, n := binary.Varint(p)
		if n <= 0 {
			return bad("bad time")
		}
		p = p[n:]
		nsec, n := binary.Uvarint(p)
		if n <= 0 || nsec >= 1e9 {
			return bad("bad time")
		}
		p = p[n:]
		at = time.Unix(sec, int64(nsec))
	}
	data, p, ok := field(p)
	if !ok {
		return bad("bad data length")
	}
	ext, p, ok := field(p)
	if !ok || len(p) != 0 {
		return bad("bad extensions length")
	}
	*l = raft.Log{Index: index, Term: term, Type: typ, Data: data, Extensions: ext, AppendedAt: at}
	return nil
}

// field splits a length-prefixed field off p.
func field(p []byte) (f, rest []byte, ok bool) {
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)-k) {
		return nil, nil, false
	}
	p = p[k:]
	if n == 0 {
		return nil, p, true
	}
	return p[:n:n], p[n:], true
}
