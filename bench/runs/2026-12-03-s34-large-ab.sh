#!/usr/bin/env bash
# Session 34, call 3: did moving the 128x256 tile's fused store into its own function
# (fused_store_large, 7b038ec) change the large tiles? The check call's issue-3 rows had deepseek-v3
# fp8_block128 1.9-6% and qwen3-30b 8192 1.8% slower than session 27's lease. Base = main with
# bench/runs/s34-base.patch (the src of 7b038ec^, i.e. before the swap-AB fusion), built beside
# main; rows on the 128-row tiles, two rounds, base / main: deepseek-v3 fp8_block128 2048,8192,
# qwen3-30b bf16 8192, mixtral-8x7b bf16 2048.
# Device (carry [".deps"], ~7 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-03-s34-large-ab.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, bench_row, work_dir
BUDGET_S=${BUDGET_S:-500}
work_dir s34-large-ab
BASE=/tmp/base-tree
copy_tree "$BASE" bench/runs/s34-base.patch
(cd "$BASE" && env JOBS=8 BUILD_DIR=build-base SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF \
  >"$W/build-base.log" 2>&1; echo $? >"$W/build-base.rc") &
env JOBS=8 BUILD_DIR="$B" SERVEKIT_WERROR=OFF scripts/build.sh >"$W/build.log" 2>&1 ||
  { tail -n 40 "$W/build.log"; exit 1; }
say "main build done"
wait
say "base build rc=$(cat "$W/build-base.rc")"
for tu in grouped_gemm_bf16 grouped_gemm_fp8_block128; do
  for b in "$BASE/build-base" "$B"; do
    cuobjdump --dump-resource-usage "$b/CMakeFiles/servekit.dir/src/cuda/$tu.cu.o" 2>&1 |
      grep -E "REG:" | sed "s|^|$tu ${b##*/} |" | tail -n 1 >>"$W/$WORK_NAME.txt"
  done
done
ROWS=("ds --preset deepseek-v3 --quant fp8_block128 --tokens 2048,8192"
  "q30 --preset qwen3-30b-a3b --quant bf16 --tokens 8192"
  "mix --preset mixtral-8x7b --quant bf16 --tokens 2048")
for rep in 1 2; do
  for row in "${ROWS[@]}"; do
    read -r tag args <<<"$row"
    # shellcheck disable=SC2086
    BIN=$BASE/build-base/servekit bench_row "$tag-base-$rep" -- $args --routing uniform --path dynamic
    # shellcheck disable=SC2086
    bench_row "$tag-main-$rep" -- $args --routing uniform --path dynamic
  done
done
say "done"
