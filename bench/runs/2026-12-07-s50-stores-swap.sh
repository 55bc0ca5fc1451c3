#!/usr/bin/env bash
# Session 50, first call, any card: session 49's fused stores (bench/runs/s49-stores.patch, not
# yet GPU-run) and fp8_block128's swap-AB tile (128 weight rows x 144 tokens, new this session,
# forced by SERVEKIT_GEMM_TILE=swap; bench/runs/s50-fp8-swap.patch, applied to the device's tree
# first). One lease, two trees: this tree (old stores, with the swap tile) and a copy with the
# stores patch too (new stores, with tests).
#   1. the new tree's GPU tests of the two changes (the rest of its suite after the rows): every
#      fused test (bit for bit against the pass on every
#      fused tile) and GroupedGemmCuda.FP8Block128Swap (against the fp64 reference, the scale
#      producer of sm90_blockwise_exact_scales.cuh);
#   2. deepseek-v3 fp8_block128 at 8192 tokens: GEMM1 (stop 3) old / new stores, on the swap
#      tile; the layer old / swap / new; qwen3-235b int4 GEMM1 old / new; then GEMM1 alone on the
#      128x256 tile, the layer with the activation pass, GEMM1 on the 64x128 tile.
# Predictions. Stores (session 49): -30 to -50 us on qwen3-235b int4 GEMM1 (2926.0 with the
# activation, 2831.2 without), -80 to -140 us on deepseek-v3's (5850.0 / 5566.1). Swap tile:
# 1.135x the rows' MMAs against 1.241x; at the 128x256 tile's MMA rate GEMM1 alone would take
# 5566 x 1.135 / 1.241 = 5090 us, but CUTLASS's consumer promotes without overlap and 144-wide
# wgmma read more shared memory per MAC, so 5100-5600; the layer gains that minus the
# activation pass's cost over the fused epilogue (~0-100 us), i.e. -0 to -5%.
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=570 bash bench/runs/2026-12-07-s50-stores-swap.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-570}
work_dir_out s50-stores-swap
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
patch -p1 <bench/runs/s50-fp8-swap.patch >/dev/null || { say "s50-fp8-swap.patch does not apply"; exit 1; }
copy_tree /tmp/new-tree bench/runs/s49-stores.patch
# 8 jobs each: two heavy CUTLASS units at ~4 GB each per job. (build_tests exits its subshell on
# failure: the status is taken outside it.)
( (cd /tmp/new-tree && JOBS=8 B=build-new build_tests "$W/build-new.log"); echo $? >"$W/build-new.rc") &
env JOBS=8 BUILD_DIR="$B" SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF \
  >"$W/build.log" 2>&1 || { say "build failed: $(tail -n 20 "$W/build.log")"; exit 1; }
say "old built"
wait
say "new build rc=$(cat "$W/build-new.rc")"
NEW=/tmp/new-tree/build-new
# The tests the two changes touch first (every fused test, the swap tiles, the fp8 and int4
# GEMMs, the layer's fused and swap tests), boxed to 150 s; the rest of the suite at the end.
focused() {
  (cd "$NEW" && timeout "$1" ctest -L gpu -R "$2" --output-on-failure >"$W/tests-$3.log" 2>&1)
  say "gpu tests $3 rc=$? $(grep -E 'tests passed|failed out of' "$W/tests-$3.log")"
  grep -E "^\s+[0-9]+ - .*\((Failed|Timeout)\)" "$W/tests-$3.log" >>"$W/$WORK_NAME.txt"
}
FOCUS='Fused|Swap|FP8Block128|ActEpilogue|W4A16|Activation'
focused $(($(left) - 200 > 150 ? 150 : $(left) - 200)) "$FOCUS" focused
ds=(--preset deepseek-v3 --quant fp8_block128 --routing uniform --path dynamic --tokens 8192)
q235=(--preset qwen3-235b-a22b --quant int4_w4a16 --routing uniform --path dynamic --tokens 8192)
bench_row ds-stop3-old SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${ds[@]}"
BIN=$NEW/servekit bench_row ds-stop3-new SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${ds[@]}"
bench_row ds-stop3-swap SERVEKIT_GEMM_TILE=swap SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${ds[@]}"
bench_row ds-old -- "${ds[@]}"
bench_row ds-swap SERVEKIT_GEMM_TILE=swap -- "${ds[@]}"
BIN=$NEW/servekit bench_row ds-new -- "${ds[@]}"
bench_row q235-stop3-old SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${q235[@]}"
BIN=$NEW/servekit bench_row q235-stop3-new SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${q235[@]}"
bench_row ds-stop3-alone SERVEKIT_DYNAMIC_FUSED_ACT=0 SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${ds[@]}"
bench_row ds-pass SERVEKIT_DYNAMIC_FUSED_ACT=0 -- "${ds[@]}"
bench_row ds-stop3-small SERVEKIT_GEMM_TILE=small SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${ds[@]}"
(($(left) > 40)) && (cd "$NEW" && timeout $(($(left) - 10)) ctest -L gpu -E "$FOCUS" \
  --output-on-failure >"$W/tests-rest.log" 2>&1; echo "rc=$?" >>"$W/tests-rest.log")
say "gpu tests rest: $(grep -E 'tests passed|failed out of|^rc=' "$W/tests-rest.log" 2>/dev/null | tr '\n' ' ')"
say done
