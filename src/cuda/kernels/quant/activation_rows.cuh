// The activation between the two grouped GEMMs (moe.h's four), with the w13 bias, fused with the
// quantization of the intermediate into the GEMM2 input. Same walk as gather_rows.cuh: one CTA
// per permuted row, each warp 256 columns at a time. fp32 arithmetic throughout.
#pragma once

#include "cuda/kernels/quant/row_quant.cuh"
#include "servekit/moe.h"

namespace servekit::cuda::quant {

template <Activation A>
__device__ __forceinline__ float activate(float g, float u) {
  if constexpr (A == Activation::kSwiGLU) {
    return g / (1.0f + expf(-g)) * u;
  } else if constexpr (A == Activation::kGeGLU) {
    return 0.5f * g * (1.0f + erff(g * 0.70710678118654752f)) * u;  // erf form
  } else if constexpr (A == Activation::kSwiGLUOAI) {
    const float gc = fminf(g, kSwiGLUOAILimit);
    const float uc = fminf(fmaxf(u, -kSwiGLUOAILimit), kSwiGLUOAILimit);
    return (uc + 1.0f) * gc / (1.0f + expf(-kSwiGLUOAIAlpha * gc));
  } else {  // kReLU2: not gated, u unused
    const float r = fmaxf(g, 0.0f);
    return r * r;
  }
}

// act(h[r] + bias) for chunk c of row r (cols = I).
template <Activation A>
__device__ __forceinline__ Chunk activated_chunk(const uint16_t* h, const float* bias, int64_t cols,
                                                 int r, int c) {
  constexpr bool kGated = activation_is_gated(A);
  const int64_t width = kGated ? 2 * cols : cols;  // R
  const uint16_t* row = h + int64_t{r} * width;
  Chunk g = load_bf16_chunk(row + int64_t{c} * kChunk);
  Chunk u{};
  if constexpr (kGated) u = load_bf16_chunk(row + cols + int64_t{c} * kChunk);
  if (bias != nullptr) {
    add_chunk(g, bias + int64_t{c} * kChunk);
    if constexpr (kGated) add_chunk(u, bias + cols + int64_t{c} * kChunk);
  }
  Chunk y;
#pragma unroll
  for (int i = 0; i < kChunk; ++i) y.v[i] = activate<A>(g.v[i], u.v[i]);
  return y;
}

// kAmaxOnly: the first pass of kFP8PerTensor (amax of the activated rows, nothing stored).
template <ActFormat F, Activation A, bool kAmaxOnly>
__global__ void activation_rows_kernel(const uint16_t* h, const float* bias, int64_t cols,
                                       PlanBuffers plan, ActBuffers out) {
  const int total = plan.group_offsets[plan.num_groups];
  const int chunks = static_cast<int>(cols / kChunk);
  const int64_t width = activation_is_gated(A) ? 2 * cols : cols;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  float tensor_scale = 1.0f;
  if constexpr (F == ActFormat::kFP8PerTensor && !kAmaxOnly) {
    tensor_scale = fp8_scale_of(__uint_as_float(*out.amax_bits));
    if (blockIdx.x == 0 && threadIdx.x == 0) *out.tensor_scale = tensor_scale;
  }
  float amax = 0.0f;
  for (int r = blockIdx.x; r < total; r += gridDim.x) {
    const float* b = bias != nullptr ? bias + int64_t{plan.row_group[r]} * width : nullptr;
    for (int c0 = warp * 32; c0 < chunks; c0 += warps * 32) {
      const int c = c0 + lane;
      const bool valid = c < chunks;
      Chunk y{};
      if (valid) y = activated_chunk<A>(h, b, cols, r, c);
      if constexpr (kAmaxOnly) {
        amax = max_nan(amax, chunk_amax(y));
      } else {
        store_row_chunk<F>(out, plan, r, cols, c, valid, y, tensor_scale);
      }
    }
  }
  if constexpr (kAmaxOnly) warp_atomic_amax(out.amax_bits, amax);
}

}  // namespace servekit::cuda::quant
