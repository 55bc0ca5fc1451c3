#!/usr/bin/env bash
# Device call, session 8, second of two: 2026-11-30-s8-fp8-boundary.sh compared the per-run
# pick with the forced 128-row tile, but at 512 tokens the pick already takes the 128-row tile
# (4608 rows over 257 groups = 17 > 16), so that pair measured nothing. Here both tiles are
# forced: deepseek-v3 fp8_block128 dynamic at 512 / 768 tokens (16 / 24 routed rows per expert),
# 64-row against 128-row tile, interleaved, two rounds. Reuses build-dev of the lease.
# Run (carry [".deps"], timeout_s 300): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-11-30-s8-fp8-boundary2.sh
# Output: OUT/tile-{small,large}-r{1,2}.json, OUT/rows.txt.
set -uo pipefail
# shellcheck source=bench/runs/prelude.sh
source "$(dirname "$0")/prelude.sh"
build_dev "$OUT/boundary.log"
for r in 1 2; do
  for tile in small large; do
    (($(date +%s) - START > 250)) && { echo "skip $tile r$r (budget)" >>"$OUT/boundary.log"; continue; }
    SERVEKIT_GEMM_TILE=$tile timeout 120 "$B/servekit" bench moe --preset deepseek-v3 \
      --quant fp8_block128 --tokens 512,768 --routing uniform --path dynamic --peer off \
      --check-tokens 1 --commit "${SERVEKIT_COMMIT:-unknown}-$tile" \
      --out "$OUT/tile-$tile-r$r.json" >>"$OUT/boundary.log" 2>&1
    echo "$tile r$r rc=$? at $(($(date +%s) - START))s" >>"$OUT/boundary.log"
  done
done
python3 - "$OUT" >"$OUT/rows.txt" <<'PY'
import json, glob, os, sys
for f in sorted(glob.glob(f"{sys.argv[1]}/tile-*.json")):
    for r in json.load(open(f))["rows"]:
        print(f"{os.path.basename(f):18} {r['tokens']:5} {r['us']:9.1f} {r['us'] / r['floor_us']:5.2f} {r['status']}")
PY
cat "$OUT/rows.txt"
