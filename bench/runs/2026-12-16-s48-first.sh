#!/usr/bin/env bash
# Session 48, first call, any card: session 47's swap-AB fused store (merged from s47-swap-store,
# never run on a GPU) and the same treatment of the 128x256 tile's fused store (8c129cb).
#   1. the fused tests of every swap-AB and 128x256 tile (bit for bit against the pass: three
#      activations, with and without a bias, bf16 / e4m3 / e4m3-as-bf16) and the int4 layer fused
#      and not against the CPU reference;
#   2. qwen3-235b int4 at 8192 tokens, GEMM1 with the activation (stop 3) and alone (the pass's
#      stop 3), the layer fused and not at 4096 and 8192 tokens (session 47's H100: stop 3 fused
#      2750.1, alone 2485.2 us); the same four rows of deepseek-v3 fp8_block128 at 8192 tokens;
#      then a second round of both while the budget lasts.
#   3. the whole GPU suite with what is left (~245 s on an H100; 2026-12-16-s48-short.sh is the
#      shorter call).
# Prediction: suite 160/160; q235 int4 GEMM1 fused ~100 us faster at 8192 on an H100 (~2650 us), the layer
# 1.5-2% ahead of the pass; deepseek-v3 fp8 GEMM1 fused ~1% faster than before (the 128x256
# store lost its spills and ~44% of its instructions; its epilogue is ~3% of a 62 us tile).
# Not run in session 48 (no machine started). Main backs the stores out (4ab0bbb): first
# `git merge s48-stores` (they come back on main), commit, then
# Device (carry [".deps"], ~10 min with the start): SERVEKIT_COMMIT=<sha> BUDGET_S=520 bash bench/runs/2026-12-16-s48-first.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-520}
B=build
work_dir first
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
build_tests "$W/build.log"
# FUSED_TESTS=0 leaves them to the suite (a short budget: the suite runs them too).
((${FUSED_TESTS:-1})) && gtest_run fused "$B" '*FusedActivation*:MoECuda.W4A16GemmOnAndOff' 60
q235=(--preset qwen3-235b-a22b --quant int4_w4a16 --routing uniform --path dynamic)
ds=(--preset deepseek-v3 --quant fp8_block128 --routing uniform --path dynamic --tokens 8192)
# The stop rows first; the layer rows and a second round only while the suite's ~250 s still fit.
for round in 0 1; do
  ((round == 0 || $(left) > 330)) || break
  bench_row "stop3-fused-$round" SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${q235[@]}" --tokens 8192
  bench_row "stop3-pass-$round" SERVEKIT_DYNAMIC_FUSED_ACT=0 SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${q235[@]}" --tokens 8192
  bench_row "ds-stop3-fused-$round" SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${ds[@]}"
  bench_row "ds-stop3-pass-$round" SERVEKIT_DYNAMIC_FUSED_ACT=0 SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${ds[@]}"
  (($(left) > 300)) || break
  bench_row "q235-fused-$round" -- "${q235[@]}" --tokens 4096,8192
  bench_row "q235-pass-$round" SERVEKIT_DYNAMIC_FUSED_ACT=0 -- "${q235[@]}" --tokens 4096,8192
  bench_row "ds-fused-$round" -- "${ds[@]}"
  bench_row "ds-pass-$round" SERVEKIT_DYNAMIC_FUSED_ACT=0 -- "${ds[@]}"
done
gpu_suite $(($(left) - 10))
say done
