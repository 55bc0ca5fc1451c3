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
#     static and layer tests passed, 76/76).
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=590 bash bench/runs/2026-12-07-s54-next.sh
set -uo pipefail
name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
echo "card: $name"
case $name in
  *H200*) set_name=issues tests=sanitize ;;
  *) set_name=none tests=1 ;;
esac
exec env OUT="${OUT:-$PWD/out}/check" BUDGET_S="${BUDGET_S:-590}" BENCH_SET=$set_name \
  RUN_TESTS=$tests "$(dirname "$0")/../../scripts/gpu-check.sh"
