// Host launcher of the routing kernel (moe_plan.h): one launch, one warp per token; the
// template is chosen by logits dtype, experts per lane and method.
#include <cuda_bf16.h>

#include <cstdint>

#include "cuda/kernels/routing/route_kernel.cuh"
#include "cuda/moe_plan.h"
#include "cuda/runtime.h"
#include "servekit/error.h"

namespace servekit::cuda {
namespace {

using routing::RouteParams;
using routing::RouteShape;

template <typename LogitT, int kPerLane>
void launch_method(RoutingMethod method, const RouteParams& p, unsigned blocks,
                   cudaStream_t stream) {
  using routing::route_tokens;
  constexpr int kThreads = RouteShape::kThreads;
  switch (method) {
    case RoutingMethod::kSoftmaxTopK:
      route_tokens<LogitT, kPerLane, RoutingMethod::kSoftmaxTopK>
          <<<blocks, kThreads, 0, stream>>>(p);
      break;
    case RoutingMethod::kTopKSoftmax:
      route_tokens<LogitT, kPerLane, RoutingMethod::kTopKSoftmax>
          <<<blocks, kThreads, 0, stream>>>(p);
      break;
    case RoutingMethod::kDeepSeekV3:
      route_tokens<LogitT, kPerLane, RoutingMethod::kDeepSeekV3>
          <<<blocks, kThreads, 0, stream>>>(p);
      break;
    case RoutingMethod::kLlama4:
      route_tokens<LogitT, kPerLane, RoutingMethod::kLlama4><<<blocks, kThreads, 0, stream>>>(p);
      break;
    case RoutingMethod::kSigmoidTopK:
      route_tokens<LogitT, kPerLane, RoutingMethod::kSigmoidTopK>
          <<<blocks, kThreads, 0, stream>>>(p);
      break;
    case RoutingMethod::kMiniMax:
      route_tokens<LogitT, kPerLane, RoutingMethod::kMiniMax><<<blocks, kThreads, 0, stream>>>(p);
      break;
    case RoutingMethod::kPrecomputed:
      SERVEKIT_FAIL("route: method=precomputed runs no routing kernel");
  }
}

// Experts per lane: the smallest power of two with 32 * n >= E (E <= 512: n <= 16).
template <typename LogitT>
void launch_dtype(RoutingMethod method, const RouteParams& p, unsigned blocks,
                  cudaStream_t stream) {
  if (p.num_experts <= 32) return launch_method<LogitT, 1>(method, p, blocks, stream);
  if (p.num_experts <= 64) return launch_method<LogitT, 2>(method, p, blocks, stream);
  if (p.num_experts <= 128) return launch_method<LogitT, 4>(method, p, blocks, stream);
  if (p.num_experts <= 256) return launch_method<LogitT, 8>(method, p, blocks, stream);
  return launch_method<LogitT, 16>(method, p, blocks, stream);
}

}  // namespace

void launch_route(const RoutingConfig& cfg, const void* logits, DType logits_dtype,
                  const float* bias, int64_t tokens, int32_t* ids, float* weights,
                  cudaStream_t stream) {
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
  const int64_t blocks = (tokens + RouteShape::kWarps - 1) / RouteShape::kWarps;
  SERVEKIT_CHECK(blocks <= INT32_MAX, "route: tokens=", tokens, " exceeds the grid limit of ",
                 static_cast<int64_t>(INT32_MAX) * RouteShape::kWarps);
  if (tokens == 0) return;
  SERVEKIT_CHECK(logits != nullptr && ids != nullptr && weights != nullptr,
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
  if (logits_dtype == DType::kF32)
    launch_dtype<float>(cfg.method, p, static_cast<unsigned>(blocks), stream);
  else
    launch_dtype<__nv_bfloat16>(cfg.method, p, static_cast<unsigned>(blocks), stream);
  SERVEKIT_CUDA_CHECK(cudaGetLastError());
}

}  // namespace servekit::cuda
