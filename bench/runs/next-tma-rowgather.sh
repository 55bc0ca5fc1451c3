#!/usr/bin/env bash
# Prepared in session 27, not run yet (compiled for sm_90a on the CPU machine). Answers the
# question in front of perf-notes' twenty-seventh pass, Next 1: do one-row TMA loads (64 bf16
# columns, 128-byte swizzle) of gathered token rows land exactly where one box load of a gathered
# copy puts them, and how many microseconds a k-step do 144 of them take per SM
# (bench/tools/tma_rowgather.cu; ~1 min with the start).
# Device (no carry needed): bash bench/runs/next-tma-rowgather.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-120}
work_dir next-tma-rowgather
nvcc -O3 -arch=sm_90a -o "$W/tma_rowgather" bench/tools/tma_rowgather.cu >"$W/build.log" 2>&1 ||
  { say "build failed: $(tail -n 5 "$W/build.log")"; exit 1; }
timeout 90 "$W/tma_rowgather" >"$W/tma_rowgather.txt" 2>&1
say "rc=$?"
cat "$W/tma_rowgather.txt" | tee -a "$W/$WORK_NAME.txt"
