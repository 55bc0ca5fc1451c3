#!/usr/bin/env bash
# Device call, session 7, on main with the 64x128 ping-pong tiles (bf16 replacing 64x256, and a
# new one for fp8_block128): build; the grouped-GEMM and layer GPU tests (the static path's code
# is unchanged since the full check on c54b409, 122/122); memcheck of the dynamic path on the new
# tiles; the issue-4 benchmark set; then the cutover between the paths at 1-16 tokens and the
# 64-row threshold (auto against the forced 128-row tile) at 4-32 rows per expert.
# Run (carry [".deps"], timeout_s 600): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-11-30-s7-final.sh
# Output: OUT/bench-issue4.json (+ gpu-check's logs), OUT/tests.txt, OUT/memcheck.txt,
# OUT/extra.tgz (cutover-*.json, tile-*.json and their logs), OUT/rows.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-$PWD/out}
B=build-dev
START=$(date +%s)
mkdir -p "$OUT"
W=$(mktemp -d)
trap 'tar -czf "$OUT/extra.tgz" -C "$W" .' EXIT
left() { echo $((START + 545 - $(date +%s))); }
BENCH_SET=none RUN_TESTS=0 BUDGET_S=300 BUILD_DIR=$B OUT=$OUT bash scripts/gpu-check.sh
timeout 150 "$B/servekit_gpu_tests" --gtest_filter='GroupedGemmCuda.*:MoECuda.*' >"$W/tests.log" 2>&1
echo "GPU tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$W/tests.log" | tr '\n' ' ')" | tee "$OUT/tests.txt"
grep -E '^\[  FAILED' "$W/tests.log" | head >>"$OUT/tests.txt"
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 90 "$SAN" --tool memcheck --error-exitcode 1 "$B/servekit" bench moe --preset tiny \
  --quant bf16,fp8_block128 --tokens 5,33 --routing uniform --path dynamic --repeats 1 --warmup 0 \
  --check-tokens 33 --peer off >"$W/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$W/memcheck.log" | tr '\n' ' ')" | tee "$OUT/memcheck.txt"
BENCH_SET=issue4 RUN_TESTS=0 BUDGET_S=$(($(left) - 110)) BUILD_DIR=$B OUT=$OUT bash scripts/gpu-check.sh |
  tail -n 60
run() {  # tag, tile, bench args...
  local tag=$1 tile=$2
  shift 2
  (($(left) < 30)) && { echo "skip $tag $tile (budget)" >>"$W/rows.log"; return; }
  SERVEKIT_GEMM_TILE=$tile timeout $(($(left) - 10)) "$B/servekit" bench moe "$@" --routing uniform \
    --peer off --check-tokens 1 --commit "${SERVEKIT_COMMIT:-unknown}-$tile" \
    --out "$W/$tag-$tile.json" >>"$W/rows.log" 2>&1
}
run cutover-ds auto --preset deepseek-v3 --quant fp8_block128 --tokens 1,2,4,8 --path both
run cutover-q auto --preset qwen3-235b-a22b --quant bf16 --tokens 8,12,16 --path both \
  --routing uniform --peer off --check-tokens 1 --then --preset qwen3-30b-a3b --quant bf16 --tokens 8,12,16 --path both
run tile-q auto --preset qwen3-235b-a22b --quant bf16 --tokens 512 --path dynamic
run tile-q large --preset qwen3-235b-a22b --quant bf16 --tokens 512 --path dynamic
run tile-ds auto --preset deepseek-v3 --quant fp8_block128 --tokens 128,1024 --path dynamic
run tile-ds large --preset deepseek-v3 --quant fp8_block128 --tokens 128,1024 --path dynamic
python3 - "$W" >"$OUT/rows.txt" <<'PY'
import json, glob, os, sys
for f in sorted(glob.glob(f"{sys.argv[1]}/*.json")):
    for r in json.load(open(f))["rows"]:
        print(f"{os.path.basename(f):22} {r['preset']:16} {r['quant']:13} {r['tokens']:5} "
              f"{r['path']:8} {r['us']:9.1f} {r['us'] / r['floor_us']:5.2f} {r['status']}")
PY
cat "$OUT/rows.txt"
