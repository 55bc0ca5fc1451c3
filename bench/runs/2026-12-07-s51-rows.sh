#!/usr/bin/env bash
# Session 51, the second call of a lease whose first ran scripts/gpu-check.sh (the whole GPU suite,
# the sanitizers and issue 3's rows; build folder `build`, kept by the warm machine):
#   1. issue 4's rows (BENCH_SET=issue4, RUN_TESTS=0) at this commit, through gpu-check.sh into
#      check4/ of the work folder (it rebuilds only what changed);
#   2. what the fused activation costs deepseek-v3 fp8_block128's GEMM1 at 8192 tokens since the
#      new stores (session 50's Next 2): GEMM1 cut after the activation (SERVEKIT_DIAG_DYNAMIC_STOP=3)
#      with the activation fused into its epilogue; without it (SERVEKIT_DYNAMIC_FUSED_ACT=0) GEMM1
#      alone (stop 3, the bf16 intermediate's store) and with the separate pass (stop 4); two rounds,
#      alternated, one lease.
# Predictions: issue 4's rows within ~2% of session 49's H200 rows (a12e3a0; no static kernel changed,
# `one_plus_exp` is in the static epilogue's activation). Fused GEMM1 + activation 150-250 us below
# GEMM1 + the pass; fused minus GEMM1 alone (what the fused epilogue costs over a plain bf16 store)
# under session 49's 284 us (old stores, H200).
# Ran once, session 51 at e805c2a on an H100 (BUDGET_S=370 ROWS_S=120, after
# `OUT=$OUT/check BUDGET_S=585 BENCH_SET=issue3 scripts/gpu-check.sh` on the same lease;
# bench/results/h100/ab/2026-12-07-s51-rows): issue 4's rows 51 of 52 (the last cut by the box);
# GEMM1 medians fused 5680.6 / 5580.9, alone 5435.2 / 5398.8, + pass 5595.4 / 5635.4 us. The stop
# rows end with rc=1: a stopped forward writes no output, so the bench's check fails them.
# Device (carry [".deps"]), right after the gpu-check call:
#   SERVEKIT_COMMIT=<sha> BUDGET_S=580 bash bench/runs/2026-12-07-s51-rows.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-580}
work_dir s51-rows  # at the end: OUT/s51-rows.tgz (every file) and OUT/s51-rows.txt
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
# ROWS_S: seconds kept for part 2 (six rows of ~15 s and the builds' slack).
ROWS_S=${ROWS_S:-130}
OUT="$W/check4" BUDGET_S=$(($(left) - ROWS_S)) BENCH_SET=issue4 RUN_TESTS=0 \
  scripts/gpu-check.sh >"$W/check4.log" 2>&1
say "gpu-check issue4 rc=$? $(tail -n 12 "$W/check4.log" | tr '\n' '|')"
BIN=build/servekit
ds=(--preset deepseek-v3 --quant fp8_block128 --routing uniform --path dynamic --tokens 8192)
for round in 1 2; do
  bench_row "ds-stop3-fused-$round" SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${ds[@]}"
  bench_row "ds-stop3-plain-$round" SERVEKIT_DIAG_DYNAMIC_STOP=3 SERVEKIT_DYNAMIC_FUSED_ACT=0 -- "${ds[@]}"
  bench_row "ds-stop4-pass-$round" SERVEKIT_DIAG_DYNAMIC_STOP=4 SERVEKIT_DYNAMIC_FUSED_ACT=0 -- "${ds[@]}"
done
cp "$W/check4/summary.txt" "$OUT/s51-issue4-summary.txt" 2>/dev/null
say done
