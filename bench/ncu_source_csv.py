#!/usr/bin/env python3
"""Summarises the per-instruction CSV of `ncu --csv --page source --print-source sass` (the
ncu-<n>.csv files of `PROFILE_SET=source scripts/gpu-profile.sh`, plain or .gz): one block per
profiled kernel with its SASS size, warp-level instructions executed, warp stall samples by
reason, and the windows of W consecutive instructions holding the most samples (their hottest
instructions and those instructions' reasons).

usage: bench/ncu_source_csv.py FILE [FILE...] [--window W] [--top N] [--kernel REGEX]
"""
import argparse
import collections
import csv
import gzip
import re
import sys

SAMPLES = "Warp Stall Sampling (All Samples)"
EXECUTED = "Instructions Executed"


def num(s):
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return 0.0


def kernels(path):
    """(kernel name, header, rows) per kernel block of one file."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", errors="replace") as f:
        lines = [line for line in f if not line.startswith("==")]
    starts = [i for i, line in enumerate(lines) if line.startswith('"Kernel Name"')]
    for k, s in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        name = next(csv.reader([lines[s]]))[1]
        rows = list(csv.reader(lines[s + 1:end]))
        if not rows:
            continue
        header = rows[0]
        yield name, header, [r for r in rows[1:] if len(r) == len(header)]


def summarise(name, header, rows, window, top):
    ix = {h: i for i, h in enumerate(header)}
    if SAMPLES not in ix or EXECUTED not in ix or "Source" not in ix:
        print(f"== {name[:110]}\n   not a source page (columns {SAMPLES!r}, {EXECUTED!r} missing)")
        return
    reasons = [h for h in header if h.startswith("stall_") and "Not Issued" not in h]
    samples = [num(r[ix[SAMPLES]]) for r in rows]
    executed = [num(r[ix[EXECUTED]]) for r in rows]
    total = sum(samples)
    print(f"== {name[:110]}")
    print(f"   SASS {len(rows)}, executed {sum(1 for x in executed if x > 0)} distinct, "
          f"{sum(executed):.0f} warp-instructions, {total:.0f} stall samples")
    if total == 0:
        return
    by_reason = collections.Counter()
    for r in rows:
        for h in reasons:
            by_reason[h[6:]] += num(r[ix[h]])
    print("   reasons: " + ", ".join(f"{k} {100 * v / total:.0f}%"
                                     for k, v in by_reason.most_common(8) if v > 0))
    wins = sorted(((sum(samples[i:i + window]), i) for i in range(0, len(rows), window)),
                  reverse=True)[:top]
    for s, i in wins:
        if s == 0:
            break
        hot = sorted(range(i, min(i + window, len(rows))), key=lambda j: -samples[j])[:3]
        desc = " | ".join(
            f"{rows[j][ix['Source']].strip()[:34]} {samples[j]:.0f} ("
            + " ".join(f"{h[6:]} {num(rows[j][ix[h]]):.0f}" for h in reasons
                       if num(rows[j][ix[h]]) >= max(1.0, samples[j] / 5)) + ")"
            for j in hot if samples[j] > 0)
        print(f"   [{i:5d}, +{window}) {100 * s / total:5.1f}%  {desc}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--window", type=int, default=32)
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("--kernel", default="")
    a = ap.parse_args()
    for path in a.files:
        print(f"# {path}")
        for name, header, rows in kernels(path):
            if re.search(a.kernel, name):
                summarise(name, header, rows, a.window, a.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
