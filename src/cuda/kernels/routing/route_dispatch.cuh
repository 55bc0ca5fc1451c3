// Host-side choice of the routing kernel template: logits dtype, experts per lane and method
// become compile-time parameters of a variant tag handed to a generic launcher, so every
// routing kernel (route_tokens, route_and_plan_one_cta) shares one dispatch table.
#pragma once

#include <cuda_bf16.h>

#include "cuda/kernels/routing/route_kernel.cuh"
#include "servekit/error.h"
#include "servekit/routing.h"
#include "servekit/tensor.h"

namespace servekit::cuda::routing {

// The kernel parameters of launch_route's arguments, after checking them (moe_plan.h's
// contract; throws servekit::Error naming the bad argument). Defined in routing.cu.
RouteParams checked_route_params(const RoutingConfig& cfg, const void* logits, DType logits_dtype,
                                 const float* bias, int64_t tokens, int32_t* ids, float* weights);

template <typename LogitT, int kPerLane, RoutingMethod kMethod>
struct RouteVariant {
  using Logit = LogitT;
  static constexpr int kLanes = kPerLane;
  static constexpr RoutingMethod kRouting = kMethod;
};

template <typename LogitT, int kPerLane, typename Launch>
void dispatch_method(RoutingMethod method, Launch&& launch) {
  switch (method) {
    case RoutingMethod::kSoftmaxTopK:
      return launch(RouteVariant<LogitT, kPerLane, RoutingMethod::kSoftmaxTopK>{});
    case RoutingMethod::kTopKSoftmax:
      return launch(RouteVariant<LogitT, kPerLane, RoutingMethod::kTopKSoftmax>{});
    case RoutingMethod::kDeepSeekV3:
      return launch(RouteVariant<LogitT, kPerLane, RoutingMethod::kDeepSeekV3>{});
    case RoutingMethod::kLlama4:
      return launch(RouteVariant<LogitT, kPerLane, RoutingMethod::kLlama4>{});
    case RoutingMethod::kSigmoidTopK:
      return launch(RouteVariant<LogitT, kPerLane, RoutingMethod::kSigmoidTopK>{});
    case RoutingMethod::kMiniMax:
      return launch(RouteVariant<LogitT, kPerLane, RoutingMethod::kMiniMax>{});
    case RoutingMethod::kPrecomputed:
      break;
  }
  SERVEKIT_FAIL("route: method=", routing_name(method), " runs no routing kernel");
}

// Experts per lane: the smallest of 1, 2, 4, 8, 12, 16 with 32 * n >= E (E <= 512). 12 is for
// E = 257..384 (kimi-k2's 384): at 16 the DeepSeek-V3 instantiation of the one-CTA route + plan
// kernel spills 252 / 568 bytes at its 64 registers, at 12 52 / 60 (ptxas, sm_90a).
template <typename LogitT, typename Launch>
void dispatch_lanes(RoutingMethod method, int num_experts, Launch&& launch) {
  if (num_experts <= 32) return dispatch_method<LogitT, 1>(method, launch);
  if (num_experts <= 64) return dispatch_method<LogitT, 2>(method, launch);
  if (num_experts <= 128) return dispatch_method<LogitT, 4>(method, launch);
  if (num_experts <= 256) return dispatch_method<LogitT, 8>(method, launch);
  if (num_experts <= 384) return dispatch_method<LogitT, 12>(method, launch);
  return dispatch_method<LogitT, 16>(method, launch);
}

// Calls launch(RouteVariant<...>{}) for (dtype f32 or bf16, E <= kMaxExpertsGpu, method).
template <typename Launch>
void dispatch_route(RoutingMethod method, DType logits_dtype, int num_experts, Launch&& launch) {
  if (logits_dtype == DType::kF32) return dispatch_lanes<float>(method, num_experts, launch);
  return dispatch_lanes<__nv_bfloat16>(method, num_experts, launch);
}

}  // namespace servekit::cuda::routing
