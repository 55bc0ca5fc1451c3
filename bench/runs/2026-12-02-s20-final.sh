#!/usr/bin/env bash
# Session 20's last device call, on main with the shared experts' L2 prefetch (default on) and
# DeepSeek-V3's group scan merged: the full check (scripts/gpu-check.sh BENCH_SET=issue4), then
# the rows the A/B call skipped for its budget: kimi-k2 int4 static at shared prefetch 0 and 1,
# two rounds, and deepseek-v3 with the prefetch under the early route trigger.
# Device (carry [".deps"], ~9 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-02-s20-final.sh
# Output: OUT/ (gpu-check's files), OUT/extra.{txt,tgz}.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
T0=$(date +%s)
BENCH_SET=issue4 BUDGET_S=490 BUILD_DIR=build-dev bash scripts/gpu-check.sh
source bench/runs/prelude.sh
START=$T0
BUDGET_S=560
work_dir extra
KIMI="--preset kimi-k2 --quant int4_w4a16 --tokens 1,8 --routing uniform --path static"
DS="--preset deepseek-v3 --quant fp8_block128 --tokens 1,8 --routing uniform --path static"
for round in 1 2; do
  for sp in 0 1; do
    # shellcheck disable=SC2086
    bench_row "r$round-kimi-sp$sp" SERVEKIT_STATIC_SHARED_PREFETCH=$sp -- $KIMI
  done
done
# shellcheck disable=SC2086
bench_row "deepseek-sp1-early" SERVEKIT_DIAG_ROUTE_EARLY_TRIGGER=1 -- $DS
# shellcheck disable=SC2086
bench_row "deepseek-sp1" -- $DS
say "done"
