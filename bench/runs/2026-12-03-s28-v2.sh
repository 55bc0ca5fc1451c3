#!/usr/bin/env bash
# Session 28, last call (run as this one-liner on the warm lease, 90 s of budget left; same
# commands): the row gather v2 (bench/runs/gemm-row-gather-v2.patch: the tile's row indices in
# registers, shuffled to the copying lanes) built without tests, then qwen3-30b bf16 2048,8192,
# two rounds, gather 1 / 0 (the same binary; --check-tokens 1 checks one token per row).
# Device (carry [".deps"], ~80 s on a warm lease): bash bench/runs/2026-12-03-s28-v2.sh
source "$(dirname "$0")/prelude.sh"
BUDGET_S=165
work_dir s28-v2
copy_tree /tmp/ab bench/runs/gemm-row-gather-v2.patch
(cd /tmp/ab && env JOBS=16 BUILD_DIR=build-ab SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF >$W/build.log 2>&1)
say "build rc=$?"
for r in 1 2; do
  BIN=/tmp/ab/build-ab/servekit bench_row q30-g-$r SERVEKIT_DYNAMIC_GEMM_GATHER=1 -- --preset qwen3-30b-a3b --tokens 2048,8192 --quant bf16 --routing uniform --path dynamic
  BIN=/tmp/ab/build-ab/servekit bench_row q30-c-$r SERVEKIT_DYNAMIC_GEMM_GATHER=0 -- --preset qwen3-30b-a3b --tokens 2048,8192 --quant bf16 --routing uniform --path dynamic
done
say done
