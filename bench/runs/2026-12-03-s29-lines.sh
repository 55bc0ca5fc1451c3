#!/usr/bin/env bash
# RAN in session 29 at ceacb64 (ab/2026-12-03-s29-lines): line prefetches slower still; the code is
# now bench/runs/spec-prefetch.patch (git apply it to rerun).
# Session 29, call 2. Call 1 (2026-12-03-s29-spec.sh) measured the speculative routed prefetch
# 5-7 us SLOWER at one token and ~10 at 8: the CTA stamps put GEMM1's release 8.7-12 us after the
# route + plan kernel's last stamp (2 us without), while everything after the release got ~4 us
# faster. So the route + plan grid's completion waits for the bulk (TMA) prefetches GEMM1's CTAs
# issued, which the TMA units process slowly. Here: the same prefetch as per-thread 128-byte line
# prefetches through the load path (SERVEKIT_DIAG_SPEC_LINES=1), and smaller bulk ones, with the
# stamps (the release delay) and rows. GPU tests: the static and layer tests (the line variant
# has its own case in StaticMoECuda).
# Device (carry [".deps"]): BUDGET_S=<s> SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-03-s29-lines.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, bench_row
BUDGET_S=${BUDGET_S:-420}
work_dir s29-lines
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv >"$W/gpu.txt" 2>&1
build_dev "$W/build.log"
say "build done"
timeout 150 "$B/servekit_gpu_tests" --gtest_filter='*StaticMoECuda*:MoECuda.*' >"$W/tests.log" 2>&1
say "GPU tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests.log" | tr '\n' ' ')"
SK="--routing uniform --path static"
Q="--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1,8 $SK"
for v in "kb0 SERVEKIT_STATIC_ROUTED_PREFETCH_KB=0" "bulk16 SERVEKIT_STATIC_ROUTED_PREFETCH_KB=16" \
  "lines64 SERVEKIT_STATIC_ROUTED_PREFETCH_KB=64 SERVEKIT_DIAG_SPEC_LINES=1" \
  "lines16 SERVEKIT_STATIC_ROUTED_PREFETCH_KB=16 SERVEKIT_DIAG_SPEC_LINES=1"; do
  set -- $v
  tag=$1
  shift
  # shellcheck disable=SC2086
  bench_row "times-$tag" "$@" SERVEKIT_DIAG_STATIC_TIMES=1 -- $Q
  grep -E "diag-times" "$W/times-$tag.log" | sed "s/^/$tag /" >>"$W/$WORK_NAME.txt"
done
SMALL="--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1,8 $SK --then --preset gpt-oss-120b
  --quant mxfp4_w4a16 --tokens 1,8 $SK --then --preset qwen3-30b-a3b --quant bf16 --tokens 1,8 $SK
  --then --preset qwen3-235b-a22b --quant bf16 --tokens 1 $SK"
for round in 1 2; do
  for v in "kb0 SERVEKIT_STATIC_ROUTED_PREFETCH_KB=0" \
    "lines64 SERVEKIT_STATIC_ROUTED_PREFETCH_KB=64 SERVEKIT_DIAG_SPEC_LINES=1" \
    "lines16 SERVEKIT_STATIC_ROUTED_PREFETCH_KB=16 SERVEKIT_DIAG_SPEC_LINES=1"; do
    set -- $v
    tag=$1
    shift
    # shellcheck disable=SC2086
    bench_row "r$round-small-$tag" "$@" -- $SMALL
  done
done
for v in "kb0 SERVEKIT_STATIC_ROUTED_PREFETCH_KB=0" \
  "lines64 SERVEKIT_STATIC_ROUTED_PREFETCH_KB=64 SERVEKIT_DIAG_SPEC_LINES=1"; do
  set -- $v
  tag=$1
  shift
  # shellcheck disable=SC2086
  bench_row "kimi-$tag" "$@" -- --preset kimi-k2 --quant int4_w4a16 --tokens 1,8 $SK
done
say "done"
