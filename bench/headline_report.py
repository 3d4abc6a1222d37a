#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""headline_report.py -- the table of `make bench` (bench/run_headline.sh).

Usage: headline_report.py OUT CONFIG...

Reads OUT/<config>/run<N>/summary.csv for every configuration and round and
prints one markdown table: per benchmark, per configuration, the median over
the rounds of each figure (ops/s with its min-max over the rounds, p50, p99,
p99.9 and max latency, write amplification, stalls), and ops/s as a ratio to
the first configuration (tierkv). Figures are as tkv_bench computes them
(docs/benchmarking.md).
"""
import csv
import glob
import os
import statistics
import sys

COLS = [("ops_per_sec", "ops/s"), ("p50_us", "p50 µs"), ("p99_us", "p99 µs"), ("p999_us", "p99.9 µs"),
        ("max_us", "max µs"), ("wa", "WA"), ("stalls", "stalls"), ("stall_ms", "stall ms")]


def fmt(key, v):
    if v is None:
        return "–"
    if key in ("wa",):
        return "–" if v < 0 else f"{v:.2f}"
    if key in ("ops_per_sec", "stalls", "stall_ms") or v >= 1000:
        return f"{v:,.0f}"
    return f"{v:.1f}"


def load(out, config):
    """{(benchmark, op): {column: [values over rounds]}} and the round count."""
    rows, runs = {}, sorted(glob.glob(os.path.join(out, config, "run*", "summary.csv")))
    for path in runs:
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                d = rows.setdefault((r["benchmark"], r["op"]), {})
                for k, _ in COLS:
                    d.setdefault(k, []).append(float(r[k]))
    return rows, len(runs)


def main():
    out, configs = sys.argv[1], sys.argv[2:]
    data = {c: load(out, c) for c in configs}
    rounds = {c: n for c, (_, n) in data.items()}
    if not any(rounds.values()):
        sys.exit(f"headline_report.py: no summary.csv under {out}")
    benches = []
    for c in configs:
        for b, op in data[c][0]:
            if op == "all" and b not in benches:
                benches.append(b)
    print(f"Medians over {', '.join(f'{c}: {n}' for c, n in rounds.items())} round(s); "
          "ops/s range = min-max over the rounds.\n")
    print("| benchmark | configuration | ops/s | range | vs tierkv | " + " | ".join(h for k, h in COLS[1:]) + " |")
    print("|---|---|---|---|---|" + "---|" * (len(COLS) - 1))
    base = configs[0]
    for b in benches:
        ref = data[base][0].get((b, "all"))
        ref_ops = statistics.median(ref["ops_per_sec"]) if ref else None
        for c in configs:
            d = data[c][0].get((b, "all"))
            if not d:
                continue
            med = {k: statistics.median(v) for k, v in d.items()}
            ops = d["ops_per_sec"]
            ratio = f"{med['ops_per_sec'] / ref_ops:.2f}" if ref_ops else "–"
            cells = [fmt(k, med[k]) for k, _ in COLS[1:]]
            print(f"| {b} | {c} | {fmt('ops_per_sec', med['ops_per_sec'])} | "
                  f"{min(ops):,.0f}-{max(ops):,.0f} | {ratio} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
