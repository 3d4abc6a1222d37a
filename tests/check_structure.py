#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_structure.py -- fails when the library's shape breaks its rules.

  1. src/db/: every file is listed once in src/db/LAYERS, and every
     #include "db/..." and every call between src/db/ files goes from a
     module to one on an earlier line (the engine's one-way graph). Calls
     are read from the object files' symbol tables (nm), so a call through
     a declaration copied by hand is caught too.
  2. src/ and emul/: folders depend one way, in DIR_ORDER (includes and calls).
  3. No library source file over MAX_FILE_LINES lines; no function over
     MAX_FUNC_LINES lines unless the comment just above it says
     "Long because" (the reason).
  4. tests/ (with its subfolders) and bench/tests/ have their own, looser limits: no file over
     MAX_TEST_FILE_LINES lines, no function over MAX_TEST_FUNC_LINES lines
     unless the comment above it says "Long because".
  5. Every source file of ours (HEAD_DIRS: C, headers, shell, Python, Java)
     starts with its SPDX line (after the #! line of a script), and, but for
     Java, the comment just after it names the file and its job
     ("name.c -- what it does").

Usage: check_structure.py [--layers FILE] OBJDIR   (OBJDIR: build/obj of a library build)
       check_structure.py --self-test OBJDIR
--self-test checks the checker: the real LAYERS must pass, LAYERS files
with one module moved against its dependencies must fail on the include
or the call that the move breaks, a test function or file just over the
tests/ limits must fail (and one at them pass), and files without their
SPDX line or their job comment must fail.
"""
import os
import re
import subprocess
import sys

DIR_ORDER = ["util", "sched", "io", "emul", "mem", "sst", "matrix", "db"]
MAX_FILE_LINES = 800
MAX_FUNC_LINES = 80
# Rule 4: tests/ is looser (a test states its scenario in one place). The
# largest in the tree: test_wal.c 1,942 lines; test_wctl_ramp 158 lines.
MAX_TEST_FILE_LINES = 2000
MAX_TEST_FUNC_LINES = 160
INCLUDE = re.compile(r'^\s*#\s*include\s+"(\w+)/([\w.]+)"', re.M)
# Rule 5: the folders whose sources carry the SPDX line (bindings/go is its
# own module, with its own rules), and what is not source under them.
HEAD_DIRS = ["src", "include", "emul", "tools", "tests", "bench", "fuzz", "examples", "bindings/ycsb"]
HEAD_SKIP = {os.path.join("fuzz", "corpus"), os.path.join("bench", "results")}
HEAD_EXT = (".c", ".h", ".sh", ".py", ".java")
SPDX = "SPDX-License-Identifier: Apache-2.0"


def read_layers(path):
    order, module_of = [], {}
    for line in open(path):
        line = line.split("#", 1)[0] if line.lstrip().startswith("#") else line
        if not line.strip():
            continue
        head = line.split(" -- ", 1)[0].split()
        name, files = head[0], head[1:]
        order.append(name)
        for f in files:
            if f in module_of:
                sys.exit(f"LAYERS: {f} listed twice")
            module_of[f] = name
    return {n: i for i, n in enumerate(order)}, module_of


def lib_files():
    out = []
    for top in ("src", "emul"):
        for root, _, names in os.walk(top):
            out += [os.path.join(root, n) for n in sorted(names) if n.endswith((".c", ".h"))]
    return out


def head_files():
    out = []
    for top in HEAD_DIRS:
        for root, dirs, names in os.walk(top):
            dirs[:] = sorted(d for d in dirs if os.path.join(root, d) not in HEAD_SKIP
                             and d not in ("target", "__pycache__"))
            out += [os.path.join(root, n) for n in sorted(names) if n.endswith(HEAD_EXT)]
    return out


def test_files():
    out = []
    for top in ("tests", "bench/tests"):
        for root, dirs, names in os.walk(top):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            out += [os.path.join(root, n) for n in sorted(names) if n.endswith((".c", ".h"))]
    return out


def check_tests(files):
    """Rule 4: the sizes of the test sources."""
    errors = []
    for f in files:
        n = sum(1 for _ in open(f))
        if n > MAX_TEST_FILE_LINES:
            errors.append(f"{f}: {n} lines (at most {MAX_TEST_FILE_LINES} in tests/)")
        if f.endswith(".c"):
            for line, name, n in long_functions(f, MAX_TEST_FUNC_LINES):
                errors.append(f"{f}:{line}: {name} is {n} lines (at most {MAX_TEST_FUNC_LINES} in tests/ without "
                              "'Long because' in its head comment)")
    return errors


def check_heads(files):
    """Rule 5: the SPDX line first (after a #! line), then the job comment."""
    errors = []
    for f in files:
        lines = open(f, errors="replace").read().split("\n")
        i = 1 if lines[0].startswith("#!") else 0
        want = ("// " if f.endswith((".c", ".h", ".java")) else "# ") + SPDX
        if lines[i] != want:
            errors.append(f"{f}:{i + 1}: the first line must be '{want}'")
            continue
        name = os.path.basename(f)
        if f.endswith(".java"):
            continue
        opens = ("/*", "//") if f.endswith((".c", ".h")) else ("#", '"""')
        if not lines[i + 1].startswith(opens) or not any(name + " --" in l for l in lines[i + 1:i + 4]):
            errors.append(f"{f}:{i + 2}: the comment after the SPDX line must name the file and its job "
                          f"('{name} -- ...')")
    return errors


def folder(path):
    parts = path.split(os.sep)
    return parts[1] if parts[0] == "src" else parts[0]


def symbols(objdir):
    """{object path: (defined globals, undefined)} for every library object."""
    res = {}
    for root, _, names in os.walk(objdir):
        for n in names:
            if not n.endswith(".o"):
                continue
            o = os.path.join(root, n)
            rel = os.path.relpath(o, objdir)
            if not (rel.startswith("src" + os.sep) or rel.startswith("emul" + os.sep)):
                continue
            text = subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout
            d, u = set(), set()
            for line in text.splitlines():
                p = line.split()
                if len(p) == 3 and p[1] in "TDBRCV":
                    d.add(p[2])
                elif len(p) == 2 and p[0] == "U":
                    u.add(p[1])
            src = rel[:-2] + ".c"
            if os.path.exists(src):  # not a stale object of a removed file
                res[src] = (d, u)
    return res


def long_functions(path, limit=MAX_FUNC_LINES):
    lines = open(path).read().split("\n")
    start = name = None
    for i, l in enumerate(lines):
        if re.match(r"^[A-Za-z_].*\)\s*\{\s*$", l) or (l == "{" and i > 0):
            j = i if l != "{" else i - 1
            while j > 0 and not re.match(r"^[A-Za-z_]", lines[j]):
                j -= 1
            m = re.search(r"(\w+)\s*\(", lines[j])
            start, name = j, m.group(1) if m else "?"
        elif l == "}" and start is not None:
            n = i - start + 1
            if n > limit:
                head = "\n".join(lines[max(0, start - 30):start])
                comment = head[head.rfind("/*"):] if "/*" in head else ""
                if "Long because" not in comment:
                    yield start + 1, name, n
            start = None


def check(objdir, layers):
    errors = []
    rank, module_of = read_layers(layers)
    files = lib_files()
    for f in files:
        if folder(f) == "db" and os.path.basename(f) not in module_of:
            errors.append(f"{f}: not listed in src/db/LAYERS")
    for f in module_of:
        if not os.path.exists(os.path.join("src/db", f)):
            errors.append(f"src/db/LAYERS lists {f}, which does not exist")
    # includes
    for f in files:
        text = open(f).read()
        for d, h in INCLUDE.findall(text):
            if d not in DIR_ORDER:
                continue
            if DIR_ORDER.index(d) > DIR_ORDER.index(folder(f)):
                errors.append(f'{f}: includes "{d}/{h}", a folder above {folder(f)}/')
            if folder(f) == "db" and d == "db":
                me, it = module_of.get(os.path.basename(f)), module_of.get(h)
                if me and it and rank[it] > rank[me]:
                    errors.append(f'{f}: includes "db/{h}" ({it}), which comes after {me} in src/db/LAYERS')
    # calls
    syms = symbols(objdir)
    if not syms:
        errors.append(f"no library objects under {objdir}: build the library first")
    owner = {}
    for src, (d, _) in syms.items():
        for s in d:
            owner[s] = src
    for src, (_, u) in sorted(syms.items()):
        for s in sorted(u):
            dst = owner.get(s)
            if not dst or dst == src:
                continue
            fs, fd = folder(src), folder(dst)
            if DIR_ORDER.index(fd) > DIR_ORDER.index(fs):
                errors.append(f"{src}: calls {s} ({dst}), a folder above {fs}/")
            if fs == "db" and fd == "db":
                me, it = module_of.get(os.path.basename(src)), module_of.get(os.path.basename(dst))
                if me and it and rank[it] >= rank[me]:
                    errors.append(f"{src}: calls {s} in {dst} ({it}), which is not before {me} in src/db/LAYERS")
    # sizes
    for f in files:
        if not f.endswith(".c"):
            continue
        n = sum(1 for _ in open(f))
        if n > MAX_FILE_LINES:
            errors.append(f"{f}: {n} lines (at most {MAX_FILE_LINES})")
        for line, name, n in long_functions(f):
            errors.append(f"{f}:{line}: {name} is {n} lines (at most {MAX_FUNC_LINES} without 'Long because' in its head comment)")
    errors += check_tests(test_files())
    errors += check_heads(head_files())
    return errors, len(syms), len(module_of), len(rank)


def moved(lines, name, to_end):
    """LAYERS text with module `name` moved to the end (or the start)."""
    body = [l for l in lines if l.strip() and not l.startswith("#")]
    line = next(l for l in body if l.split()[0] == name)
    body.remove(line)
    return "".join(body + [line] if to_end else [line] + body)


def self_test(objdir):
    import tempfile
    lines = open("src/db/LAYERS").readlines()
    cases = [  # (module moved, to the end?, text every failure must show)
        ("files", True, 'includes "db/files.h"'),    # everyone below includes files.h: now it comes last
        ("files", True, "calls files_install"),       # ... and calls it
        ("db_open", False, "calls "),                 # the top module moved first calls everything above it
        ("mx_open", True, "calls mx_cursor_in"),      # the matrix registry after its users
    ]
    bad = 0
    errors, *_ = check(objdir, "src/db/LAYERS")
    if errors:
        print("self-test: the real src/db/LAYERS fails:", errors[0])
        bad += 1
    for name, to_end, want in cases:
        with tempfile.NamedTemporaryFile("w", suffix=".layers", delete=False) as t:
            t.write(moved(lines, name, to_end))
        errors, *_ = check(objdir, t.name)
        os.unlink(t.name)
        hit = [e for e in errors if want in e]
        print(f"self-test: {name} moved {'last' if to_end else 'first'}: {len(errors)} problem(s), "
              f"{len(hit)} with '{want}'{'' if hit else ' -- NOT DETECTED'}")
        bad += not hit
    bad += self_test_tests()
    bad += self_test_heads()
    return 1 if bad else 0


def self_test_tests():
    """A test file or function over the tests/ limits must fail rule 4, one
    at the limits must pass, and "Long because" must excuse the function."""
    import tempfile
    body = lambda n: "static void f(void)\n{\n" + "    x();\n" * (n - 3) + "}\n"
    cases = [  # (file text, text the failure must show, or None to pass)
        (body(MAX_TEST_FUNC_LINES), None),
        (body(MAX_TEST_FUNC_LINES + 1), "f is"),
        ("/* f -- Long because it must be. */\n" + body(MAX_TEST_FUNC_LINES + 1), None),
        ("\n" * MAX_TEST_FILE_LINES, None),
        ("\n" * (MAX_TEST_FILE_LINES + 1), "lines (at most"),
    ]
    bad = 0
    with tempfile.TemporaryDirectory() as d:
        for i, (text, want) in enumerate(cases):
            path = os.path.join(d, f"t{i}.c")
            with open(path, "w") as out:
                out.write(text)
            errors = check_tests([path])
            ok = not errors if want is None else any(want in e for e in errors)
            print(f"self-test: tests/ limits, case {i}: {len(errors)} problem(s){'' if ok else ' -- NOT AS EXPECTED'}")
            bad += not ok
    return bad


def self_test_heads():
    """Files that break rule 4 must fail it; the ones that keep it must pass."""
    import tempfile
    cases = [  # (file name, text, text the failure must show, or None to pass)
        ("a.c", f"// {SPDX}\n/*\n * a.c -- a job.\n */\n", None),
        ("b.py", f"#!/usr/bin/env python3\n# {SPDX}\n\"\"\"b.py -- a job.\"\"\"\n", None),
        ("C.java", f"// {SPDX}\npackage x;\n", None),
        ("d.c", "/*\n * d.c -- a job.\n */\n", "the first line must be"),
        ("e.sh", f"#!/bin/sh\n# e.sh -- a job.\n# {SPDX}\n", "the first line must be"),  # SPDX after the job
        ("f.h", f"# {SPDX}\n/* f.h -- a job. */\n", "the first line must be"),  # a C file's SPDX is //
        ("g.c", f"// {SPDX}\n#include <stdio.h>\n/* g.c -- a job. */\n", "must name the file"),
    ]
    bad = 0
    with tempfile.TemporaryDirectory() as d:
        for name, text, want in cases:
            path = os.path.join(d, name)
            with open(path, "w") as out:
                out.write(text)
            errors = check_heads([path])
            ok = not errors if want is None else any(want in e for e in errors)
            print(f"self-test: head of {name}: {len(errors)} problem(s){'' if ok else ' -- NOT AS EXPECTED'}")
            bad += not ok
    return bad


def main():
    args = sys.argv[1:]
    if args and args[0] == "--self-test":
        return self_test(args[1] if len(args) > 1 else "build/obj")
    layers = "src/db/LAYERS"
    if len(args) >= 2 and args[0] == "--layers":
        layers, args = args[1], args[2:]
    objdir = args[0] if args else "build/obj"
    errors, nobj, nfiles, nmod = check(objdir, layers)
    for e in errors:
        print("check-structure:", e)
    print(f"check-structure: {nobj} objects, {nfiles} src/db files in {nmod} modules: "
          f"{'FAILED, ' + str(len(errors)) + ' problem(s)' if errors else 'ok'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
