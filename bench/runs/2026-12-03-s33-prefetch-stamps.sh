#!/usr/bin/env bash
# Session 33. The plan-warp stamps (bench/runs/plan-warp-stamps.patch, first run this session in
# ab/2026-12-03-s33-stamps) put deepseek-v3's one-token "offsets -> tasks done" at 6.4 us against
# 3.1 on kimi-k2 int4 (same routing method, same plan code). The one default that differs:
# fp8_block128's shared W13 prefetch, whose 29 MB of bulk prefetches start when GEMM1 launches at
# the trigger, i.e. while the plan warp runs (its code cold from HBM after the L2 flush). Test:
# the stamps with the prefetch forced off on deepseek-v3 and forced on on kimi-k2, two rounds.
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha>+stamps bash bench/runs/2026-12-03-s33-prefetch-stamps.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, bench_row, work_dir
BUDGET_S=${BUDGET_S:-420}
work_dir prefetch-stamps
patch -p1 <bench/runs/plan-warp-stamps.patch >"$W/patch.log" 2>&1 || { say "patch failed"; exit 1; }
build_dev "$W/build.log"
say "build done"
for round in 1 2; do
  for row in "deepseek-v3 fp8_block128 1" "deepseek-v3 fp8_block128 0" "kimi-k2 int4_w4a16 0" \
    "kimi-k2 int4_w4a16 1"; do
    read -r preset quant pf <<<"$row"
    tag="r$round-${preset%%-*}-${quant%%_*}-pf$pf"
    bench_row "$tag" SERVEKIT_DIAG_STATIC_TIMES=1 SERVEKIT_STATIC_SHARED_PREFETCH=$pf -- \
      --preset "$preset" --quant "$quant" --tokens 1 --routing uniform --path static
    grep -E "diag-times" "$W/$tag.log" | sed "s/^/$tag /" >>"$W/$WORK_NAME.txt"
  done
done
say "done"
