// Device kernel of the MoE combine (moe_plan.h):
//   out[t] = sum_k w[t,k] * (y[row(t,k)] + b2[g]) + sum_s (y[row(t,K+s)] + b2[E_local+s])
// in exactly that order, in fp32, rounded once to bf16. Each product and sum is a separately
// rounded __fmul_rn / __fadd_rn, so no FMA contraction changes the result: a host loop doing
// the same operations in the same order gets the same bits.
#pragma once

#include <cuda_bf16.h>

#include <cstdint>

#include "cuda/kernels/pdl.cuh"

namespace servekit::cuda::combine {

struct CombineShape {
  // 8 bf16 = one 16-byte load per row and thread.
  static constexpr int kVec = 8;
  // Threads per block along the hidden dimension; tokens go along the grid's x.
  static constexpr int kThreads = 128;
  // Rows loaded before the first is accumulated: up to 8 independent 16-byte loads in flight
  // per thread (deepseek-v3 has K + S = 9 rows per token).
  static constexpr int kBatch = 8;
};

struct CombineParams {
  const __nv_bfloat16* y;         // [rows, H] permuted GEMM2 output
  const int32_t* token_slot_row;  // [T, K + S] row of (token, slot) or -1
  const int32_t* row_group;       // [rows] group of each row
  const float* weights;           // [T, K]
  const float* w2_bias;           // [G, H] or nullptr
  __nv_bfloat16* out;             // [T, H]
  int64_t hidden;                 // H, multiple of kVec
  int top_k;                      // K
  int num_shared;                 // S
};

template <bool kHasBias>
__global__ void __launch_bounds__(CombineShape::kThreads) combine_rows(const CombineParams p) {
  pdl_wait();  // y comes from GEMM2
  pdl_trigger();
  constexpr int kVec = CombineShape::kVec, kBatch = CombineShape::kBatch;
  const int64_t t = blockIdx.x;
  const int64_t col =
      (static_cast<int64_t>(blockIdx.y) * CombineShape::kThreads + threadIdx.x) * kVec;
  if (col >= p.hidden) return;
  const int slots = p.top_k + p.num_shared;
  const int32_t* slot_row = p.token_slot_row + t * slots;

  float acc[kVec];
#pragma unroll
  for (int e = 0; e < kVec; ++e) acc[e] = 0.0f;

  for (int j0 = 0; j0 < slots; j0 += kBatch) {
    // Issue every load of the batch before the first use, then accumulate in slot order.
    int row[kBatch];
    float w[kBatch];
    uint4 raw[kBatch];
    float4 bias[kBatch][2];
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      const int j = j0 + b;
      row[b] = j < slots ? slot_row[j] : -1;
      w[b] = j < p.top_k ? p.weights[t * p.top_k + j] : 1.0f;
      raw[b] = make_uint4(0, 0, 0, 0);
      if (row[b] >= 0)
        raw[b] = __ldg(reinterpret_cast<const uint4*>(p.y + row[b] * p.hidden + col));
    }
    if constexpr (kHasBias) {
#pragma unroll
      for (int b = 0; b < kBatch; ++b) {
        bias[b][0] = bias[b][1] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (row[b] < 0) continue;
        const float4* src =
            reinterpret_cast<const float4*>(p.w2_bias + p.row_group[row[b]] * p.hidden + col);
        bias[b][0] = __ldg(src);
        bias[b][1] = __ldg(src + 1);
      }
    }
#pragma unroll
    for (int b = 0; b < kBatch; ++b) {
      if (row[b] < 0) continue;  // not local (another EP rank's expert) or no expert
      const bool routed = j0 + b < p.top_k;
      const __nv_bfloat162* pairs = reinterpret_cast<const __nv_bfloat162*>(&raw[b]);
      const float* bias_b = reinterpret_cast<const float*>(bias[b]);
#pragma unroll
      for (int e = 0; e < kVec; ++e) {
        float v = e % 2 == 0 ? __low2float(pairs[e / 2]) : __high2float(pairs[e / 2]);
        if constexpr (kHasBias) v = __fadd_rn(v, bias_b[e]);
        if (routed) v = __fmul_rn(w[b], v);
        acc[e] = __fadd_rn(acc[e], v);
      }
    }
  }

  uint4 packed;
  __nv_bfloat162* dst = reinterpret_cast<__nv_bfloat162*>(&packed);
#pragma unroll
  for (int e = 0; e < kVec / 2; ++e) dst[e] = __floats2bfloat162_rn(acc[2 * e], acc[2 * e + 1]);
  *reinterpret_cast<uint4*>(p.out + t * p.hidden + col) = packed;
}

}  // namespace servekit::cuda::combine
