#!/usr/bin/env bash
# Prepared in session 46 (not yet run): the first call of the next session, whatever card comes.
#   On an H200: issues 3's and 4's rows with the sanitizer stages (2026-12-06-s40-h200-rows.sh:
#     scripts/gpu-check.sh BENCH_SET=issues RUN_TESTS=sanitize); the first H200 rows since session
#     43 (sessions 44-46 changed the bias routers' "uniform" rows, the pair pick's default, the
#     4-bit cutovers and the dynamic path's int4 GEMM).
#   On anything else: the whole GPU suite at HEAD (the int4 GEMM's 2x1 clusters became the default
#     in daa564a after call 4 ran them forced; 04b7405 shares the environment readers), then the
#     int4 GEMM's 128/256 bound with clusters: qwen3-235b int4 at 2048-8192 tokens, the tile forced
#     to 128 and to 256 (kW4A16MidTileMaxRows = 384 was fitted with single tiles).
# Prediction: suite 158/158. With clusters the 256 tile still loses at 4096 (half the experts spill
# into a second, nearly empty tile) and wins at 8192: the bound stays between 256 and 512 rows.
# Device (carry [".deps"], ~9 min): SERVEKIT_COMMIT=<sha> BUDGET_S=560 bash bench/runs/2026-12-14-s46-next.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-560}
name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
if [[ $name == *H200* ]]; then
  exec env BUDGET_S="$BUDGET_S" bash bench/runs/2026-12-06-s40-h200-rows.sh
fi
B=build
work_dir next
say "$name"
build_tests "$W/build.log"
t=$(($(left) - 90)); ((t > 330)) && t=330
gpu_suite $t
for tile in 128 256; do
  bench_row "q235-pairs-$tile" SERVEKIT_GEMM_W4A16_TILE=$tile -- --preset qwen3-235b-a22b \
    --quant int4_w4a16 --routing uniform --path dynamic --tokens 2048,4096,8192
done
say done
