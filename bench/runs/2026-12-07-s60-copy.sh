#!/usr/bin/env bash
# Session 60: the start of each static GEMM CTA, two changes.
# 1. The partition table's copy into shared memory by cp.async (static_cta_start), so no
# compute thread waits for it at the CTA's start. Main's load-then-store stalled every thread
# an L2 round trip (threads 0-8 two) between the CTA's range and its first task's loads; in
# GEMM1 that sits on the chain from the dependency wait to the first weight load (SASS of int4
# g128 GEMM1: ACQBULK, the range's loads, the copy's LDG + STS, then the task's LDG, the expert's
# LDG, the ring's first loads). The threads now wait (cp.async.wait_all) just before the
# barrier that ends the first unit's staging. Session 59's version (8ef6146, reverted) held the
# loaded entries in registers until that staging; this one holds none (ptxas: registers and
# spills of every static kernel unchanged).
# 2. GEMM1's CTAs ask their SM's L1 for the expert table (constant for the layer's life) before
# their dependency wait (static_expert_table_prefetch: one prefetch.global.L1 per thread,
# CCTL.E.PF1 in the SASS), so the first task's expert lookup after the wait, the load between
# the task's and the first weight loads, hits L1 instead of HBM (the benchmark flushes L2 before
# each replay, and a previous layer's GEMM2 streams its weights through it; the twenty-ninth
# pass's stamps had "the expert table from HBM" on that chain).
# SERVEKIT_DIAG_STATIC_TABLE_PREFETCH_OFF=1 (variant "copy") leaves only the cp.async.
# Prediction: GEMM1's weight stream starts one L2 round trip (copy) plus one HBM-vs-L1 round trip
# (prefetch) earlier: -0.3 to -1 us each on every static row (1-3% at one token together), level
# within the spread at 8 and 32 tokens.
# Then, on the same card: the batched unit tail against its serial switch
# (SERVEKIT_DIAG_STATIC_SERIAL_TAIL=1, same bits; H100 of session 59: batched 2-5% faster at
# one token, ~1% at 8 and 32); the whole GPU suite of the new binary, in two parts, and
# compute-sanitizer (memcheck, racecheck) on a few static cases.
# Ran at 5a2da8f on an H100 (the call named nvidia-h200): level on qwen3-235b int4 and
# qwen3-30b bf16, gpt-oss mxfp4 1-2% slower at one token (copy alone too), every row ok; static
# and layer tests 73/73, the rest of the suite cut by its box at 28 (none failed), memcheck 0
# errors, racecheck 0 hazards (bench/results/h100/ab/2026-12-07-s60-copy/). Reverted; to run it
# again, apply bench/runs/s60-start.patch to main and pack with scripts/carry-binaries.sh.
# Switched after it ran to prelude's unpack_prebuilt (for main's servekit) and static_ab_presets:
# the same commands.
# Device (carry ["build-carry", "build-main"]: build-carry from scripts/carry-binaries.sh at the
# commit, build-main/servekit.xz main's servekit at 54c42be, build-main/commit its commit):
#   SERVEKIT_COMMIT=<sha> BUDGET_S=560 bash bench/runs/2026-12-07-s60-copy.sh
# Order: the static and layer GPU tests (73, ~100 s on an H100), the rows (~160 s), the rest of
# the suite (91, ~110 s), the sanitizers with what is left.
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-560}
B=${PREBUILT:-build-carry}
prebuilt_start s60-copy
unpack_prebuilt build-main
gtest_run static "$B" '*Static*:MoECuda*' $(($(left) - 60))
static_ab_presets
for round in 1 2; do
  order=(main new copy serial)
  ((round == 2)) && order=(serial copy new main)
  for w in "${order[@]}"; do
    bin=$B/servekit envs=(SERVEKIT_DIAG_STATIC_SERIAL_TAIL=0)
    [[ $w == main ]] && bin=build-main/servekit
    [[ $w == copy ]] && envs=(SERVEKIT_DIAG_STATIC_TABLE_PREFETCH_OFF=1)
    [[ $w == serial ]] && envs=(SERVEKIT_DIAG_STATIC_SERIAL_TAIL=1)
    BIN=$bin bench_row "q235-$round-$w" "${envs[@]}" -- "${q235[@]}"
    BIN=$bin bench_row "q30-$round-$w" "${envs[@]}" -- "${q30[@]}"
    BIN=$bin bench_row "oss-$round-$w" "${envs[@]}" -- "${oss[@]}"
  done
done
gtest_run rest "$B" '-*Static*:MoECuda*' $(($(left) - 70))
# compute-sanitizer on the one-token and 8-token cases (CTAs without units, units cut in parts):
# memcheck, then racecheck (the shared-memory copy) with what is left.
cases='*StaticMoECuda*_T1_*:*StaticMoECuda*_T8_uniform*'
memcheck_run copy "$B" "$cases"
cs=$(sanitizer_path)
if [[ -n $cs ]] && (($(left) > 30)); then
  timeout $(($(left) - 5)) "$cs" --tool racecheck "$B/servekit_gpu_tests" \
    --gtest_filter='*StaticMoECuda*bf16*_T1_*:*StaticMoECuda*int4*_T1_*' >"$W/racecheck-copy.log" 2>&1
  say "racecheck copy rc=$? $(grep -E 'RACECHECK SUMMARY|PASSED|FAILED' "$W/racecheck-copy.log" | tr '\n' ' ')"
fi
say "done"
