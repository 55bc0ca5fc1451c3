#!/usr/bin/env bash
# Session 53: what the int4 static GEMMs wait on at 32 tokens, where their rows are furthest from
# the floor (qwen3-235b int4 1.68 on the H200) and run nearly as fast on an H100 as on an H200
# (1.12x with 1.43x the HBM: bound on the SM side). main built without tests, then ncu (clocks
# left alone, raw page) of the static path's two GEMM kernels (static_gemm_kernel, GEMM1 then
# GEMM2) of qwen3-235b-a22b int4_w4a16 at 32 tokens, with the SOL, compute, warp-state, memory and
# occupancy sections: the stall reasons per issued instruction, the issue share, the pipes.
# Question: do the warps wait on their own loads (long scoreboard: more bytes in flight would
# help, a design with more warps or a deeper ring) or on dependencies and issue (wait, math
# dependency, selected: fewer instructions or shorter chains would)? The tenth pass measured
# issue ~56% at 8 tokens on an H200; the eleventh and nineteenth looked at one token only.
# Ran once, session 53 at 1b9c4d3 on an H100 (BUDGET_S=430, 126 s;
# bench/results/h100/ab/2026-12-07-s53-ncu-int4): GEMM1 262.1 us, DRAM 83.1%, issue 50.4%, stalls
# long scoreboard 2.24 / wait 1.37 per issue; GEMM2 161.7 us, DRAM 67.9%, barrier 0.99.
# TAG and ROW (environment) profile another static row the same way; the second run was
# TAG=fp8-32 ROW="--preset deepseek-v3 --quant fp8_block128 --path static --tokens 32" at d702ceb
# on an H100 (BUDGET_S=240; bench/results/h100/ab/2026-12-07-s53-ncu-fp8-static): GEMM1 1611.8 us,
# DRAM 93.4%, long scoreboard 7.20; GEMM2 830.1 us, DRAM 90.8%.
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> [TAG=.. ROW=..] bash bench/runs/2026-12-07-s53-ncu-int4.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-450}
B=build
work_dir_out s53-ncu-int4
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
build_notests "$W/build.log"
NCU="$NCU_RAW_STALLS --kernel-name regex:static_gemm_kernel --launch-count 2 --section Occupancy"
TAG=${TAG:-int4-32}
profile_row "$TAG" "${ROW:---preset qwen3-235b-a22b --quant int4_w4a16 --path static --tokens 32}" "$NCU"
cat "$W/ncu-$TAG/ncu-table.txt" >>"$W/$WORK_NAME.txt" 2>/dev/null
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.draw,power.limit --format=csv >>"$W/$WORK_NAME.txt" 2>&1
say done
