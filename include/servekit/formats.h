// servekit/formats.h — exact scalar conversions between fp32 and the storage formats.
//
// All float -> narrow conversions round the exact value to nearest, ties to even (assuming the
// default FP rounding mode; flushing fp32 subnormals to zero changes no result).
// fp8, fp4 and int4 saturate: a finite value that rounds beyond the largest finite magnitude
// gives that magnitude (keeping the sign), and so does +-inf (e4m3 and e2m1 have no inf; e5m2
// saturates too, by the "satfinite" convention of the CUDA intrinsics).
// bf16 and f16 follow IEEE 754 instead: overflow rounds to +-inf and +-inf stays inf, as
// __float2bfloat16_rn / __float2half_rn and _Float16 do; the GPU kernels round their bf16
// outputs that way, and an overflow must stay visible rather than become a plausible number.
// NaN input maps to the format's NaN, keeping the sign (e4m3: 0x7F/0xFF; e5m2: 0x7E/0xFE;
// bf16/f16: quiet NaN with the top payload bits kept); e2m1 and int4 have no NaN, so NaN maps
// to +0 there. Narrow -> float conversions are exact; 4-bit decoders read the low nibble only.
// Facts: OCP 8-bit floating point spec (OFP8) and OCP Microscaling (MX) v1.0.
#pragma once

#include <cstdint>

namespace servekit {

// bfloat16 / half, as raw bits.
uint16_t float_to_bf16(float x);
float bf16_to_float(uint16_t bits);
uint16_t float_to_f16(float x);
float f16_to_float(uint16_t bits);

// fp8 e4m3fn: bias 7, no inf, max 448, NaN = S.1111.111.
uint8_t float_to_e4m3(float x);
float e4m3_to_float(uint8_t bits);
constexpr float kE4M3Max = 448.0f;

// fp8 e5m2: bias 15, max 57344; +-inf = S.11111.00 (decoded, never produced by the encoder),
// NaN = S.11111.xx with xx != 00.
uint8_t float_to_e5m2(float x);
float e5m2_to_float(uint8_t bits);
constexpr float kE5M2Max = 57344.0f;

// fp4 e2m1 (4-bit code in the low nibble): +-{0, 0.5, 1, 1.5, 2, 3, 4, 6}.
uint8_t float_to_e2m1(float x);
float e2m1_to_float(uint8_t code);
constexpr float kE2M1Max = 6.0f;

// ue8m0 scale: 2^(bits-127); 0xFF is NaN.
float ue8m0_to_float(uint8_t bits);

// Signed int4 in two's complement (low nibble): [-8, 7]. Rounds half to even, saturates.
uint8_t float_to_int4(float x);
int int4_to_int(uint8_t code);

// Packing helpers for the x2 types: element 0 in the low nibble.
inline uint8_t pack_nibbles(uint8_t lo, uint8_t hi) {
  return static_cast<uint8_t>((lo & 0xF) | ((hi & 0xF) << 4));
}
inline uint8_t low_nibble(uint8_t b) {
  return b & 0xF;
}
inline uint8_t high_nibble(uint8_t b) {
  return b >> 4;
}

}  // namespace servekit
