// Scalar format conversions: the public face of the inline bit-level code in minifloat.h.
#include "servekit/formats.h"

#include "core/minifloat.h"

namespace servekit {

uint16_t float_to_bf16(float x) {
  return mf::encode_bf16(x);
}
float bf16_to_float(uint16_t bits) {
  return mf::decode_bf16(bits);
}
uint16_t float_to_f16(float x) {
  return mf::encode_f16(x);
}
float f16_to_float(uint16_t bits) {
  return mf::decode_f16(bits);
}

uint8_t float_to_e4m3(float x) {
  return mf::encode_e4m3(x);
}
float e4m3_to_float(uint8_t bits) {
  return mf::kE4M3Table[bits];
}

uint8_t float_to_e5m2(float x) {
  return mf::encode_e5m2(x);
}
float e5m2_to_float(uint8_t bits) {
  return mf::decode_e5m2(bits);
}

uint8_t float_to_e2m1(float x) {
  return mf::encode_e2m1(x);
}
float e2m1_to_float(uint8_t code) {
  return mf::kE2M1Table[code & 0xFu];
}

float ue8m0_to_float(uint8_t bits) {
  return mf::decode_ue8m0(bits);
}

uint8_t float_to_int4(float x) {
  return mf::encode_int4(x);
}
int int4_to_int(uint8_t code) {
  return mf::decode_int4(code);
}

}  // namespace servekit
