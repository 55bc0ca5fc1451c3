#!/usr/bin/env bash
# Session 41's last device seconds (~280 with the machine's start): main built (tests off, every
# core), then deepseek-v3 bf16 dynamic 8192 tokens with the auto pick (2x1 swap tile) and with
# SERVEKIT_GEMM_TILE=pair (the 1x2 pair swap tile), one row each, 1 token checked against the CPU
# reference; gpt-oss-120b 8192 likewise if time is left. The full A/B with the tests is
# bench/runs/2026-12-07-s42-pair.sh.
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-07-s41-pair-mini.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-200}
B=build
work_dir pair-mini
nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | tee -a "$W/$WORK_NAME.txt"
env JOBS="$(nproc)" BUILD_DIR=$B SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF \
  >"$W/build.log" 2>&1 || { say "build failed: $(tail -n 20 "$W/build.log")"; exit 1; }
say built
cp "$W/$WORK_NAME.txt" "$OUT/"
D="--quant bf16 --routing uniform --path dynamic --tokens 8192"
# shellcheck disable=SC2086
bench_row ds-auto -- --preset deepseek-v3 $D
cp "$W/$WORK_NAME.txt" "$OUT/"
# shellcheck disable=SC2086
bench_row ds-pair SERVEKIT_GEMM_TILE=pair -- --preset deepseek-v3 $D
cp "$W/$WORK_NAME.txt" "$OUT/"
# shellcheck disable=SC2086
bench_row oss-auto -- --preset gpt-oss-120b $D
# shellcheck disable=SC2086
bench_row oss-pair SERVEKIT_GEMM_TILE=pair -- --preset gpt-oss-120b $D
say done
