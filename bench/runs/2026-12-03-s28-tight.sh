#!/usr/bin/env bash
# Session 28, the check of main on what the lease budget left (three refused starts cost ~270 s):
# the build, the whole GPU suite (ctest -L gpu) and compute-sanitizer memcheck on a tiny layer
# forward, as far as BUDGET_S goes (CPU tests: CI and the CPU machine; the full
# scripts/gpu-check.sh needs ~430 s). Same commands as gpu-check's stages.
# Device (carry [".deps"]): BUDGET_S=<s> SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-03-s28-tight.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, left, say
BUDGET_S=${BUDGET_S:-340}
work_dir s28-tight
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw --format=csv >"$W/gpu.txt" 2>&1
build_dev "$W/build.log"
say "build done"
t=$(($(left) - 50))
((t > 240)) && t=240
timeout --kill-after=10 $t ctest --test-dir "$B" -L gpu --output-on-failure --timeout 120 \
  >"$W/tests.log" 2>&1
say "gpu tests rc=$? $(grep -E 'tests passed|tests failed' "$W/tests.log")"
grep -E "\(Failed\)|\(Timeout\)|\*\*\*Failed" "$W/tests.log" | head -20 | tee -a "$W/$WORK_NAME.txt"
t=$(($(left) - 10))
if ((t > 20)); then
  ((t > 90)) && t=90
  timeout --kill-after=5 $t compute-sanitizer --tool memcheck --error-exitcode 1 \
    "$B/servekit" moe --preset tiny --tokens 33 --quant bf16 --device cuda --check \
    >"$W/sanitizer.log" 2>&1
  say "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$W/sanitizer.log")"
fi
say "done"
