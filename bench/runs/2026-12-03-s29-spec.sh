#!/usr/bin/env bash
# RAN in session 29 at 8a291f7 (ab/2026-12-03-s29-spec): slower at every size; the code is now
# bench/runs/spec-prefetch.patch (git apply it to rerun; main has no switch).
# Session 29, call 1: the speculative routed prefetch (StaticGemmParams::spec_ids,
# docs/static_moe.md). GEMM1's CTAs launch at the route + plan kernel's late trigger, right after
# the routing, and wait through the plan, the task list and the hand-over (~5 us on the softmax
# presets at one token, ~9 on kimi-k2, ~13 with fp8_block128's planner) with HBM idle. With the
# ids already written (T * K <= 64, T <= 32), each CTA rebuilds the task list and its own range
# of steps and asks L2 for the first SERVEKIT_STATIC_ROUTED_PREFETCH_KB of it (0 = off) before
# its dependency wait. Rows at 1 and 8 tokens.
# Prediction (docs/perf-notes.md, twenty-ninth pass): -2 to -4 us at one token on the softmax
# presets, up to -6 on kimi-k2, less on deepseek-v3 (its shared W13 prefetch uses the window).
# Stages: build, the whole GPU suite (ctest -L gpu: the new spec cases of StaticMoECuda and every
# layer test at T * K <= 32 run with it on, the default 64 KB), then rows, static path, KB 0 / 64
# / 256, two rounds, the stamps (with the spec line: CTAs that asked, and the check of the
# rebuilt first step against the real one) and memcheck on a tiny forward.
# Device (carry [".deps"]): BUDGET_S=<s> SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-03-s29-spec.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, bench_row
BUDGET_S=${BUDGET_S:-540}
work_dir s29-spec
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv >"$W/gpu.txt" 2>&1
build_dev "$W/build.log"
say "build done"
if ((${RUN_TESTS:-1})); then
  t=$(($(left) - 200))
  ((t > 240)) && t=240
  timeout --kill-after=10 $t ctest --test-dir "$B" -L gpu --output-on-failure --timeout 120 \
    >"$W/tests.log" 2>&1
  say "gpu tests rc=$? $(grep -E 'tests passed|tests failed' "$W/tests.log")"
  grep -E "\(Failed\)|\(Timeout\)|\*\*\*Failed" "$W/tests.log" | head -20 | tee -a "$W/$WORK_NAME.txt"
fi
SK="--routing uniform --path static"
SMALL="--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1,8 $SK --then --preset gpt-oss-120b
  --quant mxfp4_w4a16 --tokens 1,8 $SK --then --preset qwen3-30b-a3b --quant bf16 --tokens 1,8 $SK
  --then --preset qwen3-235b-a22b --quant bf16 --tokens 1 $SK"
for round in 1 2; do
  for kb in 0 64 256; do
    # shellcheck disable=SC2086
    bench_row "r$round-small-kb$kb" SERVEKIT_STATIC_ROUTED_PREFETCH_KB=$kb -- $SMALL
  done
done
for kb in 0 64; do
  # shellcheck disable=SC2086
  bench_row "times-kb$kb" SERVEKIT_STATIC_ROUTED_PREFETCH_KB=$kb SERVEKIT_DIAG_STATIC_TIMES=1 -- \
    --preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1,8 $SK
  grep -E "diag-times" "$W/times-kb$kb.log" | sed "s/^/kb$kb /" >>"$W/$WORK_NAME.txt"
done
for kb in 0 64 256; do
  # shellcheck disable=SC2086
  bench_row "kimi-kb$kb" SERVEKIT_STATIC_ROUTED_PREFETCH_KB=$kb -- \
    --preset kimi-k2 --quant int4_w4a16 --tokens 1,8 $SK
done
for kb in 0 64; do
  # shellcheck disable=SC2086
  bench_row "ds-kb$kb" SERVEKIT_STATIC_ROUTED_PREFETCH_KB=$kb -- \
    --preset deepseek-v3 --quant fp8_block128 --tokens 1,8 $SK
done
t=$(($(left) - 10))
if ((t > 20)); then
  ((t > 60)) && t=60
  timeout --kill-after=5 $t compute-sanitizer --tool memcheck --error-exitcode 1 \
    "$B/servekit" moe --preset tiny --tokens 1 --quant int4_w4a16 --device cuda --check \
    >"$W/sanitizer.log" 2>&1
  say "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$W/sanitizer.log")"
fi
say "done"
