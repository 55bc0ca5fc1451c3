#!/usr/bin/env bash
# Device call, session 9: the static GEMMs' run-ahead L2 prefetch over unit boundaries
# (wip/l2-runahead, SERVEKIT_STATIC_PREFETCH_KB per warp). The static GPU tests with it on, then
# 0 / 8 / 16 KB interleaved at 8 tokens (int4, mxfp4, bf16, fp8_block128), one build.
# Ran at 403e9eb (branch wip/l2-runahead; the variable is not on main). Results:
# bench/results/h200/ab/2026-12-01-s9-runahead-*.
# Run (carry [".deps"], timeout_s 280): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-01-s9-runahead.sh
# (Rows printed by bench/runs/tag_rows.py since the call; same table plus each row's status.)
# Output: OUT/rows.txt, OUT/runahead.log, OUT/kb<n>.json.
set -uo pipefail
# shellcheck source=bench/runs/prelude.sh
source "$(dirname "$0")/prelude.sh"
build_dev "$OUT/runahead.log"
echo "build done at $(($(date +%s) - START))s" | tee -a "$OUT/runahead.log"
SERVEKIT_STATIC_PREFETCH_KB=8 timeout 60 "$B/servekit_gpu_tests" --gtest_filter='*Static*' \
  >"$OUT/tests.log" 2>&1
echo "GPU tests (8 KB) rc=$? $(grep -E 'PASSED|FAILED' "$OUT/tests.log" | tr '\n' ' ')" |
  tee -a "$OUT/runahead.log"
for kb in 0 8 16; do
  (($(date +%s) - START > 200)) && { echo "kb $kb skipped (budget)" | tee -a "$OUT/runahead.log"; continue; }
  SERVEKIT_STATIC_PREFETCH_KB=$kb timeout 45 "$B/servekit" bench moe \
    --preset qwen3-235b-a22b --quant int4_w4a16,bf16 --tokens 8 --routing uniform --path static \
    --then --preset gpt-oss-120b --quant mxfp4_w4a16 --tokens 8 --routing uniform --path static \
    --then --preset deepseek-v3 --quant fp8_block128 --tokens 8 --routing uniform --path static \
    --peer off --check-tokens 1 --commit "${SERVEKIT_COMMIT:-unknown}" \
    --out "$OUT/kb$kb.json" >>"$OUT/runahead.log" 2>&1
  echo "kb $kb rc=$? at $(($(date +%s) - START))s" | tee -a "$OUT/runahead.log"
done
python3 "$(dirname "$0")/tag_rows.py" "$OUT"/kb*.json >"$OUT/rows.txt"
cat "$OUT/rows.txt"
