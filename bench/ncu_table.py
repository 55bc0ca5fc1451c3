#!/usr/bin/env python3
"""Per-kernel table of the ncu CSV files written by scripts/gpu-profile.sh.

usage: bench/ncu_table.py OUT/ncu-*.csv
One line per profiled kernel: duration (us), DRAM MB read and written, grid size. For a CSV of
ncu's details page (NCU_ARGS with --page details and sections, e.g. bench/runs/*-ncu-*.sh), one
line per kernel of the section metrics in DETAILS below, where present.
"""
import csv
import re
import sys


def num(s):
    return float(s.replace(",", ""))


# (metric name on the details page, column heading): what bounds a GEMM, at a glance.
DETAILS = [("Duration", "us"), ("SM Frequency", "GHz"), ("DRAM Throughput", "dram%"),
           ("L2 Cache Throughput", "l2%"), ("L2 Hit Rate", "l2hit%"),
           ("Compute (SM) Throughput", "sm%"), ("Issue Slots Busy", "issue%")]


def short_name(name):
    """A CUTLASS grouped GEMM as 'gemm TILE cluster CLUSTER', anything else as its name."""
    tile = re.search(r"KernelPtrArrayTmaWarpSpecialized\w*>, tuple<C<(\d+)>, C<(\d+)>, C<(\d+)>>",
                     name)
    cluster = re.search(r"WarpSpecialized\w*<\d+, tuple<C<(\d+)>, C<(\d+)>, C<1>>", name)
    if tile is None or cluster is None:
        return name
    return f"gemm {'x'.join(tile.groups())} cluster {'x'.join(cluster.groups())}"


def details_table(path, rows, ix):
    """One line per kernel ID of a details-page CSV (one row per metric)."""
    kernels = {}
    for r in rows[1:]:
        if len(r) <= ix["Metric Value"] or not r[ix["Metric Name"]]:
            continue
        k = kernels.setdefault(r[ix["ID"]], {"name": short_name(r[ix["Kernel Name"]])})
        k.setdefault(r[ix["Metric Name"]], (r[ix["Metric Value"]], r[ix["Metric Unit"]]))
    print(f"# {path}: {len(kernels)} kernels (details page)")
    print(f"{'ID':>4} {'kernel':60} " + " ".join(f"{h:>8}" for _, h in DETAILS))
    for kid, k in kernels.items():
        cells = []
        for metric, _ in DETAILS:
            if metric not in k:
                cells.append(f"{'-':>8}")
                continue
            value, unit = k[metric]
            x = num(value)
            if unit == "ns":
                x /= 1e3
            elif unit == "us":
                pass
            elif unit == "ms":
                x *= 1e3
            elif unit in ("hz", "Hz"):
                x /= 1e9
            elif unit in ("Mhz", "MHz"):
                x /= 1e3
            elif unit in ("Ghz", "GHz"):
                pass
            cells.append(f"{x:8.2f}")
        print(f"{kid:>4} {k['name'][:60]:60} " + " ".join(cells))


for path in sys.argv[1:]:
    with open(path) as f:
        rows = list(csv.reader(line for line in f if not line.startswith("==")))
    if len(rows) < 2:
        print(f"# {path}: no kernels")
        continue
    ix = {h: i for i, h in enumerate(rows[0])}
    if "Metric Name" in ix and "ID" in ix:
        details_table(path, rows, ix)
        continue
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
