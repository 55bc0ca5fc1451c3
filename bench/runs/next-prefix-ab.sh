#!/usr/bin/env bash
# Ran in session 18 (one lease, ab/2026-12-02-s18-prefix-*): both patches merged (7765e6f), so
# `prepare` no longer applies on main; kept as the record of the call.
# Prepared in session 17 (compile-checked for sm_90a, CPU suite 388/388 with each patch; not
# GPU-run): two questions about the one-token prefix (docs/perf-notes.md, seventeenth pass).
#   a. Does GEMM1 (or the planner), launched at the route + plan kernel's start and resident while
#      it routes, slow the routing down? bench/runs/late-trigger.patch adds the diagnostic
#      SERVEKIT_DIAG_ROUTE_LATE_TRIGGER=1 (the kernel triggers its dependents after routing).
#      Prediction: if so, entry -> routed (10.5 us on kimi-k2, 4.1-4.4 on the qwen3 presets at one
#      token) shrinks and the rows gain that minus whatever of GEMM1's launch the plan and task
#      list (3.6-7.6 us) no longer hide; if not, level or a little slower.
#   b. kimi-k2's routing on 12 experts per lane instead of 16 (bench/runs/lanes12.patch: the
#      dispatch takes 12 for E = 257..384; ptxas: 52 / 60 bytes of spills instead of 252 / 568).
#      Prediction: -1 to -3 us on kimi-k2 at 1 and 8 tokens if its spills and 16-key rescans cost
#      the routing; session 16's lean edits cut spills too and gained nothing, so maybe level.
# 1. Here: bash bench/runs/next-prefix-ab.sh prepare   (trees ab-late, ab-late12: untracked)
# 2. Device (carry [".deps"], ~7 min): SERVEKIT_COMMIT=<sha> bash bench/runs/next-prefix-ab.sh
#    builds both trees, runs the routing / plan / static GPU tests of ab-late12 with the late
#    trigger on (both patches' code), then the rows: ab-late with the switch off and on, and
#    ab-late12 off (kimi-k2, the only preset it changes), two rounds, and the prefix stamps.
# 3. Delete ab-late and ab-late12 afterwards. Merge late-trigger.patch if the tests pass (off by
#    default; default on if the rows say so), lanes12.patch if kimi-k2 gains.
# Output: OUT/prefix.tgz, OUT/prefix.txt.
set -uo pipefail
# shellcheck source=bench/runs/prelude.sh
source "$(dirname "$0")/prelude.sh"
if [[ ${1:-} == prepare ]]; then
  for d in ab-late ab-late12; do
    rm -rf "$d" && mkdir "$d" && git archive HEAD | tar -x -C "$d"
    git apply --directory="$d" bench/runs/late-trigger.patch || exit 1
  done
  git apply --directory=ab-late12 bench/runs/lanes12.patch || exit 1
  exit 0
fi
[[ -d ab-late && -d ab-late12 ]] || { echo "run '$0 prepare' first, here"; exit 1; }
BUDGET_S=${BUDGET_S:-540}
work_dir prefix
for d in ab-late ab-late12; do
  ln -sfn "$PWD/.deps" "$d/.deps"
  tests=OFF
  [[ $d == ab-late12 ]] && tests=ON
  (cd "$d" && env JOBS=$(($(nproc) / 2)) BUILD_DIR=build SERVEKIT_WERROR=OFF scripts/build.sh \
    -DSERVEKIT_TESTS=$tests >"$W/build-$d.log" 2>&1; echo "rc=$?" >>"$W/build-$d.log") &
done
wait
for d in ab-late ab-late12; do say "build $d $(tail -n 1 "$W/build-$d.log")"; done
SERVEKIT_DIAG_ROUTE_LATE_TRIGGER=1 timeout 150 ab-late12/build/servekit_gpu_tests \
  --gtest_filter='RoutingCuda.*:PlanCuda.*:RoutePlanCuda.*:*Static*' >"$W/tests.log" 2>&1
say "tests ab-late12 (late trigger on) rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$W/tests.log" | tr '\n' ' ')"
SK="--routing uniform --path static --tokens 1,8"
for round in 1 2; do
  for pq in "kimi-k2 int4_w4a16" "qwen3-235b-a22b bf16" "qwen3-30b-a3b bf16" "deepseek-v3 fp8_block128"; do
    read -r pr q <<<"$pq"
    for late in 0 1; do
      BIN=ab-late/build/servekit bench_row "r$round-$pr-late$late" SERVEKIT_DIAG_ROUTE_LATE_TRIGGER=$late \
        -- --preset "$pr" --quant "$q" $SK
    done
    [[ $pr == kimi-k2 ]] && BIN=ab-late12/build/servekit bench_row "r$round-$pr-lanes12" \
      SERVEKIT_DIAG_ROUTE_LATE_TRIGGER=0 -- --preset "$pr" --quant "$q" $SK
  done
done
stamps() {  # TAG BIN LATE PRESET QUANT
  BIN=$2 bench_row "stamps-$1" SERVEKIT_DIAG_ROUTE_LATE_TRIGGER=$3 SERVEKIT_DIAG_STATIC_TIMES=1 \
    -- --preset "$4" --quant "$5" $SK
  grep -E "diag-times (route|planner)" "$W/stamps-$1.log" | sed "s/^/$1 /" >>"$W/prefix.txt"
}
stamps kimi-late0 ab-late/build/servekit 0 kimi-k2 int4_w4a16
stamps kimi-late1 ab-late/build/servekit 1 kimi-k2 int4_w4a16
stamps kimi-lanes12 ab-late12/build/servekit 0 kimi-k2 int4_w4a16
stamps q235-late0 ab-late/build/servekit 0 qwen3-235b-a22b bf16
stamps q235-late1 ab-late/build/servekit 1 qwen3-235b-a22b bf16
cat "$W/prefix.txt"
