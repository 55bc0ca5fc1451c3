#!/usr/bin/env bash
# Prepared in session 54 for the next lease, useful on either card:
#   an H200: issues 3 and 4's rows of record at this commit (scripts/gpu-check.sh, BENCH_SET=issues,
#     RUN_TESTS=sanitize: no test suite, every sanitizer stage; session 52's H100 lease ran the
#     old stages in seconds, the ring's racecheck adds ~30 s; session 49's build 97 s and bench
#     244 s); the last H200 rows are session 49's at a12e3a0;
#   anything else: the whole GPU suite and the CPU suite, then every sanitizer stage, gpu-check's
#     new ones included (the ring's racecheck where it wraps, synccheck, initcheck), no benchmark
#     (BENCH_SET=none; session 52's H100 run: build 142 s, GPU tests 223 s); the last whole suite
#     is session 52's at 1cf04f3, and session 54 changed the bf16 ring kernel's hand-back (its
#     static and layer tests passed, 76/76). Then, with the ~90 s kept back, racecheck of
#     servekit's own fp8_block128 mainloop (the 128x256 halves promotion) where its pipeline
#     wraps: qwen3-30b-a3b at 2048 tokens (perf-notes, fifty-fourth pass, Next 2; CUTLASS's stock
#     ping-pong mainloop reported 8 hazard sites at 256 tokens).
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=590 bash bench/runs/2026-12-07-s54-next.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"  # the repository root, OUT, START, left(), sanitizer_path
BUDGET_S=${BUDGET_S:-590}
name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
echo "card: $name"
case $name in
  *H200*)
    exec env OUT="$OUT/check" BUDGET_S="$BUDGET_S" BENCH_SET=issues RUN_TESTS=sanitize \
      scripts/gpu-check.sh
    ;;
esac
env OUT="$OUT/check" BUDGET_S=$((BUDGET_S - 90)) BENCH_SET=none RUN_TESTS=1 scripts/gpu-check.sh
echo "gpu-check rc=$?"
SAN=$(sanitizer_path)
if (($(left) > 40)) && [[ -n $SAN ]]; then
  timeout $(($(left) - 10)) "$SAN" --tool racecheck --error-exitcode 1 --print-limit 10 \
    build/servekit bench moe --preset qwen3-30b-a3b --quant fp8_block128 --tokens 2048 \
    --routing uniform --path dynamic --check-tokens 1 --repeats 1 --warmup 0 --threads 8 \
    --peer off --commit "${SERVEKIT_COMMIT:-unknown}" >"$OUT/check/racecheck-halves.log" 2>&1
  echo "racecheck halves rc=$? $(grep -hE 'RACECHECK SUMMARY|^qwen' "$OUT/check/racecheck-halves.log" | tr -s ' ')"
else
  echo "racecheck halves skipped ($(left) s left)"
fi
