#!/usr/bin/env bash
# Session 41, call 2: the flat TMA producer on the cooperative 256x144 swap tile
# (-DSERVEKIT_DIAG_FLAT_TMA=3) against main, after call 1 (2026-12-07-s41-first.sh on an H100)
# measured deepseek-v3 bf16 8192 at 15393 us flat against 19177 us main (one row each; session 40's
# main on another H100: 15997).
#   1. two builds side by side: main (tests off, 6 jobs) in build/; /tmp/flat-tree with
#      -DSERVEKIT_DIAG_FLAT_TMA=3 and tests on (9 jobs)
#   2. on flat: every GroupedGemmCuda and MoECuda test, then compute-sanitizer memcheck of the
#      swap GEMM tests (the flat producer reads past a group's end into the next group's rows)
#   3. dynamic path, bf16, uniform, --peer off, alternating main / flat / main / flat on the same
#      lease: deepseek-v3 at 2048, 4096 and 8192 tokens in one process each; then qwen3-235b 2048
#      and gpt-oss-120b 4096 (the other presets on the cooperative swap tile), two rounds
# Device (carry [".deps"], ~8 min): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-07-s41-flat-coop.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-560}
B=build
work_dir flat-coop
EXTRA=()
[[ -f /usr/include/gtest/gtest.h ]] || EXTRA+=(-DGTEST_ROOT="$PWD/.deps/gtest")
copy_tree /tmp/flat-tree
(cd /tmp/flat-tree && env JOBS=9 BUILD_DIR=build-flat SERVEKIT_WERROR=OFF scripts/build.sh \
  -DSERVEKIT_TESTS=ON "-DCMAKE_CUDA_FLAGS=-DSERVEKIT_DIAG_FLAT_TMA=3" \
  "-DCMAKE_CXX_FLAGS=-DSERVEKIT_DIAG_FLAT_TMA=3" "${EXTRA[@]}" >"$W/build-flat.log" 2>&1
  echo $? >"$W/build-flat.rc") &
env JOBS=6 BUILD_DIR=$B SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF "${EXTRA[@]}" \
  >"$W/build.log" 2>&1 || { say "main build failed: $(tail -n 20 "$W/build.log")"; exit 1; }
wait
say "builds done: flat rc=$(cat "$W/build-flat.rc")"
FL=/tmp/flat-tree/build-flat
D="--quant bf16 --routing uniform --path dynamic"
# The rows first (they are the question), the tests after, boxed to what is left.
for round in 1 2; do
  # shellcheck disable=SC2086
  bench_row "ds-$round-main" -- --preset deepseek-v3 $D --tokens 2048,4096,8192
  # shellcheck disable=SC2086
  BIN=$FL/servekit bench_row "ds-$round-flat" -- --preset deepseek-v3 $D --tokens 2048,4096,8192
done
for round in 1 2; do
  for row in "q235 qwen3-235b-a22b 2048" "oss gpt-oss-120b 4096"; do
    read -r tag preset t <<<"$row"
    # shellcheck disable=SC2086
    bench_row "$tag-$round-main" -- --preset $preset $D --tokens $t
    # shellcheck disable=SC2086
    BIN=$FL/servekit bench_row "$tag-$round-flat" -- --preset $preset $D --tokens $t
  done
done
t=$(($(left) - 30)); ((t > 170)) && t=170
((t > 30)) && gtest_run flat "$FL" 'GroupedGemmCuda.*:MoECuda.*' $t
CS=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
if [[ -n $CS ]] && (($(left) > 80)); then
  timeout $(($(left) - 20)) "$CS" --tool memcheck "$FL/servekit_gpu_tests" \
    --gtest_filter='GroupedGemmCuda.BF16Swap*' >"$W/memcheck-flat.log" 2>&1
  say "memcheck flat rc=$? $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$W/memcheck-flat.log" | tr '\n' ' ')"
fi
say done
