// The static path's task list built by one CTA of 1024 threads from the plan's group offsets:
// static_tasks.h's arithmetic per group in parallel, a CTA-wide scan, the order (by group, then by
// row) of static_plan_tasks_serial. Run by the static planner (static_planner.cuh) or, for small
// batches, at the end of the one-CTA route + plan kernel (one_cta_plan.cuh), which saves the
// planner's launch where the format needs nothing else from it. With b.partition.begins set it
// also writes the GEMMs' CTA partition tables (static_tasks.h: the weighted partition), from the
// group costs it keeps in shared memory.
#pragma once

#include <cstddef>
#include <cstdint>

#include "cuda/kernels/static/static_tasks.h"

namespace servekit::cuda::static_moe {

constexpr int kStaticTaskBuildThreads = 1024;
// Static shared memory static_build_tasks adds to its kernel.
constexpr size_t kStaticTaskBuildSmemBytes =
    (kStaticTaskBuildThreads / 32 + 3 + kStaticMaxPartitionGroups + 1) * sizeof(int);
static_assert(kStaticMaxPartitionGroups < kStaticTaskBuildThreads,
              "one thread per group writes the group costs");

// Writes both GEMMs' partition tables (static_partition_entry for CTAs 0..grid) for a plan of
// ntasks tasks, one entry per thread of the calling CTA of kStaticTaskBuildThreads.
template <typename Costs, typename Offsets>
__device__ __forceinline__ void static_write_partition_tables(const StaticPartitionBuild& pb,
                                                              int ntasks, bool uniform,
                                                              const Costs& group_cost,
                                                              const Offsets& group_offsets,
                                                              int num_groups) {
  for (int i = threadIdx.x; i < 2 * (pb.grid + 1); i += kStaticTaskBuildThreads) {
    const int which = i / (pb.grid + 1), cta = i - which * (pb.grid + 1);
    pb.begins[which * kStaticPartitionStride + cta] = static_cast<int32_t>(static_partition_entry(
        cta, which, pb, ntasks, uniform, group_cost, group_offsets, num_groups));
  }
}

// Every thread of a CTA of kStaticTaskBuildThreads calls it; group_offsets [G + 1] must be
// visible to the CTA (written by a previous kernel, or by this CTA before a __syncthreads).
__device__ __forceinline__ void static_build_tasks(const int32_t* group_offsets, int num_groups,
                                                   const StaticTaskBuild& b) {
  __shared__ int warp_sums[kStaticTaskBuildThreads / 32];
  __shared__ int carry, min_rows, max_rows;
  __shared__ int32_t group_cost[kStaticMaxPartitionGroups + 1];  // static_group_cost per group
  const StaticPartitionBuild& pb = b.partition;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (threadIdx.x == 0) carry = 0, min_rows = kStaticTaskRows, max_rows = 0;
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
    if (pb.begins != nullptr && g <= num_groups && g <= kStaticMaxPartitionGroups) {
      group_cost[g] = static_cast<int32_t>(
          static_group_cost(first, group_offsets[g] - group_offsets[0], pb.row_cost));
      if (n > 0) {
        atomicMin(&min_rows, rows - (n - 1) * kStaticTaskRows);
        atomicMax(&max_rows, n > 1 ? kStaticTaskRows : rows);
      }
    }
    __syncthreads();
    if (threadIdx.x == kStaticTaskBuildThreads - 1) carry = first + n;
    __syncthreads();
  }
  if (threadIdx.x == 0) *b.num_tasks = carry < b.capacity ? carry : b.capacity;
  if (pb.begins != nullptr) {  // carry, min_rows, max_rows and group_cost: final since the barrier
    const bool overflow = carry > b.capacity;
    const int ntasks = overflow ? b.capacity : carry;
    const bool uniform = overflow || min_rows >= max_rows;
    static_write_partition_tables(pb, ntasks, uniform, group_cost, group_offsets, num_groups);
  }
}

}  // namespace servekit::cuda::static_moe
