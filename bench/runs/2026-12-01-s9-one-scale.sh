#!/usr/bin/env bash
# Device call, session 9: what the static kernels' scale reads cost the weight stream. The stamps
# (2026-12-01-s9-times) show the 4-bit k-loops streaming at ~60-66% of the read ceiling at 8
# tokens against ~91% for bf16, while neither fewer k-loop instructions (wip/int4-imma) nor
# reusing the staged activations (wip/unit-reuse) moved them. The formats with scales read, per
# k-block and warp, one 32-byte scale sector apart from the code stream. With
# SERVEKIT_DIAG_STATIC_ONE_SCALE=1 every k-block reads scale block 0 instead (same instructions,
# wrong results, the check fails by design): the time difference is what the scattered scale
# reads cost. bf16 (no scales) is the control. Interleaved, two rounds, one build.
# Ran at b3e01ee (branch wip/diag-one-scale: the variable is not on main, whose kernels it would
# cost a register). Results: bench/results/h200/ab/2026-12-01-s9-one-scale-*.
# Run (carry [".deps"], timeout_s 420): SERVEKIT_COMMIT=<sha> bash bench/runs/2026-12-01-s9-one-scale.sh
# (Rows printed by bench/runs/tag_rows.py since the call; same table plus each row's status.)
# Output: OUT/rows.txt, OUT/one-scale.log, OUT/d<diag>-r<round>.json.
set -uo pipefail
# shellcheck source=bench/runs/prelude.sh
source "$(dirname "$0")/prelude.sh"
build_dev "$OUT/one-scale.log"
echo "build done at $(($(date +%s) - START))s" | tee -a "$OUT/one-scale.log"
for round in 1 2; do
  for diag in 0 1; do
    SERVEKIT_DIAG_STATIC_ONE_SCALE=$diag timeout 120 "$B/servekit" bench moe \
      --preset qwen3-235b-a22b --quant int4_w4a16 --tokens 8,32 --routing uniform --path static \
      --then --preset gpt-oss-120b --quant mxfp4_w4a16 --tokens 8 --routing uniform --path static \
      --then --preset deepseek-v3 --quant fp8_block128 --tokens 8 --routing uniform --path static \
      --then --preset qwen3-235b-a22b --quant bf16 --tokens 8 --routing uniform --path static \
      --peer off --check-tokens 1 --commit "${SERVEKIT_COMMIT:-unknown}" \
      --out "$OUT/d$diag-r$round.json" >>"$OUT/one-scale.log" 2>&1
    echo "round $round diag $diag rc=$? at $(($(date +%s) - START))s" | tee -a "$OUT/one-scale.log"
  done
done
python3 "$(dirname "$0")/tag_rows.py" "$OUT"/d*-r*.json >"$OUT/rows.txt"
cat "$OUT/rows.txt"
