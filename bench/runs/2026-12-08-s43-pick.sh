#!/usr/bin/env bash
# Prepared in session 42 (not yet run): the whole GPU suite at the commit that made the pair pick
# a switch (SERVEKIT_GEMM_PAIR_PICK=host|device, host the default), then host against device pick
# on one lease. Session 42's device-pick rows (ab/2026-12-06-s42-vote) ran 3-4% above earlier
# leases' numbers for the tile the device picked, with no same-lease baseline.
#   1. build with tests (every core); the whole GPU suite (ctest -L gpu), time-boxed
#   2. dynamic bf16 uniform, --peer off, two rounds alternating host / device:
#      deepseek-v3 8192 (the device should keep the 2x1 tile: 1.29x the tiles in pairs),
#      gpt-oss-120b 8192 and qwen3-235b 4096 (both pick the pair)
#   3. compute-sanitizer memcheck of the gate's GEMM test
# Prediction: device = host within 0.1% (one extra setup launch and an empty GEMM, ~5-10 us).
# Device (carry [".deps"], ~9 min): SERVEKIT_COMMIT=<sha> BUDGET_S=570 bash bench/runs/2026-12-08-s43-pick.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-570}
B=build
work_dir pick
nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | tee -a "$W/$WORK_NAME.txt"
build_tests "$W/build.log"
t=$(($(left) - 200)); ((t > 260)) && t=260
(cd $B && timeout $t ctest -L gpu --output-on-failure >"$W/tests-gpu.log" 2>&1)
say "gpu suite rc=$? $(grep -E 'tests passed|failed out of' "$W/tests-gpu.log")"
grep -E "^\s+[0-9]+ - .*\((Failed|Timeout)\)" "$W/tests-gpu.log" >>"$W/$WORK_NAME.txt"
D="--quant bf16 --routing uniform --path dynamic"
for round in 1 2; do
  for pick in host device; do
    # shellcheck disable=SC2086
    {
      bench_row "oss-$round-$pick" SERVEKIT_GEMM_PAIR_PICK=$pick -- --preset gpt-oss-120b $D --tokens 8192
      bench_row "q235-$round-$pick" SERVEKIT_GEMM_PAIR_PICK=$pick -- --preset qwen3-235b-a22b $D --tokens 4096
      bench_row "ds-$round-$pick" SERVEKIT_GEMM_PAIR_PICK=$pick -- --preset deepseek-v3 $D --tokens 8192
    }
  done
done
memcheck_run gate "$B" 'GroupedGemmCuda.BF16SwapOrPair*'
say done
