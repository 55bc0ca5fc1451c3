#!/usr/bin/env bash
# Session 52, the last call (a fresh lease), by the card it lands on:
#   an H200: issues 3 and 4's rows at this commit (scripts/gpu-check.sh, BENCH_SET=issues, the
#     sanitizer stages, no test suite: the suite passed on an H100 at 1cf04f3, whose kernels this
#     commit keeps), the first H200 rows since the fused stores (session 50);
#   anything else: main built without tests, then ncu (clocks left alone, raw page) of deepseek-v3
#     fp8_block128's GEMM1 at 8192 tokens with the warp-state and compute sections: the stall
#     reasons of the consumer warps and the tensor pipe's busy share. Question: the halves
#     mainloop's GEMM1 runs at ~970 TFLOP/s of padded MMAs, and promoting in quarters under the
#     group's own next wgmma did not help (bench/results/h100/ab/2026-12-07-s52-quarters), so is it
#     the stage barrier (waiting on TMA / L2), the wgmma, or shared memory?
# Ran in session 53 at b1aa134 (same GEMMs as 1cf04f3) on an H100, the ncu branch
# (bench/results/h100/ab/2026-12-07-s53-ncu-fp8): GEMM1 4596 us under ncu at ~1.60 GHz, tensor
# pipe 67.4% busy, L2 85.7%, DRAM 58.5%, issue 32.1%; stalls per issue: barrier 2.13, long
# scoreboard 2.01, wait 0.77, gmma 0.13. The table came from bench/ncu_table.py, which crashed on
# this raw page (no DRAM byte counts) until session 53.
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-07-s52-last.sh
set -uo pipefail
name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
echo "card: $name"
case $name in
  *H200*)
    exec env OUT="${OUT:-$PWD/out}/issues" BUDGET_S="${BUDGET_S:-500}" BENCH_SET=issues \
      RUN_TESTS=sanitize "$(dirname "$0")/../../scripts/gpu-check.sh"
    ;;
esac
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-500}
B=build
work_dir_out s52-ncu
build_notests "$W/build.log"
NCU="$NCU_RAW_STALLS --kernel-name regex:device_kernel --launch-count 1"
profile_row ds-fp8-gemm1 "--preset deepseek-v3 --quant fp8_block128 --path dynamic --tokens 8192" "$NCU"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit --format=csv >>"$W/$WORK_NAME.txt" 2>&1
say done
