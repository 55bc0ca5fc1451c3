#!/usr/bin/env bash
# Device call for the 64-row bf16 tile at its measured threshold (kSmallMTileMaxRows = 32): the
# whole GPU check without a benchmark (build, every GPU and CPU test, memcheck, racecheck), then
# the dynamic rows the pick changes, automatic against the forced 128-row tile, interleaved.
# Run (carry [".deps"], timeout_s 600): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-11-30-s6-m64-check.sh
# Output: OUT/ (gpu-check's files) plus OUT/m64-rows.tgz and OUT/rows.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-$PWD/out}
B=build-dev
mkdir -p "$OUT"
BENCH_SET=none BUDGET_S=${CHECK_BUDGET_S:-300} BUILD_DIR=$B OUT=$OUT bash scripts/gpu-check.sh
W=$(mktemp -d)
for tile in auto large large auto; do
  SERVEKIT_GEMM_TILE=$tile timeout 60 "$B/servekit" bench moe --preset qwen3-30b-a3b --quant bf16 \
    --tokens 256,512,1024 --routing uniform --path dynamic --peer off --check-tokens 1 \
    --commit "tile-$tile" --out "$W/q30-$tile-$RANDOM.json" >>"$W/rows.log" 2>&1
  SERVEKIT_GEMM_TILE=$tile timeout 60 "$B/servekit" bench moe --preset qwen3-235b-a22b --quant bf16 \
    --tokens 512 --routing uniform --path dynamic --peer off --check-tokens 1 \
    --commit "tile-$tile" --out "$W/q235-$tile-$RANDOM.json" >>"$W/rows.log" 2>&1
done
python3 - "$W" >"$OUT/rows.txt" <<'PY'
import json, glob, os, sys
rows = {}
for f in sorted(glob.glob(f"{sys.argv[1]}/*.json")):
    tile = os.path.basename(f).split("-")[1]
    for r in json.load(open(f))["rows"]:
        rows.setdefault((r["preset"], r["tokens"]), {}).setdefault(tile, []).append(
            f'{r["us"]:.1f}/{r["us"] / r["floor_us"]:.2f}' + ("" if r["status"] == "ok" else "!" + r["status"]))
print("us/ratio, dynamic bf16: automatic tile vs forced 128-row tile")
for k, v in rows.items():
    print(" ", *k, "  ".join(f"{t}: {' '.join(x)}" for t, x in sorted(v.items())))
PY
tar -czf "$OUT/m64-rows.tgz" -C "$W" .
cat "$OUT/rows.txt"
