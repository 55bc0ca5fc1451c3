// Scalar formats (formats.h): every code point of the fp8/fp4 formats against values computed
// here from the sign/exponent/mantissa fields, round-to-nearest-even at every midpoint, satfinite
// saturation, NaN rules, and bf16/f16/int4 against independent references.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "servekit/formats.h"

namespace servekit {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kFltMax = std::numeric_limits<float>::max();

uint32_t bits(float x) {
  return std::bit_cast<uint32_t>(x);
}
float from_bits(uint32_t u) {
  return std::bit_cast<float>(u);
}

// Value of a minifloat code from its fields: sign | exponent (ebits, bias) | mantissa (mbits),
// with subnormals at exponent 0. Each format decides separately which codes are NaN or inf.
double field_value(unsigned code, int ebits, int mbits, int bias) {
  const unsigned m = code & ((1u << mbits) - 1);
  const unsigned e = (code >> mbits) & ((1u << ebits) - 1);
  const bool neg = (code >> (ebits + mbits)) & 1;
  const double frac = static_cast<double>(m) / (1u << mbits);
  const double v = e == 0 ? std::ldexp(frac, 1 - bias) : std::ldexp(1.0 + frac, int(e) - bias);
  return neg ? -v : v;
}

// A decoded value equals the reference: zeros with their sign, NaN as NaN.
void expect_same_value(float got, double want, unsigned code) {
  if (std::isnan(want)) {
    EXPECT_TRUE(std::isnan(got)) << "code 0x" << std::hex << code;
    return;
  }
  EXPECT_EQ(static_cast<double>(got), want) << "code 0x" << std::hex << code;
  EXPECT_EQ(std::signbit(got), std::signbit(want)) << "code 0x" << std::hex << code;
}

// ---- decoding: every code point ----------------------------------------------------------------

TEST(Formats, E4M3EveryCodeDecodes) {
  for (unsigned c = 0; c < 256; ++c) {
    const bool nan = (c & 0x7F) == 0x7F;  // S.1111.111 is the only NaN; there is no inf
    expect_same_value(e4m3_to_float(uint8_t(c)), nan ? NAN : field_value(c, 4, 3, 7), c);
  }
  EXPECT_EQ(e4m3_to_float(0x7E), 448.0f);             // 1.75 * 2^(15-7)
  EXPECT_EQ(e4m3_to_float(0x08), std::ldexp(1, -6));  // smallest normal
  EXPECT_EQ(e4m3_to_float(0x01), std::ldexp(1, -9));  // smallest subnormal: 1/8 * 2^-6
  EXPECT_EQ(kE4M3Max, 448.0f);
}

TEST(Formats, E5M2EveryCodeDecodes) {
  for (unsigned c = 0; c < 256; ++c) {
    const unsigned e = (c >> 2) & 0x1F, m = c & 3;
    double want = field_value(c, 5, 2, 15);
    if (e == 31) want = m == 0 ? ((c & 0x80) ? -INFINITY : INFINITY) : NAN;
    expect_same_value(e5m2_to_float(uint8_t(c)), want, c);
  }
  EXPECT_EQ(e5m2_to_float(0x7B), 57344.0f);            // 1.75 * 2^(30-15)
  EXPECT_EQ(e5m2_to_float(0x01), std::ldexp(1, -16));  // 1/4 * 2^-14
  EXPECT_EQ(kE5M2Max, 57344.0f);
}

TEST(Formats, E2M1EveryCodeDecodes) {
  const float magnitudes[8] = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6};  // the OCP MX table
  for (unsigned c = 0; c < 16; ++c) {
    expect_same_value(e2m1_to_float(uint8_t(c)), field_value(c, 2, 1, 1), c);
    EXPECT_EQ(std::fabs(e2m1_to_float(uint8_t(c))), magnitudes[c & 7]);
    EXPECT_EQ(bits(e2m1_to_float(uint8_t(c | 0xA0))), bits(e2m1_to_float(uint8_t(c))))
        << "only the low nibble is read";
  }
  EXPECT_EQ(kE2M1Max, 6.0f);
}

TEST(Formats, Ue8m0EveryCodeDecodes) {
  for (unsigned c = 0; c < 255; ++c)
    EXPECT_EQ(static_cast<double>(ue8m0_to_float(uint8_t(c))), std::ldexp(1.0, int(c) - 127)) << c;
  EXPECT_TRUE(std::isnan(ue8m0_to_float(0xFF)));
}

// ---- fp8 / fp4 encoders ------------------------------------------------------------------------

struct MiniFormat {
  const char* name;
  uint8_t (*encode)(float);
  float (*decode)(uint8_t);
  uint8_t max_code;  // largest finite positive code
  uint8_t sign_bit;
  uint8_t nan_code;  // what NaN encodes to (sign clear)
  bool nan_signed;   // whether -NaN keeps its sign
};

const MiniFormat kMiniFormats[] = {
    {"e4m3", float_to_e4m3, e4m3_to_float, 0x7E, 0x80, 0x7F, true},
    {"e5m2", float_to_e5m2, e5m2_to_float, 0x7B, 0x80, 0x7E, true},
    {"e2m1", float_to_e2m1, e2m1_to_float, 0x7, 0x8, 0x0, false},
};

// Nearest finite code to x by scanning every positive code (ties to the even code, beyond the
// largest value saturates): a reference that shares nothing with the bit-level encoder.
uint8_t nearest_code(const MiniFormat& f, float x) {
  const double a = std::fabs(static_cast<double>(x));
  const uint8_t sign = std::signbit(x) ? f.sign_bit : 0;
  // Above the largest value every distance below would round alike in double.
  if (a >= f.decode(f.max_code)) return static_cast<uint8_t>(sign | f.max_code);
  unsigned best = 0;
  for (unsigned c = 1; c <= f.max_code; ++c) {
    const double d = std::fabs(a - f.decode(uint8_t(c)));
    const double db = std::fabs(a - f.decode(uint8_t(best)));
    if (d < db || (d == db && (c & 1) == 0)) best = c;
  }
  return static_cast<uint8_t>(sign | best);
}

TEST(Formats, MiniFloatEncodeOfDecodeIsIdentity) {
  for (const MiniFormat& f : kMiniFormats)
    for (unsigned s : {0u, unsigned(f.sign_bit)})
      for (unsigned m = 0; m <= f.max_code; ++m) {  // every finite code, both zeros included
        const uint8_t c = uint8_t(s | m);
        EXPECT_EQ(f.encode(f.decode(c)), c) << f.name << " code 0x" << std::hex << unsigned(c);
      }
}

TEST(Formats, MiniFloatMidpointsRoundToEven) {
  for (const MiniFormat& f : kMiniFormats)
    for (unsigned c = 0; c < f.max_code; ++c) {
      // Positive codes are ordered like their values, so c and c + 1 are neighbours; their
      // midpoint needs one more significand bit and is exact in fp32.
      const float lo = f.decode(uint8_t(c)), hi = f.decode(uint8_t(c + 1));
      const float mid = (lo + hi) / 2;
      ASSERT_EQ(static_cast<double>(mid), (static_cast<double>(lo) + hi) / 2);
      const uint8_t even = uint8_t((c & 1) == 0 ? c : c + 1);
      for (float sgn : {1.0f, -1.0f}) {
        const uint8_t s = sgn < 0 ? f.sign_bit : 0;
        EXPECT_EQ(f.encode(sgn * mid), s | even) << f.name << " midpoint " << sgn * mid;
        EXPECT_EQ(f.encode(sgn * std::nextafter(mid, kInf)), s | (c + 1)) << f.name << " " << mid;
        EXPECT_EQ(f.encode(sgn * std::nextafter(mid, 0.0f)), s | c) << f.name << " " << mid;
      }
    }
}

TEST(Formats, MiniFloatSaturatesLargeValuesAndInfinity) {
  for (const MiniFormat& f : kMiniFormats) {
    const float max = f.decode(f.max_code);
    const float gap = max - f.decode(uint8_t(f.max_code - 1));
    // Half a step above the largest value would round up in an unbounded format; here all of
    // these give the largest finite code (satfinite), keeping the sign.
    for (float x : {std::nextafter(max, kInf), max + gap / 2, max + gap, 1e30f, kFltMax, kInf}) {
      EXPECT_EQ(f.encode(x), f.max_code) << f.name << " " << x;
      EXPECT_EQ(f.encode(-x), f.sign_bit | f.max_code) << f.name << " " << -x;
    }
  }
  EXPECT_EQ(float_to_e4m3(464.0f), 0x7E);    // halfway between 448 and the 480 that e4m3 lacks
  EXPECT_EQ(float_to_e5m2(61440.0f), 0x7B);  // halfway between 57344 and 65536 (inf code)
  EXPECT_EQ(float_to_e2m1(7.0f), 0x7);
  EXPECT_EQ(float_to_e2m1(5.0f), 0x6);  // tie between 4 (code 6) and 6 (code 7): even code
}

TEST(Formats, MiniFloatNaN) {
  for (const MiniFormat& f : kMiniFormats) {
    EXPECT_EQ(f.encode(kNaN), f.nan_code) << f.name;
    EXPECT_EQ(f.encode(-kNaN), f.nan_signed ? (f.sign_bit | f.nan_code) : f.nan_code) << f.name;
    EXPECT_EQ(f.encode(from_bits(0x7F800001u)), f.nan_code) << f.name << " signalling NaN";
  }
  EXPECT_TRUE(std::isnan(e4m3_to_float(float_to_e4m3(kNaN))));
  EXPECT_TRUE(std::isnan(e5m2_to_float(float_to_e5m2(kNaN))));
  EXPECT_EQ(e2m1_to_float(float_to_e2m1(kNaN)), 0.0f);
}

TEST(Formats, MiniFloatMatchesNearestOnRandomValues) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> log2_mag(-24.0f, 20.0f);  // past both ends of e5m2
  for (const MiniFormat& f : kMiniFormats) {
    for (int i = 0; i < 20000; ++i) {
      const float mag = std::exp2(log2_mag(rng));
      const float x = (rng() & 1) ? -mag : mag;
      ASSERT_EQ(f.encode(x), nearest_code(f, x)) << f.name << " x=" << x;
    }
    for (int i = 0; i < 20000; ++i) {  // arbitrary finite bit patterns: tiny, huge, subnormal
      float x = from_bits(static_cast<uint32_t>(rng()));
      if (!std::isfinite(x)) continue;
      ASSERT_EQ(f.encode(x), nearest_code(f, x)) << f.name << " x=" << x;
    }
  }
}

// ---- bf16 ------------------------------------------------------------------------------------

// Round to nearest even by comparing exact distances in double to the two bf16 neighbours;
// the one past the largest finite value is 2^128 (IEEE rounds to inf at or past that midpoint).
uint16_t reference_bf16(float x) {
  const uint32_t u = bits(x);
  const uint16_t lo = static_cast<uint16_t>(u >> 16), hi = static_cast<uint16_t>(lo + 1);
  const double a = std::fabs(static_cast<double>(from_bits(uint32_t(lo) << 16)));
  const double b = (hi & 0x7FFF) == 0x7F80 ? std::ldexp(1.0, 128)
                                           : std::fabs(double(from_bits(uint32_t(hi) << 16)));
  const double ax = std::fabs(static_cast<double>(x));
  if (ax - a < b - ax) return lo;
  if (ax - a > b - ax) return hi;
  return (lo & 1) ? hi : lo;
}

TEST(Formats, Bf16EveryCodeRoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float v = bf16_to_float(uint16_t(h));
    EXPECT_EQ(bits(v), h << 16);
    if (!std::isnan(v)) {
      EXPECT_EQ(float_to_bf16(v), h) << std::hex << h;
    }
  }
}

TEST(Formats, Bf16RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(from_bits(0x3F808000u)), 0x3F80);  // 1 + 2^-8: tie, keep even
  EXPECT_EQ(float_to_bf16(from_bits(0x3F818000u)), 0x3F82);  // tie, round up to even
  EXPECT_EQ(float_to_bf16(from_bits(0x3F808001u)), 0x3F81);  // just above the tie
  EXPECT_EQ(float_to_bf16(from_bits(0x3F817FFFu)), 0x3F81);  // just below the tie
  EXPECT_EQ(float_to_bf16(from_bits(0x00008000u)), 0x0000);  // subnormal tie to even zero
  EXPECT_EQ(float_to_bf16(from_bits(0x00018000u)), 0x0002);
  EXPECT_EQ(float_to_bf16(-1.0f), 0xBF80);
  std::mt19937 rng(11);
  for (int i = 0; i < 200000; ++i) {
    const float x = from_bits(static_cast<uint32_t>(rng()));
    if (std::isnan(x)) continue;
    ASSERT_EQ(float_to_bf16(x), reference_bf16(x)) << std::hex << bits(x);
  }
}

TEST(Formats, Bf16OverflowIsInfinityAndNaNStaysNaN) {
  // IEEE, not satfinite (formats.h): the midpoint between the largest bf16 and 2^128 ties to
  // the even code 0x7F80, which is inf; just below it stays finite.
  EXPECT_EQ(float_to_bf16(from_bits(0x7F7F8000u)), 0x7F80);
  EXPECT_EQ(float_to_bf16(from_bits(0x7F7F7FFFu)), 0x7F7F);
  EXPECT_EQ(float_to_bf16(kFltMax), 0x7F80);
  EXPECT_EQ(float_to_bf16(-kInf), 0xFF80);
  for (uint32_t nan : {0x7FC00000u, 0x7F800001u, 0xFFC00000u, 0x7F80FFFFu}) {
    const uint16_t h = float_to_bf16(from_bits(nan));
    EXPECT_TRUE(std::isnan(bf16_to_float(h))) << std::hex << nan;  // a low payload stays NaN
    EXPECT_EQ(static_cast<uint32_t>(h >> 15), nan >> 31);
  }
}

// ---- f16 -------------------------------------------------------------------------------------

TEST(Formats, F16RoundsToNearestEven) {
  EXPECT_EQ(float_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);      // tie, keep even
  EXPECT_EQ(float_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);  // tie, round up to even
  EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -25)), 0x0000);             // half the smallest subnormal
  EXPECT_EQ(float_to_f16(3 * std::ldexp(1.0f, -25)), 0x0002);         // 1.5 subnormal steps
  EXPECT_EQ(float_to_f16(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(float_to_f16(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_f16(65520.0f), 0x7C00);  // midpoint to 2^16 ties to the even inf code
  EXPECT_EQ(float_to_f16(std::nextafter(65520.0f, 0.0f)), 0x7BFF);
  EXPECT_EQ(float_to_f16(-kInf), 0xFC00);
  EXPECT_EQ(float_to_f16(-kNaN) & 0xFE00, 0xFE00);  // quiet NaN, sign kept
  EXPECT_TRUE(std::isnan(f16_to_float(float_to_f16(from_bits(0x7F800001u)))));
}

#if defined(__FLT16_MANT_DIG__)
TEST(Formats, F16MatchesCompilerFloat16) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float want = static_cast<float>(std::bit_cast<_Float16>(uint16_t(h)));
    const float got = f16_to_float(uint16_t(h));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << std::hex << h;
      continue;
    }
    EXPECT_EQ(bits(got), bits(want)) << std::hex << h;
    EXPECT_EQ(float_to_f16(got), h) << std::hex << h;
  }
  std::mt19937 rng(13);
  std::uniform_real_distribution<float> log2_mag(-26.0f, 17.0f);  // subnormal to overflow
  for (int i = 0; i < 400000; ++i) {
    float x = from_bits(static_cast<uint32_t>(rng()));
    if (i % 2) x = std::copysign(std::exp2(log2_mag(rng)), x);
    if (std::isnan(x)) continue;
    const auto want = std::bit_cast<uint16_t>(static_cast<_Float16>(x));
    ASSERT_EQ(float_to_f16(x), want) << std::hex << bits(x);
  }
}
#else
TEST(Formats, F16MatchesCompilerFloat16) {
  GTEST_SKIP() << "no _Float16 in this compiler";
}
#endif

// ---- int4 ------------------------------------------------------------------------------------

TEST(Formats, Int4) {
  for (unsigned c = 0; c < 16; ++c) {
    EXPECT_EQ(int4_to_int(uint8_t(c)), c < 8 ? int(c) : int(c) - 16);
    EXPECT_EQ(int4_to_int(uint8_t(c | 0x50)), int4_to_int(uint8_t(c)));  // low nibble only
    EXPECT_EQ(float_to_int4(static_cast<float>(int4_to_int(uint8_t(c)))), c);
  }
  struct Case {
    float x;
    int want;
  };
  const Case cases[] = {
      {0.5f, 0},
      {1.5f, 2},
      {2.5f, 2},
      {-0.5f, 0},
      {-1.5f, -2},
      {-2.5f, -2},
      {6.5f, 6},
      {-7.5f, -8},
      {7.5f, 7},
      {-8.5f, -8},
      {100, 7},
      {-100, -8},
      {kInf, 7},
      {-kInf, -8},
      {kNaN, 0},
      {-0.0f, 0},
      {1e-40f, 0},
      {kFltMax, 7},
      {std::nextafter(0.5f, 1.0f), 1},
      {std::nextafter(2.5f, 3.0f), 3},
      {std::nextafter(2.5f, 2.0f), 2},
      {std::nextafter(-6.5f, -7.0f), -7},
  };
  for (const Case& k : cases) EXPECT_EQ(int4_to_int(float_to_int4(k.x)), k.want) << k.x;
  std::mt19937 rng(17);
  std::uniform_real_distribution<float> u(-10.0f, 10.0f);
  for (int i = 0; i < 100000; ++i) {
    const float x = u(rng);
    // std::nearbyint rounds half to even in the default rounding mode.
    const int want = static_cast<int>(std::clamp(std::nearbyint(x), -8.0f, 7.0f));
    ASSERT_EQ(int4_to_int(float_to_int4(x)), want) << x;
    ASSERT_LT(float_to_int4(x), 16);
  }
}

TEST(Formats, PackNibbles) {
  EXPECT_EQ(pack_nibbles(0x3, 0xC), 0xC3);
  EXPECT_EQ(pack_nibbles(0x13, 0x2C), 0xC3);  // high bits of the inputs are dropped
  EXPECT_EQ(low_nibble(0xC3), 0x3);
  EXPECT_EQ(high_nibble(0xC3), 0xC);
}

}  // namespace
}  // namespace servekit
