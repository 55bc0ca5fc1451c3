#!/usr/bin/env bash
# RAN in session 23; the change lost and was reverted (bench/runs/fp8-idle-wg.patch keeps it).
# Session 23: fp8_block128's 128x256 tile skips the products of a warp group whose 64 rows all
# lie past the group's end (sm90_blockwise_halves.cuh: the scale producer marks those rows'
# a_scale -0, the warp group reads the mark on its first row). A/B in one lease against the same
# tree built with -DSERVEKIT_DIAG_FP8_NO_IDLE_SKIP=1 (the base's scale producer, no skip), and
# the whole GPU suite on the new build (so the call is also the check of the change):
#   1. build (new) and the GPU suite (OUT/s23-idle/tests.log); the old build alongside
#   2. deepseek-v3 fp8_block128 dynamic at 768, 1024, 2048, 8192 tokens, new vs old, two rounds
#   3. the 64-row tile against the new 128-row one where auto picks the 64-row (256-768 tokens)
#   4. issue 3's fp8 rows with the cuBLAS peer, 32 tokens checked (OUT/issue3-fp8.json, .log)
# Prediction: at 2048 tokens (~64 rows per routed expert: about half the groups' one tile has
# <= 64 rows) -8 to -15%; at 8192 (~256 +- 16 rows: about half the groups end in a tile of
# <= 64 rows) -3 to -6%; 768 / 1024 level to -5%. The idle warp group's partner runs alone, so
# its promotion waits are no longer covered by the other group's wgmma.
# Device (carry [".deps"], ~9 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-02-s23-idle.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, bench_row
BUDGET_S=${BUDGET_S:-570}
work_dir s23-idle
build_dev "$W/build.log"
say "build done"
(cmake -S . -B build-old -G Ninja -DSERVEKIT_WERROR=OFF \
  -DCMAKE_CUDA_FLAGS=-DSERVEKIT_DIAG_FP8_NO_IDLE_SKIP=1 >/dev/null &&
  cmake --build build-old -j 8 --target servekit) >"$W/build-old.log" 2>&1 &
OLD_PID=$!
timeout 220 "$B/servekit_gpu_tests" >"$W/tests.log" 2>&1
say "GPU tests rc=$? $(grep -E '^\[  (PASSED|FAILED) ' "$W/tests.log" | tr '\n' ' ')"
grep -E '^\[  FAILED  \]' "$W/tests.log" | head -20
wait $OLD_PID
say "old build rc=$?"
DS="--preset deepseek-v3 --quant fp8_block128 --routing uniform --path dynamic"
for round in 1 2; do
  # shellcheck disable=SC2086
  bench_row "r$round-new" -- $DS --tokens 768,1024,2048,8192
  # shellcheck disable=SC2086
  BIN=build-old/servekit bench_row "r$round-old" -- $DS --tokens 768,1024,2048,8192
done
# shellcheck disable=SC2086
bench_row "new-large" SERVEKIT_GEMM_TILE=large -- $DS --tokens 256,512,768
LEFT=$(left)
((LEFT > 60)) && timeout $((LEFT - 10)) "$B/servekit" bench moe \
  --preset deepseek-v3 --quant fp8_block128 --tokens 2048,8192 --routing uniform --check-tokens 32 \
  --max-seconds $((LEFT - 30)) --commit "${SERVEKIT_COMMIT:-unknown}" \
  --out "$OUT/issue3-fp8.json" >"$OUT/issue3-fp8.log" 2>&1
say "bench rc=$? $(grep -E '^deepseek' "$OUT/issue3-fp8.log" | awk '{print $3 ":" $6 "/" $10 " " $NF}' | tr '\n' ' ')"
say "done"
