#!/usr/bin/env bash
# Session 59: the static path's unit tail with its loads batched (static_fixup and
# static_combine_quad: a chunk of 4 stream-K parts, or 8 combine slots, 4 with a w2 bias, loaded
# before any is summed), against main (8af5fe8) and against the same binary with
# SERVEKIT_DIAG_STATIC_SERIAL_TAIL=1 (the part-by-part and slot-by-slot loops, same bits).
# Why: the SASS of main's GEMM2 (cuobjdump from PyPI's nvidia-cuda-cuobjdump, here) has the
# combine's slot loop unrolled by 4 but each slot's y32 load and sum in a branch of its own, so
# one dependent L2 round trip per slot after the 4 row loads (~10 for top-8), and the fix-up's
# part loop one per part; both are on the chain that ends a CTA's last unit.
# Prediction: -1 to -4 us on the one-token rows (qwen3-235b int4 ~50 us, qwen3-30b ~49 us,
# gpt-oss ~52 us: 8, 8 and 4 slots), less than 1% at 8 and 32 tokens; the ~7 us between GEMM2's
# last k-loop and its last exit (twelfth pass's stamps) is the most it could take. Level would
# mean the tail is not load-latency-bound (the sixth pass's wip/combine-batch measured level).
# Device (carry ["build-carry", "build-main"]: build-carry from scripts/carry-binaries.sh at the
# commit, build-main/servekit.xz main's servekit at 8af5fe8, xz: gzip would pass the 64 MiB carry):
#   SERVEKIT_COMMIT=<sha> BUDGET_S=480 bash bench/runs/2026-12-07-s59-tail.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-480}
B=${PREBUILT:-build-carry}
prebuilt_start s59-tail
unpack_main() {
  xz -dc build-main/servekit.xz >build-main/servekit ||
    python3 -c 'import lzma, sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())' \
      build-main/servekit.xz >build-main/servekit
}
if unpack_main; then chmod +x build-main/servekit; else
  say "unpack of main failed"
  exit 1
fi
gtest_run static "$B" '*Static*:MoECuda*' $(($(left) - 330))
static=(--tokens "1,8,32" --routing uniform --path static)
q235=(--preset qwen3-235b-a22b --quant int4_w4a16 "${static[@]}")
q30=(--preset qwen3-30b-a3b --quant bf16 "${static[@]}")
oss=(--preset gpt-oss-120b --quant mxfp4_w4a16 "${static[@]}")
row() {  # row TAG which(main|new|serial) ARGS...
  local tag=$1 which=$2
  shift 2
  case $which in
    main) BIN=build-main/servekit bench_row "$tag-main" -- "$@" ;;
    new) BIN=$B/servekit bench_row "$tag-new" -- "$@" ;;
    serial) BIN=$B/servekit bench_row "$tag-serial" SERVEKIT_DIAG_STATIC_SERIAL_TAIL=1 -- "$@" ;;
  esac
}
for round in 1 2; do
  order=(main new serial)
  ((round == 2)) && order=(serial new main)
  for w in "${order[@]}"; do
    row "q235-$round" "$w" "${q235[@]}"
    row "q30-$round" "$w" "${q30[@]}"
    row "oss-$round" "$w" "${oss[@]}"
  done
done
if (($(left) > 60)); then
  gtest_run rest "$B" '-*Static*:MoECuda*' $(($(left) - 5))
else
  say "rest of the suite skipped (budget)"
fi
say "done"
