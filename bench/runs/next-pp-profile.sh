#!/usr/bin/env bash
# Prepared in session 35, not run yet. What bounds qwen3-30b's GEMMs on the ping-pong swap tile?
# At 2048 tokens they stream W13 and W2 at ~3.0-3.1 TB/s (perf-notes, thirty-fifth pass, item 3):
# GEMM1 258 us against 176 us for its 805 MB at 4.58 TB/s; their tensor work would take ~125 us at
# full clocks. Candidates, each visible in one ncu page: DRAM (dram__throughput near its peak),
# L2 -> SM traffic (lts throughput near peak: every weight tile of an expert reads its 144-token
# tile from L2, multicast to the 2x1 cluster), the SM clock under power (SM Frequency in
# SpeedOfLight against ~1.98 GHz), or the pipeline (WarpStateStats of the producer and consumers).
# The 4x1 cluster (call 5 of session 35) was slower, so L2 alone is not expected to be the answer.
# ncu on the forward's two CUTLASS kernels (GEMM1 then GEMM2: --launch-count 2), clocks left
# alone, caches flushed per kernel (cold, as the bench):
#   q30-pp:   qwen3-30b bf16 2048 tokens (the default: ping-pong swap tile, both GEMMs)
#   q30-coop: the same with SERVEKIT_GEMM_SWAP=cooperative (the 256x144 cooperative swap tile)
#   q30-8k:   qwen3-30b bf16 8192 tokens (ping-pong swap tile, 512 rows per expert)
# Device (carry [".deps"], ~5 min): SERVEKIT_COMMIT=<sha> bash bench/runs/next-pp-profile.sh
# Output: OUT/pp-profile.txt, OUT/pp-profile.tgz (ncu-<tag>/).
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # cd, PATH, OUT, START, B, work_dir, profile_row
BUDGET_S=${BUDGET_S:-420}
work_dir pp-profile
env JOBS=16 BUILD_DIR="$B" SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF >"$W/build.log" 2>&1 ||
  { tail -n 40 "$W/build.log"; exit 1; }
say "build done"
SECTIONS="--section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis"
SECTIONS+=" --section WarpStateStats --section LaunchStats --section Occupancy"
NCU="--page details --kernel-name regex:device_kernel --launch-count 2 $SECTIONS"
Q="--preset qwen3-30b-a3b --quant bf16 --path dynamic"  # gpu-profile.sh adds --routing uniform
profile_row q30-pp "$Q --tokens 2048" "$NCU"
profile_row q30-coop "$Q --tokens 2048" "$NCU" SERVEKIT_GEMM_SWAP=cooperative
profile_row q30-8k "$Q --tokens 8192" "$NCU"
say "done"
