#!/usr/bin/env bash
# Session 43, call 4 (H200, warm after call 3): the 2x2 ping-pong swap tile with the k-step of 64
# against the 2x1 one with 64 (call 3's k64 build, if the lease kept /tmp/k64-tree), qwen3-30b bf16
# dynamic, uniform, --peer off, 8192 and 4096 tokens, two rounds.
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-09-s43-pp2.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-480}
work_dir pp2
K64=/tmp/k64-tree/build-k64/servekit
[[ -x $K64 ]] && say "k64 build kept" || say "no k64 build"
build_beside pp2 "-DSERVEKIT_DIAG_SWAP_PP_CLUSTER_N=2 -DSERVEKIT_DIAG_SWAP_PP_TILE_K=64"
D="--preset qwen3-30b-a3b --quant bf16 --routing uniform --path dynamic"
for round in 1 2; do
  for t in 8192 4096; do
    # shellcheck disable=SC2086
    {
      [[ -x $K64 ]] && BIN=$K64 bench_row "t$t-$round-k64" -- $D --tokens $t
      BIN=$FB/servekit bench_row "t$t-$round-pp2" -- $D --tokens $t
    }
  done
done
say done
