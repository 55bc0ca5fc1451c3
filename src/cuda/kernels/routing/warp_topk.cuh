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
// Needs at least k candidates (keys != kNoCandidate).
//
// Each lane caches its two best remaining candidates, so a round costs two reductions and a
// shift instead of a rescan of all N registers. A lane that wins twice without a rescan has an
// unknown best; it rescans for the candidates ranked after the round's winner (every candidate
// ranked before it has been taken, since winners come in rank order).
template <int N, typename OnPick>
__device__ __forceinline__ void warp_top_k(const uint32_t (&key)[N], int k, OnPick&& on_pick) {
  const uint32_t lane = threadIdx.x % 32;
  uint32_t key1, index1, key2, index2;  // the lane's best and second best remaining
  bool first_known, second_known;
  // Ranked after (after_key, after_index): a smaller key, or the same key at a higher index.
  auto rescan = [&](uint32_t after_key, uint32_t after_index) {
    key1 = key2 = kNoCandidate;
    index1 = index2 = ~0u;
#pragma unroll
    for (int j = 0; j < N; ++j) {
      const uint32_t index = lane + 32 * j;
      const uint32_t kj = key[j];
      if (!(kj < after_key || (kj == after_key && index > after_index))) continue;
      // Strictly greater displaces: in ascending j, the lower index keeps a tie.
      if (kj > key1) {
        key2 = key1, index2 = index1;
        key1 = kj, index1 = index;
      } else if (kj > key2) {
        key2 = kj, index2 = index;
      }
    }
    first_known = second_known = true;
  };
  rescan(~0u, ~0u);  // every key is below ~0u (order_key's largest is +inf's 0xff800000)
  // Not unrolled: at one token this runs on one warp with its code cold, and that warp's stall
  // samples are mostly instruction fetch; a copy per slot only adds code to fetch (measured
  // -0.9 us on deepseek-v3 at one token, one run; docs/perf-notes.md, nineteenth pass).
#pragma unroll 1
  for (int slot = 0; slot < k; ++slot) {
    const uint32_t top = __reduce_max_sync(kFullMask, key1);
    const uint32_t winner = __reduce_min_sync(kFullMask, key1 == top ? index1 : ~0u);
    if (index1 == winner) {  // indices are unique to their lane: only the owner shifts
      key1 = key2, index1 = index2;
      first_known = second_known;
      second_known = false;
    }
    on_pick(slot, static_cast<int>(winner));
    if (slot + 1 < k && __any_sync(kFullMask, !first_known)) {
      if (!first_known) rescan(top, winner);
    }
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
