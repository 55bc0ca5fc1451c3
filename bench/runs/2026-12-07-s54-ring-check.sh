#!/usr/bin/env bash
# Session 54, the ring kernel's hand-back as merged (every lane arrives on the stage's empty
# barrier; 2026-12-07-s54-ring-sync.sh measured it as SERVEKIT_DIAG_RING_SYNC=2: racecheck clean,
# level on the bf16 rows): main built with the tests, then the static and layer GPU tests against
# the CPU reference, then racecheck of the bf16 ring kernel where the ring wraps (qwen3-30b-a3b,
# 8 and 33 tokens, uniform and all on one expert) and the memcheck of its GPU tests.
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-07-s54-ring-check.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-480}
B=build
work_dir_out s54-ring-check
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
build_tests "$W/build.log"
gtest_run static "$B" '*StaticMoECuda*:MoECuda*:MoELayer*:RoutePlanCuda.*' 240
timeout $(($(left) - 40)) "$SAN" --tool racecheck --error-exitcode 1 --print-limit 10 \
  "$B/servekit" bench moe --preset qwen3-30b-a3b --quant bf16 --tokens 8,33 --routing uniform,one \
  --path static --check-tokens 1 --repeats 1 --warmup 0 --threads 8 --peer off >"$W/racecheck-ring.log" 2>&1
say "racecheck ring rc=$? $(grep -hE 'RACECHECK SUMMARY' "$W/racecheck-ring.log" | tr -s ' ')"
memcheck_run bf16 "$B" '*StaticMoECuda*bf16*'
say done
