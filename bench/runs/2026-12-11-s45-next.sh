#!/usr/bin/env bash
# Prepared in session 44 (not yet run): the first call of the next session, whatever card comes.
#   On an H200: issues 3's and 4's rows with the sanitizer stages (2026-12-06-s40-h200-rows.sh:
#     scripts/gpu-check.sh BENCH_SET=issues RUN_TESTS=sanitize). New since the last H200 rows
#     (session 43): deepseek-v3's "uniform" rows are Poisson-like, and its old rows come as
#     "biased"; the pair pick's default is auto (the device pick on deepseek-v3 bf16); the 4-bit
#     cutovers reach 256-512 tokens; the ping-pong swap tile's k-step is per card.
#   On anything else: the whole GPU suite at HEAD (151 tests; session 44 ran 37 of them at the new
#     pick and cutovers), then the 4-bit cutover's open points: kimi-k2 int4's dynamic path at 64
#     and 256 tokens and both paths at 384 for qwen3-235b int4 (between its measured 256, static
#     ahead, and 512, level).
# Prediction (H200): deepseek-v3 bf16 8192 uniform ~11.5 ms (~500 TFLOP/s), biased ~14.2 ms; the
# rest as session 43's H200 rows. Other card: suite 151/151; kimi-k2 dynamic > 3x its static at
# 64-256; qwen3-235b int4 at 384 static a few % ahead.
# Device (carry [".deps"], ~9 min): SERVEKIT_COMMIT=<sha> BUDGET_S=560 bash bench/runs/2026-12-11-s45-next.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-560}
name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
if [[ $name == *H200* ]]; then
  exec env BUDGET_S="$BUDGET_S" bash bench/runs/2026-12-06-s40-h200-rows.sh
fi
B=build
work_dir next
say "$name"
build_tests "$W/build.log"
t=$(($(left) - 150)); ((t > 330)) && t=330
gpu_suite $t
t=$(($(left) - 10))
((t > 40)) && timeout $t "$B/servekit" bench moe --routing uniform --peer off --check-tokens 8 \
  --preset qwen3-235b-a22b --quant int4_w4a16 --tokens 384 --path both --check-tokens 8 \
  --then --preset kimi-k2 --quant int4_w4a16 --tokens 64,256 --path dynamic --check-tokens 8 \
  --max-seconds $((t - 15)) --commit "${SERVEKIT_COMMIT:-unknown}" --out "$OUT/cutover4.json" \
  >"$OUT/cutover4.log" 2>&1
say "cutover4 rc=$?"
grep -E '^(qwen|kimi)' "$OUT/cutover4.log" | tee -a "$W/$WORK_NAME.txt"
say done
