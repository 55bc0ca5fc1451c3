#!/usr/bin/env bash
# Session 41's first call, prepared in session 40: whatever card comes is used.
#   an H200: issues 3 and 4's rows at main with the sanitizer stages
#            (bench/runs/2026-12-06-s40-h200-rows.sh, BENCH_SET=issues)
#   anything else: the partial token tile's A/B (bench/runs/2026-12-07-s41-partial-n.sh), whose
#            rows are same-lease comparisons
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-07-s41-first.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
echo "card: $name"
case $name in
  *H200*) exec bash bench/runs/2026-12-06-s40-h200-rows.sh ;;
  *) exec bash bench/runs/2026-12-07-s41-partial-n.sh ;;
esac
