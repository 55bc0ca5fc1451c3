#!/usr/bin/env bash
# Session 60, from binaries built on the CPU machine (carry ["build-carry"], from
# scripts/carry-binaries.sh at the commit; the kernels are 54c42be's, main's):
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
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
prebuilt_start s60-rows
prebuilt_check issues $(($(left) - 95))
static=(--tokens "1,8,32" --routing uniform --path static)
presets=(
  "q235 --preset qwen3-235b-a22b --quant int4_w4a16"
  "q30 --preset qwen3-30b-a3b --quant bf16"
  "oss --preset gpt-oss-120b --quant mxfp4_w4a16"
)
for round in 1 2; do
  order=(new serial)
  ((round == 2)) && order=(serial new)
  for w in "${order[@]}"; do
    envs=(SERVEKIT_DIAG_STATIC_SERIAL_TAIL=0)
    [[ $w == serial ]] && envs=(SERVEKIT_DIAG_STATIC_SERIAL_TAIL=1)
    for p in "${presets[@]}"; do
      read -r -a a <<<"$p"
      BIN=$B/servekit bench_row "${a[0]}-$round-$w" "${envs[@]}" -- "${a[@]:1}" "${static[@]}"
    done
  done
done
say "done"
