#!/usr/bin/env bash
# Session 45, any card: the int4 GEMM on the dynamic path (make_grouped_gemm_w4a16: CUTLASS's
# ptr-array mixed-input mainloop on the 4-bit codes, int4_w4a16 groups 64 and 128, on by default;
# SERVEKIT_DYNAMIC_W4A16=0 gives the bf16 GEMMs on the dequantized copy of before).
#   1. build with tests (build/, reused from an earlier call of the lease); the GPU tests it
#      touches: the GEMM against its reference, its checks, the layout, the layer with it on and
#      off at groups 32/64/128, the weight copies, the odd sizes, every MoECudaQuant int4 case.
#   2. qwen3-235b-a22b int4 at 256-4096 tokens on the dynamic path, int4 GEMM against the bf16
#      copy (bench_row, --peer off, 1 token checked), and the static path at 256 and 512 beside
#      them (its cutover, session 44: 2048 rows). kimi-k2's 384 experts take ~2 minutes to
#      generate: not in this call.
#   3. if PROBE=1 and time is left: bench/tools/w4a16_probe.cu's configurations PROBE_CFGS
#      (default 0 1 2 4, as calls 1-2 ran; 6 is the 128x256 int4 tile).
#   4. if SUITE=1: the whole GPU suite (ctest -L gpu) in what is left of BUDGET_S.
# Prediction (first run, e201ee9: one 128x64 tile, plain codes): tests pass. qwen3-235b 512-1024
# tokens: the bf16 copy reads 4.8 GB of weights, the int4 GEMM 1.2 GB plus its conversion work:
# 2-3x faster at 512-1024, the gap closing by 4096 (tensor-bound; conversion on the same warps,
# maybe 10-20% slower there).
# Second run (the codes reordered for the register loads, and a 128x128 tile above 44 routed rows
# per expert, from the probe): 256-512 tokens ~20% under the first run (~780 us), 1024 ~1000,
# 2048 ~1450 (from 2286; the bf16 copy 2085), 4096 ~2500 (from 4150; the bf16 copy 2556).
# Device (carry [".deps"], ~7-9 min): SERVEKIT_COMMIT=<sha> BUDGET_S=480 PROBE=0 bash bench/runs/2026-12-12-s45-w4a16-layer.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-480}
B=build
work_dir w4a16layer
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
build_tests "$W/build.log"
gtest_run w4a16 "$B" 'GroupedGemmCuda.W4A16*:GroupedGemmW4A16Layout.*:MoECuda.W4A16GemmOnAndOff:MoECuda.PathDecidesTheWeightCopies:MoECuda.OddSizes:AllFormats/MoECudaQuant.*/int4_w4a16' 200
for on in 1 0; do
  bench_row "q235-w4a16-$on" SERVEKIT_DYNAMIC_W4A16=$on -- --preset qwen3-235b-a22b \
    --quant int4_w4a16 --routing uniform --path dynamic --tokens 256,512,1024,2048,4096
done
bench_row q235-static -- --preset qwen3-235b-a22b --quant int4_w4a16 --routing uniform \
  --path static --tokens 256,512
if [[ ${PROBE:-0} == 1 ]] && (($(left) > 150)); then
  P=/tmp/w4a16
  mkdir -p $P
  for c in ${PROBE_CFGS:-0 1 2 4}; do
    (nvcc -std=c++17 -O3 -arch=sm_90a --expt-relaxed-constexpr -I.deps/cutlass/include \
      -I.deps/cutlass/tools/util/include -DCFG=$c -o $P/w4a16_$c bench/tools/w4a16_probe.cu \
      >"$W/probe-build-$c.log" 2>&1; echo $? >$P/rc_$c) &
  done
  wait
  for c in ${PROBE_CFGS:-0 1 2 4}; do
    t=$(($(left) - 10))
    ((t > 10)) && [[ $(cat $P/rc_$c) == 0 ]] || { say "probe $c skipped"; continue; }
    timeout $t $P/w4a16_$c >"$W/probe-$c.log" 2>&1
    say "probe $c rc=$?"
    cat "$W/probe-$c.log" >>"$W/$WORK_NAME.txt"
  done
fi
if [[ ${SUITE:-0} == 1 ]]; then  # the rest of the lease: the whole GPU suite, time-boxed
  t=$(($(left) - 20))
  ((t > 60)) && gpu_suite $t
fi
say done
