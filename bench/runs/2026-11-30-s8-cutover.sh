#!/usr/bin/env bash
# Device call, session 8: the three cutovers of src/tune/moe_path.cpp not measured on the current
# kernels (deepseek-v3 bf16: measured before the dynamic path's 64-row tiles; kimi-k2
# fp8_block128 and mixtral-8x7b bf16: never). Both paths on the same rows, graph replays, cold
# L2, as the other cutover entries. Reuses build-dev when the lease kept it.
# Run (carry [".deps"], timeout_s 420): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-11-30-s8-cutover.sh
# Output: OUT/cutover-s8.json, OUT/rows.txt, OUT/cutover.log.
set -uo pipefail
# shellcheck source=bench/runs/prelude.sh
source "$(dirname "$0")/prelude.sh"
build_dev "$OUT/cutover.log"
echo "build done at $(($(date +%s) - START))s" | tee -a "$OUT/cutover.log"
timeout $((400 - ($(date +%s) - START))) "$B/servekit" bench moe \
  --preset deepseek-v3 --quant bf16 --tokens 1,2,4,8 --routing uniform --path both \
  --then --preset kimi-k2 --quant fp8_block128 --tokens 1,2,4,8,16 --routing uniform --path both \
  --then --preset mixtral-8x7b --quant bf16 --tokens 1,2,4,8,16 --routing uniform --path both \
  --peer off --check-tokens 1 --commit "${SERVEKIT_COMMIT:-unknown}" \
  --out "$OUT/cutover-s8.json" >>"$OUT/cutover.log" 2>&1
echo "bench rc=$? at $(($(date +%s) - START))s" | tee -a "$OUT/cutover.log"
python3 - "$OUT/cutover-s8.json" >"$OUT/rows.txt" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    print(f"{r['preset']:14} {r['quant']:13} {r['tokens']:5} {r['path']:8} {r['us']:9.1f} "
          f"{r['us'] / r['floor_us']:5.2f} {r['status']}")
PY
cat "$OUT/rows.txt"
