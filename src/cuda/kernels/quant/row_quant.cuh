// Device helpers shared by the gather and activation kernels: 8-wide bf16 vectors, e4m3
// conversion with quant.h's scale rules, the activation pass's walk over (row, chunk) units and
// its per-format store of one 8-column chunk of a permuted row. A chunk is 8 columns = 16 bytes of
// bf16; 16 lanes of a warp cover one 128-column scale block, so the 1x128 amax is a 4-step shuffle.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include "cuda/grouped_gemm.h"
#include "cuda/kernels/pdl.cuh"
#include "cuda/moe_quant.h"

namespace servekit::cuda::quant {

constexpr int kChunk = 8;  // columns per lane per step

// Units of work of the row kernels: one unit = one 8-column chunk of one permuted row, unit
// u = r * chunks + c. A warp takes kUnroll spans of 32 consecutive units per step and issues
// all their loads before using any, so every thread keeps kUnroll (x2 when gated) independent
// 16-byte loads in flight; rows of any width keep every lane busy. A 16-lane half of a span is
// one 128-column scale block whenever chunks % 16 == 0 (the block formats).
constexpr int kUnroll = 4;
constexpr int kRowThreads = 256;

// Grid of the row kernels for up to `rows` permuted rows of `chunks` chunks: enough CTAs to
// fill the current device, never more than the units need (defined in gather.cu; host only).
int row_grid(int64_t rows, int64_t chunks);

// Rows and chunks of this lane's kUnroll units in the warp step at `base` (row -1: past the
// end). The division runs once per step.
struct UnitSpan {
  int r[kUnroll];
  int c[kUnroll];
};
__device__ __forceinline__ UnitSpan unit_span(int64_t base, int64_t units, int chunks) {
  const int64_t u0 = base + (threadIdx.x & 31);
  int r = static_cast<int>(u0 / chunks);
  int c = static_cast<int>(u0 - int64_t{r} * chunks);
  UnitSpan s;
#pragma unroll
  for (int i = 0; i < kUnroll; ++i) {
    s.r[i] = u0 + 32 * i < units ? r : -1;
    s.c[i] = c;
    c += 32;
    r += c / chunks;
    c %= chunks;
  }
  return s;
}

// The warp-step loop of the row kernels: base of this warp's first step and the stride.
struct WarpSteps {
  int64_t first, stride;
};
__device__ __forceinline__ WarpSteps warp_steps() {
  const int64_t warp = (int64_t{blockIdx.x} * blockDim.x + threadIdx.x) / 32;
  const int64_t warps = int64_t{gridDim.x} * blockDim.x / 32;
  return {warp * 32 * kUnroll, warps * 32 * kUnroll};
}

struct Chunk {
  float v[kChunk];
};

__device__ __forceinline__ Chunk bf16_chunk_of(const uint4& raw) {
  const auto* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
  Chunk c;
#pragma unroll
  for (int i = 0; i < kChunk / 2; ++i) {
    const float2 f = __bfloat1622float2(h[i]);
    c.v[2 * i] = f.x;
    c.v[2 * i + 1] = f.y;
  }
  return c;
}

__device__ __forceinline__ Chunk load_bf16_chunk(const uint16_t* p) {
  return bf16_chunk_of(*reinterpret_cast<const uint4*>(p));
}

// c rounded to bf16 (nearest even), packed in column order.
__device__ __forceinline__ uint4 bf16_raw_of(const Chunk& c) {
  uint4 raw;
  auto* h = reinterpret_cast<__nv_bfloat162*>(&raw);
#pragma unroll
  for (int i = 0; i < kChunk / 2; ++i) h[i] = __floats2bfloat162_rn(c.v[2 * i], c.v[2 * i + 1]);
  return raw;
}

__device__ __forceinline__ void store_bf16_chunk(uint16_t* p, const Chunk& c) {
  *reinterpret_cast<uint4*>(p) = bf16_raw_of(c);
}

__device__ __forceinline__ void add_chunk(Chunk& c, const float* bias) {
  const float4 a = *reinterpret_cast<const float4*>(bias);
  const float4 b = *reinterpret_cast<const float4*>(bias + 4);
  c.v[0] += a.x, c.v[1] += a.y, c.v[2] += a.z, c.v[3] += a.w;
  c.v[4] += b.x, c.v[5] += b.y, c.v[6] += b.z, c.v[7] += b.w;
}

// quant.h: scale = amax / 448, or 1 when that is 0 (an all-zero tensor or block, or an amax
// so small the division underflows). A NaN amax gives a NaN scale.
__device__ __forceinline__ float fp8_scale_of(float amax) {
  const float s = amax / 448.0f;
  return s == 0.0f ? 1.0f : s;
}

// max that keeps a NaN (fmaxf drops it): quant.h wants a NaN in a scale block to poison the
// block's scale rather than vanish.
__device__ __forceinline__ float max_nan(float a, float b) {
  return (a > b || a != a) ? a : b;
}

// Round to nearest even, saturating to +-448, NaN stays NaN (formats.h).
__device__ __forceinline__ uint8_t to_e4m3(float x) {
  return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
}

__device__ __forceinline__ float from_e4m3(uint8_t code) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(code, __NV_E4M3)));
}

__device__ __forceinline__ float chunk_amax(const Chunk& c) {
  float m = 0.0f;
#pragma unroll
  for (int i = 0; i < kChunk; ++i) m = max_nan(m, fabsf(c.v[i]));
  return m;
}

// amax over the 16 lanes that share a 128-column block (lanes 0-15 or 16-31 of the warp).
__device__ __forceinline__ float block128_amax(float m) {
#pragma unroll
  for (int off = 8; off >= 1; off /= 2) m = max_nan(m, __shfl_xor_sync(0xffffffffu, m, off));
  return m;
}

// Non-negative floats order like their bit patterns (a positive NaN above +inf), so an integer
// atomicMax is an exact, order-independent (deterministic) float max.
__device__ __forceinline__ void atomic_amax(unsigned* bits, float m) {
  atomicMax(bits, __float_as_uint(m));
}

// Warp-reduced amax, one atomic per warp. All lanes must call it.
__device__ __forceinline__ void warp_atomic_amax(unsigned* bits, float m) {
#pragma unroll
  for (int off = 16; off >= 1; off /= 2) m = max_nan(m, __shfl_xor_sync(0xffffffffu, m, off));
  if ((threadIdx.x & 31) == 0) atomic_amax(bits, m);
}

// The 8 e4m3 codes of c / scale, packed in column order.
__device__ __forceinline__ uint2 e4m3_codes(const Chunk& c, float scale) {
  uint8_t q[kChunk];
#pragma unroll
  for (int i = 0; i < kChunk; ++i) q[i] = to_e4m3(c.v[i] / scale);
  return *reinterpret_cast<const uint2*>(q);
}

// The same by one division and 8 multiplications (x * (1 / scale)): off by one code from
// x / scale where the quotient falls within an fp32 ulp of a rounding midpoint. The activation
// pass quantizes this way (its fp32 activation is approximate already; the division per element
// cost ~80 us of deepseek-v3's 8192-token layer, docs/perf-notes.md, twenty-second pass); the
// gather divides, so its codes equal quant.h's bit for bit.
__device__ __forceinline__ uint2 e4m3_codes_rcp(const Chunk& c, float scale) {
  const float inv = 1.0f / scale;
  uint8_t q[kChunk];
#pragma unroll
  for (int i = 0; i < kChunk; ++i) q[i] = to_e4m3(c.v[i] * inv);
  return *reinterpret_cast<const uint2*>(q);
}

// Where the rows of permuted row r's group start, and how many there are.
struct RowGroup {
  int64_t begin = 0, rows = 0;
};
__device__ __forceinline__ RowGroup row_group_of(const PlanBuffers& plan, int r) {
  const int g = plan.row_group[r];
  const int begin = plan.group_offsets[g];
  return {begin, plan.group_offsets[g + 1] - begin};
}

// Stores chunk c (columns [8c, 8c+8)) of permuted row r in format F, the e4m3 formats
// quantized by the reciprocal of the scale (e4m3_codes_rcp; the activation pass's store). Every
// lane of the warp must call it (the block formats shuffle); `valid` masks lanes past the end
// of the row. For kFP8PerTensor, `tensor_scale` is the final scale.
template <ActFormat F>
__device__ __forceinline__ void store_row_chunk(const ActBuffers& out, const PlanBuffers& plan,
                                                int r, int64_t cols, int c, bool valid,
                                                const Chunk& x, float tensor_scale) {
  const int64_t at = int64_t{r} * cols + int64_t{c} * kChunk;
  if constexpr (F == ActFormat::kBF16) {
    if (valid) store_bf16_chunk(static_cast<uint16_t*>(out.rows) + at, x);
  } else if constexpr (F == ActFormat::kFP8PerTensor) {
    if (valid) {
      *reinterpret_cast<uint2*>(static_cast<uint8_t*>(out.rows) + at) =
          e4m3_codes_rcp(x, tensor_scale);
    }
  } else {
    const float scale = fp8_scale_of(block128_amax(valid ? chunk_amax(x) : 0.0f));
    if (!valid) return;
    if constexpr (F == ActFormat::kFP8Block128) {
      *reinterpret_cast<uint2*>(static_cast<uint8_t*>(out.rows) + at) = e4m3_codes_rcp(x, scale);
      if ((c & 15) == 0) {
        const RowGroup grp = row_group_of(plan, r);
        out.block_scales[a_block_scale_index(grp.begin, grp.rows, cols / 128, r, c / 16)] = scale;
      }
    } else {  // kFP8Block128AsBF16: e4m3 round trip, dequantized value rounded to bf16
      const float inv = 1.0f / scale;
      Chunk y;
#pragma unroll
      for (int i = 0; i < kChunk; ++i) y.v[i] = from_e4m3(to_e4m3(x.v[i] * inv)) * scale;
      store_bf16_chunk(static_cast<uint16_t*>(out.rows) + at, y);
    }
  }
}

}  // namespace servekit::cuda::quant
