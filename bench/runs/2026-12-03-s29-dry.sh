#!/usr/bin/env bash
# RAN in session 29 at 5f6cd22 (ab/2026-12-03-s29-dry): warp 0 spends 10.7-16 us in the rebuild
# with or without the prefetch instructions; the code is now bench/runs/spec-prefetch.patch.
# Session 29, call 3 (what the budget left: ~430 s with the start). Calls 1-2 measured the
# speculative routed prefetch 5-10 us slower whatever its size (bulk 16 KB per CTA, 4 MB in all,
# cost as much as 64 KB) and in either instruction (bulk or lines). The stamps' zero is thread
# 0's return from its dependency wait, and thread 0 is warp 0, which runs the prefetch first: so
# either the route grid's completion waits for the prefetches, or warp 0's own work takes ~13
# us from GEMM1's entry. New stamps say which: warp 0's time in static_spec_prefetch (the spec
# line's "took"), and SERVEKIT_DIAG_SPEC_DRY=1 runs all of it but the prefetch instructions.
# Device (carry [".deps"]): BUDGET_S=<s> SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-03-s29-dry.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, bench_row
BUDGET_S=${BUDGET_S:-170}
# Straight into OUT (no work_dir trap): a run cut by the device's limit still brings back its rows.
WORK_NAME=s29-dry
W=$OUT/$WORK_NAME
mkdir -p "$W"
build_dev "$W/build.log"
say "build done"
SK="--routing uniform --path static"
for v in "kb0 SERVEKIT_STATIC_ROUTED_PREFETCH_KB=0" "bulk16 SERVEKIT_STATIC_ROUTED_PREFETCH_KB=16" \
  "dry16 SERVEKIT_STATIC_ROUTED_PREFETCH_KB=16 SERVEKIT_DIAG_SPEC_DRY=1"; do
  tag=${v%% *}
  envs=${v#* }
  for q in "q235i --preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1,8" \
    "q30 --preset qwen3-30b-a3b --quant bf16 --tokens 1"; do
    name=${q%% *}
    args=${q#* }
    # shellcheck disable=SC2086
    bench_row "times-$name-$tag" $envs SERVEKIT_DIAG_STATIC_TIMES=1 -- $args $SK
    grep -E "route\+plan|spec-prefetch|gemm2 exit" "$W/times-$name-$tag.log" |
      sed "s/^/$name $tag /" >>"$W/$WORK_NAME.txt"
  done
done
say "done"
