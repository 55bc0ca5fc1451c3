#!/usr/bin/env bash
# Session 47, third call on the warm H100 (same build): why the fused int4 activation costs GEMM1
# as much as the pass it removes (stop rows at 8192 tokens: GEMM1 2485 us alone, 2750 us fused;
# the pass 287 us). ncu's GEMM sections (NCU_GEMM_DETAILS: the first two device_kernel launches,
# GEMM1 and GEMM2) on qwen3-235b int4 at 8192 tokens, fused and SERVEKIT_DYNAMIC_FUSED_ACT=0.
# Prediction: the fused GEMM1 shows more stall on the epilogue's stores (LSU / long scoreboard)
# and the same tensor-pipe work; DRAM bytes written halve.
# Device (carry [".deps"], warm, ~3 min): SERVEKIT_COMMIT=<sha> BUDGET_S=200 bash bench/runs/2026-12-15-s47-w4a16-act-ncu.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-200}
B=build
work_dir w4a16ncu
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
build_tests "$W/build.log"
Q="--preset qwen3-235b-a22b --quant int4_w4a16 --path dynamic --tokens 8192"
profile_row fused "$Q" "$NCU_GEMM_DETAILS" SERVEKIT_DYNAMIC_FUSED_ACT=1
profile_row pass "$Q" "$NCU_GEMM_DETAILS" SERVEKIT_DYNAMIC_FUSED_ACT=0
for t in fused pass; do say "$t: $(head -c 3000 "$W/ncu-$t/ncu-table.txt")"; done
say done
