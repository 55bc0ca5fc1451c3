#!/usr/bin/env bash
# Session 37, call 2: bf16's flat-descriptor producer (sm90_flat_tma_mainloop.cuh) on every bf16
# tile against main, one lease (docs/perf-notes.md, thirty-seventh pass). Ran at 39e47bb, where
# main had no flat tile and -DSERVEKIT_DIAG_FLAT_TMA=1 meant every bf16 tile; since then the
# default (1) is the ping-pong swap tile only and 2 means every bf16 tile, which this script now
# asks for (so at HEAD main already has the ping-pong swap tile flat).
#   1. main (tests off) and the flagged tree (tests on), built side by side
#   2. on the flagged build: GroupedGemmCuda.* and MoECuda.* (the layer against the CPU reference,
#      NaN containment, graph replay)
#   3. bf16 dynamic rows, main / flat, qwen3-30b 2048; the group-switch probe
#      (bench/tools/gemm_groups.cpp) on both builds; memcheck of the swap GEMM tests on the flagged
#      build; then, as the budget allows: qwen3-30b 2048 again, 8192; qwen3-235b 2048;
#      mixtral-8x7b 2048; deepseek-v3 8192 (one round each)
# Device (carry [".deps"], ~9 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-05-s37-flat.sh
# TESTS overrides the flagged build's gtest filter (a short lease: the GEMM tests and the layer's
# swap, fused-activation and NaN tests).
# Output: OUT/flat.txt, OUT/flat.tgz.
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-570}
work_dir flat
build_beside flat -DSERVEKIT_DIAG_FLAT_TMA=2
FLB=$FB
gtest_run flat "$FLB" "${TESTS:-GroupedGemmCuda.*:MoECuda.*}" 150
rows() {  # rows "TAG PRESET TOKENS"...: bf16 dynamic, main then flat
  local row tag preset t
  for row in "$@"; do
    read -r tag preset t <<<"$row"
    Q="--preset $preset --quant bf16 --routing uniform --path dynamic --tokens $t"
    # shellcheck disable=SC2086
    bench_row "$tag-main" -- $Q
    # shellcheck disable=SC2086
    BIN=$FLB/servekit bench_row "$tag-flat" -- $Q
  done
}
rows "q30-2048a qwen3-30b-a3b 2048"
probe() {  # probe TAG BUILD
  gemm_probe_build "$W/probe-$1" "$2" || return
  SERVEKIT_GEMM_TILE=swap timeout 90 "$W/probe-$1" >"$W/probe-$1.txt" 2>&1
  say "probe $1 rc=$?"
  sed "s/^/$1 /" "$W/probe-$1.txt" >>"$W/$WORK_NAME.txt"
}
probe main "$B"
probe flat "$FLB"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if (($(left) > 90)); then
  timeout 60 "$SAN" --tool memcheck --error-exitcode 9 "$FLB/servekit_gpu_tests" \
    --gtest_filter='GroupedGemmCuda.BF16SwapPingpong:GroupedGemmCuda.BGroupStride' >"$W/memcheck-flat.log" 2>&1
  say "flat memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$W/memcheck-flat.log" | tail -n 1)"
fi
rows "q30-2048b qwen3-30b-a3b 2048" "q30-8192 qwen3-30b-a3b 8192" "q235-2048 qwen3-235b-a22b 2048" \
  "mix-2048 mixtral-8x7b 2048" "ds-8192 deepseek-v3 8192"
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv >>"$W/$WORK_NAME.txt" 2>&1
say "done"
