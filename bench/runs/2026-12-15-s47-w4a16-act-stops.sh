#!/usr/bin/env bash
# Session 47, second call on the warm H100 after 2026-12-15-s47-w4a16-act.sh (same build): the
# fused int4 activation measured level with the pass there (qwen3-235b int4, 1024-8192 tokens,
# two rounds, 4096 +-7% round to round). Where the time goes: the layer fused / with the pass at
# 4096 and 8192 tokens, four rounds alternating, and the stop rows (SERVEKIT_DIAG_DYNAMIC_STOP)
# at 8192: stop 2 (route, plan, gather), 3 (GEMM1; fused: with the activation), 4 (the pass).
# Prediction: the pass costs ~150 us at 8192 tokens (0.6 GB at ~4 TB/s) and the fused epilogue
# ~25-50 us more than CUTLASS's TMA store: the fused layer 2-3% faster.
# Device (carry [".deps"], warm, ~2 min): SERVEKIT_COMMIT=<sha> BUDGET_S=240 bash bench/runs/2026-12-15-s47-w4a16-act-stops.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-240}
B=build
work_dir w4a16stops
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
build_tests "$W/build.log"
q235=(--preset qwen3-235b-a22b --quant int4_w4a16 --routing uniform --path dynamic)
for round in 0 1 2 3; do
  bench_row "q235-fused-$round" SERVEKIT_DYNAMIC_FUSED_ACT=1 -- "${q235[@]}" --tokens 4096,8192
  bench_row "q235-pass-$round" SERVEKIT_DYNAMIC_FUSED_ACT=0 -- "${q235[@]}" --tokens 4096,8192
done
for stop in 2 3; do
  bench_row "stop$stop-fused" SERVEKIT_DYNAMIC_FUSED_ACT=1 SERVEKIT_DIAG_DYNAMIC_STOP=$stop -- "${q235[@]}" --tokens 8192
done
for stop in 3 4; do
  bench_row "stop$stop-pass" SERVEKIT_DYNAMIC_FUSED_ACT=0 SERVEKIT_DIAG_DYNAMIC_STOP=$stop -- "${q235[@]}" --tokens 8192
done
say done
