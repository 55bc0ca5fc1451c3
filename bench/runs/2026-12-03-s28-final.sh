#!/usr/bin/env bash
# Session 28, the check of main at the end of the session: what changed since the last check
# (e75d440) is the tile-choosing GEMM's pick cache (266e885), the testing::ScopedEnv helper, and
# the 16-byte alignment check of hidden and out with its test (MoECuda.RejectsUnalignedHiddenAndOut);
# the row gather tried this session is not in the tree (bench/runs/gemm-row-gather.patch).
#   1. scripts/gpu-check.sh with BENCH_SET=none: build, the whole GPU suite, CPU suite,
#      compute-sanitizer (OUT/check/)
#   2. beside the check, a build of the tree with bench/runs/gemm-row-gather-v2.patch (the row
#      gather with the tile's indices in registers); after the check its gather tests, then rows,
#      two rounds, gather 1 / 0 (SERVEKIT_DYNAMIC_GEMM_GATHER, same binary): qwen3-30b bf16
#      2048,8192, mixtral 2048, qwen3-235b 2048
# Device (carry [".deps"], ~9 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-03-s28-final.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, work_dir, left, say, bench_row
BUDGET_S=${BUDGET_S:-520}
work_dir s28-final
AB=/tmp/ab-tree
if ((${RUN_AB:-1})); then  # RUN_AB=0: the check alone
  copy_tree "$AB" bench/runs/gemm-row-gather-v2.patch
  (cd "$AB" && env JOBS=6 BUILD_DIR=build-ab SERVEKIT_WERROR=OFF scripts/build.sh \
    >"$W/build-ab.log" 2>&1; echo $? >"$W/build-ab.rc") &
fi
OUT="$OUT/check" BENCH_SET=none BUDGET_S=430 BUILD_DIR=$B scripts/gpu-check.sh
say "check done"
((${RUN_AB:-1})) || exit 0
wait
say "ab build rc=$(cat "$W/build-ab.rc") $(grep -E 'spill' "$W/build-ab.log" | head -3 | tr '\n' ' ')"
ABB=$AB/build-ab
timeout 60 "$ABB/servekit_gpu_tests" --gtest_filter='GroupedGemmCuda.BF16RowGather:MoECuda.GemmRowGatherMatchesTheCopy' \
  >"$W/tests-ab.log" 2>&1
say "ab tests rc=$? $(grep -cE '^\[ +OK \]' "$W/tests-ab.log") ok, $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests-ab.log" | tr '\n' ' ')"
ROWS=("q30 --preset qwen3-30b-a3b --tokens 2048,8192"
  "mix --preset mixtral-8x7b --tokens 2048"
  "q235 --preset qwen3-235b-a22b --tokens 2048")
for rep in 1 2; do
  for row in "${ROWS[@]}"; do
    read -r tag args <<<"$row"
    # shellcheck disable=SC2086
    BIN=$ABB/servekit bench_row "$tag-gather-$rep" SERVEKIT_DYNAMIC_GEMM_GATHER=1 -- $args \
      --quant bf16 --routing uniform --path dynamic
    # shellcheck disable=SC2086
    BIN=$ABB/servekit bench_row "$tag-copy-$rep" SERVEKIT_DYNAMIC_GEMM_GATHER=0 -- $args \
      --quant bf16 --routing uniform --path dynamic
  done
done
say "done"
