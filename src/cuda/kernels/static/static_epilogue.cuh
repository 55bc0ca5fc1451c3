// Epilogues of the static MoE kernels: the gated activation after GEMM1, the output of GEMM2, and
// the fused, deterministic combine. Accumulator layout (mma m16n8): lane (g, t) of warp w holds,
// for token tile nt, c[0..1] = tile row g, tokens 8nt + 2t + {0, 1}, and c[2..3] = tile row g + 8,
// same tokens. For a gated W13 tile i, tile row g is gate column 8i + g and row g + 8 is up
// column 8i + g: the activation happens in the lane.
#pragma once

#include "cuda/kernels/activation_math.cuh"
#include "cuda/kernels/static/static_device.cuh"
#include "cuda/kernels/static/static_params.h"

namespace servekit::cuda::static_moe {

// moe.h's activations: activation_math.cuh, one copy for every kernel (NaN propagates).
__device__ __forceinline__ float static_relu2(float v) {
  return activate<Activation::kReLU2>(v, 0.0f);
}

// GEMM1: h[row, col] for the warp's tile; returns the max |h| bits stored (fp8_per_tensor).
__device__ __forceinline__ uint32_t static_gemm1_epilogue(const StaticGemmParams& p,
                                                          const StaticTask& task, int tile,
                                                          const float (&acc)[4][4], float alpha) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int64_t I = p.inter, R = p.gated ? 2 * I : I;
  const float* bias = p.w13_bias ? p.w13_bias + static_cast<int64_t>(task.group) * R : nullptr;
  uint32_t amax = 0;
#pragma unroll
  for (int nt = 0; nt < 4; ++nt)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int tok = nt * 8 + 2 * t + c;
      if (tok >= task.rows) continue;
      float* h = p.h_out + static_cast<int64_t>(task.row_begin + tok) * I;
      const float v0 = acc[nt][c] * alpha, v1 = acc[nt][2 + c] * alpha;
      if (p.gated) {
        const int64_t j = 8 * static_cast<int64_t>(tile) + g;
        const float out = activate(p.act, bias ? v0 + bias[j] : v0, bias ? v1 + bias[I + j] : v1);
        h[j] = out;
        amax = max(amax, abs_bits(out));
      } else {
        const int64_t f0 = 16 * static_cast<int64_t>(tile) + g, f1 = f0 + 8;
        const float o0 = static_relu2(bias ? v0 + bias[f0] : v0);
        const float o1 = static_relu2(bias ? v1 + bias[f1] : v1);
        h[f0] = o0;
        h[f1] = o1;
        amax = max(amax, max(abs_bits(o0), abs_bits(o1)));
      }
    }
  return amax;
}

// GEMM2: y rows of the warp's tile, bf16 (for launch_combine) or fp32 (fused combine).
__device__ __forceinline__ void static_gemm2_epilogue(const StaticGemmParams& p,
                                                      const StaticTask& task, int tile,
                                                      const float (&acc)[4][4], float alpha) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const int64_t H = p.n, n0 = 16 * static_cast<int64_t>(tile) + g;
#pragma unroll
  for (int nt = 0; nt < 4; ++nt)
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      const int tok = nt * 8 + 2 * t + c;
      if (tok >= task.rows) continue;
      const int64_t row = task.row_begin + tok;
      const float v0 = acc[nt][c] * alpha, v1 = acc[nt][2 + c] * alpha;
      if (p.out) {
        p.y32[row * H + n0] = v0;
        p.y32[row * H + n0 + 8] = v1;
      } else {
        p.y[row * H + n0] = __bfloat16_as_ushort(__float2bfloat16_rn(v0));
        p.y[row * H + n0 + 8] = __bfloat16_as_ushort(__float2bfloat16_rn(v1));
      }
    }
}

// The fused combine of columns [128 cg, 128 cg + 128) for every token, run by the CTA that
// completes the column group's last unit. Same sum as moe_plan.h's launch_combine, in the same
// fixed order (slots 0..K-1 weighted, then the shared slots), on the fp32 y.
//
// kChunk slots at a time, loads first: the chunk's row indices, then every weight, y (and bias)
// load of the chunk, predicated, then the sums in slot order (8 slots, 4 with a bias: 8 spilt in
// mxfp4's GEMM2). A chunk is two dependent round trips to L2 (three with a bias), where a
// slot-by-slot loop (each slot's sum branching on its row) paid one or two per slot: ~10 for
// top-8 on the combine that ends GEMM2. StaticGemmParams::serial_tail selects the slot-by-slot
// loop (a diagnostic; same bits).
template <bool kBias, int kChunk = kBias ? 4 : 8>
__device__ __forceinline__ float4 static_combine_quad(const StaticGemmParams& p, int64_t tok,
                                                      int64_t n, int slots) {
  const int64_t H = p.n;
  float4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (int s0 = 0; s0 < slots; s0 += kChunk) {
    int32_t row[kChunk];
#pragma unroll
    for (int j = 0; j < kChunk; ++j)
      row[j] = s0 + j < slots ? p.token_slot_row[tok * slots + s0 + j] : -1;
    float w[kChunk];
    float4 v[kChunk], b[kChunk];
#pragma unroll
    for (int j = 0; j < kChunk; ++j) {
      const int slot = s0 + j;
      w[j] = slot < p.top_k ? p.topk_weights[tok * p.top_k + slot] : 1.0f;
      v[j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
      if (row[j] >= 0) v[j] = __ldcg(reinterpret_cast<const float4*>(p.y32 + row[j] * H + n));
      if constexpr (kBias) {
        b[j] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (row[j] >= 0)
          b[j] = __ldg(reinterpret_cast<const float4*>(p.w2_bias + p.row_group[row[j]] * H + n));
      }
    }
#pragma unroll
    for (int j = 0; j < kChunk; ++j) {
      if (row[j] < 0) continue;
      if constexpr (kBias) v[j].x += b[j].x, v[j].y += b[j].y, v[j].z += b[j].z, v[j].w += b[j].w;
      s.x = fmaf(w[j], v[j].x, s.x), s.y = fmaf(w[j], v[j].y, s.y), s.z = fmaf(w[j], v[j].z, s.z),
      s.w = fmaf(w[j], v[j].w, s.w);
    }
  }
  return s;
}

// The slot-by-slot loop (StaticGemmParams::serial_tail).
__device__ __forceinline__ float4 static_combine_quad_serial(const StaticGemmParams& p, int64_t tok,
                                                             int64_t n, int slots) {
  const int64_t H = p.n;
  float4 s = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
  for (int slot = 0; slot < slots; ++slot) {
    const int32_t row = p.token_slot_row[tok * slots + slot];
    if (row < 0) continue;
    const float w = slot < p.top_k ? p.topk_weights[tok * p.top_k + slot] : 1.0f;
    float4 v = __ldcg(reinterpret_cast<const float4*>(p.y32 + row * H + n));
    if (p.w2_bias) {
      const float4 b = __ldg(reinterpret_cast<const float4*>(p.w2_bias + p.row_group[row] * H + n));
      v.x += b.x, v.y += b.y, v.z += b.z, v.w += b.w;
    }
    s.x = fmaf(w, v.x, s.x), s.y = fmaf(w, v.y, s.y), s.z = fmaf(w, v.z, s.z),
    s.w = fmaf(w, v.w, s.w);
  }
  return s;
}

__device__ __forceinline__ void static_combine_columns(const StaticGemmParams& p, int cg) {
  const int64_t H = p.n;
  const int64_t c0 = 128 * static_cast<int64_t>(cg);
  const int quads = static_cast<int>((H - c0 < 128 ? H - c0 : 128) / 4);
  const int slots = p.top_k + p.num_shared;
  // The CTA's first kStaticWarps warps (the ring kernel's producer warp does not take part).
  for (int64_t it = threadIdx.x; it < p.tokens * quads; it += kStaticWarps * 32) {
    const int64_t tok = it / quads, n = c0 + 4 * (it % quads);
    const float4 s = p.serial_tail ? static_combine_quad_serial(p, tok, n, slots)
                     : p.w2_bias   ? static_combine_quad<true>(p, tok, n, slots)
                                   : static_combine_quad<false>(p, tok, n, slots);
    const __nv_bfloat162 lo = __floats2bfloat162_rn(s.x, s.y), hi = __floats2bfloat162_rn(s.z, s.w);
    *reinterpret_cast<uint2*>(p.out + tok * H + n) = make_uint2(
        *reinterpret_cast<const uint32_t*>(&lo), *reinterpret_cast<const uint32_t*>(&hi));
  }
}

}  // namespace servekit::cuda::static_moe
