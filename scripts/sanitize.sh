#!/usr/bin/env bash
# Builds the CPU backend with AddressSanitizer and UndefinedBehaviorSanitizer (GCC's
# `undefined` plus float-cast-overflow, which `undefined` leaves out and which is where a
# quantizer's NaN or out-of-range float -> int conversion would show) into build-asan/, and runs
# every test there. Any report fails the test that made it (-fno-sanitize-recover=all). CI runs
# it after scripts/test.sh. The CUDA backend's host code is not covered (nvcc's host pass is not
# built with the sanitizers); compute-sanitizer covers its kernels on the device
# (scripts/gpu-check.sh). JOBS overrides the parallelism (default: nproc). Warnings stay
# non-fatal here: the instrumentation changes what GCC's flow analysis warns about, and
# scripts/test.sh's build is the one held to -Werror.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
san=-fsanitize=address,undefined,float-cast-overflow
BUILD_DIR=build-asan SERVEKIT_WERROR=OFF scripts/build.sh -DSERVEKIT_CUDA=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS=$san -fno-omit-frame-pointer -fno-sanitize-recover=all" \
  "-DCMAKE_EXE_LINKER_FLAGS=$san"
cd build-asan
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1} \
  ctest --output-on-failure -j "${JOBS:-$(nproc)}"
