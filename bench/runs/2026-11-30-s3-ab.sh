#!/usr/bin/env bash
# Device call of 2026-11-30 (third session): the three prepared static-path branches, merged as
# wip/combo, against main on one GPU, plus the static GEMMs' warp-stall profile.
#   abmain/   `git archive main | tar -x -C abmain` (untracked, travels with the tree)
# Sides: a = main, b = combo; then combo with the L2 prefetch off, and with the h
# quantization off, to split the three changes (int4-fold is the rest on the int4 rows).
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-$PWD/out}
START=$(date +%s)
left() { echo $((START + ${BUDGET_S:-570} - $(date +%s))); }
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$OUT/gpu.txt"
( env JOBS=8 BUILD_DIR=build-dev SERVEKIT_WERROR=OFF scripts/build.sh > "$OUT/build-combo.log" 2>&1; echo "rc=$?" >> "$OUT/build-combo.log" ) &
ln -sfn "$PWD/.deps" abmain/.deps
( cd abmain && env JOBS=8 BUILD_DIR=build SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF > "$OUT/build-main.log" 2>&1; echo "rc=$?" >> "$OUT/build-main.log" ) &
wait
tail -n 3 "$OUT"/build-*.log
echo "build done at $(( $(date +%s) - START ))s"
timeout 120 build-dev/servekit_gpu_tests --gtest_filter='*Static*' > "$OUT/static-tests.log" 2>&1
echo "static tests rc=$? at $(( $(date +%s) - START ))s"; tail -n 4 "$OUT/static-tests.log"
COMMIT_B=${SERVEKIT_COMMIT:-unknown}
ROWS1="--preset qwen3-30b-a3b --quant bf16 --tokens 1,8,32 --routing uniform --path static
 --then --preset qwen3-235b-a22b --quant bf16,int4_w4a16 --tokens 1,8,32 --routing uniform --path static
 --then --preset gpt-oss-120b --quant mxfp4_w4a16 --tokens 1,8,32 --routing uniform --path static
 --then --preset kimi-k2 --quant int4_w4a16 --tokens 1,8,32 --routing uniform --path static
 --then --preset deepseek-v3 --quant fp8_block128 --tokens 1,8,32,128 --routing uniform --path static
 --then --preset deepseek-v3 --quant fp8_block128 --tokens 128 --routing one --path static"
timeout $(( $(left) - 200 )) env BUILD_DIR=abmain/build AB_BUILD_B=build-dev AB_COMMIT_B="$COMMIT_B" \
  SERVEKIT_COMMIT="${MAIN_COMMIT:-main}" AB_NAME=main-vs-combo AB_ARGS="$ROWS1" OUT="$OUT" scripts/gpu-ab.sh \
  > "$OUT/ab1.log" 2>&1
echo "ab1 rc=$? at $(( $(date +%s) - START ))s"
ROWS2="--preset qwen3-30b-a3b --quant bf16 --tokens 1,8 --routing uniform --path static
 --then --preset qwen3-235b-a22b --quant bf16,int4_w4a16 --tokens 1 --routing uniform --path static
 --then --preset gpt-oss-120b --quant mxfp4_w4a16 --tokens 1 --routing uniform --path static
 --then --preset deepseek-v3 --quant fp8_block128 --tokens 1 --routing uniform --path static"
timeout $(( $(left) - 120 )) env BUILD_DIR=build-dev AB_ENV="SERVEKIT_AB_NO_PREFETCH=1" SERVEKIT_COMMIT="$COMMIT_B" \
  AB_NAME=prefetch-on-off AB_ARGS="$ROWS2" OUT="$OUT" scripts/gpu-ab.sh > "$OUT/ab2.log" 2>&1
echo "ab2 rc=$? at $(( $(date +%s) - START ))s"
ROWS3="--preset deepseek-v3 --quant fp8_block128 --tokens 8,32,128 --routing uniform --path static"
timeout $(( $(left) - 100 )) env BUILD_DIR=build-dev AB_ENV="SERVEKIT_AB_HQUANT_MIN_ROWS=1000000" SERVEKIT_COMMIT="$COMMIT_B" \
  AB_NAME=hquant-on-off AB_ARGS="$ROWS3" OUT="$OUT" scripts/gpu-ab.sh > "$OUT/ab3.log" 2>&1
echo "ab3 rc=$? at $(( $(date +%s) - START ))s"
l=$(left)
if (( l > 60 )); then
  mkdir -p "$OUT/stalls"
  PROFILE_SET=stalls BUDGET_S=$((l - 10)) BUILD_DIR=build-dev OUT="$OUT/stalls" scripts/gpu-profile.sh > "$OUT/stalls.log" 2>&1
  echo "stalls done at $(( $(date +%s) - START ))s"
fi
python3 - "$OUT" <<'PY'
import json, glob, os, sys
out = sys.argv[1]
for stem in ("main-vs-combo", "prefetch-on-off", "hquant-on-off"):
    sides = {}
    for f in sorted(glob.glob(f"{out}/{stem}-*.json")):
        side = os.path.basename(f)[len(stem) + 1:-5]
        for r in json.load(open(f))["rows"]:
            key = (r["preset"], r["quant"], r["tokens"], r["routing"])
            sides.setdefault(key, {})[side] = (r["us"], r["ratio"], r["status"])
    print("==", stem)
    for k, v in sides.items():
        print(" ", *k, " ".join(f"{s}={u:.1f}us/{q:.2f}{'' if st == 'ok' else '!' + st}" for s, (u, q, st) in sorted(v.items())))
PY
