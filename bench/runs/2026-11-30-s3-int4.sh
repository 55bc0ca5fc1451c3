#!/usr/bin/env bash
# Device call of 2026-11-30 (third session), third: the int4 decode in one LOP3 per register
# (and_or) against the code before it, on one GPU; and the prefix times the second call missed.
#   abold/   `git archive <before> | tar -x -C abold` (untracked, travels with the tree)
# Everything lands in OUT/int4.tgz plus OUT/summary.txt (the device returns at most 8 files).
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-$PWD/out}
W=$(mktemp -d)
START=$(date +%s)
finish() {
  tar -czf "$OUT/int4.tgz" -C "$W" . 2>/dev/null
  cp "$W/summary.txt" "$OUT/summary.txt" 2>/dev/null
}
trap finish EXIT
mkdir -p "$OUT"
say() { echo "$* at $(( $(date +%s) - START ))s" | tee -a "$W/summary.txt"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$W/gpu.txt"
ln -sfn "$PWD/.deps" abold/.deps
( env JOBS=10 BUILD_DIR=build-dev SERVEKIT_WERROR=OFF scripts/build.sh > "$W/build-new.log" 2>&1; echo "rc=$?" >> "$W/build-new.log" ) &
( cd abold && env JOBS=6 BUILD_DIR=build SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF > "$W/build-old.log" 2>&1; echo "rc=$?" >> "$W/build-old.log" ) &
wait
tail -n 1 "$W"/build-*.log | tee -a "$W/summary.txt"
say "builds done"
timeout 100 build-dev/servekit_gpu_tests --gtest_filter='*Static*' > "$W/static-tests.log" 2>&1
say "static tests rc=$?"; tail -n 3 "$W/static-tests.log" >> "$W/summary.txt"
ROWS="--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1,8,32 --routing uniform --path static
 --then --preset gpt-oss-120b --quant mxfp4_w4a16 --tokens 8 --routing uniform --path static"
timeout 200 env BUILD_DIR=abold/build AB_BUILD_B=build-dev AB_ROUNDS=2 SERVEKIT_COMMIT="${OLD_COMMIT:-old}" \
  AB_COMMIT_B="${SERVEKIT_COMMIT:-new}" AB_NAME=int4 AB_ARGS="$(echo "$ROWS" | tr '\n' ' ') --peer off --check-tokens 1" \
  OUT="$W" scripts/gpu-ab.sh > "$W/ab.log" 2>&1
say "ab rc=$?"
DROWS="--preset qwen3-30b-a3b --quant bf16 --tokens 1,8 --routing uniform --path static
 --then --preset qwen3-235b-a22b --quant bf16 --tokens 1,8 --routing uniform --path static"
for stop in 3 0; do
  # shellcheck disable=SC2086
  timeout 60 env SERVEKIT_DIAG_STATIC_STOP=$stop build-dev/servekit bench moe $(echo "$DROWS" | tr '\n' ' ') \
    --peer off --check-tokens 1 --commit "${SERVEKIT_COMMIT:-new}" --out "$W/stop$stop.json" > "$W/stop$stop.log" 2>&1
  say "stop=$stop rc=$?"
done
python3 - "$W" >> "$W/summary.txt" <<'PY'
import json, glob, os, sys
w = sys.argv[1]
sides = {}
for f in sorted(glob.glob(f"{w}/int4-*.json")):
    side = os.path.basename(f)[5:-5]
    for r in json.load(open(f))["rows"]:
        sides.setdefault((r["preset"], r["quant"], r["tokens"]), {})[side] = (r["us"], r["ratio"], r["status"])
print("A/B (a = before, b = one-LOP3 int4 decode), us / time over floor")
for k, v in sides.items():
    print(" ", *k, " ".join(f"{s}={u:.1f}/{q:.2f}{'' if st == 'ok' else '!' + st}" for s, (u, q, st) in sorted(v.items())))
print("prefix times (stop3: route + plan + planner + GEMM1; stop0: the layer), us")
for name in ("stop3", "stop0"):
    f = os.path.join(w, name + ".json")
    if os.path.exists(f):
        for r in json.load(open(f))["rows"]:
            print(" ", name, r["preset"], r["quant"], r["tokens"], f"{r['us']:.1f}", f"floor={r['floor_us']:.1f}")
PY
cat "$W/summary.txt"
