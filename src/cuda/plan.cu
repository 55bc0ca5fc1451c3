// Host launchers of the permutation plan (moe_plan.h), with or without the routing fused in:
// one single-CTA launch for small batches (one_cta_plan.cuh), else three multi-CTA launches
// (plan_kernels.cuh); no host synchronisation, no allocation (the caller gives the scratch).
//
// An id is local when expert_offset <= id < expert_offset + local_experts; every other id
// (negative, another rank's expert, or >= num_experts, which the layer's config keeps outside
// the local range) gets row -1 and contributes nothing. Rows past group_offsets[G] are left
// untouched.
#include <algorithm>
#include <climits>
#include <cstdint>

#include "core/env.h"
#include "cuda/kernels/permute/one_cta_plan.cuh"
#include "cuda/kernels/permute/plan_kernels.cuh"
#include "cuda/kernels/routing/route_dispatch.cuh"
#include "cuda/launch_pdl.h"
#include "cuda/moe_plan.h"
#include "cuda/runtime.h"
#include "servekit/error.h"

namespace servekit::cuda {
namespace {

using permute::OneCtaShape;
using permute::PlanShape;

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

// Blocks of passes 1 and 3 before rounding the block range: the scratch is sized with this,
// which never decreases with the entry count and bounds the launched block count from above.
int64_t plan_blocks_bound(int64_t entries) {
  return std::clamp<int64_t>(ceil_div(entries, PlanShape::kThreads), 1, PlanShape::kMaxBlocks);
}

int64_t count_stride(int64_t blocks) {
  return ceil_div(blocks, 4) * 4;
}

}  // namespace

size_t plan_scratch_bytes(int64_t max_tokens, int top_k, int num_groups) {
  SERVEKIT_CHECK(max_tokens >= 0, "plan: max_tokens=", max_tokens, " must be >= 0");
  SERVEKIT_CHECK(top_k >= 1 && top_k <= kMaxTopK, "plan: top_k=", top_k, " must be in [1, ",
                 kMaxTopK, "]");
  SERVEKIT_CHECK(num_groups >= 1, "plan: num_groups=", num_groups, " must be >= 1");
  // block_counts and block_prefix, [num_groups, stride] int32 each (num_groups >= E_local).
  const int64_t stride = count_stride(plan_blocks_bound(max_tokens * top_k));
  return static_cast<size_t>(2 * num_groups * stride) * sizeof(int32_t);
}

namespace {

// The kernel parameters shared by both plan paths, after checking the arguments.
permute::PlanParams checked_plan_params(const int32_t* ids, int64_t tokens, int top_k,
                                        int expert_offset, int local_experts, int num_shared,
                                        const PlanBuffers& plan) {
  SERVEKIT_CHECK(tokens >= 0, "plan: tokens=", tokens, " must be >= 0");
  SERVEKIT_CHECK(top_k >= 1 && top_k <= kMaxTopK, "plan: top_k=", top_k, " must be in [1, ",
                 kMaxTopK, "]");
  SERVEKIT_CHECK(expert_offset >= 0, "plan: expert_offset=", expert_offset, " must be >= 0");
  SERVEKIT_CHECK(local_experts >= 0 && local_experts <= PlanShape::kMaxLocalGroups,
                 "plan: local_experts=", local_experts, " must be in [0, ",
                 PlanShape::kMaxLocalGroups, "]");
  SERVEKIT_CHECK(num_shared >= 0, "plan: num_shared=", num_shared, " must be >= 0");
  SERVEKIT_CHECK(plan.num_groups == local_experts + num_shared,
                 "plan: num_groups=", plan.num_groups,
                 " must equal local_experts + num_shared = ", local_experts + num_shared);
  SERVEKIT_CHECK(tokens * (top_k + num_shared) <= INT_MAX,
                 "plan: tokens * (top_k + num_shared) = ", tokens * (top_k + num_shared),
                 " exceeds the int32 row index range");
  SERVEKIT_CHECK(tokens == 0 || ids != nullptr, "plan: ids is null for tokens=", tokens);
  SERVEKIT_CHECK(plan.group_offsets && plan.row_token && plan.row_group && plan.token_slot_row,
                 "plan: a plan buffer is null");
  SERVEKIT_CHECK(
      plan.scratch != nullptr && reinterpret_cast<uintptr_t>(plan.scratch) % alignof(int4) == 0,
      "plan: scratch must be a non-null 16-byte aligned buffer of plan_scratch_bytes");
  permute::PlanParams p{};
  p.ids = ids;
  p.tokens = static_cast<int>(tokens);
  p.top_k = top_k;
  p.entries = static_cast<int>(tokens * top_k);
  p.expert_offset = expert_offset;
  p.local_experts = local_experts;
  p.num_shared = num_shared;
  p.group_offsets = plan.group_offsets;
  p.row_token = plan.row_token;
  p.row_group = plan.row_group;
  p.token_slot_row = plan.token_slot_row;
  return p;
}

// Whether kAuto builds the plan in one CTA: up to kOneCtaMaxRows rows (T (K + S)), two tiles,
// whose loads of the ids wait on each other; a guess to be tuned on the device, set where the
// one CTA's serial tiles should stay below the three multi-CTA passes' ~10 us.
constexpr int64_t kOneCtaMaxRows = 2048;
// Routing fused in: a warp routes one token as a serial chain of warp reductions, so the fused
// kernel is only faster while every token has its own warp.
constexpr int64_t kOneCtaMaxRoutedTokens = OneCtaShape::kWarps;

bool one_cta_plan(PlanKernels kernels, int64_t tokens, int top_k, int num_shared) {
  if (kernels != PlanKernels::kAuto) return kernels == PlanKernels::kOneCta;
  return tokens * (top_k + num_shared) <= kOneCtaMaxRows;
}

// Launches a kernel of one CTA with programmatic dependent launch allowed.
template <typename... Args>
void launch_one_cta(void (*kernel)(Args...), size_t smem_bytes, cudaStream_t stream,
                    const Args&... args) {
  launch_pdl(kernel, 1, OneCtaShape::kThreads, smem_bytes, true, stream, args...);
}

void launch_multi_cta(permute::PlanParams p, void* scratch, cudaStream_t stream) {
  const int64_t entries = p.entries;
  const int64_t bound = plan_blocks_bound(entries);
  const int64_t per_block =
      std::max<int64_t>(1, ceil_div(ceil_div(entries, bound), PlanShape::kThreads)) *
      PlanShape::kThreads;
  const int64_t blocks = std::max<int64_t>(1, ceil_div(entries, per_block));
  const int64_t stride = count_stride(blocks);
  p.entries_per_block = static_cast<int>(per_block);
  p.num_blocks = static_cast<int>(blocks);
  p.count_stride = static_cast<int>(stride);
  p.block_counts = static_cast<int32_t*>(scratch);
  p.block_prefix = p.block_counts + p.local_experts * stride;

  permute::count_local_groups<<<p.num_blocks, PlanShape::kThreads, 0, stream>>>(p);
  SERVEKIT_CUDA_CHECK(cudaGetLastError());
  permute::scan_group_counts<<<1, PlanShape::kScanThreads, 0, stream>>>(p);
  SERVEKIT_CUDA_CHECK(cudaGetLastError());
  permute::scatter_plan_rows<<<p.num_blocks, PlanShape::kThreads, 0, stream>>>(p);
  SERVEKIT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void launch_build_plan(const int32_t* ids, int64_t tokens, int top_k, int expert_offset,
                       int local_experts, int num_shared, const PlanBuffers& plan,
                       cudaStream_t stream, PlanKernels kernels) {
  const permute::PlanParams p =
      checked_plan_params(ids, tokens, top_k, expert_offset, local_experts, num_shared, plan);
  if (one_cta_plan(kernels, tokens, top_k, num_shared)) {
    launch_one_cta(permute::plan_one_cta, 0, stream, p);
    return;
  }
  launch_multi_cta(p, plan.scratch, stream);
}

bool launch_route_and_plan(const RoutingConfig& cfg, const void* logits, DType logits_dtype,
                           const float* bias, int64_t tokens, int32_t* ids, float* weights,
                           int expert_offset, int local_experts, int num_shared,
                           const PlanBuffers& plan, cudaStream_t stream, PlanKernels kernels,
                           const static_moe::StaticTaskBuild* static_tasks) {
  const routing::RouteParams r =
      routing::checked_route_params(cfg, logits, logits_dtype, bias, tokens, ids, weights);
  const permute::PlanParams p =
      checked_plan_params(ids, tokens, cfg.top_k, expert_offset, local_experts, num_shared, plan);
  const bool fused = kernels == PlanKernels::kOneCta ||
                     (kernels == PlanKernels::kAuto && tokens <= kOneCtaMaxRoutedTokens &&
                      one_cta_plan(kernels, tokens, cfg.top_k, num_shared));
  if (!fused || tokens == 0) {
    launch_route(cfg, logits, logits_dtype, bias, tokens, ids, weights, stream);
    launch_build_plan(ids, tokens, cfg.top_k, expert_offset, local_experts, num_shared, plan,
                      stream, kernels);
    return false;
  }
  static_moe::StaticTaskBuild tasks;
  if (static_tasks != nullptr) {
    SERVEKIT_CHECK(static_tasks->tasks && static_tasks->num_tasks && static_tasks->capacity >= 1,
                   "route_and_plan: static_tasks needs tasks, num_tasks and a capacity >= 1");
    const static_moe::StaticInputPrep& q = static_tasks->input;
    SERVEKIT_CHECK(q.ctas >= 0 && (q.ctas == 0 || (q.x != nullptr && q.hidden > 0 &&
                                                   q.x_elems == tokens * q.hidden &&
                                                   (q.amax_slots != nullptr || q.xq != nullptr) &&
                                                   (q.xq == nullptr) == (q.xs == nullptr))),
                   "route_and_plan: static_tasks->input needs x, hidden, x_elems = tokens * "
                   "hidden and amax_slots or xq/xs when ctas > 0 (got ctas=",
                   q.ctas, ")");
    tasks = *static_tasks;
  }
  // The next kernel launches once the routing is done (StaticTaskBuild::late_trigger), or at
  // the kernel's start under the diagnostic SERVEKIT_DIAG_ROUTE_EARLY_TRIGGER=1, read at every
  // launch (docs/static_moe.md).
  tasks.late_trigger = env_int("SERVEKIT_DIAG_ROUTE_EARLY_TRIGGER", 0, 1, 0) == 0;
  // One token: the routing warp builds the plan and the tasks alone, unless the diagnostic
  // SERVEKIT_DIAG_ROUTE_ONE_TOKEN_WARP=0 asks for the CTA-wide passes (same results).
  tasks.one_token_warp = env_int("SERVEKIT_DIAG_ROUTE_ONE_TOKEN_WARP", 0, 1, 1) != 0;
  routing::dispatch_route(cfg.method, logits_dtype, cfg.num_experts, [&](auto v) {
    using V = decltype(v);
    const auto kernel = permute::route_and_plan_one_cta<typename V::Logit, V::kLanes, V::kRouting>;
    const size_t smem =
        permute::one_cta_route_smem<V::kLanes, V::kRouting>(tokens, cfg.num_experts);
    // Above 48 KiB of static + dynamic shared memory a kernel must opt in.
    if (smem + sizeof(permute::OneCtaPlanSmem) + static_moe::kStaticTaskBuildSmemBytes +
            static_moe::kStaticInputPrepSmemBytes >
        48 * 1024) {
      SERVEKIT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               static_cast<int>(smem)));
    }
    // CTA 0 routes and plans; tasks.input.ctas more prepare the static path's input.
    launch_pdl(kernel, 1 + tasks.input.ctas, OneCtaShape::kThreads, smem, true, stream, r, p,
               tasks);
  });
  return tasks.tasks != nullptr;
}

}  // namespace servekit::cuda
