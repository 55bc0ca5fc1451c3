#!/usr/bin/env bash
# Session 54, the ring kernel's hand-back as merged (every lane arrives on the stage's empty
# barrier; 2026-12-07-s54-ring-sync.sh measured it as SERVEKIT_DIAG_RING_SYNC=2: racecheck clean,
# level on the bf16 rows): main built with the tests, then the static and layer GPU tests against
# the CPU reference, then racecheck of the bf16 ring kernel where the ring wraps (qwen3-30b-a3b,
# 8 and 33 tokens uniform, 33 all on one expert), then synccheck and racecheck of the dynamic
# path's GEMMs where their pipelines wrap.
# Ran once, session 54 at 9f2280a on an H100 (BUDGET_S=430, 333 s; bench/results/h100/ab/
# 2026-12-07-s54-ring-check): static and layer GPU tests 76/76; racecheck of the ring 0 hazards
# (three rows ok); synccheck of the dynamic rows 0 errors; racecheck of the dynamic rows 8 hazard
# sites, all in the fp8_block128 row (CUTLASS's ping-pong blockwise mainloop: its cp.async scale
# copies against the consumers' scale reads; docs/perf-notes.md, fifty-fourth pass), bf16 none.
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-07-s54-ring-check.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-480}
B=build
work_dir_out s54-ring-check
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
SAN=$(sanitizer_path)
build_tests "$W/build.log"
gtest_run static "$B" '*StaticMoECuda*:MoECuda*:MoELayer*:RoutePlanCuda.*' 240
timeout $(($(left) - 40)) "$SAN" --tool racecheck --error-exitcode 1 --print-limit 10 \
  "$B/servekit" bench moe --preset qwen3-30b-a3b --quant bf16 --tokens 8,33 --routing uniform \
  --path static --check-tokens 1 --then --preset qwen3-30b-a3b --quant bf16 --tokens 33 \
  --routing one --path static --check-tokens 1 --repeats 1 --warmup 0 --threads 8 --peer off \
  >"$W/racecheck-ring.log" 2>&1
say "racecheck ring rc=$? $(grep -hE 'RACECHECK SUMMARY' "$W/racecheck-ring.log" | tr -s ' ')"
# The dynamic path's GEMM pipelines where they wrap (K = 2048: 16-32 k-tiles against 4-7 stages;
# the tiny preset's K = 256 never wraps them): our mainloops (sm90_blockwise_halves, the flat TMA
# producer) and epilogues, synccheck first (seconds), then racecheck with what is left.
DYN=(--preset qwen3-30b-a3b --quant bf16,fp8_block128 --tokens 256 --routing uniform --path dynamic
  --check-tokens 1 --repeats 1 --warmup 0 --threads 8 --peer off)
for tool in synccheck racecheck; do
  (($(left) < 50)) && { say "$tool dynamic skipped (budget)"; continue; }
  timeout $(($(left) - 25)) "$SAN" --tool $tool --error-exitcode 1 --print-limit 10 \
    "$B/servekit" bench moe "${DYN[@]}" >"$W/$tool-dynamic.log" 2>&1
  say "$tool dynamic rc=$? $(grep -hE '(ERROR|RACECHECK) SUMMARY' "$W/$tool-dynamic.log" | tr -s ' ')"
done
say done
