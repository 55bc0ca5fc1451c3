#!/usr/bin/env bash
# Session 46, any card: the int4 GEMM's 128- and 256-token tiles in clusters of two weight tiles
# that share the token tile by TMA multicast (SERVEKIT_GEMM_W4A16_CLUSTER=2; grouped_gemm_w4a16_
# n128c2.cu, _n256c2.cu), against the 1x1 tiles of the default.
#   1. build with tests; the int4 GEMM's tests (every tile, both clusters, against the reference;
#      the switches), the layer with it on and off, and the bf16/fp8 GEMM tests whose runners now
#      take their cluster occupancy from cutlass_setup.cuh (max_active_clusters).
#   2. qwen3-235b-a22b int4, dynamic, uniform, --peer off, 1024-8192 tokens, cluster 1 / 2, two
#      rounds; kimi-k2 int4 at 1024 and 4096 tokens, cluster 1 / 2.
#   3. the whole GPU suite in what is left of BUDGET_S.
# Why: a k-step moves 128 x 64 bf16 token values (16 KB) against 128 x 64 int4 codes (4 KB), and
# every 128-row weight tile of an expert reads the same token tile again from L2: at 8192 tokens
# GEMM1 reads ~13 GB of token tiles from L2. The bf16 copy's tile has 256 weight rows (half that).
# Prediction: 8-15% off the int4 GEMM at 2048-8192 tokens, level at 1024 and below.
# Device (carry [".deps"], ~8 min): SERVEKIT_COMMIT=<sha> BUDGET_S=480 bash bench/runs/2026-12-13-s46-w4a16-cluster.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-480}
B=build
work_dir cluster
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
build_tests "$W/build.log"
gtest_run w4a16 "$B" 'GroupedGemmCuda.W4A16*:GroupedGemmW4A16Layout.*:MoECuda.W4A16GemmOnAndOff:GroupedGemmCuda.BF16*:GroupedGemmCuda.FP8*' 150
for round in 1 2; do
  for c in 1 2; do
    bench_row "q235-c$c-r$round" SERVEKIT_GEMM_W4A16_CLUSTER=$c -- --preset qwen3-235b-a22b \
      --quant int4_w4a16 --routing uniform --path dynamic --tokens 1024,2048,4096,8192
  done
done
for c in 1 2; do
  bench_row "kimi-c$c" SERVEKIT_GEMM_W4A16_CLUSTER=$c -- --preset kimi-k2 --quant int4_w4a16 \
    --routing uniform --path dynamic --tokens 1024,4096
done
t=$(($(left) - 20))
((t > 60)) && gpu_suite $t
say done
