#!/usr/bin/env bash
# Session 33, last call (~340 s of device budget left); ran at a6f3419 (ab/2026-12-03-s33-prefetch-pct):
# within the spread, not merged; main reverted, the knob is bench/runs/shared-prefetch-pct.patch,
# which this script now applies. The prefetch stamps
# (ab/2026-12-03-s33-prefetch-stamps) showed fp8_block128's shared W13 prefetch (29 MB of bulk L2
# prefetches from GEMM1's CTAs at the trigger) slowing the one-token prefix's cold code by ~3 us,
# while its bytes save GEMM1 more. Does asking for less of it (the first N percent,
# SERVEKIT_DIAG_SHARED_PREFETCH_PCT) keep the saving and cost the prefix less? deepseek-v3 at one
# token, 100 / 50 / 25 %, then kimi-k2 (prefetch off by default) off / 50 %, then deepseek-v3 100 /
# 50 % again. Rows are checked against the CPU reference on their token (bench_row).
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha>+pct bash bench/runs/2026-12-03-s33-prefetch-pct.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, bench_row, work_dir
BUDGET_S=${BUDGET_S:-235}
work_dir prefetch-pct
if ! grep -q shared_prefetch_pct src/cuda/kernels/static/static_params.h; then
  patch -p1 <bench/runs/shared-prefetch-pct.patch >"$W/patch.log" 2>&1 || { say "patch failed"; exit 1; }
fi
build_dev "$W/build.log"
say "build done"
SK="--tokens 1 --routing uniform --path static"
DS="--preset deepseek-v3 --quant fp8_block128 $SK"
KIMI="--preset kimi-k2 --quant int4_w4a16 $SK"
# shellcheck disable=SC2086
{
  bench_row ds-100 SERVEKIT_DIAG_SHARED_PREFETCH_PCT=100 -- $DS
  bench_row ds-50 SERVEKIT_DIAG_SHARED_PREFETCH_PCT=50 -- $DS
  bench_row ds-25 SERVEKIT_DIAG_SHARED_PREFETCH_PCT=25 -- $DS
  bench_row kimi-off SERVEKIT_STATIC_SHARED_PREFETCH=0 -- $KIMI
  bench_row kimi-50 SERVEKIT_STATIC_SHARED_PREFETCH=1 SERVEKIT_DIAG_SHARED_PREFETCH_PCT=50 -- $KIMI
  bench_row ds-100b SERVEKIT_DIAG_SHARED_PREFETCH_PCT=100 -- $DS
  bench_row ds-50b SERVEKIT_DIAG_SHARED_PREFETCH_PCT=50 -- $DS
}
say "done"
