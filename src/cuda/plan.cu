// Host launcher of the permutation plan (moe_plan.h): three launches, no host synchronisation,
// no allocation (the caller gives the scratch).
//
// An id is local when expert_offset <= id < expert_offset + local_experts; every other id
// (negative, another rank's expert, or >= num_experts, which the layer's config keeps outside
// the local range) gets row -1 and contributes nothing. Rows past group_offsets[G] are left
// untouched.
#include <algorithm>
#include <climits>
#include <cstdint>

#include "cuda/kernels/permute/plan_kernels.cuh"
#include "cuda/moe_plan.h"
#include "cuda/runtime.h"
#include "servekit/error.h"

namespace servekit::cuda {
namespace {

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

void launch_build_plan(const int32_t* ids, int64_t tokens, int top_k, int expert_offset,
                       int local_experts, int num_shared, const PlanBuffers& plan,
                       cudaStream_t stream) {
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

  const int64_t entries = tokens * top_k;
  const int64_t bound = plan_blocks_bound(entries);
  const int64_t per_block =
      std::max<int64_t>(1, ceil_div(ceil_div(entries, bound), PlanShape::kThreads)) *
      PlanShape::kThreads;
  const int64_t blocks = std::max<int64_t>(1, ceil_div(entries, per_block));
  const int64_t stride = count_stride(blocks);

  permute::PlanParams p{};
  p.ids = ids;
  p.tokens = static_cast<int>(tokens);
  p.top_k = top_k;
  p.entries = static_cast<int>(entries);
  p.expert_offset = expert_offset;
  p.local_experts = local_experts;
  p.num_shared = num_shared;
  p.entries_per_block = static_cast<int>(per_block);
  p.num_blocks = static_cast<int>(blocks);
  p.count_stride = static_cast<int>(stride);
  p.block_counts = static_cast<int32_t*>(plan.scratch);
  p.block_prefix = p.block_counts + local_experts * stride;
  p.group_offsets = plan.group_offsets;
  p.row_token = plan.row_token;
  p.row_group = plan.row_group;
  p.token_slot_row = plan.token_slot_row;

  permute::count_local_groups<<<p.num_blocks, PlanShape::kThreads, 0, stream>>>(p);
  SERVEKIT_CUDA_CHECK(cudaGetLastError());
  permute::scan_group_counts<<<1, PlanShape::kScanThreads, 0, stream>>>(p);
  SERVEKIT_CUDA_CHECK(cudaGetLastError());
  permute::scatter_plan_rows<<<p.num_blocks, PlanShape::kThreads, 0, stream>>>(p);
  SERVEKIT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace servekit::cuda
