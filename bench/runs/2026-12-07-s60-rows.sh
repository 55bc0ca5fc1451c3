#!/usr/bin/env bash
# Session 60, from binaries built on the CPU machine (carry ["build-carry"], from
# scripts/carry-binaries.sh at the commit; main's kernels are 54c42be's). Not yet run (no H200
# came in session 60):
#   1. on an H200 only (ends at once on any other card): the issues' rows of record
#      (scripts/gpu-check.sh BENCH_SET=issues, RUN_TESTS=0; ~254 s in session 57), boxed to what
#      is left less ~95 s for 2. They carry session 59's batched unit tail (982a809), which no
#      H200 has run.
#   2. the batched tail against its serial switch (SERVEKIT_DIAG_STATIC_SERIAL_TAIL=1, the old
#      loops, same bits) in the same binary, on the H200: qwen3-235b int4, qwen3-30b bf16 and
#      gpt-oss mxfp4, static path, 1 / 8 / 32 tokens, two rounds in reversed order (~80 s).
#      Prediction (the H100 of session 59): batched 2-5% faster at one token, ~1% at 8 and 32.
#      If the H200 agrees, the switch and its two serial functions can go.
# Device (on the lease of s59-suite's call, or alone):
#   SERVEKIT_COMMIT=<sha> BUDGET_S=420 bash bench/runs/2026-12-07-s60-rows.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-420}
B=${PREBUILT:-build-carry}
h200_only
prebuilt_start s60-rows
prebuilt_check issues $(($(left) - 95))
static_ab_presets
for round in 1 2; do
  order=(new serial)
  ((round == 2)) && order=(serial new)
  for w in "${order[@]}"; do
    envs=(SERVEKIT_DIAG_STATIC_SERIAL_TAIL=0)
    [[ $w == serial ]] && envs=(SERVEKIT_DIAG_STATIC_SERIAL_TAIL=1)
    BIN=$B/servekit bench_row "q235-$round-$w" "${envs[@]}" -- "${q235[@]}"
    BIN=$B/servekit bench_row "q30-$round-$w" "${envs[@]}" -- "${q30[@]}"
    BIN=$B/servekit bench_row "oss-$round-$w" "${envs[@]}" -- "${oss[@]}"
  done
done
say "done"
