#!/usr/bin/env bash
# Session 41, call 5 cut to the device time left (~370 s with the machine's start): main and the
# 1x2 swap cluster (bench/runs/2026-12-07-s41-swap-cluster.sh, items 1-2) built side by side,
# 8 jobs each, tests off; deepseek-v3 bf16 dynamic uniform 8192 tokens main / c12 / main.
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-07-s41-swap-cluster-short.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-230}
B=build
work_dir swap-cluster-short
nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | tee -a "$W/$WORK_NAME.txt"
F="-DSERVEKIT_DIAG_SWAP_CLUSTER_M=1 -DSERVEKIT_DIAG_SWAP_CLUSTER_N=2"
copy_tree /tmp/c12-tree
(cd /tmp/c12-tree && env JOBS=8 BUILD_DIR=build-c12 SERVEKIT_WERROR=OFF scripts/build.sh \
  -DSERVEKIT_TESTS=OFF "-DCMAKE_CUDA_FLAGS=$F" "-DCMAKE_CXX_FLAGS=$F" >"$W/build-c12.log" 2>&1
  echo $? >"$W/build-c12.rc") &
env JOBS=8 BUILD_DIR=$B SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF \
  >"$W/build.log" 2>&1 || { say "main build failed: $(tail -n 20 "$W/build.log")"; exit 1; }
wait
say "builds done: c12 rc=$(cat "$W/build-c12.rc")"
cp "$W/$WORK_NAME.txt" "$OUT/" 2>/dev/null
D="--preset deepseek-v3 --quant bf16 --routing uniform --path dynamic --tokens 8192"
# shellcheck disable=SC2086
bench_row ds-main -- $D
cp "$W/$WORK_NAME.txt" "$OUT/" 2>/dev/null
# shellcheck disable=SC2086
BIN=/tmp/c12-tree/build-c12/servekit bench_row ds-c12 -- $D
cp "$W/$WORK_NAME.txt" "$OUT/" 2>/dev/null
# shellcheck disable=SC2086
bench_row ds-main-2 -- $D
say done
