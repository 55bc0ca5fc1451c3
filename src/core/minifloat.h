// Inline bit-level conversions behind servekit/formats.h. They live in a header so that the
// quantizer loops (quant.cpp, quant_weight.cpp) inline them: weight preparation encodes billions
// of values per run. Encoders work on the fp32 bits and round to nearest even; they assume the
// default FP rounding mode (as the divisions of the quantizers do). Decoders are exact. Internal
// header.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>

namespace servekit::mf {

constexpr uint32_t bits_of(float x) {
  return std::bit_cast<uint32_t>(x);
}
constexpr float float_of(uint32_t u) {
  return std::bit_cast<float>(u);
}

constexpr uint32_t kF32AbsMask = 0x7FFFFFFFu;
constexpr uint32_t kF32Inf = 0x7F800000u;

// 2^k for a k where 2^k is a normal fp32 value (k in [-126, 127]).
constexpr float pow2(int k) {
  return float_of(static_cast<uint32_t>(k + 127) << 23);
}

// Rounds n >> s to nearest, ties to even, for 1 <= s <= 31 and n < 2^31: adding half - 1 plus
// the kept lsb turns the truncation into round-half-even.
constexpr uint32_t rne_shift(uint32_t n, int s) {
  return (n + ((1u << (s - 1)) - 1u) + ((n >> s) & 1u)) >> s;
}

// c ? a : b as a mask blend. GCC turns a plain ?: into a branch around the fp32 addition below,
// and with its default -ftrapping-math a branch around an fp32 operation cannot be undone by
// if-conversion, which would keep the quantizer loops scalar.
constexpr uint32_t blend(bool c, uint32_t a, uint32_t b) {
  const uint32_t mask = 0u - static_cast<uint32_t>(c);
  return (a & mask) | (b & ~mask);
}

// Rounds the magnitude with fp32 bits u (sign clear, finite or inf) to the binary format with
// M mantissa bits and exponent bias B that has subnormals. Returns the format's magnitude code
// (exponent << M | mantissa), unbounded above: the caller saturates or maps to inf.
// Both paths are computed and one is selected, with no variable shifts, so that the quantizer
// loops vectorize and do not mispredict (e2m1 inputs fall on either side about equally often).
template <int M, int B>
constexpr uint32_t round_magnitude(uint32_t u) {
  // Normal target: round the fp32 mantissa in place; a carry correctly bumps the exponent.
  const uint32_t normal = rne_shift(u, 23 - M) - (static_cast<uint32_t>(127 - B) << M);
  // Subnormal target (|x| < 2^(1-B)): adding 2^(24-B-M) leaves an fp32 whose ulp is the
  // target's subnormal step 2^(1-B-M), so the hardware's round-to-nearest-even addition rounds
  // |x| onto the target grid and the sum's mantissa bits are the code. Rounding up to 2^M steps
  // gives exactly the smallest normal code. An fp32-subnormal |x| (even when flushed by DAZ)
  // is far below half a step of every format that takes this path, so it gives 0 either way.
  constexpr uint32_t kMagic = static_cast<uint32_t>(127 + 24 - B - M) << 23;
  const uint32_t subnormal = bits_of(float_of(u) + float_of(kMagic)) - kMagic;
  constexpr uint32_t kMinNormal = static_cast<uint32_t>(127 + 1 - B) << 23;  // 2^(1-B)
  return blend(u >= kMinNormal, normal, subnormal);
}

// ---- encoders --------------------------------------------------------------------------------
// Each computes every candidate unconditionally and ends in blends (see blend()).

constexpr uint16_t encode_bf16(float x) {
  const uint32_t b = bits_of(x);
  const uint32_t u = b & kF32AbsMask;
  // bf16 shares fp32's exponent, so rounding the mantissa is the whole conversion (fp32
  // subnormals included); overflow carries into the exponent and gives inf, as IEEE does.
  const uint32_t rounded = ((b >> 16) & 0x8000u) | rne_shift(u, 16);
  const uint32_t nan = (b >> 16) | 0x40u;  // keep sign and payload, set quiet
  return static_cast<uint16_t>(blend(u > kF32Inf, nan, rounded));
}

constexpr uint16_t encode_f16(float x) {
  const uint32_t b = bits_of(x);
  const uint32_t u = b & kF32AbsMask;
  const uint32_t finite = std::min(round_magnitude<10, 15>(u), 0x7C00u);  // overflow: inf
  const uint32_t nan = 0x7E00u | ((u >> 13) & 0x3FFu);
  return static_cast<uint16_t>(((b >> 16) & 0x8000u) | blend(u > kF32Inf, nan, finite));
}

constexpr uint8_t encode_e4m3(float x) {
  const uint32_t b = bits_of(x);
  const uint32_t u = b & kF32AbsMask;
  // 0x7E = 448 is the largest finite; 0x7F is NaN, so everything that rounds above saturates.
  const uint32_t finite = std::min(round_magnitude<3, 7>(u), 0x7Eu);
  return static_cast<uint8_t>(((b >> 24) & 0x80u) | blend(u > kF32Inf, 0x7Fu, finite));
}

constexpr uint8_t encode_e5m2(float x) {
  const uint32_t b = bits_of(x);
  const uint32_t u = b & kF32AbsMask;
  // 0x7B = 57344 is the largest finite; 0x7C is inf (not produced: satfinite), 0x7E quiet NaN.
  const uint32_t finite = std::min(round_magnitude<2, 15>(u), 0x7Bu);
  return static_cast<uint8_t>(((b >> 24) & 0x80u) | blend(u > kF32Inf, 0x7Eu, finite));
}

constexpr uint8_t encode_e2m1(float x) {
  const uint32_t b = bits_of(x);
  const uint32_t u = b & kF32AbsMask;
  const uint32_t finite = ((b >> 28) & 0x8u) | std::min(round_magnitude<1, 1>(u), 0x7u);
  return static_cast<uint8_t>(blend(u > kF32Inf, 0u, finite));  // no NaN in e2m1: +0
}

constexpr uint8_t encode_int4(float x) {
  const uint32_t b = bits_of(x);
  const uint32_t u = b & kF32AbsMask;
  // Round |x| (capped at 8: all larger values saturate alike) and negate after: round half to
  // even is symmetric. 2^23 has ulp 1 and 0 <= |x| <= 8 keeps the sum in its binade, so the
  // addition rounds |x| to an integer and the sum's bits minus 2^23's bits are that integer.
  constexpr float kMagic = 8388608.0f;
  const uint32_t q = bits_of(float_of(std::min(u, bits_of(8.0f))) + kMagic) - bits_of(kMagic);
  const uint32_t v = blend(b >> 31, 0u - q, std::min(q, 7u));     // [-8, 7]
  return static_cast<uint8_t>(blend(u > kF32Inf, 0u, v & 0xFu));  // NaN: no NaN in int4
}

// ---- decoders --------------------------------------------------------------------------------

constexpr float decode_bf16(uint16_t h) {
  return float_of(static_cast<uint32_t>(h) << 16);
}

constexpr float decode_f16(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1Fu;
  const uint32_t m = h & 0x3FFu;
  if (e == 0x1F) return float_of(sign | kF32Inf | (m << 13));
  if (e == 0) {
    const float v = static_cast<float>(m) * pow2(-24);  // exact: m < 2^10
    return sign ? -v : v;
  }
  return float_of(sign | ((e + 112u) << 23) | (m << 13));
}

// The finite value of a magnitude code (exponent << M | mantissa) of a format with subnormals.
template <int M, int B>
constexpr float decode_magnitude(uint32_t mag) {
  const uint32_t e = mag >> M;
  const uint32_t m = mag & ((1u << M) - 1u);
  if (e == 0) return static_cast<float>(m) * pow2(1 - B - M);
  return float_of(((e + 127u - B) << 23) | (m << (23 - M)));
}

constexpr float decode_e4m3(uint8_t c) {
  const uint32_t sign = static_cast<uint32_t>(c & 0x80u) << 24;
  if ((c & 0x7Fu) == 0x7Fu) return float_of(sign | 0x7FC00000u);
  return float_of(sign | bits_of(decode_magnitude<3, 7>(c & 0x7Fu)));
}

// e5m2 is the high byte of an f16.
constexpr float decode_e5m2(uint8_t c) {
  return decode_f16(static_cast<uint16_t>(c << 8));
}

constexpr float decode_e2m1(uint8_t c) {
  const float v = decode_magnitude<1, 1>(c & 0x7u);
  return (c & 0x8u) ? -v : v;
}

constexpr float decode_ue8m0(uint8_t c) {
  if (c == 0xFF) return float_of(0x7FC00000u);
  return c == 0 ? float_of(0x00400000u) : float_of(static_cast<uint32_t>(c) << 23);  // 2^-127
}

constexpr int decode_int4(uint8_t c) {
  return static_cast<int>((c & 0xFu) ^ 0x8u) - 8;
}

// Decode tables for the dequantization loops.
template <size_t N, typename F>
constexpr std::array<float, N> make_table(F decode) {
  std::array<float, N> t{};
  for (size_t i = 0; i < N; ++i) t[i] = decode(static_cast<uint8_t>(i));
  return t;
}
inline constexpr std::array<float, 256> kE4M3Table = make_table<256>(decode_e4m3);
inline constexpr std::array<float, 16> kE2M1Table = make_table<16>(decode_e2m1);
inline constexpr std::array<float, 16> kInt4Table =
    make_table<16>([](uint8_t c) { return static_cast<float>(decode_int4(c)); });

}  // namespace servekit::mf
