#!/usr/bin/env bash
# Session 54, after 2026-12-07-s54-sanitize.sh: racecheck reported a race in the static bf16 ring
# kernel between the producer's bulk copy into a stage and the consumers' earlier reads of it
# (WAR on stage reuse; millions of hazards, every row still `ok`). The hand-back is lane 0's
# mbarrier arrive after a __syncwarp, and the producer copies after waiting on that barrier with
# no proxy fence. SERVEKIT_DIAG_RING_SYNC builds the hand-back three ways (static_ring.cuh):
# 0 main; 1 the producer adds fence.proxy.async before each copy; 2 every lane arrives (no
# __syncwarp). Questions: which of them does racecheck accept (a tool limit, or a real missing
# fence?), and what each costs on the bf16 static rows (two interleaved rounds).
# Ran once, session 54 at 33e99fa on an H100 (BUDGET_S=440; bench/results/h100/ab/
# 2026-12-07-s54-ring-sync): racecheck sync=0 and sync=1 each 1 error (the same race), sync=2
# skipped by the budget gate below (200 s was too cautious); the rows level (two rounds, us,
# within 0.3%). sync=2's racecheck then ran on the same lease as one command (racecheck-sync2.log:
# 0 hazards, both rows ok):
#   SERVEKIT_DIAG_RING_SYNC=2 compute-sanitizer --tool racecheck --error-exitcode 1 --print-limit 10
#   build/servekit bench moe --preset qwen3-30b-a3b --quant bf16 --tokens 8,33 --routing uniform
#   --path static --check-tokens 1 --repeats 1 --warmup 0 --threads 8 --peer off
# Merged as the only hand-back in 05f88c6, which removed the switch: this script needs 33e99fa.
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-07-s54-ring-sync.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-420}
B=build
work_dir_out s54-ring-sync
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
SAN=$(sanitizer_path)
build_notests "$W/build.log"
for s in 0 1 2; do
  (($(left) < 200)) && { say "racecheck sync=$s skipped (budget)"; continue; }
  SERVEKIT_DIAG_RING_SYNC=$s timeout 90 "$SAN" --tool racecheck --error-exitcode 1 --print-limit 10 \
    "$B/servekit" bench moe --preset qwen3-30b-a3b --quant bf16 --tokens 8,33 --routing uniform \
    --path static --check-tokens 1 --repeats 1 --warmup 0 --threads 8 --peer off \
    >"$W/racecheck-sync$s.log" 2>&1
  say "racecheck sync=$s rc=$? $(grep -hE 'RACECHECK SUMMARY' "$W/racecheck-sync$s.log" | tr -s ' ')"
done
ROWS=(--preset qwen3-235b-a22b --quant bf16 --tokens 1,8,32 --routing uniform --path static
  --then --preset qwen3-30b-a3b --quant bf16 --tokens 1,8,32 --routing uniform --path static)
for r in 1 2; do
  for s in 0 1 2; do bench_row "r$r-sync$s" SERVEKIT_DIAG_RING_SYNC=$s -- "${ROWS[@]}"; done
done
say done
