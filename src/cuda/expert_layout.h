// Conversion of one prepared expert matrix (quant.h's plain host layout) into the operand
// layout of the sm90 grouped GEMM (grouped_gemm.h). Host only. Internal header.
//
// The 4-bit formats run the bf16 GEMM on weights DEQUANTIZED exactly as quant.h specifies and
// rounded once to bf16 (to_gemm_layout), except int4_w4a16 with group 64 or 128 where the layer
// takes the int4 GEMM (make_grouped_gemm_w4a16: w4a16_gemm_layout keeps the 4-bit codes, and the
// kernel rounds code * scale to bf16 in registers, the same value).
#pragma once

#include <cstdint>
#include <vector>

#include "cuda/gemm_tile_config.h"
#include "servekit/quant.h"

namespace servekit::cuda {

// The GEMM operand format that runs a quantization method on the dynamic path.
GemmOperand gemm_operand(QuantMethod m);

struct GemmWeightHost {
  std::vector<uint8_t> codes;          // [N, K] bf16 (2 bytes, little-endian) or e4m3
  std::vector<float> block_scales;     // fp8_block128: [K/128, ceil(N/128)] (MN-major), else empty
  float tensor_scale = 1.0f;           // fp8_per_tensor
  std::vector<uint16_t> group_scales;  // w4a16_gemm_layout: [K/G, N] bf16 (N contiguous)
};

// Throws servekit::Error if m is not [rows, cols] or its method's data are malformed.
GemmWeightHost to_gemm_layout(const QuantizedMatrix& m, int64_t rows, int64_t cols);

// int4_w4a16 for make_grouped_gemm_w4a16 (grouped_gemm.h): codes [N, K/2] int4x2 as quant.h
// packs them, and the bf16 scales transposed from [N, K/G] to [K/G, N]. Throws servekit::Error
// if m is not an int4_w4a16 [rows, cols] matrix with well-formed data.
GemmWeightHost w4a16_gemm_layout(const QuantizedMatrix& m, int64_t rows, int64_t cols);

// Reorders a converted [2I, cols] gate/up matrix (gate rows first) into the layout of the fused
// activation (interleaved_w13_row in blocks of `width` rows, w13_interleave_rows,
// gemm_tile_config.h): rows, and for fp8_block128 the 128-row scale blocks with them. Throws
// servekit::Error unless inter % 128 == 0, width is 128 (or 64 with bf16) and w holds 2I rows of
// `cols` elements of `op`.
void interleave_w13(GemmWeightHost& w, GemmOperand op, int64_t inter, int64_t cols,
                    int64_t width = 128);

// The same for w4a16_gemm_layout's [2I, cols] int4 gate/up matrix, in blocks of `width` rows
// (kW4A16Interleave for the int4 GEMM's fused activation): the rows of the codes, and the columns
// of the [cols/G, 2I] scales with them. Throws servekit::Error unless width > 0, inter % width
// == 0 and w holds 2I rows of cols / 2 code bytes and a multiple of 2I scales.
void interleave_w4a16_w13(GemmWeightHost& w, int64_t inter, int64_t cols, int64_t width);

}  // namespace servekit::cuda
