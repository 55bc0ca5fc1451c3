// The static path's preparation of the MoE input x (StaticInputPrep, static_tasks.h) for the
// formats whose GEMM1 needs one: fp8_per_tensor's |x| maxima, fp8_block128's x quantized once per
// token. Run by the planner's CTAs past the task builder (static_planner.cuh), or by the extra
// CTAs of the one-CTA route + plan kernel (one_cta_plan.cuh) where that builds the tasks.
#pragma once

#include "cuda/kernels/static/static_device.cuh"
#include "cuda/kernels/static/static_tasks.h"

namespace servekit::cuda::static_moe {

constexpr int kStaticInputPrepThreads = 1024;
// Static shared memory static_prepare_input adds to its kernel (the amax reduction).
constexpr size_t kStaticInputPrepSmemBytes = 32 * sizeof(uint32_t);

// CTA `cta` (0 <= cta < q.ctas) of the input's preparation; every thread of a CTA of
// kStaticInputPrepThreads calls it, after the dependency wait (x comes from the previous kernel).
__device__ __forceinline__ void static_prepare_input(const StaticInputPrep& q, int cta) {
  __shared__ uint32_t red[32];
  if (q.xq != nullptr) {  // each half-warp quantizes 128-column chunks of x rows
    const int64_t kchunks = (q.hidden + 127) / 128;
    const int64_t chunks = q.x_elems / q.hidden * kchunks;
    const int l = threadIdx.x % 16;
    const unsigned half_mask = 0xFFFFu << (16 * ((threadIdx.x / 16) & 1));
    constexpr int kHalves = kStaticInputPrepThreads / 16;
    // Whole half-warps iterate together (the bound is per half-warp), as the shuffle needs.
    for (int64_t i = cta * int64_t{kHalves} + threadIdx.x / 16; i < chunks;
         i += q.ctas * int64_t{kHalves}) {
      const int64_t t = i / kchunks, c = i % kchunks, col = c * 128 + l * 8;
      const bool in = col < q.hidden;
      float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      if (in) bf16x8_to_float(__ldg(reinterpret_cast<const uint4*>(q.x + t * q.hidden + col)), v);
      uint4 codes;
      const float s = static_block128_quant8(v, half_mask, codes);
      if (in) *reinterpret_cast<uint4*>(q.xq + t * q.hidden + col) = codes;
      if (l == 0) q.xs[i] = s;
    }
  }
  if (q.amax_slots != nullptr) {  // CTA `cta`'s slice of x
    const int64_t per = (q.x_elems + q.ctas - 1) / q.ctas;
    const int64_t b = per * cta, e = b + per < q.x_elems ? b + per : q.x_elems;
    uint32_t m = 0;
    for (int64_t i = b + threadIdx.x; i < e; i += blockDim.x)
      m = max(m, abs_bits(bf16_bits_to_float(q.x[i])));
    m = cta_max_u32(m, red);
    if (threadIdx.x == 0) q.amax_slots[cta] = m;
  }
}

}  // namespace servekit::cuda::static_moe
