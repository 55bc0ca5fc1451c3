#!/usr/bin/env bash
# Session 48, second call, on the machine of 2026-12-16-s48-first.sh (its build in build/; a fresh
# machine builds first, ~130 s): the whole GPU suite at the commit (activation_math.cuh's
# one_plus_exp is shared by the activation pass, the static path, the peer and the fused
# epilogues, and sm90_act_epilogue.cuh's stores changed).
# Prediction: 160/160.
# Not run in session 48 (no machine started).
# Device (carry [".deps"], ~5 min warm): SERVEKIT_COMMIT=<sha> BUDGET_S=330 bash bench/runs/2026-12-16-s48-suite.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-330}
B=build
work_dir suite
say "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)"
build_tests "$W/build.log"
gpu_suite $(($(left) - 10))
say done
