#!/usr/bin/env bash
# Device call, session 7, branch wip/m64n128: the dynamic path's decode-size tiles. Builds, runs
# the grouped-GEMM and layer GPU tests (the two new 64x128 ping-pong tiles, bf16 and
# fp8_block128, included), then the dynamic rows at 8-32 tokens with SERVEKIT_GEMM_TILE forcing
# each tile, interleaved (bf16: 64x256 `small` vs 64x128 `small128`; fp8_block128: 128x128 `auto`
# vs 64x128 `small`).
# Run (carry [".deps"], timeout_s 600): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-11-30-s7-small-tiles.sh
# Output: OUT/ (gpu-check's build log), OUT/tests.txt, OUT/rows.txt, OUT/tiles.tgz.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-$PWD/out}
B=build-dev
START=$(date +%s)
mkdir -p "$OUT"
W=$(mktemp -d)
trap 'tar -czf "$OUT/tiles.tgz" -C "$W" .' EXIT
BENCH_SET=none RUN_TESTS=0 BUDGET_S=400 BUILD_DIR=$B OUT=$OUT bash scripts/gpu-check.sh
timeout 120 "$B/servekit_gpu_tests" --gtest_filter='GroupedGemmCuda.*:MoECuda.*' >"$W/tests.log" 2>&1
echo "GPU tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$W/tests.log" | tr '\n' ' ')" | tee "$OUT/tests.txt"
grep -E '^\[  FAILED' "$W/tests.log" | head >>"$OUT/tests.txt"
left() { echo $((START + 570 - $(date +%s))); }
row() {  # tile, tag, bench args...
  local tile=$1 tag=$2
  shift 2
  (($(left) < 45)) && { echo "skip $tag $tile (budget)" >>"$W/rows.log"; return; }
  SERVEKIT_GEMM_TILE=$tile timeout 90 "$B/servekit" bench moe "$@" --routing uniform --path dynamic \
    --peer off --check-tokens 1 --commit "tile-$tile" --out "$W/$tag-$tile-$RANDOM.json" >>"$W/rows.log" 2>&1
}
for tile in small small128 small128 small; do
  row $tile q235 --preset qwen3-235b-a22b --quant bf16 --tokens 8,16,32
  row $tile q30 --preset qwen3-30b-a3b --quant bf16 --tokens 8,16,32,128
done
for tile in auto small small auto; do
  row $tile ds --preset deepseek-v3 --quant fp8_block128 --tokens 8,16,32
done
python3 - "$W" >"$OUT/rows.txt" <<'PY'
import json, glob, os, sys
rows = {}
for f in sorted(glob.glob(f"{sys.argv[1]}/*.json"), key=os.path.getmtime):
    tile = os.path.basename(f).split("-")[1]
    for r in json.load(open(f))["rows"]:
        rows.setdefault((r["preset"], r["quant"], r["tokens"]), {}).setdefault(tile, []).append(
            f'{r["us"]:.1f}/{r["us"] / r["floor_us"]:.2f}' + ("" if r["status"] == "ok" else "!" + r["status"]))
print("us/ratio, dynamic path, by forced tile")
for k, v in rows.items():
    print(" ", *k, "  ".join(f"{t}: {' '.join(x)}" for t, x in sorted(v.items())))
PY
cat "$OUT/rows.txt"
