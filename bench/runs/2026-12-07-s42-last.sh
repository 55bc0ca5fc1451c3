#!/usr/bin/env bash
# Session 42's last call (~400 s of device time left):
#   on an H200: issue 3's and issue 4's rows at the current default (scripts/gpu-check.sh,
#     BENCH_SET=issues, RUN_TESTS=0: the GPU suite passed at ee1eb41 on an H100, call s42-final,
#     and the later commits change no library code), then the pair probe if time is left;
#   on an H100: the pair probe (bench/tools/gemm_pair.cpp): deepseek-v3's GEMM shapes with the 2x1
#     swap tile against the pair, routed groups alone / with the 8192-row shared group / that
#     group alone, and qwen3-235b's GEMM1 as the control. Question: is the pair's loss on
#     deepseek-v3 (forty-second pass) the shared group or the shape?
# Prediction (pair against 2x1, GEMM alone): qwen3-235b GEMM1 -5 to -10%; deepseek-v3 GEMM1 routed
# alone faster with the pair, +shared slower, if the shared group is the cause.
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-07-s42-last.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-400}
B=build
work_dir last
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
say "$GPU"
env JOBS=16 BUILD_DIR=$B SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF \
  >"$W/build.log" 2>&1 || { say "build failed: $(tail -n 20 "$W/build.log")"; exit 1; }
say "built"
probe() {
  g++ -O2 -std=c++20 -Iinclude -Isrc -I/usr/local/cuda/include bench/tools/gemm_pair.cpp \
    "$B/libservekit.a" -L/usr/local/cuda/lib64 -lcudart -lcublas -lcublasLt -lpthread \
    -o "$W/gemm_pair" >"$W/probe-build.log" 2>&1 || { say "probe build failed"; return; }
  local t=$(($(left) - 10))
  ((t > 30)) || { say "probe skipped (budget)"; return; }
  timeout $t "$W/gemm_pair" >"$W/gemm_pair.txt" 2>&1
  say "probe rc=$?"
  cat "$W/gemm_pair.txt" >>"$W/$WORK_NAME.txt"
}
if [[ $GPU == *H200* ]]; then
  env BENCH_SET=issues RUN_TESTS=0 BUDGET_S=$(($(left) - 70)) OUT="$OUT" BUILD_DIR=$B \
    scripts/gpu-check.sh >"$W/gpu-check.txt" 2>&1
  say "gpu-check rc=$?"
  tail -n 80 "$W/gpu-check.txt" >>"$W/$WORK_NAME.txt"
fi
probe
say done
