// The simple kernels around the cuBLAS GEMMs of the peer MoE layer (cublas_moe.cu): permute,
// fp8 activation quantization, activation and combine. Plain one-block-per-row kernels: the peer is
// a baseline, its time is dominated by the GEMMs. Every kernel is launched over an upper bound of
// the plan's rows (T * (K + S)) and reads the real count, group_offsets[G], on the device.
//
// The GEMM buffers use a padded row layout: group g's rows start at padded offset
// group_offsets[g] + pad_shift[g] (pad_shift [G + 1], from the host), so that fp8 GEMMs get row
// counts that are multiples of 16; plan row r lives at padded_row(r). The rows in between (pad
// rows) are never written here: the caller zeroes them (and sets their block scales to 1) once.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "cuda/kernels/activation_math.cuh"
#include "servekit/moe.h"

namespace servekit::peer::kernels {

constexpr float kFp8Max = 448.0f;  // largest finite e4m3fn
constexpr int kActBlock = 128;     // fp8_block128 activation scale: 1 x 128

// cuBLASLt's VEC128_32F scales of a B operand with n columns (tokens) and K = kb * 128 rows are
// kb x n fp32 values with the token index contiguous ("N-major", PyTorch's
// `is_blockwise_1x128_scaling`: shape (n, kb), strides (1, n)), n being the group's padded row
// count. Group g's scales start at kb * (its padded row offset): 16-byte aligned because that
// offset is a multiple of 16; groups never overlap. Total floats: kb * padded rows.
__host__ __device__ inline int64_t act_scale_base(int64_t padded_offset, int64_t kb) {
  return kb * padded_offset;
}

// Where plan row r lives in the padded layout.
__device__ inline int64_t padded_row(int64_t r, const int32_t* row_group,
                                     const int32_t* pad_shift) {
  return r + pad_shift[row_group[r]];
}

// p[i] = v for i in [0, n).
__global__ void fill_f32(float* p, int64_t n, float v) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    p[i] = v;
}

__device__ inline float load_f(const __nv_bfloat16* p, int64_t i) {
  return __bfloat162float(p[i]);
}
__device__ inline float load_f(const float* p, int64_t i) {
  return p[i];
}

__device__ inline uint8_t to_e4m3(float x) {
  return static_cast<uint8_t>(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
}

// xa[padded_row(r), :] = hidden[row_token[r], :] (bf16 rows, H elements).
__global__ void gather_rows_bf16(const __nv_bfloat16* hidden, const int32_t* row_token,
                                 const int32_t* row_group, const int32_t* pad_shift,
                                 const int32_t* group_offsets, int num_groups, int64_t H,
                                 __nv_bfloat16* xa) {
  const int64_t r = blockIdx.x;
  if (r >= group_offsets[num_groups]) return;
  const __nv_bfloat16* src = hidden + static_cast<int64_t>(row_token[r]) * H;
  __nv_bfloat16* dst = xa + padded_row(r, row_group, pad_shift) * H;
  if (H % 8 == 0) {  // 16-byte vectors: rows start 16-byte aligned when H % 8 == 0
    const uint4* s = reinterpret_cast<const uint4*>(src);
    uint4* d = reinterpret_cast<uint4*>(dst);
    for (int64_t i = threadIdx.x; i < H / 8; i += blockDim.x) d[i] = s[i];
  } else {
    for (int64_t i = threadIdx.x; i < H; i += blockDim.x) dst[i] = src[i];
  }
}

// amax over rows [0, rows) of a [*, cols] matrix, where rows = *rows_ptr if given, else `rows`.
// The result accumulates (atomicMax on the bit pattern: non-negative floats order like uints)
// into *amax_bits, which the caller zeroes first.
template <typename Src>
__global__ void amax_rows(const Src* x, int64_t rows, const int32_t* rows_ptr, int64_t cols,
                          unsigned* amax_bits) {
  const int64_t n = (rows_ptr ? static_cast<int64_t>(*rows_ptr) : rows) * cols;
  float m = 0.0f;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    m = fmaxf(m, fabsf(load_f(x, i)));
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if ((threadIdx.x & 31) == 0) atomicMax(amax_bits, __float_as_uint(m));
}

// fp8 per tensor (quant.h): scale = amax / 448 (1 if amax == 0), code = e4m3(x / scale).
// Plan row r goes to padded row p = padded_row(r) of codes and reads source row row_token[r]
// (or p, a source in the padded layout, when row_token is null).
template <typename Src>
__global__ void quantize_rows_fp8_tensor(const Src* src, const int32_t* row_token,
                                         const int32_t* row_group, const int32_t* pad_shift,
                                         const int32_t* group_offsets, int num_groups, int64_t cols,
                                         const unsigned* amax_bits, uint8_t* codes,
                                         float* scale_out) {
  const int64_t r = blockIdx.x;
  const float amax = __uint_as_float(*amax_bits);
  const float scale = amax > 0.0f ? amax / kFp8Max : 1.0f;
  if (r == 0 && threadIdx.x == 0) *scale_out = scale;
  if (r >= group_offsets[num_groups]) return;
  const int64_t p = padded_row(r, row_group, pad_shift);
  const int64_t s = row_token ? static_cast<int64_t>(row_token[r]) : p;
  for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    codes[p * cols + c] = to_e4m3(load_f(src, s * cols + c) / scale);
}

// fp8 1 x 128 (quant.h): per row per 128 columns, scale = amax / 448 (1 if zero), code =
// e4m3(x / scale); rows as in quantize_rows_fp8_tensor, scales to the per-group VEC128 layout of
// act_scale_base. One warp per 128-column block, each lane 4 columns. blockDim.x must be a
// multiple of 32.
template <typename Src>
__global__ void quantize_rows_fp8_block(const Src* src, const int32_t* row_token,
                                        const int32_t* row_group, const int32_t* pad_shift,
                                        const int32_t* group_offsets, int num_groups, int64_t cols,
                                        uint8_t* codes, float* scales) {
  const int64_t r = blockIdx.x;
  if (r >= group_offsets[num_groups]) return;
  const int g = row_group[r];
  const int64_t off = group_offsets[g];
  const int64_t padded_off = off + pad_shift[g];
  const int64_t padded_n = group_offsets[g + 1] + pad_shift[g + 1] - padded_off;
  const int64_t p = padded_off + (r - off);
  const int64_t s = row_token ? static_cast<int64_t>(row_token[r]) : p;
  const int64_t kb = cols / kActBlock;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  for (int64_t b = warp; b < kb; b += warps) {
    float v[4];
    float m = 0.0f;
    for (int j = 0; j < 4; ++j) {
      v[j] = load_f(src, s * cols + b * kActBlock + lane * 4 + j);
      m = fmaxf(m, fabsf(v[j]));
    }
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    const float scale = m > 0.0f ? m / kFp8Max : 1.0f;
    for (int j = 0; j < 4; ++j)
      codes[p * cols + b * kActBlock + lane * 4 + j] = to_e4m3(v[j] / scale);
    if (lane == 0) scales[act_scale_base(padded_off, kb) + b * padded_n + (r - off)] = scale;
  }
}

// With p = padded_row(r): a[p, i] = act(h1[p, i] + b13[g, i], h1[p, I + i] + b13[g, I + i])
// (ReLU²: act(h1[p, i] + b)). h1: [rows, R] bf16 GEMM1 output; b13: [G, R] fp32 or null;
// a: [rows, I] bf16 or fp32. Pad rows are left alone: with a bias they would not be zero.
template <typename Out>
__global__ void activation_rows(const __nv_bfloat16* h1, const float* b13, const int32_t* row_group,
                                const int32_t* pad_shift, const int32_t* group_offsets,
                                int num_groups, int64_t I, Activation act, Out* a) {
  const int64_t r = blockIdx.x;
  if (r >= group_offsets[num_groups]) return;
  const bool gated = activation_is_gated(act);
  const int64_t R = gated ? 2 * I : I;
  const int64_t p = padded_row(r, row_group, pad_shift);
  const float* bias = b13 ? b13 + static_cast<int64_t>(row_group[r]) * R : nullptr;
  for (int64_t i = threadIdx.x; i < I; i += blockDim.x) {
    const float g = __bfloat162float(h1[p * R + i]) + (bias ? bias[i] : 0.0f);
    const float u = gated ? __bfloat162float(h1[p * R + I + i]) + (bias ? bias[I + i] : 0.0f) : 0;
    const float v = cuda::activate(act, g, u);
    if constexpr (sizeof(Out) == 4) {
      a[p * I + i] = v;
    } else {
      a[p * I + i] = __float2bfloat16_rn(v);
    }
  }
}

// out[t] = sum_k w[t, k] * (y[row(t, k)] + b2[g]) + sum_s (y[row(t, K + s)] + b2[g_s]), in that
// order, in fp32, rounded once to bf16 (the order of cuda/moe_plan.h's launch_combine); y in the
// padded layout, so only real rows are read.
__global__ void combine_rows(const __nv_bfloat16* y, const int32_t* token_slot_row,
                             const int32_t* row_group, const int32_t* pad_shift,
                             const float* topk_weights, const float* b2, int top_k, int num_shared,
                             int64_t H, __nv_bfloat16* out) {
  const int64_t t = blockIdx.x;
  const int slots = top_k + num_shared;
  for (int64_t h = threadIdx.x; h < H; h += blockDim.x) {
    float acc = 0.0f;
    for (int k = 0; k < slots; ++k) {
      const int32_t row = token_slot_row[t * slots + k];
      if (row < 0) continue;
      float v = __bfloat162float(y[padded_row(row, row_group, pad_shift) * H + h]);
      if (b2) v += b2[static_cast<int64_t>(row_group[row]) * H + h];
      acc += k < top_k ? topk_weights[t * top_k + k] * v : v;
    }
    out[t * H + h] = __float2bfloat16_rn(acc);
  }
}

}  // namespace servekit::peer::kernels
