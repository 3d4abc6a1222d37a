// SPDX-License-Identifier: Apache-2.0

package tierkv

// #include "glue.h"
import "C"

import (
	"bytes"
	"unsafe"
)

// Code is a tierkv status code (the TKV_* values of tierkv.h).
type Code int

// The status codes a call can fail with. CodeNotFound is not an error in the
// C API; the binding reports it as ErrNotFound.
const (
	CodeNotFound   Code = C.TKV_NOT_FOUND
	CodeInvalid    Code = C.TKV_INVALID
	CodeIOError    Code = C.TKV_IO_ERROR
	CodeCorruption Code = C.TKV_CORRUPTION
	CodeNoSpace    Code = C.TKV_NO_SPACE
	CodeBusy       Code = C.TKV_BUSY
	CodeNoMemory   Code = C.TKV_NO_MEMORY
	CodeReadOnly   Code = C.TKV_READ_ONLY // a write on a DB opened with read_only=1
)

// String names the code as tkv_strerror does ("invalid argument", ...).
func (c Code) String() string {
	return C.GoString(C.tkv_strerror(C.int(c)))
}

// Error is what every failing call returns: the status and the library's
// detailed message for it (file names, offsets, option names).
type Error struct {
	Code Code
	Msg  string
}

func (e *Error) Error() string {
	name := e.Code.String()
	if e.Msg == "" || e.Msg == name {
		return "tierkv: " + name
	}
	return "tierkv: " + name + ": " + e.Msg
}

// Is makes errors.Is(err, ErrX) true for every error of ErrX's code: the
// sentinels below carry no message and match any *Error with their code. An
// *Error with a message matches only itself.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Msg == "" && t.Code == e.Code
}

// Sentinels for errors.Is, one per code.
var (
	ErrNotFound   = &Error{Code: CodeNotFound}
	ErrInvalid    = &Error{Code: CodeInvalid}
	ErrIOError    = &Error{Code: CodeIOError}
	ErrCorruption = &Error{Code: CodeCorruption}
	ErrNoSpace    = &Error{Code: CodeNoSpace}
	ErrBusy       = &Error{Code: CodeBusy}
	ErrNoMemory   = &Error{Code: CodeNoMemory}
	ErrReadOnly   = &Error{Code: CodeReadOnly}
)

// ErrClosed is returned by calls on a closed DB, Snapshot or Iterator. It is
// also an ErrInvalid.
var ErrClosed = &Error{Code: CodeInvalid, Msg: "handle is closed"}

// newError turns a C status and the message the glue copied with it into an
// error; nil for TKV_OK.
func newError(rc C.int, e *C.gtkv_err) error {
	switch {
	case rc == C.TKV_OK:
		return nil
	case rc == C.TKV_NOT_FOUND:
		return ErrNotFound
	}
	return &Error{Code: Code(rc), Msg: msgString(e)}
}

// msgString is the NUL-terminated message in e, copied in Go (C.GoString
// would make every caller's gtkv_err escape to the heap).
func msgString(e *C.gtkv_err) string {
	b := unsafe.Slice((*byte)(unsafe.Pointer(&e.msg[0])), len(e.msg))
	if n := bytes.IndexByte(b, 0); n >= 0 {
		b = b[:n]
	}
	return string(b)
}
