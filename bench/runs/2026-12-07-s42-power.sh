#!/usr/bin/env bash
# Session 42, after s42-pair (ab/2026-12-06-s42-pair, H100): the pair swap tile was 13% faster on
# gpt-oss-120b 8192 and 5% on qwen3-235b 4096 but 8% slower on deepseek-v3 8192, while ncu had
# its deepseek-v3 GEMM1 10% faster (9.97 vs 11.05 ms) at a lower SM clock (1.51 vs 1.70 GHz) and
# GEMM2 4% slower. Question: is deepseek-v3's loss the power cap (a GEMM that stalls less on DRAM
# draws more power, so the clock falls for the whole 16 ms layer), and which GEMM loses?
#   1. main built, tests off (16 jobs)
#   2. dynamic bf16 uniform, --peer off, one lease, two rounds, nvidia-smi sampling SM clock, power,
#      temperature and the clock-event reasons every 50 ms during each row: deepseek-v3 8192 auto /
#      pair / pair on GEMM1 only (SERVEKIT_DIAG_GEMM_TILE_UNFUSED=swap) / pair on GEMM2 only
#   3. gpt-oss-120b 8192 auto / pair, 30 repeats and 300 (a layer time long enough for the power
#      cap to settle); qwen3-235b 4096 auto / pair
# Prediction: if it is power, deepseek-v3's pair rows run at a lower SM clock with the SW power cap
# reason set, and gpt-oss-120b's pair gain shrinks at 300 repeats.
# Device (carry [".deps"], ~6 min): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-07-s42-power.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-420}
B=build
work_dir power
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm --format=csv,noheader | tee -a "$W/$WORK_NAME.txt"
env JOBS=16 BUILD_DIR=$B SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF \
  >"$W/build.log" 2>&1 || { say "main build failed: $(tail -n 20 "$W/build.log")"; exit 1; }
say "main built"
# sampled TAG ENV... -- ARGS: bench_row with nvidia-smi sampling into $W/TAG.smi
sampled() {
  local tag=$1
  nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv,noheader,nounits -lms 50 >"$W/$tag.smi" 2>/dev/null &
  local pid=$!
  bench_row "$@"
  kill $pid 2>/dev/null
  wait $pid 2>/dev/null
}
D="--quant bf16 --routing uniform --path dynamic"
for r in 1 2; do
  # shellcheck disable=SC2086
  {
    sampled "ds-$r-auto" -- --preset deepseek-v3 $D --tokens 8192
    sampled "ds-$r-pair" SERVEKIT_GEMM_TILE=pair -- --preset deepseek-v3 $D --tokens 8192
    sampled "ds-$r-pair1" SERVEKIT_GEMM_TILE=pair SERVEKIT_DIAG_GEMM_TILE_UNFUSED=swap -- \
      --preset deepseek-v3 $D --tokens 8192
    sampled "ds-$r-pair2" SERVEKIT_GEMM_TILE=swap SERVEKIT_DIAG_GEMM_TILE_UNFUSED=pair -- \
      --preset deepseek-v3 $D --tokens 8192
  }
done
# shellcheck disable=SC2086
{
  sampled oss-auto -- --preset gpt-oss-120b $D --tokens 8192
  sampled oss-pair SERVEKIT_GEMM_TILE=pair -- --preset gpt-oss-120b $D --tokens 8192
  sampled oss-auto-long -- --preset gpt-oss-120b $D --tokens 8192 --repeats 300 --warmup 30
  sampled oss-pair-long SERVEKIT_GEMM_TILE=pair -- --preset gpt-oss-120b $D --tokens 8192 --repeats 300 --warmup 30
  sampled q235-auto -- --preset qwen3-235b-a22b $D --tokens 4096
  sampled q235-pair SERVEKIT_GEMM_TILE=pair -- --preset qwen3-235b-a22b $D --tokens 4096
}
python3 bench/smi_summary.py "$W"/*.smi | tee -a "$W/$WORK_NAME.txt"
say done
