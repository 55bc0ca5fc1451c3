// Staging of a task's activations (the mma B operand) into shared memory, quantized as quant.h
// says for the format: bf16 (a16 formats), or e4m3 codes with one tensor scale (fp8_per_tensor)
// or one scale per row per 128 columns (fp8_block128), kept as f16 (exact) for the f16 mma.
// The 8 warps of the CTA then read it for their 8 weight tiles, so a unit reads its activations
// from L2 once.
//
// Shared-memory layout: row r of the task at sB + r * row_stride, holding the window's columns
// from window k-block w0 on, 2 bytes each; row_stride is 64 bytes more than a multiple of 128
// so that the 16-byte reads of rows g and g+1 (one 8-lane phase) never share a bank.
// fp8_block128 scales: sXs[(c - w0 / 2) * 32 + r] for 128-column chunk c.
#pragma once

#include "cuda/kernels/static/static_device.cuh"
#include "cuda/kernels/static/static_layout.h"
#include "cuda/kernels/static/static_params.h"

namespace servekit::cuda::static_moe {

constexpr int kStaticThreads = kStaticWarps * 32;
// Shared memory of a GEMM CTA: the activation window, then fp8_block128's activation scales
// (32 rows x up to 64 chunks of 128 columns). Two CTAs fit an SM (2 x 104 KB of 227 KB).
constexpr int kStaticWindowBytes = 96 * 1024;
constexpr int kStaticMaxWindowKBlocks = 128;
constexpr int kStaticScaleBytes = 32 * (kStaticMaxWindowKBlocks / 2) * 4;
constexpr int kStaticSmemBytes = kStaticWindowBytes + kStaticScaleBytes;

// Window k-blocks for a task of `rows` rows: even (chunks of 128), at most the matrix's k-blocks
// rounded up to even and kStaticMaxWindowKBlocks.
// window_bytes: the window's shared memory (the ring kernel's is smaller, static_ring.cuh).
__device__ __forceinline__ int static_window_kblocks(int rows, int kblocks,
                                                     int window_bytes = kStaticWindowBytes) {
  const int fit = ((window_bytes / rows - 64) / 128) & ~1;
  const int all = (kblocks + 1) & ~1;
  const int w = fit < all ? fit : all;
  return w < kStaticMaxWindowKBlocks ? w : kStaticMaxWindowKBlocks;
}
__device__ __forceinline__ int static_row_stride(int window_kblocks) {
  return window_kblocks * 128 + 64;
}

// Eight consecutive source values of row r (a task row) at column col.
template <bool kDown>
__device__ __forceinline__ void static_load8(const StaticGemmParams& p, const StaticTask& task,
                                             int r, int64_t col, float (&v)[8]) {
  if constexpr (kDown) {
    const float4* src =
        reinterpret_cast<const float4*>(p.h + static_cast<int64_t>(task.row_begin + r) * p.k + col);
    const float4 a = __ldg(src), b = __ldg(src + 1);
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
  } else {
    const int64_t token = p.row_token[task.row_begin + r];
    bf16x8_to_float(__ldg(reinterpret_cast<const uint4*>(p.x + token * p.k + col)), v);
  }
}

// Stages k-blocks [w0, w1) (w0 even) of the task's rows. act_scale: the fp8_per_tensor scale.
// Each 128-column chunk of a row goes to one half-warp, 8 columns per lane, so the
// fp8_block128 amax is a 4-step shuffle within the half-warp.
template <StaticFormat F, bool kDown>
__device__ void static_stage_window(const StaticGemmParams& p, const StaticTask& task, int w0,
                                    int w1, uint8_t* sB, int row_stride, float* sXs,
                                    float act_scale) {
  const int c0 = w0 / 2, c1 = (w1 + 1) / 2, chunks = c1 - c0;
  const int half = threadIdx.x / 16, l = threadIdx.x % 16;
  const unsigned half_mask = 0xFFFFu << (16 * ((threadIdx.x / 16) & 1));
  for (int it = half; it < task.rows * chunks; it += kStaticThreads / 16) {
    const int r = it / chunks, c = c0 + it % chunks;
    const int64_t col = static_cast<int64_t>(c) * 128 + l * 8;
    const bool in = col < p.k;  // K % 128 may be 64: the last chunk's upper half is absent
    float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (in) static_load8<kDown>(p, task, r, col, v);
    uint4* dst =
        reinterpret_cast<uint4*>(sB + r * row_stride + (col - static_cast<int64_t>(w0) * 64) * 2);
    if constexpr (!static_is_fp8(F)) {
      if (!in) continue;
      uint32_t w[4];
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const __nv_bfloat162 b = __floats2bfloat162_rn(v[2 * i], v[2 * i + 1]);
        w[i] = *reinterpret_cast<const uint32_t*>(&b);
      }
      *dst = make_uint4(w[0], w[1], w[2], w[3]);
    } else if constexpr (F == StaticFormat::kFP8Block128) {
      uint4 codes;
      const float s = static_block128_quant8(v, half_mask, codes);
      if (l == 0) sXs[(c - c0) * 32 + r] = s;
      if (in) *dst = codes;
    } else {
      const float s = act_scale;
      if (!in) continue;
      *dst = make_uint4(f16x2_e4m3_of(v[0], v[1], s), f16x2_e4m3_of(v[2], v[3], s),
                        f16x2_e4m3_of(v[4], v[5], s), f16x2_e4m3_of(v[6], v[7], s));
    }
  }
}

// Whether GEMM1's staging is a plain copy: the a16 formats stage x's bf16 bits as they are, and
// fp8_block128 the planner's pre-quantized codes and scales (p.xq, p.xs). Only fp8_per_tensor,
// whose scale needs the whole input's amax, quantizes while staging.
template <StaticFormat F>
constexpr bool static_gemm1_copies() {
  return F != StaticFormat::kFP8PerTensor;
}

// Staging as a copy: k-blocks [w0, w1) of the task's rows, each 128-column chunk by one
// half-warp, kBatch chunks in flight per half-warp so the L2 round trips overlap instead of
// running one after another. GEMM1 (see static_gemm1_copies) reads token rows of x (or the
// planner's xq, xs); GEMM2 (fp8_block128 with p.hq) the task's own rows of hq, hs.
template <StaticFormat F, bool kDown>
__device__ void static_stage_copy(const StaticGemmParams& p, const StaticTask& task, int w0, int w1,
                                  uint8_t* sB, int row_stride, float* sXs) {
  constexpr bool kScales = F == StaticFormat::kFP8Block128;
  constexpr int kHalves = kStaticThreads / 16, kBatch = 4;
  const int c0 = w0 / 2, c1 = (w1 + 1) / 2, chunks = c1 - c0;
  const int half = threadIdx.x / 16, l = threadIdx.x % 16;
  const uint16_t* src = kDown ? p.hq : (kScales ? p.xq : p.x);
  const float* scales = kDown ? p.hs : p.xs;
  const int64_t kchunks = (p.k + 127) / 128;
  const int n = task.rows * chunks;
  for (int base = half; base < n; base += kHalves * kBatch) {
    uint4 v[kBatch] = {};
    float s[kBatch] = {};
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int it = base + j * kHalves;
      if (it < n) {
        const int r = it / chunks, c = c0 + it % chunks;
        const int64_t col = static_cast<int64_t>(c) * 128 + l * 8;
        const int64_t row = kDown ? task.row_begin + r : p.row_token[task.row_begin + r];
        if (col < p.k) v[j] = __ldg(reinterpret_cast<const uint4*>(src + row * p.k + col));
        if (kScales && l == 0) s[j] = __ldg(scales + row * kchunks + c);
      }
    }
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const int it = base + j * kHalves;
      if (it < n) {
        const int r = it / chunks, c = c0 + it % chunks;
        const int64_t col = static_cast<int64_t>(c) * 128 + l * 8;
        if (col < p.k)
          *reinterpret_cast<uint4*>(sB + r * row_stride +
                                    (col - static_cast<int64_t>(w0) * 64) * 2) = v[j];
        if (kScales && l == 0) sXs[(c - c0) * 32 + r] = s[j];
      }
    }
  }
}

// The staging of a unit's window: a copy for GEMM1 where static_gemm1_copies and for
// fp8_block128's GEMM2 after the h quantization, else quantized while staged.
template <StaticFormat F, bool kDown>
__device__ __forceinline__ void static_stage(const StaticGemmParams& p, const StaticTask& task,
                                             int w0, int w1, uint8_t* sB, int row_stride,
                                             float* sXs, float act_scale) {
  if constexpr (!kDown && static_gemm1_copies<F>()) {
    static_stage_copy<F, false>(p, task, w0, w1, sB, row_stride, sXs);
  } else if constexpr (kDown && F == StaticFormat::kFP8Block128) {
    if (p.hq != nullptr) {  // uniform: the launcher ran the h quantization
      static_stage_copy<F, true>(p, task, w0, w1, sB, row_stride, sXs);
    } else {
      static_stage_window<F, kDown>(p, task, w0, w1, sB, row_stride, sXs, act_scale);
    }
  } else {
    static_stage_window<F, kDown>(p, task, w0, w1, sB, row_stride, sXs, act_scale);
  }
}

}  // namespace servekit::cuda::static_moe
