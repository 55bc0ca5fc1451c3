#!/usr/bin/env bash
# Session 40: issue 3's and issue 4's rows at main on an H200, with the sanitizer stages
# (scripts/gpu-check.sh BENCH_SET=issues, or the BENCH_SET given, RUN_TESTS=sanitize; the GPU suite passed at this code on
# an H100 in calls 1-2). The targets are H200 numbers and a call may land on an H100, so on any
# other card it stops at once (a few seconds of device time instead of the whole call).
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-06-s40-h200-rows.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
case $name in
  *H200*) ;;
  *) echo "not an H200 ($name): stopping"; exit 3 ;;
esac
env OUT="${OUT:-$PWD/out}" BENCH_SET="${BENCH_SET:-issues}" RUN_TESTS=sanitize BUDGET_S="${BUDGET_S:-560}" \
  scripts/gpu-check.sh
