#!/usr/bin/env bash
# Session 57, a second call on an H200 lease (after 2026-12-07-s57-record.sh; the fifty-first
# pass's open question): does GEMM1's fused activation epilogue (the default) beat the separate
# activation pass (SERVEKIT_DYNAMIC_FUSED_ACT=0) on the whole layer on an H200? deepseek-v3 at 8192
# tokens, dynamic path, fp8_block128 and bf16, fused and pass alternated, two rounds, one lease.
# Prediction (fifty-first pass, H100 measurements scaled to the H200's 4.8 TB/s): fp8_block128
# fused ~50-100 us (~1%) slower than the pass (the pass moves ~755 MB, ~140 us there; the fused
# epilogue's MUFU work costs GEMM1 ~210 us); bf16 level to ~2% faster fused (the pass reads and
# writes the bf16 intermediate, the fused store writes half of GEMM1's output).
# Ran at 661253c on an H100 (BUDGET_S=240, both rounds) and on an H200 (BUDGET_S=105, round 1
# only): fused level or ahead everywhere, fp8 0.3-1.4%, bf16 1.2-2.3%; the fp8 prediction was
# wrong on the H200 (level, not ~1% slower). bench/results/{h100,h200}/ab/2026-12-07-s57-fused/.
# Device (carry ["build-carry"], from scripts/carry-binaries.sh at the commit):
#   SERVEKIT_COMMIT=<sha> BUDGET_S=300 bash bench/runs/2026-12-07-s57-fused.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-300}
B=${PREBUILT:-build-carry}
prebuilt_start s57-fused
ds=(--preset deepseek-v3 --routing uniform --path dynamic --tokens 8192)
for round in 1 2; do
  for q in fp8_block128 bf16; do
    bench_row "ds-$q-fused-$round" SERVEKIT_DYNAMIC_FUSED_ACT=1 -- "${ds[@]}" --quant $q
    bench_row "ds-$q-pass-$round" SERVEKIT_DYNAMIC_FUSED_ACT=0 -- "${ds[@]}" --quant $q
  done
done
say "done"
