// DeepSeek-V3 group-limited selection on the warp (route_cpu's route_deepseek_v3): group g
// holds experts [g G, (g+1) G), its score is q'_a + q'_b of its two best experts (q'_a alone
// when G == 1), read as a key; the topk_group best groups stay candidates (ties to the lower
// group), the keys of all other experts are cleared.
#pragma once

#include <cstdint>

#include "core/exact_math.h"
#include "cuda/kernels/routing/warp_topk.cuh"

namespace servekit::cuda::routing {

// Group score from the two largest biased scores (first >= second): the float sum, read as a
// key (+inf + -inf = NaN reads as -inf).
__device__ __forceinline__ uint32_t group_score_key(float first, float second) {
  return order_key(exact::add(first, second));
}

// Groups of whole 32-expert rows (G % 32 == 0): lane l register j holds expert l + 32 j, so a
// group is R = G / 32 consecutive registers of every lane and its top two are found with
// warp reductions alone. DeepSeek-V3 (E = 256, 8 groups) takes this path.
template <int N>
__device__ __forceinline__ void keep_top_groups_by_rows(uint32_t (&key)[N], int num_experts,
                                                        int group_size, int topk_group) {
  const uint32_t lane = threadIdx.x % 32;
  const int rows_per_group = group_size / 32;
  uint32_t group_key[1] = {kNoCandidate};  // lane g: score of group g (n_group <= N <= 32)
  uint32_t first = kNoCandidate, second = kNoCandidate;
#pragma unroll
  for (int j = 0; j < N; ++j) {
    if (32 * j >= num_experts) break;
    if (key[j] > first) {
      second = first;
      first = key[j];
    } else if (key[j] > second) {
      second = key[j];
    }
    if ((j + 1) % rows_per_group == 0) {
      // Warp top two as a multiset: the best first, then the best of everything else (the
      // holder of the best offers its second).
      const uint32_t top = __reduce_max_sync(kFullMask, first);
      const uint32_t holder = __reduce_min_sync(kFullMask, first == top ? lane : 32u);
      const uint32_t next = __reduce_max_sync(kFullMask, lane == holder ? second : first);
      if (lane == static_cast<uint32_t>(j / rows_per_group))
        group_key[0] = group_score_key(key_value(top), key_value(next));
      first = second = kNoCandidate;
    }
  }
  uint32_t kept = 0;  // bit g: group g kept
  warp_top_k(group_key, topk_group, [&](int, int g) { kept |= 1u << g; });
#pragma unroll
  for (int j = 0; j < N; ++j)
    if (!((kept >> (j / rows_per_group)) & 1u)) key[j] = kNoCandidate;
}

// Groups of whole 32-expert rows with the keys in shared memory as well (split mode:
// route_expert_row wrote keys [E]): lane g < n_group finds group g's top two by a scan of its
// keys in index order, in place of keep_top_groups_by_rows' three warp reductions per group.
// The same two values (a multiset's top two do not depend on the order), so the same group
// scores and the same bits; a short loop instead of a copy per group of code that runs once (at
// one token the routing warp's time is mostly instruction fetch; docs/perf-notes.md, nineteenth
// pass).
template <int N>
__device__ __forceinline__ void keep_top_groups_by_keys(uint32_t (&key)[N], const uint32_t* keys,
                                                        int group_size, int n_group,
                                                        int topk_group) {
  const int lane = threadIdx.x % 32;
  const int rows_per_group = group_size / 32;
  uint32_t group_key[1] = {kNoCandidate};  // lane g: score of group g (n_group <= N <= 32)
  if (lane < n_group) {
    uint32_t first = kNoCandidate, second = kNoCandidate;
    const uint32_t* g = keys + lane * group_size;
#pragma unroll 4
    for (int i = 0; i < group_size; ++i) {
      const uint32_t k = g[i];
      if (k > first) {
        second = first;
        first = k;
      } else if (k > second) {
        second = k;
      }
    }
    group_key[0] = group_score_key(key_value(first), key_value(second));
  }
  uint32_t kept = 0;  // bit g: group g kept
  warp_top_k(group_key, topk_group, [&](int, int g) { kept |= 1u << g; });
#pragma unroll
  for (int j = 0; j < N; ++j)
    if (!((kept >> (j / rows_per_group)) & 1u)) key[j] = kNoCandidate;
}

// Any group size: the warp's biased scores q' [E] are in shared memory; lane l scores groups
// l + 32 i by a scan in index order. s_kept: [E] bytes of scratch for the warp.
template <int N>
__device__ __forceinline__ void keep_top_groups_by_scan(uint32_t (&key)[N], const float* s_q,
                                                        uint8_t* s_kept, int num_experts,
                                                        int n_group, int topk_group) {
  const int lane = threadIdx.x % 32;
  const int group_size = num_experts / n_group;
  uint32_t group_key[N];  // lane l register i: group l + 32 i (n_group <= E <= 32 N)
#pragma unroll
  for (int i = 0; i < N; ++i) {
    const int g = lane + 32 * i;
    group_key[i] = kNoCandidate;
    if (g >= n_group) continue;
    s_kept[g] = 0;
    const float* q = s_q + g * group_size;
    // Strictly greater displaces, as route_cpu's top-2: the two largest values.
    float first = q[0], second = -exact::infinity();
    for (int i2 = 1; i2 < group_size; ++i2) {
      const float v = q[i2];
      if (v > first) {
        second = first;
        first = v;
      } else if (v > second) {
        second = v;
      }
    }
    group_key[i] = group_size >= 2 ? group_score_key(first, second) : order_key(first);
  }
  __syncwarp();
  warp_top_k(group_key, topk_group, [&](int, int g) {
    if (lane == 0) s_kept[g] = 1;
  });
  __syncwarp();
#pragma unroll
  for (int j = 0; j < N; ++j) {
    const int e = lane + 32 * j;
    if (e < num_experts && !s_kept[e / group_size]) key[j] = kNoCandidate;
  }
}

}  // namespace servekit::cuda::routing
