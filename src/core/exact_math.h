// Float math with bit-identical results on the host (g++) and the device (nvcc): the routing
// of route_cpu and of the CUDA routing kernels must pick the same experts and produce the same
// weights, bit for bit. Internal, header-only.
//
// Every function is built from IEEE-754 binary32 multiply, add, subtract and divide, each
// rounded to nearest-even exactly once, in a fixed order, plus comparisons and exact
// power-of-two construction. No transcendental of either compiler's library is used, no fused
// multiply-add and no reassociation:
//   - device: __fmul_rn / __fadd_rn / __fsub_rn / __fdiv_rn, which nvcc never contracts into an
//     FMA (whatever --fmad says) and which stay IEEE divides under -prec-div=false.
//   - host: plain * + - /, with each product passed through an empty asm statement that hides
//     its value from the optimizer, so g++ cannot contract it into an FMA even with
//     -ffp-contract=fast on an FMA-capable -march (GCC ignores `#pragma STDC FP_CONTRACT`).
//     x86-64 keeps floats in SSE registers (no x87 excess precision).
// Requirements: denormals kept on both sides. Host: no -ffast-math (refused below) and no
// FTZ/DAZ in MXCSR (the default; a library linked with -ffast-math can set them for the whole
// process, which route_cpu detects and refuses: host_keeps_subnormals()). Device: -ftz=false,
// nvcc's default (-use_fast_math implies -ftz=true and would flush subnormal results to zero
// where the host keeps them; nvcc defines no macro that would let this header refuse it).
//
// Accuracy, measured exhaustively over every float in [-104.5, 89.5] (2.24e9 values) against
// std::exp in double, in ulps of the exact result (ulp = 2^-149 where it is subnormal):
//   exp: <= 1.025 ulp (worst at x = -0x1.45c762p+6); sigmoid: <= 2.40 ulp (x = -0x1.0a111ap+2).
// tests/cpp/core/test_exact_math.cpp samples the range and holds these bounds.
#pragma once

#include <cstdint>
#if !defined(__CUDA_ARCH__)
#include <cstring>
#endif

#if defined(__FAST_MATH__)
#error "exact_math.h needs IEEE semantics: do not compile with -ffast-math"
#endif

#if defined(__CUDACC__)
#define SK_HD __host__ __device__
#else
#define SK_HD
#endif

namespace servekit::exact {

// a * b, rounded once; never fused with a following add.
SK_HD inline float mul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  float p = a * b;
#if defined(__x86_64__) || defined(__i386__)
  asm("" : "+x"(p));
#elif defined(__aarch64__)
  asm("" : "+w"(p));
#else
#error "exact_math.h: add an FMA-contraction barrier for this host architecture"
#endif
  return p;
#endif
}

SK_HD inline float add(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

SK_HD inline float sub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

SK_HD inline float div(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

SK_HD inline bool is_nan(float x) {
  return x != x;
}

#if !defined(__CUDA_ARCH__)
// False when the host's floating-point environment flushes subnormal results (FTZ) or reads
// subnormal inputs as zero (DAZ); then host results would differ from the device's.
inline bool host_keeps_subnormals() {
  volatile float smallest_normal = 0x1p-126f, subnormal = 0x1p-130f;
  return smallest_normal * 0.5f != 0.0f && subnormal * 2.0f != 0.0f;
}
#endif

SK_HD inline float from_bits(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
#endif
}

SK_HD inline float infinity() {
  return from_bits(0x7f800000u);
}

// 2^j as a float, exact, for j in [-126, 127] (normal range).
SK_HD inline float pow2i(int j) {
  return from_bits(static_cast<uint32_t>(j + 127) << 23);
}

// e^x. NaN -> NaN, +inf -> +inf, -inf -> 0; overflows to +inf above ln(FLT_MAX) ~ 88.72 and
// rounds to 0 below ln(2^-150) ~ -103.97, as the correctly rounded result does.
//
// x = k ln2 + r with k = nearest integer to x log2(e) and |r| <= ~ln2/2 (Cody-Waite): ln2 is
// split as C1 + C2 with C1 = 355/512 (9 significant bits), so k C1 is exact for |k| <= 150 (17
// bits) and x - k C1 is exact (both are multiples of ulp(x) and the difference is smaller
// than |x|); only r = (x - k C1) - k C2 rounds. e^r is the degree-7 Taylor polynomial (its
// truncation error r^8/8! <= 5.2e-9 is 0.04 ulp at |r| = ln2/2), evaluated as
// ((q(r) r^2) + r) + 1 so the two largest terms are added last. 2^k is applied as two exact
// powers of two, 2^(k/2) then 2^(k - k/2), so the only rounding of the scaling is the final
// one (which matters for subnormal and overflowing results).
SK_HD inline float exp(float x) {
  if (is_nan(x)) return x;
  if (x > 89.0f) return infinity();
  if (x < -104.0f) return 0.0f;
  // Constants as hex floats so that both compilers read the same bits.
  constexpr float kLog2e = 0x1.715476p+0f;    // log2(e) rounded to float
  constexpr float kShifter = 0x1.8p+23f;      // 1.5 * 2^23: adding it rounds to an integer
  constexpr float kLn2Hi = 0x1.63p-1f;        // 355/512
  constexpr float kLn2Lo = -0x1.bd0106p-13f;  // ln2 - 355/512 rounded to float
  const float kf = sub(add(mul(x, kLog2e), kShifter), kShifter);
  const float r = sub(sub(x, mul(kf, kLn2Hi)), mul(kf, kLn2Lo));
  // 1/n! rounded to float, n = 7..3.
  constexpr float c7 = 0x1.a01a02p-13f, c6 = 0x1.6c16c2p-10f, c5 = 0x1.111112p-7f;
  constexpr float c4 = 0x1.555556p-5f, c3 = 0x1.555556p-3f, c2 = 0.5f;
  float q = c7;
  q = add(mul(q, r), c6);
  q = add(mul(q, r), c5);
  q = add(mul(q, r), c4);
  q = add(mul(q, r), c3);
  q = add(mul(q, r), c2);
  const float y = add(add(mul(q, mul(r, r)), r), 1.0f);
  const int k = static_cast<int>(kf);
  const int k1 = k / 2;  // truncates toward zero: k1, k - k1 in [-75, 64] for k in [-150, 128]
  return mul(mul(y, pow2i(k1)), pow2i(k - k1));
}

// 1 / (1 + e^-x), evaluated with e = e^-|x| <= 1 so the result never comes from 1/(1 + inf):
// x >= 0: 1 / (1 + e); x < 0: e / (1 + e). NaN -> NaN, +inf -> 1, -inf -> 0.
SK_HD inline float sigmoid(float x) {
  if (is_nan(x)) return x;
  const float e = exact::exp(x >= 0.0f ? -x : x);
  const float d = add(1.0f, e);
  return x >= 0.0f ? div(1.0f, d) : div(e, d);
}

}  // namespace servekit::exact
