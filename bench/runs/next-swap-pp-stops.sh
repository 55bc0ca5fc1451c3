#!/usr/bin/env bash
# Prepared in session 34, not run yet. Which GEMM gains from the ping-pong 128x144 swap-AB tile
# (-DSERVEKIT_DIAG_SWAP_PINGPONG=1) and which loses? Session 34's whole-layer A/B
# (ab/2026-12-03-s34-swap-pp): qwen3-30b 2048 -7.6%, qwen3-235b 2048 +2.5%, gpt-oss-120b 4096 +4.6%
# (no fusion on either), deepseek-v3 bf16 8192 +24%. The forward cut after each pass
# (SERVEKIT_DIAG_DYNAMIC_STOP) in both builds splits that into GEMM1 (stop 3 - stop 2) and GEMM2
# (stop 5 - stop 4) per shape (K = hidden for GEMM1, intermediate for GEMM2), the data a per-GEMM
# choice between the two swap tiles needs (docs/perf-notes.md, thirty-fourth pass, Next 1).
#   1. both builds in parallel (8 jobs each, no tests)
#   2. rows (dynamic bf16, uniform), main / pp, one round: stops 2, 3, 4, 5 and the whole layer for
#      qwen3-30b 2048, qwen3-235b 2048, gpt-oss-120b 4096; stops 2, 3, 5 and whole for deepseek-v3
#      8192; the whole layer for qwen3-30b 4096 and 8192 (the 128x256 tile on the 64-row
#      interleave in pp)
# Device (carry [".deps"], ~8 min): SERVEKIT_COMMIT=<sha> bash bench/runs/next-swap-pp-stops.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, bench_row, work_dir
BUDGET_S=${BUDGET_S:-560}
work_dir swap-pp-stops
PP=/tmp/pp-tree
copy_tree "$PP"
F=-DSERVEKIT_DIAG_SWAP_PINGPONG=1
(cd "$PP" && env JOBS=8 BUILD_DIR=build-pp SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF \
  "-DCMAKE_CUDA_FLAGS=$F" "-DCMAKE_CXX_FLAGS=$F" >"$W/build-pp.log" 2>&1; echo $? >"$W/build-pp.rc") &
env JOBS=8 BUILD_DIR="$B" SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF >"$W/build.log" 2>&1 ||
  { tail -n 40 "$W/build.log"; exit 1; }
say "main build done"
wait
say "pp build rc=$(cat "$W/build-pp.rc")"
PPB=$PP/build-pp
DYN="--quant bf16 --routing uniform --path dynamic"
stops() {  # stops TAG "STOPS" BENCH_ARGS...
  local tag=$1 list=$2
  shift 2
  for s in $list; do
    bench_row "$tag-main-stop$s" SERVEKIT_DIAG_DYNAMIC_STOP=$s -- "$@"
    BIN=$PPB/servekit bench_row "$tag-pp-stop$s" SERVEKIT_DIAG_DYNAMIC_STOP=$s -- "$@"
  done
}
# shellcheck disable=SC2086
stops q30 "2 3 4 5 0" --preset qwen3-30b-a3b --tokens 2048 $DYN
# shellcheck disable=SC2086
stops q235 "2 3 4 5 0" --preset qwen3-235b-a22b --tokens 2048 $DYN
# shellcheck disable=SC2086
stops oss "2 3 4 5 0" --preset gpt-oss-120b --tokens 4096 $DYN
# shellcheck disable=SC2086
stops q30w "0" --preset qwen3-30b-a3b --tokens 4096,8192 $DYN
# shellcheck disable=SC2086
stops ds "2 3 5 0" --preset deepseek-v3 --tokens 8192 $DYN
say "done"
