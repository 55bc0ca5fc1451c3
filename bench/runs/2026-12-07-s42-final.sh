#!/usr/bin/env bash
# Session 42's check of the auto pair pick (kAutoSwapPair on, without shared-expert groups):
#   1. scripts/gpu-check.sh with BENCH_SET=issue3 (build, the whole GPU and CPU suites, the
#      sanitizers, issue 3's rows with their cuBLAS peers), BUDGET_S=540
#   2. the rows the pair now takes, auto pick, with peers: qwen3-235b bf16 4096 and gpt-oss-120b
#      bf16 8192 (uniform), into $OUT/pair-rows.json / .log
# Device (carry [".deps"], ~10 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-07-s42-final.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
OUT=${OUT:-$PWD/out}
mkdir -p "$OUT"
env BENCH_SET=issue3 BUDGET_S=540 OUT="$OUT" scripts/gpu-check.sh >"$OUT/gpu-check.txt" 2>&1
echo "gpu-check rc=$?"
tail -n 40 "$OUT/gpu-check.txt"
timeout 50 build/servekit bench moe --preset qwen3-235b-a22b --quant bf16 --tokens 4096 \
  --routing uniform --path dynamic --check-tokens 8 \
  --then --preset gpt-oss-120b --quant bf16 --tokens 8192 --routing uniform --path dynamic \
  --check-tokens 8 --max-seconds 45 --commit "${SERVEKIT_COMMIT:-unknown}" \
  --out "$OUT/pair-rows.json" >"$OUT/pair-rows.log" 2>&1
echo "pair rows rc=$?"
grep -Ev '^bench:' "$OUT/pair-rows.log"
grep -o '"kernels":"[^"]*"' "$OUT/pair-rows.json"
