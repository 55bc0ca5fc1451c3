#!/usr/bin/env bash
# Prepared in session 40, not yet run: the partial token tile (sm90_flat_tma_mainloop.cuh,
# -DSERVEKIT_DIAG_PARTIAL_N=1: a group's last token tile of a swap-AB tile on the flat producer runs
# the narrowest of m64 x n48 / n96 / n128 / n144 wgmma that covers its real rows) against main.
#   1. three builds side by side, 5 jobs each: main (tests off) in build/; /tmp/flat-tree with
#      -DSERVEKIT_DIAG_FLAT_TMA=3 (the flat producer on the cooperative 256x144 swap tile too,
#      tests off); /tmp/pn-tree with that and -DSERVEKIT_DIAG_PARTIAL_N=1 (tests on)
#   2. on pn: every GroupedGemmCuda and MoECuda test (the GEMM tests' groups of 1, 17, 29, 61, 64,
#      65, 128, 144, 145 and 300 rows reach all four widths on both swap tiles), then
#      compute-sanitizer memcheck of the swap GEMM tests
#   3. dynamic path, uniform, --peer off, same lease, main / flat / pn:
#      qwen3-30b bf16 2048 and 8192 (ping-pong swap tile, flat on all three builds), two rounds;
#      deepseek-v3 bf16 8192, qwen3-235b bf16 2048, gpt-oss-120b bf16 4096 (cooperative swap tile)
# Prediction (padding_sim.py --tiles 144 --widths 48,96,128: tensor work 1.19x -> 1.08x the rows
# at qwen3-30b 2048, 1.13x -> 1.04x at 8192, 1.14x -> 1.06x at deepseek-v3 8192, 1.20x -> 1.08x
# at gpt-oss 4096; but the 8192 GEMMs are not bound by the MMAs' clock alone, perf-notes fortieth
# pass): -1 to -4% at the 8192 rows, level to -3% at 2048 (memory-bound on an H100).
# Device (carry [".deps"], ~9 min): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-07-s41-partial-n.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-570}
B=build
work_dir partial-n
build_tree() {  # TAG TESTS FLAGS: /tmp/TAG-tree built in build-TAG, 5 jobs; rc into $W
  local tag=$1 tests=$2 flags=$3
  copy_tree "/tmp/$tag-tree"
  (cd "/tmp/$tag-tree" && env JOBS=5 BUILD_DIR="build-$tag" SERVEKIT_WERROR=OFF scripts/build.sh \
    "-DSERVEKIT_TESTS=$tests" "-DCMAKE_CUDA_FLAGS=$flags" "-DCMAKE_CXX_FLAGS=$flags" "${EXTRA[@]}" \
    >"$W/build-$tag.log" 2>&1
    echo $? >"$W/build-$tag.rc")
}
EXTRA=()
[[ -f /usr/include/gtest/gtest.h ]] || EXTRA+=(-DGTEST_ROOT="$PWD/.deps/gtest")
build_tree flat OFF "-DSERVEKIT_DIAG_FLAT_TMA=3" &
build_tree pn ON "-DSERVEKIT_DIAG_FLAT_TMA=3 -DSERVEKIT_DIAG_PARTIAL_N=1" &
env JOBS=6 BUILD_DIR=$B SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF "${EXTRA[@]}" \
  >"$W/build.log" 2>&1 || { say "main build failed: $(tail -n 20 "$W/build.log")"; exit 1; }
wait
say "builds done: flat rc=$(cat "$W/build-flat.rc"), pn rc=$(cat "$W/build-pn.rc")"
grep -hE " error" "$W/build-flat.log" "$W/build-pn.log" | head -n 10 >>"$W/$WORK_NAME.txt"
PN=/tmp/pn-tree/build-pn
FL=/tmp/flat-tree/build-flat
gtest_run pn "$PN" 'GroupedGemmCuda.*:MoECuda.*' 170
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
if [[ -n $CS ]] && (($(left) > 200)); then
  timeout 100 "$CS" --tool memcheck "$PN/servekit_gpu_tests" \
    --gtest_filter='GroupedGemmCuda.BF16Swap*' >"$W/memcheck-pn.log" 2>&1
  say "memcheck pn rc=$? $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$W/memcheck-pn.log" | tr '\n' ' ')"
fi
D="--quant bf16 --routing uniform --path dynamic"
for row in "q30-2048-1 qwen3-30b-a3b 2048" "q30-8192-1 qwen3-30b-a3b 8192" \
  "ds-8192 deepseek-v3 8192" "q235-2048 qwen3-235b-a22b 2048" "oss-4096 gpt-oss-120b 4096" \
  "q30-2048-2 qwen3-30b-a3b 2048" "q30-8192-2 qwen3-30b-a3b 8192"; do
  read -r tag preset t <<<"$row"
  # shellcheck disable=SC2086
  bench_row "$tag-main" -- --preset $preset $D --tokens $t
  [[ $preset == qwen3-30b-a3b ]] || BIN=$FL/servekit bench_row "$tag-flat" -- --preset $preset $D --tokens $t
  # shellcheck disable=SC2086
  BIN=$PN/servekit bench_row "$tag-pn" -- --preset $preset $D --tokens $t
done
say done
