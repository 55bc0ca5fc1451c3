#!/usr/bin/env bash
# Session 21, the check of 1166db4 (fp8_block128's overlapped promotion) in one device call:
#   1. scripts/gpu-check.sh with BENCH_SET=none: build, the whole GPU suite, CPU suite,
#      compute-sanitizer (OUT/check/)
#   2. issue 3's fp8_block128 rows: deepseek-v3 at 2048 and 8192 tokens with the cuBLASLt peer,
#      32 tokens checked against the CPU reference (OUT/issue3-fp8.json, .log)
#   3. what bounds the 128x128 fp8_block128 GEMMs at 8192 tokens: ncu SpeedOfLight, memory and
#      compute workload sections of the first forward's two grouped GEMMs (OUT/profile/)
# Device (carry [".deps"], ~8 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-02-s21-check.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev
BUDGET_S=${BUDGET_S:-470}
OUT="$OUT/check" BENCH_SET=none BUDGET_S=350 BUILD_DIR=$B scripts/gpu-check.sh
echo "check done at $(($(date +%s) - START))s"
LEFT=$((START + BUDGET_S - $(date +%s)))
((LEFT > 60)) && timeout $((LEFT - 10)) "$B/servekit" bench moe --preset deepseek-v3 \
  --quant fp8_block128 --tokens 2048,8192 --routing uniform --check-tokens 32 \
  --max-seconds $((LEFT - 40)) --commit "${SERVEKIT_COMMIT:-unknown}" \
  --out "$OUT/issue3-fp8.json" >"$OUT/issue3-fp8.log" 2>&1
echo "bench rc=$? at $(($(date +%s) - START))s"
grep -E '^deepseek' "$OUT/issue3-fp8.log"
LEFT=$((START + BUDGET_S - $(date +%s)))
((LEFT > 50)) && OUT="$OUT/profile" BUDGET_S=$((LEFT - 5)) BUILD_DIR=$B \
  PROFILE_ROWS="--preset deepseek-v3 --quant fp8_block128 --tokens 8192 --path dynamic" \
  NCU_ARGS="--page details --section SpeedOfLight --section MemoryWorkloadAnalysis
 --section ComputeWorkloadAnalysis --kernel-name regex:device_kernel --launch-count 2" \
  scripts/gpu-profile.sh
echo "done at $(($(date +%s) - START))s"
