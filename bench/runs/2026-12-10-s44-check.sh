#!/usr/bin/env bash
# Prepared in session 43 (not yet run): the first call of the next session, on whatever card.
#   1. build with tests (every core); the whole GPU suite (ctest -L gpu), time-boxed. Not yet run
#      on the per-card k-step of the ping-pong swap tile (both steps compiled, create() builds
#      swap_pp_tile_k(device): 128 on an H100, 64 elsewhere).
#   2. qwen3-30b bf16 dynamic, uniform, --peer off, two rounds, SERVEKIT_GEMM_PP_TILE_K=64 / 128 /
#      auto at 2048, 4096 and 8192 tokens: the runtime switch reproduces the build-flag A/Bs
#      (H100: 128 4% faster at 2048-4096, level at 8192; H200: 64 faster at 4096-8192), and auto
#      matches the faster step of this card.
#   3. issue 3's rows with the cuBLAS peer (issue3_rows): on an H200 these are the target rows.
# Prediction: suite 151/151; auto equal (within 1%) to the card's step.
# Device (carry [".deps"], ~9 min): SERVEKIT_COMMIT=<sha> BUDGET_S=570 bash bench/runs/2026-12-10-s44-check.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-570}
B=build
work_dir check
nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | tee -a "$W/$WORK_NAME.txt"
build_tests "$W/build.log"
t=$(($(left) - 230)); ((t > 260)) && t=260
gpu_suite $t
D="--preset qwen3-30b-a3b --quant bf16 --routing uniform --path dynamic"
for round in 1 2; do
  for k in 64 128 auto; do
    # shellcheck disable=SC2086
    bench_row "q30-$round-$k" SERVEKIT_GEMM_PP_TILE_K=$k -- $D --tokens 2048,4096,8192
  done
done
issue3_rows
say done
