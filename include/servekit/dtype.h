// servekit/dtype.h — element types understood by the library.
//
// Packed 4-bit types (kE2M1x2, kInt4x2) are one storage element per byte holding two values,
// low nibble first (element 2i in bits 0..3, element 2i+1 in bits 4..7). Tensor shapes count
// storage elements, so a packed [N, K] matrix of 4-bit values has shape [N, K/2].
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace servekit {

enum class DType : uint8_t {
  kBF16,     // bfloat16
  kF16,      // IEEE half
  kF32,      // IEEE single
  kF8E4M3,   // fp8 e4m3fn: no inf, max 448, 0x7F/0xFF NaN
  kF8E5M2,   // fp8 e5m2: IEEE-like, max 57344, has inf
  kE2M1x2,   // two fp4 e2m1 values per byte, low nibble first
  kUE8M0,    // unsigned power-of-two scale 2^(e-127), 0xFF = NaN
  kInt4x2,   // two signed (two's complement) int4 values per byte, low nibble first
  kInt8,
  kUInt8,
  kInt32,
  kInt64,
};

// Bytes of one storage element (1 for the packed 4-bit types).
constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF32:
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
    case DType::kBF16:
    case DType::kF16: return 2;
    default: return 1;
  }
}

// Logical values per storage element (2 for the packed 4-bit types).
constexpr int dtype_pack(DType t) {
  return (t == DType::kE2M1x2 || t == DType::kInt4x2) ? 2 : 1;
}

constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kBF16: return "bf16";
    case DType::kF16: return "f16";
    case DType::kF32: return "f32";
    case DType::kF8E4M3: return "f8e4m3";
    case DType::kF8E5M2: return "f8e5m2";
    case DType::kE2M1x2: return "e2m1x2";
    case DType::kUE8M0: return "ue8m0";
    case DType::kInt4x2: return "int4x2";
    case DType::kInt8: return "int8";
    case DType::kUInt8: return "uint8";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
  }
  return "?";
}

}  // namespace servekit
