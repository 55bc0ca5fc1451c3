#!/usr/bin/env python3
"""Per-kernel table of the ncu CSV files written by scripts/gpu-profile.sh.

usage: bench/ncu_table.py OUT/ncu-*.csv
One line per profiled kernel: duration (us), DRAM MB read and written, grid size ('-' for what
the page lacks), and, for a raw page collected with sections (NCU_RAW_STALLS in
bench/runs/prelude.sh), a second line of the RAW_BUSY shares and the four largest stall reasons.
For a CSV of ncu's details page (NCU_ARGS with --page details and sections, e.g.
bench/runs/*-ncu-*.sh), one line per kernel of the section metrics in DETAILS below, where present.
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


def raw_value(r, ix, metric, scale=1.0, fmt="{:9.1f}"):
    """A raw-page metric, scaled and formatted, or '-' in the same width when the page lacks it:
    ncu's raw page holds its default metrics only when no --section is asked for."""
    if metric not in ix or not r[ix[metric]]:
        return "-".rjust(len(fmt.format(0.0)))
    return fmt.format(num(r[ix[metric]]) * scale)


# The warp-state sections' stall reasons on the raw page, as warps stalled per issued instruction.
STALL = re.compile(r"smsp__average_warps_issue_stalled_(\w+)_per_issue_active\.ratio")
# (label, raw metric): how busy a kernel kept the tensor pipe, L2, DRAM and the issue slots.
RAW_BUSY = [("tensor", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"),
            ("l2", "lts__throughput.avg.pct_of_peak_sustained_elapsed"),
            ("dram", "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"),
            ("issue", "sm__issue_active.avg.pct_of_peak_sustained_elapsed")]


def raw_line(r, ix):
    """One kernel of a raw-metrics page: duration, DRAM bytes and grid where collected, then the
    pipes' and L2's busy shares and the four largest stall reasons where the sections gave them."""
    line = (f"{r[ix['ID']]:>4} {short_name(r[ix['Kernel Name']])[:60]:60} "
            f"{raw_value(r, ix, 'gpu__time_duration.sum', 1e-3)}us "
            f"rd {raw_value(r, ix, 'dram__bytes_read.sum', 1e-6)}MB "
            f"wr {raw_value(r, ix, 'dram__bytes_write.sum', 1e-6, '{:8.1f}')}MB "
            f"grid {r[ix['launch__grid_size']] if 'launch__grid_size' in ix else '-'}")
    cells = [f"{name} {raw_value(r, ix, m, fmt='{:.1f}')}%" for name, m in RAW_BUSY if m in ix]
    stalls = sorted(((num(r[i]), m.group(1)) for h, i in ix.items()
                     if (m := STALL.fullmatch(h)) and r[i]), reverse=True)
    if stalls:
        cells.append("stalls " + ", ".join(f"{name} {v:.2f}" for v, name in stalls[:4]))
    return line + ("\n     " + "; ".join(cells) if cells else "")


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
        print(raw_line(r, ix))
