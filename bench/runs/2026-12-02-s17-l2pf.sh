#!/usr/bin/env bash
# Device call 2 of 2026-12-02 s17: GEMM2's L2 prefetch before its dependency wait
# (static_l2_prefetch, SERVEKIT_STATIC_L2_PREFETCH_KB per CTA; default 0 in the tree it ran on).
#   1. the static GPU tests with the prefetch on (256 KB per CTA: every CTA's whole range on the
#      small presets), so the new path runs against the CPU reference;
#   2. rows at 0 / 64 / 192 KB per CTA, interleaved, on four presets at 1, 8 and 32 tokens, and a
#      second round where the budget allows.
# Run (carry [".deps"]): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-02-s17-l2pf.sh
# Output: OUT/l2pf.tgz, OUT/l2pf.txt.
set -uo pipefail
# shellcheck source=bench/runs/prelude.sh
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-540}
work_dir l2pf
build_dev "$W/build.log"
say "build done"
SERVEKIT_STATIC_L2_PREFETCH_KB=256 timeout 150 $B/servekit_gpu_tests --gtest_filter='*Static*' \
  >"$W/tests.log" 2>&1
say "static tests (prefetch 256 KB) rc=$? $(grep -E '^\[  (PASSED|FAILED)' "$W/tests.log" | tr '\n' ' ')"
SK="--routing uniform --path static --tokens 1,8,32"
KBS=${KBS:-"0 64 192"}
for round in 1 2; do
  for preset in "qwen3-235b-a22b bf16" "qwen3-30b-a3b bf16" "deepseek-v3 fp8_block128" "kimi-k2 int4_w4a16"; do
    set -- $preset
    for kb in $KBS; do
      bench_row "r$round-$1-$2-kb$kb" SERVEKIT_STATIC_L2_PREFETCH_KB=$kb -- --preset $1 --quant $2 $SK
    done
  done
done
cat "$W/l2pf.txt"
