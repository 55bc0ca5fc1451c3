#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/exact_math.h"

#if defined(__x86_64__)
#include <pmmintrin.h>
#include <xmmintrin.h>
#endif

namespace servekit {
namespace {

namespace ex = exact;

// Error of a float result in units of the last place of the exact value `ref` (double): ulp
// of ref's binade for normal results, 2^-149 for subnormal ones.
double ulp_error(float got, double ref) {
  const double a = std::fabs(ref);
  double ulp = std::ldexp(1.0, -149);
  if (a >= FLT_MIN) {
    int e = 0;
    std::frexp(a, &e);  // a in [2^(e-1), 2^e)
    ulp = std::ldexp(1.0, e - 24);
  }
  return std::fabs(static_cast<double>(got) - ref) / ulp;
}

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Bounds measured by an exhaustive run over every float in [-104.5, 89.5] (2.24e9 values)
// against double-precision std::exp: exp max 1.025 ulp (at x = -0x1.45c762p+6), sigmoid max
// 2.40 ulp (at x = -0x1.0a111ap+2). The tests below sample that range and fail if a change
// to the algorithm exceeds them; the margin only covers printing the measured values.
constexpr double kExpMaxUlp = 1.03;
constexpr double kSigmoidMaxUlp = 2.41;

uint32_t to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Visits every `stride`-th float in [lo, hi] (walking the bit patterns of each sign, so every
// binade is sampled evenly), plus both ends.
template <typename F>
void sweep(float lo, float hi, uint32_t stride, F&& f) {
  auto walk = [&](uint32_t from, uint32_t to) {
    for (uint64_t b = from; b <= to; b += stride) f(from_bits(static_cast<uint32_t>(b)));
  };
  if (lo < 0.0f) walk(to_bits(hi < 0.0f ? hi : -0.0f), to_bits(lo));
  if (hi >= 0.0f) walk(to_bits(lo > 0.0f ? lo : 0.0f), to_bits(hi));
  f(lo);
  f(hi);
}

TEST(ExactMath, ExpAccuracyOverRoutingRange) {
  double worst = 0.0;
  float worst_x = 0.0f;
  int64_t n = 0;
  // Stride 211 (prime): ~1.1e7 values spread over every binade of the range.
  sweep(-104.5f, 88.72f, 211, [&](float x) {
    const double err = ulp_error(ex::exp(x), std::exp(static_cast<double>(x)));
    if (err > worst) worst = err, worst_x = x;
    ++n;
  });
  EXPECT_GT(n, 10000000);
  EXPECT_LE(worst, kExpMaxUlp) << "at x=" << std::hexfloat << worst_x;
}

TEST(ExactMath, ExpDenseNearZeroAndSubnormalResults) {
  // The reduction's ends: k = 0 around x = 0 (stride 1031: ~2e6 values in [-0.5, 0.5]) and
  // every float in [-104, -87], where e^x is subnormal or near it (k down to -150).
  double worst = 0.0;
  auto check = [&](float x) {
    worst = std::max(worst, ulp_error(ex::exp(x), std::exp(static_cast<double>(x))));
  };
  sweep(-0.5f, 0.5f, 1031, check);
  sweep(-104.0f, -87.0f, 1, check);
  EXPECT_LE(worst, kExpMaxUlp);
}

TEST(ExactMath, ExpSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isnan(ex::exp(std::nanf(""))));
  EXPECT_EQ(ex::exp(inf), inf);
  EXPECT_EQ(ex::exp(-inf), 0.0f);
  // e^0 = 1: k = 0, r = 0, so y = (q * 0 + 0) + 1 = 1 exactly.
  EXPECT_EQ(ex::exp(0.0f), 1.0f);
  EXPECT_EQ(ex::exp(-0.0f), 1.0f);
  // ln(FLT_MAX) = 88.7228391...: 88.72283 is below it, 88.72284 above.
  EXPECT_TRUE(std::isfinite(ex::exp(88.72283f)));
  EXPECT_EQ(ex::exp(88.72284f), inf);
  EXPECT_EQ(ex::exp(89.5f), inf);
  // ln(2^-149) = -103.2789: e^-103.9 = e^-0.6211 * 2^-149 = 0.537 * 2^-149 rounds up to
  // 2^-149; e^-104 = e^-0.7211 * 2^-149 = 0.486 * 2^-149 rounds down to 0.
  EXPECT_EQ(ex::exp(-103.9f), std::ldexp(1.0f, -149));
  EXPECT_EQ(ex::exp(-104.0f), 0.0f);
  EXPECT_EQ(ex::exp(-1000.0f), 0.0f);
}

TEST(ExactMath, SigmoidAccuracy) {
  double worst = 0.0;
  float worst_x = 0.0f;
  sweep(-110.0f, 110.0f, 211, [&](float x) {
    const double ref = 1.0 / (1.0 + std::exp(-static_cast<double>(x)));
    const double err = ulp_error(ex::sigmoid(x), ref);
    if (err > worst) worst = err, worst_x = x;
  });
  EXPECT_LE(worst, kSigmoidMaxUlp) << "at x=" << std::hexfloat << worst_x;
}

TEST(ExactMath, SigmoidSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isnan(ex::sigmoid(std::nanf(""))));
  EXPECT_EQ(ex::sigmoid(inf), 1.0f);
  EXPECT_EQ(ex::sigmoid(-inf), 0.0f);
  // e^-0 = 1, 1 / (1 + 1) = 0.5 exactly.
  EXPECT_EQ(ex::sigmoid(0.0f), 0.5f);
  EXPECT_EQ(ex::sigmoid(-0.0f), 0.5f);
  // 1 / (1 + e^-20) = 1 - 2.06e-9 rounds to 1 (half ulp below 1 is 2.98e-8).
  EXPECT_EQ(ex::sigmoid(20.0f), 1.0f);
  // e^-100 = 3.72e-44 is subnormal and kept (not flushed): 3.72e-44 / 2^-149 = 26.6 -> 27.
  EXPECT_EQ(ex::sigmoid(-100.0f), 27 * std::ldexp(1.0f, -149));
}

TEST(ExactMath, MulAddIsNotFused) {
  // a = b = 1 + 2^-12: a*b = 1 + 2^-11 + 2^-24 exactly, which needs 25 bits and rounds (tie to
  // even) to 1 + 2^-11; adding c = -(1 + 2^-11) then gives 0. A fused a*b + c would give
  // 2^-24. volatile keeps the compiler from folding the constants.
  volatile float a = 1.0f + std::ldexp(1.0f, -12);
  volatile float c = -(1.0f + std::ldexp(1.0f, -11));
  EXPECT_EQ(ex::add(ex::mul(a, a), c), 0.0f);
  EXPECT_EQ(std::fma(static_cast<float>(a), static_cast<float>(a), static_cast<float>(c)),
            std::ldexp(1.0f, -24));
}

TEST(ExactMath, Pow2IsExact) {
  for (int j = -126; j <= 127; ++j) EXPECT_EQ(ex::pow2i(j), std::ldexp(1.0f, j)) << j;
}

#if defined(__x86_64__)
TEST(ExactMath, DetectsFlushToZeroAndDenormalsAreZero) {
  EXPECT_TRUE(ex::host_keeps_subnormals());
  const unsigned csr = _mm_getcsr();
  _mm_setcsr(csr | _MM_FLUSH_ZERO_ON);
  const bool with_ftz = ex::host_keeps_subnormals();
  _mm_setcsr(csr | _MM_DENORMALS_ZERO_ON);
  const bool with_daz = ex::host_keeps_subnormals();
  _mm_setcsr(csr);
  EXPECT_FALSE(with_ftz);
  EXPECT_FALSE(with_daz);
  EXPECT_TRUE(ex::host_keeps_subnormals());
}
#endif

}  // namespace
}  // namespace servekit
