#!/usr/bin/env bash
# Session 59, after the batched tail loads (2026-12-07-s59-tail.sh): the partition table's copy
# into shared memory no longer stalls a CTA's start. static_cta_start issued each compute thread's
# table load and stored it at once, so every thread waited an L2 round trip (threads 0-8 two)
# between the CTA's range and its first task's loads; in GEMM1 that is on the chain from the
# dependency wait to the first weight load. Now the loads are issued there and stored during the
# first unit's staging (static_partition_store).
# Prediction: GEMM1's weight stream starts ~1-2 round trips (~0.5-1.5 us) earlier: -0.5 to -1.5 us
# on every static row, 1-3% at one token, level within the spread at 8 and 32 tokens.
# Then the static and layer GPU tests of the new binary.
# Ran at 8ef6146 on an H100 (tests 73/73): level or slower (int4 and mxfp4 +0.2 to +0.8%, bf16
# -0.4 to 0%); reverted, the change is bench/runs/s59-partition-copy.patch
# (bench/results/h100/ab/2026-12-07-s59-start/).
# Device (carry ["build-carry", "build-main"]: build-carry from scripts/carry-binaries.sh at the
# commit, build-main/servekit.xz the servekit of 4bf8f4e, the batched tail loads):
#   SERVEKIT_COMMIT=<sha> BUDGET_S=260 bash bench/runs/2026-12-07-s59-start.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-260}
B=${PREBUILT:-build-carry}
prebuilt_start s59-start
if xz -dc build-main/servekit.xz >build-main/servekit; then chmod +x build-main/servekit; else
  say "unpack of the base failed"
  exit 1
fi
static=(--tokens "1,8,32" --routing uniform --path static)
q235=(--preset qwen3-235b-a22b --quant int4_w4a16 "${static[@]}")
q30=(--preset qwen3-30b-a3b --quant bf16 "${static[@]}")
oss=(--preset gpt-oss-120b --quant mxfp4_w4a16 "${static[@]}")
for round in 1 2; do
  order=(base new)
  ((round == 2)) && order=(new base)
  for w in "${order[@]}"; do
    bin=$B/servekit
    [[ $w == base ]] && bin=build-main/servekit
    BIN=$bin bench_row "q235-$round-$w" -- "${q235[@]}"
    BIN=$bin bench_row "q30-$round-$w" -- "${q30[@]}"
    BIN=$bin bench_row "oss-$round-$w" -- "${oss[@]}"
  done
done
if (($(left) > 60)); then
  gtest_run static "$B" '*Static*:MoECuda*' $(($(left) - 5))
else
  say "tests skipped (budget)"
fi
say "done"
