// moe.h's activations in fp32 on the device: the one copy that the dynamic path's activation
// pass (quant/activation_rows.cuh), the static path's GEMM1 epilogue (static/static_epilogue.cuh)
// and the cuBLAS peer (peer/peer_kernels.cuh) share. A NaN gate or up value gives NaN (moe.h):
// the gpt-oss clamps compare instead of calling fminf / fmaxf, which would return the limit, and
// relu keeps a NaN instead of returning 0.
//
// The sigmoids use the hardware's approximate exp2 and reciprocal (ex2.approx, __fdividef: a few
// ulp of fp32, ~1e-6 relative) instead of the IEEE expf and division (~30 instructions per
// element together). Every caller rounds the result to bf16 (2^-9 relative) or e4m3 right after,
// so the difference is below the output's own rounding; the dynamic path's activation pass is
// issue-bound on the IEEE forms at prefill sizes (docs/perf-notes.md, "Fifth pass"). The limits
// agree with the IEEE forms: g -> -inf gives -0 (or NaN times an infinite u, as IEEE), a NaN
// gate or up value gives NaN. One difference: for g in about [-88.7, -87.3] (exp(-g) between
// 2^126 and 2^128) __fdividef returns 0 where the exact value is ~-5e-37.
#pragma once

#include "servekit/moe.h"

namespace servekit::cuda {

// 1 + e^x for the sigmoids' denominators: ex2.approx.ftz of x * log2(e). __expf's form without
// ftz adds a rescaling for results below 2^-126 (a compare, two multiplies, a select), which the
// 1 + absorbs anyway: the sum is the same for every x.
__device__ __forceinline__ float one_plus_exp(float x) {
  float e;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(x * 1.44269504088896341f));
  return 1.0f + e;
}

template <Activation A>
__device__ __forceinline__ float activate(float g, float u) {
  if constexpr (A == Activation::kSwiGLU) {
    return __fdividef(g, one_plus_exp(-g)) * u;
  } else if constexpr (A == Activation::kGeGLU) {
    return 0.5f * g * (1.0f + erff(g * 0.70710678118654752f)) * u;  // erf form
  } else if constexpr (A == Activation::kSwiGLUOAI) {
    constexpr float kLimit = kSwiGLUOAILimit;
    const float gc = g > kLimit ? kLimit : g;
    const float uc = u > kLimit ? kLimit : (u < -kLimit ? -kLimit : u);
    return (uc + 1.0f) * __fdividef(gc, one_plus_exp(-kSwiGLUOAIAlpha * gc));
  } else {  // kReLU2: not gated, u unused
    return g > 0.0f ? g * g : (g == g ? 0.0f : g);
  }
}

// The same with the activation chosen at run time.
__device__ __forceinline__ float activate(Activation a, float g, float u) {
  switch (a) {
    case Activation::kSwiGLU:
      return activate<Activation::kSwiGLU>(g, u);
    case Activation::kGeGLU:
      return activate<Activation::kGeGLU>(g, u);
    case Activation::kSwiGLUOAI:
      return activate<Activation::kSwiGLUOAI>(g, u);
    case Activation::kReLU2:
      return activate<Activation::kReLU2>(g, u);
  }
  return g - g + u - u;  // unreachable for a valid enum; NaN-propagating zero otherwise
}

}  // namespace servekit::cuda
