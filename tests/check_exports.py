#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_exports.py -- fails when libtierkv.so exports more, or less, than the public API.

  1. Every defined dynamic symbol of the library (nm -D --defined-only) is a
     function declared TKV_API in include/tierkv.h (or the version node of
     tierkv.map, an absolute symbol); nothing internal leaks out.
  2. Every TKV_API function of the header is exported.
  3. No allocator entry point (malloc, free, mallocx, ...) is defined by the
     library, and no allocator library (jemalloc, tcmalloc, mimalloc) is
     NEEDED: the library must never replace its host's malloc.
  4. Every NEEDED library is used (ldd -u -r lists none).

Usage: check_exports.py LIB HEADER      e.g. build/libtierkv.so include/tierkv.h
       check_exports.py --self-test LIB HEADER
--self-test first checks the checker on doctored inputs (an extra internal
symbol, a missing API function, an exported malloc, a jemalloc dependency,
an unused library: each must be reported), then the real library.
"""
import re
import subprocess
import sys

API = re.compile(r"^TKV_API\b[^(;]*?\b(tkv_\w+)\s*\(", re.M)
ALLOCATOR_FUNCS = {"malloc", "free", "calloc", "realloc", "posix_memalign", "aligned_alloc", "memalign",
                   "valloc", "pvalloc", "malloc_usable_size", "mallocx", "dallocx", "sdallocx", "rallocx",
                   "nallocx", "xallocx", "sallocx", "mallctl"}
ALLOCATOR_LIBS = re.compile(r"lib(jemalloc|tcmalloc|mimalloc|hoard)")


def header_api(text):
    return set(API.findall(text))


def dynamic_symbols(lib):
    """[(type, name)] of the defined dynamic symbols, version suffixes removed."""
    out = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
    syms = []
    for line in out.splitlines():
        p = line.split()
        if len(p) >= 2:
            syms.append((p[-2], p[-1].split("@")[0]))
    return syms


def needed(lib):
    out = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True, check=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def unused(lib):
    r = subprocess.run(["ldd", "-u", "-r", lib], capture_output=True, text=True)
    return [l.strip() for l in r.stdout.splitlines() if l.strip().startswith("/")]


def check(api, syms, needs, unused_libs):
    """The list of problems (empty: the library is clean)."""
    bad = []
    exported = set()
    for typ, name in syms:
        if typ == "A":  # the version node (TIERKV_0)
            continue
        exported.add(name)
        if name in ALLOCATOR_FUNCS:
            bad.append(f"exports the allocator function {name}: it would replace its host's malloc")
        elif name not in api:
            bad.append(f"exports {name} ({typ}), which include/tierkv.h does not declare TKV_API")
    for name in sorted(api - exported):
        bad.append(f"does not export {name}, declared TKV_API in include/tierkv.h")
    for n in needs:
        if ALLOCATOR_LIBS.search(n):
            bad.append(f"links the allocator library {n}: it would replace its host's malloc")
    for u in unused_libs:
        bad.append(f"links {u}, which it does not use")
    return bad


def self_test(lib, header):
    api = header_api(open(header).read())
    if len(api) < 30:
        sys.exit(f"self-test: found only {len(api)} TKV_API functions in {header}")
    syms = [("T", n) for n in sorted(api)] + [("A", "TIERKV_0")]
    needs = ["libpmem.so.1", "libc.so.6"]
    if check(api, syms, needs, []):
        sys.exit("self-test: a clean symbol list was reported: " + "; ".join(check(api, syms, needs, [])))
    cases = {
        "internal symbol": (syms + [("T", "buf_append")], needs, [], "buf_append"),
        "internal tkv_ symbol": (syms + [("T", "tkv_err")], needs, [], "tkv_err"),
        "missing API function": ([s for s in syms if s[1] != "tkv_open"], needs, [], "tkv_open"),
        "exported malloc": (syms + [("T", "malloc")], needs, [], "malloc"),
        "allocator library": (syms, needs + ["libjemalloc.so.2"], [], "libjemalloc"),
        "unused library": (syms, needs, ["/lib/x86_64-linux-gnu/liburing.so.2"], "liburing"),
    }
    for what, (s, n, u, word) in cases.items():
        problems = check(api, s, n, u)
        if not any(word in p for p in problems):
            sys.exit(f"self-test: {what} was not reported (got {problems})")
    print(f"check_exports self-test: {len(cases)} doctored libraries rejected")


def main():
    args = sys.argv[1:]
    if args and args[0] == "--self-test":
        self_test(*args[1:3])
        args = args[1:]
    if len(args) != 2:
        sys.exit(__doc__)
    lib, header = args
    api = header_api(open(header).read())
    syms = dynamic_symbols(lib)
    problems = check(api, syms, needed(lib), unused(lib))
    for p in problems:
        print(f"{lib}: {p}")
    if problems:
        sys.exit(1)
    print(f"check_exports: {lib} exports exactly the {len(api)} functions of {header}; "
          f"NEEDED: {', '.join(needed(lib))}")


if __name__ == "__main__":
    main()
