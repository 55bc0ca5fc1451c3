#!/usr/bin/env bash
# A/B on the same GPU, for ONE device call after scripts/gpu-check.sh has built BUILD_DIR: runs
# the same benchmark rows as side a and side b (b: with AB_ENV, or another build), alternating
# A, B, A, B so that clock or thermal drift shows up as A-vs-A spread.
#   AB_ENV    e.g. "SERVEKIT_MOE_CUTOVER_ROWS=0" (side b runs with it), or empty
#   AB_BUILD_B a second build directory whose servekit runs side b, to compare two revisions on
#             one GPU: `git archive REV | tar -x -C old` here (an untracked, not ignored folder
#             travels with the tree), build it there with BUILD_DIR=old/build, pass that here
#   AB_COMMIT_B the commit recorded in side b's files (default: side a's)
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
    bin="$BUILD_DIR/servekit"
    commit=$COMMIT
    if [[ $side == b ]]; then
      commit=${AB_COMMIT_B:-$COMMIT}
      read -r -a envs <<<"${AB_ENV:-}"
      [[ -n ${AB_BUILD_B:-} ]] && bin="$AB_BUILD_B/servekit"
    fi
    echo "== $NAME $side$r $bin ${envs[*]:-}"
    # shellcheck disable=SC2086
    env "${envs[@]}" "$bin" bench moe $AB_ARGS --commit "$commit" \
      --out "$OUT/$NAME-$side$r.json" 2>&1 | tee "$OUT/$NAME-$side$r.log" | grep -v "^bench:"
  done
done
