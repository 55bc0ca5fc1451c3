#!/usr/bin/env python3
"""Summarises an `ncu --page source --print-source sass` text dump (one kernel): the SASS
instruction count, warp-level instructions executed, stall samples, and the executed regions
(runs of executed instructions) with their most frequent opcodes.

Usage: python3 bench/ncu_source_regions.py DUMP.txt
Columns after the SASS text (fixed at character 83 in ncu 2025's layout): stall samples (all),
stall samples (not issued), samples, instructions executed, ...
"""
import sys


def main(path):
    rows = []
    for line in open(path, errors="replace"):
        if not line.startswith("0x"):
            continue
        src, vals = line[19:83].strip(), line[83:].split()
        try:
            rows.append((src, int(vals[0]), int(vals[3])))
        except (IndexError, ValueError):
            continue
    print(f"SASS instructions {len(rows)}, warp instructions executed {sum(r[2] for r in rows)}, "
          f"stall samples {sum(r[1] for r in rows)}")
    few = [r for r in rows if 0 < r[2] < 32]
    print(f"executed by fewer than 32 warps (the CTA's serial parts): {len(few)} instructions, "
          f"{sum(r[2] for r in few)} executions")
    ranges, start, prev = [], None, None
    for i, r in enumerate(rows):
        if r[2] > 0:
            start = i if start is None else start
            prev = i
        elif start is not None and i - prev > 3:
            ranges.append((start, prev))
            start = None
    if start is not None:
        ranges.append((start, prev))
    print("region (SASS index range): executions, samples, top opcodes")
    for a, b in ranges:
        ops = {}
        for src, _, ex in rows[a:b + 1]:
            if ex:
                words = src.split()
                op = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
                ops[op] = ops.get(op, 0) + ex
        top = ", ".join(f"{k} {v}" for k, v in sorted(ops.items(), key=lambda x: -x[1])[:5])
        print(f"  {a:5d}-{b:5d}: {sum(r[2] for r in rows[a:b + 1]):5d} ex, "
              f"{sum(r[1] for r in rows[a:b + 1]):3d} samples; {top}")


if __name__ == "__main__":
    main(sys.argv[1])
