#!/usr/bin/env python3
"""Per-kernel table of the ncu CSV files written by scripts/gpu-profile.sh.

usage: bench/ncu_table.py OUT/ncu-*.csv
One line per profiled kernel: duration (us), DRAM MB read and written, grid size.
"""
import csv
import sys


def num(s):
    return float(s.replace(",", ""))


for path in sys.argv[1:]:
    with open(path) as f:
        rows = list(csv.reader(line for line in f if not line.startswith("==")))
    if len(rows) < 2:
        print(f"# {path}: no kernels")
        continue
    ix = {h: i for i, h in enumerate(rows[0])}
    if "ID" not in ix:  # PROFILE_SET=source writes per-instruction pages, not the raw metrics
        print(f"# {path}: not a raw-metrics page; per-instruction pages: bench/ncu_source_csv.py")
        continue
    print(f"# {path}: {len(rows) - 2} kernels")
    for r in rows[2:]:
        print(f"{r[ix['ID']]:>4} {r[ix['Kernel Name']][:60]:60} "
              f"{num(r[ix['gpu__time_duration.sum']]) / 1e3:9.1f}us "
              f"rd {num(r[ix['dram__bytes_read.sum']]) / 1e6:9.1f}MB "
              f"wr {num(r[ix['dram__bytes_write.sum']]) / 1e6:8.1f}MB "
              f"grid {r[ix['launch__grid_size']]}")
