#!/usr/bin/env bash
# Session 40: does the tensor-bound grouped GEMM run faster when its padding rows are zeros?
# (bench/tools/gemm_zeros.cpp: qwen3-30b's two GEMMs at ~8192 tokens, rows random / last 64 of
# each group's 576 zero / all zero, weights from HBM and in L2, with the SM clock and power.)
#   1. main built in build/ (tests off; a warm build/ from an earlier call is reused)
#   2. the probe, linked against build/libservekit.a, run twice (ZEROS_ARGS: its arguments)
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-06-s40-zeros.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-300}
B=build
work_dir s40-zeros
env JOBS=16 BUILD_DIR=$B SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF >"$W/build.log" 2>&1 ||
  { say "build failed: $(tail -n 20 "$W/build.log")"; exit 1; }
say "build done"
g++ -O2 -std=c++20 -Iinclude -Isrc -I/usr/local/cuda/include bench/tools/gemm_zeros.cpp \
  "$B/libservekit.a" -L/usr/local/cuda/lib64 -lcudart -lcublas -lcublasLt -lpthread \
  -o "$W/gemm_zeros" >"$W/probe-build.log" 2>&1 || { say "probe build failed: $(tail -n 5 "$W/probe-build.log")"; exit 1; }
for r in 1 2; do
  (($(left) < 40)) && { say "run $r skipped (budget)"; break; }
  timeout $(($(left) - 10)) "$W/gemm_zeros" ${ZEROS_ARGS:-} >"$W/zeros-$r.txt" 2>&1
  say "run $r rc=$?"
  tee -a "$W/$WORK_NAME.txt" <"$W/zeros-$r.txt"
done
rm -f "$W/gemm_zeros"
say done
