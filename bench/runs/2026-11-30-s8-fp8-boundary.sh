#!/usr/bin/env bash
# Device calls, session 8: fp8_block128's 64-row tile boundary (small_m_tile_max_rows, set to 16
# between the 4- and 35-row points of session 7), deepseek-v3 dynamic, two tile choices
# (SERVEKIT_GEMM_TILE) interleaved, two rounds. Reuses build-dev of the lease.
#   TILES   the two choices (default "auto large")   TOKENS  the token counts (default 256,512)
# The two calls that ran (carry [".deps"], timeout_s 300):
#   SERVEKIT_COMMIT=537b39e bash bench/runs/2026-11-30-s8-fp8-boundary.sh
#     (the per-run pick against the 128-row tile; at 512 tokens the pick already takes the
#     128-row tile, 4608 rows / 257 groups = 17 > 16, so only 256 tokens compared anything)
#   SERVEKIT_COMMIT=537b39e TILES="small large" TOKENS=512,768 bash bench/runs/2026-11-30-s8-fp8-boundary.sh
# Output: OUT/tile-<choice>-r{1,2}.json, OUT/rows.txt.
set -uo pipefail
# shellcheck source=bench/runs/prelude.sh
source "$(dirname "$0")/prelude.sh"
build_dev "$OUT/boundary.log"
TILES=${TILES:-auto large}
TOKENS=${TOKENS:-256,512}
for r in 1 2; do
  for tile in $TILES; do
    (($(date +%s) - START > 250)) && { echo "skip $tile r$r (budget)" >>"$OUT/boundary.log"; continue; }
    SERVEKIT_GEMM_TILE=$tile timeout 120 "$B/servekit" bench moe --preset deepseek-v3 \
      --quant fp8_block128 --tokens "$TOKENS" --routing uniform --path dynamic --peer off \
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
