#!/usr/bin/env bash
# Session 42, the last ~200 s of device time: the device-side pick between the 2x1 swap tile and
# its pair (GemmTileKind::kSwapOrPair, GemmRunGate; perf-notes forty-second pass, item 4).
#   1. build with tests (16 jobs)
#   2. the gate's and the pair's GEMM and layer tests against the fp64 / CPU reference
#   3. dynamic bf16 uniform rows, auto pick: deepseek-v3 8192 (bench routing 1.29x the tiles in
#      pairs: the device should keep the 2x1 tile, ~15.5 ms on an H100 plus the empty pair's
#      launch) and gpt-oss-120b 8192 (1.015x: the pair, ~3.4 ms)
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-07-s42-vote.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-200}
B=build
work_dir vote
nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | tee -a "$W/$WORK_NAME.txt"
EXTRA=()
[[ -f /usr/include/gtest/gtest.h ]] || EXTRA+=(-DGTEST_ROOT="$PWD/.deps/gtest")
env JOBS=16 BUILD_DIR=$B SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=ON "${EXTRA[@]}" \
  >"$W/build.log" 2>&1 || { say "build failed: $(tail -n 20 "$W/build.log")"; exit 1; }
say "built"
t=$(($(left) - 60)); ((t > 90)) && t=90
gtest_run vote "$B" 'GroupedGemmCuda.BF16SwapOrPair*:GroupedGemmCuda.PairTile*:MoECuda.SwapOrPair*:GroupedGemmCuda.BF16Swap:GroupedGemmCuda.BF16SwapPair' $t
D="--quant bf16 --routing uniform --path dynamic"
# shellcheck disable=SC2086
bench_row oss-auto -- --preset gpt-oss-120b $D --tokens 8192
# shellcheck disable=SC2086
bench_row ds-auto -- --preset deepseek-v3 $D --tokens 8192
say done
