#!/usr/bin/env bash
# Ran in session 6 (results: bench/results/h200/ab/2026-11-30-s6-prefetch-*): GEMM2's L2 prefetch of its own weight range before
# its dependency wait (branch wip/gemm2-prefetch, SERVEKIT_STATIC_GEMM2_PREFETCH_KB), swept in
# one build on the static path's one-, eight- and 32-token rows, the sizes interleaved so that
# drift within the lease does not favour one of them; then the stamps of qwen3-30b T=1 with and
# without it (how long GEMM2's k-loops take after its release); then GEMM2 with one CTA per SM.
# Prepare: d=ab-gemm2-prefetch; rm -rf $d; mkdir $d; git archive wip/gemm2-prefetch | tar -x -C $d
# Run (carry [".deps"], timeout_s 600): bash bench/runs/2026-11-30-s6-gemm2-prefetch.sh
# Output: OUT/prefetch.tgz and OUT/summary.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-$PWD/out}
TREE=${TREE:-ab-gemm2-prefetch}
BUDGET_S=${BUDGET_S:-560}
SIZES=${SIZES:-"0 256 1024 0 64 256 1024"}
START=$(date +%s)
left() { echo $((START + BUDGET_S - $(date +%s))); }
W=$(mktemp -d)
finish() {
  tar -czf "$OUT/prefetch.tgz" -C "$W" . 2>/dev/null
  cp "$W/summary.txt" "$OUT/summary.txt" 2>/dev/null
}
trap finish EXIT
mkdir -p "$OUT"
say() { echo "$* at $(($(date +%s) - START))s" | tee -a "$W/summary.txt"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv >"$W/gpu.txt"
ln -sfn "$PWD/.deps" "$TREE/.deps"
(cd "$TREE" && env JOBS="$(nproc)" BUILD_DIR=build SERVEKIT_WERROR=OFF scripts/build.sh >"$W/build.log" 2>&1)
say "build rc=$?"
SERVEKIT_STATIC_GEMM2_PREFETCH_KB=256 timeout 150 "$TREE/build/servekit_gpu_tests" \
  --gtest_filter='*Static*' >"$W/tests.log" 2>&1
say "static GPU tests with a 256 KB prefetch rc=$? $(grep -E 'PASSED|FAILED' "$W/tests.log" | tr '\n' ' ')"
GROUPS_=("--preset qwen3-30b-a3b --quant bf16 --tokens 1,8,32"
  "--preset gpt-oss-120b --quant mxfp4_w4a16 --tokens 1,8"
  "--preset qwen3-235b-a22b --quant bf16 --tokens 1,8"
  "--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1,8")
i=0
for kb in $SIZES; do
  for gi in "${!GROUPS_[@]}"; do
    (($(left) < 60)) && { say "round $i group $gi ($kb KB) skipped (budget)"; continue; }
    # shellcheck disable=SC2086
    SERVEKIT_STATIC_GEMM2_PREFETCH_KB=$kb timeout $(($(left) - 30)) "$TREE/build/servekit" bench moe \
      ${GROUPS_[$gi]} --routing uniform --path static --peer off --check-tokens 1 \
      --commit "prefetch-$kb" --out "$W/r$i-g$gi-$kb.json" >"$W/r$i-g$gi-$kb.log" 2>&1
    say "round $i group $gi $kb KB rc=$?"
  done
  i=$((i + 1))
done
# GEMM2 with one CTA per SM (SERVEKIT_DIAG_STATIC_CTAS_PER_SM_GEMM2, same branch): fewer cut
# units and fix-ups where GEMM2's bytes per CTA are small (one CTA per SM for both GEMMs made
# qwen3-30b T=1 55.3 us against 58.2, and every larger row slower: ab/2026-11-30-s3-diag-cta1).
for gi in 0 1; do
  (($(left) < 60)) && break
  # shellcheck disable=SC2086
  SERVEKIT_DIAG_STATIC_CTAS_PER_SM_GEMM2=1 timeout $(($(left) - 30)) "$TREE/build/servekit" bench moe \
    ${GROUPS_[$gi]} --routing uniform --path static --peer off --check-tokens 1 \
    --commit "gemm2-cta1" --out "$W/cta1-g$gi.json" >"$W/cta1-g$gi.log" 2>&1
  say "GEMM2 one CTA per SM, group $gi rc=$?"
done
for f in "$W"/cta1-g*.log; do grep -E "^(qwen|gpt)" "$f" | sed 's/^/gemm2-cta1 /' >>"$W/summary.txt"; done
for kb in 0 1024; do
  (($(left) < 40)) && break
  SERVEKIT_DIAG_STATIC_TIMES=1 SERVEKIT_STATIC_GEMM2_PREFETCH_KB=$kb timeout $(($(left) - 20)) \
    "$TREE/build/servekit" bench moe --preset qwen3-30b-a3b --quant bf16 --tokens 1 \
    --routing uniform --path static --peer off --check-tokens 1 --out "$W/times-$kb.json" \
    >"$W/times-$kb.log" 2>&1
  say "stamps $kb KB rc=$?"
done
python3 - "$W" >>"$W/summary.txt" <<'PY'
import json, glob, os, sys, statistics
rows = {}
for f in sorted(glob.glob(f"{sys.argv[1]}/r*-g*-*.json")):
    kb = int(os.path.basename(f)[:-5].split("-")[-1])
    for r in json.load(open(f))["rows"]:
        rows.setdefault((r["preset"], r["quant"], r["tokens"]), {}).setdefault(kb, []).append(
            f'{r["us"]:.1f}' + ("" if r["status"] == "ok" else "!" + r["status"]))
print("us per prefetch size (every round)")
for k, v in rows.items():
    print(" ", *k, "  ".join(f"{kb} KB: {' '.join(x)}" for kb, x in sorted(v.items())))
PY
cat "$W/summary.txt"
