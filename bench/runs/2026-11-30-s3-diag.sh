#!/usr/bin/env bash
# Device call of 2026-11-30 (third session), second: where the static path's fixed cost goes.
#  1. prefix times in the graph (SERVEKIT_DIAG_STATIC_STOP = 1: route + plan only, 2: + the
#     planner, 3: + GEMM1, 0: the whole layer) at 1 and 8 tokens;
#  2. the whole layer with one GEMM CTA per SM instead of two (SERVEKIT_DIAG_STATIC_CTAS_PER_SM);
#  3. the static GEMMs' warp stalls (scripts/gpu-profile.sh, PROFILE_SET=stalls).
# Everything lands in OUT/diag.tgz plus OUT/summary.txt (the device returns at most 8 files).
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-$PWD/out}
W=$(mktemp -d)
START=$(date +%s)
left() { echo $((START + ${BUDGET_S:-570} - $(date +%s))); }
finish() {
  tar -czf "$OUT/diag.tgz" -C "$W" . 2>/dev/null
  cp "$W/summary.txt" "$OUT/summary.txt" 2>/dev/null
}
trap finish EXIT
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$W/gpu.txt"
env JOBS=16 BUILD_DIR=build-dev SERVEKIT_WERROR=OFF scripts/build.sh > "$W/build.log" 2>&1 || { tail -n 30 "$W/build.log"; exit 1; }
echo "build done at $(( $(date +%s) - START ))s" | tee -a "$W/summary.txt"
COMMIT=${SERVEKIT_COMMIT:-unknown}
ROWS="--preset qwen3-30b-a3b --quant bf16 --tokens 1,8 --routing uniform --path static
 --then --preset qwen3-235b-a22b --quant bf16,int4_w4a16 --tokens 1,8 --routing uniform --path static
 --then --preset deepseek-v3 --quant fp8_block128 --tokens 1,8 --routing uniform --path static"
for stop in 1 2 3 0; do
  (( $(left) < 200 )) && { echo "budget: stop=$stop skipped" | tee -a "$W/summary.txt"; continue; }
  # shellcheck disable=SC2086
  timeout $(( $(left) - 150 )) env SERVEKIT_DIAG_STATIC_STOP=$stop build-dev/servekit bench moe \
    $(echo "$ROWS" | tr '\n' ' ') --peer off --check-tokens 1 --commit "$COMMIT" \
    --out "$W/stop$stop.json" > "$W/stop$stop.log" 2>&1
  echo "stop=$stop rc=$? at $(( $(date +%s) - START ))s" | tee -a "$W/summary.txt"
done
if (( $(left) > 170 )); then
  # shellcheck disable=SC2086
  timeout $(( $(left) - 140 )) env SERVEKIT_DIAG_STATIC_CTAS_PER_SM=1 build-dev/servekit bench moe \
    $(echo "$ROWS" | tr '\n' ' ') --peer off --check-tokens 1 --commit "$COMMIT" \
    --out "$W/cta1.json" > "$W/cta1.log" 2>&1
  echo "cta1 rc=$? at $(( $(date +%s) - START ))s" | tee -a "$W/summary.txt"
fi
l=$(left)
if (( l > 60 )); then
  mkdir -p "$W/stalls"
  PROFILE_SET=stalls BUDGET_S=$((l - 15)) BUILD_DIR=build-dev OUT="$W/stalls" scripts/gpu-profile.sh > "$W/stalls.log" 2>&1
  echo "stalls done at $(( $(date +%s) - START ))s" | tee -a "$W/summary.txt"
fi
python3 - "$W" >> "$W/summary.txt" <<'PY'
import json, os, sys
w = sys.argv[1]
rows = {}
for name in ("stop1", "stop2", "stop3", "stop0", "cta1"):
    f = os.path.join(w, name + ".json")
    if not os.path.exists(f):
        continue
    for r in json.load(open(f))["rows"]:
        rows.setdefault((r["preset"], r["quant"], r["tokens"]), {})[name] = (r["us"], r["floor_us"])
print("prefix times in the graph, us (stop1 route+plan, stop2 +planner, stop3 +GEMM1, stop0 layer; cta1: layer, 1 CTA/SM)")
for k, v in rows.items():
    floor = next(iter(v.values()))[1]
    print(" ", *k, f"floor={floor:.1f}", " ".join(f"{n}={u:.1f}" for n, (u, _) in v.items()))
PY
cat "$W/summary.txt"
