#!/usr/bin/env bash
# Session 46, any card: the int4 GEMM's 144-token tile against the 128-token one
# (SERVEKIT_GEMM_W4A16_TILE forces either; the pick does not take 144 yet).
#   1. build with tests; the int4 GEMM's tests (all four tiles against the reference, the switch).
#   2. qwen3-235b-a22b int4, dynamic, uniform, --peer off, 1024-8192 tokens (64-512 rows per
#      expert), tiles 128 / 144 / auto, two rounds; kimi-k2 int4 at 4096 and 8192 tokens (85 and
#      171 rows per expert), 128 / 144.
# Prediction (padding model, expected_tile_padding, with conversion ~half an MMA tile's cost, from
# call 1's 128-vs-256 rows): 144 ~20% under 128 in the GEMMs at 128 rows per expert (2048 tokens:
# one 144-token tile where 128-token tiles spill into a second half the time), ~10% at 256 rows,
# ~5-8% over 128 at 64 rows (one tile either way, 12% more MMA), level at 512.
# Device (carry [".deps"], ~5 min): SERVEKIT_COMMIT=<sha> BUDGET_S=400 bash bench/runs/2026-12-13-s46-w4a16-n144.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-400}
B=build
work_dir n144
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
build_tests "$W/build.log"
gtest_run w4a16 "$B" 'GroupedGemmCuda.W4A16*:GroupedGemmW4A16Layout.*' 150
for round in 1 2; do
  for tile in 128 144 auto; do
    bench_row "q235-$tile-r$round" SERVEKIT_GEMM_W4A16_TILE=$tile -- --preset qwen3-235b-a22b \
      --quant int4_w4a16 --routing uniform --path dynamic --tokens 1024,2048,4096,8192
  done
done
for tile in 128 144; do
  bench_row "kimi-$tile" SERVEKIT_GEMM_W4A16_TILE=$tile -- --preset kimi-k2 --quant int4_w4a16 \
    --routing uniform --path dynamic --tokens 4096,8192
done
say done
