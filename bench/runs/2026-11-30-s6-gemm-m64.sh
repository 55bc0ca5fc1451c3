#!/usr/bin/env bash
# Device call for wip/gemm-m64: the bf16 grouped GEMM's 64-row ping-pong tile against the
# 128-row cooperative one on the dynamic path, in one build (SERVEKIT_GEMM_TILE=large|small
# forces one; unset picks per run from the rows per expert), rounds interleaved so drift within
# the lease favours neither. First the grouped-GEMM and layer GPU tests with the automatic pick.
# Run from the branch's checkout (carry [".deps"], timeout_s 600): bash bench/runs/2026-11-30-s6-gemm-m64.sh
# Output: OUT/m64.tgz and OUT/summary.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-$PWD/out}
BUDGET_S=${BUDGET_S:-540}
B=${BUILD_DIR:-build-m64}
START=$(date +%s)
left() { echo $((START + BUDGET_S - $(date +%s))); }
W=$(mktemp -d)
finish() {
  tar -czf "$OUT/m64.tgz" -C "$W" . 2>/dev/null
  cp "$W/summary.txt" "$OUT/summary.txt" 2>/dev/null
}
trap finish EXIT
mkdir -p "$OUT"
say() { echo "$* at $(($(date +%s) - START))s" | tee -a "$W/summary.txt"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv >"$W/gpu.txt"
env JOBS="$(nproc)" BUILD_DIR="$B" SERVEKIT_WERROR=OFF scripts/build.sh >"$W/build.log" 2>&1
say "build rc=$?"
timeout 150 "$B/servekit_gpu_tests" --gtest_filter='GroupedGemmCuda.*:MoECuda.*' >"$W/tests.log" 2>&1
say "GPU tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests.log" | tr '\n' ' ')"
# rows per expert: qwen3-30b (128 experts, top-8) 16/64/128/256/512; qwen3-235b 32/128.
GROUPS_=("--preset qwen3-30b-a3b --quant bf16 --tokens 256,1024,2048,4096,8192"
  "--preset qwen3-235b-a22b --quant bf16 --tokens 512,2048")
i=0
for tile in large small small large; do
  for gi in "${!GROUPS_[@]}"; do
    (($(left) < 50)) && { say "round $i group $gi ($tile) skipped (budget)"; continue; }
    # shellcheck disable=SC2086
    SERVEKIT_GEMM_TILE=$tile timeout $(($(left) - 20)) "$B/servekit" bench moe ${GROUPS_[$gi]} \
      --routing uniform --path dynamic --peer off --check-tokens 1 --commit "tile-$tile" \
      --out "$W/r$i-g$gi-$tile.json" >"$W/r$i-g$gi-$tile.log" 2>&1
    say "round $i group $gi $tile rc=$?"
  done
  i=$((i + 1))
done
python3 - "$W" >>"$W/summary.txt" <<'PY'
import json, glob, os, sys
rows = {}
for f in sorted(glob.glob(f"{sys.argv[1]}/r*-g*-*.json")):
    tile = os.path.basename(f)[:-5].split("-")[-1]
    for r in json.load(open(f))["rows"]:
        rows.setdefault((r["preset"], r["quant"], r["tokens"]), {}).setdefault(tile, []).append(
            f'{r["us"]:.1f}/{r["us"] / r["floor_us"]:.2f}' + ("" if r["status"] == "ok" else "!" + r["status"]))
print("us/ratio per tile (every round)")
for k, v in rows.items():
    print(" ", *k, "  ".join(f"{t}: {' '.join(x)}" for t, x in sorted(v.items())))
PY
cat "$W/summary.txt"
