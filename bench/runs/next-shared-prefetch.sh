#!/usr/bin/env bash
# Ran in session 20 (bench/runs/2026-12-02-s20-sp-scan.sh, results ab/2026-12-02-s20-sp-*); mode 1
# merged (32aaa57, default for fp8_block128 since adcd810), mode 2 (evict-last) dropped, so on
# main SERVEKIT_STATIC_SHARED_PREFETCH=2 is refused. Kept as the record of the prepared call.
# Prepared in session 19 (compile-checked for sm_90a, CPU suite passes; not GPU-run, so a patch:
# bench/runs/shared-prefetch.patch; docs/perf-notes.md, nineteenth pass, Next).
# The shared experts' W13 codes in L2 during the routing prefix. A shared expert's weights do
# not depend on the routing, and HBM is idle while the one-CTA route + plan kernel (and, for
# fp8_block128, the planner) run: ~8-19 us at one token. Under SERVEKIT_STATIC_SHARED_PREFETCH
# GEMM1's CTAs, launched by the prefix's trigger, each ask L2 for an equal slice of those codes
# (cp.async.bulk.prefetch.L2, 64 KB pieces) before their dependency wait; GEMM1 then reads the
# shared expert's units from L2. 1: normal priority; 2: evict-last, and GEMM2 returns the lines
# to normal priority after its wait (applypriority), so the layer leaves L2 as it found it.
# Unlike GEMM2's L2 prefetch (sessions 6 and 17: HBM was busy with GEMM1's tail), HBM has
# nothing else to do here. deepseek-v3's shared W13: 29.4 MB of fp8 (6.4 us at the read
# ceiling; its GEMM1 reads 264 MB at one token), kimi-k2's 14.7 MB of int4 (3.2 us).
# Prediction: under 2, -2 to -5 us on deepseek-v3 and -1 to -2.5 us on kimi-k2 at 1 and 8
# tokens, if the lines survive in L2 until read (the shared units' CTAs read them over all of
# GEMM1's ~55 us while ~230 MB of routed weights pass through the 50 MB L2: that is what 2 is
# for); under 1 less, only what is read early. With the early trigger (GEMM1 resident from the
# route + plan kernel's start) the prefetch has all of the prefix; that combination is run too.
# Presets without shared experts are unaffected (the switch needs num_shared > 0).
# 1. Here: git apply bench/runs/shared-prefetch.patch (on main), commit on a branch or keep in
#    the working tree; the device copies the working tree.
# 2. Device (carry [".deps"], ~8 min): bash bench/runs/next-shared-prefetch.sh
# 3. If the GPU tests pass and 2 (or 1) wins: merge the patch with that mode as the default
#    (static_moe.cu), docs/static_moe.md, then the full check (gpu-check.sh BENCH_SET=issue4).
# Output: OUT/shared-prefetch.txt, OUT/shared-prefetch.tgz.
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, bench_row
BUDGET_S=${BUDGET_S:-560}
work_dir shared-prefetch
grep -q shared_prefetch src/cuda/kernels/static/static_params.h ||
  { say "the patch is not applied"; exit 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv >"$W/gpu.txt"
build_dev "$W/build.log"
say "build done"
timeout 170 "$B/servekit_gpu_tests" --gtest_filter='*StaticMoECuda*:MoECuda.*' >"$W/tests.log" 2>&1
say "GPU tests rc=$? $(grep -E 'PASSED|FAILED' "$W/tests.log" | tr '\n' ' ')"
SK="--routing uniform --path static"
DS="--preset deepseek-v3 --quant fp8_block128 --tokens 1,8 $SK"
KIMI="--preset kimi-k2 --quant int4_w4a16 --tokens 1,8 $SK"
for round in 1 2; do
  for sp in 0 1 2; do
    # shellcheck disable=SC2086
    bench_row "r$round-deepseek-sp$sp" SERVEKIT_STATIC_SHARED_PREFETCH=$sp -- $DS
  done
  # shellcheck disable=SC2086
  bench_row "r$round-deepseek-sp2-early" SERVEKIT_STATIC_SHARED_PREFETCH=2 \
    SERVEKIT_DIAG_ROUTE_EARLY_TRIGGER=1 -- $DS
done
for sp in 0 2 1; do
  # shellcheck disable=SC2086
  bench_row "kimi-sp$sp" SERVEKIT_STATIC_SHARED_PREFETCH=$sp -- $KIMI
done
say "done"
