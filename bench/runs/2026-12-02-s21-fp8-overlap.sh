#!/usr/bin/env bash
# RAN in session 21 (ab/2026-12-02-s21-fp8ov-*); the overlap was merged and the serial switch
# removed afterwards: to rerun, git apply bench/runs/fp8-serial-promotion.patch first.
# Session 21 (issue 3): fp8_block128's 128-row grouped-GEMM tile with the per-128-K promotion
# overlapped with the next k-tile's wgmma (src/cuda/kernels/gemm/sm90_blockwise_overlap.cuh)
# against CUTLASS's own mainloop (SERVEKIT_DIAG_FP8_PROMOTION=serial), one binary, same lease.
# Prediction (docs/perf-notes.md, twenty-first pass): the serial mainloop leaves the tensor cores
# idle for ~64 FFMA + the scale loads per thread per k-tile, up to ~30% of the mainloop, so the
# deepseek-v3 fp8_block128 dynamic layer at 8192 tokens 10.2 ms -> 8.0-9.0 ms; nothing at <= 26
# rows per expert (the 64-row ping-pong tile keeps CUTLASS's mainloop).
# Device (carry [".deps"], ~7 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-02-s21-fp8-overlap.sh
# Output: OUT/fp8-overlap.txt, OUT/fp8-overlap.tgz (rows, test and sanitizer logs, SASS excerpt).
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, bench_row
BUDGET_S=${BUDGET_S:-540}
work_dir fp8-overlap
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv >"$W/gpu.txt"
build_dev "$W/build.log"
say "build done"
timeout 150 "$B/servekit_gpu_tests" --gtest_filter='GroupedGemmCuda.*:MoECuda.*FP8Block128*' \
  >"$W/tests.log" 2>&1
say "GPU tests rc=$? $(grep -E 'PASSED|FAILED' "$W/tests.log" | tr '\n' ' ')"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/compute-sanitizer/compute-sanitizer 2>/dev/null | head -1)
if [[ -n $SAN ]]; then
  timeout 90 "$SAN" --tool memcheck "$B/servekit_gpu_tests" \
    --gtest_filter='GroupedGemmCuda.FP8Block128KTileCounts' >"$W/memcheck.log" 2>&1
  say "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$W/memcheck.log")"
fi
OBJ=$(find "$B" -name 'grouped_gemm_fp8_block128.cu.o' | head -1)
CUOBJ=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)
if [[ -n $OBJ && -n $CUOBJ ]]; then
  "$CUOBJ" -sass "$OBJ" 2>&1 | grep -nE 'HGMMA|WARPGROUP|BRA|BAR|SYNCS' >"$W/sass-fp8-block128.txt"
  say "sass lines $(wc -l <"$W/sass-fp8-block128.txt")"
fi
DS="--preset deepseek-v3 --quant fp8_block128 --routing uniform --path dynamic"
for round in 1 2; do
  for mode in overlap serial; do
    # shellcheck disable=SC2086
    bench_row "r$round-ds-$mode" SERVEKIT_DIAG_FP8_PROMOTION=$mode -- $DS --tokens 1024,8192
  done
done
# shellcheck disable=SC2086
bench_row "ds-overlap-2048" SERVEKIT_DIAG_FP8_PROMOTION=overlap -- $DS --tokens 2048,4096
# shellcheck disable=SC2086
bench_row "ds-serial-2048" SERVEKIT_DIAG_FP8_PROMOTION=serial -- $DS --tokens 2048,4096
say "done"
