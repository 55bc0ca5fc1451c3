// Block sizes and scale rules shared by the weight and activation quantizers (quant.h).
// Internal header.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>

#include "core/minifloat.h"
#include "servekit/error.h"
#include "servekit/formats.h"
#include "servekit/quant.h"

namespace servekit {

constexpr int kFP8BlockSize = 128;   // DeepSeek: 128x128 weight blocks, 1x128 activation slices
constexpr int kMXFP4BlockSize = 32;  // OCP MX: 32 elements share one ue8m0 scale
constexpr int kNVFP4BlockSize = 16;  // NVFP4: 16 elements share one e4m3 scale

// The method's position in declaration order; throws on a value outside the enum.
inline size_t quant_index(QuantMethod m) {
  const auto i = static_cast<size_t>(m);
  SERVEKIT_CHECK(i < 7, "quant: QuantMethod value ", i, " is not a method (valid: 0..6)");
  return i;
}

// Largest |x| over n values, or NaN if any value is NaN or +-inf: the caller then fails (weights)
// or lets the NaN scale poison the block (activations), never a silently wrong finite answer.
// Non-negative floats order as their bit patterns and NaN patterns lie above inf, so an integer
// max of the |x| bits finds both in one pass that vectorizes.
inline float amax_or_nan(const float* x, int64_t n) {
  uint32_t m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, mf::bits_of(x[i]) & mf::kF32AbsMask);
  return m < mf::kF32Inf ? mf::float_of(m) : std::numeric_limits<float>::quiet_NaN();
}

// fp8 scale amax/448; 1 when that is 0 (an all-zero block, or amax so tiny that the quotient
// underflows), so that the codes are x/1 = 0 rather than x/0. NaN stays NaN.
inline float fp8_scale(float amax) {
  const float s = amax / kE4M3Max;
  return s == 0.0f ? 1.0f : s;
}

}  // namespace servekit
