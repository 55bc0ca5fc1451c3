// The routing configuration the GPU routing tests sweep (test_routing_cuda, test_route_plan_cuda).
#pragma once

#include "servekit/routing.h"

namespace servekit {

// kDeepSeekV3 gets a routed scale that is not a power of two, so that the final multiply
// rounds and a kernel that applies it in another order shows up as a weight mismatch.
inline RoutingConfig routing_test_config(RoutingMethod m, int experts, int top_k, int n_group = 1,
                                         int topk_group = 1) {
  RoutingConfig cfg;
  cfg.method = m;
  cfg.num_experts = experts;
  cfg.top_k = top_k;
  cfg.n_group = n_group;
  cfg.topk_group = topk_group;
  cfg.routed_scaling_factor = m == RoutingMethod::kDeepSeekV3 ? 2.5f : 1.0f;
  return cfg;
}

}  // namespace servekit
