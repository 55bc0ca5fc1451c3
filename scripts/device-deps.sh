#!/usr/bin/env bash
# Bundles what a build on the lent GPU machine needs but cannot download there (it reaches no
# registry): GoogleTest (headers + static libraries from this machine's Debian package) next to
# the CUTLASS headers in .deps/ (git-ignored). The device call names .deps in `carry`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
dst=.deps/gtest
rm -rf "$dst" && mkdir -p "$dst/include" "$dst/lib"
cp -r /usr/include/gtest /usr/include/gmock "$dst/include/"
cp /usr/lib/x86_64-linux-gnu/libgtest*.a /usr/lib/x86_64-linux-gnu/libgmock*.a "$dst/lib/"
du -sh .deps
