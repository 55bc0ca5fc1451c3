#!/usr/bin/env bash
# Session 37, calls 3-5: what call 2 (2026-12-05-s37-flat.sh) left undone for lack of budget, run on
# its still-warm H200 against the two trees it had built (main in build-dev, the tree with
# -DSERVEKIT_DIAG_FLAT_TMA=1 (every bf16 tile flat) in /tmp/flat-tree/build-flat). The three device
# commands, as sent (one line each there), are the three steps below; their output is
# bench/results/h200/ab/2026-12-05-s37-flat/warm-rows.txt.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
F=/tmp/flat-tree/build-flat
step=${1:-all}
if [[ $step == 3 || $step == all ]]; then  # call 3: qwen3-30b 2048, main then flat; the probe, flat
  for b in build-dev $F; do
    timeout 40 $b/servekit bench moe --preset qwen3-30b-a3b --quant bf16 --routing uniform \
      --path dynamic --tokens 2048 --peer off --check-tokens 1 2>&1 | grep -E '^qwen'
  done
  g++ -O2 -std=c++20 -Iinclude -Isrc -I/usr/local/cuda/include bench/tools/gemm_groups.cpp \
    $F/libservekit.a -L/usr/local/cuda/lib64 -lcudart -lcublas -lcublasLt -lpthread -o /tmp/pf &&
    SERVEKIT_GEMM_TILE=swap timeout 50 /tmp/pf
fi
rows() {  # calls 4 and 5: "PRESET TOKENS"..., main then flat
  local r b
  for r in "$@"; do
    set -- $r
    for b in build-dev $F; do
      timeout 25 $b/servekit bench moe --preset $1 --quant bf16 --routing uniform --path dynamic \
        --tokens $2 --peer off --check-tokens 1 2>&1 | grep -E '^(qwen|mixtral)' | sed "s|^|$(basename $b) |"
    done
  done
}
[[ $step == 4 || $step == all ]] && rows "qwen3-30b-a3b 2048" "qwen3-235b-a22b 2048"
[[ $step == 5 || $step == all ]] && rows "qwen3-235b-a22b 2048" "qwen3-235b-a22b 2048" "mixtral-8x7b 2048"
exit 0
