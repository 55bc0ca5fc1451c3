#!/usr/bin/env bash
# Prepared for a device call (not yet run): the grouped GEMM's alternate tiles (bf16 pingpong
# 128x128x64, fp8_block128 pingpong 64x128x128; SERVEKIT_GEMM_TILES=alt, branch
# wip/gemm-tiles-alt) against the default ones on the dynamic path's short-K shapes, where the
# first A/B (deepseek-v3 only, K = 7168 / 2048) did not look: qwen3-30b (K = 2048 / 768) and
# mixtral (K = 4096 / 14336), with deepseek-v3 as the control. One build, both tile sets by the
# environment variable, same GPU.
# Prepare: d=ab-gemm-tiles-alt; rm -rf $d; mkdir $d; git archive wip/gemm-tiles-alt | tar -x -C $d
# Run (carry [".deps"], timeout_s 600): bash bench/runs/2026-11-30-s5-gemm-tiles.sh
# Output: OUT/tiles.tgz and OUT/summary.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-$PWD/out}
TREE=${TREE:-ab-gemm-tiles-alt}
BUDGET_S=${BUDGET_S:-560}
START=$(date +%s)
left() { echo $((START + BUDGET_S - $(date +%s))); }
W=$(mktemp -d)
finish() {
  tar -czf "$OUT/tiles.tgz" -C "$W" . 2>/dev/null
  cp "$W/summary.txt" "$OUT/summary.txt" 2>/dev/null
}
trap finish EXIT
mkdir -p "$OUT"
say() { echo "$* at $(($(date +%s) - START))s" | tee -a "$W/summary.txt"; }
ln -sfn "$PWD/.deps" "$TREE/.deps"
(cd "$TREE" && env JOBS="$(nproc)" BUILD_DIR=build SERVEKIT_WERROR=OFF scripts/build.sh >"$W/build.log" 2>&1)
say "build rc=$?"
SERVEKIT_GEMM_TILES=alt timeout 150 "$TREE/build/servekit_gpu_tests" \
  --gtest_filter='GroupedGemmCuda.*:MoECuda.*:*MoECudaQuant.*/bf16:*MoECudaQuant.*/fp8_block128' >"$W/tests-alt.log" 2>&1
say "GPU tests with the alternate tiles rc=$? $(grep -E 'PASSED|FAILED' "$W/tests-alt.log" | tr '\n' ' ')"
GROUPS_=("--preset qwen3-30b-a3b --quant bf16 --tokens 2048,8192"
  "--preset mixtral-8x7b --quant bf16 --tokens 2048,8192"
  "--preset deepseek-v3 --quant bf16,fp8_block128 --tokens 8192")
for gi in "${!GROUPS_[@]}"; do
  for tiles in default alt; do
    (($(left) < 60)) && { say "group $gi $tiles skipped (budget)"; continue; }
    # shellcheck disable=SC2086
    SERVEKIT_GEMM_TILES=$tiles timeout $(($(left) - 30)) "$TREE/build/servekit" bench moe \
      ${GROUPS_[$gi]} --routing uniform --path dynamic --peer off --check-tokens 2 \
      --commit "tiles-$tiles" --out "$W/g$gi-$tiles.json" >"$W/g$gi-$tiles.log" 2>&1
    say "group $gi $tiles rc=$?"
  done
done
for f in "$W"/g*.log; do echo "== $f" >>"$W/summary.txt"; grep -E "^(qwen|mixtral|deepseek)" "$f" >>"$W/summary.txt"; done
cat "$W/summary.txt"
