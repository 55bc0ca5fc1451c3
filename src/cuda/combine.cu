// Host launcher of the MoE combine (moe_plan.h): one launch, a block per (token, 1024 columns).
#include <cstdint>

#include "cuda/kernels/combine/combine_kernel.cuh"
#include "cuda/launch_pdl.h"
#include "cuda/moe_plan.h"
#include "cuda/runtime.h"
#include "servekit/error.h"

namespace servekit::cuda {
namespace {

bool aligned16(const void* p) {
  return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

}  // namespace

void launch_combine(const void* y, const PlanBuffers& plan, const float* topk_weights,
                    int64_t tokens, int top_k, int num_shared, int64_t hidden, const float* w2_bias,
                    void* out, cudaStream_t stream, bool pdl) {
  using combine::CombineShape;
  SERVEKIT_CHECK(tokens >= 0 && tokens <= INT32_MAX, "combine: tokens=", tokens,
                 " must be in [0, 2^31)");
  SERVEKIT_CHECK(top_k >= 1 && top_k <= kMaxTopK, "combine: top_k=", top_k, " must be in [1, ",
                 kMaxTopK, "]");
  SERVEKIT_CHECK(num_shared >= 0 && num_shared <= plan.num_groups,
                 "combine: num_shared=", num_shared, " must be in [0, num_groups=", plan.num_groups,
                 "]");
  SERVEKIT_CHECK(hidden > 0 && hidden % CombineShape::kVec == 0, "combine: hidden=", hidden,
                 " must be a positive multiple of ", CombineShape::kVec, " (16-byte bf16 vectors)");
  if (tokens == 0) return;
  SERVEKIT_CHECK(y != nullptr && aligned16(y),
                 "combine: y must be a non-null 16-byte aligned "
                 "pointer");
  SERVEKIT_CHECK(out != nullptr && aligned16(out),
                 "combine: out must be a non-null 16-byte aligned pointer");
  SERVEKIT_CHECK(w2_bias == nullptr || aligned16(w2_bias),
                 "combine: w2_bias must be 16-byte aligned");
  SERVEKIT_CHECK(topk_weights != nullptr, "combine: topk_weights is null");
  SERVEKIT_CHECK(plan.token_slot_row != nullptr && plan.row_group != nullptr,
                 "combine: plan.token_slot_row and plan.row_group must be set");

  combine::CombineParams p{};
  p.y = static_cast<const __nv_bfloat16*>(y);
  p.token_slot_row = plan.token_slot_row;
  p.row_group = plan.row_group;
  p.weights = topk_weights;
  p.w2_bias = w2_bias;
  p.out = static_cast<__nv_bfloat16*>(out);
  p.hidden = hidden;
  p.top_k = top_k;
  p.num_shared = num_shared;

  const int64_t vectors = hidden / CombineShape::kVec;
  const int64_t column_blocks = (vectors + CombineShape::kThreads - 1) / CombineShape::kThreads;
  SERVEKIT_CHECK(column_blocks <= 65535, "combine: hidden=", hidden, " exceeds ",
                 65535LL * CombineShape::kThreads * CombineShape::kVec);
  const dim3 grid(static_cast<unsigned>(tokens), static_cast<unsigned>(column_blocks));
  launch_pdl(w2_bias != nullptr ? combine::combine_rows<true> : combine::combine_rows<false>, grid,
             CombineShape::kThreads, 0, pdl, stream, p);
  SERVEKIT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace servekit::cuda
