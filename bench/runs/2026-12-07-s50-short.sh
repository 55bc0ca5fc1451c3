#!/usr/bin/env bash
# Session 50, the short form of 2026-12-07-s50-stores-swap.sh for a lease of ~400-500 s: one
# tree, this one with bench/runs/s50-fp8-swap.patch and s49-stores.patch applied on the device
# (main keeps its GPU-checked kernels until the changes have run), built with tests on every core.
#   1. the GPU tests of the two changes (every fused test, the swap tiles with
#      GroupedGemmCuda.FP8Block128Swap, the fp8 and int4 GEMMs), boxed to 150 s;
#   2. deepseek-v3 fp8_block128 at 8192 tokens: GEMM1 (stop 3) with the new stores and on the
#      swap-AB tile, the layer both ways; qwen3-235b int4 GEMM1 with the new stores. The stores
#      compare with session 49's H200 rows at a12e3a0 (another lease: under ~2% is no evidence);
#      the swap tile with the new-stores rows of this lease (the swap runs fuse nothing);
#   3. the rest of the GPU suite with what is left.
# Predictions: the tests pass. Stores: -80 to -140 us on deepseek-v3's GEMM1 with the activation
# (5850.0 in session 49, H200), -30 to -50 on qwen3-235b int4's (2926.0). Swap tile: GEMM1 alone
# 5100-5600 us against the 128x256 tile's 5566 (1.135x the rows' MMAs against 1.241x, at a lower
# rate per MMA: CUTLASS's consumer promotes without overlap); the layer 0 to -5%.
# Ran once, session 50 at a155582 on an H100 with BUDGET_S=360 ROWS_S=100
# (bench/results/h100/ab/2026-12-07-s50-short): 42/42 focused tests, the layer 8911.0 us on the
# 128x256 tile against 9719.7 on the swap tile. Since then the stores are on main and
# s49-stores.patch is gone: this script is the record of that call.
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=420 bash bench/runs/2026-12-07-s50-short.sh
# (BUDGET_S=330 ROWS_S=70 on a lease of ~360 s: the layer rows only.)
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-420}
work_dir_out s50-short
for p in bench/runs/s50-fp8-swap.patch bench/runs/s49-stores.patch; do
  patch -p1 <"$p" >/dev/null || { say "$p does not apply"; exit 1; }
done
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
build_tests "$W/build.log"
say built
FOCUS='Fused|Swap|FP8Block128|ActEpilogue|W4A16|Activation'
# ROWS_S: seconds kept for the rows after the focused tests (150; less on a short lease).
ROWS_S=${ROWS_S:-150}
(cd "$B" && timeout $(($(left) - ROWS_S > 150 ? 150 : $(left) - ROWS_S)) ctest -L gpu -R "$FOCUS" \
  --output-on-failure >"$W/tests-focused.log" 2>&1)
say "gpu tests focused rc=$? $(grep -E 'tests passed|failed out of' "$W/tests-focused.log")"
grep -E "^\s+[0-9]+ - .*\((Failed|Timeout)\)" "$W/tests-focused.log" >>"$W/$WORK_NAME.txt"
ds=(--preset deepseek-v3 --quant fp8_block128 --routing uniform --path dynamic --tokens 8192)
q235=(--preset qwen3-235b-a22b --quant int4_w4a16 --routing uniform --path dynamic --tokens 8192)
bench_row ds-new -- "${ds[@]}"
bench_row ds-swap SERVEKIT_GEMM_TILE=swap -- "${ds[@]}"
bench_row ds-stop3-new SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${ds[@]}"
bench_row ds-stop3-swap SERVEKIT_GEMM_TILE=swap SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${ds[@]}"
bench_row q235-stop3-new SERVEKIT_DIAG_DYNAMIC_STOP=3 -- "${q235[@]}"
(($(left) > 40)) && (cd "$B" && timeout $(($(left) - 10)) ctest -L gpu -E "$FOCUS" \
  --output-on-failure >"$W/tests-rest.log" 2>&1; echo "rc=$?" >>"$W/tests-rest.log")
say "gpu tests rest: $(grep -E 'tests passed|failed out of|^rc=' "$W/tests-rest.log" 2>/dev/null | tr '\n' ' ')"
say done
