#!/usr/bin/env bash
# Ran in session 20 (bench/runs/2026-12-02-s20-sp-scan.sh, results ab/2026-12-02-s20-scan-*) and
# merged as 4cac627: on main the patch no longer applies. Kept as the record of the prepared call.
# Prepared in session 19 (compile-checked for sm_90a: no new spills in the 8- and 12-lane
# DeepSeek-V3 route + plan kernels; not GPU-run, so a patch: bench/runs/group-scan.patch).
# DeepSeek-V3's group stage in split mode (keep_top_groups_by_keys, group_select.cuh): lane g
# finds group g's top two by a scan of its 32 (or 64...) keys in shared memory, instead of
# keep_top_groups_by_rows' three warp reductions per group unrolled over the groups (~46 SASS
# instructions per group, ~370 of the ~950 that the one routing warp runs once at one token;
# profiles/2026-12-02-s19-route-fine-*: that warp's samples are mostly instruction fetch).
# The same top-two values, so the same bits (RoutePlanCuda.OneCtaEqualsMultiCtaForEveryMethod
# runs E = 256 and 512 with 8 groups, top 4, at 1-45 tokens, against the multi-CTA kernel).
# Only presets with n_group > topk_group use it: deepseek-v3 (kimi-k2 has one group).
# Prediction: -1 to -3 us on deepseek-v3 at 1 and 8 tokens if instruction fetch is the cost.
# 1. Here: bash bench/runs/next-group-scan.sh prepare   (ab-main = HEAD, ab-scan = HEAD + patch)
# 2. Device (carry [".deps"], ~4 min): bash bench/runs/next-group-scan.sh
# 3. Merge the patch if the routing GPU tests pass and deepseek-v3 is not slower.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
if [[ ${1:-} == prepare ]]; then
  for d in ab-main ab-scan; do
    rm -rf "$d" && mkdir "$d" && git archive HEAD | tar -x -C "$d"
  done
  git apply --directory=ab-scan bench/runs/group-scan.patch || exit 1
  exit 0
fi
[[ -d ab-main && -d ab-scan ]] || { echo "run '$0 prepare' first, here"; exit 1; }
SK="--routing uniform --path static"
TREES="ab-main ab-scan" TEST_TREES="ab-scan" TEST_FILTER='RoutingCuda.*:RoutePlanCuda.*:PlanCuda.*' \
  TEST_TIMEOUT=60 GROUP_TIMEOUT=60 BUDGET_S=${BUDGET_S:-300} AB_GROUPS="--preset deepseek-v3 --quant fp8_block128 --tokens 1,8 $SK;\
--preset deepseek-v3 --quant fp8_block128 --tokens 1,8 $SK" \
  bash bench/runs/ab-trees.sh
