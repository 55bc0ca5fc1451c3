# Shared start of the device-call scripts in bench/runs/ (sourced, after `set -uo pipefail`):
# the repository root as working directory, CUDA on the PATH, OUT (default ./out), B=build-dev,
# START (seconds), and build_dev LOG, which builds B with every core (reusing what the lease
# kept from an earlier call) and ends the calling script with the log's tail if the build fails.
# The session-8 scripts were switched to it after their calls ran (same commands).
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 1
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-$PWD/out}
B=build-dev
START=$(date +%s)
mkdir -p "$OUT"
build_dev() {
  env JOBS="$(nproc)" BUILD_DIR="$B" SERVEKIT_WERROR=OFF scripts/build.sh >"$1" 2>&1 ||
    { tail -n 40 "$1"; exit 1; }
}
# build_tests LOG: B built with the tests (GoogleTest from the system, else .deps/gtest) on every
# core (JOBS, where set, instead: two builds side by side); says "built", or ends the calling
# script (or subshell) with the log's tail. Needs say. Scripts of session 43 on (session 42's,
# which spelt it out, are records of what ran).
build_tests() {
  local extra=()
  [[ -f /usr/include/gtest/gtest.h ]] || extra+=(-DGTEST_ROOT="$PWD/.deps/gtest")
  env JOBS="${JOBS:-$(nproc)}" BUILD_DIR="$B" SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=ON \
    "${extra[@]}" >"$1" 2>&1 || { say "build failed: $(tail -n 20 "$1")"; exit 1; }
  say "built"
}
# build_notests LOG: B built without the tests on every core; says "built", or ends the calling
# script with the log's tail. Scripts of session 53 on (s52-last.sh was switched to it after its
# ncu branch ran: same commands).
build_notests() {
  env JOBS="$(nproc)" BUILD_DIR="$B" SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF >"$1" 2>&1 ||
    { say "build failed: $(tail -n 20 "$1")"; exit 1; }
  say "built"
}
# bench_row TAG ENV... -- BENCH_ARGS...: one `servekit bench moe` run of $BIN (default
# $B/servekit) with the given environment (e.g. SERVEKIT_STATIC_ROW_COST=5), --peer off, into
# $W/TAG.json and $W/TAG.log, time-boxed to 60 s and to left() (skipped with a line when under
# 35 s are left). Needs W, left and say (echoes to a summary) from the calling script; says the
# rows' tokens:us, and (from session 41 on) the first row's kernels. Scripts of session 13 on.
bench_row() {
  local tag=$1 envs=()
  shift
  while [[ $1 != -- ]]; do
    envs+=("$1")
    shift
  done
  shift
  (($(left) < 35)) && { say "$tag skipped (budget)"; return; }
  local t=$(($(left) - 15))
  ((t > 60)) && t=60
  env "${envs[@]}" timeout $t "${BIN:-$B/servekit}" bench moe "$@" --peer off --check-tokens 1 \
    --commit "${SERVEKIT_COMMIT:-unknown}" --out "$W/$tag.json" >"$W/$tag.log" 2>&1
  say "$tag rc=$? $(grep -E '^(deepseek|qwen|kimi|gpt|mixtral)' "$W/$tag.log" | awk '{print $3 ":" $6}' | tr '\n' ' ')$(
    grep -o '"kernels":"[^"]*"' "$W/$tag.json" 2>/dev/null | head -n 1 | sed 's/^"kernels":/ /')"
}
# work_dir NAME: a fresh work folder W; when the script exits, W ends up in OUT/NAME.tgz and
# W/NAME.txt (what say wrote) in OUT/NAME.txt. left: seconds to START + BUDGET_S. Scripts of
# session 13 on (the older ones define their own).
work_dir() {
  W=$(mktemp -d)
  WORK_NAME=$1
  trap 'tar -czf "$OUT/$WORK_NAME.tgz" -C "$W" . 2>/dev/null; cp "$W/$WORK_NAME.txt" "$OUT/$WORK_NAME.txt" 2>/dev/null' EXIT
}
# work_dir_out NAME: work_dir with W straight under OUT (OUT/NAME), so that its logs come back
# from a call stopped at its limit, which runs no exit trap. Scripts of session 49 on.
work_dir_out() {
  work_dir "$1"
  W=$OUT/$1
  mkdir -p "$W"
}
say() { echo "$* at $(($(date +%s) - START))s" | tee -a "$W/$WORK_NAME.txt"; }
left() { echo $((START + BUDGET_S - $(date +%s))); }
# profile_row TAG ROWS NCU_ARGS [ENV...]: scripts/gpu-profile.sh (ncu, clocks left alone) on the
# bench rows ROWS with NCU_ARGS and the given environment, into $W/ncu-TAG/, boxed to left() - 10
# and skipped with a line when under 60 s are left. Needs W, left and say. Scripts of session 22
# on.
profile_row() {
  local tag=$1 rows=$2 args=$3
  shift 3
  (($(left) < 60)) && { say "ncu $tag skipped (budget)"; return; }
  env "$@" OUT="$W/ncu-$tag" BUDGET_S=$(($(left) - 10)) BUILD_DIR=$B PROFILE_ROWS="$rows" \
    NCU_ARGS="$args" scripts/gpu-profile.sh >/dev/null 2>&1
  say "ncu $tag rc=$?"
}
# copy_tree DIR [PATCH]: a copy of the tree at DIR (without build folders, out and .deps, which
# is linked), with PATCH applied if given; ends the calling script with a line (say) when the patch
# does not apply. Scripts of session 27 on (switched to it after their calls ran, same commands).
copy_tree() {
  rm -rf "$1" && mkdir -p "$1"
  tar --exclude=./build --exclude=./build-dev --exclude=./out --exclude=./.deps -cf - . | tar -xf - -C "$1"
  ln -s "$PWD/.deps" "$1/.deps"
  [[ -z ${2:-} ]] || (cd "$1" && patch -p1 <"$2" >/dev/null) || { say "patch $2 does not apply"; exit 1; }
}
# unpack_prebuilt DIR: the binaries carried in DIR (scripts/carry-binaries.sh --unpack), cuBLAS's
# folder on LD_LIBRARY_PATH (a function, so the calling script gets it), and a line with their
# commit; ends the calling script when the unpack fails. Needs W and say. Scripts of session 57
# (they and s55-order.sh, which spelt it out, were switched to it after they ran: same commands).
unpack_prebuilt() {
  scripts/carry-binaries.sh --unpack "$1" || { say "unpack failed"; exit 1; }
  export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  say "prebuilt at $(cat "$1/commit")"
}
# prebuilt_start NAME: work_dir_out NAME, a line with the card's name, and unpack_prebuilt "$B"
# (B: the carried folder); the start of the scripts that run carried binaries. Scripts of session
# 58 on (s57-fused.sh was switched to it after its calls ran: same commands).
prebuilt_start() {
  work_dir_out "$1"
  say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
  unpack_prebuilt "$B"
}
# on_h200: true on an H200 (a call that names nvidia-h200 may get an H100). h200_only: ends the
# calling script at once, with a line, on any other card. Scripts of session 60 on (s59-suite was
# switched to on_h200 after its calls ran, same commands; s58-h200, which spelt it out, is a
# record of a call).
on_h200() { nvidia-smi --query-gpu=name --format=csv,noheader | grep -q H200; }
h200_only() { on_h200 || { echo "not an H200"; exit 0; }; }
# static_ab_presets: the arrays q235, q30 and oss, bench_row's arguments for the static path's
# A/B rows (qwen3-235b int4, qwen3-30b bf16, gpt-oss mxfp4 at 1 / 8 / 32 tokens, uniform; ~20 s
# for the three on an H100). Scripts of session 60 on (s59-tail and s59-start, which spelt them
# out, are records of calls).
static_ab_presets() {
  local static=(--tokens "1,8,32" --routing uniform --path static)
  q235=(--preset qwen3-235b-a22b --quant int4_w4a16 "${static[@]}")
  q30=(--preset qwen3-30b-a3b --quant bf16 "${static[@]}")
  oss=(--preset gpt-oss-120b --quant mxfp4_w4a16 "${static[@]}")
}
# prebuilt_check SET SECONDS: scripts/gpu-check.sh's BENCH_SET=SET rows from the carried binaries
# in B (RUN_TESTS=0), boxed to SECONDS, into W/check (its log W/gpu-check.log); says its bench
# line. Scripts of session 58 on (s57-record.sh was switched to it after its calls ran: same
# commands).
prebuilt_check() {
  env OUT="$W/check" BUDGET_S="$2" BUILD_DIR="$B" BENCH_SET="$1" RUN_TESTS=0 PREBUILT=1 \
    scripts/gpu-check.sh >"$W/gpu-check.log" 2>&1
  say "gpu-check $1 rc=$? $(grep -E '^bench ' "$W/check/summary.txt" 2>/dev/null)"
}
# issue3_rows: issue 3's target rows (qwen3-30b and mixtral bf16 at 2048 and 8192 tokens,
# deepseek-v3 fp8_block128 at 2048 and 8192, bf16 at 8192; uniform routing) with their cuBLAS
# peers, 32 tokens checked against the CPU reference, into $OUT/issue3.json and .log, boxed to
# left() (skipped under 60 s); the rows' lines go to the summary. Needs W, left and say. Scripts
# of session 35 on (its check and final calls were switched to it after they ran, same commands).
issue3_rows() {
  local t
  t=$(left)
  ((t > 60)) || { say "issue 3 rows skipped (budget)"; return; }
  timeout $((t - 10)) "$B/servekit" bench moe \
    --preset qwen3-30b-a3b --quant bf16 --tokens 2048,8192 --routing uniform --check-tokens 32 \
    --then --preset mixtral-8x7b --quant bf16 --tokens 2048,8192 --routing uniform --check-tokens 32 \
    --then --preset deepseek-v3 --quant fp8_block128 --tokens 2048,8192 --routing uniform --check-tokens 32 \
    --then --preset deepseek-v3 --quant bf16 --tokens 8192 --routing uniform --check-tokens 32 \
    --max-seconds $((t - 40)) --commit "${SERVEKIT_COMMIT:-unknown}" \
    --out "$OUT/issue3.json" >"$OUT/issue3.log" 2>&1
  say "bench rc=$?"
  grep -E '^(deepseek|qwen|mixtral)' "$OUT/issue3.log" | tee -a "$W/$WORK_NAME.txt"
}
# gtest_run TAG BIN FILTER SECONDS: the GPU tests of FILTER from build folder BIN, time-boxed, into
# $W/tests-TAG.log; says how many passed and gtest's verdict, and adds the failures to the summary.
# Needs W and say. Scripts of session 36 on (session 37's were switched to it after they ran: same
# commands, the logs now named tests-TAG.log).
gtest_run() {
  local log=$W/tests-$1.log
  # A box under 30 s would run too few tests to say anything, and `timeout 0` would not box at
  # all (a negative one fails), so such a run is skipped with a line (from session 59 on).
  (($4 < 30)) && { say "$1 tests skipped (budget: $4 s)"; return; }
  timeout "$4" "$2/servekit_gpu_tests" --gtest_filter="$3" >"$log" 2>&1
  say "$1 tests rc=$? $(grep -cE '^\[ +OK \]' "$log") ok, $(grep -E '^\[  (PASSED|FAILED) ' "$log" | tr '\n' ' ')"
  grep -E "^\[  FAILED|Failure" "$log" | head -n 20 >>"$W/$WORK_NAME.txt"
}
# gemm_probe_build OUT BIN: bench/tools/gemm_groups.cpp linked against BIN/libservekit.a, as OUT
# (a line in the summary when it fails). Scripts of session 37.
gemm_probe_build() {
  g++ -O2 -std=c++20 -Iinclude -Isrc -I/usr/local/cuda/include bench/tools/gemm_groups.cpp \
    "$2/libservekit.a" -L/usr/local/cuda/lib64 -lcudart -lcublas -lcublasLt -lpthread -o "$1" \
    >"$1-build.log" 2>&1 || { say "probe build failed: $(tail -n 5 "$1-build.log")"; return 1; }
}
# build_beside TAG FLAG: main built in B (tests off) and, in parallel, a copy of the tree at
# /tmp/TAG-tree built with the preprocessor FLAG (tests on) in its build-TAG, 8 jobs each; ends
# the script when main's build fails, says the flagged build's status and sets FB to its folder.
# Needs W, say and copy_tree. Scripts of session 35 on (its cluster call was switched to it after
# it ran, same commands).
build_beside() {
  local tag=$1 flag=$2 tree=/tmp/$1-tree
  copy_tree "$tree"
  (cd "$tree" && env JOBS=8 BUILD_DIR="build-$tag" SERVEKIT_WERROR=OFF scripts/build.sh \
    "-DCMAKE_CUDA_FLAGS=$flag" "-DCMAKE_CXX_FLAGS=$flag" >"$W/build-$tag.log" 2>&1
    echo $? >"$W/build-$tag.rc") &
  env JOBS=8 BUILD_DIR="$B" SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_TESTS=OFF >"$W/build.log" 2>&1 ||
    { tail -n 40 "$W/build.log"; exit 1; }
  say "main build done"
  wait
  say "$tag build rc=$(cat "$W/build-$tag.rc")"
  grep -E " error" "$W/build-$tag.log" | head -n 10 >>"$W/$WORK_NAME.txt"
  FB=$tree/build-$tag
}
# gpu_suite SECONDS: B's whole GPU suite (ctest -L gpu), time-boxed, into $W/tests-gpu.log; says
# ctest's verdict and adds the failed or timed-out tests to the summary. Needs W and say. Scripts of
# session 44 on (session 43's pick call, which spelt it out, is a record of what ran).
gpu_suite() {
  (cd "$B" && timeout "$1" ctest -L gpu --output-on-failure >"$W/tests-gpu.log" 2>&1)
  say "gpu suite rc=$? $(grep -E 'tests passed|failed out of' "$W/tests-gpu.log")"
  grep -E "^\s+[0-9]+ - .*\((Failed|Timeout)\)" "$W/tests-gpu.log" >>"$W/$WORK_NAME.txt"
}
# The ncu sections of the GEMM profiles (SpeedOfLight to Occupancy), as profile_row's NCU_ARGS
# with --page details: bench/ncu_table.py tabulates them. Scripts of session 42 on (sessions 36-41
# wrote the same list out).
NCU_GEMM_DETAILS="--page details --kernel-name regex:device_kernel --launch-count 2"
NCU_GEMM_DETAILS+=" --section SpeedOfLight --section MemoryWorkloadAnalysis"
NCU_GEMM_DETAILS+=" --section ComputeWorkloadAnalysis --section WarpStateStats --section LaunchStats"
NCU_GEMM_DETAILS+=" --section Occupancy"
# A stall profile on ncu's raw page, as profile_row's NCU_ARGS with --kernel-name and
# --launch-count added: bench/ncu_table.py prints each kernel's pipe, L2, DRAM and issue shares
# and its largest stall reasons. Scripts of session 53 on (s52-last.sh switched to it after it ran).
NCU_RAW_STALLS="--page raw --section SpeedOfLight --section ComputeWorkloadAnalysis"
NCU_RAW_STALLS+=" --section WarpStateStats --section MemoryWorkloadAnalysis"
# sanitizer_path: compute-sanitizer's path (PATH, then /usr/local/cuda*/bin), empty when there is
# none. memcheck_run and the sanitizer scripts of session 54 (switched to it after their calls ran:
# the same lookup).
sanitizer_path() {
  command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1
}
# memcheck_run TAG BUILD FILTER: compute-sanitizer memcheck of BUILD's GPU tests matching FILTER
# into $W/memcheck-TAG.log, boxed to left() - 10 and skipped under 40 s left or without the tool;
# says the summary. Needs W, left and say. Scripts of session 42 on (earlier ones wrote it out).
memcheck_run() {
  local cs
  cs=$(sanitizer_path)
  if [[ -z $cs ]] || (($(left) <= 40)); then
    say "memcheck $1 skipped"
    return
  fi
  timeout $(($(left) - 10)) "$cs" --tool memcheck "$2/servekit_gpu_tests" --gtest_filter="$3" \
    >"$W/memcheck-$1.log" 2>&1
  say "memcheck $1 rc=$? $(grep -E 'ERROR SUMMARY|PASSED|FAILED' "$W/memcheck-$1.log" | tr '\n' ' ')"
}
