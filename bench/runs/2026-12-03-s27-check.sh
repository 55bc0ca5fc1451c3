#!/usr/bin/env bash
# Session 27, last device call: the whole GPU suite, CPU suite and compute-sanitizer on main with
# fp8_per_tensor's EVT alpha and the swap-AB tile's 128x48 epilogue subtile as defaults (call 4
# ran 26 GEMM / layer / peer tests on the same code built with the A/B switch).
# Device (carry [".deps"], ~5 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-03-s27-check.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
OUT="$OUT/check" BENCH_SET=none BUDGET_S=${BUDGET_S:-300} BUILD_DIR=$B scripts/gpu-check.sh
