#!/usr/bin/env bash
# RAN in session 24 (3d23af7): only diag 4 (store() kept) passed; docs/perf-notes.md, twenty-fourth pass.
# Session 24, third call: every fused run hangs, even with the fused epilogue returning at once
# (SERVEKIT_DIAG_FUSED_EPI=2, s24-debug). The two things a fused run still changes: CUTLASS's
# store() is skipped, and D's per-group pointer is the intermediate's base (no d given).
#   d2v: diag 2 with a real D pointer (SERVEKIT_DIAG_FUSED_D=1)    -> passes if the D pointer hangs it
#   d4v: diag 4, the fused store and then CUTLASS's store into D   -> passes if skipping store() hangs it
#   d0v: as merged, with a real D pointer
# Device (carry [".deps"], ~4 min): bash bench/runs/2026-12-02-s24-debug2.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-250}
work_dir s24-debug2
build_dev "$W/build.log"
say "build done"
run() {
  local tag=$1
  shift
  env "$@" timeout 25 "$B/servekit_gpu_tests" --gtest_filter='GroupedGemmCuda.BF16FusedActivation' \
    >"$W/$tag.log" 2>&1
  say "$tag rc=$? $(grep -E '^\[  (PASSED|FAILED) |Failure' "$W/$tag.log" | head -3 | tr '\n' ' ')"
}
run d2v SERVEKIT_DIAG_FUSED_EPI=2 SERVEKIT_DIAG_FUSED_D=1
run d4v SERVEKIT_DIAG_FUSED_EPI=4 SERVEKIT_DIAG_FUSED_D=1
run d0v SERVEKIT_DIAG_FUSED_EPI=0 SERVEKIT_DIAG_FUSED_D=1
run d2n SERVEKIT_DIAG_FUSED_EPI=2
say "done"
