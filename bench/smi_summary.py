#!/usr/bin/env python3
"""Summarise nvidia-smi samples taken during a bench row (bench/runs/*-power.sh).

Each file holds `nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,
clocks_event_reasons.active --format=csv,noheader,nounits` lines. A row's timed loop is the part of
the file where the GPU draws power (weight loading and setup draw little), so the summary keeps the
samples whose power is at least half the file's largest and prints, per file: how many, the mean SM
clock (MHz) and power (W), the largest temperature (C), and the share of those samples with the
software power cap (0x4) or a thermal slowdown (0x20, 0x40) among the clock-event reasons.
"""
import os
import sys


def summarise(path):
    rows = []
    with open(path) as f:
        for line in f:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) < 5:
                continue
            try:
                rows.append((float(parts[1]), float(parts[2]), float(parts[3]), int(parts[4], 16)))
            except ValueError:
                continue
    if not rows:
        return f"{os.path.basename(path):24s} no samples"
    top = max(r[1] for r in rows)
    hot = [r for r in rows if r[1] >= 0.5 * top]
    n = len(hot)
    clock = sum(r[0] for r in hot) / n
    power = sum(r[1] for r in hot) / n
    temp = max(r[2] for r in hot)
    cap = sum(1 for r in hot if r[3] & 0x4) / n
    thermal = sum(1 for r in hot if r[3] & 0x60) / n
    return (f"{os.path.basename(path):24s} {n:5d} {clock:8.0f} {power:8.1f} {temp:6.0f} "
            f"{100 * cap:7.0f} {100 * thermal:8.0f}")


def main():
    print(f"{'file':24s} {'n':>5s} {'sm_MHz':>8s} {'power_W':>8s} {'max_C':>6s} "
          f"{'pcap_%':>7s} {'therm_%':>8s}")
    for path in sys.argv[1:]:
        print(summarise(path))


if __name__ == "__main__":
    main()
