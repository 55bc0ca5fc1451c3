#!/usr/bin/env bash
# Prepared in session 34, rewritten in session 35 (not run yet): the build flag it used
# (-DSERVEKIT_DIAG_SWAP_PINGPONG) went away when the per-GEMM swap choice was merged, and
# SERVEKIT_GEMM_SWAP=cooperative|pingpong now gives both swap tiles in one binary (W13's interleave
# follows GEMM1's choice). Which GEMM gains from the ping-pong 128x144 swap-AB tile and which loses,
# per shape: the data a better rule than use_swap_pingpong's N x K <= 2048 x 2048 needs (session
# 34's whole-layer A/B, ab/2026-12-03-s34-swap-pp: qwen3-30b 2048 -7.6%, qwen3-235b 2048 +2.5%,
# gpt-oss-120b 4096 +4.6% (no fusion on either), deepseek-v3 bf16 8192 +24%). The forward cut after
# each pass (SERVEKIT_DIAG_DYNAMIC_STOP) splits that into GEMM1 (stop 3 - stop 2) and GEMM2
# (stop 5 - stop 4).
#   1. build (no tests)
#   2. rows (dynamic bf16, uniform), SERVEKIT_GEMM_TILE=swap with SERVEKIT_GEMM_SWAP=cooperative /
#      pingpong, one round: stops 2, 3, 4, 5 and the whole layer for qwen3-235b 2048 and
#      gpt-oss-120b 4096; stops 2, 3, 5 and whole for deepseek-v3 8192 and mixtral-8x7b 8192
# Device (carry [".deps"], ~5 min): SERVEKIT_COMMIT=<sha> bash bench/runs/next-swap-pp-stops.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, bench_row, work_dir
BUDGET_S=${BUDGET_S:-420}
work_dir swap-pp-stops
env JOBS=16 BUILD_DIR="$B" SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF >"$W/build.log" 2>&1 ||
  { tail -n 40 "$W/build.log"; exit 1; }
say "build done"
DYN="--quant bf16 --routing uniform --path dynamic"
stops() {  # stops TAG "STOPS" BENCH_ARGS...
  local tag=$1 list=$2
  shift 2
  for s in $list; do
    for swap in cooperative pingpong; do
      bench_row "$tag-$swap-stop$s" SERVEKIT_GEMM_TILE=swap SERVEKIT_GEMM_SWAP=$swap \
        SERVEKIT_DIAG_DYNAMIC_STOP=$s -- "$@"
    done
  done
}
# shellcheck disable=SC2086
stops q235 "2 3 4 5 0" --preset qwen3-235b-a22b --tokens 2048 $DYN
# shellcheck disable=SC2086
stops oss "2 3 4 5 0" --preset gpt-oss-120b --tokens 4096 $DYN
# shellcheck disable=SC2086
stops ds "2 3 5 0" --preset deepseek-v3 --tokens 8192 $DYN
# shellcheck disable=SC2086
stops mix "2 3 5 0" --preset mixtral-8x7b --tokens 8192 $DYN
say "done"
