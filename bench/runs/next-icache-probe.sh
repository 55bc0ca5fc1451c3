#!/usr/bin/env bash
# Prepared in session 29, not GPU-run (compiled for sm_90a on the CPU machine; the code sizes
# checked in its cubin: 32 bytes a step, 128.5 KB at 4096 steps). What one-shot straight-line
# code costs cold (docs/perf-notes.md, twenty-ninth pass, Next 1): bench/tools/icache_probe.cu,
# 64-4096 steps, one CTA and 2 per SM, cold / warm / L2-cold. ~1.5 min (most of it nvcc).
# Device (carry [] is enough: no .deps needed): bash bench/runs/next-icache-probe.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, bench_row
BUDGET_S=${BUDGET_S:-150}
WORK_NAME=icache-probe
W=$OUT/$WORK_NAME  # straight into OUT: a cut call still brings back what ran
mkdir -p "$W"
nvcc -O3 -arch=sm_90a -std=c++17 -o "$W/icache_probe" bench/tools/icache_probe.cu \
  >"$W/build.log" 2>&1 || { tail -20 "$W/build.log"; exit 1; }
say "built"
timeout $(($(left) - 5)) "$W/icache_probe" | tee -a "$W/$WORK_NAME.txt"
rm -f "$W/icache_probe"
say "done"
