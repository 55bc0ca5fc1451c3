#!/usr/bin/env bash
# RAN in session 23 (3254f56): docs/perf-notes.md, twenty-third pass.
# Session 23, diagnostics in one device call (nothing to merge):
#   1. bench/tools/membw.cu with the weight-tile probe: does a 256-row x 128 B k-step (the
#      grouped GEMM's TMA box on row-major weights) read slower from HBM than the same bytes
#      pre-tiled? (OUT/s23-diag/membw.txt)
#   2. ncu of qwen3-30b-a3b bf16's two GEMMs at 2048 tokens (the forward cut: GEMM1 271 us and
#      GEMM2 154 us for 805 + 403 MB of weights, ~3 TB/s): DRAM bytes, DRAM and L2 throughput
#   3. mixtral-8x7b bf16 at 2048 and 8192 with the cuBLAS peer, two rounds: the check of 3254f56
#      had 2714.5 / 9358.5 us against session 22's 2389.7 / 9061.1 with code that mixtral does not
#      run changed; a slower lease or not?
# Device (carry [".deps"], ~5 min): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-02-s23-diag.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, build_dev, work_dir, profile_row
BUDGET_S=${BUDGET_S:-400}
work_dir s23-diag
nvcc -O3 -arch=sm_90a -o "$W/membw" bench/tools/membw.cu && timeout 120 "$W/membw" >"$W/membw.txt" 2>&1
say "membw rc=$?"
cat "$W/membw.txt"
build_dev "$W/build.log"
say "build done"
for round in 1 2; do
  timeout 90 "$B/servekit" bench moe --preset mixtral-8x7b --quant bf16 --tokens 2048,8192 \
    --routing uniform --check-tokens 1 --commit "${SERVEKIT_COMMIT:-unknown}" \
    --out "$W/mixtral-r$round.json" >"$W/mixtral-r$round.log" 2>&1
  say "mixtral r$round rc=$? $(grep -E '^mixtral' "$W/mixtral-r$round.log" | awk '{print $3 ":" $6 "/" $10}' | tr '\n' ' ')"
done
METRICS=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum
METRICS+=,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_sector_hit_rate.pct
METRICS+=,lts__t_sectors.avg.pct_of_peak_sustained_elapsed,sm__cycles_elapsed.avg.per_second
METRICS+=,launch__grid_size
profile_row q30 "--preset qwen3-30b-a3b --quant bf16 --tokens 2048 --path dynamic" \
  "--page raw --kernel-name regex:device_kernel --launch-count 2 --metrics $METRICS"
say "done"
