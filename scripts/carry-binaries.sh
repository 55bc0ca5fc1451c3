#!/usr/bin/env bash
# Packs servekit and servekit_gpu_tests from a CUDA build here (default build/) into the
# git-ignored build-carry/ (xz, ~25 MB; gzip's ~37 MB with the ~16 MB tree no longer passed the
# device's 64 MiB carry limit beside a second servekit, session 60), with the commit
# they were built from, for a device call that skips its own build (~100-140 s of device time):
# carry ["build-carry"] and PREBUILT=build-carry (bench/runs/2026-12-07-s55-order.sh). The
# device's nvcc is the same 13.0; its binaries load cuBLAS from /usr/local/cuda/lib64 there.
# Builds what is out of date first; refuses when the sources have uncommitted changes.
# On the device: `scripts/carry-binaries.sh --unpack DIR` unpacks every DIR/*.xz (and *.gz, as
# older packs were) beside itself
# (the carried folder is copied afresh at every call, so every call that runs them unpacks).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ${1:-} == --unpack ]]; then
  # A file that does not unpack ends the script with a non-zero status (set -e).
  shopt -s nullglob
  for z in "${2:?--unpack DIR}"/*.gz; do
    gzip -dc "$z" >"${z%.gz}"
    chmod +x "${z%.gz}"
  done
  for z in "$2"/*.xz; do
    # Python's lzma where the machine has no xz (it rewrites the whole file).
    xz -dc "$z" >"${z%.xz}" 2>/dev/null ||
      python3 -c 'import lzma, sys; sys.stdout.buffer.write(lzma.open(sys.argv[1]).read())' "$z" \
        >"${z%.xz}"
    chmod +x "${z%.xz}"
  done
  exit 0
fi
BUILD_DIR=${1:-build}
if [[ -n $(git status --porcelain --untracked-files=no -- src include CMakeLists.txt tests) ]]; then
  echo "carry-binaries: uncommitted changes under src, include, tests or CMakeLists.txt" >&2
  exit 1
fi
# Brings the build up to date first (a dry run cannot tell: the globbed sources rerun CMake).
ninja -C "$BUILD_DIR" servekit servekit_gpu_tests >/dev/null
rm -rf build-carry
mkdir -p build-carry
for f in servekit servekit_gpu_tests; do xz -6 -T2 -c "$BUILD_DIR/$f" >"build-carry/$f.xz"; done
git rev-parse --short HEAD >build-carry/commit
du -sh build-carry
