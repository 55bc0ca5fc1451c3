#!/usr/bin/env bash
# Session 25, first device call (carry [".deps"], ~9.5 min):
#   1. build; the fused-activation GPU tests in the merged form (CUTLASS's store of D, then the
#      fused store; SERVEKIT_DYNAMIC_FUSED_ACT's default form, never run on the device)
#   2. the forms without a full D store on GroupedGemmCuda.BF16FusedActivation, each in a 15 s
#      box (the test passes in ~2 s; a hang is a timeout), all of them, for the whole picture
#      (SERVEKIT_DIAG_FUSED_EPI, sm90_act_epilogue.cuh): 5 store() with every subtile skipped,
#      6 one epilogue barrier, 8 a 2 us spin (a race that store()'s time hides), 7 store() of
#      one subtile. The first form that hangs gets cuda-gdb attached: the kernel's warps on
#      two SMs, each warp's PC and the instructions around it (which wait it sits in)
#   3. A/B on issue 3's rows, one binary: the pass, the merged fused form, and the best form of
#      step 2 that passed (qwen3-30b-a3b 2048/8192, mixtral-8x7b 2048, deepseek-v3 fp8 8192)
#   4. memcheck of the fused layer on the tiny preset (bf16, fp8_block128)
#   5. the whole GPU suite (ctest -L gpu, ~165 s) in what is left (the next call finishes it)
# Device: bash bench/runs/2026-12-02-s25-check.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-575}
work_dir s25-check
build_dev "$W/build.log"
say "build done"
T='GroupedGemmCuda.*FusedActivation*:MoECuda.FusedActivationMatchesThePass'
timeout 90 "$B/servekit_gpu_tests" --gtest_filter="$T" >"$W/tests-merged.log" 2>&1
say "merged form rc=$? $(grep -E '^\[  (PASSED|FAILED) |^\[ *(OK|FAILED) \]' "$W/tests-merged.log" | tr '\n' ' ')"

# cuda-gdb on a hung process: kernels, blocks, the warps of two SMs, and per warp its PC with
# the instructions before it. Each -ex runs even when an earlier one fails (a warp not there).
hang_dump() {
  local pid=$1 tag=$2 ex=()
  ex+=(-ex "set pagination off" -ex "set width 0" -ex "info cuda kernels")
  for sm in 0 1; do
    ex+=(-ex "cuda sm $sm" -ex "info cuda warps")
    for w in $(seq 0 11); do
      ex+=(-ex "echo === sm $sm warp $w\n" -ex "cuda sm $sm warp $w lane 0" -ex "x/6i \$pc-80"
        -ex "x/3i \$pc")
    done
  done
  ex+=(-ex "info cuda blocks" -ex "thread apply all bt 8")
  timeout 90 cuda-gdb -batch -p "$pid" "${ex[@]}" >"$W/gdb-$tag.log" 2>&1
  say "gdb $tag rc=$? ($(wc -l <"$W/gdb-$tag.log") lines)"
}
PASSED=()
GDB_DONE=0
for d in 5 6 8 7; do
  SERVEKIT_DIAG_FUSED_EPI=$d "$B/servekit_gpu_tests" \
    --gtest_filter='GroupedGemmCuda.BF16FusedActivation' >"$W/gemm-d$d.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 15); do
    sleep 1
    kill -0 "$pid" 2>/dev/null || break
  done
  if kill -0 "$pid" 2>/dev/null; then
    ((GDB_DONE)) || { hang_dump "$pid" "d$d"; GDB_DONE=1; }
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    say "form $d hung"
  else
    wait "$pid"
    rc=$?
    say "form $d rc=$rc $(grep -E '^\[  (PASSED|FAILED) ' "$W/gemm-d$d.log" | tr '\n' ' ')"
    ((rc == 0)) && PASSED+=("$d")
  fi
done
# Preference: no D at all (5, 6, 8), then one subtile of D (7).
MODE=
for d in 5 6 8 7; do
  [[ " ${PASSED[*]} " == *" $d "* ]] && { MODE=$d; break; }
done
if [[ -n $MODE ]]; then
  SERVEKIT_DIAG_FUSED_EPI=$MODE timeout 60 "$B/servekit_gpu_tests" --gtest_filter="$T" \
    >"$W/tests-d$MODE.log" 2>&1
  say "form $MODE tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests-d$MODE.log" | tr '\n' ' ')"
fi

ROWS=("q30 --preset qwen3-30b-a3b --quant bf16 --tokens 2048,8192"
  "mix --preset mixtral-8x7b --quant bf16 --tokens 2048"
  "dsf8 --preset deepseek-v3 --quant fp8_block128 --tokens 8192")
for row in "${ROWS[@]}"; do
  read -r tag args <<<"$row"
  # shellcheck disable=SC2086
  bench_row "$tag-pass" SERVEKIT_DYNAMIC_FUSED_ACT=0 -- $args --routing uniform --path dynamic
  # shellcheck disable=SC2086
  bench_row "$tag-fused" SERVEKIT_DYNAMIC_FUSED_ACT=1 -- $args --routing uniform --path dynamic
  if [[ -n $MODE ]]; then
    # shellcheck disable=SC2086
    bench_row "$tag-fused-d$MODE" SERVEKIT_DYNAMIC_FUSED_ACT=1 SERVEKIT_DIAG_FUSED_EPI=$MODE -- \
      $args --routing uniform --path dynamic
  fi
done
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for q in bf16 fp8_block128; do
  SERVEKIT_DYNAMIC_FUSED_ACT=1 timeout 60 "$SAN" --tool memcheck --error-exitcode 1 \
    "$B/servekit" moe --preset tiny --tokens 2000 --quant $q --device cuda --check --repeats 2 \
    >"$W/memcheck-fused-$q.log" 2>&1
  say "memcheck fused $q rc=$? $(grep -E 'ERROR SUMMARY|^check:' "$W/memcheck-fused-$q.log" | tr '\n' ' ')"
done

(($(left) > 60)) && {
  timeout $(($(left) - 5)) ctest --test-dir "$B" -L gpu --output-on-failure --timeout 100 \
    >"$W/gpu-tests.log" 2>&1
  say "gpu tests rc=$? $(grep -E 'tests passed|tests failed' "$W/gpu-tests.log")"
  grep -E '\(Failed\)|\(Timeout\)|\*\*\*Failed' "$W/gpu-tests.log" | head -n 10 | tee -a "$W/s25-check.txt"
}

say "done"
