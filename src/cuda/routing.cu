// Host launcher of the routing kernel (moe_plan.h): one launch, one warp per token; the
// template is chosen by logits dtype, experts per lane and method (route_dispatch.cuh).
#include <cuda_bf16.h>

#include <cstdint>

#include "cuda/kernels/routing/route_dispatch.cuh"
#include "cuda/kernels/routing/route_kernel.cuh"
#include "cuda/moe_plan.h"
#include "cuda/runtime.h"
#include "servekit/error.h"

namespace servekit::cuda {

using routing::RouteParams;
using routing::RouteShape;

namespace routing {

RouteParams checked_route_params(const RoutingConfig& cfg, const void* logits, DType logits_dtype,
                                 const float* bias, int64_t tokens, int32_t* ids, float* weights) {
  SERVEKIT_CHECK(cfg.method != RoutingMethod::kPrecomputed,
                 "route: method=precomputed runs no routing; the caller passes ids and weights");
  SERVEKIT_CHECK(cfg.num_experts >= 1 && cfg.num_experts <= kMaxExpertsGpu,
                 "route: num_experts=", cfg.num_experts, " must be in [1, ", kMaxExpertsGpu,
                 "] on the GPU");
  SERVEKIT_CHECK(cfg.top_k >= 1 && cfg.top_k <= kMaxTopK, "route: top_k=", cfg.top_k,
                 " must be in [1, ", kMaxTopK, "] on the GPU");
  validate_routing_config(cfg);
  SERVEKIT_CHECK(logits_dtype == DType::kF32 || logits_dtype == DType::kBF16,
                 "route: logits dtype=", dtype_name(logits_dtype), " must be f32 or bf16");
  SERVEKIT_CHECK(tokens >= 0, "route: tokens=", tokens, " must be >= 0");
  SERVEKIT_CHECK(tokens == 0 || (logits != nullptr && ids != nullptr && weights != nullptr),
                 "route: logits, ids and weights must be non-null for tokens=", tokens);
  SERVEKIT_CHECK(bias != nullptr || !routing_uses_bias(cfg.method),
                 "route: bias=nullptr but method=", routing_name(cfg.method),
                 " needs a correction bias [num_experts]");
  RouteParams p{};
  p.logits = logits;
  p.bias = bias;
  p.ids = ids;
  p.weights = weights;
  p.tokens = tokens;
  p.num_experts = cfg.num_experts;
  p.top_k = cfg.top_k;
  p.n_group = cfg.n_group;
  p.topk_group = cfg.topk_group;
  p.routed_scaling_factor = cfg.routed_scaling_factor;
  p.renormalize = cfg.renormalize;
  return p;
}

}  // namespace routing

void launch_route(const RoutingConfig& cfg, const void* logits, DType logits_dtype,
                  const float* bias, int64_t tokens, int32_t* ids, float* weights,
                  cudaStream_t stream) {
  const RouteParams p =
      routing::checked_route_params(cfg, logits, logits_dtype, bias, tokens, ids, weights);
  const int64_t blocks = (tokens + RouteShape::kWarps - 1) / RouteShape::kWarps;
  SERVEKIT_CHECK(blocks <= INT32_MAX, "route: tokens=", tokens, " exceeds the grid limit of ",
                 static_cast<int64_t>(INT32_MAX) * RouteShape::kWarps);
  if (tokens == 0) return;
  routing::dispatch_route(cfg.method, logits_dtype, cfg.num_experts, [&](auto v) {
    using V = decltype(v);
    routing::route_tokens<typename V::Logit, V::kLanes, V::kRouting>
        <<<static_cast<unsigned>(blocks), RouteShape::kThreads, 0, stream>>>(p);
  });
  SERVEKIT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace servekit::cuda
