#!/usr/bin/env bash
# Device call 4 of 2026-12-01 s13, on main after the weighted partition (9038eca and later):
#   1. SERVEKIT_STATIC_ROW_COST sweeps for the formats whose default was not measured: int4
#      (kimi-k2, with its shared expert; 3 5 8 12) and bf16 (qwen3-235b; 0 4, the default 2 is
#      in the issue-4 file), 8 / 32 tokens;
#   2. per-CTA stamps (SERVEKIT_DIAG_STATIC_TIMES=2: every CTA's line with its SM and unit count)
#      of deepseek-v3 fp8 at 32 tokens, kimi-k2 int4 at 32 and qwen3-235b int4 at one token, to
#      fit the next cost model (what the slowest CTAs have in common: units, SM, rows).
# Run (carry [".deps"]): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-01-s13-sweep.sh
# Output: OUT/sweep2.tgz, OUT/sweep2.txt.
# (Switched to prelude.sh's bench_row after the call ran: the same commands.)
set -uo pipefail
# shellcheck source=bench/runs/prelude.sh
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-450}
work_dir sweep2
[[ -x $B/servekit ]] || build_dev "$W/build.log"
say "build done"
SK="--routing uniform --path static"
for rc in 3 5 8 12; do
  bench_row "kimi-rc$rc" SERVEKIT_STATIC_ROW_COST=$rc -- --preset kimi-k2 --quant int4_w4a16 --tokens 8,32 $SK
done
for rc in 0 4; do
  bench_row "q235-bf16-rc$rc" SERVEKIT_STATIC_ROW_COST=$rc -- --preset qwen3-235b-a22b --quant bf16 --tokens 8,32 $SK
done
bench_row stamps-ds32 SERVEKIT_DIAG_STATIC_TIMES=2 -- --preset deepseek-v3 --quant fp8_block128 --tokens 32 $SK
bench_row stamps-kimi32 SERVEKIT_DIAG_STATIC_TIMES=2 -- --preset kimi-k2 --quant int4_w4a16 --tokens 32 $SK
bench_row stamps-q235i4-1 SERVEKIT_DIAG_STATIC_TIMES=2 -- --preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1 $SK
for f in "$W"/stamps-*.log; do
  echo "== $f" >>"$W/sweep2.txt"
  grep -E "diag-times" "$f" >>"$W/sweep2.txt"
done
cat "$W/sweep2.txt"
