// SPDX-License-Identifier: Apache-2.0

//go:build !tierkv_pkgconfig

package tierkv

// Linked against the repository's own build: run `make lib` at the top of
// the repository first. Build with -tags tierkv_pkgconfig to use an
// installed copy through pkg-config instead (README.md).

// #cgo CFLAGS: -I${SRCDIR}/../../include
// #cgo LDFLAGS: ${SRCDIR}/../../build/libtierkv.a -lpmem -luring -llz4 -lpthread
import "C"
