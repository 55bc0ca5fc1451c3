#!/usr/bin/env bash
# RAN in session 21 (ab/2026-12-02-s21-order-*): static tests 3/3; m1 9681.0, n1 9785.3, m2 9603.0 us:
# level, the patch not merged.
# Session 21, the last ~4 device minutes: (1) the three static-path GPU test cases the check call's
# stage cap cut (same kernels as passed at 384dc9e); (2) the grouped GEMMs' tile order at 8192
# tokens under SERVEKIT_DIAG_GEMM_ORDER (bench/runs/gemm-order.patch applied to the tree:
# raster m|n and swizzle 1|2|4|8; default m1), deepseek-v3 fp8_block128 dynamic. ncu put GEMM1
# at 86% of L2 throughput with ~13.5 GB of DRAM traffic against ~8.7 GB of operands
# (docs/perf-notes.md, twenty-first pass): if an expert's M tiles do not read a B tile at the
# same time, another order moves fewer bytes. Prediction: within +-3% (the default order already
# walks an expert's M tiles next to each other).
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha>+order bash bench/runs/2026-12-02-s21-order.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, bench_row
BUDGET_S=${BUDGET_S:-190}
work_dir order
W="$OUT/order" && mkdir -p "$W"  # rows land under OUT even if the lease ends mid-call
build_dev "$W/build.log"
say "build done"
timeout 40 "$B/servekit_gpu_tests" --gtest_filter='Formats/StaticMoECuda.MatchesHostOnDequantizedWeights/bf16_swiglu_H512_I384_T8_skewed_bias_y:Formats/StaticMoECuda.MatchesHostOnDequantizedWeights/fp8_block128_swiglu_H1024_I512_T32_uniform_bias_y:Formats/StaticMoECuda.MatchesHostOnDequantizedWeights/nvfp4_w4a16_geglu_H1024_I1856_T17_skewed_bias' \
  >"$W/tests.log" 2>&1
say "static tests rc=$? $(grep -E 'PASSED|FAILED' "$W/tests.log" | tr '\n' ' ')"
for order in n1 m2; do
  SERVEKIT_DIAG_GEMM_ORDER=$order timeout 30 "$B/servekit_gpu_tests" \
    --gtest_filter='GroupedGemmCuda.FP8Block128:GroupedGemmCuda.BF16' >"$W/tests-$order.log" 2>&1
  say "GEMM tests under $order rc=$? $(grep -E 'PASSED|FAILED' "$W/tests-$order.log" | tr '\n' ' ')"
done
DS="--preset deepseek-v3 --quant fp8_block128 --tokens 8192 --routing uniform --path dynamic"
for order in m1 n1 m2; do
  # shellcheck disable=SC2086
  bench_row "ds-$order" SERVEKIT_DIAG_GEMM_ORDER=$order -- $DS
done
say "done"
