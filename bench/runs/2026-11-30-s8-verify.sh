#!/usr/bin/env bash
# Device call, session 8, last: the final tree after the host-side changes of the session
# (fp8_block128's 64-row tile boundary 16 -> 26 rows per group, three cutover entries): the
# grouped-GEMM and layer GPU tests, then deepseek-v3 fp8_block128 at 768 tokens through the
# per-run pick (26 rows per group: now the 64-row tile) against the forced 128-row tile.
# Run (carry [".deps"], timeout_s 400): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-11-30-s8-verify.sh
# Output: OUT/tests.txt, OUT/rows.txt, OUT/verify-*.json.
set -uo pipefail
# shellcheck source=bench/runs/prelude.sh
source "$(dirname "$0")/prelude.sh"
build_dev "$OUT/verify.log"
echo "build done at $(($(date +%s) - START))s" | tee "$OUT/tests.txt"
timeout 150 "$B/servekit_gpu_tests" --gtest_filter='GroupedGemmCuda.*:MoECuda.*' >>"$OUT/verify.log" 2>&1
echo "GPU tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$OUT/verify.log" | tr '\n' ' ') at $(($(date +%s) - START))s" | tee -a "$OUT/tests.txt"
grep -E '^\[  FAILED' "$OUT/verify.log" | head >>"$OUT/tests.txt"
for tile in auto large; do
  SERVEKIT_GEMM_TILE=$tile timeout 100 "$B/servekit" bench moe --preset deepseek-v3 \
    --quant fp8_block128 --tokens 768 --routing uniform --path dynamic --peer off --check-tokens 2 \
    --commit "${SERVEKIT_COMMIT:-unknown}-$tile" --out "$OUT/verify-$tile.json" >>"$OUT/verify.log" 2>&1
  echo "$tile rc=$? at $(($(date +%s) - START))s" | tee -a "$OUT/tests.txt"
done
python3 - "$OUT" >"$OUT/rows.txt" <<'PY'
import json, glob, os, sys
for f in sorted(glob.glob(f"{sys.argv[1]}/verify-*.json")):
    for r in json.load(open(f))["rows"]:
        print(f"{os.path.basename(f):18} {r['tokens']:5} {r['us']:9.1f} {r['us'] / r['floor_us']:5.2f} {r['status']}")
PY
cat "$OUT/rows.txt"
