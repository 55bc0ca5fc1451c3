#!/usr/bin/env bash
# Session 58, on an H200 only (ends at once on any other card: a call that names nvidia-h200 may
# get an H100), from binaries built on the CPU machine (the kernels are 661253c's):
#   1. the whole GPU suite in one process, the first on an H200 since session 38 (~105-210 s);
#   2. issue 4's tail rows (BENCH_SET=issue4b: kimi-k2 int4 at 1 / 8 / 32 tokens, both paths, and
#      the all-on-one-expert rows of qwen3-235b bf16 and deepseek-v3 fp8_block128), five of which
#      session 57's issues call lost to its time box (~90 s).
# Not run yet: session 58's device time ran out (its calls:
# bench/results/h100/ab/2026-12-07-s58-h16/calls.txt).
# Device (carry ["build-carry"], from scripts/carry-binaries.sh at the commit):
#   SERVEKIT_COMMIT=<sha> BUDGET_S=400 bash bench/runs/2026-12-07-s58-h200.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-400}
B=${PREBUILT:-build-carry}
nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200 || { echo "not an H200"; exit 0; }
prebuilt_start s58-h200
gtest_run all "$B" '*' $(($(left) - 120))
prebuilt_check issue4b $(($(left) - 5))
say "done"
