#!/usr/bin/env bash
# Session 57: at one commit, from binaries built on the CPU machine (no device build):
#   1. on an H200 only: the issues' rows of record (scripts/gpu-check.sh, BENCH_SET=issues,
#      RUN_TESTS=0; session 49's bench took 244 s), given what is left less ~215 s for 2;
#   2. the whole GPU suite (servekit_gpu_tests, every test, one process; ~195 s on an H100 in
#      session 56), which includes MoECuda.ForwardsOnTwoStreamsAreOrdered in the form that runs
#      the default (SERVEKIT_FORWARD_STREAM_ORDER unset), not yet run on a GPU.
# Ran twice at 661253c on an H100 (BUDGET_S=300, then 585 on a call named nvidia-h200 that got an
# H100): 162/162 both times, 103 s and 211 s (bench/results/h100/ab/2026-12-07-s57-record/). The
# H200 rows came from a hand-typed gpu-check call that first checked the card
# (bench/results/h200/2026-12-07-issues-s57*; every call is in the h100 folder's calls.txt).
# Device (carry ["build-carry"], that folder from scripts/carry-binaries.sh at the commit):
#   SERVEKIT_COMMIT=<sha> BUDGET_S=590 bash bench/runs/2026-12-07-s57-record.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-590}
B=${PREBUILT:-build-carry}
work_dir_out s57-record
NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
say "$NAME"
unpack_prebuilt "$B"
if [[ $NAME == *H200* ]] && (($(left) > 480)); then
  prebuilt_check issues $(($(left) - 215))
fi
gtest_run all "$B" '*' $(($(left) - 10))
grep -E "tests? from .* ran" "$W/tests-all.log" | tail -n 1 >>"$W/$WORK_NAME.txt"
say "done"
