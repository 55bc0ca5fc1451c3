#!/usr/bin/env bash
# Session 43, call 2: whatever card comes is used.
#   On an H200: issues 3's and 4's rows at HEAD with the sanitizer stages
#     (2026-12-06-s40-h200-rows.sh: scripts/gpu-check.sh BENCH_SET=issues RUN_TESTS=sanitize; the
#     whole GPU suite passed at c3c9065 on an H100 in call 1). The last H200 rows are sessions
#     33-38's; the k-step-128 ping-pong swap tile, the flat producer's default on it and the pair
#     tile came after.
#   On anything else: where the device pick's +3% comes from (call 1, same lease: qwen3-235b 4096
#     2531/2546 -> 2613/2581 us, deepseek-v3 8192 16080/16002 -> 16529/16501, gpt-oss-120b
#     level). ncu durations of every kernel of one forward (scripts/gpu-profile.sh, serialised, no
#     PDL; default ncu metrics), host pick against device pick. If the GEMM kernels that work take the same time under
#     both, the cost is in the launch structure (the pair's launches without PDL), not a kernel.
# Prediction: the empty GEMM and its setup kernel take < 10 us each; the working GEMMs are level.
# Device (carry [".deps"], ~4-9 min): SERVEKIT_COMMIT=<sha> BUDGET_S=560 bash bench/runs/2026-12-09-s43-next.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-560}
name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
if [[ $name == *H200* ]]; then
  exec env BUDGET_S="$BUDGET_S" bash bench/runs/2026-12-06-s40-h200-rows.sh
fi
work_dir next
say "$name: the device pick's profile"
build_dev "$W/build.log"
say "built"
for pick in host device; do
  profile_row "q235-$pick" "--preset qwen3-235b-a22b --quant bf16 --tokens 4096 --path dynamic" \
    "" SERVEKIT_GEMM_PAIR_PICK=$pick
  profile_row "ds-$pick" "--preset deepseek-v3 --quant bf16 --tokens 8192 --path dynamic" \
    "" SERVEKIT_GEMM_PAIR_PICK=$pick
done
for pick in host device; do
  bench_row "q235-$pick" SERVEKIT_GEMM_PAIR_PICK=$pick -- --preset qwen3-235b-a22b --quant bf16 \
    --routing uniform --path dynamic --tokens 4096
done
say done
