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
