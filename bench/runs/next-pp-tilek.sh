#!/usr/bin/env bash
# Superseded, do not run: session 36's 2026-12-05-s36-pp.sh and session 39's s39-pp.sh ran this
# A/B, and since session 43 both k-steps are compiled (SERVEKIT_GEMM_PP_TILE_K=64|128 at run time;
# the -DSERVEKIT_DIAG_SWAP_PP_TILE_K flag below no longer exists).
# Prepared in session 35 (the flagged TU compiled for sm_90a on the CPU machine: 168
# registers, no stack). bf16's ping-pong swap tile (qwen3-30b's GEMMs) with k-steps of 128
# (-DSERVEKIT_DIAG_SWAP_PP_TILE_K=128, gemm_tile_config.h: 3 stages instead of 6 of 64, the same
# bytes in flight) against main's 64. At 2048 tokens a k-step of 64 is ~0.31 us of wgmma (128 x
# 144 x 64), so a fixed cost per k-step (the full/empty barrier round trip, the wgmma fence and
# wait) of 50-100 cycles would be 10-15% of it; k-steps of 128 halve their count. Prediction: up to
# -5% on qwen3-30b at 2048 and 4096 tokens if that cost shows, level if the GEMMs wait on memory
# (bench/runs/next-pp-profile.sh asks which).
#   1. main (tests off) and the flagged tree (tests on) built in parallel, 8 jobs each
#   2. on the flagged build: the ping-pong swap tile's GEMM tests (K = 2880: a k-tail of 64 in the
#      last step of 128) and the layer's swap test
#   3. qwen3-30b bf16 dynamic, uniform: 2048 two rounds, 4096 and 8192 one round, main / flagged
# Device (carry [".deps"], ~4.5 min): SERVEKIT_COMMIT=<sha> bash bench/runs/next-pp-tilek.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, work_dir, bench_row, build_beside
BUDGET_S=${BUDGET_S:-280}
work_dir pp-tilek
build_beside tk -DSERVEKIT_DIAG_SWAP_PP_TILE_K=128
TKB=$FB
timeout 90 "$TKB/servekit_gpu_tests" \
  --gtest_filter='GroupedGemmCuda.BF16SwapPingpong*:GroupedGemmCuda.BF16FusedActivationOn64RowInterleave:MoECuda.SwapTileMatchesReference*' \
  >"$W/tests-tk.log" 2>&1
say "tk tests rc=$? $(grep -cE '^\[ +OK \]' "$W/tests-tk.log") ok, $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests-tk.log" | tr '\n' ' ')"
grep -E "^\[  FAILED|Failure" "$W/tests-tk.log" | head -n 20 >>"$W/$WORK_NAME.txt"
Q="--preset qwen3-30b-a3b --quant bf16 --routing uniform --path dynamic"
for row in "t2048-1 2048" "t2048-2 2048" "t4096 4096" "t8192 8192"; do
  read -r tag t <<<"$row"
  # shellcheck disable=SC2086
  bench_row "$tag-main" -- $Q --tokens $t
  # shellcheck disable=SC2086
  BIN=$TKB/servekit bench_row "$tag-tk" -- $Q --tokens $t
done
say "done"
