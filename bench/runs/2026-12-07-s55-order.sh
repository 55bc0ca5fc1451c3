#!/usr/bin/env bash
# Session 55: the layer's stream order (src/cuda/stream_order.h: with
# SERVEKIT_FORWARD_STREAM_ORDER=1 a forward on another stream than the layer's last eager forward
# waits for it; off by default until this had run). Prepared in session 55, where no machine came
# for it; ran in session 56 on an H100 (PREBUILT=build-carry at d45222a, BUDGET_S=190;
# bench/results/h100/ab/2026-12-07-s56-order/): 2 and 5 passed, 3 level, so the default went to 1
# (docs/perf-notes.md, fifty-sixth pass). Its inline gzip unpack became carry-binaries.sh
# --unpack after it ran, then prelude's unpack_prebuilt (same commands).
#   1. main built with the tests;
#   2. MoECuda.ForwardsOnTwoStreamsAreOrdered (the order on; a 4096-token dynamic forward on one
#      stream, an 8-token static one on another while it runs; each must equal its solo run bit
#      for bit), then its disabled twin with the order off, alone in its own process (it races
#      on purpose: it shows the setup overlaps the forwards, so the test above can fail);
#   3. eager forwards with the order on and off, interleaved (servekit moe: each forward timed by
#      events around it, so host time shows): qwen3-30b-a3b bf16 at 1 token, 200 repeats;
#   4. on an H200: the issues' rows of record at this commit (scripts/gpu-check.sh,
#      BENCH_SET=issues, RUN_TESTS=0, on the same build; session 49's bench took 244 s), the last
#      being session 49's; it takes what is left, so 5 runs only on another card;
#   5. the static and layer GPU tests with the order on (graph captures included).
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=590 bash bench/runs/2026-12-07-s55-order.sh
# Without a device build (session 56; saves ~100-140 s): PREBUILT=build-carry, carry
# ["build-carry"], that folder holding servekit.gz and servekit_gpu_tests.gz built here with the
# same nvcc (13.0) from the commit named in build-carry/commit (scripts/carry-binaries.sh).
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-590}
B=build
work_dir_out s55-order
NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
say "$NAME"
if [[ -n ${PREBUILT:-} ]]; then
  B=$PREBUILT
  unpack_prebuilt "$B"
else
  build_tests "$W/build.log"
fi
gtest_run order "$B" 'MoECuda.ForwardsOnTwoStreamsAreOrdered' 150
timeout 150 "$B/servekit_gpu_tests" --gtest_also_run_disabled_tests \
  --gtest_filter='MoECuda.DISABLED_ForwardsOnTwoStreamsRaceUnordered' >"$W/tests-race.log" 2>&1
say "race (order off) rc=$? $(grep -hE '^unordered|^\[  (PASSED|FAILED) ' "$W/tests-race.log" | tr '\n' ' ')"
for round in 1 2; do
  for order in 1 0; do
    (($(left) < 25)) && break 2
    SERVEKIT_FORWARD_STREAM_ORDER=$order timeout 40 "$B/servekit" moe --preset qwen3-30b-a3b \
      --quant bf16 --tokens 1 --repeats 200 >"$W/eager-$order-$round.log" 2>&1
    say "eager order=$order round $round rc=$? $(grep -E '^qwen3' "$W/eager-$order-$round.log" | tr -s ' ')"
  done
done
if [[ $NAME == *H200* ]] && (($(left) > 300)); then
  env OUT="$W/check" BUDGET_S=$(($(left) - 25)) BUILD_DIR="$B" BENCH_SET=issues RUN_TESTS=0 \
    PREBUILT=$([[ -n ${PREBUILT:-} ]] && echo 1 || echo 0) \
    scripts/gpu-check.sh >"$W/gpu-check.log" 2>&1
  say "gpu-check issues rc=$? $(tail -n 1 "$W/check/summary.txt" 2>/dev/null)"
fi
# With the order on (the default it would become; tests that set the variable keep their own).
(($(left) > 100)) && SERVEKIT_FORWARD_STREAM_ORDER=1 gtest_run layer "$B" \
  '*StaticMoECuda*:MoECuda*:MoELayer*:RoutePlanCuda.*' $(($(left) - 60))
say done
