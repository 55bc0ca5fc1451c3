#!/usr/bin/env python3
"""Applies the session-15 'lean route + plan' edits (docs/perf-notes.md, fifteenth pass) to a
copy of the source tree, for an A/B against main (bench/runs/next-lean-route.sh):

1. route_kernel.cuh: the biased methods (DeepSeek-V3, MiniMax) do not compute
   key[j] = order_key(s[j]) in the load loop (the key of q' = p + b replaces it before any use);
   the biased loop sets key[j] = kNoCandidate first. ptxas: kimi-k2's 16-lane route + plan
   kernel 162 / 372 -> 94 / 304 bytes of spill stores / loads.
2. static_tasks.h: static_partition_entry selects ngroups / kblocks with `which == 0 ? .. : ..`
   instead of indexing the parameter arrays at run time, which made nvcc copy the kernel
   parameters to local memory (route + plan stack frame 120 -> 0 bytes).

Usage: python3 bench/runs/lean_route_patch.py TREE   (exits 1 if an anchor is not found)
"""
import sys

EDITS = [
    ("src/cuda/kernels/routing/route_kernel.cuh",
     "    key[j] = e < num_experts ? order_key(s[j]) : kNoCandidate;\n",
     "    if constexpr (!kBiased) key[j] = e < num_experts ? order_key(s[j]) : kNoCandidate;\n"),
    ("src/cuda/kernels/routing/route_kernel.cuh",
     "      const int e = lane + 32 * j;\n      if (e >= num_experts) continue;\n"
     "      const float sig = exact::sigmoid(s[j]);\n",
     "      const int e = lane + 32 * j;\n      key[j] = kNoCandidate;\n"
     "      if (e >= num_experts) continue;\n      const float sig = exact::sigmoid(s[j]);\n"),
    ("src/cuda/kernels/static/static_tasks.h",
     "  const int64_t units = ntasks * pb.ngroups[which];\n"
     "  if (uniform && pb.align && static_aligned_fits(units, pb.grid))\n"
     "    return b * units / pb.grid * pb.kblocks[which];\n"
     "  if (uniform) return static_cta_begin(b, units * pb.kblocks[which], pb.grid);\n"
     "  return static_weighted_begin(b, pb.grid, pb.kblocks[which], pb.ngroups[which], group_cost,",
     "  const int ngroups = which == 0 ? pb.ngroups[0] : pb.ngroups[1];\n"
     "  const int kblocks = which == 0 ? pb.kblocks[0] : pb.kblocks[1];\n"
     "  const int64_t units = ntasks * ngroups;\n"
     "  if (uniform && pb.align && static_aligned_fits(units, pb.grid))\n"
     "    return b * units / pb.grid * kblocks;\n"
     "  if (uniform) return static_cta_begin(b, units * kblocks, pb.grid);\n"
     "  return static_weighted_begin(b, pb.grid, kblocks, ngroups, group_cost,"),
]


def main(tree):
    for path, old, new in EDITS:
        full = f"{tree}/{path}"
        text = open(full).read()
        if text.count(old) != 1:
            sys.exit(f"lean_route_patch: anchor not found once in {path}: {old.splitlines()[0]!r}")
        open(full, "w").write(text.replace(old, new))
        print(f"lean_route_patch: {path} edited")


if __name__ == "__main__":
    main(sys.argv[1])
