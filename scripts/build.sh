#!/usr/bin/env bash
# Configures and builds servekit into build/ (CUDA backend when nvcc is found).
# Extra arguments go to cmake's configure step. JOBS overrides the parallelism (default: nproc);
# SERVEKIT_WERROR=OFF keeps warnings non-fatal (default ON, as in CI).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
cmake -S . -B "$BUILD_DIR" -G Ninja -DSERVEKIT_WERROR="${SERVEKIT_WERROR:-ON}" "$@" >/dev/null
cmake --build "$BUILD_DIR" -j "${JOBS:-$(nproc)}"
