#!/usr/bin/env bash
# RAN in session 30 at eaeb442 (ab/2026-12-03-s30-stamps) and at b869569 with the self-route
# stamps (ab/2026-12-03-s30-stamps2); the code is now bench/runs/self-route.patch.
# Session 30, call 3: why the self-routed GEMM1 measured 4-7 us slower at one token (call 2). The
# stamps (SERVEKIT_DIAG_STATIC_TIMES=1) off / on: does the route + plan kernel, now running while
# GEMM1 streams, finish after GEMM1's k-loops (GEMM1 waits for it before GEMM2 may launch)?
# Everything goes into one text file and one tarball (call 2 lost its stamps: too many files).
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-03-s30-stamps.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-300}
WORK_NAME=s30-stamps
W=$(mktemp -d)
trap 'tar -czf "$OUT/$WORK_NAME.tgz" -C "$W" . 2>/dev/null; cp "$W/$WORK_NAME.txt" "$OUT/" 2>/dev/null' EXIT
build_dev "$W/build.log"
say "build done"
SK="--routing uniform --path static"
for q in "q235i --preset qwen3-235b-a22b --quant int4_w4a16" "q30 --preset qwen3-30b-a3b --quant bf16" \
  "kimi --preset kimi-k2 --quant int4_w4a16"; do
  name=${q%% *}
  args=${q#* }
  for v in 0 1; do
    # shellcheck disable=SC2086
    bench_row "$name-self$v" SERVEKIT_STATIC_SELF_ROUTE=$v SERVEKIT_DIAG_STATIC_TIMES=1 -- $args --tokens 1 $SK
    grep -E "diag-times" "$W/$name-self$v.log" | sed "s/^/$name self$v /" >>"$W/$WORK_NAME.txt"
  done
done
say "done"
