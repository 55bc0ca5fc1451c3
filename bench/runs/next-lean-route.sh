#!/usr/bin/env bash
# Prepared in session 15 for the next session's first device call: main against main + the
# 'lean route + plan' edits (bench/runs/lean_route_patch.py; docs/perf-notes.md, fifteenth
# pass). Run in session 16 at 38c1a65 (bench/results/h200/ab/2026-12-01-s16-lean-*): GPU tests
# 82/82, no consistent gain (kimi-k2 slower), not merged (perf-notes, sixteenth pass). The patch
# applies to 38c1a65's tree; later trees may need it adapted.
# 1. Here (the device's .git is stale, so the trees travel as untracked folders):
#      bash bench/runs/next-lean-route.sh prepare
# 2. Device call (carry [".deps"], ~6 min): SERVEKIT_COMMIT=<sha> bash bench/runs/next-lean-route.sh
#    GPU tests of ab-lean (routing, plan, route + plan, static, MoECuda), then the rows the edits
#    touch: kimi-k2 and deepseek-v3 at 1 / 8 tokens (DeepSeek-V3 routing, 16 and 8 lanes),
#    qwen3-235b int4 1 / 8 (softmax routing: unchanged code, the control), static path.
# 3. Delete ab-main and ab-lean afterwards (`git add -A` would commit them).
set -uo pipefail
cd "$(dirname "$0")/../.."
if [[ ${1:-} == prepare ]]; then
  for d in ab-main ab-lean; do
    rm -rf "$d" && mkdir "$d" && git archive HEAD | tar -x -C "$d"
  done
  python3 bench/runs/lean_route_patch.py ab-lean || exit 1
  exit 0
fi
[[ -d ab-main && -d ab-lean ]] || { echo "run '$0 prepare' first, here"; exit 1; }
SK="--routing uniform --path static"
TREES="ab-main ab-lean" TEST_TREES="ab-lean" \
  TEST_FILTER='RoutingCuda.*:PlanCuda.*:RoutePlanCuda.*:*Static*:MoECuda*' TEST_TIMEOUT=200 \
  BUDGET_S=${BUDGET_S:-560} AB_GROUPS="--preset kimi-k2 --quant int4_w4a16 --tokens 1,8 $SK;\
--preset deepseek-v3 --quant fp8_block128 --tokens 1,8 $SK;--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1,8 $SK;\
--preset kimi-k2 --quant int4_w4a16 --tokens 1,8 $SK;--preset deepseek-v3 --quant fp8_block128 --tokens 1,8 $SK" \
  bash bench/runs/ab-trees.sh
