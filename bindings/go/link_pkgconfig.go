// SPDX-License-Identifier: Apache-2.0

//go:build tierkv_pkgconfig

package tierkv

// Linked against an installed tierkv (`make install PREFIX=...` writes
// tierkv.pc); PKG_CONFIG_PATH must reach it, and the shared library must be
// on the loader's path at run time.

// #cgo pkg-config: tierkv
import "C"
