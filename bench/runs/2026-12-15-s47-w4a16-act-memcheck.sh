#!/usr/bin/env bash
# Session 47, fourth call: compute-sanitizer memcheck of the fused int4 activation's tests (the
# epilogue's direct global stores): the GEMM alone on every tile and cluster, and the layer fused
# and not. Prediction: 0 errors.
# Device (carry [".deps"], ~5 min on a fresh machine): SERVEKIT_COMMIT=<sha> BUDGET_S=400 bash bench/runs/2026-12-15-s47-w4a16-act-memcheck.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-400}
B=build
work_dir w4a16memcheck
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
build_tests "$W/build.log"
memcheck_run w4a16 "$B" 'GroupedGemmCuda.W4A16FusedActivation:MoECuda.W4A16GemmOnAndOff'
say done
