// Routing kernel: one warp per token, route_cpu's order of operations exactly (see
// src/cpu/routing.cpp for the order of record), so ids and weights are bit-identical.
//
// Lane l holds experts l + 32 j (j < kPerLane) in registers: loads are coalesced and the
// index order within a lane is ascending. Per expert, the warp keeps a selection key (an
// ordered uint32 of s', or of q' = p + b) in registers and the value its weight is made of in
// shared memory ("payload": the softmax numerator, s' or the sigmoid p). After the top-k,
// lane j < K holds slot j, reads its payload and computes its weight; sums over slots run in
// slot order through shuffles, the softmax sum over experts in index order on lane 0.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "core/exact_math.h"
#include "cuda/kernels/routing/group_select.cuh"
#include "cuda/kernels/routing/warp_topk.cuh"
#include "servekit/routing.h"

namespace servekit::cuda::routing {

struct RouteShape {
  // Tokens (warps) per block: small blocks so that 8192 tokens spread over every SM.
  static constexpr int kWarps = 4;
  static constexpr int kThreads = 32 * kWarps;
};

struct RouteParams {
  const void* logits;  // [T, E] f32 or bf16
  const float* bias;   // [E] (kDeepSeekV3, kMiniMax)
  int32_t* ids;        // [T, K]
  float* weights;      // [T, K]
  int64_t tokens;
  int num_experts;
  int top_k;
  int n_group;
  int topk_group;
  float routed_scaling_factor;
  bool renormalize;
};

// bf16 -> f32 is exact: the bits shifted up, as the host's bf16_to_float.
__device__ __forceinline__ float logit_value(float x) {
  return x;
}
__device__ __forceinline__ float logit_value(__nv_bfloat16 x) {
  return __uint_as_float(static_cast<uint32_t>(__bfloat16_as_ushort(x)) << 16);
}

// s' = NaN ? -inf : s.
__device__ __forceinline__ float nan_as_neg_inf(float x) {
  return x != x ? -exact::infinity() : x;
}

// e^(x - m), exactly 1 when x == m (m = +-inf stays finite).
__device__ __forceinline__ float softmax_numerator(float x, float m) {
  return x == m ? 1.0f : exact::exp(exact::sub(x, m));
}

// w / R with R the slot-order sum of the K weights; 1/K each when R == 0.
__device__ __forceinline__ float renormalized(float w, int k) {
  const float r = slot_order_sum(w, k);
  return r > 0.0f ? exact::div(w, r) : exact::div(1.0f, static_cast<float>(k));
}

// Sum of s_values[0..n) in index order, on every lane (lane 0 adds, then broadcasts).
__device__ __forceinline__ float index_order_sum(const float* s_values, int n) {
  float sum = 0.0f;
  if (threadIdx.x % 32 == 0) {
    int i = 0;
    // 16-byte shared loads; the adds stay one at a time, in order.
    for (; i + 4 <= n; i += 4) {
      const float4 v = *reinterpret_cast<const float4*>(s_values + i);
      sum = exact::add(exact::add(exact::add(exact::add(sum, v.x), v.y), v.z), v.w);
    }
    for (; i < n; ++i) sum = exact::add(sum, s_values[i]);
  }
  return __shfl_sync(kFullMask, sum, 0);
}

// One warp's shared-memory scratch for routing one token: the payload of every expert (16-byte
// aligned for index_order_sum) and, for DeepSeek-V3, the biased scores and the kept groups.
template <int kPerLane, RoutingMethod kMethod>
struct RouteWarpSmem {
  static constexpr int kSlots = 32 * kPerLane;  // experts one warp holds
  static constexpr int kGroupSlots = kMethod == RoutingMethod::kDeepSeekV3 ? kSlots : 1;
  alignas(16) float payload[kSlots];  // (expert)
  float q[kGroupSlots];               // (expert)
  uint8_t kept[kGroupSlots];          // (group)
};

// DeepSeek-V3's group stage on the warp's keys (biased scores q' in smem.q).
// keys: the keys [E] in shared memory (split mode), or null.
template <int kPerLane, RoutingMethod kMethod>
__device__ __forceinline__ void keep_top_groups(const RouteParams& p, uint32_t (&key)[kPerLane],
                                                RouteWarpSmem<kPerLane, kMethod>& smem,
                                                const uint32_t* keys = nullptr) {
  // All groups kept: the group stage cannot change the candidates.
  if (p.topk_group >= p.n_group) return;
  const int group_size = p.num_experts / p.n_group;
  if (group_size % 32 == 0 && keys != nullptr) {
    keep_top_groups_by_keys(key, keys, group_size, p.n_group, p.topk_group);
  } else if (group_size % 32 == 0) {
    keep_top_groups_by_rows(key, p.num_experts, group_size, p.topk_group);
  } else {
    __syncwarp();
    keep_top_groups_by_scan(key, smem.q, smem.kept, p.num_experts, p.n_group, p.topk_group);
  }
}

// Whether route_token has a split mode for the method: the biased methods, whose per-expert
// sigmoid (~90 instructions of exact math per expert and lane) is what the split spreads over
// warps. For the others the split measured slower (softmax-top-k, E = 128: +1 to +4 us at 1 to
// 32 tokens): a load and a key per expert save less than the barrier and the shared round trip.
constexpr bool route_splits(RoutingMethod m) {
  return m == RoutingMethod::kDeepSeekV3 || m == RoutingMethod::kMiniMax;
}

// Split mode's first step, for a batch of few tokens: experts 32 j .. 32 j + 31 of token t on
// the calling warp (lane l: expert 32 j + l), so that one token's per-expert work (the loads and
// the sigmoids) spreads over up to E / 32 warps instead of one. Writes the key of q' to keys [e],
// and the payload (the sigmoid) and q' to smem, the token's routing warp's scratch: the same
// values route_token computes itself otherwise.
template <typename LogitT, int kPerLane, RoutingMethod kMethod>
__device__ __forceinline__ void route_expert_row(const RouteParams& p, int64_t t, int j,
                                                 RouteWarpSmem<kPerLane, kMethod>& smem,
                                                 uint32_t* keys) {
  static_assert(route_splits(kMethod), "split mode is for the biased methods");
  const int e = threadIdx.x % 32 + 32 * j;
  if (e >= p.num_experts) return;
  const LogitT* logits = static_cast<const LogitT*>(p.logits) + t * p.num_experts;
  // Both loads before the sigmoid, so that their round trips overlap in the PTX too (the
  // sigmoid's divide has an out-of-line slow path); measured level (docs/perf-notes.md, 19th pass).
  const LogitT logit = logits[e];
  const float b = p.bias[e];
  const float s = nan_as_neg_inf(logit_value(logit));
  const float sig = exact::sigmoid(s);
  const float q = nan_as_neg_inf(exact::add(sig, b));
  smem.payload[e] = sig;
  keys[e] = order_key(q);
  if constexpr (kMethod == RoutingMethod::kDeepSeekV3) smem.q[e] = q;
}

// Routes token t on the calling warp (every lane calls it) and writes ids [t, :] and
// weights [t, :]; returns on lane j < K the id of slot j (0 on the other lanes). The correction
// bias is loaded with the logits so that both DRAM round trips overlap.
//
// Split mode (kSplit, keys given): route_expert_row has already run for every row of 32 experts of
// token t, on any warps of the CTA, with a CTA barrier since. The keys come from keys [32 *
// kPerLane] and the payload and q from smem instead of being computed here; everything after is
// the same code, so ids and weights are the same bits.
template <typename LogitT, int kPerLane, RoutingMethod kMethod, bool kSplit = false>
__device__ __forceinline__ int route_token(const RouteParams& p, int64_t t,
                                           RouteWarpSmem<kPerLane, kMethod>& smem,
                                           const uint32_t* keys = nullptr) {
  static_assert(kPerLane >= 1 && kPerLane <= kMaxExpertsGpu / 32, "experts per lane");
  static_assert(kMethod != RoutingMethod::kPrecomputed, "precomputed routing runs no kernel");
  static_assert(!kSplit || route_splits(kMethod), "split mode is for the biased methods");
  constexpr bool kBiased =
      kMethod == RoutingMethod::kDeepSeekV3 || kMethod == RoutingMethod::kMiniMax;
  const int lane = threadIdx.x % 32;
  const int num_experts = p.num_experts, top_k = p.top_k;
  const LogitT* logits = static_cast<const LogitT*>(p.logits) + t * num_experts;
  float* payload = smem.payload;

  uint32_t key[kPerLane];
  float s[kPerLane];     // s' of expert lane + 32 j (-inf past E)
  float bias[kPerLane];  // kBiased: b of expert lane + 32 j
  if constexpr (kSplit) {
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const int e = lane + 32 * j;
      key[j] = e < num_experts ? keys[e] : kNoCandidate;
    }
  } else {
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const int e = lane + 32 * j;
      s[j] = e < num_experts ? nan_as_neg_inf(logit_value(logits[e])) : -exact::infinity();
      key[j] = e < num_experts ? order_key(s[j]) : kNoCandidate;
      bias[j] = kBiased && e < num_experts ? p.bias[e] : 0.0f;
    }
  }

  float softmax_total = 0.0f;
  if constexpr (kSplit) {
    // route_expert_row wrote the payload and q'.
    if constexpr (kMethod == RoutingMethod::kDeepSeekV3) keep_top_groups(p, key, smem, keys);
  } else if constexpr (kMethod == RoutingMethod::kSoftmaxTopK) {
    const float m = key_value(warp_max_key(key));
#pragma unroll
    for (int j = 0; j < kPerLane; ++j)
      if (lane + 32 * j < num_experts) payload[lane + 32 * j] = softmax_numerator(s[j], m);
    __syncwarp();
    softmax_total = index_order_sum(payload, num_experts);
  } else if constexpr (kBiased) {
    // p = sigmoid(s'), q' = key(p + b): select on q', weigh with p.
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      const int e = lane + 32 * j;
      if (e >= num_experts) continue;
      const float sig = exact::sigmoid(s[j]);
      const float q = nan_as_neg_inf(exact::add(sig, bias[j]));
      payload[e] = sig;
      key[j] = order_key(q);
      if constexpr (kMethod == RoutingMethod::kDeepSeekV3) smem.q[e] = q;
    }
    if constexpr (kMethod == RoutingMethod::kDeepSeekV3) keep_top_groups(p, key, smem);
  } else {
    // kTopKSoftmax, kLlama4, kSigmoidTopK: select on s', weigh from s'.
#pragma unroll
    for (int j = 0; j < kPerLane; ++j)
      if (lane + 32 * j < num_experts) payload[lane + 32 * j] = s[j];
  }
  __syncwarp();

  int id = 0;  // lane j < K: expert of slot j
  warp_top_k(key, top_k, [&](int slot, int index) {
    if (lane == slot) id = index;
  });
  const float x = payload[id];

  float w;
  if constexpr (kMethod == RoutingMethod::kSoftmaxTopK) {
    w = exact::div(x, softmax_total);
    if (p.renormalize) w = renormalized(w, top_k);
  } else if constexpr (kMethod == RoutingMethod::kTopKSoftmax) {
    const float m = __shfl_sync(kFullMask, x, 0);
    const float numerator = softmax_numerator(x, m);
    w = exact::div(numerator, slot_order_sum(numerator, top_k));
  } else if constexpr (kMethod == RoutingMethod::kLlama4) {
    w = exact::sigmoid(x);
  } else if constexpr (kMethod == RoutingMethod::kSigmoidTopK) {
    w = exact::sigmoid(x);
    if (p.renormalize) w = renormalized(w, top_k);
  } else if constexpr (kMethod == RoutingMethod::kMiniMax) {
    w = renormalized(x, top_k);
  } else {  // kDeepSeekV3
    w = p.renormalize ? renormalized(x, top_k) : x;
  }
  w = exact::mul(w, p.routed_scaling_factor);
  if (lane < top_k) {
    p.ids[t * top_k + lane] = id;
    p.weights[t * top_k + lane] = w;
  }
  // The payload of this token is read above by other lanes: the next token may overwrite it
  // only after every lane is past that read.
  __syncwarp();
  return id;
}

template <typename LogitT, int kPerLane, RoutingMethod kMethod>
__global__ void __launch_bounds__(RouteShape::kThreads) route_tokens(const RouteParams p) {
  __shared__ RouteWarpSmem<kPerLane, kMethod> smem[RouteShape::kWarps];  // (warp)
  const int warp = threadIdx.x / 32;
  const int64_t t = static_cast<int64_t>(blockIdx.x) * RouteShape::kWarps + warp;
  if (t >= p.tokens) return;  // the whole warp: no block-wide barrier follows
  route_token<LogitT, kPerLane, kMethod>(p, t, smem[warp]);
}

}  // namespace servekit::cuda::routing
