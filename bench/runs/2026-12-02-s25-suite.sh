#!/usr/bin/env bash
# Session 25, last device call (carry [".deps"], ~5 min): the whole GPU suite with the fused GEMM1
# activation on by default (e562794 on), then qwen3-30b-a3b bf16 2048/8192 with the cuBLAS peer.
# Device: bash bench/runs/2026-12-02-s25-suite.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-330}
work_dir s25-suite
build_dev "$W/build.log"
say "build done"
# The tests whose path the default changed first (the layer, its GEMMs, graphs), then the rest.
R='MoECuda|GroupedGemm|Graph|Preset'
timeout $(($(left) - 20)) ctest --test-dir "$B" -L gpu -R "$R" --output-on-failure --timeout 100 \
  >"$W/gpu-tests-dynamic.log" 2>&1
say "gpu tests (dynamic) rc=$? $(grep -E 'tests passed|tests failed' "$W/gpu-tests-dynamic.log")"
timeout $(($(left) - 20)) ctest --test-dir "$B" -L gpu -E "$R" --output-on-failure --timeout 100 \
  >"$W/gpu-tests-rest.log" 2>&1
say "gpu tests (rest) rc=$? $(grep -E 'tests passed|tests failed' "$W/gpu-tests-rest.log")"
grep -hE '\(Failed\)|\(Timeout\)|\*\*\*Failed' "$W"/gpu-tests-*.log | head -n 10 | tee -a "$W/s25-suite.txt"
(($(left) > 40)) && {
  timeout $(($(left) - 5)) "$B/servekit" bench moe --preset qwen3-30b-a3b --quant bf16 \
    --tokens 2048,8192 --routing uniform --path dynamic --check-tokens 8 \
    --commit "${SERVEKIT_COMMIT:-unknown}" --out "$W/q30-peer.json" >"$W/q30-peer.log" 2>&1
  say "q30 with peer rc=$? $(grep -E '^qwen' "$W/q30-peer.log" | awk '{print $3 ":" $6 "/" $10}' | tr '\n' ' ')"
}
say "done"
