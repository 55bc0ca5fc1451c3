#!/usr/bin/env bash
# Session 59, from binaries built on the CPU machine (carry ["build-carry"], from
# scripts/carry-binaries.sh at the commit; the kernels are 661253c's):
#   1. on any card: the whole GPU suite in one process (~105-210 s), the first GPU run of the
#      test files split in session 58 (test_grouped_gemm_w4a16_cuda.cpp, test_moe_cuda_paths.cpp
#      and their helper headers);
#   2. on an H200 only: issue 4's tail rows (BENCH_SET=issue4b, ~90 s: kimi-k2 int4 at 1 / 8 / 32
#      tokens, both paths, and the all-on-one-expert rows), five of which session 57's issues
#      call lost to its time box. A call that names nvidia-h200 may get an H100, so the script
#      checks the card instead of ending the call unused (session 58's s58-h200.sh ended at once).
# H200_ONLY=1 ends the call at once on any other card (for the tries after the suite has passed
# on an H100 in this session).
# Ran at 8af5fe8 on an H100 (162/162, bench/results/h100/ab/2026-12-07-s59-suite/); with
# H200_ONLY=1 at 4bf8f4e an H100 came again and the call ended at once. Still to run on an H200.
# TESTS=<gtest filter> (default '*') and ROWS=0 (default 1) narrow the call to what a short
# budget fits.
# The card check was switched to prelude's on_h200 and h200_only after these calls ran (the same
# commands).
# Device:
#   [H200_ONLY=1] [TESTS=...] [ROWS=0] SERVEKIT_COMMIT=<sha> BUDGET_S=400 \
#     bash bench/runs/2026-12-07-s59-suite.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-400}
B=${PREBUILT:-build-carry}
[[ ${H200_ONLY:-0} == 1 ]] && h200_only
prebuilt_start s59-suite
gtest_run all "$B" "${TESTS:-*}" $(($(left) - 100 * ${ROWS:-1}))
if [[ ${ROWS:-1} == 0 ]]; then
  say "no rows (ROWS=0)"
elif on_h200; then
  prebuilt_check issue4b $(($(left) - 5))
else
  say "not an H200: no rows"
fi
say "done"
