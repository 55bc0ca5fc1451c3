#!/usr/bin/env bash
# Prepared for the next device call (not yet run): the SASS of the 4-bit static GEMM kernels and
# where their warps stall per instruction, to see what the ~100 instructions of an int4 k-block
# are (docs/perf-notes.md, tenth pass: this machine has no cuobjdump / nvdisasm).
#  1. builds build-dev without tests;
#  2. cuobjdump -sass of the static_moe_int4_g128 and static_moe_mxfp4 objects (both GEMMs of
#     each) -> OUT/sass-<format>.txt.gz, and a count of SASS opcodes per kernel -> OUT/sass-ops.txt;
#  3. ncu source page (SASS with per-instruction stall samples) of int4 T=8 GEMM1 ->
#     OUT/ncu-1.csv (scripts/gpu-profile.sh).
# Run (carry [".deps"], timeout_s 360): bash bench/runs/next-sass.sh
set -uo pipefail
# shellcheck source=bench/runs/prelude.sh
source "$(dirname "$0")/prelude.sh"
env JOBS="$(nproc)" BUILD_DIR="$B" SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF \
  >"$OUT/build.log" 2>&1 || { tail -n 40 "$OUT/build.log"; exit 1; }
echo "build done at $(($(date +%s) - START))s" | tee -a "$OUT/profile.log"
for f in int4_g128 mxfp4; do
  obj=$(find "$B" -name "static_moe_$f.cu.o" | head -n 1)
  if [[ -z $obj ]]; then
    echo "no object for $f" | tee -a "$OUT/profile.log"
    continue
  fi
  cuobjdump -sass "$obj" >"$OUT/sass-$f.txt" 2>&1
  bash bench/runs/sass_ops.sh "$f" <"$OUT/sass-$f.txt" >>"$OUT/sass-ops.txt"
  gzip -f "$OUT/sass-$f.txt"
done
echo "sass done at $(($(date +%s) - START))s" | tee -a "$OUT/profile.log"
NCU_ARGS="--page source --print-source sass --section SourceCounters --section WarpStateStats
 --kernel-name regex:static_gemm --launch-count 1" \
  BUDGET_S=$((300 - ($(date +%s) - START))) BUILD_DIR="$B" \
  PROFILE_ROWS="--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 8 --path static" \
  scripts/gpu-profile.sh
gzip -f "$OUT"/ncu-*.csv 2>/dev/null
grep -E "^== |rc=|total|done" "$OUT/profile.log"
