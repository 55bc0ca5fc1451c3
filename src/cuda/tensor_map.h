// TMA descriptors built on the host. Internal header (host C++).
#pragma once

#include <cstdint>

namespace servekit::cuda {

// Bytes and alignment of a CUtensorMap (the driver's opaque 128-byte TMA descriptor).
constexpr int kTensorMapBytes = 128;
constexpr int kTensorMapAlign = 64;

// Writes into `map` (kTensorMapBytes at a kTensorMapAlign-aligned address) the descriptor of a
// row-major [rows, cols] bf16 matrix at `base`, for loads of one row's 64 columns (box 64 x 1,
// 128-byte swizzle, out-of-bounds elements read as zero; sm90_row_gather.cuh). Requires base
// 16-byte aligned, cols % 8 == 0 (16-byte rows), 0 < rows < 2^31 and 64 <= cols < 2^31; throws
// servekit::Error naming the argument otherwise, or when the driver rejects the descriptor or
// lacks cuTensorMapEncodeTiled.
void encode_bf16_row_map(void* map, const void* base, int64_t rows, int64_t cols);

}  // namespace servekit::cuda
