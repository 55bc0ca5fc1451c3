#!/usr/bin/env bash
# Session 61: the static and layer GPU tests (`*Static*:MoECuda*`, ~100 s on an H100; 75 on
# main, with session 61's in-place test) of the change that drops the serial unit tail
# (static_fixup_serial, static_combine_quad_serial and SERVEKIT_DIAG_STATIC_SERIAL_TAIL; the
# serial-vs-batched bit check inside every StaticMoECuda case goes with them, no test does),
# from its test binary built on the CPU machine (carry
# build-fold: servekit_gpu_tests.xz and commit). Any card: the change deletes a diagnostic path
# and no default code, so a pass on either card is the check; whether it merges is the H200 A/B
# of bench/runs/2026-12-07-s60-rows.sh.
# build-fold: `git apply bench/runs/s61-fold-tail.patch` on main (or `git am` it), build
# (`ninja -C build servekit_gpu_tests`), then `mkdir -p build-fold && xz -6 -T2 -c
# build/servekit_gpu_tests >build-fold/servekit_gpu_tests.xz && git rev-parse --short HEAD
# >build-fold/commit`. Not run in session 61 (no machine came; then new loans were paused).
# Device (after s59-suite on the same call, or alone):
#   BUDGET_S=150 bash bench/runs/2026-12-08-s61-fold.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-150}
B=${PREBUILT:-build-fold}
prebuilt_start s61-fold
gtest_run fold "$B" '*Static*:MoECuda*' $(($(left) - 5))
say "done"
