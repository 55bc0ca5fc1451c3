#!/usr/bin/env bash
# Device call 4 of 2026-12-02 s17 (the session's last ~5 GPU minutes): issue 3's target rows at
# the current commit, dynamic path untouched since session 7 (last file: 2026-11-30-issue3-s7.json):
# qwen3-30b-a3b bf16 at 2048 / 8192 tokens, then deepseek-v3 bf16 and fp8_block128 at 8192, each
# with the cuBLAS peer; the layer picks its path (auto). The bench stops starting rows at
# --max-seconds (the rest are recorded as skipped).
# Run (carry [".deps"]): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-02-s17-issue3.sh
# Output: OUT/issue3.json, OUT/issue3.log.
set -uo pipefail
# shellcheck source=bench/runs/prelude.sh
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-200}
build_dev "$OUT/build.log"
LEFT=$((START + BUDGET_S - $(date +%s)))
echo "build done at $(($(date +%s) - START))s, ${LEFT}s left"
timeout $((LEFT > 20 ? LEFT - 5 : 15)) $B/servekit bench moe \
  --preset qwen3-30b-a3b --quant bf16 --tokens 2048,8192 --routing uniform --check-tokens 32 \
  --then --preset deepseek-v3 --quant fp8_block128,bf16 --tokens 8192 --routing uniform \
  --check-tokens 32 --max-seconds $((LEFT > 40 ? LEFT - 30 : 10)) \
  --commit "${SERVEKIT_COMMIT:-unknown}" --out "$OUT/issue3.json" 2>&1 | tee "$OUT/issue3.log"
