#!/usr/bin/env bash
# Not run in session 31 (a refused start left too little budget); run as session 32's first
# call at f571d85: 138/138 (ab/2026-12-03-s32-suite). What it runs: the whole GPU suite
# (ctest -L gpu) at the one-token route + plan path's final form (c08af3c on); session 31's
# call 3 ran only the route + plan, static and layer tests on it (call 2 ran the whole suite on
# the first version, 0406906).
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-03-s31-suite.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, say, left
BUDGET_S=${BUDGET_S:-380}
work_dir s31-suite
build_dev "$W/build.log"
say "build done"
timeout --kill-after=10 $(($(left) - 10)) ctest --test-dir "$B" -L gpu --output-on-failure \
  --timeout 120 >"$W/ctest-gpu.log" 2>&1
say "whole GPU suite rc=$? $(grep -E 'tests passed|tests failed' "$W/ctest-gpu.log")"
grep -E "Failed|\*\*\*" "$W/ctest-gpu.log" | head -20 >>"$W/$WORK_NAME.txt"
