#!/usr/bin/env bash
# A/B of one environment switch on the same GPU, for ONE device call after scripts/gpu-check.sh
# has built BUILD_DIR: runs the same benchmark rows without and with AB_ENV, alternating
# A, B, A, B so that clock or thermal drift shows up as A-vs-A spread.
#   AB_ENV    e.g. "SERVEKIT_STATIC_KERNEL=v1" or "SERVEKIT_GEMM_TILES=alt"
#   AB_ARGS   `servekit bench moe` row options (groups separated by --then)
#   AB_NAME   file stem (default ab): OUT/<stem>-{a,b}{1,2}.json and .log
#   AB_ROUNDS 1 or 2 (default 1)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
BUILD_DIR=${BUILD_DIR:-build}
NAME=${AB_NAME:-ab}
ROUNDS=${AB_ROUNDS:-1}
mkdir -p "$OUT"
COMMIT=${SERVEKIT_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}
for r in $(seq 1 "$ROUNDS"); do
  for side in a b; do
    envs=()
    [[ $side == b ]] && read -r -a envs <<<"$AB_ENV"
    echo "== $NAME $side$r ${envs[*]:-(default)}"
    # shellcheck disable=SC2086
    env "${envs[@]}" "$BUILD_DIR/servekit" bench moe $AB_ARGS --commit "$COMMIT" \
      --out "$OUT/$NAME-$side$r.json" 2>&1 | tee "$OUT/$NAME-$side$r.log" | grep -v "^bench:"
  done
done
