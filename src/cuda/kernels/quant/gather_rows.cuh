// Gather of hidden rows into the permuted GEMM1 input, fused with its quantization. One CTA per
// permuted row (grid-stride); each warp walks the row 256 columns (32 chunks) at a time so the
// 16 lanes of a 128-column scale block always run together.
#pragma once

#include "cuda/kernels/quant/row_quant.cuh"

namespace servekit::cuda::quant {

// amax over all of hidden [n8 * 8] values (every token, as quant.h's per-tensor scale).
__global__ void hidden_amax_kernel(const uint16_t* hidden, int64_t n8, unsigned* amax_bits) {
  float m = 0.0f;
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n8;
       i += int64_t{gridDim.x} * blockDim.x) {
    m = max_nan(m, chunk_amax(load_bf16_chunk(hidden + i * kChunk)));
  }
  warp_atomic_amax(amax_bits, m);
}

template <ActFormat F>
__global__ void gather_rows_kernel(const uint16_t* hidden, int64_t cols, PlanBuffers plan,
                                   ActBuffers out) {
  const int total = plan.group_offsets[plan.num_groups];
  const int chunks = static_cast<int>(cols / kChunk);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  float tensor_scale = 1.0f;
  if constexpr (F == ActFormat::kFP8PerTensor) {
    tensor_scale = fp8_scale_of(__uint_as_float(*out.amax_bits));
    if (blockIdx.x == 0 && threadIdx.x == 0) *out.tensor_scale = tensor_scale;
  }
  for (int r = blockIdx.x; r < total; r += gridDim.x) {
    const uint16_t* src = hidden + int64_t{plan.row_token[r]} * cols;
    for (int c0 = warp * 32; c0 < chunks; c0 += warps * 32) {
      const int c = c0 + lane;
      const bool valid = c < chunks;
      if constexpr (F == ActFormat::kBF16) {  // a plain 16-byte copy
        if (valid) {
          reinterpret_cast<uint4*>(static_cast<uint16_t*>(out.rows) + int64_t{r} * cols)[c] =
              reinterpret_cast<const uint4*>(src)[c];
        }
      } else {
        Chunk x{};
        if (valid) x = load_bf16_chunk(src + int64_t{c} * kChunk);
        store_row_chunk<F>(out, plan, r, cols, c, valid, x, tensor_scale);
      }
    }
  }
}

}  // namespace servekit::cuda::quant
