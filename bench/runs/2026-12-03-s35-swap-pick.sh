#!/usr/bin/env bash
# Prepared in session 34, ran in session 35 (results: bench/results/h200/ab/2026-12-03-s35-swap-pick). bench/runs/swap-pick.patch (branch wip/swap-pick): bf16's
# ping-pong 128x144 swap-AB tile as a fourth instantiation, picked per GEMM by the expert's weight
# matrix (use_swap_pingpong: N x K <= 2048 x 2048, i.e. qwen3-30b's two GEMMs among the presets;
# SERVEKIT_GEMM_SWAP=auto|cooperative|pingpong overrides), W13's gate/up interleave from GEMM1's
# choice (64 rows with the ping-pong tile, else 128), and a fifth, the 128x256 tile compiled for
# the 64-row interleave (grouped_gemm_bf16_w64.cu; one store per kernel: both behind a run-time
# switch spilled ~300 bytes). Compiled for sm_90a on the CPU machine; not GPU-run.
#   1. main and main + the patch built in parallel (8 jobs each)
#   2. GPU tests on the patched build: every GroupedGemmCuda test (BF16SwapPingpong,
#      BF16SwapPingpongFusedActivation and BF16FusedActivationOn64RowInterleave are new), the
#      layer tests that run the swap tiles (SwapTileMatchesReference now under both swap tiles,
#      FusedActivationMatchesThePass), RejectsAnUnknownSwapChoice, the activation pass tests
#   3. rows (dynamic bf16, uniform), main / patched, two rounds: qwen3-30b 2048 (the ping-pong
#      tile: expected ~451 against ~488 us, session 34), qwen3-235b 2048 (unchanged pick: level);
#      one round: qwen3-30b 4096 and 8192 (256 rows: ping-pong swap; 512: the 128x256 tile on the
#      64-row interleave), deepseek-v3 8192 (unchanged: level)
# Then, if it holds: merge, the whole suite (scripts/gpu-check.sh BENCH_SET=issue3).
# Device (carry [".deps"], ~8 min): SERVEKIT_COMMIT=<sha>+pick bash bench/runs/next-swap-pick.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, bench_row, work_dir
BUDGET_S=${BUDGET_S:-560}
work_dir swap-pick
PK=/tmp/pick-tree
copy_tree "$PK" bench/runs/swap-pick.patch
(cd "$PK" && env JOBS=8 BUILD_DIR=build-pick SERVEKIT_WERROR=OFF scripts/build.sh >"$W/build-pick.log" 2>&1
  echo $? >"$W/build-pick.rc") &
env JOBS=8 BUILD_DIR="$B" SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF >"$W/build.log" 2>&1 ||
  { tail -n 40 "$W/build.log"; exit 1; }
say "main build done"
wait
say "pick build rc=$(cat "$W/build-pick.rc")"
grep -E " error" "$W/build-pick.log" | head -n 10 >>"$W/$WORK_NAME.txt"
PKB=$PK/build-pick
timeout 200 "$PKB/servekit_gpu_tests" --gtest_filter='GroupedGemmCuda.*:MoECuda.SwapTileMatchesReference:MoECuda.FusedActivationMatchesThePass:MoECuda.RejectsAnUnknownSwapChoice:MoEQuantCuda.Activation*' \
  >"$W/tests-pick.log" 2>&1
say "pick tests rc=$? $(grep -cE '^\[ +OK \]' "$W/tests-pick.log") ok, $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests-pick.log" | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure|vs pass" "$W/tests-pick.log" | head -n 20 >>"$W/$WORK_NAME.txt"
DYN="--quant bf16 --routing uniform --path dynamic"
for rep in 1 2; do
  for row in "q30 --preset qwen3-30b-a3b --tokens 2048" "q235 --preset qwen3-235b-a22b --tokens 2048"; do
    read -r tag args <<<"$row"
    # shellcheck disable=SC2086
    bench_row "$tag-main-$rep" -- $args $DYN
    # shellcheck disable=SC2086
    BIN=$PKB/servekit bench_row "$tag-pick-$rep" -- $args $DYN
  done
done
for row in "q30w --preset qwen3-30b-a3b --tokens 4096,8192" "ds --preset deepseek-v3 --tokens 8192"; do
  read -r tag args <<<"$row"
  # shellcheck disable=SC2086
  bench_row "$tag-main" -- $args $DYN
  # shellcheck disable=SC2086
  BIN=$PKB/servekit bench_row "$tag-pick" -- $args $DYN
done
say "done"
