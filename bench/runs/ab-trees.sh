#!/usr/bin/env bash
# A/B of source trees on one GPU in one device call: builds each tree (in parallel), runs the
# static, routing and plan GPU tests of every tree but ab-main, then the same bench rows on every
# tree (--peer off), and prints us / time-over-floor side by side.
# Prepare here (untracked folders travel with the tree; the device's .git is stale):
#   for b in main wip/x; do d=ab-${b##*/}; rm -rf $d; mkdir $d; git archive $b | tar -x -C $d; done
# Run (carry [".deps"]): TREES="ab-main ab-x" bash bench/runs/ab-trees.sh
# Delete the ab-* folders after the call (`git add -A` would commit them).
#   TREES      folders to compare (default: the three trees of the first s4 call)
#   AB_GROUPS  bench argument groups separated by ';' (default: qwen3-235b int4 1/8/32,
#              gpt-oss mxfp4 1/8, qwen3-235b bf16 1/8, all static, uniform)
#   BUDGET_S   seconds for the whole script (stages that would pass it are skipped, and say so)
#   TEST_FILTER  gtest filter of the GPU tests run on every tree but ab-main (default: static,
#                route-plan, plan and routing tests; '*' for the whole suite, ~140 s)
#   TEST_TIMEOUT seconds for one tree's GPU tests (default 150)
#   GROUP_TIMEOUT seconds for one tree's bench group (default 90: a hung kernel costs that, not the
#                budget)
#   SASS         1: opcode counts of the static GEMM kernels per tree (see below)
#   TEST_TREES   the trees whose GPU tests are built and run (default: every tree but ab-main;
#                'none': no tree's, e.g. for diagnostic builds with wrong results by design)
# Calls that used it: 2026-11-30 s4 (bench/results/h200/ab/2026-11-30-s4-*): wip/int4-sums2 and
# wip/fused-tasks against main, then wip/issue-pred against main.
# 2026-12-01 s9 (bench/results/h200/ab/2026-12-01-s9-imma-*, -unit-*): wip/s9 (wip/int4-imma +
# wip/row-small-ctas) against main, TEST_TREES=ab-s9 TEST_FILTER='*'; then wip/unit-reuse and
# wip/unit-imma against main, TEST_TREES="ab-unit-imma ab-unit-reuse" TEST_FILTER='*'; AB_GROUPS
# as in the result files' "command" fields.
# 2026-12-01 s10 (bench/results/h200/ab/2026-12-01-s10-*): wip/early-refill and wip/imma-early
# (-refill-); diagnostic trees of wip/diag-consume with SERVEKIT_DIAG_STATIC_CONSUME=1/2/3 set in
# their copy of static_gemm.cuh, TEST_TREES=none (-consume-, trees ab-c1..3); wip/int4-bias-mma,
# -bias-d8, -scale-pairs (-bias-); wip/chain2 (-chain2-); wip/pairs-d8 (-pairs-).
# Everything lands in OUT/branches.tgz plus OUT/summary.txt (the device returns at most 8 files).
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-$PWD/out}
# Three trees by default (4 full builds in parallel would take ~4 of the 10 minutes);
# wip/int4-sums2 contains wip/issue-pred, so TREES="ab-main ab-issue-pred" splits the two later.
TREES=${TREES:-"ab-main ab-int4-sums2 ab-fused-tasks"}
BUDGET_S=${BUDGET_S:-570}
TEST_FILTER=${TEST_FILTER:-'*Static*:RoutePlanCuda.*:PlanCuda.*:RoutingCuda.*'}
TEST_TIMEOUT=${TEST_TIMEOUT:-150}
GROUP_TIMEOUT=${GROUP_TIMEOUT:-90}
left() { echo $((START + BUDGET_S - $(date +%s))); }
W=$(mktemp -d)
START=$(date +%s)
finish() {
  tar -czf "$OUT/branches.tgz" -C "$W" . 2>/dev/null
  cp "$W/summary.txt" "$OUT/summary.txt" 2>/dev/null
}
trap finish EXIT
mkdir -p "$OUT"
say() { echo "$* at $(($(date +%s) - START))s" | tee -a "$W/summary.txt"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv >"$W/gpu.txt"
n=$(echo $TREES | wc -w)
for d in $TREES; do
  ln -sfn "$PWD/.deps" "$d/.deps"
  tests=ON
  [[ $d == ab-main ]] && tests=OFF  # main's GPU tests passed at 1c91506
  # With TEST_TREES set, exactly those trees build their tests ("none": no tree does).
  if [[ -n ${TEST_TREES:-} ]]; then
    tests=OFF
    [[ " $TEST_TREES " == *" $d "* ]] && tests=ON
  fi
  (cd "$d" && env JOBS=$(($(nproc) / n)) BUILD_DIR=build SERVEKIT_WERROR=OFF scripts/build.sh \
    -DSERVEKIT_TESTS=$tests >"$W/build-$d.log" 2>&1; echo "rc=$?" >>"$W/build-$d.log") &
done
wait
for d in $TREES; do say "build $d $(tail -n 1 "$W/build-$d.log")"; done
# SASS=1: opcode counts of the static GEMM kernels of SASS_FORMATS (default int4_g128 mxfp4) per
# tree (cuobjdump on the device; this machine has none), W/sass-<tree>.txt, to compare the
# instructions of the k-loops between trees; the SASS itself in W/sass-<tree>-<format>.txt.gz
# (bench/sass_loops.py: the loops' HMMA / LDL / STL counts, to see where the spills sit).
if [[ ${SASS:-0} == 1 ]]; then
  for d in $TREES; do
    for f in ${SASS_FORMATS:-int4_g128 mxfp4}; do
      obj=$(find "$d/build" -name "static_moe_$f.cu.o" | head -n 1)
      [[ -z $obj ]] && continue
      cuobjdump -sass "$obj" 2>/dev/null | gzip >"$W/sass-$d-$f.txt.gz"
      zcat "$W/sass-$d-$f.txt.gz" | bash bench/runs/sass_ops.sh "$f" >>"$W/sass-$d.txt"
    done
  done
  say "sass opcode counts done"
fi
for d in ${TEST_TREES:-$TREES}; do
  [[ $d == none ]] && continue
  [[ -z ${TEST_TREES:-} && $d == ab-main ]] && continue
  (($(left) < TEST_TIMEOUT + 50)) && { say "GPU tests $d skipped (budget)"; continue; }
  timeout "$TEST_TIMEOUT" "$d/build/servekit_gpu_tests" --gtest_filter="$TEST_FILTER" >"$W/tests-$d.log" 2>&1
  say "GPU tests ($TEST_FILTER) $d rc=$? $(grep -E 'PASSED|FAILED' "$W/tests-$d.log" | tr '\n' ' ')"
done
DEFAULT_GROUPS="--preset qwen3-235b-a22b --quant int4_w4a16 --tokens 1,8,32 --routing uniform --path static;\
--preset gpt-oss-120b --quant mxfp4_w4a16 --tokens 1,8 --routing uniform --path static;\
--preset qwen3-235b-a22b --quant bf16 --tokens 1,8 --routing uniform --path static"
IFS=';' read -r -a GROUPS_ <<<"${AB_GROUPS:-$DEFAULT_GROUPS}"
for gi in "${!GROUPS_[@]}"; do
  for d in $TREES; do
    (($(left) < 45)) && { say "group $gi $d skipped (budget)"; continue; }
    # shellcheck disable=SC2086
    t=$(($(left) - 30)); ((t > GROUP_TIMEOUT)) && t=$GROUP_TIMEOUT
    timeout $t "$d/build/servekit" bench moe ${GROUPS_[$gi]} --peer off --check-tokens 1 \
      --commit "$d" --out "$W/g$gi-$d.json" >"$W/g$gi-$d.log" 2>&1
    say "group $gi $d rc=$?"
  done
done
python3 - "$W" $TREES >>"$W/summary.txt" <<'PY'
import json, glob, os, sys
w, trees = sys.argv[1], sys.argv[2:]
rows = {}  # a row measured by several groups keeps every value, in group order
for f in sorted(glob.glob(f"{w}/g*-*.json"), key=lambda f: int(os.path.basename(f)[1:].split("-")[0])):
    tree = os.path.basename(f).split("-", 1)[1][:-5]
    for r in json.load(open(f))["rows"]:
        rows.setdefault((r["preset"], r["quant"], r["tokens"]), {}).setdefault(tree, []).append(
            f'{r["us"]:.1f}/{r["ratio"]:.2f}' + ("" if r["status"] == "ok" else "!" + r["status"]))
print("us / time over floor per tree")
for k, v in rows.items():
    print(" ", *k, " ".join(f"{t}={','.join(v[t])}" for t in trees if t in v))
PY
cat "$W/summary.txt"
