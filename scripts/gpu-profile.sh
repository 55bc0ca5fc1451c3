#!/usr/bin/env bash
# Per-kernel durations and DRAM bytes of chosen benchmark rows under Nsight Compute, for ONE
# device call (after scripts/gpu-check.sh has built BUILD_DIR, or it builds here).
#   PROFILE_ROWS  row options for `servekit bench moe`, groups separated by --then
#                 (default: the static path's 1/8/32-token rows and the dynamic 8192 rows)
#   OUT           where ncu-<n>.csv and profile.log go (default ./out)
#   BUDGET_S      seconds for the whole script (default 400)
#   NCU_ARGS      what ncu collects (default: see below)
#   PROFILE_SET   stalls: preset rows and sections for the static GEMMs' warp stalls;
#                 source: per-instruction stall samples of the one-token kernels (not yet run)
# ncu serialises kernels (no PDL overlap) and flushes caches before each one (cold L2, as the
# benchmark), so the durations add up to more than the graph-timed layer: read them as shares.
# Clocks are left alone (--clock-control none), as the device rules require.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
START=$(date +%s)
BUDGET_S=${BUDGET_S:-400}
OUT=${OUT:-$PWD/out}
BUILD_DIR=${BUILD_DIR:-build}
mkdir -p "$OUT"
left() { echo $((START + BUDGET_S - $(date +%s))); }

NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
if [[ -z $NCU ]]; then
  echo "ncu not found" | tee "$OUT/profile.log"
  exit 1
fi
if [[ ! -x $BUILD_DIR/servekit ]]; then
  env JOBS="$(nproc)" BUILD_DIR="$BUILD_DIR" SERVEKIT_WERROR=OFF scripts/build.sh \
    -DSERVEKIT_TESTS=OFF >"$OUT/build.log" 2>&1 || {
    tail -n 30 "$OUT/build.log"
    exit 1
  }
fi

DEFAULT_ROWS="--preset qwen3-30b-a3b --quant bf16 --tokens 1,8 --path static
 --then --preset deepseek-v3 --quant fp8_block128 --tokens 1,8,32 --path static
 --then --preset qwen3-235b-a22b --quant int4_w4a16 --tokens 8 --path static
 --then --preset qwen3-30b-a3b --quant bf16 --tokens 2048 --path dynamic
 --then --preset deepseek-v3 --quant bf16,fp8_block128 --tokens 8192 --path dynamic"
# PROFILE_SET=stalls: where the static GEMM kernels' warps wait (the next question of
# docs/perf-notes.md): one-token and 8-token rows, both GEMMs of the first forward of each row.
STALL_ROWS="--preset qwen3-30b-a3b --quant bf16 --tokens 1 --path static
 --then --preset qwen3-235b-a22b --quant int4_w4a16 --tokens 8 --path static
 --then --preset deepseek-v3 --quant fp8_block128 --tokens 8 --path static"
STALL_NCU="--page details --section SpeedOfLight --section WarpStateStats --section SchedulerStats
 --section Occupancy --section MemoryWorkloadAnalysis --kernel-name regex:static_gemm|static_ring
 --launch-count 2"
# PROFILE_SET=source: where in the code the one-token kernels wait (per SASS instruction: warp
# stall samples by reason, SourceCounters), for the static GEMMs and the route + plan launch of
# the one-token rows: the unit hand-over, the staging round trips and the routing chain that the
# CTA stamps point at (docs/perf-notes.md, fourth and fifth passes). Sampled every 32 cycles
# (interval 0): at ncu's default the one-CTA route + plan kernel got 7-14 samples (nineteenth pass).
SOURCE_ROWS="--preset qwen3-30b-a3b --quant bf16 --tokens 1 --path static
 --then --preset kimi-k2 --quant int4_w4a16 --tokens 1 --path static
 --then --preset deepseek-v3 --quant fp8_block128 --tokens 1 --path static"
SOURCE_NCU="--page source --print-source sass --section SourceCounters --section WarpStateStats
 --warp-sampling-interval 0 --kernel-name regex:static_gemm|static_ring|route_and_plan
 --launch-count 3"
if [[ ${PROFILE_SET:-} == stalls ]]; then
  PROFILE_ROWS=${PROFILE_ROWS:-$STALL_ROWS}
  NCU_ARGS=${NCU_ARGS:-$STALL_NCU}
elif [[ ${PROFILE_SET:-} == source ]]; then
  PROFILE_ROWS=${PROFILE_ROWS:-$SOURCE_ROWS}
  NCU_ARGS=${NCU_ARGS:-$SOURCE_NCU}
fi
ROWS=${PROFILE_ROWS:-$DEFAULT_ROWS}
# What ncu collects: by default durations, DRAM bytes and grids (bench/ncu_table.py reads them);
# e.g. NCU_ARGS="--page details --section WarpStateStats --kernel-name regex:static_gemm
# --launch-count 2" for where the warps of chosen kernels stall.
NCU_ARGS=${NCU_ARGS:---page raw --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size}

# One ncu process per row group, so one slow group cannot take the others' output.
n=0
while IFS= read -r group; do
  [[ -z ${group// /} ]] && continue
  n=$((n + 1))
  limit=$(($(left) - 10))
  ((limit < 20)) && { echo "budget spent before group $n: $group" | tee -a "$OUT/profile.log"; break; }
  echo "== group $n (limit ${limit}s): $group" | tee -a "$OUT/profile.log"
  # shellcheck disable=SC2086
  timeout --kill-after=10 "$limit" "$NCU" --clock-control none --csv $NCU_ARGS \
    --log-file "$OUT/ncu-$n.csv" \
    "$BUILD_DIR/servekit" bench moe $group --routing uniform --repeats 1 --warmup 0 --peer off \
    --check-tokens 1 >>"$OUT/profile.log" 2>&1
  echo "rc=$?" >>"$OUT/profile.log"
done < <(echo "$ROWS" | tr '\n' ' ' | sed 's/--then/\n/g'; echo)
echo "total $(($(date +%s) - START))s" | tee -a "$OUT/profile.log"
python3 bench/ncu_table.py "$OUT"/ncu-*.csv > "$OUT/ncu-table.txt" 2>&1 || true
[[ ${PROFILE_SET:-} == source ]] &&
  python3 bench/ncu_source_csv.py "$OUT"/ncu-*.csv > "$OUT/ncu-source.txt" 2>&1
# The device returns files of at most 16 MiB: the per-instruction (source) pages can be large.
for f in "$OUT"/ncu-*.csv; do
  [[ -f $f ]] && (($(stat -c %s "$f") > 8 * 1024 * 1024)) && gzip -f "$f"
done
# Every stage above reports through its files; a last test that fails (no large CSV to gzip) is not
# the script's failure.
exit 0
