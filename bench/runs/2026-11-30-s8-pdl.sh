#!/usr/bin/env bash
# Device call, session 8, first: the dynamic path's kernels chained with programmatic dependent
# launch (kernels/pdl.cuh, the GEMMs through PdlKernel). One build; then
#   1. the whole GPU suite with PDL on (the default), and compute-sanitizer memcheck of the
#      dynamic path with PDL for bf16, fp8_per_tensor (the memset + amax passes) and
#      fp8_block128;
#   2. A/B in one lease: dynamic-path rows with SERVEKIT_DYNAMIC_PDL=0 and =1, interleaved, two
#      rounds (results are identical either way; only the times may differ);
#   3. prefix times of the dynamic path in the graph (SERVEKIT_DIAG_DYNAMIC_STOP=1..5, PDL on):
#      which pass costs what at decode sizes.
# Run (carry [".deps"], timeout_s 600): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-11-30-s8-pdl.sh
# Output: OUT/tests.txt, OUT/memcheck.txt, OUT/rows.txt, OUT/extra.tgz (json + logs).
set -uo pipefail
# shellcheck source=bench/runs/prelude.sh
source "$(dirname "$0")/prelude.sh"
W=$(mktemp -d)
trap 'tar -czf "$OUT/extra.tgz" -C "$W" .' EXIT
left() { echo $((START + 570 - $(date +%s))); }
COMMIT=${SERVEKIT_COMMIT:-unknown}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$W/gpu.txt"
build_dev "$W/build.log"
echo "build done at $(($(date +%s) - START))s" | tee "$OUT/tests.txt"
timeout 220 "$B/servekit_gpu_tests" >"$W/tests.log" 2>&1
echo "GPU tests rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$W/tests.log" | tr '\n' ' ') at $(($(date +%s) - START))s" | tee -a "$OUT/tests.txt"
grep -E '^\[  FAILED' "$W/tests.log" | head -20 >>"$OUT/tests.txt"
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 100 "$SAN" --tool memcheck --error-exitcode 1 "$B/servekit" bench moe --preset tiny \
  --quant bf16,fp8_per_tensor,fp8_block128 --tokens 5,33 --routing uniform --path dynamic \
  --repeats 1 --warmup 0 --check-tokens 33 --peer off >"$W/memcheck.log" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$W/memcheck.log" | tr '\n' ' ') at $(($(date +%s) - START))s" | tee "$OUT/memcheck.txt"

ROWS="--preset deepseek-v3 --quant fp8_block128 --tokens 8,32,128 --routing uniform --path dynamic
 --then --preset qwen3-235b-a22b --quant bf16 --tokens 8,32 --routing uniform --path dynamic
 --then --preset qwen3-30b-a3b --quant bf16 --tokens 32,2048 --routing uniform --path dynamic
 --then --preset deepseek-v3 --quant fp8_block128 --tokens 128 --routing one --path dynamic"
bench() {  # tag, env..., then rows
  local tag=$1
  shift
  (($(left) < 45)) && { echo "skip $tag (budget)" >>"$W/rows.log"; return; }
  # shellcheck disable=SC2046
  timeout $(($(left) - 15)) env "$@" "$B/servekit" bench moe $(echo "$ROWS" | tr '\n' ' ') \
    --peer off --check-tokens 1 --commit "$COMMIT-$tag" --out "$W/$tag.json" >>"$W/rows.log" 2>&1
  echo "$tag rc=$? at $(($(date +%s) - START))s" >>"$W/rows.log"
}
bench pdl0-r1 SERVEKIT_DYNAMIC_PDL=0
bench pdl1-r1 SERVEKIT_DYNAMIC_PDL=1
bench pdl0-r2 SERVEKIT_DYNAMIC_PDL=0
bench pdl1-r2 SERVEKIT_DYNAMIC_PDL=1
ROWS="--preset deepseek-v3 --quant fp8_block128 --tokens 8,32 --routing uniform --path dynamic
 --then --preset qwen3-30b-a3b --quant bf16 --tokens 32 --routing uniform --path dynamic"
for stop in 1 2 3 4 5; do bench stop$stop SERVEKIT_DIAG_DYNAMIC_STOP=$stop; done
python3 - "$W" >"$OUT/rows.txt" <<'PY'
import json, glob, os, sys
for f in sorted(glob.glob(f"{sys.argv[1]}/*.json")):
    for r in json.load(open(f))["rows"]:
        print(f"{os.path.basename(f):14} {r['preset']:16} {r['quant']:13} {r['tokens']:5} "
              f"{r['routing']:8} {r['path']:8} {r['us']:9.1f} {r['us'] / r['floor_us']:5.2f} {r['status']}")
PY
cat "$OUT/rows.txt"
tail -n 12 "$W/rows.log"
