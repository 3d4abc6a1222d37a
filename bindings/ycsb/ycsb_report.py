#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""ycsb_report.py -- the table of a run_ycsb.sh run, and its checks.

Reads OUT/round<N>/<engine>-<phase>.txt (YCSB's text export: "[SECTION], metric,
value"), checks every phase of every engine in every round, prints one table
(throughput, p50 and p99 per operation type per engine, tierkv/rocksdb ratios;
with several rounds, the median of each figure, then each round's throughput)
and writes it to OUT/table.txt, with OUT/summary.csv beside it. Exits 1 when a
check fails.

Checks (YCSB itself exits 0 whatever the operations returned):
  - the phase's JVM exited 0 and printed [OVERALL];
  - every operation returned OK: the Return=OK counts of READ, UPDATE, INSERT,
    SCAN and DELETE add up to the phase's operation count (records for load)
    plus the READ-MODIFY-WRITE count (a read-modify-write is one READ and one
    UPDATE), and no other Return= status nor any "-FAILED" section appears;
  - with dataintegrity, VERIFY returned OK once per READ and never anything else.
The last line is "ycsb: N passed, M failed" (N, M: phase runs).
"""
import argparse
import csv
import os
import statistics
import sys

OPS = ["INSERT", "READ", "UPDATE", "SCAN", "READ-MODIFY-WRITE", "DELETE"]
COUNTED = ["READ", "UPDATE", "INSERT", "SCAN", "DELETE"]


def parse(path):
    """{section: {metric: value}} of one YCSB output file ({} if absent)."""
    res = {}
    if not os.path.exists(path):
        return res
    with open(path) as f:
        for line in f:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) != 3 or not parts[0].startswith("["):
                continue
            sec = parts[0].strip("[]")
            try:
                val = float(parts[2])
            except ValueError:
                continue
            res.setdefault(sec, {})[parts[1]] = val
    return res


def check(res, rc, expected, dataintegrity):
    """The problems of one phase: a list of strings, empty when it passed."""
    errs = []
    if rc != 0:
        errs.append(f"the YCSB client exited with status {rc}")
    if "OVERALL" not in res:
        return errs + ["no [OVERALL] section: the client did not finish"]
    ok = sum(res.get(op, {}).get("Return=OK", 0) for op in COUNTED)
    rmw = res.get("READ-MODIFY-WRITE", {}).get("Operations", 0)
    if ok != expected + rmw:
        errs.append(f"Return=OK adds up to {ok:.0f}, expected {expected + rmw:.0f} "
                    f"({expected} operations + {rmw:.0f} read-modify-writes)")
    for sec, metrics in res.items():
        for m, v in metrics.items():
            if m.startswith("Return=") and m != "Return=OK" and v > 0:
                errs.append(f"[{sec}] {m}: {v:.0f}")
        if sec.endswith("-FAILED"):
            errs.append(f"[{sec}]: {metrics.get('Operations', 0):.0f} failed operations")
    if dataintegrity:
        reads = res.get("READ", {}).get("Return=OK", 0)
        verified = res.get("VERIFY", {}).get("Return=OK", 0)
        if verified != reads:
            errs.append(f"dataintegrity: {verified:.0f} values verified OK of {reads:.0f} reads")
    return errs


def first_error(log):
    """The first line of a phase's stderr that reports a failure, or None."""
    try:
        with open(log, errors="replace") as f:
            for line in f:
                if "DBException" in line or "Exception:" in line or ": ERROR" in line:
                    return line.strip()[:400]
    except OSError:
        pass
    return None


def fmt_int(v):
    return "-" if v is None else f"{v:,.0f}"


def ratio(a, b):
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}x"


def rows_of(res):
    """{op or 'all': (ops/s, p50, p99, operations)} of one phase."""
    out = {}
    ov = res.get("OVERALL", {})
    runtime_s = ov.get("RunTime(ms)", 0) / 1000.0
    out["all"] = (ov.get("Throughput(ops/sec)"), None, None, None)
    for op in OPS:
        m = res.get(op)
        if not m or not m.get("Operations"):
            continue
        n = m["Operations"]
        out[op] = (n / runtime_s if runtime_s else None, m.get("50thPercentileLatency(us)"),
                   m.get("99thPercentileLatency(us)"), n)
    return out


def median_rows(rounds):
    """rows_of of several rounds: each figure the median of the rounds that have it."""
    out = {}
    for op in {op for rows in rounds for op in rows}:
        cols = []
        for i in range(4):
            vals = [rows[op][i] for rows in rounds if op in rows and rows[op][i] is not None]
            cols.append(statistics.median(vals) if vals else None)
        out[op] = tuple(cols)
    return out


def main():
    ap = argparse.ArgumentParser()
    for a in ("out", "engines", "phases", "command", "memtable", "cache", "dataintegrity", "ycsb-version"):
        ap.add_argument("--" + a, required=True)
    for a in ("records", "ops", "threads", "fieldcount", "fieldlength", "memtables", "rounds"):
        ap.add_argument("--" + a, type=int, required=True)
    args = ap.parse_args()
    engines = args.engines.split()
    phases = args.phases.split()
    di = args.dataintegrity == "true"

    results, failures, passed, failed = {}, [], 0, 0
    for r in range(1, args.rounds + 1):
        tag = f" (round {r})" if args.rounds > 1 else ""
        for e in engines:
            for p in phases:
                base = os.path.join(args.out, f"round{r}", f"{e}-{p}")
                try:
                    rc = int(open(base + ".rc").read().strip())
                except (OSError, ValueError):
                    rc = -1
                res = parse(base + ".txt")
                results[(r, e, p)] = res
                errs = check(res, rc, args.records if p == "load" else args.ops, di)
                if errs:
                    cause = first_error(base + ".log")
                    failures += [f"{e} {p}{tag}: {x}" for x in errs]
                    failures += [f"{e} {p}{tag}: first error: {cause}"] if cause else []
                    failed += 1
                else:
                    passed += 1

    lines = []
    lines.append(f"YCSB {args.ycsb_version} (site.ycsb.Client): {args.records:,} records of {args.fieldcount} x "
                 f"{args.fieldlength} B, {args.ops:,} operations per workload, {args.threads} client threads"
                 f"{', dataintegrity' if di else ''}")
    lines.append(f"memory per engine: memtables {args.memtables} x {args.memtable} + block cache {args.cache};"
                 " WAL on, no sync per write; load then workloads in the order run, one JVM each")
    lines.append(f"command: make ycsb {args.command}")
    if args.rounds > 1:
        lines.append(f"each figure: the median of {args.rounds} rounds (engines alternating first); "
                     "each round's throughput below the table")
    lines.append("ops/s: the workload's throughput (all) and each operation type's share of it; "
                 "p50/p99: latency in microseconds")
    lines.append("")
    two = len(engines) == 2
    head = f"{'workload':<9}{'operation':<18}"
    sub = " " * 27
    for e in engines:
        head += f"| {e:^28} "
        sub += f"| {'ops/s':>10} {'p50 us':>8} {'p99 us':>8} "
    if two:
        head += f"| {engines[0] + '/' + engines[1]:^17}"
        sub += f"| {'ops/s':>7} {'p99':>8}"
    lines += [head, sub, "-" * len(sub)]
    csv_rows = []
    for p in phases:
        label = "load" if p == "load" else p.upper()
        per = {e: median_rows([rows_of(results[(r, e, p)]) for r in range(1, args.rounds + 1)]) for e in engines}
        ops = ["all"] + [op for op in OPS if any(op in per[e] for e in engines)]
        for op in ops:
            line = f"{label:<9}{op:<18}"
            for e in engines:
                t, p50, p99, n = per[e].get(op, (None, None, None, None))
                line += f"| {fmt_int(t):>10} {fmt_int(p50):>8} {fmt_int(p99):>8} "
                csv_rows.append([e, p, op, "" if n is None else int(n), "" if t is None else round(t, 1),
                                 "" if p50 is None else int(p50), "" if p99 is None else int(p99)])
            if two:
                a, b = per[engines[0]].get(op), per[engines[1]].get(op)
                line += (f"| {ratio(a and a[0], b and b[0]):>7} {ratio(a and a[2], b and b[2]):>8}")
            lines.append(line.rstrip())
    if any("READ-MODIFY-WRITE" in rows_of(res) for res in results.values()):
        lines.append("READ-MODIFY-WRITE: a read then an update of one field; YCSB counts its read under READ and its "
                     "update under UPDATE too")
    if args.rounds > 1:
        lines.append("")
        lines.append("each round's throughput (ops/s of the whole workload, rounds in order):")
        for p in phases:
            label = "load" if p == "load" else p.upper()
            cells = []
            for e in engines:
                vals = [rows_of(results[(r, e, p)])["all"][0] for r in range(1, args.rounds + 1)]
                cells.append(f"{e} " + " ".join(fmt_int(v) for v in vals))
            lines.append(f"  {label:<6}" + "   ".join(cells))
    lines.append("")
    for e in engines:
        du = os.path.join(args.out, f"round{args.rounds}", f"{e}-du.txt")
        try:
            size = int(open(du).read().strip())
            pool = " (with its pool file, the emulated persistent memory: 1 GiB by default)" if e == "tierkv" else ""
            lines.append(f"{e}: disk usage after the last workload {size / 2**20:,.0f} MiB{pool}")
        except (OSError, ValueError):
            pass
    if failures:
        lines.append("CHECK FAILED -- not every operation returned OK:")
        lines += [f"  {x}" for x in failures]
    else:
        lines.append(f"check: every operation of every phase returned OK ({passed} phases"
                     f"{', values verified' if di else ''})")
    lines.append(f"ycsb: {passed} passed, {failed} failed")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    with open(os.path.join(args.out, "table.txt"), "w") as f:
        f.write(text)
    with open(os.path.join(args.out, "summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["engine", "phase", "operation", "operations", "ops_per_s", "p50_us", "p99_us"])
        w.writerows(csv_rows)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
