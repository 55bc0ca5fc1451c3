#!/usr/bin/env bash
# Ran in session 19 (ab/2026-12-02-s19-carveout-*, profiles/2026-12-02-s19-route-fine-*): level;
# the switch stays as a diagnostic. GPU tests 70/70 with it at 100.
# Session 19: does the shared-memory carveout cost the static chain time? (docs/perf-notes.md,
# nineteenth pass). An SM changes its L1 / shared-memory split only while idle. The route + plan
# kernel (one CTA, ~23 KB) may run under a smaller shared-memory configuration than the GEMMs
# (2 CTAs x ~100 KB), so the SM it ran on must drain and switch before it takes its GEMM1 CTAs,
# and GEMM1's stream-K partition gives that SM as much work as any other.
# SERVEKIT_DIAG_CARVEOUT=100 (src/cuda/launch_pdl.h) asks every launch_pdl launch (route + plan,
# planner, static GEMMs) for the largest shared-memory configuration, so no SM switches.
# Prediction: 0-2 us faster at one token, level at 8 tokens.
# One build of this tree; GPU tests with the switch on (*Static*:RoutePlanCuda.*:MoECuda.*);
# rows with the switch unset / 100 in two rounds, one process each; then, with what is left of the
# budget, ncu's per-instruction stall samples of the route + plan kernel alone at the finest
# sampling interval (the default interval gave it 14 samples in session 19's source profile).
# Device (carry [".deps"], ~9 min): bash bench/runs/next-carveout.sh
# Output: OUT/summary.txt, OUT/carveout.tgz (logs, row JSON, ncu csv).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-$PWD/out}
BUDGET_S=${BUDGET_S:-540}
mkdir -p "$OUT"
W=$(mktemp -d)
START=$(date +%s)
left() { echo $((START + BUDGET_S - $(date +%s))); }
say() { echo "$* at $(($(date +%s) - START))s" | tee -a "$W/summary.txt"; }
finish() {
  tar -czf "$OUT/carveout.tgz" -C "$W" . 2>/dev/null
  cp "$W/summary.txt" "$OUT/summary.txt" 2>/dev/null
}
trap finish EXIT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv >"$W/gpu.txt"
BUILD_DIR=build SERVEKIT_WERROR=OFF scripts/build.sh -DCMAKE_BUILD_TYPE=Release \
  -DSERVEKIT_TESTS=ON >"$W/build.log" 2>&1
say "build rc=$?"
SERVEKIT_DIAG_CARVEOUT=100 timeout 170 build/servekit_gpu_tests \
  --gtest_filter='*Static*:RoutePlanCuda.*:MoECuda.*' >"$W/tests.log" 2>&1
say "GPU tests (carveout 100) rc=$? $(grep -E 'PASSED|FAILED' "$W/tests.log" | tr '\n' ' ')"
row() {  # TAG CARVEOUT ARGS...
  local tag=$1 c=$2
  shift 2
  (($(left) < 60)) && { say "$tag skipped (budget)"; return; }
  SERVEKIT_DIAG_CARVEOUT=$c timeout 90 build/servekit bench moe "$@" --routing uniform \
    --path static --peer off --check-tokens 1 --commit "carveout-$c" --out "$W/$tag.json" \
    >"$W/$tag.log" 2>&1
  echo "$tag rc=$? $(python3 -c "import json,sys; print(' '.join('%d:%.1f/%.2f/%s' % (r['tokens'], r['us'], r['ratio'], r['status']) for r in json.load(open(sys.argv[1]))['rows']))" "$W/$tag.json" 2>/dev/null)" |
    tee -a "$W/summary.txt"
}
for round in 1 2; do
  for c in "" 100; do
    row "r$round-qwen3-30b-c$c" "$c" --preset qwen3-30b-a3b --quant bf16 --tokens 1,8
    row "r$round-qwen3-235b-int4-c$c" "$c" --preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1,8
    row "r$round-deepseek-c$c" "$c" --preset deepseek-v3 --quant fp8_block128 --tokens 1,8
  done
done
say "rows done"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
n=0
for p in "deepseek-v3 --quant fp8_block128" "qwen3-30b-a3b --quant bf16"; do
  n=$((n + 1))
  (($(left) < 70)) && { say "ncu $n skipped (budget)"; continue; }
  # shellcheck disable=SC2086
  timeout $(($(left) - 15)) "$NCU" --clock-control none --csv --page source --print-source sass \
    --section SourceCounters --section WarpStateStats --warp-sampling-interval 0 \
    --kernel-name regex:route_and_plan --launch-count 1 --log-file "$W/ncu-route-$n.csv" \
    build/servekit bench moe --preset $p --tokens 1 --path static --routing uniform \
    --repeats 1 --warmup 0 --peer off --check-tokens 1 >"$W/ncu-$n.log" 2>&1
  say "ncu $n ($p) rc=$?"
done
