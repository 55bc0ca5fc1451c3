// Warp-wide top-k over keys held in registers, with the selection rule of route_cpu: by
// descending key, ties to the lower index, keys compared as IEEE floats (-0 == +0) with NaN
// read as -inf.
//
// A float key is mapped to an unsigned integer whose order is the float order
// (order_key), so each round of the selection is two warp reductions (redux.sync): the
// largest key, then the lowest index holding it. Key 0 is below every float (-inf maps to
// 0x007fffff) and marks "not a candidate".
#pragma once

#include <cstdint>

#include "core/exact_math.h"

namespace servekit::cuda::routing {

constexpr unsigned kFullMask = 0xffffffffu;
constexpr uint32_t kNoCandidate = 0;

// Monotonic map float -> uint32: NaN reads as -inf and -0 as +0, so equal floats (IEEE ==)
// get equal keys and every key is >= 0x007fffff > kNoCandidate.
__device__ __forceinline__ uint32_t order_key(float x) {
  if (x != x) x = -__int_as_float(0x7f800000);
  if (x == 0.0f) x = 0.0f;
  const uint32_t bits = __float_as_uint(x);
  return (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
}

// Inverse of order_key on its image.
__device__ __forceinline__ float key_value(uint32_t key) {
  return __uint_as_float((key & 0x80000000u) ? (key & 0x7fffffffu) : ~key);
}

// Largest key of the warp.
template <int N>
__device__ __forceinline__ uint32_t warp_max_key(const uint32_t (&key)[N]) {
  uint32_t best = kNoCandidate;
#pragma unroll
  for (int j = 0; j < N; ++j) best = max(best, key[j]);
  return __reduce_max_sync(kFullMask, best);
}

// Selects the k best of the warp's candidates, where lane l register j holds candidate
// index l + 32 j. Calls on_pick(slot, index) on every lane for slot = 0..k-1 in selection order.
// Selected keys are cleared to kNoCandidate. Needs at least k candidates (keys != 0).
template <int N, typename OnPick>
__device__ __forceinline__ void warp_top_k(uint32_t (&key)[N], int k, OnPick&& on_pick) {
  const uint32_t lane = threadIdx.x % 32;
  for (int slot = 0; slot < k; ++slot) {
    // The lane's best: strictly greater wins, so the lower j (lower index) keeps a tie.
    uint32_t best = kNoCandidate, best_j = 0;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      if (key[j] > best) {
        best = key[j];
        best_j = j;
      }
    }
    const uint32_t top = __reduce_max_sync(kFullMask, best);
    const uint32_t index = __reduce_min_sync(kFullMask, best == top ? lane + 32 * best_j : ~0u);
#pragma unroll
    for (int j = 0; j < N; ++j)
      if (lane + 32 * j == index) key[j] = kNoCandidate;
    on_pick(slot, static_cast<int>(index));
  }
}

// sum_{j < n} x_j in slot order, starting from 0.0f, where lane j holds x_j; every lane gets
// the sum. Separately rounded adds (no FMA, no reassociation), as route_cpu does.
__device__ __forceinline__ float slot_order_sum(float x, int n) {
  float sum = 0.0f;
  for (int j = 0; j < n; ++j) sum = exact::add(sum, __shfl_sync(kFullMask, x, j));
  return sum;
}

}  // namespace servekit::cuda::routing
