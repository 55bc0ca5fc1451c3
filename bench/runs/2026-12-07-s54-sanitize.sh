#!/usr/bin/env bash
# Session 54: the compute-sanitizer tools that never ran on servekit, and the one kernel racecheck
# never reached (any card: correctness, not timing).
#   - racecheck of the static bf16 kernel with the shared-memory weight ring (static_ring.cuh: a
#     producer warp, mbarriers, bulk copies; the only static kernel with them). gpu-check's
#     racecheck stage runs fp8_block128 and mxfp4_w4a16 (written for an earlier pipelined kernel,
#     since reverted; both are on the register ring), and its tiny preset gives a CTA at most a k-block
#     or two, so the ring never wraps (its phase bits never flip). qwen3-30b-a3b at 1 / 8 / 33
#     tokens gives CTAs tens of k-blocks; `one` at 33 tokens adds a 32-row virtual task (four token
#     tiles, the window sliding). Plus the tiny preset in every format, both paths.
#   - synccheck (barriers in divergent code, named-barrier misuse) on the same rows.
#   - initcheck (reads of device memory never written: workspaces, counters, padding rows) on the
#     tiny preset, every format, both paths, and on the qwen3-30b bf16 static rows.
# Each stage is time-boxed; --print-limit keeps the logs short; the summary lists every stage's
# ERROR / RACECHECK SUMMARY line.
# Ran once, session 54 at 2e84c5d on an H100 (BUDGET_S=500, 223 s; bench/results/h100/ab/
# 2026-12-07-s54-sanitize): racecheck-ring 1 error (the producer's bulk copy against the
# consumers' reads of a stage; 2026-12-07-s54-ring-sync.sh followed it up), every other stage
# 0 errors / 0 hazards, every row ok.
# Device (carry [".deps"]): SERVEKIT_COMMIT=<sha> BUDGET_S=<s> bash bench/runs/2026-12-07-s54-sanitize.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-480}
B=build
work_dir_out s54-sanitize
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
SAN=$(sanitizer_path)
[[ -n $SAN ]] || { say "compute-sanitizer not found"; exit 1; }
say "$("$SAN" --version | tail -n 1)"
build_notests "$W/build.log"

# Every format with a static kernel, both paths; mxfp4_w4a8 has the dynamic path only.
ALL=bf16,fp8_per_tensor,fp8_block128,mxfp4_w4a16,nvfp4_w4a16,int4_w4a16
ROWS_Q30=(--preset qwen3-30b-a3b --quant bf16 --tokens 1,8,33 --routing uniform,one --path static
  --check-tokens 1)
ROWS_TINY=(--preset tiny --quant "$ALL" --tokens 1,8,33 --routing uniform --path both --check-tokens 8
  --then --preset tiny --quant mxfp4_w4a8 --tokens 1,8,33 --routing uniform --path dynamic
  --check-tokens 8)
# san TAG LIMIT TOOL ROWS...: one sanitized bench run (one timed repeat, no warm-up, no peer).
san() {
  local tag=$1 limit=$2 tool=$3
  shift 3
  (($(left) < 40)) && { say "$tag skipped (budget)"; return; }
  ((limit > $(left) - 20)) && limit=$(($(left) - 20))
  timeout --kill-after=10 "$limit" "$SAN" --tool "$tool" --error-exitcode 1 --print-limit 20 \
    "$B/servekit" bench moe "$@" --repeats 1 --warmup 0 --threads 8 --peer off \
    --commit "${SERVEKIT_COMMIT:-unknown}" >"$W/$tag.log" 2>&1
  say "$tag rc=$? $(grep -hE '(ERROR|RACECHECK) SUMMARY' "$W/$tag.log" | sort | uniq -c | tr -s ' ' | tr '\n' ';')"
}
san racecheck-ring 120 racecheck "${ROWS_Q30[@]}"
san synccheck-tiny 90 synccheck "${ROWS_TINY[@]}"
san synccheck-ring 60 synccheck "${ROWS_Q30[@]}"
san initcheck-tiny 120 initcheck "${ROWS_TINY[@]}"
san initcheck-ring 60 initcheck "${ROWS_Q30[@]}"
san racecheck-tiny 90 racecheck "${ROWS_TINY[@]}"
say done
