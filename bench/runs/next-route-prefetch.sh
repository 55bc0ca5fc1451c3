#!/usr/bin/env bash
# RAN in session 21 (ab/2026-12-02-s21-rp-*): mode 2 was level at 16 CTAs and 0.5-1 us slower
# at 64 and 128 on kimi-k2; not merged (docs/perf-notes.md, twenty-first pass).
# Prepared in session 20 (compile-checked for sm_90a, CPU suite passes; not GPU-run, so a patch:
# bench/runs/route-prefetch.patch; docs/perf-notes.md, twentieth pass, Next 3).
# The shared experts' W13 in L2 from the route + plan launch. Session 20 merged the prefetch from
# GEMM1's CTAs (before their dependency wait) for fp8_block128 only: deepseek-v3 -2.0 to -2.7 us
# at one token and -6.0 to -6.8 at 8, but kimi-k2 int4, whose tasks are built in the route + plan
# launch (no planner: a shorter prefix), was ~1 us slower with it. Under
# SERVEKIT_STATIC_SHARED_PREFETCH=2, StaticSharedPrefetch::ctas extra CTAs of the route + plan
# launch (default 64; SERVEKIT_DIAG_ROUTE_PREFETCH_CTAS=1..256) each ask L2 for 16 KB pieces of
# the shared W13 right after their dependency wait, so the fetch runs during the routing (~8 us
# at one token) instead of GEMM1's start; where the tasks are not built there (fp8_block128,
# above 32 tokens, precomputed routing) GEMM1 does it as under 1.
# Prediction: kimi-k2 int4 -1 to -3 us at 1 and 8 tokens under 2 against 0 (its 14.7 MB are
# 3.2 us at the read ceiling), if the lines survive GEMM1's routed stream; no change under 2 on
# fp8_block128. The CTA count decides how many SMs issue (16 KB pieces: ~900 for kimi-k2).
# Also (Next 2): deepseek-v3 with the stamps (SERVEKIT_DIAG_STATIC_TIMES=1) under 0 and 1, to see
# where GEMM1's time moves with the prefetch.
# 1. Here: git apply bench/runs/route-prefetch.patch   (uncommitted: the device copies the tree)
# 2. Device (carry [".deps"], ~6 min): SERVEKIT_COMMIT=<sha>+rp bash bench/runs/next-route-prefetch.sh
# 3. If the GPU tests pass and 2 wins on kimi-k2: commit the patch, make 2 the default where the
#    tasks are built in the route launch (shared_prefetch_mode, static_moe.cu), docs/static_moe.md;
#    then the full check. Else git checkout the files.
# Output: OUT/route-prefetch.txt, OUT/route-prefetch.tgz.
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, bench_row
BUDGET_S=${BUDGET_S:-540}
work_dir route-prefetch
grep -q StaticSharedPrefetch src/cuda/kernels/static/static_tasks.h ||
  { say "the patch is not applied"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv >"$W/gpu.txt"
build_dev "$W/build.log"
say "build done"
timeout 200 "$B/servekit_gpu_tests" \
  --gtest_filter='MoECuda.SharedPrefetch*:*StaticMoECuda*:RoutePlanCuda.*:RoutingCuda.*' \
  >"$W/tests.log" 2>&1
say "GPU tests rc=$? $(grep -E 'PASSED|FAILED' "$W/tests.log" | tr '\n' ' ')"
SK="--routing uniform --path static"
KIMI="--preset kimi-k2 --quant int4_w4a16 --tokens 1,8 $SK"
DS="--preset deepseek-v3 --quant fp8_block128 --tokens 1,8 $SK"
for round in 1 2; do
  # shellcheck disable=SC2086
  bench_row "r$round-kimi-sp0" SERVEKIT_STATIC_SHARED_PREFETCH=0 -- $KIMI
  # shellcheck disable=SC2086
  bench_row "r$round-kimi-sp2" SERVEKIT_STATIC_SHARED_PREFETCH=2 -- $KIMI
  for ctas in 16 128; do
    # shellcheck disable=SC2086
    bench_row "r$round-kimi-sp2-c$ctas" SERVEKIT_STATIC_SHARED_PREFETCH=2 \
      SERVEKIT_DIAG_ROUTE_PREFETCH_CTAS=$ctas -- $KIMI
  done
done
# shellcheck disable=SC2086
bench_row "kimi-sp1" SERVEKIT_STATIC_SHARED_PREFETCH=1 -- $KIMI
for sp in 0 1; do
  # shellcheck disable=SC2086
  bench_row "deepseek-times-sp$sp" SERVEKIT_STATIC_SHARED_PREFETCH=$sp SERVEKIT_DIAG_STATIC_TIMES=1 -- $DS
  grep -E "diag-times" "$W/deepseek-times-sp$sp.log" | sed "s/^/sp$sp /" >>"$W/route-prefetch.txt"
done
say "done"
