// The static path's task list built by one CTA of 1024 threads from the plan's group offsets:
// static_tasks.h's arithmetic per group in parallel, a CTA-wide scan, the order (by group, then by
// row) of static_plan_tasks_serial. Run by the static planner (static_planner.cuh) or, for small
// batches, at the end of the one-CTA route + plan kernel (one_cta_plan.cuh), which saves the
// planner's launch where the format needs nothing else from it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/kernels/static/static_tasks.h"

namespace servekit::cuda::static_moe {

constexpr int kStaticTaskBuildThreads = 1024;
// Static shared memory static_build_tasks adds to its kernel.
constexpr size_t kStaticTaskBuildSmemBytes = (kStaticTaskBuildThreads / 32 + 1) * sizeof(int);

// Every thread of a CTA of kStaticTaskBuildThreads calls it; group_offsets [G + 1] must be
// visible to the CTA (written by a previous kernel, or by this CTA before a __syncthreads).
__device__ __forceinline__ void static_build_tasks(const int32_t* group_offsets, int num_groups,
                                                   const StaticTaskBuild& b) {
  __shared__ int warp_sums[kStaticTaskBuildThreads / 32];
  __shared__ int carry;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (threadIdx.x == 0) carry = 0;
  __syncthreads();
  for (int g0 = 0; g0 < num_groups; g0 += kStaticTaskBuildThreads) {
    const int g = g0 + threadIdx.x;
    const int rows = g < num_groups ? group_offsets[g + 1] - group_offsets[g] : 0;
    const int n = static_tasks_of_group(rows);
    int incl = n;  // inclusive scan within the warp, then across warps
    for (int o = 1; o < 32; o <<= 1) {
      const int v = __shfl_up_sync(0xFFFFFFFFu, incl, o);
      if (lane >= o) incl += v;
    }
    if (lane == 31) warp_sums[warp] = incl;
    __syncthreads();
    int before = carry;
    for (int w = 0; w < warp; ++w) before += warp_sums[w];
    const int first = before + incl - n;
    for (int j = 0; j < n; ++j)
      if (first + j < b.capacity)
        b.tasks[first + j] = static_make_task(g, group_offsets[g], rows, j);
    __syncthreads();
    if (threadIdx.x == kStaticTaskBuildThreads - 1) carry = first + n;
    __syncthreads();
  }
  if (threadIdx.x == 0) *b.num_tasks = carry < b.capacity ? carry : b.capacity;
}

}  // namespace servekit::cuda::static_moe
