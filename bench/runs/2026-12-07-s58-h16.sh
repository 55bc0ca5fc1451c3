#!/usr/bin/env bash
# Session 58: GEMM1 of the static path writes the a16 formats' h as bf16 and GEMM2 stages it with
# the batched copy (SERVEKIT_STATIC_H16=1, the new default) against fp32 h quantized to bf16 while
# staging (=0, as before): one binary, the two alternated per process, two rounds, static path,
# uniform routing, 1 / 8 / 32 tokens; then the whole GPU suite (one process), which includes the
# static test's new H16=0/1 bit-equality check on every a16 case.
# Why: GEMM2's fp32 staging (static_stage_window) has one load-convert-store per 128-column chunk
# and half-warp, and the loop's next loads wait for the previous store, so a unit's staging costs
# ceil(rows x chunks / 16) dependent L2 round trips; the copy has 4 chunks in flight per half-warp.
# Prediction: gpt-oss mxfp4 (I = 2880: 23 chunks, two round trips even for a one-row task) -1 to
# -3% at 1 / 8 / 32 tokens; kimi-k2 int4 (its shared expert's task has every token's row: 8 round
# trips per GEMM2 unit at 8 tokens, 32 at 32) -1 to -4% at 8 and 32; qwen3-235b (I = 1536) and
# qwen3-30b (I = 768) level at 1 and 8 (one-row tasks: one round trip either way), up to -1% at 32.
# Ran at b7d09a1 on an H100 (BUDGET_S=570, 387 s): GPU suite 162/162 (the 38 a16 static cases'
# H16=0/1 checks among them, bit-equal); no row faster: -0.1% to +0.6% over the two rounds
# (qwen3-235b int4 +0.5% at 1 / 8 / 32 tokens, gpt-oss +0.1 to +0.6%, kimi-k2 -0.1 to +0.2%).
# Prediction wrong: the staging's round trips were already hidden behind the register ring's
# in-flight weight loads (docs/perf-notes.md, fifty-eighth pass). Dropped from main (b7d09a1's
# source change is bench/runs/s58-h16.patch: git apply it, commit, then carry-binaries).
# bench/results/h100/ab/2026-12-07-s58-h16/. Switched to prelude's prebuilt_start after it ran
# (same commands).
# Device (carry ["build-carry"], from scripts/carry-binaries.sh at the commit):
#   SERVEKIT_COMMIT=<sha> BUDGET_S=590 bash bench/runs/2026-12-07-s58-h16.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-590}
B=${PREBUILT:-build-carry}
prebuilt_start s58-h16
rows=("qwen3-30b-a3b bf16" "qwen3-235b-a22b bf16,int4_w4a16" "gpt-oss-120b mxfp4_w4a16"
  "kimi-k2 int4_w4a16")
for round in 1 2; do
  for r in "${rows[@]}"; do
    read -r preset quant <<<"$r"
    for mode in 1 0; do
      bench_row "$preset-h16_$mode-$round" SERVEKIT_STATIC_H16=$mode -- --preset "$preset" \
        --quant "$quant" --tokens 1,8,32 --routing uniform --path static
    done
  done
  (($(left) < 330)) && break  # the suite's ~110-210 s and a margin come first
done
gtest_run all "$B" '*' $(($(left) - 10))
say "done"
