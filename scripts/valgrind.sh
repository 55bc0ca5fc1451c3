#!/usr/bin/env bash
# Runs every CPU test of a CPU-only build (build-vg/, RelWithDebInfo) under valgrind's memcheck,
# which sees what AddressSanitizer (scripts/sanitize.sh, run by CI) does not: reads of
# uninitialized memory. Not in CI: ~4 minutes on 2 cores besides the build. One valgrind per
# core, each on a gtest shard; any error (or a definite leak) fails it.
# Left out, with the reason: the throughput test (*FastEnough*, a wall-clock bound that valgrind's
# 20-50x slowdown breaks), and the two tests that set the x86 FTZ / DAZ bits and expect the host's
# arithmetic to flush subnormals (valgrind does not emulate those MXCSR modes).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh valgrind
BUILD_DIR=build-vg scripts/build.sh -DSERVEKIT_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
skip='*FastEnough*:ExactMath.DetectsFlushToZeroAndDenormalsAreZero:RouteCpu.ZeroTokensAndErrors'
shards=${JOBS:-$(nproc)}
pids=()
for ((i = 0; i < shards; ++i)); do
  GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i valgrind -q --error-exitcode=99 \
    --leak-check=full --errors-for-leak-kinds=definite --track-origins=yes \
    build-vg/servekit_tests --gtest_filter="-$skip" >"build-vg/valgrind-$i.log" 2>&1 &
  pids+=($!)
done
rc=0
for ((i = 0; i < shards; ++i)); do
  if wait "${pids[$i]}"; then
    echo "valgrind: shard $i clean ($(grep -cE '^\[       OK' "build-vg/valgrind-$i.log") tests)"
  else
    echo "valgrind: shard $i failed, build-vg/valgrind-$i.log:" && tail -n 40 "build-vg/valgrind-$i.log"
    rc=1
  fi
done
exit $rc
