// Device kernels of the permutation plan (moe_plan.h): three passes over the flattened routing
// entries i = t * K + k of ids [T, K], which are already in (token, slot) order.
//   1. count_local_groups: each block counts the entries of its contiguous range per local
//      group (integer shared-memory atomics: the counts do not depend on their order).
//   2. scan_group_counts (one block): per group, exclusive prefix of the block counts; then the
//      exclusive prefix of the group totals gives group_offsets, shared groups last.
//   3. scatter_plan_rows: each block gives every entry its row = group offset + block prefix +
//      rank of the entry among the earlier entries of the same group in the block (warp
//      match + per-warp counts), so rows of a group follow ascending (token, slot).
// Entries whose id is negative or outside the local range get row -1.
#pragma once

#include <cstdint>

namespace servekit::cuda::permute {

// Launch shape of the plan build. Tuning data, shared by the launcher and the kernels.
struct PlanShape {
  // One entry per thread per tile: large enough to amortise the block-level syncs, small
  // enough that 8 warps' match results fit the per-warp count table below.
  static constexpr int kThreads = 256;
  static constexpr int kWarps = kThreads / 32;
  // At most this many blocks in passes 1 and 3, so the single-block scan holds one int4 of
  // counts per lane (4 * 32 = 128) and reads at most 128 * 4 bytes per group.
  static constexpr int kMaxBlocks = 128;
  // Local routed groups the shared-memory tables hold (E_local <= kMaxExpertsGpu).
  static constexpr int kMaxLocalGroups = 512;
  static constexpr int kScanThreads = 1024;
};

struct PlanParams {
  const int32_t* ids;       // [T, K] global expert ids
  int tokens;               // T
  int top_k;                // K
  int entries;              // T * K
  int expert_offset;        // first local global id
  int local_experts;        // E_local <= PlanShape::kMaxLocalGroups
  int num_shared;           // S
  int entries_per_block;    // multiple of PlanShape::kThreads
  int num_blocks;           // blocks of passes 1 and 3, <= PlanShape::kMaxBlocks
  int count_stride;         // num_blocks rounded up to 4 (int4 rows)
  int32_t* block_counts;    // scratch [E_local, count_stride]: entries of group g in block b
  int32_t* block_prefix;    // scratch [E_local, count_stride]: entries of g in blocks before b
  int32_t* group_offsets;   // [G + 1]
  int32_t* row_token;       // [rows]
  int32_t* row_group;       // [rows]
  int32_t* token_slot_row;  // [T, K + S]
};

// Local group of a global id, or -1 when the id is negative or not held here.
__device__ __forceinline__ int local_group(int id, const PlanParams& p) {
  const int g = id - p.expert_offset;
  return (id >= 0 && g >= 0 && g < p.local_experts) ? g : -1;
}

__device__ __forceinline__ unsigned lanes_below(int lane) {
  return (1u << lane) - 1u;
}

__global__ void __launch_bounds__(PlanShape::kThreads) count_local_groups(const PlanParams p) {
  __shared__ int s_count[PlanShape::kMaxLocalGroups];  // (E_local)
  for (int g = threadIdx.x; g < p.local_experts; g += PlanShape::kThreads) s_count[g] = 0;
  __syncthreads();

  const int lane = threadIdx.x % 32;
  const int begin = blockIdx.x * p.entries_per_block;
  const int end = min(p.entries, begin + p.entries_per_block);
  for (int tile = begin; tile < end; tile += PlanShape::kThreads) {
    const int i = tile + threadIdx.x;
    const int g = i < end ? local_group(p.ids[i], p) : -1;
    // One atomic per distinct group per warp: all-to-one-expert skew stays cheap.
    const unsigned peers = __match_any_sync(0xffffffffu, g);
    if (g >= 0 && (peers & lanes_below(lane)) == 0) atomicAdd(&s_count[g], __popc(peers));
  }
  __syncthreads();
  for (int g = threadIdx.x; g < p.local_experts; g += PlanShape::kThreads)
    p.block_counts[g * p.count_stride + blockIdx.x] = s_count[g];
}

// Exclusive scan of one value per thread over the whole block (blockDim.x == kScanThreads).
__device__ __forceinline__ int block_exclusive_scan(int v, int* s_warp_sums, int* total) {
  constexpr int kWarps = PlanShape::kScanThreads / 32;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int incl = v;
  for (int d = 1; d < 32; d *= 2) {
    const int up = __shfl_up_sync(0xffffffffu, incl, d);
    if (lane >= d) incl += up;
  }
  if (lane == 31) s_warp_sums[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    int w = lane < kWarps ? s_warp_sums[lane] : 0;
    for (int d = 1; d < 32; d *= 2) {
      const int up = __shfl_up_sync(0xffffffffu, w, d);
      if (lane >= d) w += up;
    }
    if (lane < kWarps) s_warp_sums[lane] = w;  // inclusive
  }
  __syncthreads();
  *total = s_warp_sums[kWarps - 1];
  return incl - v + (warp > 0 ? s_warp_sums[warp - 1] : 0);
}

__global__ void __launch_bounds__(PlanShape::kScanThreads) scan_group_counts(const PlanParams p) {
  static_assert(PlanShape::kMaxBlocks == 4 * 32, "one int4 of block counts per lane");
  static_assert(PlanShape::kMaxLocalGroups <= PlanShape::kScanThreads, "one group per thread");
  __shared__ int s_total[PlanShape::kMaxLocalGroups];  // (E_local)
  __shared__ int s_warp_sums[PlanShape::kScanThreads / 32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

  // One warp per group: lane l holds blocks 4l..4l+3, so the scan is in ascending block order.
  // A warp loads the counts of kGroupsPerPass groups before scanning any, so their L2 round
  // trips overlap.
  constexpr int kScanWarps = PlanShape::kScanThreads / 32, kGroupsPerPass = 4;
  const int b0 = 4 * lane;
  for (int g0 = warp; g0 < p.local_experts; g0 += kScanWarps * kGroupsPerPass) {
    int4 c[kGroupsPerPass];
#pragma unroll
    for (int r = 0; r < kGroupsPerPass; ++r) {
      const int g = g0 + kScanWarps * r;
      c[r] = make_int4(0, 0, 0, 0);
      if (g < p.local_experts && b0 < p.count_stride)
        c[r] = *reinterpret_cast<const int4*>(p.block_counts + g * p.count_stride + b0);
    }
#pragma unroll
    for (int r = 0; r < kGroupsPerPass; ++r) {
      const int g = g0 + kScanWarps * r;
      if (g >= p.local_experts) break;  // warp-uniform
      // Columns past num_blocks are padding that pass 1 never wrote.
      if (b0 + 0 >= p.num_blocks) c[r].x = 0;
      if (b0 + 1 >= p.num_blocks) c[r].y = 0;
      if (b0 + 2 >= p.num_blocks) c[r].z = 0;
      if (b0 + 3 >= p.num_blocks) c[r].w = 0;
      const int sum = c[r].x + c[r].y + c[r].z + c[r].w;
      int incl = sum;
      for (int d = 1; d < 32; d *= 2) {
        const int up = __shfl_up_sync(0xffffffffu, incl, d);
        if (lane >= d) incl += up;
      }
      const int excl = incl - sum;
      if (b0 < p.count_stride) {
        const int4 out =
            make_int4(excl, excl + c[r].x, excl + c[r].x + c[r].y, excl + c[r].x + c[r].y + c[r].z);
        *reinterpret_cast<int4*>(p.block_prefix + g * p.count_stride + b0) = out;
      }
      if (lane == 31) s_total[g] = incl;
    }
  }
  __syncthreads();

  const int g = threadIdx.x;
  int local_rows = 0;
  const int offset =
      block_exclusive_scan(g < p.local_experts ? s_total[g] : 0, s_warp_sums, &local_rows);
  if (g < p.local_experts) p.group_offsets[g] = offset;
  // Shared groups take every token, in token order, after the routed rows.
  for (int s = threadIdx.x; s <= p.num_shared; s += PlanShape::kScanThreads)
    p.group_offsets[p.local_experts + s] = local_rows + s * p.tokens;
}

__global__ void __launch_bounds__(PlanShape::kThreads) scatter_plan_rows(const PlanParams p) {
  __shared__ int s_next_row[PlanShape::kMaxLocalGroups];  // (E_local) next row of g here
  __shared__ int s_warp_count[PlanShape::kWarps][PlanShape::kMaxLocalGroups];  // (W, E_local)
  for (int g = threadIdx.x; g < p.local_experts; g += PlanShape::kThreads) {
    s_next_row[g] = p.group_offsets[g] + p.block_prefix[g * p.count_stride + blockIdx.x];
    for (int w = 0; w < PlanShape::kWarps; ++w) s_warp_count[w][g] = 0;
  }
  __syncthreads();

  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int slots = p.top_k + p.num_shared;
  const int begin = blockIdx.x * p.entries_per_block;
  const int end = min(p.entries, begin + p.entries_per_block);
  for (int tile = begin; tile < end; tile += PlanShape::kThreads) {
    const int i = tile + threadIdx.x;
    const int g = i < end ? local_group(p.ids[i], p) : -1;
    const unsigned peers = __match_any_sync(0xffffffffu, g);
    const int rank = __popc(peers & lanes_below(lane));
    if (g >= 0 && rank == 0) s_warp_count[warp][g] = __popc(peers);
    __syncthreads();
    if (i < end) {
      const int t = i / p.top_k, k = i - t * p.top_k;
      int row = -1;
      if (g >= 0) {
        row = s_next_row[g] + rank;
        for (int w = 0; w < warp; ++w) row += s_warp_count[w][g];
        p.row_token[row] = t;
        p.row_group[row] = g;
      }
      p.token_slot_row[t * slots + k] = row;
    }
    __syncthreads();
    if (g >= 0 && rank == 0) {
      atomicAdd(&s_next_row[g], __popc(peers));  // integer sum: order-independent
      s_warp_count[warp][g] = 0;
    }
    __syncwarp();  // the clear above precedes this warp's writes of the next tile
  }

  // Shared expert s: row group_offsets[E_local + s] + t for every token t.
  const int shared_rows = p.tokens * p.num_shared;
  for (int j = blockIdx.x * PlanShape::kThreads + threadIdx.x; j < shared_rows;
       j += gridDim.x * PlanShape::kThreads) {
    const int s = j / p.tokens, t = j - s * p.tokens;
    const int group = p.local_experts + s;
    const int row = p.group_offsets[group] + t;
    p.row_token[row] = t;
    p.row_group[row] = group;
    p.token_slot_row[t * slots + p.top_k + s] = row;
  }
}

}  // namespace servekit::cuda::permute
