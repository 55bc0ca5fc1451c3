#!/usr/bin/env bash
# Prepared in session 30, not GPU-run (compiled for sm_90a here; 256 distinct noinline blocks and
# the indirect calls checked in its PTX). bench/tools/icache_probe.cu with its new jump cases:
# what each call into cold code costs (16 / 64 / 256 blocks of ~512 bytes, sequential or scrambled
# order, 1 CTA and 2 per SM, cold / warm), the case session 30's self-routed GEMM1 suggested
# (docs/perf-notes.md, thirtieth pass, Next 2). ~1.5 min, most of it nvcc.
# Device (carry [] is enough): bash bench/runs/next-jump-probe.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-180}
WORK_NAME=jump-probe
W=$OUT/$WORK_NAME
mkdir -p "$W"
nvcc -O3 -arch=sm_90a -std=c++17 -o "$W/icache_probe" bench/tools/icache_probe.cu \
  >"$W/build.log" 2>&1 || { tail -20 "$W/build.log"; exit 1; }
say "built"
timeout $(($(left) - 5)) "$W/icache_probe" | tee -a "$W/$WORK_NAME.txt"
rm -f "$W/icache_probe"
say "done"
