// Device side of static_self_route.h: a GEMM1 CTA's first warp selects the one token's top-k
// experts from the logits and writes the task list into the CTA's shared memory.
#pragma once

#include <cuda_bf16.h>

#include <climits>
#include <cstdint>

#include "cuda/kernels/routing/route_kernel.cuh"
#include "cuda/kernels/static/static_self_route.h"
#include "cuda/kernels/static/static_tasks.h"

namespace servekit::cuda::static_moe {

// The task list of a self-routed GEMM1 CTA (StaticGemmParams::self_route).
struct StaticSelfTasks {
  StaticTask tasks[kStaticSelfRouteMaxTasks];
  int count;
};

__device__ __forceinline__ StaticSelfTasks& static_self_tasks() {
  __shared__ StaticSelfTasks s;
  return s;
}

// s' of expert e: the logit (read through L2, ld.global.cg: it comes from a kernel that completed
// before this one launched), NaN as -inf.
__device__ __forceinline__ float static_self_route_logit(const StaticSelfRoute& r, int e) {
  return routing::nan_as_neg_inf(r.logits_bf16
                                     ? routing::logit_value(__ushort_as_bfloat16(__ldcg(
                                           static_cast<const unsigned short*>(r.logits) + e)))
                                     : __ldcg(static_cast<const float*>(r.logits) + e));
}

// The selection keys into keys [E] (shared memory), spread over the CTA's threads (nthreads of
// them call it): route_token's, order_key(s') for the unbiased methods and for the biased ones
// order_key(sigmoid(s') + b) (~90 instructions of exact math per expert, which one warp would
// run 12 deep at E = 384; route_expert_row's arithmetic, so the same keys).
__device__ __forceinline__ void static_self_route_keys(const StaticSelfRoute& r, uint32_t* keys,
                                                       int nthreads) {
  for (int e = threadIdx.x; e < r.num_experts; e += nthreads) {
    const float s = static_self_route_logit(r, e);
    keys[e] = r.bias == nullptr ? routing::order_key(s)
                                : routing::order_key(routing::nan_as_neg_inf(
                                      exact::add(exact::sigmoid(s), __ldcg(r.bias + e))));
  }
}

// Every lane of one warp calls it, after a barrier behind static_self_route_keys; the CTA's
// threads read the list after another. The keys and the selection (warp_top_k) are
// route_token's, so the ids are the route + plan kernel's, ties and NaN included. Task j of the
// list: the local expert of the j-th smallest group among those picked (a plan group's rows
// follow group order, one row each at one token), then the shared experts, each one row of the
// token: static_build_tasks' list for the plan of these ids.
inline __device__ __noinline__ void static_self_route_warp(const StaticSelfRoute r,
                                                           const uint32_t* keys) {
  using namespace routing;
  constexpr int kPer = kStaticSelfRouteMaxExperts / 32;
  const int lane = threadIdx.x & 31;
  uint32_t key[kPer];
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int e = lane + 32 * j;
    key[j] = e < r.num_experts ? keys[e] : kNoCandidate;
  }
  int id = -1;  // lane j < top_k: the expert of slot j
  warp_top_k(key, r.top_k, [&](int slot, int index) {
    if (lane == slot) id = index;
  });
  const int g = id - r.local_first;
  const bool local = lane < r.top_k && id >= 0 && g >= 0 && g < r.local_count;
  int rank = 0;  // local groups picked below g (the ids are distinct)
  for (int j = 0; j < r.top_k; ++j) rank += __shfl_sync(kFullMask, local ? g : INT_MAX, j) < g;
  const int nlocal = __popc(__ballot_sync(kFullMask, local));
  StaticSelfTasks& st = static_self_tasks();
  if (local) st.tasks[rank] = StaticTask{g, rank, 1, 0};
  for (int sh = lane; sh < r.num_shared; sh += 32)
    st.tasks[nlocal + sh] = StaticTask{r.local_count + sh, nlocal + sh, 1, 0};
  if (lane == 0) st.count = nlocal + r.num_shared;
}

}  // namespace servekit::cuda::static_moe
