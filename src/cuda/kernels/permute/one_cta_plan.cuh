// Routing and plan of a small batch in ONE CTA and one launch (moe_plan.h's PlanKernels::
// kOneCta), replacing route_tokens + the three plan passes of plan_kernels.cuh when the
// batch is small enough that their fixed per-kernel latency dominates:
//   1. route: warp w routes tokens w, w + 32, ... (route_token, bit-identical to route_tokens)
//      and writes ids / weights; skipped when the ids are given (precomputed).
//   2. count: entries per local group, shared-memory atomics (order-independent).
//   3. scan: CTA-wide exclusive scan of the counts -> group_offsets, shared groups last.
//   4. scatter: tiles of 1024 entries in (token, slot) order; an entry's row is its group's
//      next row + the entries of its group in lower warps of the tile + its rank in its warp,
//      so rows of a group follow ascending (token, slot) exactly as scatter_plan_rows does.
// Programmatic dependent launch: griddepcontrol.wait precedes every global access (the logits
// come from the previous kernel, and the previous layer's kernels may still read the plan).
#pragma once

#include <cstdint>

#include "cuda/kernels/pdl.cuh"
#include "cuda/kernels/permute/plan_kernels.cuh"
#include "cuda/kernels/routing/route_kernel.cuh"
#include "cuda/kernels/static/static_input_prep.cuh"
#include "cuda/kernels/static/static_task_build.cuh"

namespace servekit::cuda::permute {

struct OneCtaShape {
  static constexpr int kThreads = PlanShape::kScanThreads;  // block_exclusive_scan's CTA
  static constexpr int kWarps = kThreads / 32;
};

// Routing of a small batch in two steps (route_token's split mode, biased methods only:
// routing::route_splits): first every warp of the CTA takes (token, row of 32 experts) pairs,
// then warp t finishes token t from the keys. Used up to kSplitMaxPairs pairs and one warp per
// token; the keys take tokens x 32 kPerLane x 4 bytes of shared memory (25 KB at most: 25
// tokens of E = 129..160, 5 rows on the 8-lane instantiation). Measured on the H200
// (docs/perf-notes.md, sixteenth pass): deepseek-v3 -4.4 / -2.9 us at 1 / 8 tokens, kimi-k2 -5.4 /
// -3.4 us.
constexpr int kSplitMaxPairs = 4 * OneCtaShape::kWarps;
template <RoutingMethod kMethod>
__host__ __device__ constexpr bool one_cta_route_split(int64_t tokens, int num_experts) {
  return routing::route_splits(kMethod) && tokens <= OneCtaShape::kWarps &&
         tokens * ((num_experts + 31) / 32) <= static_cast<int64_t>(kSplitMaxPairs);
}

// Dynamic shared memory of route_and_plan_one_cta: one routing warp's scratch per token up to
// one per warp, then in split mode the keys, [tokens][32 * kPerLane] uint32.
template <int kPerLane, RoutingMethod kMethod>
__host__ __device__ constexpr size_t one_cta_route_smem(int64_t tokens, int num_experts) {
  using WarpSmem = routing::RouteWarpSmem<kPerLane, kMethod>;
  const int64_t warps = tokens < OneCtaShape::kWarps ? tokens : OneCtaShape::kWarps;
  return static_cast<size_t>(warps) * sizeof(WarpSmem) +
         (one_cta_route_split<kMethod>(tokens, num_experts)
              ? static_cast<size_t>(tokens) * WarpSmem::kSlots * sizeof(uint32_t)
              : 0);
}

struct OneCtaPlanSmem {
  int next_row[PlanShape::kMaxLocalGroups];  // (E_local) counts, then the next row of g
  // (warp, E_local) entries of group g in warp w of the current tile (<= 32: fits a byte)
  alignas(16) uint8_t warp_count[OneCtaShape::kWarps][PlanShape::kMaxLocalGroups];
  int warp_sums[OneCtaShape::kWarps];
};

// Clears the counters; every thread of the CTA calls it before any other step.
__device__ __forceinline__ void one_cta_plan_init(OneCtaPlanSmem& s, const PlanParams& p) {
  static_assert(sizeof(s.warp_count) == 16 * OneCtaShape::kThreads, "one int4 per thread");
  for (int g = threadIdx.x; g < p.local_experts; g += OneCtaShape::kThreads) s.next_row[g] = 0;
  reinterpret_cast<int4*>(&s.warp_count[0][0])[threadIdx.x] = make_int4(0, 0, 0, 0);
}

// Steps 2-4 over p.ids, which this CTA may have just written (a __syncthreads must separate
// those writes from this call: it makes them visible to the whole CTA).
__device__ __forceinline__ void one_cta_plan_build(OneCtaPlanSmem& s, const PlanParams& p) {
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  for (int tile = 0; tile < p.entries; tile += OneCtaShape::kThreads) {
    const int i = tile + threadIdx.x;
    const int g = i < p.entries ? local_group(p.ids[i], p) : -1;
    const unsigned peers = __match_any_sync(0xffffffffu, g);
    if (g >= 0 && (peers & lanes_below(lane)) == 0) atomicAdd(&s.next_row[g], __popc(peers));
  }
  __syncthreads();

  const int g0 = threadIdx.x;
  int local_rows = 0;
  const int offset =
      block_exclusive_scan(g0 < p.local_experts ? s.next_row[g0] : 0, s.warp_sums, &local_rows);
  if (g0 < p.local_experts) {
    p.group_offsets[g0] = offset;
    s.next_row[g0] = offset;  // only this thread reads or writes next_row[g0] around the scan
  }
  for (int sh = threadIdx.x; sh <= p.num_shared; sh += OneCtaShape::kThreads)
    p.group_offsets[p.local_experts + sh] = local_rows + sh * p.tokens;
  __syncthreads();

  const int slots = p.top_k + p.num_shared;
  for (int tile = 0; tile < p.entries; tile += OneCtaShape::kThreads) {
    const int i = tile + threadIdx.x;
    const int g = i < p.entries ? local_group(p.ids[i], p) : -1;
    const unsigned peers = __match_any_sync(0xffffffffu, g);
    const int rank = __popc(peers & lanes_below(lane));
    if (g >= 0 && rank == 0) s.warp_count[warp][g] = static_cast<uint8_t>(__popc(peers));
    __syncthreads();
    if (i < p.entries) {
      const int t = i / p.top_k, k = i - t * p.top_k;
      int row = -1;
      if (g >= 0) {
        row = s.next_row[g] + rank;
        for (int w = 0; w < warp; ++w) row += s.warp_count[w][g];
        p.row_token[row] = t;
        p.row_group[row] = g;
      }
      p.token_slot_row[t * slots + k] = row;
    }
    __syncthreads();
    if (g >= 0 && rank == 0) {
      atomicAdd(&s.next_row[g], __popc(peers));  // integer sum: order-independent
      s.warp_count[warp][g] = 0;
    }
    // The clear above precedes this warp's counts of the next tile; the next tile's first
    // barrier orders the next_row updates before its reads.
    __syncwarp();
  }

  // Shared expert sh: row local_rows + sh * T + t for every token t.
  const int shared_rows = p.tokens * p.num_shared;
  for (int j = threadIdx.x; j < shared_rows; j += OneCtaShape::kThreads) {
    const int sh = j / p.tokens, t = j - sh * p.tokens;
    const int row = local_rows + j;
    p.row_token[row] = t;
    p.row_group[row] = p.local_experts + sh;
    p.token_slot_row[t * slots + p.top_k + sh] = row;
  }
}

// One token (T = 1): the plan (one_cta_plan_build) and the static task list (static_build_tasks)
// built by the routing warp alone from the ids it holds (lane j < K: slot j's id, route_token's
// return), with no CTA barrier and no read-back of what it wrote; returns the task count (every
// lane). The routing picks K distinct experts, so a routed group holds at most one row and its
// row is its rank among the local picks: a bit per local group (local <= 512: lane w holds
// groups 32 w .. 32 w + 31) and a scan of the words' counts give every offset. Outputs equal the
// general path's (RoutePlanCuda GPU tests: against the multi-CTA path and the serial task
// planner). The one-token prefix was ~3.8 us from routed to tasks done with the 1024-thread
// passes (docs/perf-notes.md, seventeenth pass).
__device__ __forceinline__ int one_token_plan_warp(const PlanParams& p,
                                                   const static_moe::StaticTaskBuild& b, int id,
                                                   uint64_t* stamps) {
  namespace sm = static_moe;
  constexpr unsigned kFull = 0xffffffffu;
  const int lane = threadIdx.x % 32;
  const int top_k = p.top_k, shared = p.num_shared, local = p.local_experts;
  const int g = lane < top_k ? local_group(id, p) : -1;
  uint32_t word = 0;
  for (int k = 0; k < top_k; ++k) {
    const int gk = __shfl_sync(kFull, g, k);
    if (gk >= 0 && (gk >> 5) == lane) word |= 1u << (gk & 31);
  }
  const int count = __popc(word);
  int incl = count;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const int v = __shfl_up_sync(kFull, incl, o);
    if (lane >= o) incl += v;
  }
  const int base = incl - count;               // routed rows in the words below this lane's
  const int n = __shfl_sync(kFull, incl, 31);  // routed rows held here
  for (int e0 = 0; e0 < local; e0 += 32) {
    const uint32_t w = __shfl_sync(kFull, word, e0 >> 5);
    const int wb = __shfl_sync(kFull, base, e0 >> 5);
    if (e0 + lane < local) p.group_offsets[e0 + lane] = wb + __popc(w & lanes_below(lane));
  }
  for (int sh = lane; sh <= shared; sh += 32) p.group_offsets[local + sh] = n + sh;
  const int src = g >= 0 ? g >> 5 : 0;
  const uint32_t gw = __shfl_sync(kFull, word, src);
  const int gb = __shfl_sync(kFull, base, src);
  if (lane < top_k) {
    int row = -1;
    if (g >= 0) {
      row = gb + __popc(gw & lanes_below(g & 31));
      p.row_token[row] = 0;
      p.row_group[row] = g;
      if (b.tasks != nullptr && row < b.capacity) b.tasks[row] = sm::static_make_task(g, row, 1, 0);
    }
    p.token_slot_row[lane] = row;
  }
  for (int sh = lane; sh < shared; sh += 32) {  // shared expert sh: row n + sh
    const int row = n + sh;
    p.row_token[row] = 0;
    p.row_group[row] = local + sh;
    p.token_slot_row[top_k + sh] = row;
    if (b.tasks != nullptr && row < b.capacity)
      b.tasks[row] = sm::static_make_task(local + sh, row, 1, 0);
  }
  __syncwarp();
  static_moe::static_prefix_stamp(stamps, 3);
  const int ntasks = min(n + shared, b.capacity);
  if (b.tasks != nullptr && lane == 0) *b.num_tasks = ntasks;
  return ntasks;
}

// Plan only, from given ids (precomputed routing).
__global__ void __launch_bounds__(OneCtaShape::kThreads) plan_one_cta(const PlanParams p) {
  __shared__ OneCtaPlanSmem s;
  pdl_wait();
  pdl_trigger();  // dependents griddepcontrol.wait for this whole grid anyway
  one_cta_plan_init(s, p);
  __syncthreads();
  one_cta_plan_build(s, p);
}

// Routing, then the plan of the ids it wrote, then (tasks.tasks set) the static path's task list
// of that plan, so the static path needs no planner launch. CTA 0 does all of that; CTAs
// 1 .. tasks.input.ctas prepare the MoE input for the static path's GEMM1 (StaticInputPrep:
// fp8 formats), which needs neither the routing nor the plan. Dynamic shared memory:
// one_cta_route_smem (r.ids == p.ids).
template <typename LogitT, int kPerLane, RoutingMethod kMethod>
__global__ void __launch_bounds__(OneCtaShape::kThreads)
    route_and_plan_one_cta(const routing::RouteParams r, const PlanParams p,
                           const static_moe::StaticTaskBuild tasks) {
  static_assert(OneCtaShape::kThreads == static_moe::kStaticTaskBuildThreads &&
                    OneCtaShape::kThreads == static_moe::kStaticInputPrepThreads,
                "one CTA shape builds the plan, the tasks and the input's preparation");
  using WarpSmem = routing::RouteWarpSmem<kPerLane, kMethod>;
  __shared__ OneCtaPlanSmem s;
  extern __shared__ int4 s_route[];                                        // (min(T, 32)) WarpSmem
  uint64_t* const stamps = blockIdx.x == 0 ? tasks.diag_prefix : nullptr;  // diagnostic only
  static_moe::static_prefix_stamp(stamps, 0);
  pdl_wait();
  if (!tasks.late_trigger) pdl_trigger();
  static_moe::static_prefix_stamp(stamps, 1);
  if (blockIdx.x > 0) {  // x comes from the previous kernel: after the wait above
    if (static_cast<int>(blockIdx.x) <= tasks.input.ctas)
      static_moe::static_prepare_input(tasks.input, static_cast<int>(blockIdx.x) - 1);
    return;
  }
  // One token: the routing warp builds the plan and the tasks alone (one_token_plan_warp).
  const bool one_token = r.tokens == 1 && tasks.one_token_warp;
  if (!one_token) one_cta_plan_init(s, p);
  const int warp = threadIdx.x / 32;
  WarpSmem* warp_smem = reinterpret_cast<WarpSmem*>(s_route);
  bool routed = false;
  int id = 0;  // one token: on warp 0, lane j < K holds slot j's id
  if constexpr (routing::route_splits(kMethod)) {
    if (one_cta_route_split<kMethod>(r.tokens, r.num_experts)) {
      // keys follow the routing warps' scratch (16-byte multiples): one_cta_route_smem.
      uint32_t* keys = reinterpret_cast<uint32_t*>(warp_smem + r.tokens);
      const int rows = (r.num_experts + 31) / 32;
      for (int i = warp; i < r.tokens * rows; i += OneCtaShape::kWarps) {
        const int t = i / rows;
        routing::route_expert_row<LogitT, kPerLane, kMethod>(r, t, i - t * rows, warp_smem[t],
                                                             keys + t * WarpSmem::kSlots);
      }
      __syncthreads();
      if (warp < r.tokens)
        id = routing::route_token<LogitT, kPerLane, kMethod, true>(r, warp, warp_smem[warp],
                                                                   keys + warp * WarpSmem::kSlots);
      routed = true;
    }
  }
  if (!routed)
    for (int64_t t = warp; t < r.tokens; t += OneCtaShape::kWarps)
      id = routing::route_token<LogitT, kPerLane, kMethod>(r, t, warp_smem[warp]);
  if (one_token) {
    // Warp 0 builds the plan and the tasks; the other warps wait (named barrier 1, which warp 0
    // only arrives at) and let the next kernel launch when warp 0 does, as the CTA path's threads
    // all do after its routing barrier; then every thread writes the partition tables' entries
    // as static_build_tasks does (every task has one row: the uniform or whole-unit partition).
    // Measured: with warp 0 also writing the tables and the other warps exiting at once, the
    // softmax presets' one-token rows were ~1.3 us slower (docs/perf-notes.md, thirty-first pass).
    __shared__ int one_token_tasks;
    if (warp == 0) {
      asm volatile("bar.arrive 1, %0;" ::"n"(OneCtaShape::kThreads) : "memory");
      if (tasks.late_trigger) pdl_trigger();
      static_moe::static_prefix_stamp(stamps, 2);
      const int ntasks = one_token_plan_warp(p, tasks, id, stamps);
      if (threadIdx.x == 0) one_token_tasks = ntasks;
    } else {
      asm volatile("bar.sync 1, %0;" ::"n"(OneCtaShape::kThreads) : "memory");
      if (tasks.late_trigger) pdl_trigger();
    }
    __syncthreads();  // one_token_tasks
    const static_moe::StaticPartitionBuild& pb = tasks.partition;
    if (tasks.tasks != nullptr && pb.begins != nullptr)  // every task has one row: uniform
      static_moe::static_write_partition_tables(pb, one_token_tasks, true, p.group_offsets,
                                                p.group_offsets, p.local_experts + p.num_shared);
    if (stamps != nullptr) {
      __syncthreads();  // every thread's entries
      static_moe::static_prefix_stamp(stamps, 4);
    }
    return;
  }
  __syncthreads();
  if (tasks.late_trigger) pdl_trigger();  // the next kernel launches from here on (default)
  static_moe::static_prefix_stamp(stamps, 2);
  one_cta_plan_build(s, p);
  if (tasks.tasks != nullptr) {
    __syncthreads();  // group_offsets, written above by this CTA
    static_moe::static_prefix_stamp(stamps, 3);
    static_moe::static_build_tasks(p.group_offsets, p.local_experts + p.num_shared, tasks);
    if (stamps != nullptr) {
      __syncthreads();  // every thread's part of the list (uniform: a kernel parameter)
      static_moe::static_prefix_stamp(stamps, 4);
    }
  }
}

}  // namespace servekit::cuda::permute
