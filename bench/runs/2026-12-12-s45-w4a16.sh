#!/usr/bin/env bash
# Session 45, any card: would CUTLASS 4.2's ptr-array mixed-input grouped GEMM (int4 weights with
# bf16 group scales, converted in registers) carry the dynamic path's 4-bit formats?
# bench/tools/w4a16_probe.cu in six configurations (int4 cooperative 128x64 plain / reordered,
# 128x128 reordered, ping-pong 64x64 reordered; bf16 cooperative 128x64 and 128x128 as the
# comparison), each checked against a device reference, then timed on qwen3-235b-a22b's and
# kimi-k2's GEMM shapes at 256-4096 tokens. The probes build on the CPUs while, if CUTOVER=1,
# 2026-12-12-s45-h200-cutover.sh's rows run on the GPU (build/ as the last call left it).
# Prediction: the int4 kernels read a quarter of the bytes, so where bf16 is bound by its weight
# reads (up to ~1024 tokens on qwen3-235b: 128 experts x 64 rows) int4 is 1.5-3x faster; past
# ~2048 tokens both are bound by the tensor cores and int4 is 0-20% slower (its conversion runs
# on the same warps). Reordered faster than plain by a few %.
# Device (carry [".deps"], ~5-8 min): SERVEKIT_COMMIT=<sha> BUDGET_S=420 CUTOVER=0|1 bash bench/runs/2026-12-12-s45-w4a16.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-420}
work_dir w4a16
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
P=/tmp/w4a16
mkdir -p $P
for c in 0 1 2 3 4 5; do
  (nvcc -std=c++17 -O3 -arch=sm_90a --expt-relaxed-constexpr -I.deps/cutlass/include \
    -I.deps/cutlass/tools/util/include -DCFG=$c -o $P/w4a16_$c bench/tools/w4a16_probe.cu \
    >"$W/build-$c.log" 2>&1; echo $? >$P/rc_$c) &
done
if [[ ${CUTOVER:-0} == 1 ]]; then
  B=build
  build_tests "$W/build.log"
  row_opts=(--routing uniform --path both --peer off --check-tokens 8)
  t=$(($(left) - 150))
  ((t > 40)) && timeout $t "$B/servekit" bench moe \
    --preset deepseek-v3 --quant fp8_block128 --tokens 1,2,4,8,16 "${row_opts[@]}" \
    --then --preset deepseek-v3 --quant bf16 --tokens 1,2,4,8 "${row_opts[@]}" \
    --then --preset qwen3-235b-a22b --quant int4_w4a16 --tokens 64,128,256,384,512 "${row_opts[@]}" \
    --then --preset gpt-oss-120b --quant mxfp4_w4a16 --tokens 64,128,256,512 "${row_opts[@]}" \
    --then --preset kimi-k2 --quant int4_w4a16 --tokens 64,256,512 "${row_opts[@]}" \
    --max-seconds $((t - 15)) --commit "${SERVEKIT_COMMIT:-unknown}" --out "$OUT/cutover.json" \
    >"$OUT/cutover.log" 2>&1
  say "cutover rc=$?"
  grep -E '^(deepseek|qwen|gpt|kimi)' "$OUT/cutover.log" | tee -a "$W/$WORK_NAME.txt"
fi
wait
for c in 0 1 2 3 4 5; do
  say "probe $c build rc=$(cat $P/rc_$c)"
  [[ $(cat $P/rc_$c) == 0 ]] || { grep -m 5 error "$W/build-$c.log" >>"$W/$WORK_NAME.txt"; continue; }
  t=$(($(left) - 10))
  ((t > 10)) || { say "probe $c skipped (budget)"; continue; }
  timeout $t $P/w4a16_$c >"$W/probe-$c.log" 2>&1
  say "probe $c rc=$?"
  cat "$W/probe-$c.log" >>"$W/$WORK_NAME.txt"
done
say done
