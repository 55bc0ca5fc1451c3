#!/usr/bin/env bash
# Session 30, call 1: the cold-code probe (bench/tools/icache_probe.cu, now with SM cycles next
# to the global timer) and a gcc 13 -Werror compile of the bench JSON writer's users (session 29's
# fix of the -Wstringop-overflow false positive, not yet compiled by gcc 13). ~2 min.
# Device (carry [] is enough): bash bench/runs/2026-12-03-s30-probe.sh
set -uo pipefail
source "$(dirname "$0")/prelude.sh"
BUDGET_S=${BUDGET_S:-200}
W=$OUT/s30-probe
mkdir -p "$W"
left() { echo $((BUDGET_S - ($(date +%s) - START))); }
say() { echo "[$(($(date +%s) - START)) s] $*" | tee -a "$W/s30-probe.txt"; }
say "g++: $(g++ --version | head -1)"
for f in tools/bench_moe.cpp tools/bench_cmd.cpp; do
  g++ -std=c++17 -O2 -Wall -Wextra -Wno-unused-parameter -Werror -Iinclude -Isrc -I. \
    -fsyntax-only "$f" >"$W/gcc-$(basename "$f").log" 2>&1 &&
    say "gcc -Werror $f: ok" || say "gcc -Werror $f: FAILED (log)"
  g++ -std=c++17 -O2 -Wall -Wextra -Wno-unused-parameter -Werror -Iinclude -Isrc -I. \
    -c -o /tmp/x.o "$f" >>"$W/gcc-$(basename "$f").log" 2>&1 &&
    say "gcc -O2 -c -Werror $f: ok" || say "gcc -O2 -c -Werror $f: FAILED (log)"
done
nvcc -O3 -arch=sm_90a -std=c++17 -o "$W/icache_probe" bench/tools/icache_probe.cu \
  >"$W/build.log" 2>&1 || { tail -20 "$W/build.log"; exit 1; }
say "built"
timeout $(($(left) - 5)) "$W/icache_probe" | tee -a "$W/s30-probe.txt"
rm -f "$W/icache_probe"
say "done"
