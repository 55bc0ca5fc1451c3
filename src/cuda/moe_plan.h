// Device-side plan of one MoE forward on the CUDA backend: which permuted row holds which
// (token, slot), grouped by expert. Built on the device from the routing ids with no host
// synchronisation; every buffer is sized once for the layer's capacity. Internal header.
//
// Groups: g = 0..E_local-1 are the local routed experts (global id = local_expert_offset + g),
// g = E_local..E_local+S-1 the shared experts (every token, weight 1). Rows of a group are
// contiguous in the permuted buffers and ordered by ascending token, so the plan (and every
// result computed from it) is deterministic.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "cuda/kernels/static/static_tasks.h"
#include "servekit/routing.h"
#include "servekit/tensor.h"

namespace servekit::cuda {

// Capacity of the permuted buffers: every (token, slot) local.
inline int64_t plan_capacity_rows(int64_t max_tokens, int top_k, int num_shared) {
  return max_tokens * (top_k + num_shared);
}

// All device pointers. group_offsets [G + 1]: rows of group g are [off[g], off[g+1]), and
// off[G] is the total.
struct PlanBuffers {
  int num_groups = 0;                 // G = E_local + S
  int32_t* group_offsets = nullptr;   // [G + 1]
  int32_t* row_token = nullptr;       // [capacity] source token of each permuted row
  int32_t* row_group = nullptr;       // [capacity] group of each permuted row
  int32_t* token_slot_row = nullptr;  // [max_tokens, K + S] permuted row of (token, slot) or -1
  void* scratch = nullptr;            // plan-building scratch, plan_scratch_bytes()
};

// Which kernels build the plan. kAuto picks by size on the host: small batches run one CTA
// in one launch (routing fused in, for launch_route_and_plan), larger ones the multi-CTA
// kernels. The two give identical plans (and ids and weights); forcing one is for tests and
// benchmarks.
enum class PlanKernels { kAuto, kOneCta, kMultiCta };

// Scratch bytes launch_build_plan needs for this capacity.
size_t plan_scratch_bytes(int64_t max_tokens, int top_k, int num_groups);

// Routing on the device: logits [T, E] (f32 or bf16), bias [E] f32 or nullptr -> ids [T, K]
// int32 (global), weights [T, K] f32; identical ids to route_cpu on the same fp32 logits.
// One launch. Requires E <= kMaxExpertsGpu and K <= kMaxTopK (checked by the caller).
void launch_route(const RoutingConfig& cfg, const void* logits, DType logits_dtype,
                  const float* bias, int64_t tokens, int32_t* ids, float* weights,
                  cudaStream_t stream);

// Builds the plan from ids [T, K] (global ids; ids outside [expert_offset, expert_offset +
// local_experts) or < 0 are not local and get row -1). The one-CTA kernel is launched with
// programmatic dependent launch (it waits for its predecessor before any global access).
void launch_build_plan(const int32_t* ids, int64_t tokens, int top_k, int expert_offset,
                       int local_experts, int num_shared, const PlanBuffers& plan,
                       cudaStream_t stream, PlanKernels kernels = PlanKernels::kAuto);

// launch_route then launch_build_plan on its ids, with the same arguments and errors as those
// two; for small batches (kAuto) routing and plan run in one single-CTA launch. ids [T, K] and
// weights [T, K] are written as launch_route writes them. static_tasks (or null): where the
// static path's task list of this plan goes; the single-CTA launch then builds it too, with
// static_tasks->input.ctas more CTAs preparing the static path's input (StaticInputPrep), and
// the function returns true (false: it did neither, the static planner must).
bool launch_route_and_plan(const RoutingConfig& cfg, const void* logits, DType logits_dtype,
                           const float* bias, int64_t tokens, int32_t* ids, float* weights,
                           int expert_offset, int local_experts, int num_shared,
                           const PlanBuffers& plan, cudaStream_t stream,
                           PlanKernels kernels = PlanKernels::kAuto,
                           const static_moe::StaticTaskBuild* static_tasks = nullptr);

// out[t] = sum_k w[t,k] * (y[row(t,k)] + b2[g]) + sum_s (y[row(t,K+s)] + b2[E_local+s]), in
// that order, in fp32, rounded once to bf16. y: [capacity, H] bf16 permuted GEMM2 output;
// w2_bias: [G, H] f32 or nullptr. pdl: launch with programmatic dependent launch (the kernel
// waits for the previous kernel before reading anything).
void launch_combine(const void* y, const PlanBuffers& plan, const float* topk_weights,
                    int64_t tokens, int top_k, int num_shared, int64_t hidden, const float* w2_bias,
                    void* out, cudaStream_t stream, bool pdl = false);

}  // namespace servekit::cuda
