#!/usr/bin/env bash
# Session 59, a second call on the warm H100 lease of 2026-12-07-s59-tail.sh (the same carry):
# deepseek-v3 fp8_block128 (1 / 8 / 32 tokens) and kimi-k2 int4 (1 / 8) on the static path, main's
# servekit (8af5fe8) against the batched tail loads (4bf8f4e), one round each (~110 s). Their
# GEMM2s are the ones whose register allocation the change moved most (fp8_block128's GEMM2
# spills 16 bytes per unit now, outside its k-loops). Run as /tmp/r.sh with BUDGET_S=200; this is
# that script.
# Device (carry ["build-carry", "build-main"]):
#   SERVEKIT_COMMIT=<sha> BUDGET_S=200 bash bench/runs/2026-12-07-s59-tail-ds.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-200}
B=${PREBUILT:-build-carry}
prebuilt_start s59-tail-ds
xz -dc build-main/servekit.xz >build-main/servekit && chmod +x build-main/servekit
ds=(--preset deepseek-v3 --quant fp8_block128 --tokens "1,8,32" --routing uniform --path static)
ki=(--preset kimi-k2 --quant int4_w4a16 --tokens "1,8" --routing uniform --path static)
BIN=build-main/servekit bench_row ds-main -- "${ds[@]}"
BIN=$B/servekit bench_row ds-new -- "${ds[@]}"
BIN=$B/servekit bench_row ki-new -- "${ki[@]}"
BIN=build-main/servekit bench_row ki-main -- "${ki[@]}"
say "done"
