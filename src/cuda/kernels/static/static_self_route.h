// GEMM1 of the static path routes a one-token call itself (docs/static_moe.md, "GEMM1 routes one
// token"). Pure C++: the parameters and the host's rule of when it applies (unit-tested on the
// CPU); the device side is static_self_route.cuh.
//
// At one token the route + plan launch is the static path's critical prefix: ~9-10 us from its
// start to GEMM1's release on the H200, with HBM idle (docs/perf-notes.md, twenty-ninth pass).
// Yet GEMM1 needs only the token's top-k experts from it, and with one token its task list
// follows from them without a plan: one task of one row per local expert picked, in expert
// order (the plan's row order), then one per shared expert (static_build_tasks gives the same
// list). So GEMM1 launches at the route + plan kernel's start, each CTA's first warp selects the
// top-k from the logits with route_token's own selection code (the same ids, bit for bit), and
// the CTAs stream their weights while the route + plan kernel still routes, plans and builds the
// task list for GEMM2 and the combine.
#pragma once

#include <cstdint>

#include "cuda/kernels/static/static_layout.h"
#include "servekit/routing.h"

namespace servekit::cuda::static_moe {

// Experts and tasks a GEMM1 CTA's routing warp handles: 16 logits per lane; top-k plus shared.
constexpr int kStaticSelfRouteMaxExperts = 512;
constexpr int kStaticSelfRouteMaxTasks = 64;

// What GEMM1 routes from (StaticGemmParams::self_route). logits == nullptr: GEMM1 reads the task
// list the prefix built, as for every other call.
struct StaticSelfRoute {
  const void* logits = nullptr;  // device [1, E]: f32, or bf16 when logits_bf16
  bool logits_bf16 = false;
  // The biased methods (DeepSeek-V3 without its group stage, MiniMax) select on
  // sigmoid(s') + bias[e]: device [E] f32; null for the others.
  const float* bias = nullptr;
  int num_experts = 0;  // E, top_k <= E <= kStaticSelfRouteMaxExperts
  int top_k = 0;
  // The EP-local routed experts [local_first, local_first + local_count) are plan groups
  // 0 .. local_count - 1; the shared experts groups local_count .. local_count + num_shared - 1.
  int local_first = 0, local_count = 0;
  int num_shared = 0;
};

// Routing methods whose selection GEMM1 repeats (route_token's keys): order_key(s') for softmax,
// top-k-softmax, llama4 and sigmoid-top-k; order_key(sigmoid(s') + b) for MiniMax and for
// DeepSeek-V3 when its group stage keeps every group (topk_group >= n_group, e.g. kimi-k2's one
// group). A group stage that drops groups is not repeated: that routing stays in the prefix.
constexpr bool static_self_route_method(const RoutingConfig& r) {
  switch (r.method) {
    case RoutingMethod::kSoftmaxTopK:
    case RoutingMethod::kTopKSoftmax:
    case RoutingMethod::kLlama4:
    case RoutingMethod::kSigmoidTopK:
    case RoutingMethod::kMiniMax:
      return true;
    case RoutingMethod::kDeepSeekV3:
      return r.topk_group >= r.n_group;
    default:
      return false;
  }
}

// Whether the method's keys are sigmoid(s') + bias (StaticSelfRoute::bias needed).
constexpr bool static_self_route_biased(RoutingMethod m) {
  return m == RoutingMethod::kDeepSeekV3 || m == RoutingMethod::kMiniMax;
}

// Formats whose GEMM1 needs nothing from the prefix but the task list: bf16 (the shared-memory
// ring kernel) and the 4-bit formats (the register ring). Not fp8_per_tensor (x's amax comes
// from the prefix), not fp8_block128 (its planner quantizes x).
constexpr bool static_self_route_format(StaticFormat f) {
  return f == StaticFormat::kBF16 || f == StaticFormat::kMXFP4 || f == StaticFormat::kNVFP4 ||
         f == StaticFormat::kInt4G32 || f == StaticFormat::kInt4G64 || f == StaticFormat::kInt4G128;
}

// Whether GEMM1 of format f can route a call of `tokens` tokens over num_experts experts, top_k
// picked, num_shared shared experts (whatever the routing method).
constexpr bool static_self_route_shape_fits(StaticFormat f, int64_t tokens, int num_experts,
                                            int top_k, int num_shared) {
  return tokens == 1 && static_self_route_format(f) && num_experts >= 1 &&
         num_experts <= kStaticSelfRouteMaxExperts && top_k >= 0 && top_k <= num_experts &&
         top_k <= 32 && num_shared >= 0 && top_k + num_shared <= kStaticSelfRouteMaxTasks;
}

// Whether a call can let GEMM1 route (the switch and the launch's own conditions are the host
// launcher's: static_moe.h, static_self_route_applies).
constexpr bool static_self_route_fits(StaticFormat f, const RoutingConfig& r, int64_t tokens,
                                      int num_shared) {
  return static_self_route_method(r) &&
         static_self_route_shape_fits(f, tokens, r.num_experts, r.top_k, num_shared);
}

// The task list of one token routed to ids[0..top_k) (distinct experts), as the device builds
// it (static_self_route.cuh, in parallel over the warp's lanes): the local experts picked in
// group order, one row each, rows 0.., then the shared experts. Returns the task count (at most
// top_k + num_shared). The CPU test checks it against static_plan_tasks_serial on the plan of
// the same ids.
inline int static_self_route_tasks(const int32_t* ids, int top_k, int local_first, int local_count,
                                   int num_shared, StaticTask* out) {
  int n = 0;
  for (int j = 0; j < top_k; ++j) {
    const int g = ids[j] - local_first;
    if (ids[j] < 0 || g < 0 || g >= local_count) continue;
    int rank = 0;
    for (int i = 0; i < top_k; ++i) {
      const int gi = ids[i] - local_first;
      rank += ids[i] >= 0 && gi >= 0 && gi < local_count && gi < g;
    }
    out[rank] = StaticTask{g, rank, 1, 0};
    ++n;
  }
  for (int sh = 0; sh < num_shared; ++sh) out[n + sh] = StaticTask{local_count + sh, n + sh, 1, 0};
  return n + num_shared;
}

}  // namespace servekit::cuda::static_moe
